// Kubernetes HPA: replica calculator (resource/pods/object/external), behaviours, stabilisation, rate limits.
#include "kubetune/sched/autoscale/hpa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/sched/autoscale/units.hpp"

#include "config_table.hpp"

namespace kubetune::sched::autoscale {

using nlohmann::json;

namespace {

constexpr std::int32_t kMaxI32 = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kMinI32 = std::numeric_limits<std::int32_t>::min();
// Legacy scale-up limit (horizontal.go): max(scaleUpLimitFactor * current, scaleUpLimitMinimum).
constexpr double kScaleUpLimitFactor = 2.0;
constexpr double kScaleUpLimitMinimum = 4.0;

struct Entry {
  std::size_t pod;
  std::int64_t value;
};

struct Grouped {
  std::int32_t ready = 0;
  std::vector<std::size_t> unready, missing;
  std::vector<Entry> metrics;  // metrics of pods neither ignored nor unready
};

// groupPods + removeMetricsForPods of replica_calculator.go.
Grouped group_pods(double now, const std::vector<HpaPod>& pods, bool cpu, const ReplicaCalcConfig& cfg) {
  Grouped g;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const HpaPod& p = pods[i];
    if (p.deleting || p.phase == PodPhase::kFailed) continue;  // ignored
    if (p.phase == PodPhase::kPending) {
      g.unready.push_back(i);
      continue;
    }
    if (!p.has_metric) {
      g.missing.push_back(i);
      continue;
    }
    if (cpu) {
      bool unready = false;
      if (p.ready == ReadyCondition::kNone || !p.start_time) {
        unready = true;
      } else if (*p.start_time + cfg.cpu_initialization_period_s > now) {
        // Still initialising: ignore unless ready and a full metric window was collected since readiness.
        unready = p.ready == ReadyCondition::kFalse || p.metric_timestamp < p.ready_transition_time + p.metric_window_s;
      } else {
        // Ignore pods that are unready and have never been ready.
        unready = p.ready == ReadyCondition::kFalse &&
                  *p.start_time + cfg.delay_of_initial_readiness_status_s > p.ready_transition_time;
      }
      if (unready) {
        g.unready.push_back(i);
        continue;
      }
    }
    ++g.ready;
    g.metrics.push_back(Entry{i, p.metric});
  }
  return g;
}

ReplicaResult invalid(std::string msg) {
  ReplicaResult r;
  r.valid = false;
  r.error = std::move(msg);
  return r;
}

ReplicaResult ok(std::int32_t replicas, std::int64_t usage, std::int64_t raw = 0) {
  ReplicaResult r;
  r.replicas = replicas;
  r.usage = usage;
  r.raw_average = raw;
  r.valid = true;
  return r;
}

std::int32_t ceil_to_i32(double x) {
  if (x > static_cast<double>(kMaxI32)) return kMaxI32;
  return static_cast<std::int32_t>(std::ceil(x));
}

struct UtilRatio {
  double ratio;
  std::int32_t utilization;
  std::int64_t raw_average;
  bool ok;
};

// metricsclient.GetResourceUtilizationRatio: integer utilisation percent.
UtilRatio utilization_ratio(const std::vector<Entry>& m, const std::vector<HpaPod>& pods, std::int32_t target) {
  std::int64_t mt = 0, rt = 0, n = 0;
  for (const Entry& e : m) {
    mt += e.value;
    rt += pods[e.pod].request;
    ++n;
  }
  if (rt == 0) return UtilRatio{0, 0, 0, false};
  const auto util = static_cast<std::int32_t>((mt * 100) / rt);
  return UtilRatio{static_cast<double>(util) / static_cast<double>(target), util, mt / n, true};
}

// metricsclient.GetMetricUsageRatio: integer average.
std::pair<double, std::int64_t> usage_ratio(const std::vector<Entry>& m, std::int64_t target) {
  std::int64_t total = 0;
  for (const Entry& e : m) total += e.value;
  const std::int64_t avg = total / static_cast<std::int64_t>(m.size());
  return {static_cast<double>(avg) / static_cast<double>(target), avg};
}

bool flips(double before, double after) { return (before < 1.0 && after > 1.0) || (before > 1.0 && after < 1.0); }

ReplicaResult plain_metric_replicas(double now, std::int32_t current, std::int64_t target,
                                    const std::vector<HpaPod>& pods, bool cpu, const Tolerances& tol,
                                    const ReplicaCalcConfig& cfg) {
  KT_CHECK(target > 0, InvalidArgument, "target_average = ", target, " must be > 0");
  KT_CHECK(current >= 0, InvalidArgument, "current_replicas = ", current, " must be >= 0");
  if (pods.empty()) return invalid("no pods returned by selector while calculating replica count");
  Grouped g = group_pods(now, pods, cpu, cfg);
  if (g.metrics.empty()) return invalid("did not receive metrics for targeted pods (pods might be unready)");
  const auto [ratio, usage] = usage_ratio(g.metrics, target);
  const bool up_with_unready = !g.unready.empty() && ratio > 1.0;
  if (!up_with_unready && g.missing.empty()) {
    if (tol.is_within(ratio)) return ok(current, usage);
    return ok(ceil_to_i32(ratio * static_cast<double>(g.ready)), usage);
  }
  if (!g.missing.empty()) {
    if (ratio < 1.0) {
      for (std::size_t i : g.missing) g.metrics.push_back(Entry{i, target});  // missing pods at exactly the target
    } else if (ratio > 1.0) {
      for (std::size_t i : g.missing) g.metrics.push_back(Entry{i, 0});
    }
  }
  if (up_with_unready)
    for (std::size_t i : g.unready) g.metrics.push_back(Entry{i, 0});
  const double new_ratio = usage_ratio(g.metrics, target).first;
  if (tol.is_within(new_ratio) || flips(ratio, new_ratio)) return ok(current, usage);
  const std::int32_t next = ceil_to_i32(new_ratio * static_cast<double>(g.metrics.size()));
  if ((new_ratio < 1.0 && next > current) || (new_ratio > 1.0 && next < current)) return ok(current, usage);
  return ok(next, usage);
}

void check_tol(const Tolerances& t) {
  KT_CHECK(t.scale_down >= 0 && t.scale_up >= 0, InvalidArgument, "tolerances (down ", t.scale_down, ", up ",
           t.scale_up, ") must be >= 0");
}

ReplicaResult usage_ratio_replica_count(std::int32_t current, double ratio, std::int32_t ready, const Tolerances& tol,
                                        std::int64_t usage) {
  if (current != 0) {
    if (tol.is_within(ratio)) return ok(current, usage);
    if (ready <= 0) return invalid("no pods returned by selector while calculating replica count");
    return ok(ceil_to_i32(ratio * static_cast<double>(ready)), usage);
  }
  return ok(ceil_to_i32(ratio), usage);  // scale from zero: depends on the ratio alone
}

std::int64_t sum_values(const std::vector<std::int64_t>& v) {
  std::int64_t s = 0;
  for (std::int64_t x : v)
    if (__builtin_add_overflow(s, x, &s) || s < 0) return std::numeric_limits<std::int64_t>::max();  // as upstream clamps
  return s;
}

}  // namespace

