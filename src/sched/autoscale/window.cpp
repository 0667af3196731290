// Bucketed metric windows (linear, weighted-exponential) and the trailing max window of the Knative KPA.
#include "kubetune/sched/autoscale/window.hpp"

#include <algorithm>
#include <cmath>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::autoscale {

namespace {
// Knative: minExponent = 0.2, weightPrecision = 0.9999 (pkg/autoscaler/aggregation/bucketing.go).
constexpr double kMinExponent = 0.2;
constexpr double kWeightPrecision = 0.9999;

std::size_t ring_index(std::int64_t i, std::size_t n) {
  const auto m = static_cast<std::int64_t>(n);
  return static_cast<std::size_t>(((i % m) + m) % m);
}

double floor_6_digits(double f) { return std::floor(f * 1e6) / 1e6; }

void check_window(double window_s, double granularity_s) {
  KT_CHECK(std::isfinite(granularity_s) && granularity_s >= 1.0 && granularity_s == std::floor(granularity_s),
           InvalidArgument, "granularity_s = ", granularity_s, " must be a whole number of seconds >= 1");
  KT_CHECK(std::isfinite(window_s) && window_s >= granularity_s, InvalidArgument, "window_s = ", window_s,
           " must be >= granularity_s = ", granularity_s);
}
}  // namespace

double smoothing_coefficient(double num_buckets) {
  KT_CHECK(num_buckets >= 1.0, InvalidArgument, "num_buckets = ", num_buckets, " must be >= 1");
  return std::max(1.0 - std::pow(1.0 - kWeightPrecision, 1.0 / num_buckets), kMinExponent);
}

// ------------------------------------------------------------------------------------------ BucketWindow
BucketWindow::BucketWindow(double window_s, double granularity_s) : window_s_(window_s), gran_(granularity_s) {
  check_window(window_s, granularity_s);
  buckets_.assign(static_cast<std::size_t>(std::ceil(window_s / granularity_s)), 0.0);
}

std::int64_t BucketWindow::index_of(double t) const {
  KT_CHECK(std::isfinite(t), InvalidArgument, "time = ", t, " must be finite");
  return static_cast<std::int64_t>(std::floor(t / gran_));
}

bool BucketWindow::empty_at(std::int64_t now_idx) const {
  return !written_ || static_cast<double>(now_idx - last_) * gran_ > window_s_;
}

bool BucketWindow::is_empty(double now) const { return empty_at(index_of(now)); }

void BucketWindow::record(double now, double value) {
  const std::int64_t b = index_of(now);
  const std::size_t n = buckets_.size();
  if (!written_) {
    std::fill(buckets_.begin(), buckets_.end(), 0.0);
    total_ = 0.0;
    first_ = last_ = b;
    written_ = true;
  } else if (b != last_) {
    // Accept only writes newer than (last write - window).
    if (static_cast<double>(b) * gran_ + window_s_ <= static_cast<double>(last_) * gran_) return;
    if (first_ > b) first_ = b;
    if (b > last_) {
      if (static_cast<double>(b - last_) * gran_ >= window_s_) {
        // A whole window without writes: start over.
        first_ = b;
        std::fill(buckets_.begin(), buckets_.end(), 0.0);
        total_ = 0.0;
      } else {
        for (std::int64_t i = last_ + 1; i <= b; ++i) {
          const std::size_t k = ring_index(i, n);
          total_ -= buckets_[k];
          buckets_[k] = 0.0;
        }
      }
      last_ = b;
    }
  }
  buckets_[ring_index(b, n)] += value;
  total_ += value;
}

double BucketWindow::window_average(double now) const {
  if (!written_) return 0.0;
  const std::int64_t nidx = index_of(now);
  const std::int64_t d = nidx - last_;
  const auto nb = static_cast<double>(buckets_.size());
  const auto seen = static_cast<double>(last_ - first_ + 1);
  if (d <= 0) return floor_6_digits(total_ / std::min(seen, nb));
  if (static_cast<double>(d) * gran_ < window_s_) {
    double ret = total_;
    for (std::int64_t i = last_ + 1; i <= nidx; ++i) ret -= buckets_[ring_index(i, buckets_.size())];
    return floor_6_digits(ret / std::min(seen, nb - static_cast<double>(d)));
  }
  return 0.0;
}

void BucketWindow::resize(double window_s, double now) {
  check_window(window_s, gran_);
  if (window_s == window_s_) return;
  const std::size_t nn = static_cast<std::size_t>(std::ceil(window_s / gran_));
  std::vector<double> nb(nn, 0.0);
  double total = 0.0;
  if (written_ && static_cast<double>(index_of(now) - last_) * gran_ <= window_s_) {
    const std::size_t on = buckets_.size();
    std::int64_t t = last_;
    for (std::size_t i = 0; i < std::min(nn, on); ++i, --t) {
      const double v = buckets_[ring_index(t, on)];
      nb[ring_index(t, nn)] = v;
      total += v;
    }
    first_ = last_ - static_cast<std::int64_t>(on) + 1;
  } else {
    written_ = false;
  }
  window_s_ = window_s;
  buckets_ = std::move(nb);
  total_ = total;
}

BucketWindow::State BucketWindow::snapshot() const {
  State s{written_, first_, last_, total_, {}};
  const std::size_t n = buckets_.size();
  s.buckets.reserve(n);
  for (std::int64_t i = last_ - static_cast<std::int64_t>(n) + 1; i <= last_; ++i)
    s.buckets.push_back(buckets_[ring_index(i, n)]);
  return s;
}

