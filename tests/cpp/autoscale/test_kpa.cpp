// Tests of the Knative KPA rules: config defaults/validation, targets, decider (panic, rates, delay, EBC), scaler.
#include <gtest/gtest.h>

#include <limits>

#include <random>
#include <string>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "../error_of.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;

namespace {
DeciderSpec spec_default() { return make_decider_spec(KpaConfig{}, KpaRevision{}); }
}  // namespace

TEST(KpaConfig, UpstreamDefaults) {
  KpaConfig c;
  EXPECT_TRUE(c.enable_scale_to_zero);
  EXPECT_EQ(c.container_concurrency_target_fraction, 0.7);
  EXPECT_EQ(c.container_concurrency_target_default, 100.0);
  EXPECT_EQ(c.rps_target_default, 200.0);
  EXPECT_EQ(c.target_burst_capacity, 211.0);
  EXPECT_EQ(c.max_scale_up_rate, 1000.0);
  EXPECT_EQ(c.max_scale_down_rate, 2.0);
  EXPECT_EQ(c.stable_window_s, 60.0);
  EXPECT_EQ(c.panic_window_percent, 10.0);
  EXPECT_EQ(c.panic_threshold_percent, 200.0);
  EXPECT_EQ(c.activator_capacity, 100.0);
  EXPECT_EQ(c.scale_to_zero_grace_period_s, 30.0);
  EXPECT_EQ(c.scale_to_zero_pod_retention_period_s, 0.0);
  EXPECT_EQ(c.scale_down_delay_s, 0.0);
  EXPECT_EQ(c.initial_scale, 1);
  EXPECT_NO_THROW(c.validate());
  const DeciderSpec s = spec_default();
  EXPECT_DOUBLE_EQ(s.target_value, 70.0);
  EXPECT_DOUBLE_EQ(s.total_value, 100.0);
  EXPECT_DOUBLE_EQ(s.panic_threshold, 2.0);
  EXPECT_DOUBLE_EQ(s.panic_window_s, 6.0);
}

TEST(KpaConfig, ValidationNamesTheKey) {
  auto bad = [](auto mutate) {
    KpaConfig c;
    mutate(c);
    return error_of([&] { c.validate(); });
  };
  EXPECT_NE(bad([](KpaConfig& c) { c.scale_to_zero_grace_period_s = 5; }).find("scale-to-zero-grace-period"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.scale_down_delay_s = -1; }).find("scale-down-delay"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.scale_down_delay_s = 1.5; }).find("second precision"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.target_burst_capacity = -2; }).find("target-burst-capacity"), std::string::npos);
  EXPECT_EQ(bad([](KpaConfig& c) { c.target_burst_capacity = -1; }), "");
  EXPECT_EQ(bad([](KpaConfig& c) { c.target_burst_capacity = 0; }), "");
  EXPECT_NE(bad([](KpaConfig& c) { c.container_concurrency_target_fraction = 1.5; }).find("container-concurrency-target-percentage"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.max_scale_up_rate = 1.0; }).find("max-scale-up-rate"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.max_scale_down_rate = 0.5; }).find("max-scale-down-rate"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.stable_window_s = 5; }).find("stable-window"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.stable_window_s = 3601; }).find("stable-window"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.stable_window_s = 60.5; }).find("second precision"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.panic_window_percent = 0.5; }).find("panic-window-percentage"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.panic_threshold_percent = 100; }).find("panic-threshold-percentage"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.activator_capacity = 0.5; }).find("activator-capacity"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.initial_scale = 0; }).find("initial-scale"), std::string::npos);
  EXPECT_EQ(bad([](KpaConfig& c) { c.initial_scale = 0; c.allow_zero_initial_scale = true; }), "");
  EXPECT_NE(bad([](KpaConfig& c) { c.max_scale_limit = 10; c.max_scale = 11; }).find("max-scale"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.max_scale_limit = 10; c.max_scale = 0; }).find("max-scale"), std::string::npos);
  EXPECT_NE(bad([](KpaConfig& c) { c.rps_target_default = 0.001; }).find("requests-per-second-target-default"), std::string::npos);
}

