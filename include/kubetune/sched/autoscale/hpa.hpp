// Kubernetes HorizontalPodAutoscaler maths: replica calculator, tolerances, behaviours and stabilisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kubetune::sched::autoscale {

/// Usage-ratio band within which the HPA does not scale: [1 - scale_down, 1 + scale_up]. Default 0.1 both
/// ways (kube-controller-manager --horizontal-pod-autoscaler-tolerance); per-HPA values as in the
/// HPAConfigurableTolerance feature (behavior.scaleUp/scaleDown.tolerance).
struct Tolerances {
  double scale_down = 0.1;
  double scale_up = 0.1;
  bool is_within(double usage_ratio) const {
    return (1.0 - scale_down) <= usage_ratio && usage_ratio <= (1.0 + scale_up);
  }
};

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed };
/// Status of the pod's Ready condition (kNone: the condition is absent).
enum class ReadyCondition { kNone, kTrue, kFalse };

/// What the replica calculator reads about one pod. Metric and request values are milli-units, as the
/// controller uses Quantity.MilliValue(). Times in seconds on the caller's clock.
struct HpaPod {
  PodPhase phase = PodPhase::kRunning;
  bool deleting = false;  // deletionTimestamp set
  ReadyCondition ready = ReadyCondition::kTrue;
  double ready_transition_time = 0.0;  // lastTransitionTime of the Ready condition
  std::optional<double> start_time = 0.0;
  bool has_metric = true;
  std::int64_t metric = 0;  // metric value (milli)
  double metric_timestamp = 0.0;
  double metric_window_s = 30.0;  // metrics-server window
  std::int64_t request = 0;     // resource request (milli); used for utilisation targets
};

/// Controller flags that shape the calculation (kube-controller-manager defaults).
struct ReplicaCalcConfig {
  double cpu_initialization_period_s = 300.0;         // --horizontal-pod-autoscaler-cpu-initialization-period
  double delay_of_initial_readiness_status_s = 30.0;  // --horizontal-pod-autoscaler-initial-readiness-delay
};

/// One metric's proposal. `valid == false` carries upstream's error text (e.g. no metrics for ready pods).
struct ReplicaResult {
  std::int32_t replicas = 0;
  std::int64_t usage = 0;         // utilisation % (resource utilisation) or average/total usage (milli)
  std::int64_t raw_average = 0;   // average raw usage (resource utilisation only)
  bool valid = false;
  std::string error;
};

/// Resource metric with an averageUtilization target (GetResourceReplicas): utilisation = 100 * sum(usage) /
/// sum(requests) (integer), ratio = utilisation / target; pending, unready (CPU only: not ready, or still in
/// the CPU initialisation period without a full metric window since readiness) and failed/deleted pods are
/// set aside; missing metrics count as 100 % (or the target if higher) on scale-down and 0 on scale-up,
/// unready pods as 0 on scale-up; no scaling if the adjusted ratio is in tolerance or flips direction.
ReplicaResult resource_utilization_replicas(double now, std::int32_t current_replicas,
                                            std::int32_t target_utilization_percent, const std::vector<HpaPod>& pods,
                                            bool is_cpu = true,
                                            const Tolerances& tol = {}, const ReplicaCalcConfig& cfg = {});
/// Resource metric with an averageValue target (GetRawResourceReplicas -> calcPlainMetricReplicas).
ReplicaResult resource_average_value_replicas(double now, std::int32_t current_replicas, std::int64_t target_average,
                                              const std::vector<HpaPod>& pods, bool is_cpu = true,
                                              const Tolerances& tol = {}, const ReplicaCalcConfig& cfg = {});
/// Pods metric (averageValue per pod; GetMetricReplicas): as above without the CPU readiness rules.
ReplicaResult pods_metric_replicas(double now, std::int32_t current_replicas, std::int64_t target_average,
                                   const std::vector<HpaPod>& pods, const Tolerances& tol = {},
                                   const ReplicaCalcConfig& cfg = {});
