// KpaFleet: the one fleet type the C API and Python wrap (batch decide, state snapshot and restore).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;

TEST(KpaFleet, DecidesAsItsDecidersOneByOne) {
  DeciderSpec s = make_decider_spec(KpaConfig{}, KpaRevision{});
  s.scale_down_delay_s = 6;
  const std::size_t n = 300;
  std::vector<std::int32_t> start(n);
  for (std::size_t i = 0; i < n; ++i) start[i] = static_cast<std::int32_t>(i % 5);
  KpaFleet fleet(s, n, start, 1.0);
  ASSERT_EQ(fleet.size(), n);
  std::vector<KpaDecider> singles;
  for (std::size_t i = 0; i < n; ++i) singles.emplace_back(s, start[i], 1.0);
  kubetune::Rng rng(11);
  std::vector<std::int32_t> ready(n);
  std::vector<double> st(n), pa(n);
  for (int tick = 0; tick < 10; ++tick) {
    for (std::size_t i = 0; i < n; ++i) {
      ready[i] = static_cast<std::int32_t>(rng.integer(0, 40));
      st[i] = rng.uniform(0, 2000);
      pa[i] = rng.uniform(0, 2000);
    }
    const auto& out = fleet.decide(2.0 + tick * 2.0, ready.data(), st.data(), pa.data(), tick % 2 ? 2 : 1);
    ASSERT_EQ(out.size(), n);
    for (std::size_t i = 0; i < n; ++i) {
      const ScaleResult e = singles[i].decide(2.0 + tick * 2.0, ready[i], st[i], pa[i]);
      ASSERT_EQ(out[i].desired_pod_count, e.desired_pod_count) << i;
      ASSERT_EQ(out[i].excess_burst_capacity, e.excess_burst_capacity) << i;
      ASSERT_EQ(out[i].panicking, e.panicking) << i;
    }
    EXPECT_EQ(&fleet.results(), &out);
  }
  EXPECT_EQ(fleet.decider(7).panicking(), singles[7].panicking());
  EXPECT_THROW(fleet.decider(n), InvalidArgument);
}

TEST(KpaFleet, StateRoundTripsAllOrNothing) {
  const DeciderSpec s = make_decider_spec(KpaConfig{}, KpaRevision{});
  KpaFleet a(s, 4);
  const std::vector<std::int32_t> ready{1, 2, 3, 4};
  const std::vector<double> high{900, 900, 900, 900};
  a.decide(0.0, ready.data(), high.data(), high.data());
  KpaFleet b(s, 4);
  b.restore_json(a.snapshot_json());
  EXPECT_EQ(b.snapshot_json(), a.snapshot_json());
  const std::string before = b.snapshot_json();
  EXPECT_THROW(b.restore_json("[]"), InvalidArgument);
  EXPECT_EQ(b.snapshot_json(), before);
  try {
    KpaFleet bad(s, 4, {1, 2, 3});
    ADD_FAILURE() << "a short ready_pods_at_start was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ready_pods_at_start has 3 entries, expected 4"), std::string::npos);
  }
  KpaFleet empty(s, 0);
  EXPECT_TRUE(empty.decide(0.0, nullptr, nullptr, nullptr).empty());
}
