// Activator throttler capacity: rows ported from knative/serving pkg/activator/net/throttler_test.go, each
// naming the upstream `file:TestName/subtest` it reproduces (values are facts of those tests; the code is ours).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/throttler.hpp"

using namespace kubetune::sched::autoscale;

namespace {

using Indices = std::vector<std::int64_t>;

ThrottlerInput input(std::int64_t backends, std::int64_t trackers, std::int64_t cc, std::int32_t count,
                     std::int32_t index, bool cluster_ip = false) {
  ThrottlerInput in;
  in.backends = backends;
  in.pod_trackers = trackers;
  in.container_concurrency = cc;
  in.activator_count = count;
  in.activator_index = index;
  in.via_cluster_ip = cluster_ip;
  return in;
}

}  // namespace

TEST(Throttler, UpdateCapacityRows) {
  struct Row {
    const char* upstream;
    ThrottlerInput in;
    std::int64_t want_breaker;
  };
  const char* f = "throttler_test.go:TestThrottlerUpdateCapacity/";
  // Upstream's struct leaves activatorIndex at its zero value 0 unless set; rows without podTrackers have none.
  // The three rows whose backend count is -1 (an unused placeholder upstream) pass the pod count here, which
  // kubetune requires to be >= 0; with trackers present and cc > 0 the backend count does not enter the result.
  const std::vector<Row> rows = {
      {"capacity: 1, cc: 10", input(1, 0, 10, 0, 0), 10},
      {"capacity: 10, cc: 10", input(10, 0, 10, 0, 0), 100},
      {"capacity: 100, cc: 10", input(100, 0, 10, 0, 0), 1000},
      {"numActivators: 5, capacity: 10, cc: 10", input(10, 0, 10, 5, 0), 20},
      {"numActivators: 200, capacity: 10, cc: 10", input(10, 0, 10, 200, 0), 1},
      {"numActivators: 200, capacity: 0, cc: 10", input(0, 0, 10, 200, 0), 0},
      {"newInfiniteBreaker, numActivators: 0, capacity: 0, cc: 0", input(0, 0, 0, 0, 0), 0},
      {"newInfiniteBreaker, numActivators: 0, capacity: 1, cc: 0", input(1, 0, 0, 0, 0), 1},
      {"newInfiniteBreaker, numActivators: 0, capacity: 10, cc: 0", input(10, 0, 0, 0, 0), 1},
      {"newInfiniteBreaker, numActivators: 200, capacity: 0, cc: 0", input(0, 0, 0, 200, 0), 0},
      {"newInfiniteBreaker, numActivators: 200, capacity: 1, cc: 0", input(1, 0, 0, 200, 0), 1},
      {"numActivators: 1, capacity: 0, cc: 10, pods: 1", input(0, 1, 10, 1, 0), 10},
      {"2 backends. numActivators: 1, capacity: -1, cc: 10, pods: 2", input(-1, 2, 10, 1, 0), 20},
      {"2 activators. numActivators: 2, capacity: -1, cc: 10, pods: 2", input(-1, 2, 10, 2, 0), 10},
      {"numActivators: 2, index: 0, pods: 3, cc: 1. Capacity is expected to 20 (2 * 10)", input(-1, 3, 10, 2, 0), 20},
      {"numActivators: 2, index: 1, pods: 3, cc: 1. Capacity is expected to 10 (1 * 10)", input(-1, 3, 10, 2, 1), 10},
      {"numActivators: 2, index: 0, pods: 5, cc: 1. Capacity is expected to 3 (2 + 1)", input(5, 5, 1, 2, 0), 3},
      {"numActivators: 2, index: 1, pods: 5, cc: 1. Capacity is expected to 2", input(5, 5, 1, 2, 1), 2},
      {"Infinite capacity with podIP trackers.", input(1, 3, 0, 2, 1), 1},
  };
  for (Row row : rows) {
    if (row.in.backends < 0) row.in.backends = row.in.pod_trackers;  // the -1 placeholder, see above
    const ThrottlerShare s = throttler_share(row.in);
    EXPECT_EQ(s.breaker_capacity, row.want_breaker) << f << row.upstream;
    EXPECT_EQ(s.infinite_breaker, row.in.container_concurrency == 0) << f << row.upstream;
  }
  // checkAssignedPod: with cc = 0 every tracker is assigned, whatever the activator index.
  EXPECT_EQ(throttler_share(rows.back().in).tracker_indices(), (Indices{0, 1, 2}))
      << f << "Infinite capacity with podIP trackers.";
}