/// Object metric, Value target: ratio = usage / target; replicas = ceil(ratio * ready pods), or ceil(ratio)
/// when current is 0 (scale from zero).
ReplicaResult object_value_replicas(std::int32_t current_replicas, std::int64_t usage, std::int64_t target,
                                    std::int32_t ready_pods, const Tolerances& tol = {});
/// Object metric, AverageValue target: ceil(usage / target) unless usage / (target * status replicas) is in tolerance.
ReplicaResult object_average_value_replicas(std::int32_t status_replicas, std::int64_t usage,
                                            std::int64_t target_average, const Tolerances& tol = {});
/// External metric, Value target: the sum of the series against the target, as object_value_replicas.
ReplicaResult external_value_replicas(std::int32_t current_replicas, const std::vector<std::int64_t>& values,
                                      std::int64_t target, std::int32_t ready_pods, const Tolerances& tol = {});
/// External metric, AverageValue target: the sum against target per pod, as object_average_value_replicas.
ReplicaResult external_average_value_replicas(std::int32_t status_replicas, const std::vector<std::int64_t>& values,
                                              std::int64_t target_average, const Tolerances& tol = {});
/// Pods Running with Ready=True.
std::int32_t ready_pod_count(const std::vector<HpaPod>& pods);

enum class PolicyType { kPods, kPercent };
enum class SelectPolicy { kMax, kMin, kDisabled };

/// HPAScalingPolicy: change at most `value` pods / percent within `period_s`.
struct ScalingPolicy {
  PolicyType type = PolicyType::kPods;
  std::int32_t value = 4;
  double period_s = 15.0;  // periodSeconds (whole seconds, as upstream's int32)
};

/// HPAScalingRules. An unset stabilisation window takes the default (scale-up 0 s; scale-down the controller's
/// --horizontal-pod-autoscaler-downscale-stabilization, 300 s).
struct ScalingRules {
  std::optional<double> stabilization_window_s;  // stabilizationWindowSeconds (whole seconds)
  SelectPolicy select_policy = SelectPolicy::kMax;
  std::vector<ScalingPolicy> policies;
  std::optional<double> tolerance;
  /// Validation of pkg/apis/autoscaling/validation (window [0, 3600], period (0, 1800], value > 0); the durations
  /// must be whole seconds, since upstream's fields are int32 seconds.
  void validate(const char* which) const;
};

/// HorizontalPodAutoscalerBehavior with upstream's defaults (pkg/apis/autoscaling/v2/defaults.go):
/// scale-up: window 0, Max of {4 pods, 100 %} per 15 s; scale-down: window from the controller, 100 % per 15 s.
struct HpaBehavior {
  ScalingRules scale_up = default_scale_up();
  ScalingRules scale_down = default_scale_down();
  static ScalingRules default_scale_up();
  static ScalingRules default_scale_down();
};

struct HpaSpec {
  std::int32_t min_replicas = 1;  // 0 only with the HPAScaleToZero feature gate
  std::int32_t max_replicas = 10;
  std::optional<HpaBehavior> behavior;  // unset: legacy rules (scale-up limit max(2 x current, 4))
  void validate() const;
  std::string to_json() const;
  static HpaSpec from_json(const std::string& json);
};

struct HpaControllerConfig {
  double downscale_stabilization_window_s = 300.0;
  double tolerance = 0.1;
  double sync_period_s = 15.0;
  void validate() const;
  /// snake_case keys as the fields (the deprecated names accepted, see units.hpp); unknown keys are an error.
  std::string to_json() const;
  static HpaControllerConfig from_json(const std::string& json);
};

/// HorizontalPodAutoscalerCondition types (autoscaling/v2).
enum class HpaConditionType { kAbleToScale, kScalingActive, kScalingLimited };
const char* to_string(HpaConditionType t);

/// One status condition as the controller sets it (reason and message texts are upstream's).
struct HpaCondition {
  HpaConditionType type;
  bool status;  // True / False
  std::string reason;
  std::string message;
};

