// PointSet (exact canonical keys, hashing), point_count / is_discrete, draw_unseen and sample_unseen; the
// seed-derivation rule of rng.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/point_set.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/core/space.hpp"

using namespace kubetune;

namespace {
std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
}  // namespace

TEST(PointSet, CanonicalKeys) {
  PointSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(std::vector<double>{1.0}));
  EXPECT_TRUE(s.insert(std::vector<double>{0.0, 1.5}));
  EXPECT_FALSE(s.insert(std::vector<double>{-0.0, 1.5}));  // -0 == +0
  EXPECT_TRUE(s.contains(std::vector<double>{-0.0, 1.5}));
  EXPECT_FALSE(s.contains(std::vector<double>{1.5, 0.0}));  // order matters
  EXPECT_FALSE(s.contains(std::vector<double>{0.0}));       // so does the length
  EXPECT_FALSE(s.contains(std::vector<double>{0.0, 1.5, 0.0}));
  EXPECT_FALSE(s.contains(std::vector<double>{0.0, std::nextafter(1.5, 2.0)}));  // exact, not approximate

  // Every NaN (inactive parameter) is one value, whatever its sign or payload; it differs from every number,
  // including -1e308 and -DBL_MAX, which the former ad-hoc keys used as NaN's stand-in.
  const double nan_a = std::numeric_limits<double>::quiet_NaN();
  const double nan_b = -std::nan("0x123");
  EXPECT_TRUE(s.insert(std::vector<double>{nan_a, 2.0}));
  EXPECT_FALSE(s.insert(std::vector<double>{nan_b, 2.0}));
  EXPECT_FALSE(s.contains(std::vector<double>{-1e308, 2.0}));
  EXPECT_FALSE(s.contains(std::vector<double>{-std::numeric_limits<double>::max(), 2.0}));
  EXPECT_TRUE(s.insert(std::vector<double>{-1e308, 2.0}));
  EXPECT_TRUE(s.insert(std::vector<double>{}));  // the empty point is a point
  EXPECT_FALSE(s.insert(std::vector<double>{}));
  EXPECT_EQ(s.size(), 4u);

  EXPECT_EQ(PointSet::canonical_bits(-0.0), 0u);
  EXPECT_EQ(PointSet::canonical_bits(nan_b), 0x7FF8DEADBEEF0001ULL);
  EXPECT_EQ(PointSet::canonical_bits(2.5), bits(2.5));

  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(std::vector<double>{0.0, 1.5}));
  EXPECT_TRUE(s.insert(std::vector<double>{0.0, 1.5}));
}

TEST(PointSet, HashIsTheDocumentedStableChain) {
  const std::vector<double> x{0.25, -0.0, std::nan(""), 7.0};
  std::uint64_t h = 0x9E3779B97F4A7C15ULL ^ 4u;
  for (std::uint64_t b : {bits(0.25), std::uint64_t{0}, std::uint64_t{0x7FF8DEADBEEF0001ULL}, bits(7.0)})
    h = mix64(h ^ b);
  EXPECT_EQ(PointSet::hash(x), h);
  EXPECT_EQ(PointSet::hash(std::vector<double>{0.25, 0.0, -std::nan(""), 7.0}), h);
  // A pinned value: the hash must not change between versions or platforms.
  EXPECT_EQ(PointSet::hash(std::vector<double>{1.0, 2.0}), hash_combine(hash_combine(kGoldenGamma ^ 2u, bits(1.0)), bits(2.0)));
}

TEST(PointSet, AgreesWithAnOrderedSetOnManyPoints) {
  // Small integer grid so that duplicates are frequent; std::set of canonical bit vectors is the oracle.
  Rng rng(42);
  PointSet s;
  std::set<std::vector<std::uint64_t>> oracle;
  for (int i = 0; i < 20000; ++i) {
    std::vector<double> x(static_cast<std::size_t>(1 + rng.below(3)));
    for (double& v : x) v = rng.below(10) == 0 ? std::nan("") : static_cast<double>(rng.integer(-4, 4));
    std::vector<std::uint64_t> key;
    for (double v : x) key.push_back(PointSet::canonical_bits(v));
    const bool fresh = oracle.insert(key).second;
    ASSERT_EQ(s.contains(x), !fresh) << i;
    ASSERT_EQ(s.insert(x), fresh) << i;
    ASSERT_TRUE(s.contains(x));
  }
  EXPECT_EQ(s.size(), oracle.size());

  PointSet big;
  big.reserve(50000, 2);
  for (int i = 0; i < 50000; ++i) ASSERT_TRUE(big.insert(std::vector<double>{i * 0.5, -i * 1.0}));
  for (int i = 0; i < 50000; ++i) ASSERT_TRUE(big.contains(std::vector<double>{i * 0.5, -i * 1.0}));
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(big.contains(std::vector<double>{i * 0.5, i + 1.0}));
  EXPECT_EQ(big.size(), 50000u);
}

