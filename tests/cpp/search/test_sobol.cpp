// Tests of the Sobol' generator (against scipy's unscrambled values, net property, determinism) and searcher.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/registration.hpp"
#include "kubetune/search/sobol.hpp"

using kubetune::search::Sobol;
using kubetune::search::SobolSequence;

TEST(SobolSequence, UnscrambledMatchesScipy) {
  // scipy.stats.qmc.Sobol(5, scramble=False).random(8) (scipy 1.17); d=3 is the first three columns.
  const double ref[8][5] = {{0, 0, 0, 0, 0},
                            {0.5, 0.5, 0.5, 0.5, 0.5},
                            {0.75, 0.25, 0.25, 0.25, 0.75},
                            {0.25, 0.75, 0.75, 0.75, 0.25},
                            {0.375, 0.375, 0.625, 0.875, 0.375},
                            {0.875, 0.875, 0.125, 0.375, 0.875},
                            {0.625, 0.125, 0.875, 0.625, 0.625},
                            {0.125, 0.625, 0.375, 0.125, 0.125}};
  for (std::size_t d : {3u, 4u, 5u}) {
    SobolSequence s(d, false);
    std::vector<double> x(d);
    for (int i = 0; i < 8; ++i) {
      s.next(x.data());
      for (std::size_t j = 0; j < d; ++j) EXPECT_DOUBLE_EQ(x[j], ref[i][j]) << "d=" << d << " i=" << i;
    }
  }
}

TEST(SobolSequence, HighDimensionsMatchScipy) {
  // scipy.stats.qmc.Sobol(1111, scramble=False).random(1024): row 1023 columns 1000, 1100, 1110; row 777 col 1110;
  // Sobol(8192, ...).random(64): row 63 columns 8191, 8000, 4096.
  SobolSequence s(1111, false);
  std::vector<double> x(1111);
  s.point(1023, x.data());
  EXPECT_DOUBLE_EQ(x[1000], 0.1591796875);
  EXPECT_DOUBLE_EQ(x[1100], 0.2216796875);
  EXPECT_DOUBLE_EQ(x[1110], 0.5888671875);
  s.point(777, x.data());
  EXPECT_DOUBLE_EQ(x[1110], 0.5849609375);
  s.point(5, x.data());
  EXPECT_DOUBLE_EQ(x[1110], 0.375);
  ASSERT_GE(kubetune::search::sobol_max_dims(), 1111u);
  if (kubetune::search::sobol_max_dims() >= 8192) {
    SobolSequence big(8192, false);
    std::vector<double> y(8192);
    big.point(63, y.data());
    EXPECT_DOUBLE_EQ(y[8191], 0.640625);
    EXPECT_DOUBLE_EQ(y[8000], 0.953125);
    EXPECT_DOUBLE_EQ(y[4096], 0.953125);
  }
  EXPECT_THROW(SobolSequence(kubetune::search::sobol_max_dims() + 1), kubetune::InvalidArgument);
  EXPECT_THROW(SobolSequence(0), kubetune::InvalidArgument);
}

TEST(SobolSequence, SequentialEqualsRandomAccessAndSeek) {
  for (bool scr : {false, true}) {
    SobolSequence s(7, scr, 3);
    std::vector<double> a(7), b(7);
    for (std::uint64_t i = 0; i < 300; ++i) {
      s.next(a.data());
      s.point(i, b.data());
      ASSERT_EQ(a, b) << i;
    }
    SobolSequence t(7, scr, 3);
    t.seek(123);
    t.next(a.data());
    s.point(123, b.data());
    EXPECT_EQ(a, b);
    EXPECT_EQ(t.index(), 124u);
  }
}

// Each of the first 2^m points (any block aligned on 2^m) falls in its own interval [j/2^m, (j+1)/2^m) in
// every coordinate, and every 2-D projection of dims (0, 1) is a (0, m, 2)-net: each 2^a x 2^(m-a) box once.
TEST(SobolSequence, ScrambledPointsStratify) {
  const std::size_t dim = 12;
  for (std::uint64_t seed : {0u, 1u, 99u}) {
    SobolSequence s(dim, true, seed);
    for (int m : {1, 4, 8, 10}) {
      const std::uint64_t n = std::uint64_t{1} << m;
      for (std::uint64_t start : {std::uint64_t{0}, n, 3 * n}) {
        std::vector<double> X(n * dim);
        s.seek(start);
        s.generate(n, dim, X.data());
        for (std::size_t j = 0; j < dim; ++j) {
          std::vector<int> cells(n, 0);
          for (std::uint64_t i = 0; i < n; ++i) {
            double u = X[i * dim + j];
            ASSERT_GE(u, 0.0);
            ASSERT_LT(u, 1.0);
            ++cells[static_cast<std::size_t>(u * static_cast<double>(n))];
          }
          for (int c : cells) ASSERT_EQ(c, 1) << "seed " << seed << " m " << m << " dim " << j;
        }
        // Dimensions 0 and 1 of Sobol' form a (0, m, 2)-net (t = 0), preserved by the scramble.
        for (int a = 0; a <= m; ++a) {
          std::set<std::pair<std::uint64_t, std::uint64_t>> boxes;
          for (std::uint64_t i = 0; i < n; ++i)
            boxes.insert({static_cast<std::uint64_t>(X[i * dim] * std::ldexp(1.0, a)),
                          static_cast<std::uint64_t>(X[i * dim + 1] * std::ldexp(1.0, m - a))});
          ASSERT_EQ(boxes.size(), n) << "a=" << a << " m=" << m;
        }
      }
    }
  }
}