struct HpaDecision {
  std::int32_t desired_replicas = 0;
  bool rescale = false;
  std::int32_t metric_desired_replicas = -1;  // max over valid metrics (-1: none / not computed)
  std::string reason;
  /// The conditions this reconcile set, one per type at most, in the order upstream first sets them. A type
  /// absent here keeps its previous value on the HPA object (upstream leaves it untouched too).
  std::vector<HpaCondition> conditions;
  /// The condition of `type` set by this reconcile, or nullptr.
  const HpaCondition* condition(HpaConditionType type) const;
  /// {"desired_replicas", "rescale", "metric_desired_replicas", "reason", "conditions": [{"type", "status":
  /// "True"|"False", "reason", "message"}]}, the condition list in autoscaling/v2 spelling.
  std::string to_json() const;
};

/// The HPA controller's per-HPA state machine (pkg/controller/podautoscaler/horizontal.go): records
/// recommendations and scale events with explicit time, combines several metrics (max; invalid metrics block
/// scale-down), applies min/max, stabilisation (legacy downscale window, or behaviour up/down windows) and
/// rate limits (legacy scale-up limit, or behaviour policies over their periods with selectPolicy).
class HpaController {
 public:
  explicit HpaController(const HpaSpec& spec, const HpaControllerConfig& config = {});
  /// One reconcile: `proposals` holds one entry per metric; nullopt marks a metric that failed. The decision
  /// carries the AbleToScale / ScalingActive / ScalingLimited conditions upstream sets, assuming the scale
  /// read and (when rescaling) the scale update succeed.
  HpaDecision reconcile(double now, std::int32_t current_replicas,
                        const std::vector<std::optional<std::int32_t>>& proposals);
  HpaDecision reconcile(double now, std::int32_t current_replicas, const std::vector<ReplicaResult>& proposals);
  /// Tolerances this HPA uses (per-HPA values or the controller's).
  Tolerances tolerances() const;
  const HpaSpec& spec() const { return spec_; }

  struct Recommendation {
    std::int32_t replicas;
    double time;
  };
  struct ScaleEvent {
    std::int32_t change;
    double time;
    bool outdated;
  };
  const std::vector<Recommendation>& recommendations() const { return recs_; }
  /// Replaces the recommendation history (upstream's per-HPA `recommendations`), e.g. restored after a restart.
  /// An injected empty history stays empty: the first reconcile records no initial recommendation, as upstream
  /// with a non-nil empty slice.
  void set_recommendations(std::vector<Recommendation> recs);
  /// Scale events kept for the behaviour policies (upstream's scaleUpEvents / scaleDownEvents): the change in
  /// replicas, its time, and whether it has left the longest policy period (its slot is reused).
  const std::vector<ScaleEvent>& scale_up_events() const { return up_events_; }
  const std::vector<ScaleEvent>& scale_down_events() const { return down_events_; }

  /// Everything the controller keeps between reconciles of one HPA (horizontal.go: recommendations,
  /// scaleUpEvents, scaleDownEvents), to persist across restarts; restored, it reconciles as the original.
  /// `history_started` false (only with no recommendations) means the next reconcile records the initial one.
  struct State {
    bool history_started = false;
    std::vector<Recommendation> recommendations;
    std::vector<ScaleEvent> scale_up_events, scale_down_events;

    /// Times finite, replicas and changes >= 0, no recommendations before the history started.
    void validate() const;
    std::string to_json() const;
    /// Every key required, none unknown; ranges checked (errors name the key and the value).
    static State from_json(const std::string& json);
  };
  State snapshot() const;
  void restore(const State& state);

 private:
  std::int32_t normalize_legacy(double now, std::int32_t current, std::int32_t desired, HpaDecision& d);
  std::int32_t normalize_with_behavior(double now, std::int32_t current, std::int32_t desired, HpaDecision& d);
  void store_scale_event(double now, std::int32_t prev, std::int32_t next);

