// Upstream parity: rows ported from knative/serving and kubernetes/kubernetes unit tests, each row naming the
// upstream `file:TestName/subtest` it reproduces (values are facts of those tests; the code is ours).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"

using namespace kubetune::sched::autoscale;

namespace {

struct PanicWindowRow {
  const char* upstream;
  std::optional<double> window;  // autoscaling.knative.dev/window annotation
  std::optional<double> percentage;
  double want;
};

// The DeciderSpec of knative pkg/autoscaler/scaling/autoscaler_test.go: unset fields are Go zero values.
DeciderSpec delay_spec(bool reachable, double delay) {
  DeciderSpec s;
  s.target_value = 10;
  s.max_scale_down_rate = 10;
  s.max_scale_up_rate = 10;
  s.panic_threshold = 100;
  s.scale_down_delay_s = delay;
  s.reachable = reachable;
  s.total_value = 0;
  s.stable_window_s = 0;
  s.target_burst_capacity = 0;
  return s;
}

struct DecideStep {
  double t;
  double observed;  // stable = panic
  std::int32_t want;
};

void expect_steps(KpaDecider& d, const std::vector<DecideStep>& steps, const char* upstream) {
  for (const DecideStep& s : steps) {
    const ScaleResult r = d.decide(s.t, 0, s.observed, s.observed);
    EXPECT_TRUE(r.scale_valid) << upstream;
    EXPECT_EQ(r.desired_pod_count, s.want) << upstream << " at t = " << s.t;
  }
}

// knative kpa_test.go constants used by scaler_test.go: stable window 5 min, grace period 60 s.
KpaConfig scaler_test_config() {
  KpaConfig c;
  c.stable_window_s = 300;
  c.scale_to_zero_grace_period_s = 60;
  return c;
}

const ScaleResult kZero{0, 0, 2, true, false};
const ScaleResult kOne{1, 0, 2, true, false};

}  // namespace

TEST(UpstreamParity, PanicWindowRoundedToWholeSeconds) {
  const std::vector<PanicWindowRow> rows = {
      {"resources/metric_test.go:TestMakeMetric/defaults", std::nullopt, std::nullopt, 6},
      {"resources/metric_test.go:TestMakeMetric/with too short panic window", 10.0, 10.0, 1},
      {"resources/metric_test.go:TestMakeMetric/with longer stable window, no panic window percentage, defaults to 10%",
       600.0, std::nullopt, 60},
      {"resources/metric_test.go:TestMakeMetric/with longer panic window percentage", std::nullopt, 50.0, 30},
      {"resources/metric_test.go:TestMakeMetric/with panic window percentage+rounding", std::nullopt, 51.0, 31},
  };
  for (const PanicWindowRow& row : rows) {
    KpaRevision rev;
    rev.window_s = row.window;
    rev.panic_window_percent = row.percentage;
    const KpaConfig cfg;
    EXPECT_EQ(make_decider_spec(cfg, rev).panic_window_s, row.want) << row.upstream;
    EXPECT_EQ(KpaAutoscaler(cfg, rev).collector().panic_window_s(), row.want) << row.upstream;
  }
}

TEST(UpstreamParity, ScaleDownDelayOnlyForReachableRevisions) {
  {
    const char* up = "scaling/autoscaler_test.go:TestAutoscalerScaleDownDelay/simple+gradual";
    KpaDecider d(delay_spec(true, 300));
    expect_steps(d, {{2, 40, 4}, {300, 0, 4}, {302, 0, 0}}, up);                      // simple
    expect_steps(d, {{540, 40, 4}, {600, 30, 4}, {660, 0, 4}, {840, 0, 3}, {900, 0, 0}}, up);  // gradual
  }
  {
    const char* up = "scaling/autoscaler_test.go:TestAutoscalerScaleDownDelayNotReachable";
    KpaDecider d(delay_spec(true, 300));
    expect_steps(d, {{2, 40, 4}, {60, 0, 4}}, up);
    d.update(delay_spec(false, 300));  // another revision took the traffic
    expect_steps(d, {{2, 0, 0}}, up);
  }
  {
    const char* up = "scaling/autoscaler_test.go:TestAutoscalerScaleDownDelayZero";
    KpaDecider d(delay_spec(true, 0));
    expect_steps(d, {{0, 40, 4}, {0.5, 20, 2}}, up);
  }
}

