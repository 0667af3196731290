// Conversions between nlohmann::json and Python objects (dict/list/str/float/int/bool/None).
#pragma once

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <string>

namespace kubetune::python {

pybind11::object json_to_py(const nlohmann::json& j);
nlohmann::json py_to_json(pybind11::handle h);
/// Katib algorithmSettings, a dict {name: value} or a list [{"name": .., "value": ..}], as a JSON object;
/// with a non-empty `type`, {"type": type} is added so the result is a searcher/pruner config.
nlohmann::json katib_settings(pybind11::handle settings, const std::string& type = "");

}  // namespace kubetune::python