TEST(Throttler, CalculateCapacityClampsToRevisionMax) {
  // throttler_test.go:TestThrottlerCalculateCapacity/over revisionMaxConcurrency
  const ThrottlerShare s = throttler_share(input(1, kRevisionMaxConcurrency + 5, 0, 1, 0));
  EXPECT_EQ(s.capacity, kRevisionMaxConcurrency);
  EXPECT_EQ(s.assigned(), kRevisionMaxConcurrency + 5);
  EXPECT_EQ(kRevisionMaxConcurrency, std::numeric_limits<std::int32_t>::max());
  // A finite cc whose product passes the bound is clamped the same way once backends exist ...
  EXPECT_EQ(throttler_share(input(3, -1, kRevisionMaxConcurrency, 1, 0)).capacity, kRevisionMaxConcurrency);
  // ... and an int64 overflow is an error, not a wrapped value.
  EXPECT_THROW(throttler_share(input(3, -1, std::numeric_limits<std::int64_t>::max(), 1, 0)),
               kubetune::InvalidArgument);
}

TEST(Throttler, PodAssignmentEndToEnd) {
  {
    // TestPodAssignmentFinite: ip0..ip5, cc 42, 4 activators, index 0 -> {ip0, ip4}, 2 * 42.
    const char* up = "throttler_test.go:TestPodAssignmentFinite";
    const ThrottlerShare s = throttler_share(input(6, -1, 42, 4, 0));
    EXPECT_EQ(s.tracker_indices(), (Indices{0, 4})) << up;
    EXPECT_EQ(s.breaker_capacity, 84) << up;
    EXPECT_EQ(s.tracker_capacity, 42) << up;
    const ThrottlerShare zero = throttler_share(input(0, -1, 42, 4, 0));  // scaled to zero
    EXPECT_EQ(zero.assigned(), 0) << up;
    EXPECT_EQ(zero.breaker_capacity, 0) << up;
  }
  {
    // TestPodAssignmentInfinite: 3 pods, cc 0, activators not known yet (0, index -1).
    const char* up = "throttler_test.go:TestPodAssignmentInfinite";
    const ThrottlerShare s = throttler_share(input(3, -1, 0, 0, -1));
    EXPECT_EQ(s.assigned(), 3) << up;
    EXPECT_EQ(s.breaker_capacity, 1) << up;
    EXPECT_EQ(s.tracker_capacity, 1) << up;
    const ThrottlerShare zero = throttler_share(input(0, -1, 0, 0, -1));
    EXPECT_EQ(zero.assigned(), 0) << up;
    EXPECT_EQ(zero.breaker_capacity, 0) << up;
  }
  {
    // TestActivatorsIndexUpdate: revisionCC1, 3 pods, this activator 130.0.0.2 of {130.0.0.1, 130.0.0.2}.
    const char* up = "throttler_test.go:TestActivatorsIndexUpdate";
    const ThrottlerShare s = throttler_share(input(3, -1, 1, 2, 1));
    EXPECT_EQ(s.assigned(), 1) << up;
    EXPECT_EQ(s.breaker_capacity, 1) << up;
  }
}

TEST(Throttler, PickIndicesRows) {
  struct Row {
    const char* upstream;
    std::int64_t pods, acts, idx, want_b, want_e, want_r;
  };
  const char* f = "throttler_test.go:TestPickIndices/";
  const std::vector<Row> rows = {
      {"1 pod, 1 activator", 1, 1, 0, 0, 1, 0},
      {"1 pod, 2 activators, this is 0", 1, 2, 0, 0, 1, 0},
      {"1 pod, 2 activators, this is 1", 1, 2, 1, 0, 1, 0},
      {"2 pods, 3 activators, this is 1", 2, 3, 1, 1, 2, 0},
      {"2 pods, 3 activators, this is 2", 2, 3, 2, 0, 1, 0},
      {"3 pods, 3 activators, this is 2", 3, 3, 2, 2, 3, 0},
      {"10 pods, 3 activators this is 0", 10, 3, 0, 0, 3, 1},
      {"10 pods, 3 activators this is 1", 10, 3, 1, 3, 6, 1},
      {"10 pods, 3 activators this is 2", 10, 3, 2, 6, 9, 1},
      {"150 pods, 5 activators this is 0", 150, 5, 0, 0, 30, 0},
      {"150 pods, 5 activators this is 1", 150, 5, 1, 30, 60, 0},
      {"150 pods, 5 activators this is 4", 150, 5, 4, 120, 150, 0},
  };
  for (const Row& r : rows) {
    const TrackerSlice s = pick_tracker_indices(r.pods, r.idx, r.acts);
    EXPECT_EQ(s.begin, r.want_b) << f << r.upstream;
    EXPECT_EQ(s.end, r.want_e) << f << r.upstream;
    EXPECT_EQ(s.remnants, r.want_r) << f << r.upstream;
  }
  EXPECT_THROW(pick_tracker_indices(0, 0, 1), kubetune::InvalidArgument);
  EXPECT_THROW(pick_tracker_indices(3, 0, 0), kubetune::InvalidArgument);
  EXPECT_THROW(pick_tracker_indices(3, -1, 2), kubetune::InvalidArgument);
}

