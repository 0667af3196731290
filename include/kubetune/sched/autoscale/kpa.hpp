// Knative Pod Autoscaler (KPA) maths: config, metric collection, decider (panic mode) and scaler, explicit time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kubetune/sched/autoscale/window.hpp"

namespace kubetune::sched::autoscale {

/// Which metric a revision scales on (annotation autoscaling.knative.dev/metric).
enum class ScalingMetric { kConcurrency, kRps };
/// Averaging of the metric windows (annotation autoscaling.knative.dev/metric-aggregation-algorithm).
enum class Aggregation { kLinear, kWeightedExponential };

// Limits of knative.dev/serving pkg/apis/autoscaling (register.go).
inline constexpr double kWindowMinSeconds = 6.0;
inline constexpr double kWindowMaxSeconds = 3600.0;
inline constexpr double kTargetMin = 0.01;
inline constexpr double kPanicWindowPercentageMin = 1.0;
inline constexpr double kPanicWindowPercentageMax = 100.0;
inline constexpr double kPanicThresholdPercentageMin = 110.0;
inline constexpr double kPanicThresholdPercentageMax = 1000.0;
/// Metric bucket size (pkg/autoscaler/config BucketSize) and decider tick (pkg/autoscaler/scaling tickInterval).
inline constexpr double kBucketSizeSeconds = 1.0;
inline constexpr double kTickIntervalSeconds = 2.0;
/// Minimum number of activators in the data path (pkg/reconciler/autoscaling/kpa minActivators).
inline constexpr std::int32_t kMinActivators = 2;
/// Activation timeout = progress deadline (pkg/deployment/config.go ProgressDeadlineDefault, 600 s) + the
/// activationTimeoutBuffer of pkg/reconciler/autoscaling/kpa/scaler.go (30 s).
inline constexpr double kProgressDeadlineDefaultSeconds = 600.0;
inline constexpr double kActivationTimeoutBufferSeconds = 30.0;
inline constexpr double kDefaultActivationTimeoutSeconds =
    kProgressDeadlineDefaultSeconds + kActivationTimeoutBufferSeconds;
/// Re-enqueue delay of an active PA that may deactivate while the SKS is already in proxy mode
/// (pkg/reconciler/autoscaling/kpa/scaler.go handleScaleToZero: 3 s, "long enough to ensure current iteration
/// is finished").
inline constexpr double kProxyModeRequeueSeconds = 3.0;

/// Cluster-wide autoscaler settings (ConfigMap `config-autoscaler`), defaults as in Knative Serving 1.x
/// (pkg/autoscaler/config/config.go). Names follow the unit rule of units.hpp: durations `_s` (seconds),
/// `_percent` where upstream's key is a percentage, fractions otherwise. `validate()` applies upstream's
/// validation rules and names the key and value on failure.
struct KpaConfig {
  bool enable_scale_to_zero = true;
  double container_concurrency_target_fraction = 0.7;  // container-concurrency-target-percentage (70)
  double container_concurrency_target_default = 100.0;
  double target_utilization = 0.7;  // used for the RPS metric
  double rps_target_default = 200.0;
  double target_burst_capacity = 211.0;  // -1 = unlimited (activator always in path), 0 = never
  double max_scale_up_rate = 1000.0;
  double max_scale_down_rate = 2.0;
  double stable_window_s = 60.0;
  double panic_window_percent = 10.0;
  double panic_threshold_percent = 200.0;
  double activator_capacity = 100.0;
  double scale_to_zero_grace_period_s = 30.0;
  double scale_to_zero_pod_retention_period_s = 0.0;
  double scale_down_delay_s = 0.0;
  std::int32_t initial_scale = 1;
  bool allow_zero_initial_scale = false;
  std::int32_t min_scale = 0;
  std::int32_t max_scale = 0;  // 0 = unbounded
  std::int32_t max_scale_limit = 0;
  /// config-deployment's progress-deadline + 30 s buffer; a revision's own progress deadline replaces it.
  double activation_timeout_s = kDefaultActivationTimeoutSeconds;

