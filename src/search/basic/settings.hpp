// Names the basic searchers use for the shared config-setting parsers (kubetune/core/settings.hpp).
#pragma once

#include "kubetune/core/settings.hpp"

namespace kubetune::search::detail {

inline double setting_number(const nlohmann::json& v, const std::string& key) { return settings::number(v, key); }
inline std::uint64_t setting_uint(const nlohmann::json& v, const std::string& key) {
  return settings::uinteger(v, key);
}
inline bool setting_bool(const nlohmann::json& v, const std::string& key) { return settings::boolean(v, key); }

}  // namespace kubetune::search::detail
