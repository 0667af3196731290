// SearchSpace: validation errors, encodings, priors, conditions, JSON and Katib import.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/space.hpp"

using namespace kubetune;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "<no InvalidArgument>";
}

TEST(Space, RejectsBadRangesNamingTheParameter) {
  SearchSpace s;
  EXPECT_NE(error_of([&] { s.add_float("lr", 1.0, 0.5); }).find("'lr'"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_float("a", 1.0, 1.0); }).find("empty or inverted"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_int("n", 5, 1); }).find("inverted"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_float("lr", 0.0, 1.0, true); }).find("log-scale bounds must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.add_int("k", 0, 10, true); }).find("> 0"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_float("d", 0.0, 1.0, false, 2.0); }).find("larger than the range"),
            std::string::npos);
  EXPECT_NE(error_of([&] { s.add_int("i", 0, 3, false, 5); }).find("larger than the range"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_float("nan", std::nan(""), 1.0); }).find("finite"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_categorical("c", {}); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_categorical("c", {"a", "a"}); }).find("duplicate choice 'a'"), std::string::npos);
  EXPECT_NE(error_of([&] { s.add_discrete("d", {1, 2, 2}); }).find("distinct"), std::string::npos);
  EXPECT_EQ(s.size(), 0u) << "failed additions must not change the space";
  s.add_float("x", 0, 1);
  EXPECT_NE(error_of([&] { s.add_int("x", 0, 1); }).find("duplicate parameter name 'x'"), std::string::npos);
  EXPECT_EQ(s.size(), 1u);
}

TEST(Space, AssignmentRoundTripAndErrors) {
  SearchSpace s;
  s.add_float("lr", 1e-4, 1e-1, true).add_int("layers", 1, 8).add_discrete("bs", {64, 16, 32}).add_categorical(
      "opt", {"sgd", "adam"});
  Assignment a{{"lr", 0.01}, {"layers", std::int64_t{3}}, {"bs", 32.0}, {"opt", std::string("adam")}};
  auto x = s.from_assignment(a);
  EXPECT_DOUBLE_EQ(x[0], 0.01);
  EXPECT_EQ(x[1], 3.0);
  EXPECT_EQ(x[2], 1.0);  // values sorted: 16, 32, 64
  EXPECT_EQ(x[3], 1.0);
  auto b = s.to_assignment(x);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(std::get<std::int64_t>(b[1].second), 3);
  EXPECT_EQ(std::get<double>(b[2].second), 32.0);
  EXPECT_EQ(std::get<std::string>(b[3].second), "adam");
  EXPECT_NE(error_of([&] { s.from_assignment({{"nope", 1.0}}); }).find("unknown parameter 'nope'"), std::string::npos);
  Assignment missing{{"lr", 0.01}, {"layers", std::int64_t{3}}, {"bs", 32.0}};
  EXPECT_NE(error_of([&] { s.from_assignment(missing); }).find("'opt' is missing"), std::string::npos);
  Assignment out{{"lr", 0.5}, {"layers", std::int64_t{3}}, {"bs", 32.0}, {"opt", std::string("adam")}};
  EXPECT_NE(error_of([&] { s.from_assignment(out); }).find("outside"), std::string::npos);
  Assignment frac{{"lr", 0.01}, {"layers", 2.5}, {"bs", 32.0}, {"opt", std::string("adam")}};
  EXPECT_NE(error_of([&] { s.from_assignment(frac); }).find("integer"), std::string::npos);
}

