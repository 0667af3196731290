// Katib early-stopping rules: medianstop (Katib's mean or the true median) and percentile thresholds.
#include "kubetune/core/katib_stopping.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/settings.hpp"

namespace kubetune::katib {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// EarlyStoppingRule.start_step is an int32 on the wire; the same bound keeps min_trials_required sane.
constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();

const char* const kMedianStop = "medianstop";
const char* const kPercentile = "percentile";

std::vector<std::string> accepted_settings(const std::string& algorithm) {
  if (algorithm == kMedianStop) return {"min_trials_required", "start_step", "rule"};
  return {"min_trials_required", "start_step", "percentile"};
}

void check_algorithm(const std::string& algorithm) {
  const auto algos = stopping_algorithms();
  KT_CHECK(std::find(algos.begin(), algos.end(), algorithm) != algos.end(), InvalidArgument,
           "unknown early stopping algorithm name '", algorithm, "' (accepted: ", join_names(algos), ")");
}

// Integer setting in [lo, hi]; the message names the algorithm, the setting and the value as given.
std::int64_t int_setting(const std::string& algo, const std::string& name, const std::string& value,
                         std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  try {
    v = settings::integer(nlohmann::json(value), name);
  } catch (const InvalidArgument& e) {
    KT_THROW(InvalidArgument, algo, ": ", e.what());
  }
  KT_CHECK(v >= lo && v <= hi, InvalidArgument, algo, ": setting '", name, "' = '", value,
           "' must be an integer in [", lo, ", ", hi, "]");
  return v;
}

double number_setting(const std::string& algo, const std::string& name, const std::string& value, double lo,
                      double hi) {
  double v = 0;
  try {
    v = settings::number(nlohmann::json(value), name);
  } catch (const InvalidArgument& e) {
    KT_THROW(InvalidArgument, algo, ": ", e.what());
  }
  KT_CHECK(v >= lo && v <= hi, InvalidArgument, algo, ": setting '", name, "' = '", value, "' must be a number in [",
           lo, ", ", hi, "]");
  return v;
}

// The same range checks for a struct built in C++ rather than parsed.
void check_settings(const StoppingSettings& s) {
  check_algorithm(s.algorithm);
  KT_CHECK(s.min_trials_required >= 1 && s.min_trials_required <= kMaxInt32, InvalidArgument, s.algorithm,
           ": setting 'min_trials_required' = ", s.min_trials_required, " must be an integer in [1, ", kMaxInt32, "]");
  KT_CHECK(s.start_step >= 1 && s.start_step <= kMaxInt32, InvalidArgument, s.algorithm, ": setting 'start_step' = ",
           s.start_step, " must be an integer in [1, ", kMaxInt32, "]");
  KT_CHECK(s.rule == "katib" || s.rule == "median", InvalidArgument, s.algorithm, ": setting 'rule' = '", s.rule,
           "' must be 'katib' or 'median'");
  KT_CHECK(s.percentile >= 0 && s.percentile <= 100, InvalidArgument, s.algorithm, ": setting 'percentile' = ",
           s.percentile, " must be a number in [0, 100]");
}

// What one trial contributes: the average of its numeric values among steps 1..start_step (NaN if none) and its
// value at step start_step (NaN if missing or not numeric).
struct TrialSummary {
  double average = kNaN;
  double at_start_step = kNaN;
};

TrialSummary summarize(const TrialMetricLog& t, std::int64_t start_step, std::int64_t& skipped) {
  TrialSummary out;
  const std::size_t k = std::min(t.values.size(), static_cast<std::size_t>(start_step));
  double sum = 0;
  std::int64_t numeric = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double x = parse_metric_value(t.values[i]);
    if (std::isnan(x)) {
      ++skipped;
      continue;
    }
    sum += x;
    ++numeric;
    if (i + 1 == static_cast<std::size_t>(start_step)) out.at_start_step = x;
  }
  if (numeric > 0) out.average = sum / static_cast<double>(numeric);
  return out;
}

// Katib's threshold: the arithmetic mean of the per-trial averages.
double mean(const std::vector<double>& v) {
  double total = 0;
  for (double x : v) total += x;
  return total / static_cast<double>(v.size());
}

// Vizier's threshold at step start_step: the median of the per-trial running averages up to start_step. The
// same rule as search::MedianStop's "median" threshold for a trial whose latest report is at step start_step
// (that pruner lives in kt_multifidelity, which kt_core must not call: a core-only build and the CUDA emulator
// build compile core alone); tests/cpp/core/test_katib_stopping.cpp checks that the two agree bit for bit.
// Orientation does not matter: negation is exact, and the median of negated values is the negated median.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Optuna's PercentilePruner threshold at step start_step: the q-th percentile with linear interpolation (numpy's
// default method) of the values in lower-is-better orientation, returned in raw units. Same maths as
// search::percentile_linear (checked by the tests).
double percentile_at_step(std::vector<double> values, double q, Direction dir) {
  if (values.empty()) return kNaN;
  const double sign = dir == Direction::Maximize ? -1.0 : 1.0;
  for (double& v : values) v *= sign;
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double t = values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
  return sign * t;
}

}  // namespace

std::vector<std::string> stopping_algorithms() { return {kMedianStop, kPercentile}; }

