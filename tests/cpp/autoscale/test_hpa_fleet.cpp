// HpaFleet: the one HPA fleet type the C API and Python wrap (batch reconcile, state snapshot and restore).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "../error_of.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;

namespace {

HpaSpec behaviour_spec() {
  HpaSpec s;
  s.min_replicas = 1;
  s.max_replicas = 60;
  s.behavior = HpaBehavior{};
  s.behavior->scale_down.stabilization_window_s = 60.0;
  s.behavior->scale_down.policies = {{PolicyType::kPods, 2, 30.0}};
  return s;
}

struct Inputs {
  std::vector<std::int32_t> current, proposals;
};

Inputs random_inputs(kubetune::Rng& rng, std::size_t n) {
  Inputs in{std::vector<std::int32_t>(n), std::vector<std::int32_t>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    in.current[i] = static_cast<std::int32_t>(rng.integer(0, 40));
    in.proposals[i] = static_cast<std::int32_t>(rng.integer(-1, 70));  // -1: that HPA's metric failed
  }
  return in;
}

// Reconciles `fleet` and each of `singles` alike for `steps` sync periods from `t0`; every result must agree.
void expect_as_singles(HpaFleet& fleet, std::vector<HpaController>& singles, kubetune::Rng& rng, double t0,
                       int steps, int n_threads) {
  const std::size_t n = fleet.size();
  for (int step = 0; step < steps; ++step) {
    const double now = t0 + 15.0 * step;
    const Inputs in = random_inputs(rng, n);
    const HpaFleet::Results& out = fleet.reconcile(now, in.current, in.proposals, n_threads);
    ASSERT_EQ(out.desired_replicas.size(), n);
    ASSERT_EQ(out.rescale.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::optional<std::int32_t> p =
          in.proposals[i] < 0 ? std::nullopt : std::optional<std::int32_t>(in.proposals[i]);
      const HpaDecision d = singles[i].reconcile(now, in.current[i], {p});
      ASSERT_EQ(out.desired_replicas[i], d.desired_replicas) << "HPA " << i << " at " << now;
      ASSERT_EQ(out.rescale[i], d.rescale ? 1 : 0) << "HPA " << i << " at " << now;
    }
    EXPECT_EQ(&fleet.results(), &out);
  }
}

}  // namespace

TEST(HpaFleet, ReconcilesAsItsControllersOneByOne) {
  for (const HpaSpec& spec : {HpaSpec{1, 50, std::nullopt}, behaviour_spec()}) {
    const HpaControllerConfig cfg{120.0, 0.1, 15.0};
    const std::size_t n = 300;
    HpaFleet fleet(spec, n, cfg);
    ASSERT_EQ(fleet.size(), n);
    std::vector<HpaController> singles(n, HpaController(spec, cfg));
    kubetune::Rng rng(5);
    expect_as_singles(fleet, singles, rng, 0.0, 12, 1);
    expect_as_singles(fleet, singles, rng, 180.0, 4, 2);
    EXPECT_EQ(fleet.controller(7).snapshot().to_json(), singles[7].snapshot().to_json());
    EXPECT_EQ(fleet.spec().max_replicas, spec.max_replicas);
    EXPECT_EQ(fleet.config().downscale_stabilization_window_s, 120.0);
  }
}

TEST(HpaFleet, ParallelReconcileOfALargeFleetMatches) {
  const std::size_t n = 5000;  // past the batch's threshold for threads
  HpaFleet fleet(behaviour_spec(), n);
  std::vector<HpaController> singles(n, HpaController(behaviour_spec()));
  kubetune::Rng rng(9);
  expect_as_singles(fleet, singles, rng, 0.0, 3, 2);
}

TEST(HpaFleet, SnapshotRestoredMidRunContinuesIdentically) {
  const std::size_t n = 64;
  HpaFleet a(behaviour_spec(), n);
  kubetune::Rng rng(17);
  for (int step = 0; step < 6; ++step) {
    const Inputs in = random_inputs(rng, n);
    a.reconcile(15.0 * step, in.current, in.proposals);
  }
  const std::string saved = a.snapshot_json();
  const nlohmann::json j = nlohmann::json::parse(saved);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), n);
  EXPECT_EQ(j[0].at("recommendations").size(), 6u);  // one recommendation a reconcile, all within the window
  bool any_events = false;
  for (const auto& e : j) any_events = any_events || !e.at("scale_up_events").empty();
  EXPECT_TRUE(any_events);

  HpaFleet b(behaviour_spec(), n);
  b.restore_json(saved);
  EXPECT_EQ(b.snapshot_json(), saved);
  HpaFleet c(behaviour_spec(), n);
  c.restore(a.snapshot());  // the typed form
  EXPECT_EQ(c.snapshot_json(), saved);
  for (int step = 6; step < 30; ++step) {
    const Inputs in = random_inputs(rng, n);
    const std::vector<std::int32_t> da = a.reconcile(15.0 * step, in.current, in.proposals).desired_replicas;
    const std::vector<std::uint8_t> ra = a.results().rescale;
    const HpaFleet::Results& rb = b.reconcile(15.0 * step, in.current, in.proposals, 2);
    ASSERT_EQ(rb.desired_replicas, da) << "step " << step;
    ASSERT_EQ(rb.rescale, ra) << "step " << step;
    ASSERT_EQ(c.reconcile(15.0 * step, in.current, in.proposals).desired_replicas, da) << "step " << step;
  }
  EXPECT_EQ(b.snapshot_json(), a.snapshot_json());
  // A fresh fleet, not restored, decides differently: the restored history mattered.
  HpaFleet fresh(behaviour_spec(), n);
  EXPECT_NE(fresh.snapshot_json(), a.snapshot_json());
}