TEST(UpstreamParity, DeciderSpecAcceptsZeroTotalAndStableWindow) {
  // Every spec of scaling/autoscaler_test.go leaves TotalValue and StableWindow at 0.
  EXPECT_NO_THROW(delay_spec(true, 0).validate());
  DeciderSpec neg = delay_spec(true, 0);
  neg.total_value = -1;
  EXPECT_THROW(neg.validate(), kubetune::InvalidArgument);
  // With a zero stable window panic mode ends on the first tick below the threshold (panicTime + 0 < now).
  DeciderSpec s = delay_spec(true, 0);
  s.panic_threshold = 2;
  KpaDecider d(s);
  EXPECT_TRUE(d.decide(0, 1, 10, 30).panicking);   // 3 pods / 1 ready >= 2
  EXPECT_FALSE(d.decide(2, 3, 10, 10).panicking);  // 1 / 3 < 2, and 0 + 0 < 2
}

TEST(UpstreamParity, DefaultActivationTimeout) {
  // pkg/deployment/config.go ProgressDeadlineDefault (600 s) + kpa/scaler.go activationTimeoutBuffer (30 s).
  EXPECT_EQ(KpaConfig{}.activation_timeout_s, 630.0);
}

TEST(UpstreamParity, UnreachableRevisionsSkipRetentionAndInitialScale) {
  struct Row {
    const char* upstream;
    bool reachable;
    double retention;
    std::optional<std::int32_t> min_scale;
    double inactive_for;  // seconds since the PA went inactive
    bool want_applied;
    std::int32_t want_replicas;
  };
  const std::vector<Row> rows = {
      {"kpa/scaler_test.go:TestScaler/scale to zero ignore last pod retention if  revision is unreachable", false,
       600, std::nullopt, 60, true, 0},
      {"kpa/scaler_test.go:TestScaler/can't scale to zero if revision is unreachable, but before deadline", false, 600,
       std::nullopt, 59, false, 1},
      {"kpa/scaler_test.go:TestScaler/ignore minScale if unreachable", false, 0, 2, 60, true, 0},
      {"kpa/scaler_test.go:TestScaler/observe minScale if reachability unknown", true, 0, 2, 60, true, 2},
      {"(contrast) reachable revision keeps the last pod for the retention period", true, 600, std::nullopt, 60,
       false, 1},
  };
  for (const Row& row : rows) {
    KpaRevision rev;
    rev.reachable = row.reachable;
    rev.min_scale = row.min_scale;
    KpaConfig cfg = scaler_test_config();
    cfg.scale_to_zero_pod_retention_period_s = row.retention;
    KpaScaler sc(cfg, rev, 0.0, 1);
    sc.reconcile(0, kOne, 1);                        // active at 0
    const ScalerStep off = sc.reconcile(300, kZero, 1);  // active a whole stable window: inactive at 300
    // A reachable revision with min-scale never asks for zero; upstream sets that PA inactive by hand.
    if (!(row.reachable && row.min_scale)) {
      ASSERT_EQ(off.state, PaState::kInactive) << row.upstream;
    }
    const ScalerStep st = sc.reconcile(300 + row.inactive_for, kZero, 1);
    EXPECT_EQ(st.applied, row.want_applied) << row.upstream;
    EXPECT_EQ(st.replicas, row.want_replicas) << row.upstream;
  }
  // kpa/scaler_test.go:TestScaler/unreachable revision with initialScale > 1 can scale to 0 -- the bound part:
  // before the initial scale is reached it is a lower bound only for reachable revisions.
  for (const bool reachable : {true, false}) {
    KpaRevision rev;
    rev.initial_scale = 2;
    rev.reachable = reachable;
    KpaScaler sc(scaler_test_config(), rev, 0.0, 2);
    EXPECT_EQ(sc.reconcile(0, kOne, 0).replicas, reachable ? 2 : 1) << "reachable = " << reachable;
  }
}

