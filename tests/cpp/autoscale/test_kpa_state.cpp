// Snapshots of the KPA state machines: a restored decider / scaler / autoscaler continues decision for decision
// as the original; the states the issue names are settable and behave as upstream's tests expect; bad states
// are refused with the field and value named, leaving the object unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "../error_of.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;

namespace {


void expect_same(const ScaleResult& a, const ScaleResult& b, const std::string& where) {
  EXPECT_EQ(a.desired_pod_count, b.desired_pod_count) << where;
  EXPECT_EQ(a.excess_burst_capacity, b.excess_burst_capacity) << where;
  EXPECT_EQ(a.num_activators, b.num_activators) << where;
  EXPECT_EQ(a.scale_valid, b.scale_valid) << where;
  EXPECT_EQ(a.panicking, b.panicking) << where;
}

void expect_same(const ScalerStep& a, const ScalerStep& b, const std::string& where) {
  EXPECT_EQ(a.want, b.want) << where;
  EXPECT_EQ(a.applied, b.applied) << where;
  EXPECT_EQ(a.replicas, b.replicas) << where;
  EXPECT_EQ(a.proxy_mode, b.proxy_mode) << where;
  EXPECT_EQ(a.state, b.state) << where;
  EXPECT_STREQ(a.reason, b.reason) << where;
  EXPECT_EQ(a.requeue_after_s, b.requeue_after_s) << where;
  EXPECT_EQ(a.probe_activator, b.probe_activator) << where;
}

// One decider input per 2 s tick: a load that surges (panic), falls back and drops to zero (delay window).
struct DeciderInput {
  double t;
  std::int32_t ready;
  double stable, panic;
};
std::vector<DeciderInput> decider_script() {
  std::vector<DeciderInput> in;
  std::int32_t ready = 1;
  for (int k = 0; k < 90; ++k) {
    const double load = k < 20 ? 50.0 + 10.0 * k : k < 45 ? 900.0 - 30.0 * (k - 20) : k < 60 ? 120.0 : 0.0;
    in.push_back({2.0 * k, ready, load * 0.8, load});
    ready = std::max<std::int32_t>(1, static_cast<std::int32_t>(load / 70.0));  // pods follow the load late
  }
  return in;
}

}  // namespace

// Snapshot after every step k, restore into a fresh decider (through JSON), and run the rest on both.
TEST(KpaState, RestoredDeciderDecidesAsTheOriginal) {
  DeciderSpec spec = make_decider_spec(KpaConfig{}, KpaRevision{});
  spec.scale_down_delay_s = 20;
  spec.stable_window_s = 30;
  const std::vector<DeciderInput> in = decider_script();
  bool saw_panic = false, saw_delay = false;
  for (std::size_t k = 0; k < in.size(); k += 3) {
    KpaDecider original(spec, 0, 0.0);
    for (std::size_t i = 0; i < k; ++i) original.decide(in[i].t, in[i].ready, in[i].stable, in[i].panic);
    const KpaDecider::State s = original.snapshot();
    saw_panic = saw_panic || s.panicking;
    saw_delay = saw_delay || s.delay_window.size() > 1;
    KpaDecider restored(spec, 7, 1000.0);  // a start state that differs, to be replaced
    restored.restore(KpaDecider::State::from_json(s.to_json()));
    EXPECT_EQ(restored.snapshot().to_json(), s.to_json());
    for (std::size_t i = k; i < in.size(); ++i)
      expect_same(restored.decide(in[i].t, in[i].ready, in[i].stable, in[i].panic),
                  original.decide(in[i].t, in[i].ready, in[i].stable, in[i].panic),
                  "split " + std::to_string(k) + ", step " + std::to_string(i));
  }
  EXPECT_TRUE(saw_panic);  // the splits cover a panicking decider and a delay window with several maxima
  EXPECT_TRUE(saw_delay);
}