TEST(PointSet, PointCountAndDiscreteness) {
  SearchSpace s;
  s.add_int("n", 1, 6).add_categorical("c", {"a", "b", "c"}).add_discrete("d", {0.1, 0.2});
  EXPECT_EQ(point_count(s), 36u);
  EXPECT_EQ(point_count(s, 36), 36u);
  EXPECT_EQ(point_count(s, 35), 0u);  // over the cap
  EXPECT_TRUE(is_discrete(s));
  s.add_float("x", 0.0, 1.0);
  EXPECT_EQ(point_count(s), 0u);
  EXPECT_FALSE(is_discrete(s));
  SearchSpace huge;
  for (int i = 0; i < 30; ++i) huge.add_int("p" + std::to_string(i), 0, 999);
  EXPECT_EQ(point_count(huge), 0u);  // 1000^30 overflows 64 bits
  EXPECT_TRUE(is_discrete(huge));
  EXPECT_EQ(point_count(SearchSpace{}), 1u);
}

TEST(PointSet, SampleUnseenKeepsTheDrawStream) {
  SearchSpace s;
  s.add_int("n", 1, 3).add_categorical("c", {"a", "b"});
  PointSet seen;
  // What a plain loop over space.sample() would do: the same draws in the same order.
  Rng a(7, 1), b(7, 1);
  for (int k = 0; k < 6; ++k) {
    auto x = sample_unseen(s, seen, a, 50);
    ASSERT_TRUE(x.has_value()) << k;
    std::vector<double> y = s.sample(b);
    while (seen.contains(y)) y = s.sample(b);
    EXPECT_EQ(*x, y) << k;
    EXPECT_EQ(a.state(), b.state()) << k;
    seen.insert(*x);
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_FALSE(sample_unseen(s, seen, a, 50).has_value());  // exhausted

  // draw_unseen: the last draw when every try repeats; the first fresh one otherwise.
  int calls = 0;
  UnseenDraw d = draw_unseen(seen, 4, [&] {
    ++calls;
    return std::vector<double>{1.0, 0.0};
  });
  EXPECT_FALSE(d.fresh);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(d.x, (std::vector<double>{1.0, 0.0}));
  d = draw_unseen(seen, 4, [&] { return std::vector<double>{9.0, 0.0}; });
  EXPECT_TRUE(d.fresh);

  try {
    (void)sample_unseen(s, seen, a, 0);
    FAIL() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("max_tries = 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(draw_unseen(seen, -1, [] { return std::vector<double>{}; }), InvalidArgument);
}

TEST(SeedRule, DeriveSeedIsTheRngStreamRule) {
  // Rng(parent, stream) seeds itself from derive_seed(parent, stream) (state word 0 = mix64(seed + gamma)).
  for (std::uint64_t parent : {0ULL, 1ULL, 42ULL, ~0ULL})
    for (std::uint64_t stream : {0ULL, 1ULL, 0x67726964ULL}) {
      const std::uint64_t x = derive_seed(parent, stream);
      EXPECT_EQ(x, mix64(parent) ^ mix64(stream * 0xD1B54A32D192ED03ULL + 0x632BE59BD9B4E019ULL));
      EXPECT_EQ(Rng(parent, stream).state()[0], mix64(x + kGoldenGamma));
    }
  EXPECT_NE(derive_seed(1, 2), derive_seed(2, 1));
  EXPECT_EQ(hash_combine(5, 9), mix64(5 ^ 9));
  // Pinned (the values of the code before derive_seed existed): studies saved today replay these streams.
  EXPECT_EQ(derive_seed(42, 7), 0x8771257b61e5fff7ULL);
  EXPECT_EQ(Rng(42, 7).next_u64(), 0xe7109e0d916b18fULL);
}
