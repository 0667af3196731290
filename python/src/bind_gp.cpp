// Python bindings of the gp module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_gp(py::module_& m) { (void)m; }

}  // namespace kubetune::python