TEST(KpaState, DeciderStateIsSettable) {
  const DeciderSpec spec = make_decider_spec(KpaConfig{}, KpaRevision{});  // target 70 per pod, stable window 60 s
  // Panicking since t = 100 holding 9 pods: a small load keeps the 9 until a stable window has passed; then the
  // scale-down limit floor(9 / 2) applies. A fresh decider would drop to 4 at once.
  KpaDecider d(spec);
  d.restore(KpaDecider::State{true, 100.0, 9, {}});
  EXPECT_TRUE(d.panicking());
  EXPECT_EQ(d.panic_time(), 100.0);
  EXPECT_EQ(d.decide(102, 9, 70, 70).desired_pod_count, 9);
  EXPECT_EQ(d.decide(160, 9, 70, 70).desired_pod_count, 9);  // 100 + 60 is not yet passed
  const ScaleResult r = d.decide(161, 9, 70, 70);
  EXPECT_FALSE(r.panicking);
  EXPECT_EQ(r.desired_pod_count, 4);
  EXPECT_EQ(KpaDecider(spec).decide(102, 9, 70, 70).desired_pod_count, 4);
  // A scale-down delay of 10 s (5 slots of 2 s) holding 9 from t = 96 and 5 from t = 98: the maxima leave
  // the window slot by slot.
  DeciderSpec delayed = spec;
  delayed.scale_down_delay_s = 10;
  KpaDecider w(delayed);
  w.restore(KpaDecider::State{false, 0.0, 0, {{96.0, 9}, {98.0, 5}}});
  EXPECT_EQ(w.decide(100, 9, 70, 70).desired_pod_count, 9);
  EXPECT_EQ(w.decide(106, 9, 70, 70).desired_pod_count, 5);
  EXPECT_EQ(w.decide(108, 9, 70, 70).desired_pod_count, 4);
}

namespace {

struct ScalerInput {
  double t;
  ScaleResult decision;
  std::int32_t ready;
  std::optional<bool> probe;
};
ScaleResult want(std::int32_t pods, std::int32_t ebc = 0) { return ScaleResult{pods, ebc, 2, pods >= 0, false}; }

// Splits a scripted run at every step: the restored scaler (snapshot through JSON) answers as the original.
void check_scaler_continuity(const KpaConfig& cfg, const KpaRevision& rev, std::int32_t start_replicas,
                             const std::vector<ScalerInput>& in, const std::string& name) {
  for (std::size_t k = 0; k <= in.size(); ++k) {
    KpaScaler original(cfg, rev, 0.0, start_replicas);
    for (std::size_t i = 0; i < k; ++i) original.reconcile(in[i].t, in[i].decision, in[i].ready, in[i].probe);
    KpaScaler restored(cfg, rev, -500.0, 3);
    restored.restore(KpaScaler::State::from_json(original.snapshot().to_json()));
    EXPECT_EQ(restored.snapshot().to_json(), original.snapshot().to_json()) << name;
    for (std::size_t i = k; i < in.size(); ++i)
      expect_same(restored.reconcile(in[i].t, in[i].decision, in[i].ready, in[i].probe),
                  original.reconcile(in[i].t, in[i].decision, in[i].ready, in[i].probe),
                  name + ": split " + std::to_string(k) + ", step " + std::to_string(i));
  }
}

}  // namespace

TEST(KpaState, RestoredScalerReconcilesAsTheOriginal) {
  KpaConfig cfg;
  cfg.stable_window_s = 60;
  cfg.scale_to_zero_grace_period_s = 30;
  // Activation, active, scale to zero through the grace period with a failed then a good activator probe.
  check_scaler_continuity(cfg, {}, 1,
                          {{0, want(1), 0, {}},   {5, want(1), 1, {}},     {30, want(0), 1, {}},
                           {66, want(0), 1, {}},  {70, want(1, -5), 1, {}}, {80, want(0), 1, false},
                           {90, want(0), 1, {}},  {100, want(0), 1, true}, {130, want(0), 0, true},
                           {140, want(-1), 0, {}}, {150, want(3), 0, {}},   {160, want(3), 3, {}}},
                          "scale-to-zero lifecycle");
  // Per-revision progress deadline: stuck activating past 5 s + 30 s, timed out, then NoTraffic.
  KpaRevision deadline;
  deadline.progress_deadline_s = 5;
  check_scaler_continuity(cfg, deadline, 1,
                          {{0, want(0), 0, {}}, {20, want(0), 0, {}}, {36, want(0), 0, {}}, {40, want(0), 0, {}},
                           {50, want(2), 1, {}}, {60, want(2), 2, {}}},
                          "progress deadline");
  // Min-scale 3 with scale-to-zero wanted: never below 3; initial scale 5 is a floor until reached once.
  KpaRevision bounds;
  bounds.min_scale = 3;
  bounds.initial_scale = 5;
  check_scaler_continuity(cfg, bounds, -1,
                          {{0, want(0), 2, {}}, {10, want(-1), 4, {}}, {20, want(1), 5, {}}, {30, want(0), 5, {}},
                           {100, want(0), 2, {}}, {110, want(8), 3, {}}},
                          "min and initial scale");
}

