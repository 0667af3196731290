// Python bindings of the nas module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_nas(py::module_& m) { (void)m; }

}  // namespace kubetune::python