std::int32_t ready_pod_count(const std::vector<HpaPod>& pods) {
  std::int32_t n = 0;
  for (const HpaPod& p : pods) n += (p.phase == PodPhase::kRunning && p.ready == ReadyCondition::kTrue) ? 1 : 0;
  return n;
}

ReplicaResult resource_utilization_replicas(double now, std::int32_t current, std::int32_t target_utilization,
                                            const std::vector<HpaPod>& pods, bool is_cpu, const Tolerances& tol,
                                            const ReplicaCalcConfig& cfg) {
  KT_CHECK(target_utilization > 0, InvalidArgument, "target_utilization = ", target_utilization, " must be > 0");
  KT_CHECK(current >= 0, InvalidArgument, "current_replicas = ", current, " must be >= 0");
  check_tol(tol);
  if (pods.empty()) return invalid("no pods returned by selector while calculating replica count");
  Grouped g = group_pods(now, pods, is_cpu, cfg);
  if (g.metrics.empty()) return invalid("did not receive metrics for targeted pods (pods might be unready)");
  for (std::size_t i = 0; i < pods.size(); ++i)
    if (pods[i].request <= 0) return invalid("missing request for resource in pod " + std::to_string(i));
  const UtilRatio u = utilization_ratio(g.metrics, pods, target_utilization);
  if (!u.ok) return invalid("no metrics returned matched known pods");
  const bool up_with_unready = !g.unready.empty() && u.ratio > 1.0;
  if (!up_with_unready && g.missing.empty()) {
    if (tol.is_within(u.ratio)) return ok(current, u.utilization, u.raw_average);
    return ok(ceil_to_i32(u.ratio * static_cast<double>(g.ready)), u.utilization, u.raw_average);
  }
  if (!g.missing.empty()) {
    if (u.ratio < 1.0) {
      // Scale-down: missing pods use 100 % of their request (or the target when it is above 100 %).
      const std::int64_t fallback = std::max<std::int64_t>(100, target_utilization);
      for (std::size_t i : g.missing) g.metrics.push_back(Entry{i, pods[i].request * fallback / 100});
    } else if (u.ratio > 1.0) {
      for (std::size_t i : g.missing) g.metrics.push_back(Entry{i, 0});
    }
  }
  if (up_with_unready)
    for (std::size_t i : g.unready) g.metrics.push_back(Entry{i, 0});
  const UtilRatio nu = utilization_ratio(g.metrics, pods, target_utilization);
  if (!nu.ok) return invalid("no metrics returned matched known pods");
  if (tol.is_within(nu.ratio) || flips(u.ratio, nu.ratio)) return ok(current, u.utilization, u.raw_average);
  const std::int32_t next = ceil_to_i32(nu.ratio * static_cast<double>(g.metrics.size()));
  if ((nu.ratio < 1.0 && next > current) || (nu.ratio > 1.0 && next < current))
    return ok(current, u.utilization, u.raw_average);
  return ok(next, u.utilization, u.raw_average);
}

