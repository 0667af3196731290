// Knative KPA: config validation, target resolution, decider with panic mode, scrape rules, scaler state machine.
#include "kubetune/sched/autoscale/kpa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/sched/autoscale/units.hpp"

#include "config_table.hpp"

namespace kubetune::sched::autoscale {

using nlohmann::json;

namespace {

// Go time.ParseDuration subset: sequences of <number><unit> with units h, m, s, ms, us, ns.
double parse_go_duration(const std::string& key, const std::string& s) {
  KT_CHECK(!s.empty(), InvalidArgument, "config key '", key, "': empty duration");
  std::size_t i = 0;
  double sign = 1.0, total = 0.0;
  if (s[0] == '-' || s[0] == '+') {
    sign = s[0] == '-' ? -1.0 : 1.0;
    ++i;
  }
  if (s.substr(i) == "0") return 0.0;
  bool any = false;
  while (i < s.size()) {
    std::size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    KT_CHECK(j > i, InvalidArgument, "config key '", key, "' = '", s, "' is not a duration");
    const double v = std::stod(s.substr(i, j - i));
    std::size_t k = j;
    while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
    const std::string unit = s.substr(j, k - j);
    double mul = 0.0;
    if (unit == "h") mul = 3600.0;
    else if (unit == "m") mul = 60.0;
    else if (unit == "s") mul = 1.0;
    else if (unit == "ms") mul = 1e-3;
    else if (unit == "us" || unit == "µs") mul = 1e-6;
    else if (unit == "ns") mul = 1e-9;
    else KT_THROW(InvalidArgument, "config key '", key, "' = '", s, "': unknown duration unit '", unit, "'");
    total += v * mul;
    any = true;
    i = k;
  }
  KT_CHECK(any, InvalidArgument, "config key '", key, "' = '", s, "' is not a duration");
  return sign * total;
}

double parse_double(const std::string& key, const std::string& s) {
  try {
    std::size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos == s.size()) return v;
  } catch (const std::exception&) {
  }
  KT_THROW(InvalidArgument, "config key '", key, "' = '", s, "' is not a number");
}

bool parse_bool(const std::string& key, const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (l == "true" || l == "1") return true;
  if (l == "false" || l == "0") return false;
  KT_THROW(InvalidArgument, "config key '", key, "' = '", s, "' is not a boolean");
}

std::int32_t parse_int(const std::string& key, const std::string& s) {
  const double v = parse_double(key, s);
  KT_CHECK(v == std::floor(v) && std::abs(v) < 2147483647.0, InvalidArgument, "config key '", key, "' = '", s,
           "' is not an int32");
  return static_cast<std::int32_t>(v);
}

ScalingMetric metric_from(const std::string& s) {
  if (s == "rps") return ScalingMetric::kRps;
  if (s == "concurrency") return ScalingMetric::kConcurrency;
  KT_THROW(InvalidArgument, "metric = '", s, "' must be 'concurrency' or 'rps'");
}
Aggregation agg_from(const std::string& s) {
  if (s == "linear") return Aggregation::kLinear;
  if (s == "weightedExponential" || s == "weighted_exponential") return Aggregation::kWeightedExponential;
  KT_THROW(InvalidArgument, "aggregation = '", s, "' must be 'linear' or 'weightedExponential'");
}

// The snake_case JSON form of KpaConfig, declared once: to_json and from_json come from it. Ranges stay in
// validate() (upstream's rules and messages); the table only reads and writes.
const settings::Fields<KpaConfig>& kpa_config_table() {
  static const settings::Fields<KpaConfig> t = [] {
    using C = KpaConfig;
    settings::Fields<C> f("KpaConfig JSON");
    f.field<&C::enable_scale_to_zero>("enable_scale_to_zero", "enable-scale-to-zero")
        .field<&C::container_concurrency_target_fraction>("container_concurrency_target_fraction",
                                                         "container-concurrency-target-percentage, as a fraction")
        .field<&C::container_concurrency_target_default>("container_concurrency_target_default",
                                                        "container-concurrency-target-default")
        .field<&C::target_utilization>("target_utilization", "target-utilization-percentage as a fraction (RPS)")
        .field<&C::rps_target_default>("rps_target_default", "requests-per-second-target-default")
        .field<&C::target_burst_capacity>("target_burst_capacity", "target-burst-capacity; -1 = unlimited")
        .field<&C::max_scale_up_rate>("max_scale_up_rate", "max-scale-up-rate")
        .field<&C::max_scale_down_rate>("max_scale_down_rate", "max-scale-down-rate")
        .field<&C::stable_window_s>("stable_window_s", "stable-window, seconds")
        .field<&C::panic_window_percent>("panic_window_percent", "panic-window-percentage")
        .field<&C::panic_threshold_percent>("panic_threshold_percent", "panic-threshold-percentage")
        .field<&C::activator_capacity>("activator_capacity", "activator-capacity")
        .field<&C::scale_to_zero_grace_period_s>("scale_to_zero_grace_period_s", "scale-to-zero-grace-period, seconds")
        .field<&C::scale_to_zero_pod_retention_period_s>("scale_to_zero_pod_retention_period_s",
                                                        "scale-to-zero-pod-retention-period, seconds")
        .field<&C::scale_down_delay_s>("scale_down_delay_s", "scale-down-delay, seconds")
        .field<&C::initial_scale>("initial_scale", "initial-scale")
        .field<&C::allow_zero_initial_scale>("allow_zero_initial_scale", "allow-zero-initial-scale")
        .field<&C::min_scale>("min_scale", "min-scale")
        .field<&C::max_scale>("max_scale", "max-scale; 0 = unbounded")
        .field<&C::max_scale_limit>("max_scale_limit", "max-scale-limit")
        .field<&C::activation_timeout_s>("activation_timeout_s", "activator's wait for a pod, seconds");
    return config_table::with_renamed(f, "KpaConfig");
  }();
  return t;
}

// The JSON form of KpaRevision (the revision's annotations); null = annotation not set.
const settings::Fields<KpaRevision>& kpa_revision_table() {
  static const settings::Fields<KpaRevision> t = [] {
    using R = KpaRevision;
    settings::Fields<R> f("KpaRevision JSON");
    f.choice<&R::metric, &metric_from>("metric", {"concurrency", "rps"}, "autoscaling.knative.dev/metric")
        .choice<&R::aggregation, &agg_from>("aggregation", {"linear", "weightedExponential"},
                                            "metric-aggregation-algorithm")
        .field<&R::container_concurrency>("container_concurrency", "containerConcurrency; 0 = unlimited")
        .field<&R::target>("target", "autoscaling.knative.dev/target")
        .field<&R::target_utilization_percent>("target_utilization_percent", "target-utilization-percentage")
        .field<&R::target_burst_capacity>("target_burst_capacity", "target-burst-capacity")
        .field<&R::window_s>("window_s", "stable window, seconds (autoscaling.knative.dev/window)")
        .field<&R::panic_window_percent>("panic_window_percent", "panic-window-percentage")
        .field<&R::panic_threshold_percent>("panic_threshold_percent", "panic-threshold-percentage")
        .field<&R::scale_down_delay_s>("scale_down_delay_s", "scale-down-delay, seconds")
        .field<&R::scale_to_zero_pod_retention_period_s>("scale_to_zero_pod_retention_period_s",
                                                        "scale-to-zero-pod-retention-period, seconds")
        .field<&R::initial_scale>("initial_scale", "initial-scale")
        .field<&R::min_scale>("min_scale", "min-scale")
        .field<&R::max_scale>("max_scale", "max-scale")
        .field<&R::activation_scale>("activation_scale", "activation-scale")
        .field<&R::reachable>("reachable", "whether the revision is routable")
        .field<&R::progress_deadline_s>("progress_deadline_s", "serving.knative.dev/progress-deadline, seconds");
    return config_table::with_renamed(f, "KpaRevision");
  }();
  return t;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ KpaConfig
void KpaConfig::validate() const {
  // Rules of knative.dev/serving pkg/autoscaler/config/config.go validate().
  KT_CHECK(scale_to_zero_grace_period_s >= kWindowMinSeconds, InvalidArgument,
           "scale-to-zero-grace-period = ", scale_to_zero_grace_period_s, "s must be at least ", kWindowMinSeconds,
           "s");
  KT_CHECK(scale_down_delay_s >= 0, InvalidArgument, "scale-down-delay = ", scale_down_delay_s, "s cannot be negative");
  KT_CHECK(whole_seconds(scale_down_delay_s), InvalidArgument, "scale-down-delay = ", scale_down_delay_s,
           "s must be specified with at most second precision");
  KT_CHECK(scale_to_zero_pod_retention_period_s >= 0, InvalidArgument, "scale-to-zero-pod-retention-period = ",
           scale_to_zero_pod_retention_period_s, "s cannot be negative");
  KT_CHECK(target_burst_capacity >= 0 || target_burst_capacity == -1, InvalidArgument,
           "target-burst-capacity = ", target_burst_capacity, " must be either non-negative or -1 (for unlimited)");
  KT_CHECK(container_concurrency_target_fraction > 0 && container_concurrency_target_fraction <= 1, InvalidArgument,
           "container-concurrency-target-percentage = ", container_concurrency_target_fraction * 100,
           " is outside of valid range of (0, 100]");
  KT_CHECK(container_concurrency_target_fraction * container_concurrency_target_default >= kTargetMin,
           InvalidArgument, "container-concurrency-target-percentage and container-concurrency-target-default yield ",
           container_concurrency_target_fraction * container_concurrency_target_default,
           ", can't be less than ", kTargetMin);
  KT_CHECK(target_utilization > 0 && target_utilization <= 1, InvalidArgument, "target_utilization = ",
           target_utilization, " must be in (0, 1]");
  KT_CHECK(rps_target_default >= kTargetMin, InvalidArgument, "requests-per-second-target-default = ",
           rps_target_default, " must be at least ", kTargetMin);
  KT_CHECK(activator_capacity >= 1, InvalidArgument, "activator-capacity = ", activator_capacity,
           " must be at least 1");
  KT_CHECK(max_scale_up_rate > 1.0, InvalidArgument, "max-scale-up-rate = ", max_scale_up_rate,
           " must be greater than 1.0");
  KT_CHECK(max_scale_down_rate > 1.0, InvalidArgument, "max-scale-down-rate = ", max_scale_down_rate,
           " must be greater than 1.0");
  KT_CHECK(stable_window_s >= kWindowMinSeconds && stable_window_s <= kWindowMaxSeconds, InvalidArgument,
           "stable-window = ", stable_window_s, "s must be in [6s, 3600s] range");
  KT_CHECK(whole_seconds(stable_window_s), InvalidArgument, "stable-window = ", stable_window_s,
           "s must be specified with at most second precision");
  KT_CHECK(panic_window_percent >= kPanicWindowPercentageMin && panic_window_percent <= kPanicWindowPercentageMax,
           InvalidArgument, "panic-window-percentage = ", panic_window_percent, " must be in [1, 100] interval");
  KT_CHECK(panic_threshold_percent >= kPanicThresholdPercentageMin &&
               panic_threshold_percent <= kPanicThresholdPercentageMax,
           InvalidArgument, "panic-threshold-percentage = ", panic_threshold_percent,
           " must be in [110, 1000] interval");
  KT_CHECK(initial_scale >= 0 && (initial_scale > 0 || allow_zero_initial_scale), InvalidArgument,
           "initial-scale = ", initial_scale, " must be at least 0 (or at least 1 when allow-zero-initial-scale is false)");
  KT_CHECK(max_scale_limit >= 0, InvalidArgument, "max-scale-limit = ", max_scale_limit, " must be at least 0");
  const std::int32_t min_max = max_scale_limit > 0 ? 1 : 0;
  KT_CHECK(max_scale >= min_max && (max_scale_limit == 0 || max_scale <= max_scale_limit), InvalidArgument,
           "max-scale = ", max_scale, " must be in [", min_max, ", max-scale-limit(", max_scale_limit, ")] range");
  KT_CHECK(min_scale >= 0, InvalidArgument, "min-scale = ", min_scale, " must be at least 0");
  KT_CHECK(max_scale == 0 || min_scale <= max_scale, InvalidArgument, "min-scale = ", min_scale,
           " must be less than or equal to max-scale = ", max_scale);
  KT_CHECK(activation_timeout_s > 0, InvalidArgument, "activation_timeout_s = ", activation_timeout_s, " must be > 0");
}

std::string KpaConfig::to_json() const { return kpa_config_table().to_json(*this).dump(); }

KpaConfig KpaConfig::from_json(const std::string& text) {
  KpaConfig c = config_table::read(kpa_config_table(), "KpaConfig", text);
  c.validate();
  return c;
}

KpaConfig KpaConfig::from_configmap(const std::map<std::string, std::string>& data) {
  KpaConfig c;
  for (const auto& [k, v] : data) {
    if (k == "enable-scale-to-zero") c.enable_scale_to_zero = parse_bool(k, v);
    else if (k == "allow-zero-initial-scale") c.allow_zero_initial_scale = parse_bool(k, v);
    else if (k == "max-scale-up-rate") c.max_scale_up_rate = parse_double(k, v);
    else if (k == "max-scale-down-rate") c.max_scale_down_rate = parse_double(k, v);
    else if (k == "container-concurrency-target-percentage") c.container_concurrency_target_fraction = parse_double(k, v);
    else if (k == "container-concurrency-target-default") c.container_concurrency_target_default = parse_double(k, v);
    else if (k == "target-utilization-percentage") c.target_utilization = parse_double(k, v) / 100.0;
    else if (k == "requests-per-second-target-default") c.rps_target_default = parse_double(k, v);
    else if (k == "target-burst-capacity") c.target_burst_capacity = parse_double(k, v);
    else if (k == "panic-window-percentage") c.panic_window_percent = parse_double(k, v);
    else if (k == "activator-capacity") c.activator_capacity = parse_double(k, v);
    else if (k == "panic-threshold-percentage") c.panic_threshold_percent = parse_double(k, v);
    else if (k == "initial-scale") c.initial_scale = parse_int(k, v);
    else if (k == "min-scale") c.min_scale = parse_int(k, v);
    else if (k == "max-scale") c.max_scale = parse_int(k, v);
    else if (k == "max-scale-limit") c.max_scale_limit = parse_int(k, v);
    else if (k == "stable-window") c.stable_window_s = parse_go_duration(k, v);
    else if (k == "scale-down-delay") c.scale_down_delay_s = parse_go_duration(k, v);
    else if (k == "scale-to-zero-grace-period") c.scale_to_zero_grace_period_s = parse_go_duration(k, v);
    else if (k == "scale-to-zero-pod-retention-period")
      c.scale_to_zero_pod_retention_period_s = parse_go_duration(k, v);
    // Other keys of the ConfigMap (pod-autoscaler-class, _example, ...) do not affect the maths.
  }
  // Legacy: values in (0, 1] are fractions, larger ones percentages (config.go NewConfigFromMap).
  if (c.container_concurrency_target_fraction > 1.0) c.container_concurrency_target_fraction /= 100.0;
  c.validate();
  return c;
}

// ---------------------------------------------------------------------------------------------- KpaRevision
void KpaRevision::validate() const {
  KT_CHECK(container_concurrency >= 0 && container_concurrency <= 1000, InvalidArgument,
           "container_concurrency = ", container_concurrency, " must be in [0, 1000]");
  if (target) KT_CHECK(*target >= kTargetMin, InvalidArgument, "target = ", *target, " must be at least ", kTargetMin);
  if (target_utilization_percent)
    KT_CHECK(*target_utilization_percent >= 1 && *target_utilization_percent <= 100, InvalidArgument,
             "target_utilization_percent = ", *target_utilization_percent, " must be in [1, 100]");
  if (target_burst_capacity)
    KT_CHECK(*target_burst_capacity >= 0 || *target_burst_capacity == -1, InvalidArgument,
             "target_burst_capacity = ", *target_burst_capacity, " must be either non-negative or -1");
  if (window_s)
    KT_CHECK(*window_s >= kWindowMinSeconds && *window_s <= kWindowMaxSeconds && whole_seconds(*window_s),
             InvalidArgument, "window_s = ", *window_s, "s must be whole seconds in [6s, 3600s]");
  if (panic_window_percent)
    KT_CHECK(*panic_window_percent >= kPanicWindowPercentageMin && *panic_window_percent <= kPanicWindowPercentageMax,
             InvalidArgument, "panic_window_percent = ", *panic_window_percent, " must be in [1, 100]");
  if (panic_threshold_percent)
    KT_CHECK(*panic_threshold_percent >= kPanicThresholdPercentageMin &&
                 *panic_threshold_percent <= kPanicThresholdPercentageMax,
             InvalidArgument, "panic_threshold_percent = ", *panic_threshold_percent, " must be in [110, 1000]");
  if (scale_down_delay_s)
    KT_CHECK(*scale_down_delay_s >= 0 && *scale_down_delay_s <= kWindowMaxSeconds && whole_seconds(*scale_down_delay_s),
             InvalidArgument, "scale_down_delay_s = ", *scale_down_delay_s, "s must be whole seconds in [0s, 3600s]");
  if (scale_to_zero_pod_retention_period_s)
    KT_CHECK(*scale_to_zero_pod_retention_period_s >= 0 && *scale_to_zero_pod_retention_period_s <= kWindowMaxSeconds,
             InvalidArgument, "scale_to_zero_pod_retention_period_s = ", *scale_to_zero_pod_retention_period_s,
             "s must be in [0s, 3600s]");
  if (initial_scale) KT_CHECK(*initial_scale >= 0, InvalidArgument, "initial_scale = ", *initial_scale, " must be >= 0");
  if (min_scale) KT_CHECK(*min_scale >= 0, InvalidArgument, "min_scale = ", *min_scale, " must be >= 0");
  if (max_scale) KT_CHECK(*max_scale >= 0, InvalidArgument, "max_scale = ", *max_scale, " must be >= 0");
  if (min_scale && max_scale && *max_scale != 0)
    KT_CHECK(*min_scale <= *max_scale, InvalidArgument, "min_scale = ", *min_scale,
             " must be less than or equal to max_scale = ", *max_scale);
  KT_CHECK(activation_scale >= 1, InvalidArgument, "activation_scale = ", activation_scale, " must be >= 1");
  if (progress_deadline_s)
    KT_CHECK(std::isfinite(*progress_deadline_s) && *progress_deadline_s > 0, InvalidArgument,
             "progress_deadline_s = ", *progress_deadline_s, "s must be a positive duration");
}

std::string KpaRevision::to_json() const { return kpa_revision_table().to_json(*this).dump(); }

KpaRevision KpaRevision::from_json(const std::string& text) {
  KpaRevision r = config_table::read(kpa_revision_table(), "KpaRevision", text);
  r.validate();
  return r;
}

// ------------------------------------------------------------------------------------------ spec resolution
MetricTarget resolve_metric_target(const KpaConfig& c, const KpaRevision& r) {
  double total = 0.0, tu = 0.0;
  if (r.metric == ScalingMetric::kRps) {
    total = c.rps_target_default;
    tu = c.target_utilization;
  } else {
    total = static_cast<double>(r.container_concurrency);
    if (total == 0) total = c.container_concurrency_target_default;
    tu = c.container_concurrency_target_fraction;
  }
  if (r.target) {
    total = *r.target;
    // Never aim above what containerConcurrency allows.
    if (r.metric == ScalingMetric::kConcurrency && r.container_concurrency != 0)
      total = std::min(*r.target, static_cast<double>(r.container_concurrency));
  }
  if (r.target_utilization_percent) tu = *r.target_utilization_percent / 100.0;
  return MetricTarget{std::max(kTargetMin, total * tu), total};
}

// knative pkg/reconciler/autoscaling/resources/metric.go MakeMetric: Go's Duration.Round(time.Second) rounds
// half away from zero, as std::round does.
double resolve_panic_window(double stable_window_s, double panic_window_percent) {
  KT_CHECK(panic_window_percent > 0 && panic_window_percent <= 100, InvalidArgument, "panic_window_percent = ",
           panic_window_percent, " must be in (0, 100]");
  return std::max(kBucketSizeSeconds, std::round(stable_window_s * panic_window_percent / 100.0));
}

std::int32_t resolve_initial_scale(const KpaConfig& c, const KpaRevision& r) {
  if (!r.initial_scale || (*r.initial_scale == 0 && !c.allow_zero_initial_scale)) return c.initial_scale;
  return *r.initial_scale;
}

void DeciderSpec::validate() const {
  KT_CHECK(max_scale_up_rate > 1.0, InvalidArgument, "max_scale_up_rate = ", max_scale_up_rate, " must be > 1");
  KT_CHECK(max_scale_down_rate > 1.0, InvalidArgument, "max_scale_down_rate = ", max_scale_down_rate, " must be > 1");
  KT_CHECK(target_value > 0, InvalidArgument, "target_value = ", target_value, " must be > 0");
  // Upstream's DeciderSpec has no validation; zero total (no per-pod capacity) and zero stable window (panic ends
  // on the next tick below the threshold) are legal there and in its tests (autoscaler_test.go).
  KT_CHECK(total_value >= 0, InvalidArgument, "total_value = ", total_value, " must be >= 0");
  KT_CHECK(target_burst_capacity >= 0 || target_burst_capacity == -1, InvalidArgument, "target_burst_capacity = ",
           target_burst_capacity, " must be >= 0 or -1");
  KT_CHECK(panic_threshold > 0, InvalidArgument, "panic_threshold = ", panic_threshold, " must be > 0");
  KT_CHECK(stable_window_s >= 0, InvalidArgument, "stable_window_s = ", stable_window_s, " must be >= 0");
  KT_CHECK(scale_down_delay_s >= 0, InvalidArgument, "scale_down_delay_s = ", scale_down_delay_s, " must be >= 0");
  KT_CHECK(activator_capacity >= 1, InvalidArgument, "activator_capacity = ", activator_capacity, " must be >= 1");
  KT_CHECK(activation_scale >= 1, InvalidArgument, "activation_scale = ", activation_scale, " must be >= 1");
}

DeciderSpec make_decider_spec(const KpaConfig& c, const KpaRevision& r) {
  c.validate();
  r.validate();
  DeciderSpec s;
  const MetricTarget t = resolve_metric_target(c, r);
  s.max_scale_up_rate = c.max_scale_up_rate;
  s.max_scale_down_rate = c.max_scale_down_rate;
  s.metric = r.metric;
  s.target_value = t.target;
  s.total_value = t.total;
  s.target_burst_capacity = r.target_burst_capacity.value_or(c.target_burst_capacity);
  s.panic_threshold = r.panic_threshold_percent.value_or(c.panic_threshold_percent) / 100.0;
  s.stable_window_s = r.window_s.value_or(c.stable_window_s);
  s.panic_window_s = resolve_panic_window(s.stable_window_s, r.panic_window_percent.value_or(c.panic_window_percent));
  s.scale_down_delay_s = r.scale_down_delay_s.value_or(c.scale_down_delay_s);
  s.initial_scale = resolve_initial_scale(c, r);
  s.reachable = r.reachable;
  s.activator_capacity = c.activator_capacity;
  s.activation_scale = r.activation_scale;
  return s;
}

std::int32_t compute_num_activators(std::int32_t ready_pods, const DeciderSpec& spec) {
  if (spec.target_burst_capacity == 0) return kMinActivators;
  double cover = static_cast<double>(ready_pods) * spec.total_value;
  if (spec.target_burst_capacity > 0) cover += spec.target_burst_capacity;
  return static_cast<std::int32_t>(std::max<double>(kMinActivators, std::ceil(cover / spec.activator_capacity)));
}

// ---------------------------------------------------------------------------------------------- KpaDecider
KpaDecider::KpaDecider(const DeciderSpec& spec, std::int32_t ready_pods_at_start, double now) : spec_(spec) {
  spec_.validate();
  KT_CHECK(ready_pods_at_start >= 0, InvalidArgument, "ready_pods_at_start = ", ready_pods_at_start, " must be >= 0");
  if (spec_.scale_down_delay_s > 0)
    delay_ = std::make_unique<MaxTimeWindow>(spec_.scale_down_delay_s, kTickIntervalSeconds);
  // Upstream starts in panic mode when more than one pod is ready, so a restart never scales down at once.
  if (ready_pods_at_start > 1) {
    panicking_ = true;
    panic_time_ = now;
  }
  max_panic_pods_ = ready_pods_at_start;
}

KpaDecider::KpaDecider(const KpaDecider& o)
    : spec_(o.spec_), panicking_(o.panicking_), panic_time_(o.panic_time_), max_panic_pods_(o.max_panic_pods_),
      delay_(o.delay_ ? std::make_unique<MaxTimeWindow>(*o.delay_) : nullptr) {}
KpaDecider& KpaDecider::operator=(const KpaDecider& o) {
  if (this != &o) {
    spec_ = o.spec_;
    panicking_ = o.panicking_;
    panic_time_ = o.panic_time_;
    max_panic_pods_ = o.max_panic_pods_;
    delay_ = o.delay_ ? std::make_unique<MaxTimeWindow>(*o.delay_) : nullptr;
  }
  return *this;
}
KpaDecider::KpaDecider(KpaDecider&&) noexcept = default;
KpaDecider& KpaDecider::operator=(KpaDecider&&) noexcept = default;
KpaDecider::~KpaDecider() = default;

void KpaDecider::update(const DeciderSpec& spec) {
  spec.validate();
  if (spec.scale_down_delay_s != spec_.scale_down_delay_s)
    delay_ = spec.scale_down_delay_s > 0
                 ? std::make_unique<MaxTimeWindow>(spec.scale_down_delay_s, kTickIntervalSeconds)
                 : nullptr;
  spec_ = spec;
}

ScaleResult KpaDecider::decide(double now, std::int32_t ready_pods, double observed_stable, double observed_panic) {
  // A NaN or infinity would reach the int casts below (undefined behaviour). Slightly negative averages (rounding
  // of concurrency minus proxied concurrency) are fine: they clamp to the scale-down limit, as upstream's do.
  KT_CHECK(std::isfinite(now), InvalidArgument, "now = ", now, " must be finite");
  KT_CHECK(ready_pods >= 0, InvalidArgument, "ready_pods = ", ready_pods, " must be >= 0");
  KT_CHECK(std::isfinite(observed_stable), InvalidArgument, "observed_stable = ", observed_stable, " must be finite");
  KT_CHECK(std::isfinite(observed_panic), InvalidArgument, "observed_panic = ", observed_panic, " must be finite");
  const DeciderSpec& s = spec_;
  const double ready = std::max(1.0, static_cast<double>(ready_pods));
  // At least one more pod can always be added, at least one can be removed (upstream comments).
  const double max_up = std::ceil(s.max_scale_up_rate * ready);
  const double max_down = s.reachable ? std::floor(ready / s.max_scale_down_rate) : 0.0;
  const double dspc = std::ceil(observed_stable / s.target_value);
  const double dppc = std::ceil(observed_panic / s.target_value);
  auto stable_pods = static_cast<std::int32_t>(std::min(std::max(dspc, max_down), max_up));
  auto panic_pods = static_cast<std::int32_t>(std::min(std::max(dppc, max_down), max_up));
  if (s.activation_scale > 1) {
    if (dspc > 0 && s.activation_scale > stable_pods) stable_pods = s.activation_scale;
    if (dppc > 0 && s.activation_scale > panic_pods) panic_pods = s.activation_scale;
  }
  const bool over = dppc / ready >= s.panic_threshold;
  if (over) {
    panicking_ = true;  // enter, or extend the panic window
    panic_time_ = now;
  } else if (panicking_ && panic_time_ + s.stable_window_s < now) {
    // The surge has made its way into the stable window: leave panic mode.
    panicking_ = false;
    max_panic_pods_ = 0;
  }
  std::int32_t desired = stable_pods;
  if (panicking_) {
    desired = std::max(desired, panic_pods);
    if (desired > max_panic_pods_) max_panic_pods_ = desired;  // never scale down while panicking
    desired = max_panic_pods_;
  }
  // knative autoscaler.go Scale: the scale-down delay only holds reachable revisions, so an unreachable one
  // (traffic moved to a newer revision) drops at once.
  if (delay_ && s.reachable) {
    delay_->record(now, static_cast<double>(desired));
    desired = static_cast<std::int32_t>(delay_->current());
  }
  ScaleResult r;
  r.desired_pod_count = desired;
  if (s.target_burst_capacity == 0) {
    r.excess_burst_capacity = 0;
  } else if (s.target_burst_capacity > 0) {
    const double tot = static_cast<double>(ready_pods) * s.total_value;
    r.excess_burst_capacity = static_cast<std::int32_t>(std::floor(tot - s.target_burst_capacity - observed_panic));
  } else {
    r.excess_burst_capacity = -1;
  }
  r.num_activators = compute_num_activators(ready_pods, s);
  r.scale_valid = true;
  r.panicking = panicking_;
  return r;
}

void kpa_decide_batch(KpaDecider* deciders, std::size_t n, double now, const std::int32_t* ready_pods,
                      const double* observed_stable, const double* observed_panic, ScaleResult* out,
                      int n_threads) {
  if (n == 0) return;
  KT_CHECK(deciders && ready_pods && observed_stable && observed_panic && out, InvalidArgument,
           "kpa_decide_batch: null pointer with n = ", n);
  const int t = n_threads == 1 ? 1 : core::resolve_threads(n_threads);
  if (t == 1 || n < 4096) {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = deciders[i].decide(now, ready_pods[i], observed_stable[i], observed_panic[i]);
    return;
  }
  const auto sn = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static) num_threads(t)
  for (std::int64_t i = 0; i < sn; ++i)
    out[i] = deciders[i].decide(now, ready_pods[i], observed_stable[i], observed_panic[i]);
}

// ------------------------------------------------------------------------------------------------ KpaFleet
KpaFleet::KpaFleet(const DeciderSpec& spec, std::size_t n, const std::vector<std::int32_t>& ready_pods_at_start,
                   double now) {
  KT_CHECK(ready_pods_at_start.empty() || ready_pods_at_start.size() == n, InvalidArgument,
           "KpaFleet: ready_pods_at_start has ", ready_pods_at_start.size(), " entries, expected ", n);
  deciders_.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    deciders_.emplace_back(spec, ready_pods_at_start.empty() ? 0 : ready_pods_at_start[i], now);
  out_.resize(n);
}

const std::vector<ScaleResult>& KpaFleet::decide(double now, const std::int32_t* ready_pods,
                                                 const double* observed_stable, const double* observed_panic,
                                                 int n_threads) {
  kpa_decide_batch(deciders_.data(), deciders_.size(), now, ready_pods, observed_stable, observed_panic, out_.data(),
                   n_threads);
  return out_;
}

const KpaDecider& KpaFleet::decider(std::size_t i) const {
  KT_CHECK(i < deciders_.size(), InvalidArgument, "KpaFleet: decider ", i, " of ", deciders_.size());
  return deciders_[i];
}

std::string KpaFleet::snapshot_json() const { return kpa_fleet_snapshot_json(deciders_.data(), deciders_.size()); }

void KpaFleet::restore_json(const std::string& json) {
  kpa_fleet_restore_json(deciders_.data(), deciders_.size(), json);
}

// ------------------------------------------------------------------------------------------ scraping rules
std::int32_t scrape_sample_size(std::int32_t population) {
  if (population < 0) return 0;
  if (population <= 3) return population;
  constexpr double kX = 1.96 * 1.96 * 100.0 / (5.0 * 5.0);  // critical value^2 * variance / margin^2
  const double n = static_cast<double>(population);
  return static_cast<std::int32_t>(std::ceil(n * kX / (n + kX - 1.0)));
}

Stat aggregate_scrape(double now, const std::vector<Stat>& sampled, std::int32_t ready_pods) {
  KT_CHECK(!sampled.empty(), InvalidArgument, "aggregate_scrape: no sampled stats");
  KT_CHECK(ready_pods >= 0, InvalidArgument, "ready_pods = ", ready_pods, " must be >= 0");
  Stat s;
  for (const Stat& x : sampled) {
    s.concurrency += x.concurrency;
    s.proxied_concurrency += x.proxied_concurrency;
    s.request_count += x.request_count;
    s.proxied_request_count += x.proxied_request_count;
  }
  const double k = static_cast<double>(ready_pods) / static_cast<double>(sampled.size());
  s.time = now;
  s.concurrency *= k;
  s.proxied_concurrency *= k;
  s.request_count *= k;
  s.proxied_request_count *= k;
  return s;
}

// ------------------------------------------------------------------------------------ KpaMetricCollector
namespace {
// The collector's windows are built in its initialiser list, so the check runs first through this.
double checked_panic_window(double stable_window_s, double panic_window_s) {
  KT_CHECK(std::isfinite(panic_window_s) && panic_window_s >= kBucketSizeSeconds && panic_window_s <= stable_window_s,
           InvalidArgument, "panic_window_s = ", panic_window_s, " must be in [", kBucketSizeSeconds,
           ", stable_window_s = ", stable_window_s, "]");
  return panic_window_s;
}
}  // namespace

KpaMetricCollector::KpaMetricCollector(double stable_window_s, double panic_window_s, Aggregation aggregation)
    : agg_(aggregation),
      conc_stable_(stable_window_s, kBucketSizeSeconds),
      conc_panic_(checked_panic_window(stable_window_s, panic_window_s), kBucketSizeSeconds),
      rps_stable_(stable_window_s, kBucketSizeSeconds),
      rps_panic_(panic_window_s, kBucketSizeSeconds) {}

void KpaMetricCollector::record(const Stat& s) {
  for (const auto& [name, v] : {std::pair{"time", s.time}, {"concurrency", s.concurrency},
                                {"proxied_concurrency", s.proxied_concurrency}, {"request_count", s.request_count},
                                {"proxied_request_count", s.proxied_request_count}})
    KT_CHECK(std::isfinite(v), InvalidArgument, "stat ", name, " = ", v, " must be finite");
  const double conc = s.concurrency - s.proxied_concurrency;
  const double rps = s.request_count - s.proxied_request_count;
  conc_stable_.record(s.time, conc);
  conc_panic_.record(s.time, conc);
  rps_stable_.record(s.time, rps);
  rps_panic_.record(s.time, rps);
}

KpaMetricCollector::Observed KpaMetricCollector::read(const WeightedBucketWindow& st, const WeightedBucketWindow& pa,
                                                       double now) const {
  Observed o;
  o.has_data = !st.is_empty(now);
  if (agg_ == Aggregation::kWeightedExponential) {
    o.stable = st.window_average(now);
    o.panic = pa.window_average(now);
  } else {
    o.stable = st.BucketWindow::window_average(now);
    o.panic = pa.BucketWindow::window_average(now);
  }
  return o;
}

KpaMetricCollector::Observed KpaMetricCollector::concurrency(double now) const {
  return read(conc_stable_, conc_panic_, now);
}
KpaMetricCollector::Observed KpaMetricCollector::rps(double now) const { return read(rps_stable_, rps_panic_, now); }

// ------------------------------------------------------------------------------------------------ KpaScaler
KpaScaler::KpaScaler(const KpaConfig& config, const KpaRevision& revision, double now, std::int32_t initial_replicas)
    : cfg_(config), rev_(revision), state_since_(now) {
  cfg_.validate();
  rev_.validate();
  tbc_ = rev_.target_burst_capacity.value_or(cfg_.target_burst_capacity);
  stable_window_ = rev_.window_s.value_or(cfg_.stable_window_s);
  // kpa/scaler.go lastPodRetention: an unreachable revision keeps no last pod.
  retention_ = rev_.reachable
                   ? rev_.scale_to_zero_pod_retention_period_s.value_or(cfg_.scale_to_zero_pod_retention_period_s)
                   : 0.0;
  initial_scale_ = resolve_initial_scale(cfg_, rev_);
  // kpa/scaler.go handleScaleToZero: pa.ProgressDeadline() + activationTimeoutBuffer when annotated.
  activation_timeout_s_ = rev_.progress_deadline_s ? *rev_.progress_deadline_s + kActivationTimeoutBufferSeconds
                                                   : cfg_.activation_timeout_s;
  // A new revision's deployment is created at its initial scale.
  replicas_ = initial_replicas >= 0 ? initial_replicas : initial_scale_;
  proxy_ = tbc_ == -1;
  proxy_since_ = now;
}

std::pair<std::int32_t, std::int32_t> KpaScaler::scale_bounds() const {
  std::int32_t mn = 0;
  if (rev_.reachable) mn = rev_.min_scale.value_or(cfg_.min_scale);
  const std::int32_t mx = rev_.max_scale.value_or(cfg_.max_scale);
  return {mn, mx};
}

std::int32_t KpaScaler::active_threshold() const {
  const std::int32_t mn = scale_bounds().first;
  if (!initialized_) return std::max(mn, initial_scale_);
  return std::max(mn, 1);
}

// The condition's reason may change without a transition (e.g. a TimedOut PA marked NoTraffic later keeps its
// lastTransitionTime), as upstream's MarkInactive does.
void KpaScaler::set_state(PaState s, const char* reason, double now) {
  if (s != state_) {
    state_ = s;
    state_since_ = now;
  }
  reason_ = reason;
}

// kpa/scaler.go handleScaleToZero: the scale to apply (want, applied) and upstream's enqueueCB / probe actions.
ScalerStep KpaScaler::handle_scale_to_zero(double now, std::int32_t desired,
                                           std::optional<bool> activator_probe) const {
  ScalerStep r;
  r.want = desired;
  r.applied = true;
  if (desired != 0) return r;
  if (!cfg_.enable_scale_to_zero) {
    r.want = 1;
    return r;
  }
  const double in_state = now - state_since_;
  switch (state_) {
    case PaState::kActivating:
      // Stuck activating past the progress deadline: give up and scale to zero. Otherwise look again once a
      // whole activation timeout has passed (upstream re-enqueues after the full timeout, not the remainder).
      if (in_state > activation_timeout_s_) return r;
      r.want = -1;
      r.applied = false;
      r.requeue_after_s = activation_timeout_s_;
      return r;
    case PaState::kActive:
      // Mark inactive (want 0, not applied) only after a whole stable window of activity; until then keep 1
      // and come back when the window ends. An SKS already in proxy mode will not trigger a reconcile itself.
      if (in_state >= stable_window_) {
        r.applied = false;
        if (proxy_) r.requeue_after_s = kProxyModeRequeueSeconds;
        return r;
      }
      r.want = 1;
      r.requeue_after_s = stable_window_ - in_state;
      return r;
    case PaState::kInactive:
      return handle_inactive(now, in_state, activator_probe, r);
  }
  return r;
}

// The Active=False branch of kpa/scaler.go handleScaleToZero; `r` arrives as (0, applied).
ScalerStep KpaScaler::handle_inactive(double now, double in_state, std::optional<bool> activator_probe,
                                      ScalerStep r) const {
  // Activator must be in the path: guaranteed with TBC = -1, else probed (unless given: SKS in proxy mode).
  const bool activator_in_path = tbc_ == -1 || activator_probe.value_or(proxy_);
  if (!activator_in_path) {
    r.applied = false;
    r.probe_activator = true;
    return r;
  }
  if (in_state >= std::max(cfg_.scale_to_zero_grace_period_s, retention_)) return r;
  r.applied = false;
  // The pod retention period is a hard deadline: come back when it ends, whatever the network state.
  if (retention_ > 0 && in_state < retention_) {
    r.requeue_after_s = retention_ - in_state;
    return r;
  }
  const double proxy_for = proxy_ ? now - proxy_since_ : 0.0;
  const double wait = cfg_.scale_to_zero_grace_period_s - proxy_for;
  if (wait <= 0) {
    r.applied = true;
    return r;
  }
  r.requeue_after_s = wait;
  return r;
}

ScalerStep KpaScaler::reconcile(double now, const ScaleResult& decision, std::int32_t ready_pods,
                                std::optional<bool> activator_probe) {
  KT_CHECK(ready_pods >= 0, InvalidArgument, "ready_pods = ", ready_pods, " must be >= 0");
  std::int32_t desired = decision.scale_valid ? decision.desired_pod_count : -1;
  std::int32_t want = desired;
  bool applied = false;
  ScalerStep actions;  // requeue / probe of handleScaleToZero
  if (!(desired < 0 && state_ != PaState::kActivating)) {
    auto [mn, mx] = scale_bounds();
    // kpa/scaler.go scale: until the initial scale has been reached once it is a lower bound, except for an
    // unreachable revision, which may drop to zero at once.
    if (initial_scale_ > 1 && !initialized_ && rev_.reachable) mn = std::max(initial_scale_, mn);
    if (desired < mn) desired = mn;
    else if (mx != 0 && desired > mx) desired = mx;
    actions = handle_scale_to_zero(now, desired, activator_probe);
    want = actions.want;
    if (actions.applied) {
      replicas_ = want;
      applied = true;
    }
  }
  // SKS mode: activator in path when scaled to zero, when burst capacity is short, or unknown while inactive.
  const bool proxy = tbc_ == -1 || want == 0 || (decision.scale_valid && decision.excess_burst_capacity < 0) ||
                     (want == -1 && state_ == PaState::kInactive);
  if (proxy && !proxy_) proxy_since_ = now;
  proxy_ = proxy;
  // PA Active condition (kpa.go computeActiveCondition).
  const std::int32_t min_ready = active_threshold();
  if (ready_pods >= min_ready) initialized_ = true;
  if (want == 0 || min_ready == 0) {
    // Scaling to zero while activating happens only when the activation timed out.
    const bool timed_out = state_ == PaState::kActivating && min_ready > 0;
    set_state(PaState::kInactive, timed_out ? "TimedOut" : "NoTraffic", now);
  } else if (ready_pods < min_ready) {
    if (want > 0 || state_ != PaState::kInactive) set_state(PaState::kActivating, "Queued", now);
    else set_state(PaState::kInactive, "NoTraffic", now);
  } else if (want > 0 || state_ != PaState::kInactive) {
    set_state(PaState::kActive, "", now);
  }
  return ScalerStep{want, applied, replicas_, proxy_, state_, reason_, actions.requeue_after_s,
                    actions.probe_activator};
}

// ------------------------------------------------------------------------------------------- KpaAutoscaler
KpaAutoscaler::KpaAutoscaler(const KpaConfig& config, const KpaRevision& revision, double now,
                             std::int32_t initial_replicas)
    : spec_(make_decider_spec(config, revision)),
      collector_(spec_.stable_window_s, spec_.panic_window_s, revision.aggregation),
      decider_(spec_, 0, now),
      scaler_(config, revision, now, initial_replicas) {}

ScalerStep KpaAutoscaler::tick(double now, std::int32_t ready_pods) {
  const KpaMetricCollector::Observed o = collector_.observe(spec_.metric, now);
  last_ = o.has_data ? decider_.decide(now, ready_pods, o.stable, o.panic) : KpaDecider::no_data();
  if (!o.has_data) last_.num_activators = compute_num_activators(ready_pods, spec_);
  return scaler_.reconcile(now, last_, ready_pods);
}

}  // namespace kubetune::sched::autoscale