  /// Throws InvalidArgument naming the offending key when a rule of upstream's validate() fails.
  void validate() const;
  std::string to_json() const;
  /// Accepts the snake_case field names of this struct; unknown keys are an error.
  static KpaConfig from_json(const std::string& json);
  /// Parses ConfigMap data as upstream does: kebab-case keys, Go durations ("60s", "1m30s"), and
  /// container-concurrency-target-percentage > 1 read as a percentage. Validates.
  static KpaConfig from_configmap(const std::map<std::string, std::string>& data);
};

/// Per-revision settings (PodAutoscaler spec + annotations). Unset optionals fall back to KpaConfig.
struct KpaRevision {
  ScalingMetric metric = ScalingMetric::kConcurrency;
  Aggregation aggregation = Aggregation::kLinear;
  std::int32_t container_concurrency = 0;  // 0 = unlimited
  std::optional<double> target;            // autoscaling.knative.dev/target
  std::optional<double> target_utilization_percent;
  std::optional<double> target_burst_capacity;
  std::optional<double> window_s;  // stable window (annotation autoscaling.knative.dev/window)
  std::optional<double> panic_window_percent;
  std::optional<double> panic_threshold_percent;
  std::optional<double> scale_down_delay_s;
  std::optional<double> scale_to_zero_pod_retention_period_s;
  std::optional<std::int32_t> initial_scale;
  std::optional<std::int32_t> min_scale;
  std::optional<std::int32_t> max_scale;
  std::int32_t activation_scale = 1;
  bool reachable = true;
  /// Annotation serving.knative.dev/progress-deadline: the activation timeout becomes this + 30 s
  /// (PodAutoscaler.ProgressDeadline in kpa/scaler.go handleScaleToZero).
  std::optional<double> progress_deadline_s;

  /// Annotation validation (ranges as in pkg/apis/autoscaling/annotation_validation.go).
  void validate() const;
  std::string to_json() const;
  static KpaRevision from_json(const std::string& json);
};

/// What the decider needs, resolved from config + revision (pkg/reconciler/autoscaling/kpa/resources MakeDecider).
struct DeciderSpec {
  double max_scale_up_rate = 1000.0;
  double max_scale_down_rate = 2.0;
  ScalingMetric metric = ScalingMetric::kConcurrency;
  double target_value = 70.0;  // per-pod target of the metric
  double total_value = 100.0;  // per-pod capacity of the metric
  double target_burst_capacity = 211.0;
  double panic_threshold = 2.0;  // fraction: 200 % -> 2.0
  double stable_window_s = 60.0;
  double panic_window_s = 6.0;
  double scale_down_delay_s = 0.0;
  std::int32_t initial_scale = 1;
  bool reachable = true;
  double activator_capacity = 100.0;
  std::int32_t activation_scale = 1;

  void validate() const;
};

/// (target, total) per pod, as upstream's ResolveMetricTarget (pkg/reconciler/autoscaling/resources/target.go).
struct MetricTarget {
  double target;
  double total;
};
MetricTarget resolve_metric_target(const KpaConfig& config, const KpaRevision& revision);
/// Initial scale: revision value unless it is 0 and zero initial scale is not allowed (GetInitialScale).
std::int32_t resolve_initial_scale(const KpaConfig& config, const KpaRevision& revision);
/// Panic window in seconds: stable window * percentage / 100 rounded to whole seconds, at least one bucket
/// (pkg/reconciler/autoscaling/resources/metric.go MakeMetric). The percentage must lie in (0, 100].
double resolve_panic_window(double stable_window_s, double panic_window_percent);
DeciderSpec make_decider_spec(const KpaConfig& config, const KpaRevision& revision);

/// One decision. `scale_valid == false` means "no data": the scaler must not act on desired_pod_count.
struct ScaleResult {
  std::int32_t desired_pod_count = -1;
  std::int32_t excess_burst_capacity = 0;
  std::int32_t num_activators = kMinActivators;
  bool scale_valid = false;
  bool panicking = false;
};

/// Activators needed to cover ready_pods * total + TBC (pkg/reconciler/autoscaling/kpa computeNumActivators).
std::int32_t compute_num_activators(std::int32_t ready_pods, const DeciderSpec& spec);

/// The KPA decider (knative pkg/autoscaler/scaling/autoscaler.go `Scale`), a small state machine:
/// desired pods = ceil(observed / target) from the stable and the panic window, clamped to
/// [floor(ready / max_scale_down_rate), ceil(ready * max_scale_up_rate)] (no scale-down bound when the
/// revision is unreachable); panic starts when ceil(panic / target) / max(1, ready) >= panic threshold, is
/// extended while over it and ends one stable window after the last time over it; while panicking the
/// count never decreases; a scale-down delay takes the max of the decisions in the trailing delay window
/// (2 s granularity, reachable revisions only); excess burst capacity = floor(ready * total - TBC - panic) (TBC -1 -> -1, 0 -> 0).
class KpaDecider {
 public:
  /// A decider created while more than one pod is ready starts in panic mode at `now`, holding that count.
  explicit KpaDecider(const DeciderSpec& spec, std::int32_t ready_pods_at_start = 0, double now = 0.0);
  KpaDecider(const KpaDecider& other);
  KpaDecider& operator=(const KpaDecider& other);
  KpaDecider(KpaDecider&&) noexcept;
  KpaDecider& operator=(KpaDecider&&) noexcept;
  ~KpaDecider();

