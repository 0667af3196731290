// Conversions between nlohmann::json and Python objects (dict/list/str/float/int/bool/None).
#pragma once

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <initializer_list>
#include <memory>
#include <string>

namespace kubetune::python {

pybind11::object json_to_py(const nlohmann::json& j);
nlohmann::json py_to_json(pybind11::handle h);
/// Katib algorithmSettings, a dict {name: value} or a list [{"name": .., "value": ..}], as a JSON object;
/// with a non-empty `type`, {"type": type} is added so the result is a searcher/pruner config.
nlohmann::json katib_settings(pybind11::handle settings, const std::string& type = "");

/// Keyword arguments of a searcher / pruner constructor as its JSON config {"type": type, ...}; the C++ settings
/// table (`schema`, from T::settings_schema()) decides everything else when the config is read. Here only: an
/// unknown keyword -> TypeError naming it and the accepted ones; a str for a non-str setting (or the reverse) ->
/// TypeError (Katib's string coercion is for Katib's settings, not for Python); a deprecated name ->
/// DeprecationWarning; None for a setting that has no None value -> the setting's default (key left out).
nlohmann::json settings_from_kwargs(const pybind11::kwargs& kw, const nlohmann::json& schema, const std::string& cls,
                                    const std::string& type);
/// `head` followed by "Settings (keyword arguments):" and one line per setting of `schema`.
std::string settings_docstring(const std::string& head, const nlohmann::json& schema);
/// The schema as Python data for `_settings_schema()`; names in `positional` are marked "positional": True (taken
/// by position as well, in schema order, before the keyword-only ones), those in `required` "required": True.
pybind11::object schema_to_py(nlohmann::json schema, std::initializer_list<const char*> positional = {},
                              std::initializer_list<const char*> required = {});

/// T::from_json(j) (a unique_ptr<Base>) as a shared_ptr<T>.
template <class T, class Base>
std::shared_ptr<T> build_as(const nlohmann::json& j) {
  std::unique_ptr<Base> p = T::from_json(j);
  return std::shared_ptr<T>(static_cast<T*>(p.release()));
}

/// Binds T (a Searcher or Pruner `Base`) with keyword arguments from its C++ settings table: __init__(**kwargs),
/// the static `_settings_schema()` and a class docstring `head` + the settings. The caller adds the rest.
template <class T, class Base>
pybind11::class_<T, Base, std::shared_ptr<T>> settings_class(pybind11::handle scope, const char* name,
                                                              const char* type, const char* head) {
  static const nlohmann::json schema = T::settings_schema();
  static const std::string doc = settings_docstring(head, schema);
  pybind11::class_<T, Base, std::shared_ptr<T>> c(scope, name, doc.c_str());
  c.def(pybind11::init([name, type](const pybind11::kwargs& kw) {
          return build_as<T, Base>(settings_from_kwargs(kw, schema, name, type));
        }),
        "Keyword arguments as listed in the class docstring (all optional).");
  c.def_static("_settings_schema", [] { return schema_to_py(schema); }, "The settings table (for stubs and docs).");
  return c;
}

}  // namespace kubetune::python
