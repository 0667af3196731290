// Internal helpers for multi-fidelity configs: Katib-style string numbers, unknown-key checks, trial attrs.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/trial.hpp"

namespace kubetune::search::mf_detail {

/// Number from 10, 10.5 or "10" (Katib passes every setting as a string); `key` names the setting.
inline double number(const nlohmann::json& v, const std::string& key) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    try {
      std::size_t pos = 0;
      double d = std::stod(s, &pos);
      if (pos == s.size()) return d;
    } catch (...) {
    }
    KT_THROW(InvalidArgument, "setting '", key, "': '", s, "' is not a number");
  }
  KT_THROW(InvalidArgument, "setting '", key, "': expected a number, got ", v.dump());
}

/// Integer from a JSON number or string; must be integral.
inline std::int64_t integer(const nlohmann::json& v, const std::string& key) {
  double d = number(v, key);
  KT_CHECK(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15, InvalidArgument, "setting '", key,
           "' = ", v.dump(), " must be an integer");
  return static_cast<std::int64_t>(d);
}

inline bool boolean(const nlohmann::json& v, const std::string& key) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1))
    return v.get<std::int64_t>() == 1;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "true" || s == "True" || s == "1") return true;
    if (s == "false" || s == "False" || s == "0") return false;
  }
  KT_THROW(InvalidArgument, "setting '", key, "': expected a boolean, got ", v.dump());
}

inline std::string string(const nlohmann::json& v, const std::string& key) {
  KT_CHECK(v.is_string(), InvalidArgument, "setting '", key, "': expected a string, got ", v.dump());
  return v.get<std::string>();
}

/// Throws InvalidArgument naming the first key of `j` (other than "type") not in `allowed`.
inline void check_keys(const nlohmann::json& j, const std::string& what, std::initializer_list<const char*> allowed) {
  KT_CHECK(j.is_object(), InvalidArgument, what, " config must be a JSON object, got ", j.dump());
  for (const auto& [k, v] : j.items()) {
    if (k == "type") continue;
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      KT_THROW(InvalidArgument, what, ": unknown setting '", k, "' (accepted: ", list, ")");
    }
  }
}

/// First present key among aliases (kubetune name first, then Katib/Optuna names), or nullptr.
inline const nlohmann::json* find(const nlohmann::json& j, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (j.contains(n)) return &j.at(n);
  return nullptr;
}

inline std::optional<double> attr(const Trial& t, const char* key) {
  auto it = t.system_attrs.find(key);
  if (it == t.system_attrs.end()) return std::nullopt;
  return it->second;
}

}  // namespace kubetune::search::mf_detail