  /// Decide at `now` from the ready pod count and the stable / panic window values of the metric.
  ScaleResult decide(double now, std::int32_t ready_pods, double observed_stable, double observed_panic);
  /// The "no data yet" result (upstream returns invalidSR when the metric window is empty).
  static ScaleResult no_data() { return ScaleResult{}; }
  /// Replaces the spec (upstream Update); the panic state is kept, the delay window is rebuilt if it changed.
  void update(const DeciderSpec& spec);

  const DeciderSpec& spec() const { return spec_; }
  bool panicking() const { return panicking_; }
  double panic_time() const { return panic_time_; }
  std::int32_t max_panic_pods() const { return max_panic_pods_; }

  /// What upstream's autoscaler keeps between ticks (scaling/autoscaler.go: panicTime, maxPanicPods and the
  /// delayWindow), without the spec, which comes from config + revision. A decider restored from a snapshot
  /// decides exactly as the original from then on.
  struct State {
    bool panicking = false;
    double panic_time_s = 0.0;
    std::int32_t max_panic_pods = 0;
    /// The scale-down delay window's retained maxima, oldest first: (time slot start in seconds, pods).
    std::vector<std::pair<double, std::int32_t>> delay_window;

    /// Ranges that hold whatever the spec: finite times, counts >= 0, slots on the 2 s tick.
    void validate() const;
    std::string to_json() const;
    /// Every key required, none unknown; ranges checked (errors name the key and the value).
    static State from_json(const std::string& json);
  };
  State snapshot() const;
  /// Replaces the state; throws InvalidArgument when it does not fit this decider's spec (a delay window
  /// without scale_down_delay_s, more or older entries than the delay holds).
  void restore(const State& state);

 private:
  DeciderSpec spec_;
  bool panicking_ = false;
  double panic_time_ = 0.0;
  std::int32_t max_panic_pods_ = 0;
  std::unique_ptr<MaxTimeWindow> delay_;
};

/// Batch form: decides `n` revisions at one time `now` (pointer + length, caller-allocated output), e.g.
/// one tick of a whole cluster. `n_threads` <= 0 means all hardware threads; 1 runs inline.
void kpa_decide_batch(KpaDecider* deciders, std::size_t n, double now, const std::int32_t* ready_pods,
                      const double* observed_stable, const double* observed_panic, ScaleResult* out,
                      int n_threads = 1);

/// A fleet's state: the JSON array of the `n` deciders' snapshots, and its inverse, which needs exactly `n`
/// entries and restores all or none (errors name the entry: "KpaFleet state[3]: KpaDecider state.max_panic_pods
/// = -1 ...").
std::string kpa_fleet_snapshot_json(const KpaDecider* deciders, std::size_t n);
void kpa_fleet_restore_json(KpaDecider* deciders, std::size_t n, const std::string& json);

/// A fleet of KPA deciders with one spec (one per revision), decided in one batch call: the one fleet type that
/// the C API's kt_kpa_fleet and Python's KpaFleet wrap.
class KpaFleet {
 public:
  /// `n` deciders started at `now`; `ready_pods_at_start`: empty (0 each) or exactly `n` entries (else
  /// InvalidArgument naming both counts).
  KpaFleet(const DeciderSpec& spec, std::size_t n, const std::vector<std::int32_t>& ready_pods_at_start = {},
           double now = 0.0);
  std::size_t size() const noexcept { return deciders_.size(); }
  /// One decide of every decider at `now` (kpa_decide_batch; each input has size() entries). The results, one per
  /// decider, are valid until the next decide.
  const std::vector<ScaleResult>& decide(double now, const std::int32_t* ready_pods, const double* observed_stable,
                                         const double* observed_panic, int n_threads = 1);
  const std::vector<ScaleResult>& results() const noexcept { return out_; }
  const KpaDecider& decider(std::size_t i) const;
  /// kpa_fleet_snapshot_json / kpa_fleet_restore_json of the deciders (restore: all or none).
  std::string snapshot_json() const;
  void restore_json(const std::string& json);

