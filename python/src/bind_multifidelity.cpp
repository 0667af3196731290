// Python bindings of the multifidelity module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_multifidelity(py::module_& m) { (void)m; }

}  // namespace kubetune::python
