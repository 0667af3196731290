// kubetune::shuffle: Fisher-Yates over Rng::below, the same permutation on every standard library.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kubetune/core/rng.hpp"

using kubetune::Rng;

TEST(RngShuffle, IsTheDocumentedFisherYates) {
  std::vector<int> v(10);
  std::iota(v.begin(), v.end(), 0);
  Rng a(42), b(42);
  kubetune::shuffle(v.begin(), v.end(), a);
  // By hand: for i = n-1 .. 1, swap element i with element below(i + 1).
  std::vector<int> w(10);
  std::iota(w.begin(), w.end(), 0);
  for (std::uint64_t i = w.size(); i > 1; --i) std::swap(w[i - 1], w[b.below(i)]);
  EXPECT_EQ(v, w);
  EXPECT_EQ(a.state(), b.state());  // n - 1 draws, no more
  std::vector<int> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
  // Pinned: Rng(42)'s stream gives this permutation (xoshiro256** and Lemire's bounded draw, both our own code).
  EXPECT_EQ(v, (std::vector<int>{9, 7, 6, 5, 2, 8, 3, 1, 4, 0}));
}

TEST(RngShuffle, EmptyAndSingleDrawNothingAndEveryPositionIsReached) {
  Rng r(1);
  const auto before = r.state();
  std::vector<int> none, one{7};
  kubetune::shuffle(none.begin(), none.end(), r);
  kubetune::shuffle(one.begin(), one.end(), r);
  EXPECT_EQ(r.state(), before);
  EXPECT_EQ(one, std::vector<int>{7});
  // Uniformity, roughly: element 0 lands in each of 4 slots about a quarter of the time.
  std::vector<int> count(4, 0);
  for (int t = 0; t < 4000; ++t) {
    std::vector<int> v{0, 1, 2, 3};
    kubetune::shuffle(v.begin(), v.end(), r);
    ++count[static_cast<std::size_t>(std::find(v.begin(), v.end(), 0) - v.begin())];
  }
  for (int c : count) EXPECT_NEAR(c, 1000, 150);
}
