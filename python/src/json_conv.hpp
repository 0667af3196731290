// Conversions between nlohmann::json and Python objects (dict/list/str/float/int/bool/None).
#pragma once

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace kubetune::python {

pybind11::object json_to_py(const nlohmann::json& j);
nlohmann::json py_to_json(pybind11::handle h);

}  // namespace kubetune::python