TEST(KpaState, RestoredAutoscalerTicksAsTheOriginal) {
  for (const Aggregation agg : {Aggregation::kLinear, Aggregation::kWeightedExponential}) {
    KpaConfig cfg;
    cfg.stable_window_s = 20;
    cfg.scale_down_delay_s = 8;
    cfg.scale_to_zero_grace_period_s = 6;
    KpaRevision rev;
    rev.aggregation = agg;
    rev.container_concurrency = 10;
    const auto run = [](KpaAutoscaler& a, int from, int to, std::vector<ScalerStep>* out) {
      for (int k = from; k < to; ++k) {
        const double t = 2.0 * k;
        const double conc = k < 15 ? 3.0 * k : k < 30 ? 40.0 : 0.0;
        if (conc > 0) a.record(Stat{t, conc, 0.25 * conc, 2.0 * conc, 0.0});
        const ScalerStep st = a.tick(t, std::max(1, static_cast<int>(conc / 7)));
        if (out) out->push_back(st);
      }
    };
    for (int split = 0; split < 60; split += 4) {
      KpaAutoscaler original(cfg, rev);
      run(original, 0, split, nullptr);
      KpaAutoscaler restored(cfg, rev, 77.0, 4);
      restored.restore(KpaAutoscaler::State::from_json(original.snapshot().to_json()));
      std::vector<ScalerStep> a, b;
      run(original, split, 60, &a);
      run(restored, split, 60, &b);
      for (std::size_t i = 0; i < a.size(); ++i)
        expect_same(b[i], a[i], "split " + std::to_string(split) + ", tick " + std::to_string(i));
      expect_same(restored.last_decision(), original.last_decision(), "last decision");
      const KpaMetricCollector::Observed o1 = original.collector().concurrency(120);
      const KpaMetricCollector::Observed o2 = restored.collector().concurrency(120);
      EXPECT_EQ(o1.stable, o2.stable);
      EXPECT_EQ(o1.panic, o2.panic);
    }
  }
}

namespace {
// knative pkg/reconciler/autoscaling/kpa/kpa_test.go TestReconcile: defaultScale = 11 = minScale, underscale = 10,
// overscale = 12 (ready pods and deployment replicas alike).
constexpr std::int32_t kMinScale = 11;
KpaScaler min_scale_pa(PaState state, const char* reason, std::int32_t replicas, bool proxy) {
  KpaRevision rev;
  rev.min_scale = kMinScale;
  KpaScaler sc(KpaConfig{}, rev, 0.0, replicas);
  // The reconciler reads the PA's status back: state, ScaleTargetInitialized (true in these rows), SKS mode.
  sc.restore(KpaScaler::State{state, reason, 0.0, true, proxy, 0.0, replicas});
  return sc;
}
}  // namespace

