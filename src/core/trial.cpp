// Trial state names and comparisons.
#include "kubetune/core/trial.hpp"

#include <cmath>

#include "kubetune/core/error.hpp"

namespace kubetune {

std::string to_string(TrialState s) {
  switch (s) {
    case TrialState::Pending: return "pending";
    case TrialState::Running: return "running";
    case TrialState::Complete: return "complete";
    case TrialState::Pruned: return "pruned";
    case TrialState::Failed: return "failed";
  }
  return "?";
}

TrialState trial_state_from_string(const std::string& s) {
  if (s == "pending") return TrialState::Pending;
  if (s == "running") return TrialState::Running;
  if (s == "complete") return TrialState::Complete;
  if (s == "pruned") return TrialState::Pruned;
  if (s == "failed") return TrialState::Failed;
  KT_THROW(InvalidArgument, "unknown trial state '", s, "'");
}

std::string to_string(Direction d) { return d == Direction::Minimize ? "minimize" : "maximize"; }

Direction direction_from_string(const std::string& s) {
  if (s == "minimize" || s == "min") return Direction::Minimize;
  if (s == "maximize" || s == "max") return Direction::Maximize;
  KT_THROW(InvalidArgument, "direction must be 'minimize' or 'maximize', got '", s, "'");
}

std::optional<double> Trial::intermediate_at(std::int64_t step) const noexcept {
  for (const auto& [s, v] : intermediate)
    if (s == step) return v;
  return std::nullopt;
}

static bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

bool Trial::operator==(const Trial& o) const {
  if (id != o.id || state != o.state || x.size() != o.x.size() || values.size() != o.values.size() ||
      intermediate.size() != o.intermediate.size() || user_attrs != o.user_attrs || system_attrs != o.system_attrs ||
      created_at != o.created_at || finished_at != o.finished_at)
    return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!same(x[i], o.x[i])) return false;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!same(values[i], o.values[i])) return false;
  for (std::size_t i = 0; i < intermediate.size(); ++i)
    if (intermediate[i].first != o.intermediate[i].first || !same(intermediate[i].second, o.intermediate[i].second))
      return false;
  return true;
}

}  // namespace kubetune