TEST(KpaConfig, ConfigMapAndJson) {
  const KpaConfig c = KpaConfig::from_configmap({{"container-concurrency-target-percentage", "80"},
                                                 {"stable-window", "1m30s"},
                                                 {"scale-to-zero-grace-period", "45s"},
                                                 {"target-burst-capacity", "-1"},
                                                 {"enable-scale-to-zero", "false"},
                                                 {"pod-autoscaler-class", "kpa.autoscaling.knative.dev"}});
  EXPECT_DOUBLE_EQ(c.container_concurrency_target_fraction, 0.8);
  EXPECT_DOUBLE_EQ(c.stable_window_s, 90.0);
  EXPECT_DOUBLE_EQ(c.scale_to_zero_grace_period_s, 45.0);
  EXPECT_EQ(c.target_burst_capacity, -1.0);
  EXPECT_FALSE(c.enable_scale_to_zero);
  EXPECT_DOUBLE_EQ(KpaConfig::from_configmap({{"container-concurrency-target-percentage", "0.5"}})
                       .container_concurrency_target_fraction, 0.5);
  EXPECT_THROW(KpaConfig::from_configmap({{"stable-window", "abc"}}), InvalidArgument);
  EXPECT_THROW(KpaConfig::from_configmap({{"stable-window", "2s"}}), InvalidArgument);
  const KpaConfig back = KpaConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_THROW(KpaConfig::from_json("{\"no_such_key\": 1}"), InvalidArgument);
  KpaRevision r;
  r.metric = ScalingMetric::kRps;
  r.target = 42;
  r.min_scale = 2;
  EXPECT_EQ(KpaRevision::from_json(r.to_json()).to_json(), r.to_json());
}

TEST(KpaTargets, ResolveMetricTarget) {
  KpaConfig c;
  KpaRevision r;
  MetricTarget t = resolve_metric_target(c, r);
  EXPECT_DOUBLE_EQ(t.target, 70.0);
  EXPECT_DOUBLE_EQ(t.total, 100.0);
  r.container_concurrency = 10;
  t = resolve_metric_target(c, r);
  EXPECT_DOUBLE_EQ(t.target, 7.0);
  EXPECT_DOUBLE_EQ(t.total, 10.0);
  r.target = 50;  // capped by containerConcurrency
  t = resolve_metric_target(c, r);
  EXPECT_DOUBLE_EQ(t.total, 10.0);
  r.container_concurrency = 0;
  r.target_utilization_percent = 50;
  t = resolve_metric_target(c, r);
  EXPECT_DOUBLE_EQ(t.target, 25.0);
  KpaRevision rps;
  rps.metric = ScalingMetric::kRps;
  t = resolve_metric_target(c, rps);
  EXPECT_DOUBLE_EQ(t.total, 200.0);
  EXPECT_DOUBLE_EQ(t.target, 140.0);
  KpaRevision tiny;
  tiny.target = 0.01;
  EXPECT_DOUBLE_EQ(resolve_metric_target(c, tiny).target, 0.01);  // floored at TargetMin
  // Initial scale: a revision's 0 is ignored unless zero initial scale is allowed.
  KpaRevision z;
  z.initial_scale = 0;
  EXPECT_EQ(resolve_initial_scale(c, z), 1);
  c.allow_zero_initial_scale = true;
  EXPECT_EQ(resolve_initial_scale(c, z), 0);
}