TEST(KpaState, InactiveWithMinScaleAsUpstream) {
  const char* f = "kpa/kpa_test.go:TestReconcile/";
  struct Row {
    const char* upstream;
    PaState start;
    const char* start_reason;
    std::int32_t ready;  // = the deployment's replicas
    std::int32_t desired;
    std::int32_t want_replicas;  // after the step (a patch to 11, or none)
    bool want_patch;
    PaState want_state;
    bool want_proxy;
  };
  const std::vector<Row> rows = {
      {"want=-1, underscaled, PA inactive", PaState::kInactive, "NoTraffic", 10, -1, 10, false, PaState::kInactive,
       true},
      {"want=1, underscaled, PA inactive", PaState::kInactive, "NoTraffic", 10, 1, 11, true, PaState::kActivating,
       false},
      {"underscaled, PA activating", PaState::kActivating, "Queued", 10, 2, 11, true, PaState::kActivating, false},
      {"underscaled, PA active", PaState::kActive, "", 10, 11, 11, true, PaState::kActivating, false},
      {"overscaled, PA inactive", PaState::kInactive, "NoTraffic", 12, 0, 11, true, PaState::kActive, false},
      // Upstream's row of this name starts from an inactive PA too (inactiveKPAMinScale(overscale)).
      {"overscaled, PA activating", PaState::kInactive, "NoTraffic", 12, 1, 11, true, PaState::kActive, false},
      {"over maxScale, need to scale down, PA active", PaState::kActive, "", 12, 1, 11, true, PaState::kActive, false},
  };
  for (const Row& r : rows) {
    KpaScaler sc = min_scale_pa(r.start, r.start_reason, r.ready, r.start == PaState::kInactive);
    const ScalerStep st = sc.reconcile(10.0, want(r.desired), r.ready);
    EXPECT_EQ(st.replicas, r.want_replicas) << f << r.upstream;
    EXPECT_EQ(st.applied, r.want_patch) << f << r.upstream;
    EXPECT_EQ(st.state, r.want_state) << f << r.upstream;
    EXPECT_EQ(st.proxy_mode, r.want_proxy) << f << r.upstream;
  }
}

TEST(KpaState, ActiveBeforeInitialScaleReached) {
  // A PA whose status says Active but not ScaleTargetInitialized (initial scale 20 never reached): the
  // threshold is max(min-scale, initial scale) (kpa.go activeThreshold), so with 11 ready pods it goes back to
  // Activating and the deployment is raised to the initial scale
  // (kpa_test.go:TestReconcile/initial scale > minScale, have not reached initial scale, PA still activating).
  KpaRevision rev;
  rev.min_scale = kMinScale;
  rev.initial_scale = 20;
  KpaScaler sc(KpaConfig{}, rev, 0.0, 11);
  sc.restore(KpaScaler::State{PaState::kActive, "", 0.0, false, false, 0.0, 11});
  ScalerStep st = sc.reconcile(5, want(11, -42), 11);
  EXPECT_EQ(st.replicas, 20);
  EXPECT_EQ(st.state, PaState::kActivating);
  EXPECT_STREQ(st.reason, "Queued");
  EXPECT_FALSE(sc.scale_target_initialized());
  // kpa_test.go:TestReconcile/initial scale reached, mark PA as active: 20 ready pods initialise the target.
  st = sc.reconcile(6, want(11, -42), 20);
  EXPECT_EQ(st.replicas, 20);
  EXPECT_EQ(st.state, PaState::kActive);
  EXPECT_TRUE(sc.scale_target_initialized());
  // Once initialised the bound is min-scale again: the decider's 11 applies.
  EXPECT_EQ(sc.reconcile(7, want(11), 20).replicas, 11);
}

