// Tests of the HPA rules: replica calculator (tolerance, missing/unready pods), metric kinds, behaviours.
#include <gtest/gtest.h>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;

namespace {
// A running, ready pod started long ago with a CPU request of 1000m and `usage` milli-CPU.
HpaPod pod(std::int64_t usage, std::int64_t request = 1000) {
  HpaPod p;
  p.start_time = -10000.0;
  p.ready_transition_time = -9000.0;
  p.metric = usage;
  p.metric_timestamp = 0.0;
  p.request = request;
  return p;
}
}  // namespace

TEST(HpaCalc, ToleranceBand) {
  Tolerances t;
  EXPECT_TRUE(t.is_within(1.0));
  EXPECT_TRUE(t.is_within(0.9));
  EXPECT_TRUE(t.is_within(1.1));
  EXPECT_FALSE(t.is_within(1.11));
  EXPECT_FALSE(t.is_within(0.89));
  Tolerances asym{0.05, 0.5};
  EXPECT_FALSE(asym.is_within(0.94));
  EXPECT_TRUE(asym.is_within(1.4));
}

TEST(HpaCalc, ResourceUtilisation) {
  std::vector<HpaPod> pods{pod(900), pod(900), pod(900)};
  ReplicaResult r = resource_utilization_replicas(0, 3, 50, pods);
  ASSERT_TRUE(r.valid);
  EXPECT_EQ(r.usage, 90);
  EXPECT_EQ(r.raw_average, 900);
  EXPECT_EQ(r.replicas, 6);  // ceil(90/50 * 3)
  // Inside the tolerance: keep the current count.
  pods = {pod(540), pod(540), pod(540)};
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, pods).replicas, 3);
  // Integer utilisation: 1000 * 100 / 3000 = 33 -> 33/30 = 1.1, within tolerance.
  pods = {pod(333), pod(333), pod(334)};
  r = resource_utilization_replicas(0, 3, 30, pods);
  EXPECT_EQ(r.usage, 33);
  EXPECT_EQ(r.replicas, 3);
  // Scale down.
  pods = {pod(100), pod(100), pod(100), pod(100)};
  EXPECT_EQ(resource_utilization_replicas(0, 4, 50, pods).replicas, 1);  // ceil(0.2 * 4)
  // Per-HPA tolerance.
  pods = {pod(540), pod(540), pod(540)};
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, pods, true, Tolerances{0.1, 0.05}).replicas, 4);
  EXPECT_THROW(resource_utilization_replicas(0, 3, 0, pods), InvalidArgument);
  EXPECT_FALSE(resource_utilization_replicas(0, 3, 50, {}).valid);
}

TEST(HpaCalc, UnreadyPodsOnScaleUp) {
  // Upstream case: levels 300/500/700 of 1000m, target 30 %, the first pod not ready -> 4 replicas.
  std::vector<HpaPod> pods{pod(300), pod(500), pod(700)};
  pods[0].ready = ReadyCondition::kFalse;
  pods[0].start_time = -10.0;  // inside the CPU initialisation period
  const ReplicaResult r = resource_utilization_replicas(0, 3, 30, pods);
  ASSERT_TRUE(r.valid);
  EXPECT_EQ(r.usage, 60);      // from the ready pods only
  EXPECT_EQ(r.replicas, 4);    // unready counted as 0 % on the scale-up: ceil(40/30 * 3)
  // The same pod on a scale-down is simply left out.
  std::vector<HpaPod> low{pod(300), pod(50), pod(50)};
  low[0].ready = ReadyCondition::kFalse;
  low[0].start_time = -10.0;
  EXPECT_EQ(resource_utilization_replicas(0, 3, 30, low).replicas, 1);  // ceil(5/30 * 2)
  // Pending pods are unready for every metric; on a scale-up they count as zero.
  std::vector<HpaPod> pend{pod(0), pod(900), pod(900)};
  pend[0].phase = PodPhase::kPending;
  pend[0].has_metric = false;
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, pend).replicas, 4);  // util 60 -> ceil(60/50*3)=4
}