TEST(HpaFleet, CorruptedSnapshotIsRefusedNamingTheField) {
  const std::size_t n = 3;
  HpaFleet a(behaviour_spec(), n);
  a.reconcile(0.0, {2, 3, 4}, {8, 1, -1});
  a.reconcile(15.0, {8, 3, 4}, {9, 1, 5});
  const nlohmann::json good = nlohmann::json::parse(a.snapshot_json());

  HpaFleet b(behaviour_spec(), n);
  const std::string before = b.snapshot_json();
  const auto refused = [&](const nlohmann::json& state) {
    const std::string e = error_of([&] { b.restore_json(state.dump()); });
    EXPECT_EQ(b.snapshot_json(), before) << "a refused state changed the fleet";
    return e;
  };
  nlohmann::json bad = good;
  bad[1]["recommendations"][0]["replicas"] = -1;
  EXPECT_EQ(refused(bad),
            "HpaFleet state[1]: HpaController state.recommendations[0].replicas = -1 must be in [0, 2147483647]");
  bad = good;
  bad[2]["scale_up_events"] = nlohmann::json::array({{{"change", 2}, {"time_s", "soon"}, {"outdated", false}}});
  EXPECT_EQ(refused(bad),
            "HpaFleet state[2]: HpaController state.scale_up_events[0].time_s = \"soon\" must be a finite number");
  bad = good;
  bad[0]["surprise"] = 1;
  EXPECT_EQ(refused(bad), "HpaFleet state[0]: HpaController state: unknown key 'surprise'");
  bad = good;
  bad[0].erase("scale_down_events");
  EXPECT_EQ(refused(bad), "HpaFleet state[0]: HpaController state: missing key 'scale_down_events'");
  bad = good;
  bad[2]["history_started"] = false;
  EXPECT_NE(refused(bad).find("HpaFleet state[2]: HpaController state: history_started = false with 2 recommendations"),
            std::string::npos);
  bad = good;
  bad.erase(bad.begin());
  EXPECT_EQ(refused(bad), "HpaFleet state must be an array of 3 controller states, got 2 entries");
  EXPECT_NE(refused(nlohmann::json::object()).find("HpaFleet state must be an array of 3 controller states, got"),
            std::string::npos);
  EXPECT_NE(error_of([&] { b.restore_json("[1, 2"); }).find("HpaFleet state JSON"), std::string::npos);
  EXPECT_EQ(b.snapshot_json(), before);

  std::vector<HpaController::State> states = a.snapshot();
  states[1].recommendations[0].time = std::numeric_limits<double>::infinity();
  EXPECT_NE(error_of([&] { b.restore(states); })
                .find("HpaFleet state[1]: HpaController state: recommendations[0].time_s = inf must be finite"),
            std::string::npos);
  states.pop_back();
  EXPECT_EQ(error_of([&] { b.restore(states); }), "HpaFleet state must have 3 controller states, got 2");
  EXPECT_EQ(b.snapshot_json(), before);
  b.restore_json(good.dump());
  EXPECT_EQ(b.snapshot_json(), good.dump());
}

TEST(HpaFleet, InputsAreChecked) {
  HpaFleet f(HpaSpec{1, 10, std::nullopt}, 3);
  const std::string before = f.snapshot_json();
  EXPECT_EQ(error_of([&] { f.reconcile(0.0, {1, 1}, {1, 1, 1}); }),
            "HpaFleet.reconcile: current_replicas has 2 entries, must equal the fleet size 3");
  EXPECT_EQ(error_of([&] { f.reconcile(0.0, {1, 1, 1}, {1}); }),
            "HpaFleet.reconcile: proposals has 1 entries, must equal the fleet size 3");
  EXPECT_EQ(error_of([&] { f.reconcile(0.0, {1, -2, 1}, {1, 1, 1}); }), "current_replicas[1] = -2 must be >= 0");
  EXPECT_NE(error_of([&] { f.reconcile(std::nan(""), {1, 1, 1}, {1, 1, 1}); }).find("now = nan must be finite"),
            std::string::npos);
  EXPECT_NE(error_of([&] { f.reconcile(0.0, nullptr, 3, nullptr, 3); }).find("must not be null"), std::string::npos);
  EXPECT_EQ(f.snapshot_json(), before) << "a refused reconcile changed the fleet";
  EXPECT_NE(error_of([&] { f.controller(3); }).find("controller 3 of 3"), std::string::npos);
  EXPECT_NE(error_of([] { HpaFleet(HpaSpec{1, 0, std::nullopt}, 0); }).find("max"), std::string::npos);
  EXPECT_NE(error_of([] { HpaFleet(HpaSpec{}, 2, HpaControllerConfig{300.0, 0.1, 0.0}); }).find("sync_period_s"),
            std::string::npos);
  HpaFleet empty(HpaSpec{}, 0);
  EXPECT_TRUE(empty.reconcile(0.0, nullptr, 0, nullptr, 0).desired_replicas.empty());
  EXPECT_EQ(empty.snapshot_json(), "[]");
  empty.restore_json("[]");
}
