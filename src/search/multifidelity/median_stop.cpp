// Median stopping rule (Vizier and Katib variants) and Optuna-style percentile pruning.
#include "kubetune/search/multifidelity/median_stop.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kubetune/core/error.hpp"
#include "config_json.hpp"
#include "settings.hpp"

namespace kubetune::search {
namespace {
namespace md = mf_detail;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Best (lowest signed) value among reports with step <= S.
double best_upto(const SearchContext& ctx, const Trial& t, std::int64_t S) {
  double b = kNaN;
  for (const auto& [s, v] : t.intermediate) {
    if (s > S) break;
    double x = ctx.signed_value(v);
    if (std::isnan(x)) continue;
    if (std::isnan(b) || x < b) b = x;
  }
  return b;
}
}  // namespace

namespace {
const settings::Fields<MedianStop::Config>& median_table() {
  using C = MedianStop::Config;
  static const settings::Fields<C> t =
      settings::Fields<C>("median_stop")
          .field<&C::min_trials_required>("min_trials_required", "Completed trials needed before any pruning.")
          .field<&C::start_step>("start_step", "Reports a trial makes before it can be pruned.")
          .choice<&C::katib_rule>("rule", {"median", "katib"},
                                  "median: Vizier's rule; katib: what Katib's medianstop service does.");
  return t;
}

const settings::Fields<PercentilePruner::Config>& percentile_table() {
  using C = PercentilePruner::Config;
  static const settings::Fields<C> t =
      settings::Fields<C>("percentile")
          .field<&C::percentile>("percentile", "Percentile of completed trials' values a trial must beat (50 = median).")
          .field<&C::n_startup_trials>("n_startup_trials", "Completed trials before pruning starts.")
          .field<&C::n_warmup_steps>("n_warmup_steps", "Steps before a trial can be pruned.")
          .field<&C::interval_steps>("interval_steps", "Check every this many steps.")
          .field<&C::n_min_trials>("n_min_trials", "Values needed at the step.");
  return t;
}
}  // namespace

double percentile_linear(std::vector<double> v, double q) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double f = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * f;
}

// ---------------------------------------------------------------------------------------- median stop

MedianStop::MedianStop() : MedianStop(Config{}) {}

MedianStop::MedianStop(Config c) : cfg_(c) {
  KT_CHECK(cfg_.min_trials_required >= 1, InvalidArgument, "median_stop: setting 'min_trials_required' = ",
           cfg_.min_trials_required, " must be >= 1");
  KT_CHECK(cfg_.start_step >= 1, InvalidArgument, "median_stop: setting 'start_step' = ", cfg_.start_step,
           " must be >= 1");
}

std::unique_ptr<Pruner> MedianStop::from_json(const nlohmann::json& j) {
  return std::make_unique<MedianStop>(md::config_from_json(median_table(), j, "median_stop"));
}

nlohmann::json MedianStop::settings_schema() { return median_table().schema(); }

nlohmann::json MedianStop::config() const {
  return md::config_to_json(median_table(), cfg_, type());
}

double MedianStop::threshold(const SearchContext& ctx, const Trial& trial) const {
  if (trial.intermediate.empty()) return kNaN;
  std::vector<double> stats;
  if (cfg_.katib_rule) {
    for (const Trial& t : ctx.trials) {
      if (t.id == trial.id || t.state != TrialState::Complete) continue;
      if (static_cast<std::int64_t>(t.intermediate.size()) < cfg_.start_step) continue;
      double sum = 0;
      for (std::int64_t i = 0; i < cfg_.start_step; ++i)
        sum += ctx.signed_value(t.intermediate[static_cast<std::size_t>(i)].second);
      stats.push_back(sum / static_cast<double>(cfg_.start_step));
    }
    if (static_cast<std::int64_t>(stats.size()) < cfg_.min_trials_required) return kNaN;
    double s = 0;
    for (double v : stats) s += v;
    return s / static_cast<double>(stats.size());  // Katib's "median" is this mean
  }
  const std::int64_t S = trial.intermediate.back().first;
  for (const Trial& t : ctx.trials) {
    if (t.id == trial.id || t.state != TrialState::Complete) continue;
    double sum = 0;
    std::int64_t cnt = 0;
    for (const auto& [s, v] : t.intermediate) {
      if (s > S) break;
      double x = ctx.signed_value(v);
      if (std::isnan(x)) continue;
      sum += x;
      ++cnt;
    }
    if (cnt > 0) stats.push_back(sum / static_cast<double>(cnt));
  }
  if (static_cast<std::int64_t>(stats.size()) < cfg_.min_trials_required) return kNaN;
  return median(stats);
}

