// Python bindings of the autoscale module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_autoscale(py::module_& m) { (void)m; }

}  // namespace kubetune::python