ReplicaResult resource_average_value_replicas(double now, std::int32_t current, std::int64_t target_average,
                                              const std::vector<HpaPod>& pods, bool is_cpu, const Tolerances& tol,
                                              const ReplicaCalcConfig& cfg) {
  check_tol(tol);
  return plain_metric_replicas(now, current, target_average, pods, is_cpu, tol, cfg);
}

ReplicaResult pods_metric_replicas(double now, std::int32_t current, std::int64_t target_average,
                                   const std::vector<HpaPod>& pods, const Tolerances& tol,
                                   const ReplicaCalcConfig& cfg) {
  check_tol(tol);
  return plain_metric_replicas(now, current, target_average, pods, false, tol, cfg);
}

ReplicaResult object_value_replicas(std::int32_t current, std::int64_t usage, std::int64_t target,
                                    std::int32_t ready_pods, const Tolerances& tol) {
  KT_CHECK(target > 0, InvalidArgument, "target = ", target, " must be > 0");
  KT_CHECK(current >= 0, InvalidArgument, "current_replicas = ", current, " must be >= 0");
  check_tol(tol);
  return usage_ratio_replica_count(current, static_cast<double>(usage) / static_cast<double>(target), ready_pods, tol,
                                   usage);
}

namespace {
// replica_calculator.go GetExternalPerPodMetricReplicas: a usage saturated at MaxInt64 is reported as is rather
// than divided, and ceil(usage / replicas) would not fit an int64 anyway once the double rounds up to 2^63.
std::int64_t per_pod_usage(std::int64_t usage, std::int32_t status_replicas) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (static_cast<double>(usage) >= static_cast<double>(kMax)) return kMax;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(usage) / status_replicas));
}
}  // namespace

ReplicaResult object_average_value_replicas(std::int32_t status_replicas, std::int64_t usage,
                                            std::int64_t target_average, const Tolerances& tol) {
  KT_CHECK(target_average > 0, InvalidArgument, "target_average = ", target_average, " must be > 0");
  KT_CHECK(status_replicas > 0, InvalidArgument, "status_replicas = ", status_replicas, " must be > 0");
  check_tol(tol);
  std::int32_t replicas = status_replicas;
  const double ratio = static_cast<double>(usage) / (static_cast<double>(target_average) * status_replicas);
  if (!tol.is_within(ratio)) replicas = ceil_to_i32(static_cast<double>(usage) / static_cast<double>(target_average));
  return ok(replicas, per_pod_usage(usage, status_replicas));
}

ReplicaResult external_value_replicas(std::int32_t current, const std::vector<std::int64_t>& values,
                                      std::int64_t target, std::int32_t ready_pods, const Tolerances& tol) {
  return object_value_replicas(current, sum_values(values), target, ready_pods, tol);
}

ReplicaResult external_average_value_replicas(std::int32_t status_replicas, const std::vector<std::int64_t>& values,
                                              std::int64_t target_average, const Tolerances& tol) {
  return object_average_value_replicas(status_replicas, sum_values(values), target_average, tol);
}

// ---------------------------------------------------------------------------------------------- behaviours
void ScalingRules::validate(const char* which) const {
  if (stabilization_window_s)
    KT_CHECK(*stabilization_window_s >= 0 && *stabilization_window_s <= 3600 && whole_seconds(*stabilization_window_s),
             InvalidArgument, which, ".stabilizationWindowSeconds = ", *stabilization_window_s,
             " must be whole seconds in [0, 3600]");
  KT_CHECK(select_policy == SelectPolicy::kDisabled || !policies.empty(), InvalidArgument, which,
           ".policies: must specify at least one Policy");
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const ScalingPolicy& p = policies[i];
    KT_CHECK(p.period_s > 0 && p.period_s <= 1800 && whole_seconds(p.period_s), InvalidArgument, which,
             ".policies[", i, "].periodSeconds = ", p.period_s, " must be whole seconds in (0, 1800]");
    KT_CHECK(p.value > 0, InvalidArgument, which, ".policies[", i, "].value = ", p.value, " must be > 0");
  }
  if (tolerance) KT_CHECK(*tolerance >= 0, InvalidArgument, which, ".tolerance = ", *tolerance, " must be >= 0");
}

ScalingRules HpaBehavior::default_scale_up() {
  ScalingRules r;
  r.stabilization_window_s = 0;
  r.select_policy = SelectPolicy::kMax;
  r.policies = {ScalingPolicy{PolicyType::kPods, 4, 15}, ScalingPolicy{PolicyType::kPercent, 100, 15}};
  return r;
}

