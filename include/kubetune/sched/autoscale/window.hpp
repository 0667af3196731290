// Time-bucketed metric windows of the Knative autoscaler: linear and weighted-exponential averages, max window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kubetune::sched::autoscale {

/// Sliding window of per-bucket sums over `window_s` seconds in `granularity_s`-second buckets, with the
/// averaging rules of Knative Serving's `aggregation.TimedFloat64Buckets` (pkg/autoscaler/aggregation):
/// a partial window is averaged over the buckets seen since the first write; gaps shorter than the window
/// count as zeros; after a whole window without writes the state resets and the average is 0.
/// Times are seconds (any epoch); bucket of time t is floor(t / granularity). Explicit `now` everywhere.
class BucketWindow {
 public:
  /// window_s >= granularity_s >= 1 (whole seconds, as Knative requires second precision).
  BucketWindow(double window_s, double granularity_s = 1.0);

  /// Adds `value` to the bucket of time `now`. Values more than a window older than the last write are
  /// dropped; writes into an older bucket inside the window are accepted.
  void record(double now, double value);
  /// Linear average over the valid buckets at time `now` (floored to 6 decimals, as upstream).
  double window_average(double now) const;
  /// True when nothing was recorded during the last window before `now`.
  bool is_empty(double now) const;
  /// Changes the window length keeping the most recent buckets (Knative's ResizeWindow).
  void resize(double window_s, double now);

  double window_s() const { return window_s_; }
  double granularity_s() const { return gran_; }
  std::size_t num_buckets() const { return buckets_.size(); }

  /// Everything a window's future averages depend on, for persisting it across restarts. `buckets` are the
  /// sums of bucket indices last - n + 1 ... last (oldest first); `total` is kept as accumulated, not re-summed,
  /// so that a restored window averages bit for bit as the original.
  struct State {
    bool written = false;
    std::int64_t first = 0;
    std::int64_t last = 0;
    double total = 0.0;
    std::vector<double> buckets;
  };
  State snapshot() const;
  /// Throws InvalidArgument (prefixed with `what`) when the bucket count differs from this window's, a value is
  /// not finite, or first > last.
  void restore(const State& state, const std::string& what = "window");

 protected:
  std::int64_t index_of(double t) const;
  bool empty_at(std::int64_t now_idx) const;

  std::vector<double> buckets_;
  double window_s_;
  double gran_;
  double total_ = 0.0;
  bool written_ = false;
  std::int64_t first_ = 0;  // bucket index of the first write of the current run
  std::int64_t last_ = 0;   // bucket index of the last write
};

/// Same buckets, averaged with exponentially decaying weights (Knative `WeightedFloat64Buckets`,
/// annotation `autoscaling.knative.dev/metric-aggregation-algorithm: weightedExponential`). The smoothing
/// coefficient is max(1 - (1 - 0.9999)^(1/nb), 0.2) for nb buckets, so the weights of one window sum to
/// at least 0.9999; the newest bucket weighs alpha, the one before alpha(1-alpha), and so on.
class WeightedBucketWindow : public BucketWindow {
 public:
  WeightedBucketWindow(double window_s, double granularity_s = 1.0);
  /// Weighted average at `now`; empty buckets between the last write and now weigh as zeros.
  double window_average(double now) const;
  double smoothing_coefficient() const { return alpha_; }
  void resize(double window_s, double now);

 private:
  double alpha_;
};

/// Smoothing coefficient for `num_buckets` buckets (see WeightedBucketWindow).
double smoothing_coefficient(double num_buckets);

/// Maximum over a trailing time window, O(1) amortised (ascending-maxima algorithm; Knative
/// `aggregation/max.TimeWindow`, used for scale-down delay). Index of time t is floor(t / granularity).
class MaxTimeWindow {
 public:
  MaxTimeWindow(double duration_s, double granularity_s);
  /// Records `value` at time `now` (times must not decrease).
  void record(double now, double value);
  /// Maximum of the values recorded during the last `duration` (0 before any record).
  double current() const;
  std::size_t capacity() const { return ring_.size(); }

  /// A retained maximum: `value` recorded in time slot `index` = floor(t / granularity).
  struct Entry {
    double value;
    std::int64_t index;
  };
  /// The retained maxima, oldest first (indices ascending, values strictly descending): the whole state.
  std::vector<Entry> entries() const;
  /// Replaces the contents with `entries` as entries() returns them. Throws InvalidArgument (prefixed with
  /// `what`) naming the first entry that is not finite, breaks the order, or lies outside one window of the newest.
  void restore(const std::vector<Entry>& entries, const std::string& what = "max window");

 private:
  std::vector<Entry> ring_;
  std::size_t first_ = 0, length_ = 0;
  double gran_;
};

}  // namespace kubetune::sched::autoscale
