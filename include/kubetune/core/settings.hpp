// Config-setting parsers shared by every searcher: numbers, integers and booleans given as JSON values or as
// Katib's strings ("10", "0.5", "true"), unknown-key checks and alias lookup. Errors name the setting.
// Searcher and pruner configs declare their settings in tables (config_fields.hpp) built on these parsers.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

namespace kubetune::settings {

/// Number from 10, 10.5 or "10"; errors start with `what` (e.g. "setting 'eta'" or "lr.min").
inline double parse_number(const nlohmann::json& v, const std::string& what) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    try {
      std::size_t pos = 0;
      double d = std::stod(s, &pos);
      if (pos == s.size()) return d;
    } catch (...) {
    }
    KT_THROW(InvalidArgument, what, ": '", s, "' is not a number");
  }
  KT_THROW(InvalidArgument, what, ": expected a number, got ", json_summary(v));
}

/// Number from 10, 10.5 or "10" (Katib passes every setting as a string); `key` names the setting.
inline double number(const nlohmann::json& v, const std::string& key) {
  return parse_number(v, "setting '" + key + "'");
}

/// Integer from a JSON number or string; must be integral.
inline std::int64_t integer(const nlohmann::json& v, const std::string& key) {
  double d = number(v, key);
  KT_CHECK(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15, InvalidArgument, "setting '", key,
           "' = ", json_summary(v), " must be an integer");
  return static_cast<std::int64_t>(d);
}

/// Integer setting that must fit T (int, std::size_t, ...): 4294967298 for an int is refused, never wrapped.
template <class T>
T integer_as(const nlohmann::json& v, const std::string& key) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  const std::int64_t i = integer(v, key);
  const bool fits = std::is_signed_v<T> ? i >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
                                              i <= static_cast<std::int64_t>(std::numeric_limits<T>::max())
                                        : i >= 0 && static_cast<std::uint64_t>(i) <= std::numeric_limits<T>::max();
  KT_CHECK(fits, InvalidArgument, "setting '", key, "' = ", i, " is out of range (allowed ",
           +std::numeric_limits<T>::min(), "..", +std::numeric_limits<T>::max(), ")");
  return static_cast<T>(i);
}

/// Non-negative integer (exact up to 2^64 - 1) from a JSON number or string.
inline std::uint64_t uinteger(const nlohmann::json& v, const std::string& key) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    KT_CHECK(i >= 0, InvalidArgument, "setting '", key, "' = ", i, " must be >= 0");
    return static_cast<std::uint64_t>(i);
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() <= 19;
    if (digits) return std::stoull(s);
  }
  double d = number(v, key);
  KT_CHECK(d >= 0 && d == std::floor(d) && d < 1.8e19, InvalidArgument, "setting '", key, "' = ", json_summary(v),
           " must be a non-negative integer");
  return static_cast<std::uint64_t>(d);
}

/// The one boolean rule of every setting (JSON and Katib strings alike): true/false, the integers 0/1, and the
/// strings "true"/"false"/"True"/"False"/"1"/"0". Anything else ("yes", 2, 1.0) is no boolean: nullopt.
inline std::optional<bool> parse_boolean(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1))
    return v.get<std::int64_t>() == 1;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "true" || s == "True" || s == "1") return true;
    if (s == "false" || s == "False" || s == "0") return false;
  }
  return std::nullopt;
}

/// Boolean by parse_boolean's rule; otherwise InvalidArgument naming the setting.
inline bool boolean(const nlohmann::json& v, const std::string& key) {
  if (auto b = parse_boolean(v)) return *b;
  KT_THROW(InvalidArgument, "setting '", key, "': expected a boolean (true/false, 0/1, \"true\"/\"false\"), got ",
           json_summary(v));
}

inline std::string string(const nlohmann::json& v, const std::string& key) {
  KT_CHECK(v.is_string(), InvalidArgument, "setting '", key, "': expected a string, got ", json_summary(v));
  return v.get<std::string>();
}

/// Throws InvalidArgument naming the first key of `j` (other than "type") not in `allowed`.
inline void check_keys(const nlohmann::json& j, const std::string& what, std::initializer_list<const char*> allowed) {
  KT_CHECK(j.is_object(), InvalidArgument, what, " config must be a JSON object, got ", json_summary(j));
  for (const auto& [k, v] : j.items()) {
    if (k == "type") continue;
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      const std::string list = join_names(allowed);
      KT_THROW(InvalidArgument, what, ": unknown setting '", k, "' (accepted: ", list.empty() ? "none" : list, ")");
    }
  }
}

/// First present key among aliases (kubetune name first, then Katib/Optuna names), or nullptr.
inline const nlohmann::json* find(const nlohmann::json& j, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (j.contains(n)) return &j.at(n);
  return nullptr;
}

}  // namespace kubetune::settings
