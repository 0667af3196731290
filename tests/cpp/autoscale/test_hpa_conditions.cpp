// HPA status conditions: rows ported from kubernetes pkg/controller/podautoscaler/horizontal_test.go (which
// compares type, status and reason, not messages), plus constructed rows for the reasons no cited test reaches.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"

using namespace kubetune::sched::autoscale;

namespace {

struct Cond {
  HpaConditionType type;
  bool status;
  const char* reason;
};

// horizontal_test.go statusOkWithOverrides: rescaled, valid metric, within range, then the overrides.
std::vector<Cond> status_ok_with(std::vector<Cond> overrides) {
  std::vector<Cond> base = {{HpaConditionType::kAbleToScale, true, "SucceededRescale"},
                            {HpaConditionType::kScalingActive, true, "ValidMetricFound"},
                            {HpaConditionType::kScalingLimited, false, "DesiredWithinRange"}};
  for (const Cond& o : overrides)
    for (Cond& b : base)
      if (b.type == o.type) b = o;
  return base;
}

void expect_conditions(const HpaDecision& d, const std::vector<Cond>& want, const std::string& upstream) {
  ASSERT_EQ(d.conditions.size(), want.size()) << upstream << "\n" << d.to_json();
  for (const Cond& w : want) {
    const HpaCondition* c = d.condition(w.type);
    ASSERT_NE(c, nullptr) << upstream << ": no " << to_string(w.type);
    EXPECT_EQ(c->status, w.status) << upstream << ": " << to_string(w.type);
    EXPECT_EQ(c->reason, w.reason) << upstream << ": " << to_string(w.type);
    EXPECT_FALSE(c->message.empty()) << upstream;
  }
}

// CPU pods of horizontal_test.go (reportedLevels milli-CPU, one request for all; the tests' 0.9/1.0/1.1 requests
// enter only through their sum, 3000m), ready for long, fresh metrics.
std::vector<HpaPod> cpu_pods(const std::vector<std::int64_t>& levels, std::int64_t request) {
  std::vector<HpaPod> pods;
  for (std::int64_t l : levels) {
    HpaPod p;
    p.start_time = -10000.0;
    p.ready_transition_time = -9000.0;
    p.metric = l;
    p.request = request;
    pods.push_back(p);
  }
  return pods;
}

// generateScalingRules(0, 0, percent, period, 0) of horizontal_test.go: one Percent policy, no stabilisation.
HpaBehavior percent_up(std::int32_t percent, double period) {
  HpaBehavior b;
  b.scale_up.stabilization_window_s = 0;
  b.scale_up.policies = {ScalingPolicy{PolicyType::kPercent, percent, period}};
  return b;
}

struct Row {
  std::string upstream;
  std::int32_t min, max, current;
  std::optional<HpaBehavior> behavior;
  std::int32_t cpu_target;
  std::vector<std::int64_t> levels;
  std::int64_t request;
  std::int32_t want_replicas;
  std::vector<Cond> want;
  bool empty_history = false;  // the test sets `recommendations: []timestampedRecommendation{}`
};

}  // namespace

