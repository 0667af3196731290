// Python bindings of the gpu module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_gpu(py::module_& m) { (void)m; }

}  // namespace kubetune::python