  HpaSpec spec_;
  HpaControllerConfig cfg_;
  std::vector<Recommendation> recs_;
  bool history_started_ = false;  // recordInitialRecommendation ran, or a history was injected
  std::vector<ScaleEvent> up_events_, down_events_;
};

/// Batch form: one reconcile of `n` HPAs at `now` with one metric proposal each (a negative proposal marks a
/// failed metric), e.g. one sync period of a whole cluster. Writes the replica count to set and whether it
/// changes (either output may be null). `n_threads` <= 0 means all hardware threads; 1 runs inline.
void hpa_reconcile_batch(HpaController* hpas, std::size_t n, double now, const std::int32_t* current_replicas,
                         const std::int32_t* proposals, std::int32_t* desired_out, std::uint8_t* rescale_out,
                         int n_threads = 1);

/// A fleet of HPA controllers with one spec and controller config (one per HPA), reconciled in one batch call
/// with one metric each: the one fleet type that the C API's kt_hpa_fleet and Python's HpaFleet wrap.
class HpaFleet {
 public:
  /// What one reconcile of the fleet wrote, one entry per HPA: the replica count to set and whether it changes.
  struct Results {
    std::vector<std::int32_t> desired_replicas;
    std::vector<std::uint8_t> rescale;  // 1: the HPA rescales
  };

  /// `n` controllers of `spec` (validated) under `config` (validated).
  HpaFleet(const HpaSpec& spec, std::size_t n, const HpaControllerConfig& config = {});
  std::size_t size() const noexcept { return hpas_.size(); }
  /// One reconcile of every HPA at `now` (hpa_reconcile_batch): `current_replicas` and `proposals` need size()
  /// entries each (else InvalidArgument naming the input and both counts); proposals[i] < 0 marks HPA i's metric
  /// as failed. `n_threads` <= 0 means all hardware threads; 1 runs inline. The results are valid until the next
  /// reconcile; on an error no HPA has changed.
  const Results& reconcile(double now, const std::int32_t* current_replicas, std::size_t n_current,
                           const std::int32_t* proposals, std::size_t n_proposals, int n_threads = 1);
  const Results& reconcile(double now, const std::vector<std::int32_t>& current_replicas,
                           const std::vector<std::int32_t>& proposals, int n_threads = 1) {
    return reconcile(now, current_replicas.data(), current_replicas.size(), proposals.data(), proposals.size(),
                     n_threads);
  }
  const Results& results() const noexcept { return out_; }
  const HpaController& controller(std::size_t i) const;
  const HpaSpec& spec() const noexcept { return spec_; }
  const HpaControllerConfig& config() const noexcept { return config_; }

  /// The controllers' states, one HpaController::State per HPA in fleet order; restored, the fleet reconciles
  /// exactly as the original from then on. restore() needs exactly size() states and sets all or none.
  std::vector<HpaController::State> snapshot() const;
  void restore(const std::vector<HpaController::State>& states);
  /// The JSON form: an array of size() HpaController::State objects (HpaController::State::to_json's keys), and
  /// its inverse, strict as State::from_json; errors name the entry, key and value ("HpaFleet state[3]:
  /// HpaController state.recommendations[0].replicas = -1 ...").
  std::string snapshot_json() const;
  void restore_json(const std::string& json);

 private:
  HpaSpec spec_;
  HpaControllerConfig config_;
  std::vector<HpaController> hpas_;
  Results out_;
};

/// Proposed limits of behaviour policies (exposed for tests): the most replicas a scale-up may reach, and
/// the fewest a scale-down may reach, given the scale events in the policies' periods before `now`.
std::int32_t scale_up_limit(double now, std::int32_t current, const std::vector<HpaController::ScaleEvent>& up,
                            const std::vector<HpaController::ScaleEvent>& down, const ScalingRules& rules);
std::int32_t scale_down_limit(double now, std::int32_t current, const std::vector<HpaController::ScaleEvent>& up,
                              const std::vector<HpaController::ScaleEvent>& down, const ScalingRules& rules);

}  // namespace kubetune::sched::autoscale