TEST(KpaState, StatesSetAsUpstreamsScalerTests) {
  // kpa/kpa_test.go constants of scaler_test.go: stable window 5 min, grace period 60 s. Upstream's rows set the
  // PA's condition directly (paMarkInactive / paMarkActivating at now - d); so does restore().
  KpaConfig cfg;
  cfg.stable_window_s = 300;
  cfg.scale_to_zero_grace_period_s = 60;
  const char* f = "kpa/scaler_test.go:TestScaler/";
  const auto pa = [&](PaState s, const char* reason, double since, bool proxy, const KpaRevision& rev = {}) {
    KpaScaler sc(cfg, rev, 0.0, 1);
    sc.restore(KpaScaler::State{s, reason, since, true, proxy, since, 1});
    return sc;
  };
  const double now = 1000;
  // Inactive for the whole grace period, the SKS not proxying and the probe failing: no scale, probe again.
  ScalerStep st = pa(PaState::kInactive, "NoTraffic", now - 60, false).reconcile(now, want(0), 1, false);
  EXPECT_EQ(st.want, 0) << f << "scale to zero after grace period, but fail prober";
  EXPECT_FALSE(st.applied) << f << "scale to zero after grace period, but fail prober";
  EXPECT_TRUE(st.probe_activator) << f << "scale to zero after grace period, but fail prober";
  // The same PA with the probe succeeding scales to zero.
  st = pa(PaState::kInactive, "NoTraffic", now - 60, true).reconcile(now, want(0), 1, true);
  EXPECT_TRUE(st.applied) << f << "scale to zero after grace period";
  EXPECT_EQ(st.replicas, 0) << f << "scale to zero after grace period";
  // Activating past the revision's progress deadline (5 s + 30 s buffer + 1 s): scaled to zero, TimedOut.
  KpaRevision deadline;
  deadline.progress_deadline_s = 5;
  st = pa(PaState::kActivating, "Queued", now - 36, false, deadline).reconcile(now, want(0), 0);
  EXPECT_TRUE(st.applied) << f << "scale to zero while activating after revision deadline exceeded";
  EXPECT_EQ(st.replicas, 0);
  EXPECT_EQ(st.state, PaState::kInactive);
  EXPECT_STREQ(st.reason, "TimedOut");
  // Activating for less than the default 630 s: nothing applied, look again after the whole timeout.
  st = pa(PaState::kActivating, "Queued", now - 315, false).reconcile(now, want(0), 0);
  EXPECT_EQ(st.want, -1) << f << "waits to scale to zero while activating until after deadline exceeded";
  EXPECT_EQ(st.requeue_after_s, 630.0) << f << "waits to scale to zero while activating until after deadline exceeded";
  // Active for just under the stable window: keep one pod and come back when it ends.
  st = pa(PaState::kActive, "", now - 299, false).reconcile(now, want(0), 1);
  EXPECT_EQ(st.want, 1) << f << "waits to scale to zero (just before idle period)";
  EXPECT_EQ(st.requeue_after_s, 1.0) << f << "waits to scale to zero (just before idle period)";
}