TEST(HpaCalc, NotYetWarmAndNeverReadyPods) {
  std::vector<HpaPod> pods{pod(900), pod(100), pod(100)};
  // Pod 0 started 60 s ago (initialisation period 300 s), ready since 20 s, metric window 30 s: its sample may
  // include start-up CPU, so it is ignored.
  pods[0].start_time = -60.0;
  pods[0].ready_transition_time = -20.0;
  pods[0].metric_window_s = 30.0;
  ReplicaResult r = resource_utilization_replicas(0, 3, 50, pods);
  EXPECT_EQ(r.usage, 10);
  // Once a full window passed since readiness, the sample counts.
  pods[0].ready_transition_time = -40.0;
  r = resource_utilization_replicas(0, 3, 50, pods);
  EXPECT_EQ(r.usage, 36);
  // After the initialisation period: unready only if it never became ready (transition within the delay).
  pods[0].start_time = -1000.0;
  pods[0].ready = ReadyCondition::kFalse;
  pods[0].ready_transition_time = -990.0;  // 10 s after start < 30 s delay: never ready
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, pods).usage, 10);
  pods[0].ready_transition_time = -500.0;  // was ready once, now not: its metric counts
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, pods).usage, 36);
  // The readiness rules only apply to CPU.
  pods[0].ready_transition_time = -990.0;
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, pods, false).usage, 36);
  // Deleted and failed pods are ignored entirely.
  std::vector<HpaPod> gone{pod(100), pod(100), pod(5000)};
  gone[2].deleting = true;
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, gone).usage, 10);
  gone[2].deleting = false;
  gone[2].phase = PodPhase::kFailed;
  EXPECT_EQ(resource_utilization_replicas(0, 3, 50, gone).usage, 10);
}

TEST(HpaCalc, MissingMetrics) {
  // Scale-down: missing pods assumed at 100 % of their request.
  std::vector<HpaPod> pods{pod(100), pod(100), pod(100), pod(0)};
  pods[3].has_metric = false;
  EXPECT_EQ(resource_utilization_replicas(0, 4, 50, pods).replicas, 3);  // (300+1000)/4000 = 32 % -> ceil(0.64*4)
  // Scale-up: missing pods assumed at 0.
  std::vector<HpaPod> up{pod(900), pod(900), pod(900), pod(0)};
  up[3].has_metric = false;
  EXPECT_EQ(resource_utilization_replicas(0, 4, 50, up).replicas, 6);  // 2700/4000 = 67 % -> ceil(1.34*4)
  // Direction flip after filling in: no change.
  std::vector<HpaPod> flip{pod(560), pod(0), pod(0), pod(0)};
  flip[1].has_metric = flip[2].has_metric = flip[3].has_metric = false;
  EXPECT_EQ(resource_utilization_replicas(0, 4, 50, flip).replicas, 4);  // 112 % -> 14 %: would flip
  // Targets above 100 %: missing pods at the target on scale-down.
  std::vector<HpaPod> hi{pod(500), pod(0)};
  hi[1].has_metric = false;
  EXPECT_EQ(resource_utilization_replicas(0, 2, 150, hi).replicas, 2);  // (500+1500)/2000 = 100/150 -> ceil(0.667*2)
  // No metrics for any ready pod.
  std::vector<HpaPod> none{pod(0)};
  none[0].has_metric = false;
  const ReplicaResult r = resource_utilization_replicas(0, 1, 50, none);
  EXPECT_FALSE(r.valid);
  EXPECT_NE(r.error.find("did not receive metrics"), std::string::npos);
}

TEST(HpaCalc, PodsObjectExternal) {
  // Pods metric: average value target 10 (10000 milli), pods at 20 -> double.
  std::vector<HpaPod> pods{pod(20000), pod(20000)};
  EXPECT_EQ(pods_metric_replicas(0, 2, 10000, pods).replicas, 4);
  // Integer average: (10 + 11 + 11) / 3 = 10 -> ratio 1.0.
  std::vector<HpaPod> avg{pod(10), pod(11), pod(11)};
  EXPECT_EQ(pods_metric_replicas(0, 3, 10, avg).usage, 10);
  // Missing pods on a scale-down count as exactly the target.
  std::vector<HpaPod> miss{pod(2000), pod(2000), pod(0)};
  miss[2].has_metric = false;
  EXPECT_EQ(pods_metric_replicas(0, 3, 10000, miss).replicas, 2);  // (2+2+10)/3 = 4.67 -> ceil(0.466*3)=2
  // Object Value: ceil(usage/target * ready); from zero: ceil(ratio).
  EXPECT_EQ(object_value_replicas(2, 300, 100, 2).replicas, 6);
  EXPECT_EQ(object_value_replicas(0, 250, 100, 0).replicas, 3);
  EXPECT_EQ(object_value_replicas(4, 105, 100, 4).replicas, 4);  // within tolerance
  EXPECT_EQ(object_value_replicas(0, 0, 100, 0).replicas, 0);    // scale to zero
  // Object AverageValue: ceil(usage/target) unless within tolerance of the status replicas.
  ReplicaResult o = object_average_value_replicas(3, 500, 100);
  EXPECT_EQ(o.replicas, 5);
  EXPECT_EQ(o.usage, 167);
  EXPECT_EQ(object_average_value_replicas(5, 520, 100).replicas, 5);
  // External metrics sum their series.
  EXPECT_EQ(external_value_replicas(2, {100, 200}, 100, 2).replicas, 6);
  EXPECT_EQ(external_average_value_replicas(2, {300, 300}, 100).replicas, 6);
  // Ready pod count.
  std::vector<HpaPod> mixed{pod(1), pod(1), pod(1)};
  mixed[1].ready = ReadyCondition::kFalse;
  mixed[2].phase = PodPhase::kPending;
  EXPECT_EQ(ready_pod_count(mixed), 1);
}

