// Trial: one evaluated (or pending) point of a study with its state, objective values and learning curve.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kubetune {

/// pending: enqueued, not yet handed out; running: asked, not yet told; the other three are final.
enum class TrialState { Pending, Running, Complete, Pruned, Failed };
enum class Direction { Minimize, Maximize };

std::string to_string(TrialState s);
TrialState trial_state_from_string(const std::string& s);
std::string to_string(Direction d);
Direction direction_from_string(const std::string& s);

struct Trial {
  std::int64_t id = -1;
  std::vector<double> x;  ///< internal encoding (see SearchSpace): one value per parameter, NaN = inactive
  TrialState state = TrialState::Pending;
  std::vector<double> values;  ///< objective values (one per direction) once complete
  std::vector<std::pair<std::int64_t, double>> intermediate;  ///< (step, value), ascending steps
  double created_at = 0.0;   ///< unix seconds
  double finished_at = 0.0;  ///< unix seconds, 0 until final
  std::map<std::string, std::string> user_attrs;
  std::map<std::string, double> system_attrs;  ///< set by searchers (e.g. bracket, rung, sobol index)

  bool is_finished() const noexcept {
    return state == TrialState::Complete || state == TrialState::Pruned || state == TrialState::Failed;
  }
  /// Value at the largest reported step, if any.
  std::optional<double> last_intermediate() const noexcept {
    if (intermediate.empty()) return std::nullopt;
    return intermediate.back().second;
  }
  std::optional<double> intermediate_at(std::int64_t step) const noexcept;
  bool operator==(const Trial& o) const;
};

}  // namespace kubetune
