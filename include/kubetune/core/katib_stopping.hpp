// Katib early-stopping service logic (api.v1.beta1.EarlyStopping): settings validation and the static
// stopping rule computed from succeeded trials' observation logs. The gRPC layer is python/kubetune/katib.
//
// How Katib applies a rule (facts from kubeflow/katib v0.19: pkg/earlystopping/v1beta1/medianstop and
// cmd/metricscollector/v1beta1/file-metricscollector): the service answers {metric name, threshold as a string,
// comparison, start_step}; the trial's metrics collector compares the trial's best objective value so far with
// the threshold ONCE, at the metric's start_step-th report, and early-stops the trial when the comparison holds
// (LESS for maximize, GREATER for minimize). So every algorithm here reduces to one threshold at report number
// start_step; "step" below means the position of a value in the trial's observation log (1-based, log order).
//
// Algorithms (EarlyStoppingSpec.algorithm_name), with settings given as Katib strings:
//  * "medianstop": min_trials_required (int >= 1, default 3), start_step (int >= 1, default 4), and the kubetune
//    setting rule = "katib" (default) | "median".
//      - rule "katib": what Katib's medianstop service computes: the arithmetic MEAN over succeeded trials of the
//        average of their first start_step values (Katib calls it the median). Default because a Katib user
//        swapping the stock medianstop image for kubetune expects the same trials to be stopped.
//      - rule "median": the true median stopping rule (Golovin et al., "Google Vizier", KDD 2017, §3.2.2) at step
//        start_step: the MEDIAN over succeeded trials of their running averages up to start_step, i.e. the
//        threshold of kubetune's MedianStop pruner (search/multifidelity/median_stop.hpp, rule "median") for a
//        trial at step start_step.
//  * "percentile": percentile (number in [0, 100], default 25), min_trials_required, start_step: Optuna's
//    PercentilePruner decision at step start_step, i.e. the percentile (linear interpolation, lower-is-better
//    orientation) of the succeeded trials' values AT step start_step (as search::percentile_linear).
//    Trials without a numeric value at that step do not count.
//
// Data choices: a value that does not parse as a number (Katib's collector writes "unavailable" when a metric
// was never reported) or is NaN is skipped, keeping its step position: one such value must not disable early
// stopping for the whole experiment (Katib's float() would fail every later call). A trial with no numeric value
// in its first start_step logs does not count toward min_trials_required (Katib divides by zero there).
// Infinite values count. No rule is produced while fewer than min_trials_required trials count, or when the
// threshold is NaN (e.g. the mean of +inf and -inf).
//
// kt_core cannot call the multifidelity module (a core-only build and the CUDA emulator build compile core
// alone), so the median and the percentile are computed here; the core tests check them against MedianStop and
// percentile_linear on random logs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kubetune/core/trial.hpp"

namespace kubetune::katib {

/// Parsed early-stopping spec. Defaults are Katib's medianstop defaults.
struct StoppingSettings {
  std::string algorithm = "medianstop";  ///< "medianstop" | "percentile"
  std::int64_t min_trials_required = 3;
  std::int64_t start_step = 4;
  std::string rule = "katib";  ///< medianstop only: "katib" (mean) | "median"
  double percentile = 25.0;    ///< percentile only
};

/// Katib's EarlyStoppingSetting list: (name, value) pairs, values as strings.
using SettingList = std::vector<std::pair<std::string, std::string>>;

/// Algorithm names accepted by parse_stopping_settings.
std::vector<std::string> stopping_algorithms();

/// Validates and parses an EarlyStoppingSpec. InvalidArgument (naming the algorithm or the setting and its value)
/// for an unknown algorithm, an unknown or repeated setting, an unparsable or out-of-range value.
StoppingSettings parse_stopping_settings(const std::string& algorithm_name, const SettingList& settings);

/// Katib's ObjectiveType name ("minimize"/"maximize", any case) as a Direction; InvalidArgument otherwise
/// (Katib's UNKNOWN included).
Direction parse_objective_type(const std::string& objective_type);

/// Katib's ComparisonType of the rule.
enum class Comparison { Less, Greater };
/// "LESS" / "GREATER" (the protobuf enum names).
std::string to_string(Comparison c);

/// One succeeded trial's observation log for the objective metric: the values as reported, in log order.
struct TrialMetricLog {
  std::string name;
  std::vector<std::string> values;
};

struct StoppingRule {
  std::string metric_name;
  double value = 0.0;
  std::string value_text;  ///< shortest round-trip decimal form of `value` (what goes on the wire)
  Comparison comparison = Comparison::Greater;
  std::int64_t start_step = 0;
};

/// The answer of GetEarlyStoppingRules plus what the caller may want to log.
struct StoppingRules {
  std::vector<StoppingRule> rules;  ///< empty (not enough trials) or exactly one
  std::int64_t trials_counted = 0;  ///< trials that contributed to the threshold
  std::vector<std::string> trials_ignored;  ///< succeeded trials without a usable value, in input order
  std::int64_t values_skipped = 0;          ///< non-numeric / NaN values met within the first start_step logs
};

/// Rule for an objective metric from the succeeded trials' logs. Depends only on its arguments.
/// InvalidArgument for out-of-range settings, an empty metric name or a trial name that is empty or listed twice.
StoppingRules stopping_rules(const StoppingSettings& settings, const std::string& metric_name, Direction direction,
                             const std::vector<TrialMetricLog>& succeeded_trials);

/// Everything a GetEarlyStoppingRules request carries besides the logs, validated (so a server can reject a bad
/// request before reading any log).
struct RulesRequest {
  StoppingSettings settings;
  std::string metric_name;
  Direction direction = Direction::Minimize;
};
/// parse_stopping_settings + parse_objective_type + a non-empty metric name.
RulesRequest parse_rules_request(const std::string& algorithm_name, const SettingList& settings,
                                 const std::string& metric_name, const std::string& objective_type);
StoppingRules stopping_rules(const RulesRequest& request, const std::vector<TrialMetricLog>& succeeded_trials);

/// A metric value as Katib stores it, parsed: decimal (optionally signed, surrounding blanks allowed), "inf",
/// "nan"; NaN for anything else. Locale-independent.
double parse_metric_value(const std::string& text);

/// Shortest decimal text that parses back to exactly `v` ("0.1", "2.5e-07", "inf", "-inf", "nan").
std::string format_metric_value(double v);

}  // namespace kubetune::katib
