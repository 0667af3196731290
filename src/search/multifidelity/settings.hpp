// Internal helpers for multi-fidelity configs: Hyperband's settings table (shared with BOHB), trial attrs.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/settings.hpp"
#include "kubetune/core/trial.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"

namespace kubetune::search::mf_detail {

/// Hyperband's settings table (hyperband.cpp); BOHB nests it under its own name `what`.
settings::Fields<Hyperband::Config> hyperband_fields(const std::string& what);

inline std::optional<double> attr(const Trial& t, const char* key) {
  auto it = t.system_attrs.find(key);
  if (it == t.system_attrs.end()) return std::nullopt;
  return it->second;
}

}  // namespace kubetune::search::mf_detail
