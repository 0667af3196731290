// Entry point of kubetune._kubetune: registers exception translation and every module's bindings.
#include "bindings.hpp"

#include "kubetune/core/error.hpp"

namespace kt = kubetune;
using namespace kubetune::python;

PYBIND11_MODULE(_kubetune, m) {
  m.doc() = "kubetune native core (C++); use the `kubetune` package instead of importing this directly";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kt::InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const kt::NotFound& e) {
      PyErr_SetString(PyExc_KeyError, e.what());
    } catch (const kt::IoError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const kt::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  bind_core(m);
  bind_search(m);
  bind_tpe(m);
  bind_gp(m);
  bind_multifidelity(m);
  bind_autoscale(m);
  bind_gpu(m);
  bind_nas(m);
}
