// Internal to src/core/katib*.cpp: a GetSuggestions request with its trials as views into the caller's bytes
// (the wire message or the request JSON), so thousands of trials are read without a copy per field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kubetune::katib {

using TextPairs = std::vector<std::pair<std::string_view, std::string_view>>;

struct TrialView {
  std::string_view name;
  std::string_view start_time;  ///< Katib's status.start_time (RFC 3339, UTC), empty if not started
  std::string condition;       ///< Katib's TrialConditionType name ("SUCCEEDED", ...), or its number if unknown
  TextPairs assignments;       ///< [(parameter, value text)]
  TextPairs metrics;           ///< [(metric, value text)]
};

struct RequestView {
  nlohmann::json experiment;  ///< the "experiment" object of katib.hpp (small: no trials)
  std::vector<TrialView> trials;
  std::int64_t count = 0;
};

/// Reads a serialized GetSuggestionsRequest; the views point into `bytes` (katib_wire.cpp).
RequestView read_suggestions_request(std::string_view bytes);

/// The reply of katib.hpp's get_suggestions for a request view (katib.cpp).
nlohmann::json suggest(const RequestView& request);

}  // namespace kubetune::katib