ScalingRules HpaBehavior::default_scale_down() {
  ScalingRules r;
  r.select_policy = SelectPolicy::kMax;
  r.policies = {ScalingPolicy{PolicyType::kPercent, 100, 15}};
  return r;
}

void HpaSpec::validate() const {
  KT_CHECK(min_replicas >= 0, InvalidArgument, "minReplicas = ", min_replicas, " must be >= 0");
  KT_CHECK(max_replicas >= 1, InvalidArgument, "maxReplicas = ", max_replicas, " must be >= 1");
  KT_CHECK(max_replicas >= min_replicas, InvalidArgument, "maxReplicas = ", max_replicas,
           " must be greater than or equal to minReplicas = ", min_replicas);
  if (behavior) {
    behavior->scale_up.validate("behavior.scaleUp");
    behavior->scale_down.validate("behavior.scaleDown");
  }
}

namespace {
const char* select_name(SelectPolicy s) {
  return s == SelectPolicy::kMin ? "Min" : s == SelectPolicy::kDisabled ? "Disabled" : "Max";
}
SelectPolicy select_from(const std::string& s) {
  if (s == "Max") return SelectPolicy::kMax;
  if (s == "Min") return SelectPolicy::kMin;
  if (s == "Disabled") return SelectPolicy::kDisabled;
  KT_THROW(InvalidArgument, "selectPolicy = '", s, "' must be Max, Min or Disabled");
}
json rules_to_json(const ScalingRules& r) {
  json j;
  // autoscaling/v2 writes these as int32 seconds.
  j["stabilizationWindowSeconds"] =
      r.stabilization_window_s ? json(static_cast<std::int64_t>(*r.stabilization_window_s)) : json();
  j["selectPolicy"] = select_name(r.select_policy);
  j["policies"] = json::array();
  for (const auto& p : r.policies)
    j["policies"].push_back({{"type", p.type == PolicyType::kPods ? "Pods" : "Percent"},
                             {"value", p.value},
                             {"periodSeconds", static_cast<std::int64_t>(p.period_s)}});
  if (r.tolerance) j["tolerance"] = *r.tolerance;
  return j;
}
ScalingRules rules_from_json(const json& j, ScalingRules def) {
  // Upstream defaulting: unset fields take the defaults; an absent policy list takes the default list.
  if (j.contains("stabilizationWindowSeconds") && !j.at("stabilizationWindowSeconds").is_null())
    // Read as numbers so that validate() refuses a fractional value instead of the JSON library truncating it.
    def.stabilization_window_s = j.at("stabilizationWindowSeconds").get<double>();
  if (j.contains("selectPolicy")) def.select_policy = select_from(j.at("selectPolicy").get<std::string>());
  if (j.contains("policies") && !j.at("policies").is_null()) {
    def.policies.clear();
    for (const auto& p : j.at("policies")) {
      ScalingPolicy sp;
      const std::string t = p.at("type").get<std::string>();
      if (t == "Pods") sp.type = PolicyType::kPods;
      else if (t == "Percent") sp.type = PolicyType::kPercent;
      else KT_THROW(InvalidArgument, "policy type = '", t, "' must be Pods or Percent");
      sp.value = checked_int<std::int32_t>(p.at("value"), "policy value");
      sp.period_s = p.at("periodSeconds").get<double>();
      def.policies.push_back(sp);
    }
  }
  if (j.contains("tolerance") && !j.at("tolerance").is_null()) def.tolerance = j.at("tolerance").get<double>();
  return def;
}
}  // namespace

std::string HpaSpec::to_json() const {
  json j{{"minReplicas", min_replicas}, {"maxReplicas", max_replicas}};
  if (behavior) j["behavior"] = {{"scaleUp", rules_to_json(behavior->scale_up)}, {"scaleDown", rules_to_json(behavior->scale_down)}};
  return j.dump();
}

HpaSpec HpaSpec::from_json(const std::string& text) {
  HpaSpec s;
  try {
    const json j = json::parse(text);
    KT_CHECK(j.is_object(), InvalidArgument, "HpaSpec JSON must be an object");
    s.min_replicas = checked_int_or<std::int32_t>(j, "minReplicas", s.min_replicas, "minReplicas");
    s.max_replicas = checked_int_or<std::int32_t>(j, "maxReplicas", s.max_replicas, "maxReplicas");
    if (j.contains("behavior") && !j.at("behavior").is_null()) {
      HpaBehavior b;
      const json& bj = j.at("behavior");
      if (bj.contains("scaleUp")) b.scale_up = rules_from_json(bj.at("scaleUp"), HpaBehavior::default_scale_up());
      if (bj.contains("scaleDown"))
        b.scale_down = rules_from_json(bj.at("scaleDown"), HpaBehavior::default_scale_down());
      s.behavior = b;
    }
  } catch (const json::exception& e) {
    KT_THROW(InvalidArgument, "HpaSpec JSON: ", e.what());
  }
  s.validate();
  return s;
}