TEST(HpaConditions, PortedFromHorizontalTest) {
  using T = HpaConditionType;
  const std::vector<Row> rows = {
      {"horizontal_test.go:TestUpscaleCap", 1, 100, 3, percent_up(700, 60), 10, {100, 200, 300}, 100, 24,
       status_ok_with({{T::kScalingLimited, true, "ScaleUpLimit"}})},
      {"horizontal_test.go:TestUpscaleCapGreaterThanMaxReplicas", 1, 20, 3, percent_up(700, 60), 10,
       {100, 200, 300}, 100, 20, status_ok_with({{T::kScalingLimited, true, "TooManyReplicas"}})},
      {"horizontal_test.go:TestTolerance", 1, 5, 3, std::nullopt, 100, {1010, 1030, 1020}, 1000, 3,
       status_ok_with({{T::kAbleToScale, true, "ReadyForNewScale"}})},
      {"horizontal_test.go:TestMinReplicas", 2, 5, 3, std::nullopt, 90, {10, 95, 10}, 1000, 2,
       status_ok_with({{T::kScalingLimited, true, "TooFewReplicas"}}), true},
      {"horizontal_test.go:TestZeroMinReplicasDesiredZero", 0, 5, 3, std::nullopt, 90, {0, 0, 0}, 1000, 0,
       status_ok_with({{T::kScalingLimited, false, "DesiredWithinRange"}}), true},
      {"horizontal_test.go:TestMinReplicasDesiredZero", 2, 5, 3, std::nullopt, 90, {0, 0, 0}, 1000, 2,
       status_ok_with({{T::kScalingLimited, true, "TooFewReplicas"}}), true},
      {"horizontal_test.go:TestMaxReplicas", 2, 5, 3, std::nullopt, 90, {8000, 9500, 1000}, 1000, 5,
       status_ok_with({{T::kScalingLimited, true, "TooManyReplicas"}})},
      {"horizontal_test.go:TestEventNotCreated", 1, 5, 2, std::nullopt, 50, {200, 200}, 400, 2,
       status_ok_with({{T::kAbleToScale, true, "ReadyForNewScale"}})},
      {"horizontal_test.go:TestZeroReplicas", 3, 5, 0, std::nullopt, 90, {}, 1000, 0,
       {{T::kAbleToScale, true, "SucceededGetScale"}, {T::kScalingActive, false, "ScalingDisabled"}}},
      {"horizontal_test.go:TestTooFewReplicas", 3, 5, 2, std::nullopt, 90, {}, 1000, 3,
       {{T::kAbleToScale, true, "SucceededRescale"}}},
      {"horizontal_test.go:TestTooManyReplicas", 3, 5, 10, std::nullopt, 90, {}, 1000, 5,
       {{T::kAbleToScale, true, "SucceededRescale"}}},
  };
  for (const Row& row : rows) {
    HpaSpec spec;
    spec.min_replicas = row.min;
    spec.max_replicas = row.max;
    spec.behavior = row.behavior;
    HpaController hpa(spec);
    if (row.empty_history) hpa.set_recommendations({});
    std::vector<ReplicaResult> proposals{ReplicaResult{row.current, 0, 0, true, ""}};  // unused outside range
    if (!row.levels.empty())
      proposals = {resource_utilization_replicas(0, row.current, row.cpu_target, cpu_pods(row.levels, row.request))};
    const HpaDecision d = hpa.reconcile(0, row.current, proposals);
    EXPECT_EQ(d.desired_replicas, row.want_replicas) << row.upstream;
    expect_conditions(d, row.want, row.upstream);
  }
}

TEST(HpaConditions, ConstructedRowsForTheOtherReasons) {
  using T = HpaConditionType;
  {  // Legacy rules: scale-up capped at max(2 x current, 4) -> ScaleUpLimit with the upstream message.
    HpaController hpa(HpaSpec{1, 100, std::nullopt});
    const HpaDecision d = hpa.reconcile(0, 3, std::vector<std::optional<std::int32_t>>{60});
    EXPECT_EQ(d.desired_replicas, 6);
    expect_conditions(d, status_ok_with({{T::kScalingLimited, true, "ScaleUpLimit"}}), "legacy ScaleUpLimit");
    EXPECT_EQ(d.condition(T::kScalingLimited)->message,
              "the desired replica count is increasing faster than the maximum scale rate");
    EXPECT_EQ(d.condition(T::kAbleToScale)->message, "the HPA controller was able to update the target scale to 6");
  }
  {  // Behaviour: scale-down of at most 1 pod per 60 s -> ScaleDownLimit; no stabilisation window.
    HpaBehavior b;
    b.scale_down.stabilization_window_s = 0;
    b.scale_down.policies = {ScalingPolicy{PolicyType::kPods, 1, 60}};
    HpaController hpa(HpaSpec{1, 10, b});
    const HpaDecision d = hpa.reconcile(0, 5, std::vector<std::optional<std::int32_t>>{2});
    EXPECT_EQ(d.desired_replicas, 4);
    expect_conditions(d, status_ok_with({{T::kScalingLimited, true, "ScaleDownLimit"}}), "ScaleDownLimit");
    // The next scale-down inside the period is blocked entirely: no rescale, still limited.
    const HpaDecision d2 = hpa.reconcile(15, 4, std::vector<std::optional<std::int32_t>>{2});
    EXPECT_FALSE(d2.rescale);
    EXPECT_EQ(d2.condition(T::kScalingLimited)->reason, "ScaleDownLimit");
    EXPECT_EQ(d2.condition(T::kAbleToScale)->reason, "ReadyForNewScale");
  }
  {  // Behaviour, min 2: the metric wants 1 and the policy would allow 0 -> TooFewReplicas.
    HpaBehavior b;
    b.scale_down.stabilization_window_s = 0;
    b.scale_down.policies = {ScalingPolicy{PolicyType::kPercent, 100, 15}};
    HpaController hpa(HpaSpec{2, 10, b});
    const HpaDecision d = hpa.reconcile(0, 5, std::vector<std::optional<std::int32_t>>{1});
    EXPECT_EQ(d.desired_replicas, 2);
    expect_conditions(d, status_ok_with({{T::kScalingLimited, true, "TooFewReplicas"}}), "TooFewReplicas");
  }
  {  // Default scale-down window (300 s): a lower recommendation is held -> ScaleDownStabilized, no rescale.
    HpaController hpa(HpaSpec{1, 10, HpaBehavior{}});
    hpa.reconcile(0, 5, std::vector<std::optional<std::int32_t>>{5});
    const HpaDecision d = hpa.reconcile(30, 5, std::vector<std::optional<std::int32_t>>{2});
    EXPECT_FALSE(d.rescale);
    EXPECT_EQ(d.condition(T::kAbleToScale)->reason, "ScaleDownStabilized");
    EXPECT_EQ(d.condition(T::kScalingLimited)->reason, "DesiredWithinRange");
  }
  {  // Up window 60 s: a recent lower recommendation holds a scale-up -> ScaleUpStabilized.
    HpaBehavior b;
    b.scale_up.stabilization_window_s = 60;
    HpaController hpa(HpaSpec{1, 10, b});
    hpa.reconcile(0, 3, std::vector<std::optional<std::int32_t>>{3});
    const HpaDecision d = hpa.reconcile(15, 3, std::vector<std::optional<std::int32_t>>{8});
    EXPECT_EQ(d.desired_replicas, 3);
    EXPECT_EQ(d.condition(T::kAbleToScale)->reason, "ScaleUpStabilized");
  }
  {  // Every metric failed: ScalingActive False, desired stays at current.
    HpaController hpa(HpaSpec{1, 10, std::nullopt});
    const HpaDecision d = hpa.reconcile(0, 4, std::vector<std::optional<std::int32_t>>{std::nullopt});
    EXPECT_EQ(d.desired_replicas, 4);
    EXPECT_FALSE(d.condition(T::kScalingActive)->status);
    EXPECT_EQ(d.condition(T::kScalingActive)->reason, "FailedComputeMetricsReplicas");
  }
}

