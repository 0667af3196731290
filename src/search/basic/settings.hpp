// Internal helpers for searcher configs: numbers and booleans given as JSON values or Katib strings.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"

namespace kubetune::search::detail {

/// Number from 10, 10.5 or "10" (Katib passes every setting as a string); `key` names the setting.
inline double setting_number(const nlohmann::json& v, const std::string& key) {
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

/// Non-negative integer (exact) from a JSON number or string.
inline std::uint64_t setting_uint(const nlohmann::json& v, const std::string& key) {
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
  double d = setting_number(v, key);
  KT_CHECK(d >= 0 && d == std::floor(d) && d < 1.8e19, InvalidArgument, "setting '", key, "' = ", v.dump(),
           " must be a non-negative integer");
  return static_cast<std::uint64_t>(d);
}

/// Boolean from true/false, 0/1 or "true"/"false"/"1"/"0".
inline bool setting_bool(const nlohmann::json& v, const std::string& key) {
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

}  // namespace kubetune::search::detail
