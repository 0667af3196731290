// Depth scan, depth-checked parsing and bounded summaries for user JSON (see json_limits.hpp).
#include "kubetune/core/json_limits.hpp"

#include <algorithm>
#include <vector>

namespace kubetune {

int json_depth(std::string_view text) noexcept {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

int json_depth(const nlohmann::json& j, int stop_after) noexcept {
  // Explicit stack of (value, its depth): no recursion, so any depth is walked safely.
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&j, j.is_structured() ? 1 : 0}};
  int deepest = 0;
  while (!todo.empty()) {
    auto [v, d] = todo.back();
    todo.pop_back();
    deepest = std::max(deepest, d);
    if (deepest > stop_after) return deepest;
    if (!v->is_structured()) continue;
    for (const auto& child : *v)
      if (child.is_structured()) todo.emplace_back(&child, d + 1);
  }
  return deepest;
}

void check_json_depth(std::string_view text, const std::string& what, int limit) {
  const int d = json_depth(text);
  KT_CHECK(d <= limit, InvalidArgument, what, " nests ", d, " levels deep (limit ", limit, ")");
}

void check_json_depth(const nlohmann::json& j, const std::string& what) {
  const int d = json_depth(j);
  KT_CHECK(d <= kMaxJsonDepth, InvalidArgument, what, " nests more than ", kMaxJsonDepth, " levels deep");
}

nlohmann::json parse_user_json(std::string_view text, const std::string& what) {
  KT_CHECK(text.size() <= kMaxJsonBytes, InvalidArgument, what, " is ", text.size(), " bytes (limit ",
           kMaxJsonBytes, ")");
  check_json_depth(text, what);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    KT_THROW(InvalidArgument, what, " is not valid JSON (truncated or corrupt): ", e.what());
  }
}

std::string json_summary(const nlohmann::json& j) {
  constexpr std::size_t kMaxChars = 120;
  if (j.is_structured() && (j.size() > 16 || json_depth(j, 4) > 4))
    return detail::concat(j.is_array() ? "an array of " : "an object of ", j.size(),
                          j.is_array() ? " elements" : " keys");
  // Shallow now, so dump() recurses at most 4 levels; replacement keeps invalid UTF-8 from throwing.
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > kMaxChars) s = s.substr(0, kMaxChars) + "...";
  return s;
}

}  // namespace kubetune
