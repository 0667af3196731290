// Reading the JSON form of the autoscale state machines' snapshots (KPA and HPA): strict objects whose errors
// name the key path and the value. Internal to src/sched/autoscale.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

namespace kubetune::sched::autoscale::state_json {

using nlohmann::json;

inline constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
inline constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();

// Parsed with the project's limits on user JSON (depth, size), so that no state text can exhaust the stack.
inline json parse_object(const char* what, const std::string& text) {
  json j = parse_user_json(text, std::string(what) + " JSON");
  KT_CHECK(j.is_object(), InvalidArgument, what, " JSON must be an object, got ", json_summary(j));
  return j;
}

// One JSON object of a state: every key of `keys` present, no other; typed reads name the key and the value.
class Fields {
 public:
  Fields(std::string what, const json& j, std::initializer_list<const char*> keys) : what_(std::move(what)), j_(j) {
    KT_CHECK(j.is_object(), InvalidArgument, what_, " must be an object, got ", json_summary(j));
    for (const char* k : keys) KT_CHECK(j.contains(k), InvalidArgument, what_, ": missing key '", k, "'");
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool known = false;
      for (const char* k : keys) known = known || it.key() == k;
      KT_CHECK(known, InvalidArgument, what_, ": unknown key '", it.key(), "'");
    }
  }
  const json& at(const char* k) const { return j_.at(k); }
  std::string name(const char* k) const { return what_ + "." + k; }
  bool boolean(const char* k) const {
    KT_CHECK(at(k).is_boolean(), InvalidArgument, name(k), " = ", json_summary(at(k)), " must be true or false");
    return at(k).get<bool>();
  }
  double finite(const char* k) const { return finite_number(name(k), at(k)); }
  std::int64_t integer(const char* k, std::int64_t lo, std::int64_t hi) const {
    return integer_in(name(k), at(k), lo, hi);
  }
  std::string text(const char* k) const {
    KT_CHECK(at(k).is_string(), InvalidArgument, name(k), " = ", json_summary(at(k)), " must be a string");
    return at(k).get<std::string>();
  }

  static double finite_number(const std::string& name, const json& v) {
    KT_CHECK(v.is_number() && std::isfinite(v.get<double>()), InvalidArgument, name, " = ", json_summary(v),
             " must be a finite number");
    return v.get<double>();
  }
  static std::int64_t integer_in(const std::string& name, const json& v, std::int64_t lo, std::int64_t hi) {
    KT_CHECK(v.is_number_integer(), InvalidArgument, name, " = ", json_summary(v), " must be an integer");
    // A huge unsigned value would wrap in get<int64_t>: compare unsigned ones first.
    const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)
                                             : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi;
    KT_CHECK(fits, InvalidArgument, name, " = ", json_summary(v), " must be in [", lo, ", ", hi, "]");
    return v.get<std::int64_t>();
  }

 private:
  std::string what_;
  const json& j_;
};

}  // namespace kubetune::sched::autoscale::state_json