TEST(HpaController, MultipleMetricsAndInvalidOnes) {
  HpaSpec spec{1, 20, std::nullopt};
  HpaController c(spec);
  HpaDecision d = c.reconcile(0, 4, {std::optional<std::int32_t>(3), std::optional<std::int32_t>(6)});
  EXPECT_EQ(d.metric_desired_replicas, 6);
  EXPECT_EQ(d.desired_replicas, 6);
  // An invalid metric does not stop a scale-up...
  HpaController c2(spec);
  d = c2.reconcile(0, 4, {std::nullopt, std::optional<std::int32_t>(7)});
  EXPECT_EQ(d.desired_replicas, 7);
  // ...but blocks a scale-down, and all-invalid blocks everything.
  HpaController c3(spec);
  d = c3.reconcile(0, 4, {std::nullopt, std::optional<std::int32_t>(2)});
  EXPECT_FALSE(d.rescale);
  EXPECT_EQ(d.desired_replicas, 4);
  d = c3.reconcile(15, 4, {std::nullopt});
  EXPECT_EQ(d.reason, "FailedComputeMetricsReplicas");
}

TEST(HpaController, BoundsAndDisabled) {
  HpaController c(HpaSpec{2, 5, std::nullopt});
  EXPECT_EQ(c.reconcile(0, 8, {std::optional<std::int32_t>(8)}).desired_replicas, 5);
  EXPECT_EQ(c.reconcile(15, 1, {std::optional<std::int32_t>(1)}).desired_replicas, 2);
  const HpaDecision d = c.reconcile(30, 0, {std::optional<std::int32_t>(3)});
  EXPECT_FALSE(d.rescale);
  EXPECT_EQ(d.desired_replicas, 0);  // replicas 0 with minReplicas > 0: autoscaling disabled
  EXPECT_THROW(HpaController(HpaSpec{3, 2, std::nullopt}), InvalidArgument);
  EXPECT_THROW(HpaController(HpaSpec{1, 0, std::nullopt}), InvalidArgument);
}

TEST(HpaController, LegacyScaleUpLimitAndDownscaleStabilisation) {
  HpaController c(HpaSpec{1, 100, std::nullopt});
  EXPECT_EQ(c.reconcile(0, 1, {std::optional<std::int32_t>(50)}).desired_replicas, 4);   // max(2*1, 4)
  EXPECT_EQ(c.reconcile(15, 4, {std::optional<std::int32_t>(50)}).desired_replicas, 8);  // 2*4
  EXPECT_EQ(c.reconcile(30, 8, {std::optional<std::int32_t>(50)}).desired_replicas, 16);
  // Down-scale stabilisation (300 s): the highest recommendation of the window wins.
  HpaController s(HpaSpec{1, 100, std::nullopt});
  EXPECT_FALSE(s.reconcile(0, 10, {std::optional<std::int32_t>(10)}).rescale);
  EXPECT_FALSE(s.reconcile(15, 10, {std::optional<std::int32_t>(5)}).rescale);
  EXPECT_FALSE(s.reconcile(299, 10, {std::optional<std::int32_t>(5)}).rescale);
  const HpaDecision d = s.reconcile(301, 10, {std::optional<std::int32_t>(5)});
  EXPECT_TRUE(d.rescale);
  EXPECT_EQ(d.desired_replicas, 5);
}

