// BOHB: KDE pieces, the synthetic learning-curve family, and BOHB beating Hyperband's random sampling.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/multifidelity/bohb.hpp"
#include "kubetune/search/multifidelity/curves.hpp"
#include "kubetune/search/registration.hpp"

using namespace kubetune;
using namespace kubetune::search;

TEST(Curves, FinalValueIsKnownAndCurvesCross) {
  LearningCurves lc({4, 27, 0.0, 1.0, 3});
  EXPECT_NEAR(lc.final_value(lc.argmin()), 0.0, 1e-15);
  std::vector<double> good = lc.argmin(), bad(4, 0.95);
  EXPECT_GT(lc.final_value(bad), 0.1);
  // Noise-free curves reach the final value at the max budget and decrease.
  EXPECT_NEAR(lc.value(good, 27), lc.final_value(good), 1e-12);
  EXPECT_GT(lc.value(good, 1), lc.value(good, 3));
  // Crossing: somewhere a config that is better at the end looks worse at budget 1.
  Rng rng(1);
  int crossings = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<double> a(4), b(4);
    for (auto& v : a) v = rng.uniform();
    for (auto& v : b) v = rng.uniform();
    if ((lc.final_value(a) < lc.final_value(b)) != (lc.value(a, 1) < lc.value(b, 1))) ++crossings;
  }
  EXPECT_GT(crossings, 10);
  // Deterministic noise.
  LearningCurves n1({4, 27, 0.05, 1.0, 9}), n2({4, 27, 0.05, 1.0, 9});
  EXPECT_EQ(n1.value(bad, 5), n2.value(bad, 5));
  EXPECT_NE(n1.value(bad, 5), n1.mean_value(bad, 5));
  EXPECT_THROW(LearningCurves({0, 27, 0.0, 1.0, 0}), InvalidArgument);
  EXPECT_THROW(lc.final_value({0.1}), InvalidArgument);
  EXPECT_EQ(lc.space().size(), 5u);
}

namespace {
// Best final value (noise-free) of the incumbent at the max budget after `iters` Hyperband iterations.
double run(bool bohb, std::uint64_t seed, int iters) {
  LearningCurves lc({4, 27, 0.01, 1.0, 100 + seed});
  Hyperband::Config c;
  c.resource_name = "epochs";
  c.max_resource = 27;
  c.eta = 3;
  c.n_iterations = iters;
  std::unique_ptr<Searcher> s;
  if (bohb) s = std::make_unique<BOHB>(c, BOHB::Options{});
  else s = std::make_unique<Hyperband>(c);
  Study st(lc.space(), std::move(s), {Direction::Minimize}, seed);
  for (;;) {
    auto ts = st.ask(4);
    if (ts.empty()) break;
    for (auto& t : ts) st.tell(t.id, lc.value({t.x.begin(), t.x.begin() + 4}, t.x[4]));
  }
  double best_obs = 1e9, best_final = 1e9;
  for (const auto& t : st.trials())
    if (t.x[4] == 27 && t.values[0] < best_obs) {
      best_obs = t.values[0];
      best_final = lc.final_value({t.x.begin(), t.x.begin() + 4});
    }
  return best_final;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

TEST(BOHB, BeatsHyperbandRandomSamplingOnLearningCurves) {
  std::vector<double> hb, bo;
  for (std::uint64_t seed = 0; seed < 7; ++seed) {
    hb.push_back(run(false, seed, 4));
    bo.push_back(run(true, seed, 4));
  }
  EXPECT_LT(median(bo), median(hb)) << "BOHB median " << median(bo) << " vs Hyperband " << median(hb);
}

TEST(BOHB, ConfigRoundTripAndValidation) {
  search::register_multifidelity();
  auto s = make_searcher({{"type", "bohb"}, {"max_budget", 27}, {"min_budget", 1}, {"resource_name", "epochs"}});
  auto j = s->config();
  EXPECT_EQ(j["n_iterations"], 0);
  EXPECT_EQ(j["top_n_percent"], 15.0);
  EXPECT_EQ(j["num_samples"], 64);
  EXPECT_EQ(make_searcher(j)->config(), j);
  EXPECT_THROW(make_searcher({{"type", "bohb"}, {"resource_name", "e"}, {"top_n_percent", 0}}), InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "bohb"}, {"resource_name", "e"}, {"unknown", 0}}), InvalidArgument);
}