void HpaControllerConfig::validate() const {
  KT_CHECK(downscale_stabilization_window_s >= 0, InvalidArgument, "downscale_stabilization_window_s = ",
           downscale_stabilization_window_s, " must be >= 0");
  KT_CHECK(tolerance >= 0, InvalidArgument, "tolerance = ", tolerance, " must be >= 0");
  KT_CHECK(sync_period_s > 0, InvalidArgument, "sync_period_s = ", sync_period_s, " must be > 0");
}

namespace {
// The JSON form of HpaControllerConfig (kube-controller-manager's flags), declared once.
const settings::Fields<HpaControllerConfig>& controller_config_table() {
  static const settings::Fields<HpaControllerConfig> t = [] {
    using C = HpaControllerConfig;
    settings::Fields<C> f("HpaControllerConfig JSON");
    f.field<&C::downscale_stabilization_window_s>("downscale_stabilization_window_s",
                                                  "--horizontal-pod-autoscaler-downscale-stabilization, seconds")
        .field<&C::tolerance>("tolerance", "--horizontal-pod-autoscaler-tolerance, a fraction")
        .field<&C::sync_period_s>("sync_period_s", "--horizontal-pod-autoscaler-sync-period, seconds");
    return config_table::with_renamed(f, "HpaControllerConfig");
  }();
  return t;
}
}  // namespace

std::string HpaControllerConfig::to_json() const { return controller_config_table().to_json(*this).dump(); }

HpaControllerConfig HpaControllerConfig::from_json(const std::string& text) {
  HpaControllerConfig c = config_table::read(controller_config_table(), "HpaControllerConfig", text);
  c.validate();
  return c;
}

namespace {
std::int32_t change_in_period(double now, double period, const std::vector<HpaController::ScaleEvent>& ev) {
  const double cutoff = now - period;
  std::int32_t r = 0;
  for (const auto& e : ev)
    if (e.time > cutoff) r += e.change;
  return r;
}
}  // namespace

namespace {
// Upstream's behaviour limit: each policy proposes a bound from the replica count at the start of its period
// (current minus the net change within it); selectPolicy Max takes the most permissive bound (largest when
// scaling up, smallest when scaling down) and Min the most restrictive.
template <class Propose>
std::int32_t policy_limit(double now, std::int32_t current, const std::vector<HpaController::ScaleEvent>& up,
                          const std::vector<HpaController::ScaleEvent>& down, const ScalingRules& rules,
                          bool scaling_up, Propose propose) {
  if (rules.select_policy == SelectPolicy::kDisabled) return current;
  const bool take_larger = (rules.select_policy == SelectPolicy::kMin) != scaling_up;
  std::int32_t result = take_larger ? kMinI32 : kMaxI32;
  for (const ScalingPolicy& p : rules.policies) {
    const std::int32_t start = current - change_in_period(now, p.period_s, up) +
                               change_in_period(now, p.period_s, down);
    const std::int32_t proposed = propose(p, start);
    result = take_larger ? std::max(result, proposed) : std::min(result, proposed);
  }
  return result;
}
}  // namespace

std::int32_t scale_up_limit(double now, std::int32_t current, const std::vector<HpaController::ScaleEvent>& up,
                            const std::vector<HpaController::ScaleEvent>& down, const ScalingRules& rules) {
  return policy_limit(now, current, up, down, rules, true, [](const ScalingPolicy& p, std::int32_t start) {
    if (p.type == PolicyType::kPods) return start + p.value;
    // Rounded up so that a percentage always allows at least one more pod.
    return static_cast<std::int32_t>(std::ceil(static_cast<double>(start) * (1.0 + p.value / 100.0)));
  });
}

std::int32_t scale_down_limit(double now, std::int32_t current, const std::vector<HpaController::ScaleEvent>& up,
                              const std::vector<HpaController::ScaleEvent>& down, const ScalingRules& rules) {
  return policy_limit(now, current, up, down, rules, false, [](const ScalingPolicy& p, std::int32_t start) {
    if (p.type == PolicyType::kPods) return start - p.value;
    return static_cast<std::int32_t>(static_cast<double>(start) * (1.0 - p.value / 100.0));
  });
}

// ------------------------------------------------------------------------------------------- HpaController
HpaController::HpaController(const HpaSpec& spec, const HpaControllerConfig& config) : spec_(spec), cfg_(config) {
  spec_.validate();
  cfg_.validate();
  if (spec_.behavior && !spec_.behavior->scale_down.stabilization_window_s)
    spec_.behavior->scale_down.stabilization_window_s =
        static_cast<std::int32_t>(cfg_.downscale_stabilization_window_s);
}