 private:
  std::vector<KpaDecider> deciders_;
  std::vector<ScaleResult> out_;
};

/// A metric report (pkg/autoscaler/metrics Stat): per-pod averages, or one aggregated scraper stat.
struct Stat {
  double time = 0.0;
  double concurrency = 0.0;          // AverageConcurrentRequests
  double proxied_concurrency = 0.0;  // AverageProxiedConcurrentRequests (already counted by the activator)
  double request_count = 0.0;        // requests in the last second
  double proxied_request_count = 0.0;
};

/// Pods the scraper samples out of `population` ready pods: N for N <= 3, else ceil(N x / (N + x - 1))
/// with x = 1.96^2 * 100 / 5^2 (95 % confidence, variance 100, margin 5; metrics/sample_size.go).
std::int32_t scrape_sample_size(std::int32_t population);
/// The scraper's stat: the mean of the sampled pods' stats times the ready pod count (stats_scraper.go).
Stat aggregate_scrape(double now, const std::vector<Stat>& sampled, std::int32_t ready_pods);

/// Stable and panic windows of one revision (pkg/autoscaler/metrics/collector.go). The recorded value is
/// concurrency - proxied concurrency (and count - proxied count for RPS).
class KpaMetricCollector {
 public:
  struct Observed {
    double stable = 0.0;
    double panic = 0.0;
    bool has_data = false;  // false: nothing recorded in the last stable window (upstream ErrNoData)
  };
  /// Both windows in seconds, as the other windows take them; upstream's MakeMetric derives the panic window
  /// from the percentage annotation with resolve_panic_window. Requires 1 s <= panic window <= stable window.
  KpaMetricCollector(double stable_window_s, double panic_window_s, Aggregation aggregation = Aggregation::kLinear);
  void record(const Stat& stat);
  Observed concurrency(double now) const;
  Observed rps(double now) const;
  Observed observe(ScalingMetric metric, double now) const {
    return metric == ScalingMetric::kRps ? rps(now) : concurrency(now);
  }
  double panic_window_s() const { return conc_panic_.window_s(); }

  /// The four metric windows (pkg/autoscaler/metrics/collector.go: the stable and panic buckets of
  /// concurrency and of RPS), for persisting them across restarts.
  struct State {
    BucketWindow::State concurrency_stable, concurrency_panic, rps_stable, rps_panic;

    std::string to_json() const;
    static State from_json(const std::string& json);
  };
  State snapshot() const;
  /// Throws InvalidArgument when a window's bucket count differs from this collector's windows.
  void restore(const State& state);

 private:
  Observed read(const WeightedBucketWindow& s, const WeightedBucketWindow& p, double now) const;
  Aggregation agg_;
  WeightedBucketWindow conc_stable_, conc_panic_, rps_stable_, rps_panic_;
};

/// PodAutoscaler "Active" condition: Unknown = activating, True = active, False = inactive.
enum class PaState { kActivating, kActive, kInactive };

/// Outcome of one reconcile of the KPA scaler.
struct ScalerStep {
  std::int32_t want = -1;       // scale the scaler wants (-1 = unknown)
  bool applied = false;         // whether the deployment's replicas were set to `want`
  std::int32_t replicas = 0;    // deployment replicas after this step
  bool proxy_mode = false;      // activator in the request path (SKS proxy mode)
  PaState state = PaState::kActivating;
  /// Reason of the Active condition (upstream's strings): "Queued" while activating, "NoTraffic" when inactive,
  /// "TimedOut" when an activation did not reach ready within the activation timeout, "" when active.
  const char* reason = "";
  /// Reconcile this PA again after this many seconds (upstream's enqueueCB); -1 = no re-enqueue asked.
  double requeue_after_s = -1.0;
  /// Start the asynchronous activator probe (upstream probeManager.Offer): the PA is inactive and the activator
  /// was not found in the request path, so scale-to-zero waits for the probe's result.
  bool probe_activator = false;
};

/// The KPA reconciler's scaling half (pkg/reconciler/autoscaling/kpa scaler.go + kpa.go), as a state
/// machine with explicit time: applies min/max scale and initial scale, gates scale-to-zero (active for a
/// stable window -> inactive -> activator in path for the grace period and past the pod retention period),
/// times out stuck activations (after the revision's progress deadline + 30 s, else the config's activation
/// timeout; the PA then goes inactive with reason TimedOut, as kpa.go computeActiveCondition), tracks the PA's
/// Active condition with its reason and the SKS mode, and returns upstream's re-enqueue and activator-probe
/// actions. Unless the caller passes its result, the activator probe is modelled
/// as "SKS has been in proxy mode" (always true with TBC = -1).
class KpaScaler {
 public:
  KpaScaler(const KpaConfig& config, const KpaRevision& revision, double now = 0.0,
            std::int32_t initial_replicas = -1);
  /// One reconcile at `now` with the decider's result and the current ready pod count. `activator_probe` is the
  /// outcome of upstream's synchronous activator probe (consulted only while inactive and TBC != -1); unset, it
  /// is modelled as "SKS is in proxy mode".
  ScalerStep reconcile(double now, const ScaleResult& decision, std::int32_t ready_pods,
                       std::optional<bool> activator_probe = std::nullopt);