TEST(UpstreamParity, ExternalPerPodUsageSaturates) {
  constexpr auto kMax64 = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMax32 = std::numeric_limits<std::int32_t>::max();
  struct Row {
    const char* upstream;
    std::int32_t current;
    std::int64_t level;
    std::int64_t target;
    std::int32_t want_replicas;
    std::int64_t want_usage;
  };
  const std::vector<Row> rows = {
      {"replica_calculator_test.go:TestReplicaCalcExternalPerPodMetric/replica count overflow saturates to MaxInt32", 1,
       kMax64, 1, kMax32, kMax64},
      {"replica_calculator_test.go:TestReplicaCalcExternalPerPodMetric/usage overflow with huge target leaves replicas "
       "unchanged",
       1, kMax64, kMax64, 1, kMax64},
      {"replica_calculator_test.go:TestReplicaCalcExternalPerPodMetric/scale up", 3, 8600, 2150, 4, 2867},
  };
  for (const Row& row : rows) {
    const ReplicaResult r = external_average_value_replicas(row.current, {row.level}, row.target);
    ASSERT_TRUE(r.valid) << row.upstream;
    EXPECT_EQ(r.replicas, row.want_replicas) << row.upstream;
    EXPECT_EQ(r.usage, row.want_usage) << row.upstream;
  }
  // Two series that overflow when summed saturate too (the sum's clamp of the same function).
  EXPECT_EQ(external_average_value_replicas(2, {kMax64, 5}, 1).usage, kMax64);
}

namespace {

// An active PA (Active since t = 0) and one marked inactive at t = 300 after a whole stable window; marking it
// inactive also puts the SKS in proxy mode from t = 300 on.
KpaScaler active_at_zero(const KpaConfig& cfg, const KpaRevision& rev = {}, std::int32_t start_replicas = 1) {
  KpaScaler sc(cfg, rev, 0.0, start_replicas);
  sc.reconcile(0, kOne, 1);
  return sc;
}
KpaScaler inactive_at_300(const KpaConfig& cfg, const KpaRevision& rev = {}) {
  KpaScaler sc = active_at_zero(cfg, rev);
  sc.reconcile(300, kZero, 1);
  return sc;
}

struct ActionRow {
  const char* upstream;
  ScalerStep got;
  std::int32_t want;
  bool applied;         // upstream wantScaling
  double requeue_after;  // upstream wantCBCount 1 <=> >= 0
  bool probe;            // upstream wantAsyncProbeCount
};

}  // namespace

