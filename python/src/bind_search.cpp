// Python bindings of the search module.
#include "bindings.hpp"

namespace kubetune::python {

void bind_search(py::module_& m) { (void)m; }

}  // namespace kubetune::python
