// Internal helpers for multi-fidelity configs: Katib-style string numbers, unknown-key checks, trial attrs.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/settings.hpp"
#include "kubetune/core/trial.hpp"

namespace kubetune::search::mf_detail {

using settings::boolean;
using settings::check_keys;
using settings::find;
using settings::integer;
using settings::integer_as;
using settings::number;
using settings::string;

inline std::optional<double> attr(const Trial& t, const char* key) {
  auto it = t.system_attrs.find(key);
  if (it == t.system_attrs.end()) return std::nullopt;
  return it->second;
}

}  // namespace kubetune::search::mf_detail
