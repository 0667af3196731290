// Python bindings of the tpe module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_tpe(py::module_& m) { (void)m; }

}  // namespace kubetune::python
