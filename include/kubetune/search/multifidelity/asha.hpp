// Asynchronous successive halving (ASHA): a pruner on intermediate values and a searcher (prune or promote).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"

namespace kubetune::search {

/// Rung rule shared by ASHAPruner and ASHA (Li et al., "A System for Massively Parallel Hyperparameter
/// Tuning", MLSys 2020). Rung k sits at step min_resource * eta^(min_early_stopping_rate + k) (steps are the
/// `step` of Study::report, e.g. epochs); rungs at or above max_resource (when > 0) are not checked.
struct ASHARungs {
  double min_resource = 1.0;
  double max_resource = 0.0;  ///< 0 = no upper bound
  int eta = 3;
  int min_early_stopping_rate = 0;
  /// Rung budgets below max_resource (at most 64).
  std::vector<double> budgets() const;
  void validate(const std::string& who) const;
};

/// Decision when a trial reaches a rung: the trial continues iff its value is among the best
/// floor(n / eta) of the n values recorded at that rung (its own included; a trial's rung value is its
/// intermediate value at the first reported step >= the rung budget). With fewer than eta values it continues
/// only if it is the best so far (Optuna's SuccessiveHalvingPruner bootstrap, so early workers never wait).
/// Each rung is decided once, at the report that crosses it (call should_prune after every report); between
/// rungs the answer is "continue". Failed trials are ignored; pruned and running ones compete.
/// A NaN value at a rung prunes the trial.
class ASHAPruner final : public Pruner {
 public:
  explicit ASHAPruner(ASHARungs r = {});
  static std::unique_ptr<Pruner> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  std::string type() const override { return "asha"; }
  nlohmann::json config() const override;
  bool should_prune(const SearchContext& ctx, const Trial& trial) override;
  const ASHARungs& rungs() const noexcept { return r_; }

 private:
  ASHARungs r_;
};

/// The rung decision of ASHAPruner for rungs `r`; when `competes` is set, only trials it accepts compete.
bool asha_rung_prune(const SearchContext& ctx, const Trial& trial, const ASHARungs& r,
                     const std::function<bool(const Trial&)>& competes);

/// Asynchronous Hyperband as a pruner (Li et al. 2020, §3.2; Optuna's HyperbandPruner): n_brackets ASHA
/// brackets with min_early_stopping_rate = bracket index; each trial joins one bracket, chosen by a hash of its
/// id with probabilities proportional to Hyperband's bracket sizes ceil(nb eta^(nb-1-i) / (nb-i)), and competes
/// only with trials of its bracket. mode "exact": nb = s_max + 1 with exact s_max; "optuna": Optuna's float
/// floor(log(max/min)/log(eta)) + 1.
class HyperbandPruner final : public Pruner {
 public:
  struct Config {
    double min_resource = 1.0;
    double max_resource = 81.0;
    int eta = 3;
    bool optuna_brackets = false;
  };
  explicit HyperbandPruner(Config c);
  static std::unique_ptr<Pruner> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  std::string type() const override { return "hyperband"; }
  nlohmann::json config() const override;
  bool should_prune(const SearchContext& ctx, const Trial& trial) override;
  /// Bracket (= min_early_stopping_rate) of a trial id.
  int bracket_of(std::int64_t trial_id) const;
  std::size_t n_brackets() const noexcept { return budgets_.size(); }

 private:
  Config cfg_;
  std::vector<std::uint64_t> budgets_;
  std::uint64_t total_ = 0;
};

/// ASHA as a searcher. New configurations are random draws from the priors.
/// - mode "prune" (default): every trial is asked at max_resource (written into `resource_name` when given)
///   and trained while reporting; should_prune applies ASHAPruner's rule, so workers never wait.
/// - mode "promote": the paper's Algorithm 2 with checkpoint-style trials. ask scans rungs from the top: a
///   configuration in the best floor(|rung k| / eta) of the completed trials of rung k that has not been
///   promoted yet is asked again at rung k+1 (same point, resource raised); otherwise a new configuration
///   starts at rung 0. Needs `resource_name`. Rung budgets min_resource * eta^(s + k) up to max_resource.
///   Trial attrs: asha_rung, asha_config. `max_configs` (0 = unlimited) bounds new configurations.
class ASHA final : public Searcher {
 public:
  struct Config {
    ASHARungs rungs{1.0, 81.0, 3, 0};
    std::string resource_name;  ///< optional in prune mode
    bool promote = false;       ///< mode "promote" instead of "prune"
    std::int64_t max_configs = 0;
  };
  explicit ASHA(Config c);
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  std::string type() const override { return "asha"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;
  bool should_prune(const SearchContext& ctx, const Trial& trial) override;
  void check_space(const SearchSpace& space) const override;

 private:
  Config cfg_;
  ASHAPruner pruner_;
};

}  // namespace kubetune::search
