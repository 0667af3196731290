// Tests of the built-in benchmark functions: optima at argmins, local optimality, batch calls, registry.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kubetune/core/error.hpp"
#include "kubetune/search/functions.hpp"

namespace fn = kubetune::search::functions;

namespace {
// Every minimiser attains the optimum, lies in the domain, and no coordinate step of size h lowers f.
void check_optimum(const fn::Function& f, double tol) {
  for (const auto& x : f.argmins()) {
    ASSERT_EQ(x.size(), f.dim());
    EXPECT_NEAR(f.evaluate(x), f.optimum(), tol) << f.name();
    for (std::size_t i = 0; i < x.size(); ++i) {
      EXPECT_GE(x[i], f.bounds()[i].first);
      EXPECT_LE(x[i], f.bounds()[i].second);
      for (double h : {1e-3, -1e-3, 1e-5, -1e-5}) {
        auto y = x;
        y[i] += h;
        EXPECT_GE(f.evaluate(y), f.optimum() - 1e-9) << f.name() << " coord " << i << " h " << h;
      }
    }
  }
}
}  // namespace

TEST(Functions, OptimaAtArgmins) {
  for (const auto& name : fn::names()) {
    for (std::size_t d : {0u, 3u, 7u}) {
      fn::Function f = fn::get(name, 0);
      if (!f.variable_dim() && d != 0) continue;
      if (d != 0) f = fn::get(name, d);
      SCOPED_TRACE(name + " d=" + std::to_string(f.dim()));
      check_optimum(f, 1e-9 * (1 + std::abs(f.optimum())));
    }
  }
}

TEST(Functions, PublishedValues) {
  // Rounded optima printed by Surjanovic & Bingham's library.
  EXPECT_NEAR(fn::get("branin").optimum(), 0.397887, 1e-6);
  EXPECT_NEAR(fn::get("hartmann3").optimum(), -3.86278, 1e-5);
  EXPECT_NEAR(fn::get("hartmann6").optimum(), -3.32237, 1e-5);
  EXPECT_NEAR(fn::get("six_hump_camel").optimum(), -1.0316, 1e-4);
  EXPECT_DOUBLE_EQ(fn::get("goldstein_price").optimum(), 3.0);
  EXPECT_NEAR(fn::get("styblinski_tang", 4).optimum(), -39.16599 * 4, 1e-3 * 4);
  // Published argmins evaluate to the published optimum (rounded points, so a looser tolerance).
  EXPECT_NEAR(fn::get("hartmann6").evaluate({0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573}), -3.32237,
              1e-5);
  EXPECT_NEAR(fn::get("hartmann3").evaluate({0.114614, 0.555649, 0.852547}), -3.86278, 1e-5);
  EXPECT_NEAR(fn::get("camel").evaluate({-0.0898, 0.7126}), -1.0316, 1e-4);
}

TEST(Functions, HandComputedValues) {
  const double pi = std::numbers::pi;
  // Branin at the origin: (-6)^2 + 10 (1 - 1/(8 pi)) + 10.
  EXPECT_NEAR(fn::get("branin").evaluate({0, 0}), 36 + 10 * (1 - 1 / (8 * pi)) + 10, 1e-12);
  // Rosenbrock (0, 0): 100*0 + 1.
  EXPECT_DOUBLE_EQ(fn::get("rosenbrock").evaluate({0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(fn::get("rosenbrock", 3).evaluate({1, 2, 3}), 100 * 1 + 0 + 100 * 1 + 1);
  // Rastrigin at x=0.5 per coordinate: 10 + 0.25 - 10 cos(pi) = 20.25.
  EXPECT_NEAR(fn::get("rastrigin", 2).evaluate({0.5, 0.5}), 40.5, 1e-12);
  // Goldstein-Price at the origin: (1 + 1*19) * (30 + 0) = 600.
  EXPECT_DOUBLE_EQ(fn::get("goldstein_price").evaluate({0, 0}), 600.0);
  // Styblinski-Tang at 1: (1 - 16 + 5)/2 = -5 per coordinate.
  EXPECT_DOUBLE_EQ(fn::get("styblinski_tang", 3).evaluate({1, 1, 1}), -15.0);
  // Ackley at (1, 1): -20 exp(-0.2) - exp(1) + 20 + e = 20 - 20 exp(-0.2).
  EXPECT_NEAR(fn::get("ackley").evaluate({1, 1}), 20 - 20 * std::exp(-0.2), 1e-12);
  // Six-hump camel at (1, 1): (4 - 2.1 + 1/3) + 1 + 0.
  EXPECT_NEAR(fn::get("camel").evaluate({1, 1}), 4 - 2.1 + 1.0 / 3 + 1, 1e-12);
  // Levy at the origin, d=1: w = 0.75: sin^2(0.75 pi) + (-0.25)^2 (1 + sin^2(1.5 pi)) = 0.5 + 0.125.
  EXPECT_NEAR(fn::get("levy", 1).evaluate({0}), 0.625, 1e-12);
}

TEST(Functions, BatchMatchesPointwise) {
  for (const auto& name : fn::names()) {
    fn::Function f = fn::get(name, 0);
    const std::size_t n = 5000, d = f.dim();
    std::vector<double> X(n * d), out(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < d; ++j) {
        const auto [lo, hi] = f.bounds()[j];
        X[i * d + j] = lo + (hi - lo) * std::fmod(0.6180339887 * static_cast<double>(i * d + j + 1), 1.0);
      }
    f.evaluate(n, d, X.data(), out.data(), 2);
    for (std::size_t i = 0; i < n; i += 97) EXPECT_DOUBLE_EQ(out[i], f(X.data() + i * d)) << name;
    EXPECT_THROW(f.evaluate(n, d + 1, X.data(), out.data()), kubetune::InvalidArgument);
  }
}

TEST(Functions, RegistryAndSpaces) {
  EXPECT_EQ(fn::names().size(), 10u);
  EXPECT_EQ(fn::get("Styblinski-Tang", 5).name(), "styblinski_tang");
  EXPECT_EQ(fn::get("SIX_HUMP_CAMEL").name(), "six_hump_camel");
  EXPECT_EQ(fn::get("rosenbrock").dim(), 2u);
  EXPECT_EQ(fn::get("hartmann6").dim(), 6u);
  EXPECT_THROW(fn::get("no_such_function"), kubetune::NotFound);
  EXPECT_THROW(fn::get("branin", 3), kubetune::InvalidArgument);
  EXPECT_THROW(fn::get("rosenbrock", 1), kubetune::InvalidArgument);
  EXPECT_THROW(fn::get("hartmann6").evaluate({0.5}), kubetune::InvalidArgument);
  auto s = fn::get("branin").make_space();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.param(0).name, "x0");
  EXPECT_DOUBLE_EQ(s.param(0).low, -5);
  EXPECT_DOUBLE_EQ(s.param(1).high, 15);
  EXPECT_EQ(fn::get("ackley", 10).make_space().size(), 10u);
}
