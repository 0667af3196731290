// Internal helpers for the multi-fidelity algorithms' JSON configs: read through a settings table from an object
// only, and written back tagged with the algorithm's "type".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

namespace kubetune::search::mf_detail {

/// `table` read from `j`, which must be a JSON object (null too is refused, unlike Fields::from_json);
/// `what` names the config in the error ("asha pruner" -> "asha pruner config must be a JSON object, got ...").
template <class T>
T config_from_json(const settings::Fields<T>& table, const nlohmann::json& j, const char* what) {
  KT_CHECK(j.is_object(), InvalidArgument, what, " config must be a JSON object, got ", json_summary(j));
  return table.from_json(j);
}

/// `table`'s JSON of `cfg`, with "type" set to the algorithm's `type`.
template <class T>
nlohmann::json config_to_json(const settings::Fields<T>& table, const T& cfg, const std::string& type) {
  nlohmann::json j = table.to_json(cfg);
  j["type"] = type;
  return j;
}

}  // namespace kubetune::search::mf_detail