TEST(Throttler, AssignSliceRows) {
  struct Row {
    const char* upstream;
    std::int64_t trackers;
    std::int32_t idx, acts;
    Indices want;
  };
  // assignSlice runs for cc > 0 only; trackers "1", "2", "3" are indices 0, 1, 2.
  const char* f = "throttler_test.go:TestAssignSlice/";
  const std::vector<Row> rows = {
      {"notrackers", 0, 0, 1, {}},
      {"idx=1, na=1", 3, 1, 1, {0, 1, 2}},
      {"idx=-1", 3, -1, 1, {0, 1, 2}},
      {"idx=1 na=3", 3, 1, 3, {1}},
      {"len=1", 1, 1, 3, {0}},
      {"idx=1, breaker", 3, 1, 2, {1}},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(throttler_share(input(r.trackers, -1, 1, r.acts, r.idx)).tracker_indices(), r.want)
        << f << r.upstream;
  }
}

TEST(Throttler, ClusterIpSplitsWholeCapacity) {
  // Cluster-IP routing: no trackers, cc * backends divided by the activators, at least 1 while positive.
  const ThrottlerShare s = throttler_share(input(10, -1, 10, 3, 2, true));
  EXPECT_EQ(s.capacity, 33);
  EXPECT_EQ(s.assigned(), 0);
  EXPECT_EQ(s.tracker_capacity, 0);
  EXPECT_EQ(throttler_share(input(1, -1, 1, 7, 0, true)).capacity, 1);
  EXPECT_EQ(throttler_share(input(0, -1, 10, 3, 0, true)).capacity, 0);
  // cc = 0 behind a ClusterIP: the infinite breaker opens as soon as a backend is ready.
  const ThrottlerShare inf = throttler_share(input(2, -1, 0, 3, 1, true));
  EXPECT_EQ(inf.capacity, kRevisionMaxConcurrency);
  EXPECT_EQ(inf.breaker_capacity, 1);
}

TEST(Throttler, SlicesPartitionTrackersAcrossActivators) {
  // With at least as many trackers as activators every tracker has exactly one owner, and the activators'
  // capacities sum to the revision's (cc * trackers).
  for (std::int64_t trackers = 2; trackers <= 40; ++trackers) {
    for (std::int32_t acts = 2; acts <= 8 && acts <= trackers; ++acts) {
      std::multiset<std::int64_t> owned;
      std::int64_t total = 0;
      for (std::int32_t i = 0; i < acts; ++i) {
        const ThrottlerShare s = throttler_share(input(trackers, -1, 5, acts, i));
        const Indices idx = s.tracker_indices();
        owned.insert(idx.begin(), idx.end());
        total += s.capacity;
      }
      ASSERT_EQ(owned.size(), static_cast<std::size_t>(trackers)) << trackers << " / " << acts;
      ASSERT_EQ(std::set<std::int64_t>(owned.begin(), owned.end()).size(), owned.size()) << trackers << " / " << acts;
      ASSERT_EQ(total, 5 * trackers) << trackers << " / " << acts;
    }
  }
}

TEST(Throttler, RejectsBadInput) {
  EXPECT_THROW(throttler_share(input(-1, -1, 1, 1, 0)), kubetune::InvalidArgument);
  EXPECT_THROW(throttler_share(input(1, -2, 1, 1, 0)), kubetune::InvalidArgument);
  EXPECT_THROW(throttler_share(input(1, -1, -1, 1, 0)), kubetune::InvalidArgument);
  EXPECT_THROW(throttler_share(input(1, -1, 1, -1, 0)), kubetune::InvalidArgument);
  EXPECT_THROW(throttler_share(input(1, -1, 1, 1, -2)), kubetune::InvalidArgument);
  // An index past the activators where the trackers are actually sliced (upstream would index out of range).
  try {
    throttler_share(input(6, -1, 1, 3, 3));
    FAIL() << "expected InvalidArgument";
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("activator_index = 3"), std::string::npos) << e.what();
  }
}
