// The unit rule of the autoscale module's names (docs/autoscale.md "Units and names") and the names it replaced.
#pragma once

#include <cmath>
#include <nlohmann/json_fwd.hpp>
#include <span>

namespace kubetune::sched::autoscale {

/// Upstream's "at most second precision" rule: a finite whole number of seconds.
inline bool whole_seconds(double d) { return std::isfinite(d) && std::round(d) == d; }

/// A field or keyword renamed to the unit rule. The old name stays accepted for one release: as a JSON key of the
/// snake_case forms, and in Python as a keyword and attribute that emit a DeprecationWarning.
struct RenamedField {
  const char* type;  // the struct (or, for a keyword, the function), as C++ and Python name it
  const char* old_name;
  const char* new_name;
};
std::span<const RenamedField> renamed_fields();

/// Rewrites the old keys of `type` in a JSON object to their new names. A key given under both names is an
/// InvalidArgument naming both.
void rename_deprecated_keys(const char* type, nlohmann::json& object);

}  // namespace kubetune::sched::autoscale