TEST(UpstreamParity, ScalerRequeueAndProbeActions) {
  const KpaConfig cfg = scaler_test_config();
  KpaRevision window45;  // paStableWindow
  window45.window_s = 45;
  const ScaleResult short_burst{1, -1, 2, true, false};  // negative excess burst capacity: SKS to proxy mode
  const auto with_retention = [&](double cm, std::optional<double> pa) {
    KpaConfig c = cfg;
    c.scale_to_zero_pod_retention_period_s = cm;
    KpaRevision r;
    r.scale_to_zero_pod_retention_period_s = pa;
    return inactive_at_300(c, r).reconcile(360, kZero, 1);
  };
  const auto proxy_long = [&](double retention) {
    KpaConfig c = cfg;
    c.scale_to_zero_pod_retention_period_s = retention;
    KpaScaler sc = active_at_zero(c);
    sc.reconcile(240, short_burst, 1);  // SKS proxying from 240, a minute before the PA goes inactive
    sc.reconcile(300, kZero, 1);
    return sc.reconcile(359, kZero, 1);
  };
  const auto proxied_while_active = [&] {
    KpaScaler sc(cfg, {}, 0.0, 1);
    sc.reconcile(0, short_burst, 1);
    return sc.reconcile(300, kZero, 1);
  };
  KpaRevision tbc_unlimited;
  tbc_unlimited.target_burst_capacity = -1;
  KpaRevision initial2;
  initial2.initial_scale = 2;
  const auto initial_attained = [&] {
    KpaScaler sc(cfg, initial2, 0.0, 2);
    sc.reconcile(0, ScaleResult{2, 0, 2, true, false}, 2);  // initial scale reached, active since 0
    return sc.reconcile(120, kZero, 2);
  };
  const auto initial_zero = [&] {
    KpaConfig c = cfg;
    c.allow_zero_initial_scale = true;
    KpaRevision r;
    r.initial_scale = 0;
    KpaScaler sc(c, r, 0.0, 0);
    sc.reconcile(0, kZero, 0);  // initial scale 0 is reached at once: the PA goes inactive at 0
    return sc.reconcile(0, kZero, 0, true);
  };
  const auto activating_for = [&](double t) { return KpaScaler(cfg, {}, 0.0, 1).reconcile(t, kZero, 0); };
  KpaRevision deadline5;  // serving.knative.dev/progress-deadline: "5s"
  deadline5.progress_deadline_s = 5;
  const auto revision_activating_for = [&](double t) {
    return KpaScaler(cfg, deadline5, 0.0, 1).reconcile(t, kZero, 0);
  };

  const char* f = "kpa/scaler_test.go:TestScaler/";
  const std::vector<ActionRow> rows = {
      {"waits to scale to zero (just before idle period)", active_at_zero(cfg).reconcile(299, kZero, 1), 1, true, 1,
       false},
      {"waits to scale to zero (just before idle period), custom PA window",
       active_at_zero(cfg, window45).reconcile(44, kZero, 1), 1, true, 1, false},
      {"custom PA window, check for standard window, no probe", active_at_zero(cfg, window45).reconcile(300, kZero, 1),
       0, false, -1, false},
      {"scale to 1 waiting for idle expires", active_at_zero(cfg, {}, 10).reconcile(299, kZero, 1), 1, true, 1, false},
      {"waits to scale to zero after idle period", active_at_zero(cfg).reconcile(300, kZero, 1), 0, false, -1, false},
      {"waits to scale to zero after idle period; sks in proxy mode", proxied_while_active(), 0, false,
       3.0, false},
      {"waits to scale to zero after idle period (custom PA window)",
       active_at_zero(cfg, window45).reconcile(45, kZero, 1), 0, false, -1, false},
      {"can scale to zero after grace period, but 0 PA retention", with_retention(120, 0.0), 0, true, -1, false},
      {"can't scale to zero after grace period, but before last pod retention", with_retention(120, std::nullopt), 0,
       false, 60, false},
      {"can't scale to zero after grace period, but before last pod retention, pa defined", with_retention(0, 120.0), 0,
       false, 60, false},
      {"scale to zero after grace period, and after last pod retention", with_retention(60, std::nullopt), 0, true, -1,
       false},
      {"scale to zero after grace period", inactive_at_300(cfg).reconcile(360, kZero, 1), 0, true, -1, false},
      // Upstream's SKS here is still serving (proxied 0 s, re-enqueue after the whole 60 s grace); in kubetune's
      // timeline the SKS has proxied since the PA went inactive, so the wait left is 1 s. Same action.
      {"waits to scale to zero (just before grace period)", inactive_at_300(cfg).reconcile(359, kZero, 1), 0, false, 1,
       false},
      {"waits to scale to zero (just before grace period, sks short)", inactive_at_300(cfg).reconcile(359, kZero, 1), 0,
       false, 1, false},
      {"waits to scale to zero (just before grace period, sks in proxy long) and last pod timeout positive",
       proxy_long(42), 0, true, -1, false},
      {"waits to scale to zero (just before grace period, sks in proxy long)", proxy_long(0), 0, true, -1, false},
      // The prober must not be consulted with TBC = -1: a failing result passed in is ignored.
      {"scale to zero with TBC=-1", inactive_at_300(cfg, tbc_unlimited).reconcile(360, kZero, 1, false), 0, true, -1,
       false},
      {"scale to zero after grace period, but fail prober", inactive_at_300(cfg).reconcile(360, kZero, 1, false), 0,
       false, -1, true},
      {"scale to zero after grace period, but wrong prober response",
       inactive_at_300(cfg).reconcile(360, kZero, 1, false), 0, false, -1, true},
      {"waits to scale to zero while activating until after deadline exceeded", activating_for(315), -1, false, 630,
       false},
      {"scale to zero while activating after deadline exceeded", activating_for(631), 0, true, -1, false},
      // customActivationTimeout (5 s) + activationTimeoutBuffer (30 s) + 1 s.
      {"scale to zero while activating after revision deadline exceeded", revision_activating_for(36), 0, true, -1,
       false},
      {"initial scale attained, but now time to scale down", initial_attained(), 1, true, 180, false},
      {"reaching initial scale zero", initial_zero(), 0, false, 60, false},
  };
  for (const ActionRow& r : rows) {
    EXPECT_EQ(r.got.want, r.want) << f << r.upstream;
    EXPECT_EQ(r.got.applied, r.applied) << f << r.upstream;
    EXPECT_DOUBLE_EQ(r.got.requeue_after_s, r.requeue_after) << f << r.upstream;
    EXPECT_EQ(r.got.probe_activator, r.probe) << f << r.upstream;
  }
  // Scaling up never re-enqueues or probes (kpa/scaler_test.go:TestScaler/scale up inactive revision).
  const ScalerStep up = inactive_at_300(cfg).reconcile(330, ScaleResult{10, 0, 2, true, false}, 1);
  EXPECT_EQ(up.replicas, 10);
  EXPECT_EQ(up.requeue_after_s, -1.0);
  EXPECT_FALSE(up.probe_activator);
}