TEST(KpaDecider, StableDecisionAndRateLimits) {
  DeciderSpec s = spec_default();
  KpaDecider d(s);
  ScaleResult r = d.decide(0, 10, 700, 700);
  EXPECT_TRUE(r.scale_valid);
  EXPECT_EQ(r.desired_pod_count, 10);
  EXPECT_FALSE(r.panicking);
  r = d.decide(2, 10, 701, 701);
  EXPECT_EQ(r.desired_pod_count, 11);  // ceil(701 / 70)
  // Scale-down limited to floor(ready / 2).
  r = d.decide(4, 10, 0, 0);
  EXPECT_EQ(r.desired_pod_count, 5);
  // Unreachable revisions have no scale-down bound.
  s.reachable = false;
  KpaDecider u(s);
  EXPECT_EQ(u.decide(0, 10, 0, 0).desired_pod_count, 0);
  // Scale-up limited to ceil(rate * ready), computed with at least one ready pod.
  s = spec_default();
  s.max_scale_up_rate = 10;
  s.panic_threshold = 1000;  // keep panic out of the way
  KpaDecider up(s);
  EXPECT_EQ(up.decide(0, 2, 7000, 7000).desired_pod_count, 20);
  EXPECT_EQ(up.decide(2, 0, 7000, 7000).desired_pod_count, 10);
  // Upstream's example: MSUR = 1.1, 2 ready, observed 3, target 1 -> 3 pods (ceil keeps progress).
  s.max_scale_up_rate = 1.1;
  s.target_value = 1;
  KpaDecider slow(s);
  EXPECT_EQ(slow.decide(0, 2, 3, 3).desired_pod_count, 3);
}

TEST(KpaDecider, PanicEntryExtensionAndExit) {
  KpaDecider d(spec_default());
  // 2 ready, panic window says ceil(350/70) = 5 -> 5/2 = 2.5 >= 2.0: panic.
  ScaleResult r = d.decide(100, 2, 100, 350);
  EXPECT_TRUE(r.panicking);
  EXPECT_EQ(r.desired_pod_count, 5);
  EXPECT_EQ(d.panic_time(), 100);
  // Still panicking: the count never goes down even when both windows drop.
  r = d.decide(110, 5, 70, 70);
  EXPECT_TRUE(r.panicking);
  EXPECT_EQ(r.desired_pod_count, 5);
  // Over the threshold again (ceil(770/70) = 11, 11/5 >= 2): the panic window is extended to now.
  r = d.decide(120, 5, 100, 770);
  EXPECT_EQ(d.panic_time(), 120);
  EXPECT_EQ(r.desired_pod_count, 11);
  // The stable window dominates if it is larger than the panic one.
  r = d.decide(122, 11, 1400, 70);
  EXPECT_EQ(r.desired_pod_count, 20);
  // Exactly one stable window after the last over-threshold tick: still panicking (strictly after).
  r = d.decide(180, 20, 70, 70);
  EXPECT_TRUE(r.panicking);
  EXPECT_EQ(r.desired_pod_count, 20);
  // After it: stable mode, scale-down allowed (bounded by floor(20 / 2)).
  r = d.decide(182, 20, 70, 70);
  EXPECT_FALSE(r.panicking);
  EXPECT_EQ(r.desired_pod_count, 10);
  EXPECT_EQ(d.max_panic_pods(), 0);
}

TEST(KpaDecider, PanicThresholdBoundaryAndStartInPanic) {
  KpaDecider d(spec_default());
  // ceil(280/70) = 4, 4 / 2 = 2.0 >= 2.0 -> panic (threshold is inclusive).
  EXPECT_TRUE(d.decide(0, 2, 0, 280).panicking);
  KpaDecider e(spec_default());
  EXPECT_FALSE(e.decide(0, 2, 0, 210).panicking);  // 3 / 2 = 1.5
  // A decider created with more than one ready pod starts in panic and holds that count.
  KpaDecider f(spec_default(), 8, 50.0);
  EXPECT_TRUE(f.panicking());
  ScaleResult r = f.decide(52, 8, 0, 0);
  EXPECT_EQ(r.desired_pod_count, 8);
  r = f.decide(112, 8, 0, 0);  // 50 + 60 < 112: out of panic
  EXPECT_FALSE(r.panicking);
  EXPECT_EQ(r.desired_pod_count, 4);
  KpaDecider g(spec_default(), 1, 0.0);
  EXPECT_FALSE(g.panicking());
}