TEST(SobolSequence, DeterministicAndSeedDependent) {
  SobolSequence a(1200, true, 5), b(1200, true, 5), c(1200, true, 6);
  std::vector<double> xa(1200 * 4), xb(1200 * 4), xc(1200 * 4);
  a.generate(4, 1200, xa.data());
  b.generate(4, 1200, xb.data());
  c.generate(4, 1200, xc.data());
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa, xc);
  // A scrambled first point is not the origin; coordinates of a lower-dimensional sequence are a prefix.
  EXPECT_GT(*std::max_element(xa.begin(), xa.begin() + 1200), 0.0);
  SobolSequence small(3, true, 5);
  std::vector<double> xs(3);
  small.next(xs.data());
  for (int j = 0; j < 3; ++j) EXPECT_EQ(xs[j], xa[j]);
  // Mean of many scrambled points is close to 1/2 in every coordinate (all 1200 dims are usable).
  SobolSequence d(1200, true, 1);
  std::vector<double> X(1024 * 1200);
  d.generate(1024, 1200, X.data());
  for (std::size_t j = 0; j < 1200; j += 37) {
    double m = 0;
    for (int i = 0; i < 1024; ++i) m += X[i * 1200 + j];
    EXPECT_NEAR(m / 1024, 0.5, 1.0 / 1024);  // exact stratification bounds the error by 1/n
  }
  EXPECT_THROW(d.generate(1, 3, X.data()), kubetune::InvalidArgument);
}

namespace {
// Equal points, NaN (inactive) matching NaN.
bool same_point(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

kubetune::SearchSpace mixed_space() {
  kubetune::SearchSpace s;
  s.add_float("lr", 1e-4, 1e-1, true);
  s.add_int("layers", 1, 8);
  s.add_categorical("opt", {"sgd", "adam"});
  s.add_float("momentum", 0.0, 0.99);
  s.set_condition("momentum", "opt", {"sgd"});
  return s;
}
}  // namespace

TEST(SobolSearcher, StudyIndicesBatchAndReload) {
  kubetune::search::register_basic_searchers();
  auto make = [] { return kubetune::make_searcher({{"type", "sobol"}, {"seed", "7"}}); };
  kubetune::Study st(mixed_space(), make(), {kubetune::Direction::Minimize}, 1);
  auto batch = st.ask(4);
  ASSERT_EQ(batch.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(batch[i].system_attrs.at("sobol_index"), static_cast<double>(i));
  // Points are the mapped Sobol' points; the scramble seed mixes the searcher's seed with the study's.
  SobolSequence seq(4, true, 7ULL ^ (1ULL * 0x9E3779B97F4A7C15ULL));
  std::vector<double> u(4);
  for (std::size_t i = 0; i < 4; ++i) {
    seq.next(u.data());
    EXPECT_TRUE(same_point(batch[i].x, mixed_space().from_unit(u)));
  }
  for (auto& t : batch) st.tell(t.id, 1.0);
  auto json = st.to_json();
  auto more = st.ask(3);
  auto reloaded = kubetune::Study::from_json(json);
  auto again = reloaded->ask(3);
  ASSERT_EQ(more.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_point(more[i].x, again[i].x));
    EXPECT_EQ(more[i].system_attrs.at("sobol_index"), 4.0 + static_cast<double>(i));
  }
  // Conditional parameter: inactive exactly when opt != sgd.
  for (const auto& t : st.trials()) EXPECT_EQ(std::isnan(t.x[3]), t.x[2] != 0.0);
}

TEST(SobolSearcher, ConfigRoundTripAndErrors) {
  kubetune::search::register_basic_searchers();
  auto s = kubetune::make_searcher({{"type", "sobol"}, {"random_state", 3}, {"scramble", "false"}, {"skip", 1}});
  auto c = s->config();
  EXPECT_EQ(c["seed"], 3);
  EXPECT_EQ(c["scramble"], false);
  EXPECT_EQ(kubetune::make_searcher(c)->config(), c);
  EXPECT_THROW(kubetune::make_searcher({{"type", "sobol"}, {"sead", 3}}), kubetune::InvalidArgument);
  EXPECT_THROW(kubetune::make_searcher({{"type", "sobol"}, {"seed", -1}}), kubetune::InvalidArgument);
  EXPECT_THROW(kubetune::make_searcher({{"type", "sobol"}, {"scramble", "maybe"}}), kubetune::InvalidArgument);
  // skip=1 with an unscrambled sequence starts at (0.5, ...), i.e. the middle of the space.
  kubetune::SearchSpace sp;
  sp.add_float("a", 0, 10);
  kubetune::Study st(sp, kubetune::make_searcher(c));
  auto t = st.ask(2);
  EXPECT_DOUBLE_EQ(t[0].x[0], 5.0);
  EXPECT_DOUBLE_EQ(t[1].x[0], 7.5);
  // Too many dimensions for the table: rejected when the study is created.
  kubetune::SearchSpace wide;
  for (std::size_t i = 0; i <= kubetune::search::sobol_max_dims(); ++i) wide.add_float("x" + std::to_string(i), 0, 1);
  EXPECT_THROW(kubetune::Study(wide, kubetune::make_searcher({{"type", "sobol"}})), kubetune::InvalidArgument);
}