// The per-revision progress deadline (kpa/scaler.go handleScaleToZero: pa.ProgressDeadline() + activationTimeoutBuffer)
// and the TimedOut reason of kpa.go computeActiveCondition.
TEST(UpstreamParity, RevisionProgressDeadline) {
  const KpaConfig cfg = scaler_test_config();
  KpaRevision rev;
  rev.progress_deadline_s = 5;
  KpaScaler sc(cfg, rev, 0.0, 1);
  EXPECT_EQ(sc.activation_timeout_s(), 35.0);
  EXPECT_EQ(KpaScaler(cfg, {}, 0.0, 1).activation_timeout_s(), 630.0);
  // Before the revision's deadline: nothing applied, look again after the whole (per-revision) timeout.
  ScalerStep st = sc.reconcile(20, kZero, 0);
  EXPECT_EQ(st.want, -1);
  EXPECT_FALSE(st.applied);
  EXPECT_EQ(st.requeue_after_s, 35.0);
  EXPECT_EQ(st.state, PaState::kActivating);
  EXPECT_STREQ(st.reason, "Queued");
  EXPECT_FALSE(sc.reconcile(35, kZero, 0).applied);  // exactly the timeout: CanFailActivation is strict
  // kpa/kpa_test.go:TestReconcile/activation failure: scaled to 0, Active=False with TimedOut.
  st = sc.reconcile(36, kZero, 0);
  EXPECT_TRUE(st.applied);
  EXPECT_EQ(st.replicas, 0);
  EXPECT_EQ(st.state, PaState::kInactive);
  EXPECT_STREQ(st.reason, "TimedOut");
  EXPECT_STREQ(sc.state_reason(), "TimedOut");
  EXPECT_EQ(sc.state_since(), 36.0);
  // The next reconcile at zero marks it NoTraffic (MarkInactive again), without a new transition.
  st = sc.reconcile(40, kZero, 0);
  EXPECT_STREQ(st.reason, "NoTraffic");
  EXPECT_EQ(sc.state_since(), 36.0);
  // An active PA that goes to zero is NoTraffic, never TimedOut.
  KpaScaler active = active_at_zero(cfg, rev);
  EXPECT_STREQ(active.state_reason(), "");
  EXPECT_STREQ(active.reconcile(300, kZero, 1).reason, "NoTraffic");
  // The annotation round-trips through JSON and is validated.
  EXPECT_EQ(KpaRevision::from_json(rev.to_json()).progress_deadline_s, 5.0);
  rev.progress_deadline_s = 0;
  EXPECT_THROW(rev.validate(), kubetune::InvalidArgument);
}
