// Limits and checked conversions for JSON that users hand in (C API, study files, configs): a nesting limit
// enforced before anything walks the value recursively, integers read without silent truncation, and a
// bounded summary of a value for error messages.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"

namespace kubetune {

/// Deepest nesting of arrays/objects accepted in user JSON. nlohmann's parser is iterative, but copying,
/// comparing and dump() recurse once per level, so a 75k-level document (150 KB) overflows the stack; no
/// legitimate kubetune document (study file, config, Katib/Kubernetes object) comes near 64 levels.
constexpr int kMaxJsonDepth = 64;
/// Largest JSON text (and study file) read: 1 GiB.
constexpr std::size_t kMaxJsonBytes = std::size_t{1} << 30;

/// Nesting depth of JSON text by a linear scan without parsing (strings and escapes skipped); 0 for scalars.
int json_depth(std::string_view text) noexcept;
/// Nesting depth of a JSON value, walked iteratively; stops counting once it exceeds `stop_after`.
int json_depth(const nlohmann::json& j, int stop_after = kMaxJsonDepth) noexcept;

/// Throws InvalidArgument ("<what> nests N levels deep (limit 64)") when text/value nests beyond kMaxJsonDepth.
void check_json_depth(std::string_view text, const std::string& what, int limit = kMaxJsonDepth);
void check_json_depth(const nlohmann::json& j, const std::string& what);

/// Parses user JSON text after the depth and size checks; InvalidArgument naming `what` on any failure.
nlohmann::json parse_user_json(std::string_view text, const std::string& what);

/// A short, bounded rendering of a value for error messages: the value itself when small and shallow,
/// otherwise its kind and size ("an array of 3 elements"). Never recurses deeper than a few levels.
std::string json_summary(const nlohmann::json& j);

/// Integer of type T from a JSON number: exact integers only (1.7, 4294967297 for int32, -1 for unsigned,
/// 1e300, booleans and strings are refused). InvalidArgument names `field` and the value.
template <class T>
T checked_int(const nlohmann::json& j, const std::string& field) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  using L = std::numeric_limits<T>;
  auto fail = [&](const char* why) -> T {
    KT_THROW(InvalidArgument, field, " = ", json_summary(j), ": ", why, " (allowed ", +L::min(), "..", +L::max(), ")");
  };
  if (j.is_number_unsigned()) {
    const auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(L::max())) return fail("out of range");
    return static_cast<T>(u);
  }
  if (j.is_number_integer()) {
    const auto i = j.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (i < 0) return fail("must not be negative");
      if (static_cast<std::uint64_t>(i) > static_cast<std::uint64_t>(L::max())) return fail("out of range");
    } else {
      if (i < static_cast<std::int64_t>(L::min()) || i > static_cast<std::int64_t>(L::max()))
        return fail("out of range");
    }
    return static_cast<T>(i);
  }
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return fail("must be an integer");
    // Exact in double up to 2^53; beyond that a float literal no longer names one integer.
    if (std::fabs(d) > 9007199254740992.0) return fail("out of range");
    if (d < static_cast<double>(L::min()) || d > static_cast<double>(L::max())) return fail("out of range");
    return static_cast<T>(d);
  }
  return fail("must be an integer");
}

/// checked_int of the object's `key`, or `fallback` when the object has no such key (nlohmann's value() would
/// convert 1.7 to 1 and 1e30 with undefined behaviour). InvalidArgument names `field`.
template <class T>
T checked_int_or(const nlohmann::json& obj, const char* key, T fallback, const std::string& field) {
  const auto it = obj.find(key);
  return it == obj.end() ? fallback : checked_int<T>(*it, field);
}

}  // namespace kubetune