TEST(Space, UnitCubeEncoding) {
  SearchSpace s;
  s.add_float("x", -5, 10).add_float("lr", 1e-4, 1.0, true).add_int("n", 0, 9).add_categorical("c", {"a", "b", "c",
                                                                                                     "d"});
  EXPECT_DOUBLE_EQ(s.to_unit(0, -5), 0.0);
  EXPECT_DOUBLE_EQ(s.to_unit(0, 2.5), 0.5);
  EXPECT_NEAR(s.to_unit(1, 1e-2), 0.5, 1e-12);  // log scale: 1e-2 is the geometric midpoint
  EXPECT_NEAR(s.to_unit(2, 0), 0.05, 1e-12);    // 10 integers, each owns a 0.1 slice
  EXPECT_NEAR(s.to_unit(3, 2), 0.625, 1e-12);
  for (double u : {0.0, 0.049, 0.051, 0.5, 0.999, 1.0}) {
    double v = s.from_unit(2, u);
    EXPECT_EQ(v, std::round(v));
    EXPECT_NEAR(s.to_unit(2, v), (v + 0.5) / 10, 1e-12);
  }
  EXPECT_EQ(s.from_unit(3, 0.0), 0);
  EXPECT_EQ(s.from_unit(3, 1.0), 3);
  EXPECT_NEAR(s.from_unit(1, s.to_unit(1, 0.003)), 0.003, 1e-15);
}

TEST(Space, StepGridSnapping) {
  SearchSpace s;
  s.add_float("d", 0.0, 1.0, false, 0.25).add_int("k", 2, 20, false, 3);
  EXPECT_EQ(s.param(0).cardinality(), 5u);
  EXPECT_EQ(s.param(1).cardinality(), 7u);  // 2,5,...,20
  EXPECT_DOUBLE_EQ(s.snap(0, 0.3), 0.25);
  EXPECT_DOUBLE_EQ(s.snap(1, 6.9), 8.0);
  EXPECT_DOUBLE_EQ(s.snap(1, 100), 20.0);
  Rng rng(1);
  for (int i = 0; i < 200; ++i) {
    auto x = s.sample(rng);
    EXPECT_DOUBLE_EQ(x[0], s.snap(0, x[0]));
    EXPECT_DOUBLE_EQ(x[1], s.snap(1, x[1]));
  }
}

TEST(Space, PriorsAreHonouredStatistically) {
  SearchSpace s;
  s.add_float("u", 0, 1).add_float("lu", 1e-3, 1e3, true).add_float("n", 0, 10).add_float("ln", 1e-2, 1e2);
  s.set_prior("n", Distribution::Normal, 5.0, 1.0);
  s.set_prior("ln", Distribution::LogNormal, std::nan(""), 0.0);  // defaults: mid of logs, range/6
  Rng rng(123);
  const int n = 20000;
  double su = 0, slog = 0, sn = 0, sn2 = 0, sln = 0;
  for (int i = 0; i < n; ++i) {
    auto x = s.sample(rng);
    ASSERT_GE(x[0], 0);
    ASSERT_LE(x[0], 1);
    ASSERT_GE(x[1], 1e-3);
    ASSERT_LE(x[1], 1e3);
    su += x[0];
    slog += std::log10(x[1]);
    sn += x[2];
    sn2 += x[2] * x[2];
    sln += std::log10(x[3]);
  }
  EXPECT_NEAR(su / n, 0.5, 0.01);
  EXPECT_NEAR(slog / n, 0.0, 0.05);  // log-uniform: mean exponent 0
  double mean = sn / n, var = sn2 / n - mean * mean;
  EXPECT_NEAR(mean, 5.0, 0.03);
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.03);
  EXPECT_NEAR(sln / n, 0.0, 0.03);  // log-normal centred at the geometric midpoint 1
}

TEST(Space, ConditionsDeactivateChildren) {
  SearchSpace s;
  s.add_categorical("opt", {"sgd", "adam"}).add_float("momentum", 0, 0.99).add_float("beta1", 0.8, 0.999);
  s.set_condition("momentum", "opt", {"sgd"});
  s.set_condition("beta1", "opt", {"adam"});
  Rng rng(5);
  int sgd = 0;
  for (int i = 0; i < 500; ++i) {
    auto x = s.sample(rng);
    bool is_sgd = x[0] == 0;
    sgd += is_sgd;
    EXPECT_EQ(std::isnan(x[1]), !is_sgd);
    EXPECT_EQ(std::isnan(x[2]), is_sgd);
    s.validate_point(x);
  }
  EXPECT_GT(sgd, 200);
  EXPECT_LT(sgd, 300);
  EXPECT_NE(error_of([&] { s.from_assignment({{"opt", std::string("adam")}, {"momentum", 0.5}}); }).find("inactive"),
            std::string::npos);
  EXPECT_THROW(s.set_condition("opt", "beta1", {"x"}), InvalidArgument);  // parent declared later
}