TEST(KpaDecider, ScaleDownDelayHoldsTheMaximum) {
  DeciderSpec s = spec_default();
  s.scale_down_delay_s = 10;
  s.max_scale_down_rate = 100;
  KpaDecider d(s);
  EXPECT_EQ(d.decide(0, 10, 700, 700).desired_pod_count, 10);
  EXPECT_EQ(d.decide(2, 10, 70, 70).desired_pod_count, 10);  // delayed
  EXPECT_EQ(d.decide(8, 10, 70, 70).desired_pod_count, 10);
  EXPECT_EQ(d.decide(10, 10, 70, 70).desired_pod_count, 1);  // the 10 left the 10 s window
  // Scale-up is never delayed.
  EXPECT_EQ(d.decide(12, 1, 700, 100).desired_pod_count, 10);
}

TEST(KpaDecider, ExcessBurstCapacityAndActivators) {
  DeciderSpec s = spec_default();  // TBC 211, total 100
  KpaDecider d(s);
  ScaleResult r = d.decide(0, 5, 300, 300);
  EXPECT_EQ(r.excess_burst_capacity, 500 - 211 - 300);  // -11: activator goes in the path
  EXPECT_EQ(r.num_activators, 8);                        // ceil((5*100 + 211) / 100)
  r = d.decide(2, 10, 300, 300.5);
  EXPECT_EQ(r.excess_burst_capacity, 488);  // floor(1000 - 211 - 300.5)
  s.target_burst_capacity = 0;
  KpaDecider z(s);
  r = z.decide(0, 5, 300, 300);
  EXPECT_EQ(r.excess_burst_capacity, 0);
  EXPECT_EQ(r.num_activators, kMinActivators);
  s.target_burst_capacity = -1;
  KpaDecider inf(s);
  r = inf.decide(0, 10, 300, 300);
  EXPECT_EQ(r.excess_burst_capacity, -1);
  EXPECT_EQ(r.num_activators, 10);  // ceil(10 * 100 / 100), no TBC added
  EXPECT_EQ(compute_num_activators(0, s), kMinActivators);
}

TEST(KpaDecider, ActivationScale) {
  DeciderSpec s = spec_default();
  s.activation_scale = 3;
  KpaDecider d(s);
  EXPECT_EQ(d.decide(0, 0, 10, 10).desired_pod_count, 3);  // from zero straight to 3
  KpaDecider e(s);
  EXPECT_EQ(e.decide(0, 0, 0, 0).desired_pod_count, 0);  // no traffic: stays at zero
}

TEST(KpaDecider, BatchEqualsOneByOne) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 2000);
  std::uniform_int_distribution<int> pods(0, 40);
  DeciderSpec s = spec_default();
  s.scale_down_delay_s = 6;
  const std::size_t n = 5000;
  std::vector<KpaDecider> a(n, KpaDecider(s)), b(n, KpaDecider(s));
  std::vector<std::int32_t> ready(n);
  std::vector<double> st(n), pa(n);
  std::vector<ScaleResult> out(n);
  for (int tick = 0; tick < 20; ++tick) {
    for (std::size_t i = 0; i < n; ++i) {
      ready[i] = pods(rng);
      st[i] = u(rng);
      pa[i] = u(rng);
    }
    kpa_decide_batch(a.data(), n, tick * 2.0, ready.data(), st.data(), pa.data(), out.data(), tick % 2 ? 2 : 1);
    for (std::size_t i = 0; i < n; ++i) {
      const ScaleResult e = b[i].decide(tick * 2.0, ready[i], st[i], pa[i]);
      ASSERT_EQ(out[i].desired_pod_count, e.desired_pod_count);
      ASSERT_EQ(out[i].excess_burst_capacity, e.excess_burst_capacity);
      ASSERT_EQ(out[i].panicking, e.panicking);
    }
  }
  EXPECT_THROW(kpa_decide_batch(nullptr, 3, 0, ready.data(), st.data(), pa.data(), out.data()), InvalidArgument);
}

