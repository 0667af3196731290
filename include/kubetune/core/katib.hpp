// Katib's Suggestion service (kubeflow/katib api.v1beta1 GetSuggestions / ValidateAlgorithmSettings) as pure
// functions over JSON: every decision the kubetune.katib gRPC service makes lives here, the Python side only
// converts protobuf messages to and from these shapes (docs/katib.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kubetune::katib {

/// Prefix of the algorithm-setting names in which replies carry the searchers' per-trial bookkeeping (Hyperband
/// bracket and rung, Sobol index, ...). Katib's controller stores a reply's AlgorithmSpec in the Suggestion's
/// status and merges it into the experiment's settings of the next request (suggestionclient.go,
/// appendAlgorithmSettingsFromSuggestion), so the state survives a restarted service pod.
inline constexpr const char* kStatePrefix = "kubetune.state/";

/// As make_searcher, these need register_builtins() first (kubetune.hpp; Python and the C API do it).

/// Katib algorithm names this service answers (kubetune's searchers under Katib's and kubetune's names).
std::vector<std::string> algorithm_names();

/// GetSuggestions. `request`:
///   {"experiment": {"name": str,
///                   "algorithm": {"name": str, "settings": [[name, value], ...]},
///                   "objective": {"type": "MINIMIZE"|"MAXIMIZE", "metric": str},
///                   "parameters": [{"name", "type": "DOUBLE"|"INT"|"DISCRETE"|"CATEGORICAL",
///                                   "min", "max", "step", "list": [str], "distribution": "LOG_UNIFORM"|...}],
///                   "parallel_trial_count": int, "max_trial_count": int (optional)},
///    "trials": [{"name": str, "start_time": RFC 3339 str (optional), "condition": "SUCCEEDED"|"RUNNING"|...,
///                "assignments": [[name, value], ...], "metrics": [[name, value], ...]}],
///    "count": int}
/// Reply: {"assignments": [[[name, value], ...], ...], "state": [[setting name, value], ...],
///         "exhausted": bool, "waiting": bool, "algorithm", "experiment", "trials" (distinct), "count"}. Fewer than `count` assignments only when the searcher has no
/// new point: "waiting" when trials still run (a Hyperband rung not yet complete), "exhausted" otherwise.
/// The answer depends on the request alone (trials are taken in start order, ties and not-yet-started ones by
/// name; same request => same reply).
/// Throws InvalidArgument naming the setting, parameter, trial or metric at fault.
nlohmann::json get_suggestions(const nlohmann::json& request);

/// GetSuggestions on a serialized api.v1beta1.GetSuggestionsRequest (protobuf wire bytes): the trials are read
/// straight from the bytes, without a message object or a JSON node per field (src/core/katib_wire.cpp).
/// Throws InvalidArgument on malformed bytes, as get_suggestions on bad content.
nlohmann::json get_suggestions_wire(std::string_view bytes);

/// The `request` above as read from serialized bytes (what get_suggestions_wire sees; for tests and tools).
nlohmann::json decode_suggestions_request(std::string_view bytes);

/// ValidateAlgorithmSettings for `experiment` (the "experiment" object above): algorithm known, every setting
/// known and in range, the space valid for the searcher, and for Hyperband and BOHB a parallel_trial_count
/// whose requests their rungs can fill. Throws InvalidArgument naming what is wrong.
void validate_algorithm_settings(const nlohmann::json& experiment);

}  // namespace kubetune::katib