TEST(KpaState, BadStatesAreRefusedAndChangeNothing) {
  const std::string good = KpaScaler(KpaConfig{}, KpaRevision{}).snapshot().to_json();
  EXPECT_EQ(good,
            R"({"pa_state":"activating","proxy_mode":false,"proxy_since_s":0.0,"reason":"","replicas":1,)"
            R"("scale_target_initialized":false,"since_s":0.0})");
  const auto scaler_error = [](const std::string& json) {
    return error_of([&] { KpaScaler::State::from_json(json); });
  };
  EXPECT_NE(scaler_error("[1]").find("must be an object"), std::string::npos);
  EXPECT_NE(scaler_error(R"({"pa_state":"active"})").find("missing key 'reason'"), std::string::npos);
  std::string bad = good;
  bad.insert(1, R"("extra":1,)");
  EXPECT_NE(scaler_error(bad).find("unknown key 'extra'"), std::string::npos);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return scaler_error(s);
  };
  EXPECT_NE(with(R"("replicas":1)", R"("replicas":-2)").find("replicas = -2 must be in [0, 2147483647]"),
            std::string::npos);
  EXPECT_NE(with(R"("replicas":1)", R"("replicas":1.5)").find("replicas = 1.5 must be an integer"),
            std::string::npos);
  EXPECT_NE(with(R"("pa_state":"activating")", R"("pa_state":"ready")").find("pa_state = 'ready'"),
            std::string::npos);
  EXPECT_NE(with(R"("since_s":0.0)", R"("since_s":"x")").find("since_s = \"x\" must be a finite number"),
            std::string::npos);
  EXPECT_NE(with(R"("proxy_mode":false)", R"("proxy_mode":1)").find("proxy_mode = 1 must be true or false"),
            std::string::npos);
  EXPECT_NE(with(R"("reason":"")", R"("reason":"TimedOut")").find("reason = 'TimedOut' is not a reason of pa_state"),
            std::string::npos);
  // TBC = -1 keeps the SKS in proxy mode: a state out of it is refused, and the scaler keeps its own.
  KpaRevision unlimited;
  unlimited.target_burst_capacity = -1;
  KpaScaler sc(KpaConfig{}, unlimited);
  const std::string before = sc.snapshot().to_json();
  EXPECT_NE(error_of([&] { sc.restore(KpaScaler::State{PaState::kActive, "", 0, true, false, 0, 2}); })
                .find("proxy_mode = false, but target burst capacity -1"),
            std::string::npos);
  EXPECT_EQ(sc.snapshot().to_json(), before);

  // Decider: ranges, and the delay window checked against the spec.
  EXPECT_NE(error_of([] { KpaDecider::State::from_json(R"({"panicking":true,"panic_time_s":0,"max_panic_pods":-1,)"
                                                         R"("delay_window":[]})"); })
                .find("max_panic_pods = -1"),
            std::string::npos);
  EXPECT_NE(error_of([] { KpaDecider::State::from_json(R"({"panicking":true,"panic_time_s":0,"max_panic_pods":1,)"
                                                         R"("delay_window":[{"time_s":3,"pods":1}]})"); })
                .find("delay_window[0].time_s = 3 must be a multiple of the 2 s tick"),
            std::string::npos);
  DeciderSpec spec = make_decider_spec(KpaConfig{}, KpaRevision{});
  KpaDecider no_delay(spec);
  EXPECT_NE(error_of([&] { no_delay.restore(KpaDecider::State{false, 0, 0, {{0.0, 1}}}); })
                .find("scale_down_delay_s = 0 keeps none"),
            std::string::npos);
  spec.scale_down_delay_s = 6;  // 3 slots of 2 s
  KpaDecider d(spec, 4, 50.0);
  const std::string d_before = d.snapshot().to_json();
  EXPECT_NE(error_of([&] { d.restore(KpaDecider::State{false, 0, 0, {{0.0, 5}, {2.0, 5}}}); })
                .find("must be newer and smaller"),
            std::string::npos);
  EXPECT_NE(error_of([&] { d.restore(KpaDecider::State{false, 0, 0, {{0.0, 5}, {6.0, 4}}}); })
                .find("span more than the window's 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { d.restore(KpaDecider::State{false, 0, 0, {{0, 4}, {2, 3}, {4, 2}, {6, 1}}}); })
                .find("4 entries, the window holds at most 3"),
            std::string::npos);
  EXPECT_EQ(d.snapshot().to_json(), d_before);

  // Collector / autoscaler: a window of another length, and an error deep inside names its path.
  KpaAutoscaler a(KpaConfig{}, KpaRevision{});
  KpaConfig short_window;
  short_window.stable_window_s = 30;
  const KpaAutoscaler::State other = KpaAutoscaler(short_window, KpaRevision{}).snapshot();
  const std::string a_before = a.snapshot().to_json();
  EXPECT_NE(error_of([&] { a.restore(other); }).find("concurrency_stable: buckets has 30 values, the window has 60"),
            std::string::npos);
  EXPECT_EQ(a.snapshot().to_json(), a_before);
  std::string deep = a_before;
  const std::string key = R"("proxy_since_s":0.0)";
  deep.replace(deep.find(key), key.size(), R"("proxy_since_s":null)");
  EXPECT_NE(error_of([&] { KpaAutoscaler::State::from_json(deep); })
                .find("KpaAutoscaler state.scaler.proxy_since_s = null must be a finite number"),
            std::string::npos);
  EXPECT_NE(error_of([] { KpaAutoscaler::State::from_json("{not json"); }).find("KpaAutoscaler state JSON"),
            std::string::npos);
  // Deep nesting is refused before anything walks it (the project's user-JSON limits).
  const std::string deep_nest = R"({"reason":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(error_of([&] { KpaScaler::State::from_json(deep_nest); }).find("KpaScaler state JSON"),
            std::string::npos);
}