void BucketWindow::restore(const State& s, const std::string& what) {
  const std::size_t n = buckets_.size();
  KT_CHECK(s.buckets.size() == n, InvalidArgument, what, ": buckets has ", s.buckets.size(),
           " values, the window has ", n);
  for (std::size_t k = 0; k < n; ++k)
    KT_CHECK(std::isfinite(s.buckets[k]), InvalidArgument, what, ": buckets[", k, "] = ", s.buckets[k],
             " must be finite");
  KT_CHECK(std::isfinite(s.total), InvalidArgument, what, ": total = ", s.total, " must be finite");
  KT_CHECK(s.first <= s.last, InvalidArgument, what, ": first = ", s.first, " must be <= last = ", s.last);
  written_ = s.written;
  first_ = s.first;
  last_ = s.last;
  total_ = s.total;
  for (std::size_t k = 0; k < n; ++k)
    buckets_[ring_index(s.last - static_cast<std::int64_t>(n) + 1 + static_cast<std::int64_t>(k), n)] = s.buckets[k];
}

// ---------------------------------------------------------------------------------- WeightedBucketWindow
WeightedBucketWindow::WeightedBucketWindow(double window_s, double granularity_s)
    : BucketWindow(window_s, granularity_s), alpha_(autoscale::smoothing_coefficient(std::ceil(window_s / granularity_s))) {}

double WeightedBucketWindow::window_average(double now) const {
  const std::int64_t nidx = index_of(now);
  if (empty_at(nidx)) return 0.0;
  const std::size_t n = buckets_.size();
  std::int64_t num = static_cast<std::int64_t>(n);
  double mult = alpha_;
  if (nidx > last_) {
    const std::int64_t zeros = nidx - last_;
    mult *= std::pow(1.0 - alpha_, static_cast<double>(zeros));
    num -= zeros;
  }
  double ret = 0.0;
  for (std::int64_t i = 0; i < num; ++i) {
    ret += buckets_[ring_index(last_ - i, n)] * mult;
    mult *= 1.0 - alpha_;
  }
  return ret;
}

void WeightedBucketWindow::resize(double window_s, double now) {
  BucketWindow::resize(window_s, now);
  alpha_ = autoscale::smoothing_coefficient(std::ceil(window_s / gran_));
}

// ----------------------------------------------------------------------------------------- MaxTimeWindow
MaxTimeWindow::MaxTimeWindow(double duration_s, double granularity_s) : gran_(granularity_s) {
  KT_CHECK(std::isfinite(granularity_s) && granularity_s > 0, InvalidArgument, "granularity_s = ", granularity_s,
           " must be > 0");
  KT_CHECK(std::isfinite(duration_s) && duration_s > 0, InvalidArgument, "duration_s = ", duration_s,
           " must be > 0");
  ring_.assign(static_cast<std::size_t>(std::ceil(duration_s / granularity_s)), Entry{0.0, 0});
}

void MaxTimeWindow::record(double now, double value) {
  KT_CHECK(std::isfinite(now), InvalidArgument, "time = ", now, " must be finite");
  const auto index = static_cast<std::int64_t>(std::floor(now / gran_));
  const std::size_t n = ring_.size();
  // 1. Drop entries that are not larger than the new value: they can never be the maximum again.
  while (length_ > 0 && !(value < ring_[(first_ + length_ - 1) % n].value)) --length_;
  // 2. Drop entries that fell out of the window (oldest first).
  while (length_ > 0 && index - ring_[first_].index >= static_cast<std::int64_t>(n)) {
    --length_;
    first_ = (first_ + 1) % n;
  }
  // 2b. Several values at one index keep the largest.
  if (length_ > 0) {
    const Entry& last = ring_[(first_ + length_ - 1) % n];
    if (last.index == index) {
      value = std::max(value, last.value);
      --length_;
    }
  }
  // 3. Append (the list stays in descending order of value).
  ring_[(first_ + length_) % n] = Entry{value, index};
  ++length_;
}

double MaxTimeWindow::current() const { return ring_[first_].value; }

std::vector<MaxTimeWindow::Entry> MaxTimeWindow::entries() const {
  std::vector<Entry> out;
  out.reserve(length_);
  for (std::size_t k = 0; k < length_; ++k) out.push_back(ring_[(first_ + k) % ring_.size()]);
  return out;
}

void MaxTimeWindow::restore(const std::vector<Entry>& entries, const std::string& what) {
  const std::size_t n = ring_.size();
  KT_CHECK(entries.size() <= n, InvalidArgument, what, ": ", entries.size(), " entries, the window holds at most ", n);
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    KT_CHECK(std::isfinite(e.value), InvalidArgument, what, "[", k, "]: value = ", e.value, " must be finite");
    if (k == 0) continue;
    const Entry& p = entries[k - 1];
    // record() keeps only maxima newer than every larger value: later entries are smaller and newer.
    KT_CHECK(e.index > p.index && e.value < p.value, InvalidArgument, what, "[", k, "] = (slot ", e.index, ", ",
             e.value, ") must be newer and smaller than [", k - 1, "] = (slot ", p.index, ", ", p.value, ")");
  }
  if (!entries.empty())
    KT_CHECK(entries.back().index - entries.front().index < static_cast<std::int64_t>(n), InvalidArgument, what,
             ": slots ", entries.front().index, " .. ", entries.back().index, " span more than the window's ", n);
  std::fill(ring_.begin(), ring_.end(), Entry{0.0, 0});
  std::copy(entries.begin(), entries.end(), ring_.begin());
  first_ = 0;
  length_ = entries.size();
}

}  // namespace kubetune::sched::autoscale