TEST(KpaScrape, SampleSizeRule) {
  EXPECT_EQ(scrape_sample_size(-1), 0);
  EXPECT_EQ(scrape_sample_size(0), 0);
  EXPECT_EQ(scrape_sample_size(3), 3);
  EXPECT_EQ(scrape_sample_size(4), 4);
  EXPECT_EQ(scrape_sample_size(10), 7);
  EXPECT_EQ(scrape_sample_size(100), 14);
  EXPECT_EQ(scrape_sample_size(1000), 16);
  for (int n = 4; n < 3000; n += 7) {  // never more than the population, never more than ~15.4
    EXPECT_LE(scrape_sample_size(n), n);
    EXPECT_LE(scrape_sample_size(n), 16);
  }
  Stat a, b;
  a.concurrency = 2;
  a.request_count = 10;
  b.concurrency = 4;
  b.request_count = 30;
  b.proxied_concurrency = 1;
  const Stat s = aggregate_scrape(5.0, {a, b}, 10);
  EXPECT_DOUBLE_EQ(s.concurrency, 30.0);  // mean 3 x 10 ready pods
  EXPECT_DOUBLE_EQ(s.request_count, 200.0);
  EXPECT_DOUBLE_EQ(s.proxied_concurrency, 5.0);
  EXPECT_EQ(s.time, 5.0);
  EXPECT_THROW(aggregate_scrape(0, {}, 3), InvalidArgument);
}

TEST(KpaCollector, StableAndPanicWindows) {
  KpaMetricCollector c(60.0, 6.0);
  EXPECT_DOUBLE_EQ(c.panic_window_s(), 6.0);
  EXPECT_FALSE(c.concurrency(0).has_data);
  for (int t = 0; t < 60; ++t) {
    Stat s;
    s.time = t;
    s.concurrency = t < 54 ? 10.0 : 100.0;
    s.proxied_concurrency = t < 54 ? 0.0 : 10.0;  // counted at the activator: subtracted
    s.request_count = 5;
    c.record(s);
  }
  const auto o = c.concurrency(59);
  EXPECT_TRUE(o.has_data);
  EXPECT_DOUBLE_EQ(o.panic, 90.0);
  EXPECT_DOUBLE_EQ(o.stable, (54 * 10.0 + 6 * 90.0) / 60.0);
  EXPECT_DOUBLE_EQ(c.rps(59).stable, 5.0);
  EXPECT_FALSE(c.concurrency(200).has_data);
  KpaMetricCollector w(60.0, 6.0, Aggregation::kWeightedExponential);
  for (int t = 0; t < 60; ++t) {
    Stat s;
    s.time = t;
    s.concurrency = t < 54 ? 10.0 : 100.0;
    w.record(s);
  }
  EXPECT_GT(w.concurrency(59).stable, 50.0);  // recent surge weighs more than in the linear average
}

