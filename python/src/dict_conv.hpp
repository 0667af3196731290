// Helpers for the hand-written struct -> Python conversions of the bind_*.cpp files (pybind11 only, kept light).
// A struct as a dict is written py::dict("key"_a = s.field, ...) (pybind11::literals); these cover the rest.
#pragma once

#include <pybind11/pybind11.h>

namespace kubetune::python {

/// [f(x) for x in xs] as a Python list.
template <class Seq, class F>
pybind11::list list_of(const Seq& xs, F f) {
  pybind11::list out;
  for (const auto& x : xs) out.append(f(x));
  return out;
}

}  // namespace kubetune::python

/// Chained after a py::class_<cls>: the member `f` as a read-only (KT_RO) or read-write (KT_RW) attribute of the
/// same name, e.g. `py::class_<S>(m, "S") KT_RO(S, a) KT_RO(S, b);`.
#define KT_RO(cls, f) .def_readonly(#f, &cls::f)
#define KT_RW(cls, f) .def_readwrite(#f, &cls::f)
