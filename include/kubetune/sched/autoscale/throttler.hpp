// Knative activator throttler capacity: how one activator's share of a revision's concurrency is computed
// (knative/serving pkg/activator/net/throttler.go). Pure functions, no clock, no I/O.
#pragma once

#include <cstdint>
#include <vector>

namespace kubetune::sched::autoscale {

/// The revision breaker's upper bound (pkg/queue/breaker.go MaxBreakerCapacity = math.MaxInt32, used by
/// throttler.go as revisionMaxConcurrency).
inline constexpr std::int64_t kRevisionMaxConcurrency = 2147483647;

/// What one activator knows about a revision when it recomputes its capacity.
struct ThrottlerInput {
  /// Ready endpoints of the revision (len(update.Dests) upstream).
  std::int64_t backends = 0;
  /// Pod trackers held, sorted by address; -1 = one per ready backend, as handleUpdate builds them for pod-IP
  /// routing. Upstream's own tests set the two apart, hence the separate field.
  std::int64_t pod_trackers = -1;
  /// The revision's containerConcurrency; 0 = unlimited (the activator uses an infinite breaker).
  std::int64_t container_concurrency = 0;
  /// Activators in the revision's public endpoints; 0 = not known yet.
  std::int32_t activator_count = 0;
  /// This activator's position among the sorted activator addresses; -1 = not in the endpoints yet.
  std::int32_t activator_index = -1;
  /// Requests go through the revision's private ClusterIP service instead of to pod IPs.
  bool via_cluster_ip = false;
};

/// This activator's share. Trackers are indices into the address-sorted tracker list: the half-open range
/// [slice_begin, slice_end) plus, when the trackers do not divide evenly, one exclusive `remnant` index.
struct ThrottlerShare {
  /// What the throttler passes to its breaker's UpdateConcurrency (calculateCapacity).
  std::int64_t capacity = 0;
  /// Container concurrency 0: the breaker is infinite and admits everything once capacity > 0.
  bool infinite_breaker = false;
  /// What the breaker then reports as Capacity(): `capacity` for a finite breaker, 0 or 1 for an infinite one.
  std::int64_t breaker_capacity = 0;
  /// Capacity of each assigned pod tracker (resetTrackers: the container concurrency; 1 without a breaker).
  std::int64_t tracker_capacity = 0;
  std::int64_t slice_begin = 0;
  std::int64_t slice_end = 0;
  std::int64_t remnant = -1;  // -1 = none

  /// Number of trackers this activator owns (len(assignedTrackers)).
  std::int64_t assigned() const { return slice_end - slice_begin + (remnant >= 0 ? 1 : 0); }
  /// The owned tracker indices, ascending slice then the remnant (the order of assignSlice).
  std::vector<std::int64_t> tracker_indices() const;
};

/// Slice bounds [begin, end) and the count of remnant trackers (throttler.go pickIndices). Requires
/// 0 <= self_index, trackers >= 1 and activators >= 1; throws InvalidArgument naming the field otherwise.
struct TrackerSlice {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t remnants = 0;
};
TrackerSlice pick_tracker_indices(std::int64_t trackers, std::int64_t self_index, std::int64_t activators);

/// This activator's breaker capacity and tracker assignment (throttler.go updateCapacity with assignSlice and
/// calculateCapacity). Throws InvalidArgument naming the field for negative counts, an index below -1, an index
/// at or past activator_count when the trackers are sliced, or a capacity that overflows int64.
ThrottlerShare throttler_share(const ThrottlerInput& in);

}  // namespace kubetune::sched::autoscale
