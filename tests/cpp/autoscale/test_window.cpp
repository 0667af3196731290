// Tests of the Knative metric windows: linear/weighted bucket averages and the trailing max window.
#include <gtest/gtest.h>

#include <cmath>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/window.hpp"

using namespace kubetune::sched::autoscale;

TEST(BucketWindow, PartialWindowAveragesOverBucketsSeen) {
  BucketWindow w(5.0, 1.0);
  EXPECT_TRUE(w.is_empty(0.0));
  EXPECT_EQ(w.window_average(0.0), 0.0);
  w.record(100.0, 1.0);
  w.record(101.2, 2.0);
  w.record(102.9, 3.0);
  EXPECT_FALSE(w.is_empty(102.0));
  EXPECT_DOUBLE_EQ(w.window_average(102.0), 2.0);  // (1 + 2 + 3) / 3 buckets seen
  // Two seconds without data: still the three buckets, average over min(3, 5 - 2).
  EXPECT_DOUBLE_EQ(w.window_average(104.0), 2.0);
  // At 106 only the bucket of 102 is inside [102, 106]; the average is over that one bucket.
  EXPECT_DOUBLE_EQ(w.window_average(106.0), 3.0);
  // More than a window since the last write: empty, average 0.
  EXPECT_TRUE(w.is_empty(108.0));
  EXPECT_EQ(w.window_average(108.0), 0.0);
}

TEST(BucketWindow, SameBucketSumsAndGapsAreZeros) {
  BucketWindow w(4.0, 1.0);
  w.record(10.1, 2.0);
  w.record(10.7, 3.0);  // same bucket: summed (the scraper sends one stat, the activator others)
  EXPECT_DOUBLE_EQ(w.window_average(10.0), 5.0);
  w.record(13.0, 1.0);  // buckets 11 and 12 are gaps -> zeros
  EXPECT_DOUBLE_EQ(w.window_average(13.0), (5.0 + 0 + 0 + 1.0) / 4.0);
  w.record(14.0, 4.0);  // bucket 10 leaves the window
  EXPECT_DOUBLE_EQ(w.window_average(14.0), (0 + 0 + 1.0 + 4.0) / 4.0);
}

TEST(BucketWindow, ResetAfterAWholeWindowAndOldWritesDropped) {
  BucketWindow w(3.0, 1.0);
  w.record(0.0, 9.0);
  w.record(1.0, 9.0);
  w.record(10.0, 1.0);  // > window since the last write: start over
  EXPECT_DOUBLE_EQ(w.window_average(10.0), 1.0);
  w.record(5.0, 100.0);  // older than last write - window: ignored
  EXPECT_DOUBLE_EQ(w.window_average(10.0), 1.0);
  w.record(9.0, 3.0);  // inside the window but before the first write: accepted, first write moves back
  EXPECT_DOUBLE_EQ(w.window_average(10.0), 2.0);
}

TEST(BucketWindow, FloorsToSixDigits) {
  BucketWindow w(3.0, 1.0);
  w.record(0.0, 1.0);
  w.record(1.0, 1.0);
  w.record(2.0, 0.0);
  EXPECT_DOUBLE_EQ(w.window_average(2.0), 0.666666);
}

TEST(BucketWindow, ResizeKeepsRecentBuckets) {
  BucketWindow w(4.0, 1.0);
  for (int t = 0; t < 4; ++t) w.record(t, t + 1.0);  // 1 2 3 4
  w.resize(2.0, 3.0);
  EXPECT_DOUBLE_EQ(w.window_average(3.0), 3.5);  // 3 and 4 kept
  EXPECT_THROW(w.resize(0.5, 3.0), kubetune::InvalidArgument);
}

TEST(BucketWindow, ValidatesArguments) {
  EXPECT_THROW(BucketWindow(0.5, 1.0), kubetune::InvalidArgument);
  EXPECT_THROW(BucketWindow(10.0, 0.5), kubetune::InvalidArgument);
  BucketWindow w(10.0);
  EXPECT_THROW(w.record(NAN, 1.0), kubetune::InvalidArgument);
}

TEST(WeightedBucketWindow, SmoothingCoefficient) {
  // 1 - (1 - 0.9999)^(1/nb), floored at 0.2.
  EXPECT_NEAR(smoothing_coefficient(4), 0.9, 1e-12);
  EXPECT_NEAR(smoothing_coefficient(10), 1.0 - std::pow(1e-4, 0.1), 1e-12);
  EXPECT_DOUBLE_EQ(smoothing_coefficient(60), 0.2);  // 60-bucket stable window: minimum exponent
  EXPECT_THROW(smoothing_coefficient(0.0), kubetune::InvalidArgument);
}

TEST(WeightedBucketWindow, NewestBucketsWeighMost) {
  WeightedBucketWindow w(4.0, 1.0);  // alpha = 0.9
  const double data[] = {10, 10, 5, 5};  // newest last
  for (int t = 0; t < 4; ++t) w.record(t, data[t]);
  const double a = 0.9;
  const double expect = 5 * a + 5 * a * (1 - a) + 10 * a * (1 - a) * (1 - a) + 10 * a * std::pow(1 - a, 3);
  EXPECT_NEAR(w.window_average(3.0), expect, 1e-12);
  // Reversed data gives a larger average, the linear one would not change.
  WeightedBucketWindow r(4.0, 1.0);
  for (int t = 0; t < 4; ++t) r.record(t, data[3 - t]);
  EXPECT_GT(r.window_average(3.0), w.window_average(3.0));
  // One empty second later the weights shift by one bucket (the oldest drops out).
  const double shifted = 5 * a * (1 - a) + 5 * a * std::pow(1 - a, 2) + 10 * a * std::pow(1 - a, 3);
  EXPECT_NEAR(w.window_average(4.0), shifted, 1e-12);
  EXPECT_EQ(w.window_average(20.0), 0.0);
}

TEST(MaxTimeWindow, TrailingMaximum) {
  MaxTimeWindow m(10.0, 2.0);  // 5 buckets of 2 s
  EXPECT_EQ(m.capacity(), 5u);
  EXPECT_EQ(m.current(), 0.0);
  m.record(0.0, 10.0);
  m.record(2.0, 2.0);
  EXPECT_EQ(m.current(), 10.0);
  m.record(8.0, 3.0);
  EXPECT_EQ(m.current(), 10.0);  // 10 recorded at index 0, now index 4: still inside
  m.record(10.0, 2.0);
  EXPECT_EQ(m.current(), 3.0);  // 10 left the window; 3 (index 4) is the max
  m.record(10.5, 7.0);           // same index: keep the larger
  EXPECT_EQ(m.current(), 7.0);
  m.record(30.0, 1.0);
  EXPECT_EQ(m.current(), 1.0);
}

TEST(MaxTimeWindow, MatchesBruteForce) {
  MaxTimeWindow m(7.0, 1.0);
  std::vector<std::pair<int, double>> hist;
  unsigned x = 12345;
  for (int t = 0; t < 500; ++t) {
    x = x * 1103515245u + 12345u;
    const double v = (x >> 16) % 100;
    m.record(t, v);
    hist.emplace_back(t, v);
    double best = -1;
    for (const auto& [ti, vi] : hist)
      if (t - ti < 7) best = std::max(best, vi);
    ASSERT_EQ(m.current(), best) << "t=" << t;
  }
}
