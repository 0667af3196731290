// Knative activator throttler capacity maths (knative/serving pkg/activator/net/throttler.go).
#include "kubetune/sched/autoscale/throttler.hpp"

#include <algorithm>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::autoscale {
namespace {

// throttler.go minOneOrValue.
std::int64_t min_one_or_value(std::int64_t v) { return std::max<std::int64_t>(v, 1); }

std::int64_t checked_product(std::int64_t cc, std::int64_t n, const char* what) {
  std::int64_t out = 0;
  KT_CHECK(!__builtin_mul_overflow(cc, n, &out), InvalidArgument, "throttler: container_concurrency = ", cc,
           " times ", what, " = ", n, " overflows int64");
  return out;
}

void validate(const ThrottlerInput& in) {
  KT_CHECK(in.backends >= 0, InvalidArgument, "throttler: backends = ", in.backends, " must be >= 0");
  KT_CHECK(in.pod_trackers >= -1, InvalidArgument, "throttler: pod_trackers = ", in.pod_trackers,
           " must be >= -1 (-1 = one per backend)");
  KT_CHECK(in.container_concurrency >= 0, InvalidArgument, "throttler: container_concurrency = ",
           in.container_concurrency, " must be >= 0");
  KT_CHECK(in.activator_count >= 0, InvalidArgument, "throttler: activator_count = ", in.activator_count,
           " must be >= 0");
  KT_CHECK(in.activator_index >= -1, InvalidArgument, "throttler: activator_index = ", in.activator_index,
           " must be >= -1");
}

// throttler.go assignSlice on `trackers` address-sorted trackers. Upstream takes every tracker while this
// activator's index is unknown, with at most one tracker, or with a single activator; an activator count of 0
// (not known yet) is read the same way, where upstream would divide by zero.
void assign_slice(std::int64_t trackers, const ThrottlerInput& in, ThrottlerShare& s) {
  s.slice_end = trackers;
  if (in.activator_index == -1 || trackers <= 1 || in.activator_count <= 1) return;
  KT_CHECK(in.activator_index < in.activator_count, InvalidArgument, "throttler: activator_index = ",
           in.activator_index, " must be < activator_count = ", in.activator_count);
  const TrackerSlice t = pick_tracker_indices(trackers, in.activator_index, in.activator_count);
  s.slice_begin = t.begin;
  s.slice_end = t.end;
  // The last `remnants` trackers go one each to the lowest-indexed activators.
  if (t.remnants > in.activator_index) s.remnant = trackers - t.remnants + in.activator_index;
}

// throttler.go calculateCapacity(backendCount, numTrackers, activatorCount).
std::int64_t calculate_capacity(const ThrottlerInput& in, std::int64_t assigned) {
  std::int64_t target = 0;
  if (assigned > 0) {
    // Pod-IP routing: this activator's exclusive trackers bound its share.
    target = checked_product(in.container_concurrency, assigned, "assigned trackers");
  } else {
    // Cluster-IP routing: the whole revision's capacity, split evenly across the activators.
    target = checked_product(in.container_concurrency, in.backends, "backends");
    if (target > 0) target = min_one_or_value(target / min_one_or_value(in.activator_count));
  }
  // The breaker needs a finite bound; with cc = 0 the infinite breaker ignores its value beyond "> 0".
  if (in.backends > 0 && (in.container_concurrency == 0 || target > kRevisionMaxConcurrency)) {
    target = kRevisionMaxConcurrency;
  }
  return target;
}

}  // namespace

std::vector<std::int64_t> ThrottlerShare::tracker_indices() const {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(assigned()));
  for (std::int64_t i = slice_begin; i < slice_end; ++i) out.push_back(i);
  if (remnant >= 0) out.push_back(remnant);
  return out;
}

// throttler.go pickIndices.
TrackerSlice pick_tracker_indices(std::int64_t trackers, std::int64_t self_index, std::int64_t activators) {
  KT_CHECK(trackers >= 1, InvalidArgument, "pick_tracker_indices: trackers = ", trackers, " must be >= 1");
  KT_CHECK(activators >= 1, InvalidArgument, "pick_tracker_indices: activators = ", activators, " must be >= 1");
  KT_CHECK(self_index >= 0, InvalidArgument, "pick_tracker_indices: self_index = ", self_index, " must be >= 0");
  if (activators > trackers) {
    // Fewer pods than activators: round robin, one shared pod each.
    const std::int64_t b = self_index % trackers;
    return {b, b + 1, 0};
  }
  const std::int64_t size = trackers / activators;
  return {self_index * size, self_index * size + size, trackers % activators};
}

// throttler.go revisionThrottler.updateCapacity, with the breaker's view of the result (infiniteBreaker
// Capacity() is zeroOrOne of the value set; podTracker.Capacity() is 1 without a breaker).
ThrottlerShare throttler_share(const ThrottlerInput& in) {
  validate(in);
  ThrottlerShare s;
  const std::int64_t trackers = in.pod_trackers < 0 ? in.backends : in.pod_trackers;
  // Cluster-IP routing uses no pod trackers; cc = 0 shares every tracker (no per-pod limit to split).
  if (!in.via_cluster_ip) {
    if (in.container_concurrency > 0) assign_slice(trackers, in, s);
    else s.slice_end = trackers;
  }
  s.infinite_breaker = in.container_concurrency == 0;
  s.capacity = calculate_capacity(in, s.assigned());
  s.breaker_capacity = s.infinite_breaker ? (s.capacity == 0 ? 0 : 1) : s.capacity;
  if (s.assigned() > 0) s.tracker_capacity = s.infinite_breaker ? 1 : in.container_concurrency;
  return s;
}

}  // namespace kubetune::sched::autoscale