bool MedianStop::should_prune(const SearchContext& ctx, const Trial& trial) {
  const auto n = static_cast<std::int64_t>(trial.intermediate.size());
  if (n < cfg_.start_step) return false;
  if (cfg_.katib_rule && n != cfg_.start_step) return false;
  const double thr = threshold(ctx, trial);
  if (std::isnan(thr)) return false;
  const double best = best_upto(ctx, trial, trial.intermediate.back().first);
  if (std::isnan(best)) return true;
  return best > thr;
}

// ----------------------------------------------------------------------------------------- percentile

PercentilePruner::PercentilePruner() : PercentilePruner(Config{}) {}

PercentilePruner::PercentilePruner(Config c) : cfg_(c) {
  KT_CHECK(cfg_.percentile >= 0 && cfg_.percentile <= 100, InvalidArgument, "percentile: setting 'percentile' = ",
           cfg_.percentile, " must be in [0, 100]");
  KT_CHECK(cfg_.n_startup_trials >= 0, InvalidArgument, "percentile: setting 'n_startup_trials' = ",
           cfg_.n_startup_trials, " must be >= 0");
  KT_CHECK(cfg_.n_warmup_steps >= 0, InvalidArgument, "percentile: setting 'n_warmup_steps' = ", cfg_.n_warmup_steps,
           " must be >= 0");
  KT_CHECK(cfg_.interval_steps >= 1, InvalidArgument, "percentile: setting 'interval_steps' = ", cfg_.interval_steps,
           " must be >= 1");
  KT_CHECK(cfg_.n_min_trials >= 1, InvalidArgument, "percentile: setting 'n_min_trials' = ", cfg_.n_min_trials,
           " must be >= 1");
}

std::unique_ptr<Pruner> PercentilePruner::from_json(const nlohmann::json& j) {
  return std::make_unique<PercentilePruner>(md::config_from_json(percentile_table(), j, "percentile"));
}

nlohmann::json PercentilePruner::settings_schema() { return percentile_table().schema(); }

nlohmann::json PercentilePruner::config() const {
  return md::config_to_json(percentile_table(), cfg_, type());
}

bool PercentilePruner::should_prune(const SearchContext& ctx, const Trial& trial) {
  if (trial.intermediate.empty()) return false;
  const std::int64_t step = trial.intermediate.back().first;
  std::int64_t n_complete = 0;
  for (const Trial& t : ctx.trials)
    if (t.state == TrialState::Complete) ++n_complete;
  if (n_complete < cfg_.n_startup_trials) return false;
  if (step < cfg_.n_warmup_steps) return false;
  if (cfg_.interval_steps > 1) {
    // Optuna: check only at the first reported step of each interval after the warm-up.
    auto interval_of = [&](std::int64_t s) { return (s - cfg_.n_warmup_steps) / cfg_.interval_steps; };
    const std::int64_t cur = interval_of(step);
    for (std::size_t i = 0; i + 1 < trial.intermediate.size(); ++i) {
      std::int64_t s = trial.intermediate[i].first;
      if (s >= cfg_.n_warmup_steps && interval_of(s) == cur) return false;
    }
  }
  const double best = best_upto(ctx, trial, step);
  if (std::isnan(best)) return true;
  std::vector<double> vals;
  for (const Trial& t : ctx.trials) {
    if (t.state != TrialState::Complete || t.id == trial.id) continue;
    auto v = t.intermediate_at(step);
    if (v && !std::isnan(*v)) vals.push_back(ctx.signed_value(*v));
  }
  if (static_cast<std::int64_t>(vals.size()) < cfg_.n_min_trials) return false;
  return best > percentile_linear(vals, cfg_.percentile);
}

}  // namespace kubetune::search