StoppingSettings parse_stopping_settings(const std::string& algorithm_name, const SettingList& settings) {
  check_algorithm(algorithm_name);
  StoppingSettings s;
  s.algorithm = algorithm_name;
  const auto accepted = accepted_settings(algorithm_name);
  std::set<std::string> seen;
  for (const auto& [name, value] : settings) {
    KT_CHECK(std::find(accepted.begin(), accepted.end(), name) != accepted.end(), InvalidArgument, algorithm_name,
             ": unknown setting '", name, "' = '", value, "' (accepted: ", join_names(accepted), ")");
    KT_CHECK(seen.insert(name).second, InvalidArgument, algorithm_name, ": setting '", name,
             "' is given more than once (again as '", value, "')");
    if (name == "min_trials_required") {
      s.min_trials_required = int_setting(algorithm_name, name, value, 1, kMaxInt32);
    } else if (name == "start_step") {
      s.start_step = int_setting(algorithm_name, name, value, 1, kMaxInt32);
    } else if (name == "rule") {
      KT_CHECK(value == "katib" || value == "median", InvalidArgument, algorithm_name, ": setting 'rule' = '", value,
               "' must be 'katib' or 'median'");
      s.rule = value;
    } else {  // percentile
      s.percentile = number_setting(algorithm_name, name, value, 0.0, 100.0);
    }
  }
  return s;
}

Direction parse_objective_type(const std::string& objective_type) {
  std::string t = objective_type;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t == "minimize") return Direction::Minimize;
  if (t == "maximize") return Direction::Maximize;
  KT_THROW(InvalidArgument, "objective type '", objective_type, "' is not supported: expected 'minimize' or 'maximize'");
}

std::string to_string(Comparison c) { return c == Comparison::Less ? "LESS" : "GREATER"; }

double parse_metric_value(const std::string& text) {
  const char* const blanks = " \t\n\r\f\v";
  const std::size_t b = text.find_first_not_of(blanks);
  if (b == std::string::npos) return kNaN;
  const std::size_t e = text.find_last_not_of(blanks) + 1;
  const char* first = text.data() + b;
  const char* last = text.data() + e;
  if (*first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+') ++first;  // from_chars has no '+'
  double v = 0;
  const auto [ptr, ec] = std::from_chars(first, last, v, std::chars_format::general);
  if (ec != std::errc() || ptr != last) return kNaN;
  return v;
}

std::string format_metric_value(double v) {
  char buf[64];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  KT_CHECK(ec == std::errc(), Error, "format_metric_value: cannot format ", v);
  return std::string(buf, ptr);
}

StoppingRules stopping_rules(const StoppingSettings& settings, const std::string& metric_name, Direction direction,
                             const std::vector<TrialMetricLog>& succeeded_trials) {
  check_settings(settings);
  KT_CHECK(!metric_name.empty(), InvalidArgument, "objective_metric_name is empty");
  std::set<std::string> names;
  for (const auto& t : succeeded_trials) {
    KT_CHECK(!t.name.empty(), InvalidArgument, "a succeeded trial has an empty name");
    KT_CHECK(names.insert(t.name).second, InvalidArgument, "trial '", t.name, "' is listed more than once");
  }

  StoppingRules out;
  const bool use_average = settings.algorithm == kMedianStop;
  std::vector<double> stats;  // one per counted trial: its average (medianstop) or its value at start_step
  for (const auto& t : succeeded_trials) {
    const TrialSummary sum = summarize(t, settings.start_step, out.values_skipped);
    const double stat = use_average ? sum.average : sum.at_start_step;
    if (std::isnan(stat)) {
      out.trials_ignored.push_back(t.name);
    } else {
      stats.push_back(stat);
    }
  }
  out.trials_counted = static_cast<std::int64_t>(stats.size());

  double threshold = kNaN;
  if (out.trials_counted >= settings.min_trials_required) {
    if (!use_average) {
      threshold = percentile_at_step(std::move(stats), settings.percentile, direction);
    } else if (settings.rule == "median") {
      threshold = median(std::move(stats));
    } else {
      threshold = mean(stats);
    }
  }

  if (!std::isnan(threshold)) {
    StoppingRule r;
    r.metric_name = metric_name;
    r.value = threshold;
    r.value_text = format_metric_value(threshold);
    r.comparison = direction == Direction::Maximize ? Comparison::Less : Comparison::Greater;
    r.start_step = settings.start_step;
    out.rules.push_back(std::move(r));
  }
  return out;
}

RulesRequest parse_rules_request(const std::string& algorithm_name, const SettingList& settings,
                                 const std::string& metric_name, const std::string& objective_type) {
  RulesRequest r;
  r.settings = parse_stopping_settings(algorithm_name, settings);
  KT_CHECK(!metric_name.empty(), InvalidArgument, "objective_metric_name is empty");
  r.metric_name = metric_name;
  r.direction = parse_objective_type(objective_type);
  return r;
}

StoppingRules stopping_rules(const RulesRequest& request, const std::vector<TrialMetricLog>& succeeded_trials) {
  return stopping_rules(request.settings, request.metric_name, request.direction, succeeded_trials);
}

}  // namespace kubetune::katib