TEST(HpaController, BehaviourPoliciesAndPeriods) {
  HpaSpec spec{1, 100, HpaBehavior{}};
  HpaController c(spec);
  // Default scale-up: max(4 pods, 100 %) per 15 s from 1 -> 5.
  EXPECT_EQ(c.reconcile(0, 1, {std::optional<std::int32_t>(40)}).desired_replicas, 5);
  // Within the same 15 s period the 4 added pods use the budget up: 5 - 4 = 1 at period start -> limit 5.
  EXPECT_FALSE(c.reconcile(10, 5, {std::optional<std::int32_t>(40)}).rescale);
  // After the period: from 5, max(9, 10) = 10.
  EXPECT_EQ(c.reconcile(16, 5, {std::optional<std::int32_t>(40)}).desired_replicas, 10);
  // selectPolicy Min picks the smaller change.
  HpaBehavior minb;
  minb.scale_up.select_policy = SelectPolicy::kMin;
  HpaController m(HpaSpec{1, 100, minb});
  EXPECT_EQ(m.reconcile(0, 1, {std::optional<std::int32_t>(40)}).desired_replicas, 2);
  // Disabled: no scale-up at all.
  HpaBehavior dis;
  dis.scale_up.select_policy = SelectPolicy::kDisabled;
  HpaController d(HpaSpec{1, 100, dis});
  EXPECT_FALSE(d.reconcile(0, 3, {std::optional<std::int32_t>(40)}).rescale);
  // Percent scale-down truncates: 50 % per 60 s.
  HpaBehavior down;
  down.scale_down.stabilization_window_s = 0;
  down.scale_down.policies = {ScalingPolicy{PolicyType::kPercent, 50, 60}};
  HpaController dn(HpaSpec{1, 100, down});
  EXPECT_EQ(dn.reconcile(0, 11, {std::optional<std::int32_t>(1)}).desired_replicas, 5);  // int(11 * 0.5)
  EXPECT_FALSE(dn.reconcile(30, 5, {std::optional<std::int32_t>(1)}).rescale);           // period budget used
  EXPECT_EQ(dn.reconcile(61, 5, {std::optional<std::int32_t>(1)}).desired_replicas, 2);
  // Pods policy on the way down.
  HpaBehavior pods;
  pods.scale_down.stabilization_window_s = 0;
  pods.scale_down.policies = {ScalingPolicy{PolicyType::kPods, 2, 30}};
  HpaController pd(HpaSpec{1, 100, pods});
  EXPECT_EQ(pd.reconcile(0, 10, {std::optional<std::int32_t>(1)}).desired_replicas, 8);
}

TEST(HpaController, BehaviourStabilisationWindows) {
  HpaBehavior b;
  b.scale_up.stabilization_window_s = 60;  // scale up only to the minimum of the last minute
  b.scale_down.stabilization_window_s = 120;
  b.scale_up.policies = {ScalingPolicy{PolicyType::kPods, 100, 15}};
  b.scale_down.policies = {ScalingPolicy{PolicyType::kPercent, 100, 15}};
  HpaController c(HpaSpec{1, 100, b});
  EXPECT_FALSE(c.reconcile(0, 4, {std::optional<std::int32_t>(4)}).rescale);
  EXPECT_FALSE(c.reconcile(15, 4, {std::optional<std::int32_t>(10)}).rescale);  // min over window = 4
  EXPECT_FALSE(c.reconcile(30, 4, {std::optional<std::int32_t>(10)}).rescale);
  EXPECT_EQ(c.reconcile(61, 4, {std::optional<std::int32_t>(10)}).desired_replicas, 10);  // 4s left the window
  // Down: the max over the last 120 s holds the count.
  EXPECT_FALSE(c.reconcile(80, 10, {std::optional<std::int32_t>(2)}).rescale);
  EXPECT_FALSE(c.reconcile(180, 10, {std::optional<std::int32_t>(2)}).rescale);
  EXPECT_EQ(c.reconcile(190, 10, {std::optional<std::int32_t>(2)}).desired_replicas, 2);
}

TEST(HpaController, LimitsAndValidation) {
  const ScalingRules up = HpaBehavior::default_scale_up();
  std::vector<HpaController::ScaleEvent> ev{{3, 100.0, false}}, none;
  EXPECT_EQ(scale_up_limit(110, 6, ev, none, up), 7);   // start 3: max(3 + 4, 6)
  EXPECT_EQ(scale_up_limit(116, 6, ev, none, up), 12);  // event left the 15 s period
  ScalingRules bad = up;
  bad.policies[0].period_s = 0;
  EXPECT_THROW(bad.validate("behavior.scaleUp"), InvalidArgument);
  bad = up;
  bad.policies.clear();
  EXPECT_THROW(bad.validate("behavior.scaleUp"), InvalidArgument);
  bad = up;
  bad.stabilization_window_s = 4000;
  EXPECT_THROW(bad.validate("behavior.scaleUp"), InvalidArgument);
  HpaSpec s{1, 10, HpaBehavior{}};
  s.behavior->scale_down.tolerance = 0.2;
  const HpaSpec back = HpaSpec::from_json(s.to_json());
  EXPECT_EQ(back.to_json(), s.to_json());
  HpaController c(back);
  EXPECT_DOUBLE_EQ(c.tolerances().scale_down, 0.2);
  EXPECT_DOUBLE_EQ(c.tolerances().scale_up, 0.1);
  const HpaSpec def = HpaSpec::from_json(R"({"minReplicas": 2, "maxReplicas": 9, "behavior": {"scaleUp": {"selectPolicy": "Min"}}})");
  EXPECT_EQ(def.behavior->scale_up.policies.size(), 2u);  // default policies filled in
  EXPECT_EQ(def.behavior->scale_up.select_policy, SelectPolicy::kMin);
  EXPECT_THROW(HpaSpec::from_json(R"({"minReplicas": 5, "maxReplicas": 2})"), InvalidArgument);
}