TEST(HpaConditions, JsonForm) {
  HpaController hpa(HpaSpec{3, 5, std::nullopt});
  const auto j = nlohmann::json::parse(hpa.reconcile(0, 0, std::vector<std::optional<std::int32_t>>{1}).to_json());
  EXPECT_EQ(j.at("desired_replicas"), 0);
  EXPECT_EQ(j.at("rescale"), false);
  ASSERT_EQ(j.at("conditions").size(), 2u);
  EXPECT_EQ(j.at("conditions")[1].at("type"), "ScalingActive");
  EXPECT_EQ(j.at("conditions")[1].at("status"), "False");
  EXPECT_EQ(j.at("conditions")[1].at("reason"), "ScalingDisabled");
  EXPECT_EQ(j.at("conditions")[1].at("message"), "scaling is disabled since the replica count of the target is zero");
}

TEST(HpaBatch, EqualsOneByOneInlineAndThreaded) {
  constexpr std::size_t kN = 5000;  // above the 4096 threshold of the threaded path
  const HpaSpec spec{1, 50, HpaBehavior{}};
  std::vector<HpaController> single(kN, HpaController(spec)), inl(kN, HpaController(spec)),
      par(kN, HpaController(spec));
  std::vector<std::int32_t> current(kN), proposal(kN), d_inl(kN), d_par(kN);
  std::vector<std::uint8_t> r_inl(kN), r_par(kN);
  std::uint32_t state = 12345;
  const auto next = [&state](std::uint32_t mod) {
    state = state * 1664525u + 1013904223u;
    return static_cast<std::int32_t>((state >> 8) % mod);
  };
  for (int round = 0; round < 5; ++round) {
    const double now = 15.0 * round;
    for (std::size_t i = 0; i < kN; ++i) {
      current[i] = 1 + next(30);
      proposal[i] = next(10) == 0 ? -1 : next(60);  // one in ten metrics failed
    }
    hpa_reconcile_batch(inl.data(), kN, now, current.data(), proposal.data(), d_inl.data(), r_inl.data(), 1);
    hpa_reconcile_batch(par.data(), kN, now, current.data(), proposal.data(), d_par.data(), r_par.data(), 2);
    for (std::size_t i = 0; i < kN; ++i) {
      const std::optional<std::int32_t> p = proposal[i] < 0 ? std::nullopt : std::optional<std::int32_t>(proposal[i]);
      const HpaDecision d = single[i].reconcile(now, current[i], std::vector<std::optional<std::int32_t>>{p});
      ASSERT_EQ(d_inl[i], d.desired_replicas) << "round " << round << " hpa " << i;
      ASSERT_EQ(r_inl[i], d.rescale ? 1 : 0) << "round " << round << " hpa " << i;
      ASSERT_EQ(d_par[i], d_inl[i]) << "round " << round << " hpa " << i;
      ASSERT_EQ(r_par[i], r_inl[i]);
    }
  }
  current[7] = -1;
  EXPECT_THROW(hpa_reconcile_batch(inl.data(), kN, 0, current.data(), proposal.data(), nullptr, nullptr),
               kubetune::InvalidArgument);
}
