// JSON <-> Python conversion used by every binding that passes configs.
#include "json_conv.hpp"

#include <cmath>

#include "kubetune/core/config_fields.hpp"
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

nlohmann::json settings_from_kwargs(const py::kwargs& kw, const nlohmann::json& schema, const std::string& cls,
                                    const std::string& type) {
  nlohmann::json j = nlohmann::json::object();
  for (auto item : kw) {
    const std::string key = py::str(item.first).cast<std::string>();
    const nlohmann::json* entry = nullptr;
    bool deprecated = false;
    for (const auto& e : schema) {
      if (e.value("ignored", false)) continue;
      if (e["name"] == key) entry = &e;
      for (const auto& a : e["aliases"])
        if (a == key) entry = &e;
      for (const auto& a : e["deprecated"])
        if (a == key) entry = &e, deprecated = true;
      if (entry) break;
    }
    if (!entry) {
      std::string list;
      for (const auto& e : schema)
        if (!e.value("ignored", false)) list += (list.empty() ? "" : ", ") + e["name"].get<std::string>();
      throw py::type_error(cls + "() got an unexpected keyword argument '" + key + "' (accepted: " + list + ")");
    }
    const std::string name = (*entry)["name"].get<std::string>();
    if (deprecated) {
      const std::string msg = cls + "(" + key + "=...) is deprecated; use " + name + "=...";
      if (PyErr_WarnEx(PyExc_DeprecationWarning, msg.c_str(), 1) != 0) throw py::error_already_set();
    }
    py::handle v = item.second;
    const std::string t = (*entry)["type"].get<std::string>();
    if (v.is_none() && t.find("None") == std::string::npos) continue;  // the default
    const bool is_str = py::isinstance<py::str>(v);
    if (!v.is_none() && is_str != (t == "str"))
      throw py::type_error(cls + "(): keyword argument '" + key + "' must be " + (t == "str" ? "a str" : t) +
                           ", got " + py::str(py::type::of(v).attr("__name__")).cast<std::string>());
    j[key] = py_to_json(v);
  }
  j["type"] = type;
  return j;
}

std::string settings_docstring(const std::string& head, const nlohmann::json& schema) {
  return head + "\n\nSettings (keyword arguments):\n" + settings::schema_doc(schema);
}

py::object schema_to_py(nlohmann::json schema, std::initializer_list<const char*> positional,
                        std::initializer_list<const char*> required) {
  for (auto& e : schema) {
    for (const char* p : positional)
      if (e["name"] == p) e["positional"] = true;
    for (const char* r : required)
      if (e["name"] == r) e["required"] = true;
  }
  return json_to_py(schema);
}

}  // namespace kubetune::python
