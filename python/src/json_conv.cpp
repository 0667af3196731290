// JSON <-> Python conversion used by every binding that passes configs.
#include "json_conv.hpp"

#include <cmath>

#include "kubetune/core/error.hpp"

namespace py = pybind11;

namespace kubetune::python {

py::object json_to_py(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& e : j) l.append(json_to_py(e));
      return l;
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = json_to_py(v);
      return d;
    }
    default: return py::none();
  }
}

nlohmann::json py_to_json(py::handle h) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) return h.cast<std::int64_t>();
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) {
    nlohmann::json o = nlohmann::json::object();
    for (auto item : h.cast<py::dict>()) o[py::str(item.first).cast<std::string>()] = py_to_json(item.second);
    return o;
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    nlohmann::json a = nlohmann::json::array();
    for (auto e : h) a.push_back(py_to_json(e));
    return a;
  }
  if (py::hasattr(h, "item")) return py_to_json(h.attr("item")());  // numpy scalars
  KT_THROW(InvalidArgument, "cannot convert Python object of type ",
           py::str(py::type::of(h).attr("__name__")).cast<std::string>(), " to JSON");
}

nlohmann::json katib_settings(py::handle settings, const std::string& type) {
  nlohmann::json j = nlohmann::json::object();
  if (!settings.is_none()) {
    nlohmann::json in = py_to_json(settings);
    if (in.is_array()) {
      for (const auto& e : in) {
        KT_CHECK(e.is_object() && e.contains("name"), InvalidArgument,
                 "Katib settings list entries need 'name' and 'value', got ", e.dump());
        j[e.at("name").get<std::string>()] = e.value("value", nlohmann::json());
      }
    } else {
      KT_CHECK(in.is_object(), InvalidArgument, "Katib settings must be a dict or a list of {name, value}, got ",
               in.dump());
      j = in;
    }
  }
  if (!type.empty()) j["type"] = type;
  return j;
}

}  // namespace kubetune::python
