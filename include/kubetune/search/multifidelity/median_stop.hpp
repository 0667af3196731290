// Early-stopping pruners on learning curves: the median stopping rule (Vizier / Katib) and percentile pruning.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kubetune/core/searcher.hpp"

namespace kubetune::search {

/// Median stopping rule (Golovin et al., "Google Vizier", KDD 2017, §3.2.2) with Katib's settings.
/// Rule "median" (default): a running trial whose latest report is at step S, having reported at least
/// `start_step` values, is pruned when its best value up to S is strictly worse than the median, over
/// completed trials that reported at or before S, of the running average of their values up to S. Needs at
/// least `min_trials_required` such trials. Defaults 3 and 4 as Katib's medianstop service.
/// Rule "katib": what Katib's medianstop service (pkg/earlystopping/v1beta1/medianstop, v0.19) and its
/// metrics collector do: the threshold is the arithmetic MEAN over succeeded trials (those with at least
/// start_step reports) of the average of their first start_step values, and the trial's best-so-far value is
/// compared with it once, at its start_step-th report (the collector's counter skips later reports).
class MedianStop final : public Pruner {
 public:
  struct Config {
    std::int64_t min_trials_required = 3;
    std::int64_t start_step = 4;
    bool katib_rule = false;
  };
  MedianStop();
  explicit MedianStop(Config c);
  static std::unique_ptr<Pruner> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  std::string type() const override { return "median_stop"; }
  nlohmann::json config() const override;
  bool should_prune(const SearchContext& ctx, const Trial& trial) override;
  /// Threshold the trial is compared with at its latest step (NaN if not enough trials). Signed: lower is better.
  double threshold(const SearchContext& ctx, const Trial& trial) const;

 private:
  Config cfg_;
};

/// Percentile pruning with Optuna's PercentilePruner semantics (Optuna 4.x): at step S, prune when the
/// trial's best intermediate value so far is strictly worse than the `percentile`-th percentile (linear
/// interpolation, lower-is-better orientation) of completed trials' values at exactly step S. Off while
/// fewer than n_startup_trials trials are complete, before n_warmup_steps, off the interval_steps grid, or
/// with fewer than n_min_trials values at S. percentile = 50 is Optuna's MedianPruner.
class PercentilePruner final : public Pruner {
 public:
  struct Config {
    double percentile = 25.0;
    std::int64_t n_startup_trials = 5;
    std::int64_t n_warmup_steps = 0;
    std::int64_t interval_steps = 1;
    std::int64_t n_min_trials = 1;
  };
  PercentilePruner();
  explicit PercentilePruner(Config c);
  static std::unique_ptr<Pruner> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  std::string type() const override { return "percentile"; }
  nlohmann::json config() const override;
  bool should_prune(const SearchContext& ctx, const Trial& trial) override;

 private:
  Config cfg_;
};

/// Linear-interpolation percentile (numpy's default method) of unsorted values; q in [0, 100].
double percentile_linear(std::vector<double> v, double q);

}  // namespace kubetune::search