  PaState state() const { return state_; }
  const char* state_reason() const { return reason_; }
  double state_since() const { return state_since_; }
  /// The activation timeout in force: the revision's progress deadline + 30 s, else the config's.
  double activation_timeout_s() const { return activation_timeout_s_; }
  bool scale_target_initialized() const { return initialized_; }
  std::int32_t replicas() const { return replicas_; }
  bool proxy_mode() const { return proxy_; }
  /// (min, max) scale bounds (max 0 = unbounded), upstream PodAutoscaler.ScaleBounds.
  std::pair<std::int32_t, std::int32_t> scale_bounds() const;

  /// What the reconciler reads back from the PodAutoscaler's status and the SKS on each reconcile: the Active
  /// condition (status, reason, lastTransitionTime), ScaleTargetInitialized, the SKS mode with the time it was
  /// entered, and the deployment's replicas. Any such status can be set, e.g. inactive while min-scale > 0,
  /// active before the initial scale was reached, or inactive with the activator not yet in the path.
  struct State {
    PaState pa_state = PaState::kActivating;
    /// "" or "Queued" while activating, "" when active, "NoTraffic" or "TimedOut" when inactive.
    std::string reason;
    double since_s = 0.0;
    bool scale_target_initialized = false;
    bool proxy_mode = false;
    double proxy_since_s = 0.0;
    std::int32_t replicas = 0;

    /// Ranges that hold whatever the revision: finite times, replicas >= 0, a reason of the state.
    void validate() const;
    std::string to_json() const;
    /// Every key required, none unknown; ranges checked (errors name the key and the value).
    static State from_json(const std::string& json);
  };
  State snapshot() const;
  /// Replaces the state; throws InvalidArgument for a reason that does not belong to the state, negative
  /// replicas, or an SKS out of proxy mode although TBC = -1 keeps the activator in the path.
  void restore(const State& state);

 private:
  ScalerStep handle_scale_to_zero(double now, std::int32_t desired, std::optional<bool> activator_probe) const;
  ScalerStep handle_inactive(double now, double in_state, std::optional<bool> activator_probe, ScalerStep r) const;
  std::int32_t active_threshold() const;
  void set_state(PaState s, const char* reason, double now);

  KpaConfig cfg_;
  KpaRevision rev_;
  double tbc_, stable_window_, retention_, activation_timeout_s_;
  std::int32_t initial_scale_;
  PaState state_ = PaState::kActivating;
  const char* reason_ = "";
  double state_since_;
  bool initialized_ = false;
  bool proxy_ = false;
  double proxy_since_ = 0.0;
  std::int32_t replicas_;
};

/// Collector + decider + scaler of one revision, ticked by the caller (pkg/autoscaler + kpa reconciler).
class KpaAutoscaler {
 public:
  /// `initial_replicas` < 0: the deployment starts at the revision's initial scale.
  KpaAutoscaler(const KpaConfig& config, const KpaRevision& revision, double now = 0.0,
                std::int32_t initial_replicas = -1);
  void record(const Stat& stat) { collector_.record(stat); }
  /// Decide and reconcile at `now` given the ready pod count; returns the scaler step.
  ScalerStep tick(double now, std::int32_t ready_pods);
  const ScaleResult& last_decision() const { return last_; }
  const KpaDecider& decider() const { return decider_; }
  const KpaScaler& scaler() const { return scaler_; }
  const KpaMetricCollector& collector() const { return collector_; }

  /// The state of all three parts; restored, the autoscaler ticks exactly as the original.
  struct State {
    KpaMetricCollector::State collector;
    KpaDecider::State decider;
    KpaScaler::State scaler;

    std::string to_json() const;
    static State from_json(const std::string& json);
  };
  State snapshot() const;
  void restore(const State& state);

 private:
  DeciderSpec spec_;
  KpaMetricCollector collector_;
  KpaDecider decider_;
  KpaScaler scaler_;
  ScaleResult last_;
};

}  // namespace kubetune::sched::autoscale