TEST(BOHB, CategoricalAndConditionalSpacesWork) {
  SearchSpace sp;
  sp.add_categorical("opt", {"sgd", "adam", "rms"}).add_float("lr", 1e-4, 1, true).add_float("mom", 0, 1);
  sp.set_condition("mom", "opt", {"sgd"});
  sp.add_int("epochs", 1, 9);
  Hyperband::Config c;
  c.resource_name = "epochs";
  c.max_resource = 9;
  c.n_iterations = 3;
  Study st(sp, std::make_unique<BOHB>(c, BOHB::Options{}), {Direction::Minimize}, 2);
  int n = 0;
  for (;;) {
    auto ts = st.ask(3);
    if (ts.empty()) break;
    for (auto& t : ts) {
      double v = std::fabs(std::log10(t.x[1]) + 2) + (t.x[0] == 1 ? 0.0 : 0.5) + 1.0 / t.x[3];
      st.tell(t.id, v);
      ++n;
    }
  }
  EXPECT_GT(n, 30);
  // The model concentrates lr near 1e-2 among late first-rung configurations (uniform: 1/4 of log-range).
  int adam = 0, late = 0, near = 0;
  auto all = st.trials();
  for (const auto& t : all)
    if (t.system_attrs.at("hb_bracket") >= 3 && t.system_attrs.at("hb_rung") == 0) {
      ++late;
      adam += t.x[0] == 1;
      near += std::fabs(std::log10(t.x[1]) + 2) < 0.5;
      EXPECT_EQ(std::isnan(t.x[2]), t.x[0] != 0);
    }
  EXPECT_GT(late, 0);
  EXPECT_GT(near * 2, late);
  (void)adam;
}

#include "../../../src/search/multifidelity/kde.hpp"  // internal: BOHB's density

TEST(BOHB, KdeBandwidthAndNormalisation) {
  using search::mf_detail::Kde;
  // 1-D continuous: statsmodels normal_reference bw = 1.06 * std(ddof=0) * n^(-1/5).
  std::vector<std::vector<double>> rows{{0.1}, {0.2}, {0.4}, {0.7}};
  Kde k = Kde::fit(rows, {0}, 1e-3);
  const double mean = 0.35, var = (0.0625 + 0.0225 + 0.0025 + 0.1225) / 4;
  EXPECT_NEAR(k.bw[0], 1.06 * std::sqrt(var) * std::pow(4.0, -0.2), 1e-12);
  (void)mean;
  // Integrates to 1 over the real line (trapezoid on a wide grid).
  double integral = 0, h = 1e-3;
  for (double x = -3; x <= 4; x += h) integral += k.pdf({x}) * h;
  EXPECT_NEAR(integral, 1.0, 1e-6);
  // Categorical (3 levels) x continuous: summing over levels and integrating gives 1; lambda <= (c-1)/c.
  Kde m = Kde::fit({{0, 0.3}, {0, 0.5}, {1, 0.6}, {2, 0.2}, {0, 0.4}}, {3, 0}, 1e-3);
  EXPECT_LE(m.bw[0], 2.0 / 3.0);
  double total = 0;
  for (int c = 0; c < 3; ++c)
    for (double x = -3; x <= 4; x += h) total += m.pdf({double(c), x}) * h;
  EXPECT_NEAR(total, 1.0, 1e-6);
  // Zero spread: the bandwidth floor applies.
  Kde z = Kde::fit({{0.5}, {0.5}, {0.5}}, {0}, 1e-3);
  EXPECT_DOUBLE_EQ(z.bw[0], 1e-3);
}
