// Tests of the trace generators and the autoscaling simulator (KPA, HPA, SLO sizing).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <numeric>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/simulate.hpp"

using namespace kubetune::sched::autoscale;

TEST(Trace, Generators) {
  Trace t = trace_steps({{10, 5.0}, {5, 50.0}});
  ASSERT_EQ(t.rate.size(), 15u);
  EXPECT_EQ(t.rate[9], 5.0);
  EXPECT_EQ(t.rate[10], 50.0);
  EXPECT_DOUBLE_EQ(t.duration_s(), 15.0);
  t = trace_spike(1.0, 9.0, 4, 2, 10);
  EXPECT_EQ(t.rate, (std::vector<double>{1, 1, 1, 1, 9, 9, 1, 1, 1, 1}));
  t = trace_diurnal(100, 50, 100, 100);
  EXPECT_NEAR(t.rate[0], 50.0, 1e-9);   // starts at its low
  EXPECT_NEAR(t.rate[50], 150.0, 1e-9);  // peak half a period later
  const Trace n1 = trace_diurnal(100, 50, 100, 100, 1.0, 0.1, 42), n2 = trace_diurnal(100, 50, 100, 100, 1.0, 0.1, 42);
  EXPECT_EQ(n1.rate, n2.rate);  // seeded
  EXPECT_THROW(trace_steps({{10, -1.0}}), kubetune::InvalidArgument);
  EXPECT_THROW(trace_spike(1, 2, 8, 5, 10), kubetune::InvalidArgument);
  const std::string path = ::testing::TempDir() + "/kt_trace.csv";
  {
    std::ofstream f(path);
    f << "time,rate\n0,3\n2,4\n4,5\n";
  }
  t = trace_from_csv(path);
  EXPECT_EQ(t.rate, (std::vector<double>{3, 4, 5}));
  EXPECT_DOUBLE_EQ(t.dt_s, 2.0);
  std::remove(path.c_str());
  EXPECT_THROW(trace_from_csv("/nonexistent/kt.csv"), kubetune::IoError);
}

TEST(Simulate, SloSizingHoldsTheObjectiveUnderConstantLoad) {
  SimConfig c;
  c.policy = SimPolicy::kSlo;
  c.service_time_s = 0.1;
  c.container_concurrency = 10;
  c.initial_replicas = 3;
  const Trace t = trace_steps({{300, 200.0}});
  const SimResult r = simulate(t, c);
  const auto need = min_replicas_for_slo(200.0, 0.1, 10, c.slo);
  EXPECT_EQ(r.desired.back(), static_cast<double>(need));
  EXPECT_EQ(r.ready.back(), static_cast<double>(need));
  // After the first start-up delay the objective holds (violations only at the start).
  for (std::size_t i = 30; i < r.violation_probability.size(); ++i) EXPECT_LE(r.violation_probability[i], 0.05);
  EXPECT_NEAR(r.requests, 60000.0, 1e-6);
  EXPECT_NEAR(r.pod_seconds, std::accumulate(r.provisioned.begin(), r.provisioned.end(), 0.0), 1e-9);
  EXPECT_EQ(r.cold_starts, 0);
}

TEST(Simulate, KpaScalesUpToZeroAndBackWithColdStart) {
  SimConfig c;
  c.policy = SimPolicy::kKpa;
  c.service_time_s = 0.1;
  c.container_concurrency = 10;  // target 7 in-flight per pod
  c.kpa_revision.container_concurrency = 10;
  c.pod_startup_delay_s = 5;
  // 100 req/s for 2 minutes (10 in flight -> 2 pods), silence for 3 minutes, then traffic again.
  const Trace t = trace_steps({{120, 100.0}, {180, 0.0}, {60, 100.0}});
  const SimResult r = simulate(t, c);
  EXPECT_GE(r.ready[100], 2.0);
  EXPECT_EQ(r.ready[290], 0.0);  // scaled to zero after stable window + grace period
  EXPECT_GE(r.cold_starts, 1);
  EXPECT_GT(r.cold_start_requests, 0.0);
  EXPECT_GE(r.ready.back(), 2.0);  // back up
  EXPECT_GT(r.scale_events, 2);
}

TEST(Simulate, HpaKeepsAtLeastOneAndFollowsLoad) {
  SimConfig c;
  c.policy = SimPolicy::kHpa;
  c.service_time_s = 0.1;
  c.container_concurrency = 10;
  c.hpa.min_replicas = 1;
  c.hpa.max_replicas = 50;
  const Trace t = trace_steps({{60, 10.0}, {300, 400.0}, {60, 10.0}});
  const SimResult r = simulate(t, c);
  EXPECT_GE(*std::min_element(r.ready.begin(), r.ready.end()), 1.0);
  // 400 req/s x 0.1 s = 40 in flight, target 7 per pod -> about 6 pods.
  EXPECT_GE(r.ready[350], 5.0);
  EXPECT_EQ(r.cold_starts, 0);
  SimConfig bad = c;
  bad.hpa.min_replicas = 0;
  EXPECT_THROW(simulate(t, bad), kubetune::InvalidArgument);
  bad = c;
  bad.service_time_s = 0;
  EXPECT_THROW(simulate(t, bad), kubetune::InvalidArgument);
}

TEST(Simulate, HeadroomTradesPodSecondsForViolations) {
  SimConfig slo;
  slo.policy = SimPolicy::kSlo;
  slo.pod_startup_delay_s = 0;
  const Trace t = trace_diurnal(300, 200, 600, 600);
  const SimResult a = simulate(t, slo);
  slo.slo_headroom = 1.3;
  const SimResult b = simulate(t, slo);
  EXPECT_LT(b.slo_violation_fraction, a.slo_violation_fraction);
  EXPECT_GT(b.pod_seconds, a.pod_seconds);
  EXPECT_LT(a.slo_violation_fraction, 0.05);
  // Deterministic: the same run twice gives the same numbers.
  const SimResult c = simulate(t, slo);
  EXPECT_EQ(c.pod_seconds, b.pod_seconds);
  EXPECT_EQ(c.violating_requests, b.violating_requests);
}

TEST(Simulate, ConfigJsonRoundTrip) {
  SimConfig c;
  c.policy = SimPolicy::kHpa;
  c.slo.latency_s = 0.3;
  c.kpa.stable_window_s = 30;
  c.hpa.behavior = HpaBehavior{};
  const SimConfig back = sim_config_from_json(sim_config_to_json(c));
  EXPECT_EQ(sim_config_to_json(back), sim_config_to_json(c));
  EXPECT_THROW(sim_config_from_json(R"({"policy": "vpa"})"), kubetune::InvalidArgument);
  EXPECT_THROW(sim_config_from_json(R"({"bogus": 1})"), kubetune::InvalidArgument);
  EXPECT_THROW(sim_config_from_json(R"({"kpa": {"stable_window_s": 1}})"), kubetune::InvalidArgument);
  const SimResult r = simulate(trace_steps({{20, 5.0}}), back);
  EXPECT_NE(sim_result_to_json(r).find("\"pod_seconds\""), std::string::npos);
}
