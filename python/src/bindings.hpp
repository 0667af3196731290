// Shared declarations for the pybind11 translation units (one bind_<module>.cpp per C++ module). Which of them
// PYBIND11_MODULE calls follows from the BIND names of the kubetune_module() declarations (cmake/modules.cmake).
#pragma once

#include <pybind11/pybind11.h>

namespace kubetune::python {
namespace py = pybind11;

void bind_core(py::module_& m);           // SearchSpace, Study, Trial, device queries
void bind_katib(py::module_& m);          // submodule _katib: Katib suggestion replay
void bind_katib_stopping(py::module_& m); // submodule _katib_stopping: Katib early-stopping rules
void bind_search(py::module_& m);         // RandomSearch, GridSearch, Sobol, functions
void bind_tpe(py::module_& m);            // TPE
void bind_gp(py::module_& m);             // GP
void bind_multifidelity(py::module_& m);  // Hyperband, ASHA, BOHB, MedianStop
void bind_autoscale(py::module_& m);      // submodule autoscale
void bind_gpu(py::module_& m);            // submodule sched
void bind_extender(py::module_& m);       // sched.ExtenderHttpServer (after bind_gpu)
void bind_nas(py::module_& m);            // submodule nas

}  // namespace kubetune::python