TEST(KpaScaler, ScaleToZeroOnlyAfterStableWindowAndGracePeriod) {
  KpaConfig cfg;  // stable window 60, grace 30
  KpaRevision rev;
  KpaScaler sc(cfg, rev, 0.0);
  ScaleResult one{1, 0, 2, true, false}, zero{0, 0, 2, true, false};
  ScalerStep st = sc.reconcile(0, one, 1);
  EXPECT_EQ(st.state, PaState::kActive);
  EXPECT_EQ(st.replicas, 1);
  st = sc.reconcile(30, zero, 1);  // active for 30 < 60 s: keep one pod
  EXPECT_EQ(st.want, 1);
  EXPECT_TRUE(st.applied);
  EXPECT_EQ(st.replicas, 1);
  st = sc.reconcile(60, zero, 1);  // active for a whole stable window: mark inactive, do not scale yet
  EXPECT_EQ(st.want, 0);
  EXPECT_FALSE(st.applied);
  EXPECT_EQ(st.replicas, 1);
  EXPECT_EQ(st.state, PaState::kInactive);
  EXPECT_TRUE(st.proxy_mode);
  st = sc.reconcile(80, zero, 1);  // activator in path for 20 s < grace 30 s
  EXPECT_FALSE(st.applied);
  EXPECT_EQ(st.replicas, 1);
  st = sc.reconcile(90, zero, 1);  // grace period over
  EXPECT_TRUE(st.applied);
  EXPECT_EQ(st.replicas, 0);
  // Traffic returns: the decider asks for a pod; activating until it is ready, then active.
  st = sc.reconcile(100, one, 0);
  EXPECT_EQ(st.replicas, 1);
  EXPECT_EQ(st.state, PaState::kActivating);
  st = sc.reconcile(105, one, 1);
  EXPECT_EQ(st.state, PaState::kActive);
}

TEST(KpaScaler, PodRetentionAndDisabledScaleToZero) {
  KpaConfig cfg;
  cfg.scale_to_zero_pod_retention_period_s = 120;
  KpaScaler sc(cfg, KpaRevision{}, 0.0);
  ScaleResult one{1, 0, 2, true, false}, zero{0, 0, 2, true, false};
  sc.reconcile(0, one, 1);
  sc.reconcile(60, zero, 1);  // inactive since 60
  EXPECT_FALSE(sc.reconcile(100, zero, 1).applied);
  EXPECT_FALSE(sc.reconcile(179, zero, 1).applied);  // inactive for 119 < 120
  EXPECT_TRUE(sc.reconcile(180, zero, 1).applied);
  KpaConfig off;
  off.enable_scale_to_zero = false;
  KpaScaler never(off, KpaRevision{}, 0.0);
  never.reconcile(0, one, 1);
  const ScalerStep st = never.reconcile(1000, zero, 1);
  EXPECT_EQ(st.want, 1);
  EXPECT_EQ(st.replicas, 1);
}

TEST(KpaScaler, BoundsAndInitialScale) {
  KpaConfig cfg;
  KpaRevision rev;
  rev.min_scale = 2;
  rev.max_scale = 5;
  rev.initial_scale = 4;
  KpaScaler sc(cfg, rev, 0.0);
  EXPECT_EQ(sc.replicas(), 4);
  ScaleResult d{1, 0, 2, true, false};
  // Before the initial scale was reached, it is the lower bound.
  EXPECT_EQ(sc.reconcile(0, d, 0).replicas, 4);
  EXPECT_EQ(sc.reconcile(2, d, 4).replicas, 4);  // reached now (ready 4 >= 4)
  EXPECT_TRUE(sc.scale_target_initialized());
  EXPECT_EQ(sc.reconcile(4, d, 4).replicas, 2);  // min-scale from now on
  d.desired_pod_count = 50;
  EXPECT_EQ(sc.reconcile(6, d, 2).replicas, 5);  // max-scale
  // Unreachable revisions drop min-scale.
  rev.reachable = false;
  KpaScaler un(cfg, rev, 0.0);
  EXPECT_EQ(un.scale_bounds().first, 0);
  // No data: nothing applied unless activating.
  KpaScaler sc2(cfg, KpaRevision{}, 0.0);
  sc2.reconcile(0, ScaleResult{1, 0, 2, true, false}, 1);
  const ScalerStep st = sc2.reconcile(2, KpaDecider::no_data(), 1);
  EXPECT_FALSE(st.applied);
  EXPECT_EQ(st.want, -1);
}