Tolerances HpaController::tolerances() const {
  Tolerances t{cfg_.tolerance, cfg_.tolerance};
  if (spec_.behavior) {
    if (spec_.behavior->scale_down.tolerance) t.scale_down = *spec_.behavior->scale_down.tolerance;
    if (spec_.behavior->scale_up.tolerance) t.scale_up = *spec_.behavior->scale_up.tolerance;
  }
  return t;
}

HpaDecision HpaController::reconcile(double now, std::int32_t current, const std::vector<ReplicaResult>& proposals) {
  std::vector<std::optional<std::int32_t>> p;
  p.reserve(proposals.size());
  for (const ReplicaResult& r : proposals) p.push_back(r.valid ? std::optional<std::int32_t>(r.replicas) : std::nullopt);
  return reconcile(now, current, p);
}

namespace {
// Condition texts of kubernetes pkg/controller/podautoscaler/horizontal.go.
constexpr const char* kWithinRangeMsg = "the desired count is within the acceptable range";
constexpr const char* kUpRateMsg = "the desired replica count is increasing faster than the maximum scale rate";
constexpr const char* kDownRateMsg = "the desired replica count is decreasing faster than the maximum scale rate";
constexpr const char* kTooManyMsg = "the desired replica count is more than the maximum replica count";
constexpr const char* kTooFewMsg = "the desired replica count is less than the minimum replica count";
constexpr const char* kReadyMsg = "recommended size matches current size";
constexpr const char* kUpStabilizedMsg =
    "recent recommendations were lower than current one, applying the lowest recent recommendation";
constexpr const char* kDownStabilizedMsg =
    "recent recommendations were higher than current one, applying the highest recent recommendation";

// A replica count after the rate/bound rules, with the ScalingLimited reason that explains it.
struct Limited {
  std::int32_t replicas;
  const char* reason;
  const char* message;
};

// horizontal.go setCondition: replaces the condition of the same type, else appends.
void set_condition(HpaDecision& d, HpaConditionType type, bool status, std::string reason, std::string message) {
  for (HpaCondition& c : d.conditions) {
    if (c.type == type) {
      c = HpaCondition{type, status, std::move(reason), std::move(message)};
      return;
    }
  }
  d.conditions.push_back(HpaCondition{type, status, std::move(reason), std::move(message)});
}

// horizontal.go normalizeDesiredReplicas*: ScalingLimited is True when the rules changed the recommendation.
void set_limited(HpaDecision& d, std::int32_t stabilized, const Limited& l) {
  set_condition(d, HpaConditionType::kScalingLimited, l.replicas != stabilized, l.reason, l.message);
}

// horizontal.go convertDesiredReplicasWithRules: [min, min(max, max(2 x current, 4))].
Limited legacy_limits(std::int32_t current, std::int32_t desired, std::int32_t min, std::int32_t max) {
  const auto up_limit = static_cast<std::int32_t>(std::max(kScaleUpLimitFactor * current, kScaleUpLimitMinimum));
  const bool rate_bound = max > up_limit;
  const std::int32_t max_allowed = rate_bound ? up_limit : max;
  if (desired < min) return {min, "TooFewReplicas", kTooFewMsg};
  if (desired > max_allowed)
    return {max_allowed, rate_bound ? "ScaleUpLimit" : "TooManyReplicas", rate_bound ? kUpRateMsg : kTooManyMsg};
  return {desired, "DesiredWithinRange", kWithinRangeMsg};
}
}  // namespace

const char* to_string(HpaConditionType t) {
  switch (t) {
    case HpaConditionType::kAbleToScale: return "AbleToScale";
    case HpaConditionType::kScalingActive: return "ScalingActive";
    case HpaConditionType::kScalingLimited: return "ScalingLimited";
  }
  return "?";
}

