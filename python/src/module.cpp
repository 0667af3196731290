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
  bind_katib(m);
  bind_katib_stopping(m);
#ifdef KT_HAVE_SEARCH
  bind_search(m);
#endif
#ifdef KT_HAVE_TPE
  bind_tpe(m);
#endif
#ifdef KT_HAVE_GP
  bind_gp(m);
#endif
#ifdef KT_HAVE_MULTIFIDELITY
  bind_multifidelity(m);
#endif
#ifdef KT_HAVE_AUTOSCALE
  bind_autoscale(m);
#endif
#ifdef KT_HAVE_GPU
  bind_gpu(m);
#endif
#ifdef KT_HAVE_EXTENDER
  bind_extender(m);
#endif
#ifdef KT_HAVE_NAS
  bind_nas(m);
#endif
}