TEST(KpaScaler, ActivationTimeout) {
  KpaConfig cfg;
  KpaScaler sc(cfg, KpaRevision{}, 0.0);
  ScaleResult zero{0, 0, 2, true, false};
  ScalerStep st = sc.reconcile(0, ScaleResult{1, 0, 2, true, false}, 0);  // activating, pod never ready
  EXPECT_EQ(st.state, PaState::kActivating);
  st = sc.reconcile(300, zero, 0);
  EXPECT_FALSE(st.applied);
  EXPECT_EQ(st.want, -1);
  EXPECT_FALSE(sc.reconcile(630, zero, 0).applied);  // exactly the timeout: not yet (strictly after)
  st = sc.reconcile(631, zero, 0);  // past progress deadline 600 s + buffer 30 s
  EXPECT_TRUE(st.applied);
  EXPECT_EQ(st.replicas, 0);
  EXPECT_EQ(st.state, PaState::kInactive);
}

TEST(KpaAutoscaler, EndToEndScalesWithLoad) {
  KpaConfig cfg;
  KpaRevision rev;
  rev.container_concurrency = 10;  // target 7 per pod
  KpaAutoscaler as(cfg, rev, 0.0, 1);
  ScalerStep st;
  for (int t = 0; t <= 20; ++t) {
    Stat s;
    s.time = t;
    s.concurrency = 70;  // needs 10 pods
    as.record(s);
    if (t % 2 == 0) st = as.tick(t, std::max<std::int32_t>(1, st.replicas));
  }
  EXPECT_TRUE(as.last_decision().scale_valid);
  EXPECT_EQ(st.replicas, 10);
  EXPECT_TRUE(as.last_decision().panicking);  // 10 / 1 ready >= 2 at the first tick
}

TEST(KpaAutoscaler, RpsMetricAndSpecUpdate) {
  KpaRevision rev;
  rev.metric = ScalingMetric::kRps;  // target 200 x 0.7 = 140 req/s per pod
  KpaAutoscaler as(KpaConfig{}, rev, 0.0, 1);
  for (int t = 0; t < 10; ++t) {
    Stat s;
    s.time = t;
    s.request_count = 280;
    s.concurrency = 1;  // ignored for the RPS metric
    as.record(s);
  }
  const ScalerStep st = as.tick(9, 1);
  EXPECT_EQ(as.last_decision().desired_pod_count, 2);
  EXPECT_EQ(st.replicas, 2);
  // Spec validation and update (a new delay window when the delay changes).
  DeciderSpec bad = spec_default();
  bad.target_value = 0;
  EXPECT_THROW(KpaDecider{bad}, InvalidArgument);
  KpaDecider d(spec_default());
  DeciderSpec with_delay = spec_default();
  with_delay.scale_down_delay_s = 20;
  with_delay.max_scale_down_rate = 100;
  d.update(with_delay);
  EXPECT_EQ(d.decide(0, 10, 700, 700).desired_pod_count, 10);
  EXPECT_EQ(d.decide(10, 10, 0, 0).desired_pod_count, 10);  // held by the new 20 s delay
  EXPECT_EQ(d.decide(20, 10, 0, 0).desired_pod_count, 0);
}

TEST(Kpa, NonFiniteInputsAreRefusedAndChangeNothing) {
  KpaDecider d(DeciderSpec{});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(d.decide(0.0, 1, nan, 1.0), kubetune::InvalidArgument);
  EXPECT_THROW(d.decide(0.0, 1, 1.0, std::numeric_limits<double>::infinity()), kubetune::InvalidArgument);
  EXPECT_THROW(d.decide(nan, 1, 1.0, 1.0), kubetune::InvalidArgument);
  EXPECT_THROW(d.decide(0.0, -1, 1.0, 1.0), kubetune::InvalidArgument);
  KpaMetricCollector c(60.0, 6.0);
  Stat st;
  st.time = 1.0;
  st.concurrency = nan;
  EXPECT_THROW(c.record(st), kubetune::InvalidArgument);
  EXPECT_FALSE(c.concurrency(1.0).has_data);  // nothing was recorded
}
