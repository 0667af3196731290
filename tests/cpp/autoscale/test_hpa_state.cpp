// Snapshot of the HPA controller: recommendations and scale events are read, persisted as JSON and injected; a
// restored controller reconciles decision for decision as the original; bad states name the key and value.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "../error_of.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;

namespace {


// Rate-limited both ways (4 pods / 30 s up, 50 % / 60 s down) with a 60 s down stabilisation window, so that
// recommendations and both event lists decide what happens next.
HpaSpec limited_spec() {
  HpaBehavior b;
  b.scale_up.stabilization_window_s = 0;
  b.scale_up.policies = {ScalingPolicy{PolicyType::kPods, 4, 30}};
  b.scale_down.stabilization_window_s = 60;
  b.scale_down.policies = {ScalingPolicy{PolicyType::kPercent, 50, 60}};
  return HpaSpec{1, 50, b};
}

struct Step {
  double t;
  std::optional<std::int32_t> proposal;
};

std::vector<Step> script() {
  std::vector<Step> s;
  for (int k = 0; k < 40; ++k) s.push_back({15.0 * k, k < 12 ? 3 + 3 * k : k < 25 ? 6 : 30});
  return s;
}

}  // namespace

TEST(HpaState, RestoredControllerReconcilesAsTheOriginal) {
  for (const std::optional<HpaBehavior>& behaviour : {std::optional<HpaBehavior>{}, limited_spec().behavior}) {
    const HpaSpec spec{1, 50, behaviour};
    const std::vector<Step> in = script();
    bool saw_events = false;
    for (std::size_t k = 0; k < in.size(); k += 3) {
      HpaController original(spec);
      std::int32_t current = 2;
      for (std::size_t i = 0; i < k; ++i)
        current = original.reconcile(in[i].t, current, {in[i].proposal}).desired_replicas;
      const HpaController::State s = original.snapshot();
      saw_events = saw_events || (!s.scale_up_events.empty() && !s.scale_down_events.empty());
      HpaController restored(spec);
      restored.restore(HpaController::State::from_json(s.to_json()));
      EXPECT_EQ(restored.snapshot().to_json(), s.to_json());
      std::int32_t c1 = current, c2 = current;
      for (std::size_t i = k; i < in.size(); ++i) {
        const HpaDecision a = original.reconcile(in[i].t, c1, {in[i].proposal});
        const HpaDecision b = restored.reconcile(in[i].t, c2, {in[i].proposal});
        const std::string where = "split " + std::to_string(k) + ", step " + std::to_string(i);
        EXPECT_EQ(a.to_json(), b.to_json()) << where;  // replicas, rescale, reason and every condition
        c1 = a.desired_replicas;
        c2 = b.desired_replicas;
      }
    }
    EXPECT_EQ(saw_events, behaviour.has_value());  // events are kept only for behaviour policies
  }
}

TEST(HpaState, InjectedScaleEventsLimitTheNextScaleUp) {
  // 4 pods per 30 s: a scale-up of 4 injected 10 s ago uses the whole budget, so the HPA stays at its count;
  // one 31 s ago has left the period (horizontal.go getReplicasChangePerPeriod counts events after now - period).
  HpaController c(limited_spec());
  c.restore(HpaController::State{true, {{5, 90.0}}, {{4, 90.0, false}}, {}});
  HpaDecision d = c.reconcile(100, 5, {std::optional<std::int32_t>(20)});
  EXPECT_EQ(d.desired_replicas, 5);
  EXPECT_EQ(c.scale_up_events().size(), 1u);
  c.restore(HpaController::State{true, {{5, 90.0}}, {{4, 69.0, false}}, {}});
  d = c.reconcile(100, 5, {std::optional<std::int32_t>(20)});
  EXPECT_EQ(d.desired_replicas, 9);
  ASSERT_NE(d.condition(HpaConditionType::kScalingLimited), nullptr);
  EXPECT_EQ(d.condition(HpaConditionType::kScalingLimited)->reason, "ScaleUpLimit");
}

TEST(HpaState, BadStatesAreRefused) {
  const std::string good = HpaController(limited_spec()).snapshot().to_json();
  EXPECT_EQ(good, R"({"history_started":false,"recommendations":[],"scale_down_events":[],"scale_up_events":[]})");
  EXPECT_NE(error_of([] { HpaController::State::from_json(R"({"history_started":true})"); })
                .find("missing key 'recommendations'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              HpaController::State::from_json(R"({"history_started":true,"recommendations":[{"replicas":-1,)"
                                              R"("time_s":0}],"scale_down_events":[],"scale_up_events":[]})");
            }).find("HpaController state.recommendations[0].replicas = -1 must be in [0, 2147483647]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              HpaController::State::from_json(R"({"history_started":true,"recommendations":[],)"
                                              R"("scale_down_events":[{"change":1,"time_s":0}],"scale_up_events":[]})");
            }).find("scale_down_events[0]: missing key 'outdated'"),
            std::string::npos);
  HpaController c(limited_spec());
  EXPECT_NE(error_of([&] { c.restore(HpaController::State{false, {{3, 0.0}}, {}, {}}); })
                .find("history_started = false with 1 recommendations"),
            std::string::npos);
  EXPECT_EQ(c.snapshot().to_json(), good);
}