const HpaCondition* HpaDecision::condition(HpaConditionType type) const {
  for (const HpaCondition& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

std::string HpaDecision::to_json() const {
  nlohmann::json conds = nlohmann::json::array();
  for (const HpaCondition& c : conditions)
    conds.push_back({{"type", to_string(c.type)}, {"status", c.status ? "True" : "False"}, {"reason", c.reason},
                     {"message", c.message}});
  return nlohmann::json{{"desired_replicas", desired_replicas}, {"rescale", rescale},
                        {"metric_desired_replicas", metric_desired_replicas}, {"reason", reason},
                        {"conditions", conds}}
      .dump();
}

// kubernetes horizontal.go reconcileAutoscaler (+ computeReplicasForMetrics for the metric combination).
HpaDecision HpaController::reconcile(double now, std::int32_t current,
                                     const std::vector<std::optional<std::int32_t>>& proposals) {
  KT_CHECK(current >= 0, InvalidArgument, "current_replicas = ", current, " must be >= 0");
  KT_CHECK(!proposals.empty(), InvalidArgument, "reconcile: at least one metric proposal is required");
  if (!history_started_) {  // recordInitialRecommendation
    recs_.push_back(Recommendation{current, now});
    history_started_ = true;
  }
  HpaDecision d;
  set_condition(d, HpaConditionType::kAbleToScale, true, "SucceededGetScale",
                "the HPA controller was able to get the target's current scale");
  std::int32_t desired = 0;
  if (current == 0 && spec_.min_replicas != 0) {
    d.desired_replicas = 0;
    d.rescale = false;
    d.reason = "ScalingDisabled";
    set_condition(d, HpaConditionType::kScalingActive, false, "ScalingDisabled",
                  "scaling is disabled since the replica count of the target is zero");
    return d;
  }
  if (current > spec_.max_replicas) {
    desired = spec_.max_replicas;
    d.reason = "Current number of replicas above Spec.MaxReplicas";
  } else if (current < spec_.min_replicas) {
    desired = spec_.min_replicas;
    d.reason = "Current number of replicas below Spec.MinReplicas";
  } else {
    // computeReplicasForMetrics: max over valid metrics; invalid ones block everything but scale-up.
    std::int32_t replicas = 0;
    std::size_t invalid = 0, best = 0;
    for (std::size_t i = 0; i < proposals.size(); ++i) {
      if (!proposals[i]) {
        ++invalid;
        continue;
      }
      if (replicas == 0 || *proposals[i] > replicas) {
        replicas = *proposals[i];
        best = i;
      }
    }
    if (invalid >= proposals.size() || (invalid > 0 && replicas < current)) {
      d.desired_replicas = current;
      d.rescale = false;
      d.reason = "FailedComputeMetricsReplicas";
      // Upstream's reason names the failed metric's type (FailedGetResourceMetric, ...), unknown here.
      set_condition(d, HpaConditionType::kScalingActive, false, "FailedComputeMetricsReplicas",
                    "the HPA was unable to compute the replica count: invalid metrics (" + std::to_string(invalid) +
                        " invalid out of " + std::to_string(proposals.size()) + ")");
      return d;
    }
    set_condition(d, HpaConditionType::kScalingActive, true, "ValidMetricFound",
                  "the HPA was able to successfully calculate a replica count from metric " + std::to_string(best));
    d.metric_desired_replicas = replicas;
    if (replicas > desired) desired = replicas;
    d.reason = desired > current ? "metric above target" : desired < current ? "All metrics below target" : "";
    desired = spec_.behavior ? normalize_with_behavior(now, current, desired, d)
                             : normalize_legacy(now, current, desired, d);
  }
  d.rescale = desired != current;
  d.desired_replicas = d.rescale ? desired : current;
  if (d.rescale) {
    set_condition(d, HpaConditionType::kAbleToScale, true, "SucceededRescale",
                  "the HPA controller was able to update the target scale to " + std::to_string(desired));
    store_scale_event(now, current, desired);
  }
  return d;
}

void HpaController::set_recommendations(std::vector<Recommendation> recs) {
  recs_ = std::move(recs);
  history_started_ = true;
}

// horizontal.go normalizeDesiredReplicas + stabilizeRecommendation + convertDesiredReplicasWithRules.
std::int32_t HpaController::normalize_legacy(double now, std::int32_t current, std::int32_t desired, HpaDecision& d) {
  // stabilizeRecommendation: max of the recommendations inside the downscale window.
  std::int32_t best = desired;
  bool found_old = false;
  std::size_t old_idx = 0;
  const double cutoff = now - cfg_.downscale_stabilization_window_s;
  for (std::size_t i = 0; i < recs_.size(); ++i) {
    if (recs_[i].time < cutoff) {
      found_old = true;
      old_idx = i;
    } else if (recs_[i].replicas > best) {
      best = recs_[i].replicas;
    }
  }
  if (found_old) recs_[old_idx] = Recommendation{desired, now};
  else recs_.push_back(Recommendation{desired, now});
  if (best != desired) set_condition(d, HpaConditionType::kAbleToScale, true, "ScaleDownStabilized", kDownStabilizedMsg);
  else set_condition(d, HpaConditionType::kAbleToScale, true, "ReadyForNewScale", kReadyMsg);
  const Limited l = legacy_limits(current, best, spec_.min_replicas, spec_.max_replicas);
  set_limited(d, best, l);
  return l.replicas;
}

// horizontal.go normalizeDesiredReplicasWithBehaviors + stabilizeRecommendationWithBehaviors +
// convertDesiredReplicasWithBehaviorRate.
std::int32_t HpaController::normalize_with_behavior(double now, std::int32_t current, std::int32_t desired,
                                                    HpaDecision& d) {
  const ScalingRules& up = spec_.behavior->scale_up;
  const ScalingRules& down = spec_.behavior->scale_down;
  const double up_cutoff = now - up.stabilization_window_s.value_or(0);
  const double down_cutoff = now - down.stabilization_window_s.value_or(0);
  std::int32_t up_rec = desired, down_rec = desired;
  bool found_old = false;
  std::size_t old_idx = 0;
  for (std::size_t i = 0; i < recs_.size(); ++i) {
    const Recommendation& r = recs_[i];
    if (r.time > up_cutoff) up_rec = std::min(up_rec, r.replicas);
    if (r.time > down_cutoff) down_rec = std::max(down_rec, r.replicas);
    if (r.time < up_cutoff && r.time < down_cutoff) {
      found_old = true;
      old_idx = i;
    }
  }
  std::int32_t rec = current;
  if (rec < up_rec) rec = up_rec;
  if (rec > down_rec) rec = down_rec;
  if (found_old) recs_[old_idx] = Recommendation{desired, now};
  else recs_.push_back(Recommendation{desired, now});
  if (rec == desired) set_condition(d, HpaConditionType::kAbleToScale, true, "ReadyForNewScale", kReadyMsg);
  else if (desired >= current) set_condition(d, HpaConditionType::kAbleToScale, true, "ScaleUpStabilized", kUpStabilizedMsg);
  else set_condition(d, HpaConditionType::kAbleToScale, true, "ScaleDownStabilized", kDownStabilizedMsg);
  Limited l{rec, "DesiredWithinRange", kWithinRangeMsg};
  if (rec > current) {
    std::int32_t limit = scale_up_limit(now, current, up_events_, down_events_, up);
    if (limit < current) limit = current;  // wait until old scale-up events leave the period
    const bool rate_bound = spec_.max_replicas > limit;
    const std::int32_t max_allowed = rate_bound ? limit : spec_.max_replicas;
    if (rec > max_allowed)
      l = {max_allowed, rate_bound ? "ScaleUpLimit" : "TooManyReplicas", rate_bound ? kUpRateMsg : kTooManyMsg};
  } else if (rec < current) {
    std::int32_t limit = scale_down_limit(now, current, up_events_, down_events_, down);
    if (limit > current) limit = current;
    const bool rate_bound = spec_.min_replicas < limit;
    const std::int32_t min_allowed = rate_bound ? limit : spec_.min_replicas;
    if (rec < min_allowed)
      l = {min_allowed, rate_bound ? "ScaleDownLimit" : "TooFewReplicas", rate_bound ? kDownRateMsg : kTooFewMsg};
  }
  set_limited(d, rec, l);
  return l.replicas;
}

// The HPA controller reconciles each HPA independently (horizontal.go reconcileAutoscaler per key), so a batch
// is the same reconcile per entry; the proposal vector is reused per thread.
void hpa_reconcile_batch(HpaController* hpas, std::size_t n, double now, const std::int32_t* current,
                         const std::int32_t* proposals, std::int32_t* desired_out, std::uint8_t* rescale_out,
                         int n_threads) {
  if (n == 0) return;
  KT_CHECK(hpas && current && proposals, InvalidArgument, "hpa_reconcile_batch: null pointer with n = ", n);
  // Checked up front: an exception must not leave an OpenMP region.
  for (std::size_t i = 0; i < n; ++i)
    KT_CHECK(current[i] >= 0, InvalidArgument, "current_replicas[", i, "] = ", current[i], " must be >= 0");
  const auto one = [&](std::size_t i, std::vector<std::optional<std::int32_t>>& p) {
    p[0] = proposals[i] < 0 ? std::nullopt : std::optional<std::int32_t>(proposals[i]);
    const HpaDecision d = hpas[i].reconcile(now, current[i], p);
    if (desired_out) desired_out[i] = d.desired_replicas;
    if (rescale_out) rescale_out[i] = d.rescale ? 1 : 0;
  };
  const int t = n_threads == 1 ? 1 : core::resolve_threads(n_threads);
  if (t == 1 || n < 4096) {
    std::vector<std::optional<std::int32_t>> p(1);
    for (std::size_t i = 0; i < n; ++i) one(i, p);
    return;
  }
  const auto sn = static_cast<std::int64_t>(n);
#pragma omp parallel num_threads(t)
  {
    std::vector<std::optional<std::int32_t>> p(1);
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < sn; ++i) one(static_cast<std::size_t>(i), p);
  }
}

void HpaController::store_scale_event(double now, std::int32_t prev, std::int32_t next) {
  if (!spec_.behavior) return;  // events only matter to behaviour policies
  const bool up = next > prev;
  const ScalingRules& rules = up ? spec_.behavior->scale_up : spec_.behavior->scale_down;
  std::vector<ScaleEvent>& ev = up ? up_events_ : down_events_;
  double longest = 0.0;
  for (const auto& p : rules.policies) longest = std::max(longest, p.period_s);
  const double cutoff = now - longest;
  bool found_old = false;
  std::size_t old_idx = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].time < cutoff) ev[i].outdated = true;
    if (ev[i].outdated) {
      found_old = true;
      old_idx = i;
    }
  }
  const ScaleEvent e{up ? next - prev : prev - next, now, false};
  if (found_old) ev[old_idx] = e;
  else ev.push_back(e);
}

}  // namespace kubetune::sched::autoscale