TEST(Space, JsonRoundTripIsExact) {
  SearchSpace s;
  s.add_float("lr", 1e-5, 0.3, true).add_int("n", 1, 64, false, 2).add_categorical("c", {"x", "y"}).add_discrete(
      "d", {0.1, 0.7});
  s.add_float("p", 0.1, 0.9);
  s.set_prior("p", Distribution::Normal, 0.3, 0.123456789012345);
  s.set_condition("d", "c", {"y"});
  auto t = SearchSpace::from_json(nlohmann::json::parse(s.to_json().dump()));
  EXPECT_TRUE(t == s);
  EXPECT_DOUBLE_EQ(t.param(4).sigma, 0.123456789012345);
  EXPECT_TRUE(t.param(3).condition.has_value());
  EXPECT_THROW(s.set_condition("n", "c", {"x"}), InvalidArgument);  // parent declared after the child
}

TEST(Space, KatibParameters) {
  auto j = nlohmann::json::parse(R"([
    {"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.001", "max": "0.1", "distribution": "logUniform"}},
    {"name": "num-layers", "parameterType": "int", "feasibleSpace": {"min": "2", "max": "5"}},
    {"name": "momentum", "parameterType": "double", "feasibleSpace": {"min": "0.5", "max": "0.9", "step": "0.1"}},
    {"name": "batch", "parameterType": "discrete", "feasibleSpace": {"list": ["16", "32", "64"]}},
    {"name": "optimizer", "parameterType": "categorical", "feasibleSpace": {"list": ["sgd", "adam", "ftrl"]}},
    {"name": "wd", "parameterType": "double", "feasibleSpace": {"min": "0", "max": "1", "distribution": "normal"}}
  ])");
  auto s = SearchSpace::from_katib(j);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_TRUE(s.param(0).is_log());
  EXPECT_EQ(s.param(1).type, ParamType::Int);
  EXPECT_EQ(s.param(1).cardinality(), 4u);
  EXPECT_EQ(s.param(2).cardinality(), 5u);
  EXPECT_EQ(s.param(3).values, (std::vector<double>{16, 32, 64}));
  EXPECT_EQ(s.param(4).choices.size(), 3u);
  EXPECT_EQ(s.param(5).distribution, Distribution::Normal);
  EXPECT_DOUBLE_EQ(s.param(5).mu, 0.5);
  EXPECT_NEAR(s.param(5).sigma, 1.0 / 6.0, 1e-15);
  auto bad = nlohmann::json::parse(
      R"([{"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0", "max": "1", "distribution": "logUniform"}}])");
  EXPECT_NE(error_of([&] { SearchSpace::from_katib(bad); }).find("'lr'"), std::string::npos);
  auto nonnum = nlohmann::json::parse(R"([{"name": "a", "parameterType": "int", "feasibleSpace": {"min": "x", "max": "1"}}])");
  EXPECT_THROW(SearchSpace::from_katib(nonnum), InvalidArgument);
}

TEST(Rng, DeterministicAndUnbiased) {
  Rng a(42, 7), b(42, 7), c(42, 8);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_u64(), b.next_u64());
  EXPECT_NE(Rng(42, 7).next_u64(), c.next_u64());
  Rng r(1);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) counts[r.below(6)]++;
  for (int k : counts) EXPECT_NEAR(k, 10000, 400);
  double s = 0, s2 = 0;
  for (int i = 0; i < 50000; ++i) {
    double z = r.normal();
    s += z;
    s2 += z * z;
  }
  EXPECT_NEAR(s / 50000, 0.0, 0.02);
  EXPECT_NEAR(s2 / 50000, 1.0, 0.03);
}
