// GP searcher end to end: beats random on Branin/Hartmann6, distinct batches, save/load, settings, spaces.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/functions.hpp"
#include "kubetune/search/gp/bayesopt.hpp"
#include "kubetune/search/registration.hpp"

using namespace kubetune;
using kubetune::search::gp::GPConfig;
using kubetune::search::gp::GPSearcher;

namespace {
// Thin wrappers over the built-in benchmark functions (kubetune/search/functions.hpp).
double branin(const std::vector<double>& x) {
  static const auto f = search::functions::get("branin");
  return f.evaluate(x);
}
double hartmann6(const std::vector<double>& x) {
  static const auto f = search::functions::get("hartmann6");
  return f.evaluate(x);
}
SearchSpace branin_space() {
  SearchSpace s;
  s.add_float("x1", -5, 10).add_float("x2", 0, 15);
  return s;
}
SearchSpace hartmann_space() {
  SearchSpace s;
  for (int i = 0; i < 6; ++i) s.add_float("x" + std::to_string(i), 0, 1);
  return s;
}
GPConfig with_init(int n) {
  GPConfig c;
  c.n_initial_points = n;
  return c;
}
GPConfig hedge() {
  GPConfig c;
  c.acq = search::gp::AcqType::Hedge;
  return c;
}
std::unique_ptr<Searcher> gp_searcher(GPConfig c = {}) { return std::make_unique<GPSearcher>(c); }

template <class F>
double run_gp(const SearchSpace& space, F f, int trials, std::uint64_t seed, GPConfig c = {}) {
  c.n_threads = 1;  // CI shares 2 cores between suites
  Study st(space, gp_searcher(c), {Direction::Minimize}, seed);
  for (int i = 0; i < trials; ++i) {
    auto t = st.ask(1).at(0);
    st.tell(t.id, f(t.x));
  }
  return st.best()->values[0];
}
template <class F>
double run_random(const SearchSpace& space, F f, int trials, std::uint64_t seed) {
  Rng rng(seed, 77);
  double best = INFINITY;
  for (int i = 0; i < trials; ++i) best = std::min(best, f(space.sample(rng)));
  return best;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

TEST(GPSearcher, BeatsRandomOnBraninAndHartmann6) {
  std::vector<double> gb, rb, gh, rh;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    gb.push_back(run_gp(branin_space(), branin, 50, seed));
    rb.push_back(run_random(branin_space(), branin, 50, seed));
    gh.push_back(run_gp(hartmann_space(), hartmann6, 50, seed));
    rh.push_back(run_random(hartmann_space(), hartmann6, 50, seed));
  }
  // Branin's minimum is 0.397887, Hartmann6's -3.32237.
  EXPECT_LT(median(gb), median(rb));
  EXPECT_LT(median(gb), 0.45);
  EXPECT_LT(median(gh), median(rh));
  EXPECT_LT(median(gh), -3.0);
}

TEST(GPSearcher, BatchAsksAreDistinctAndRunningTrialsAreFantasised) {
  SearchSpace s;
  s.add_float("lr", 1e-4, 1e-1, true).add_int("layers", 1, 4).add_categorical("opt", {"adam", "sgd"});
  Study st(s, gp_searcher(), {Direction::Minimize}, 3);
  auto f = [](const std::vector<double>& x) {
    return std::pow(std::log10(x[0]) + 2.5, 2) + 0.1 * x[1] + (x[2] == 0 ? 0.0 : 0.5);
  };
  for (auto& t : st.ask(10)) st.tell(t.id, f(t.x));
  std::set<std::vector<double>> all;
  for (const auto& t : st.trials()) all.insert(t.x);
  auto batch = st.ask(8);
  ASSERT_EQ(batch.size(), 8u);
  for (const auto& t : batch) EXPECT_TRUE(all.insert(t.x).second) << "duplicate point in batch";
  // One at a time without telling: running trials are fantasised, so no repeats either.
  for (int i = 0; i < 6; ++i) {
    auto t = st.ask(1).at(0);
    EXPECT_TRUE(all.insert(t.x).second) << "repeat of a running trial";
    EXPECT_TRUE(t.system_attrs.count("gp_theta_0"));
  }
  // Small finite space: the searcher exhausts it without repeats, then returns fewer points.
  SearchSpace small;
  small.add_int("a", 0, 2).add_categorical("b", {"x", "y"});
  Study st2(small, gp_searcher(with_init(2)), {Direction::Minimize}, 1);
  std::set<std::vector<double>> seen;
  for (int i = 0; i < 6; ++i) {
    auto ts = st2.ask(1);
    ASSERT_EQ(ts.size(), 1u);
    EXPECT_TRUE(seen.insert(ts[0].x).second);
    st2.tell(ts[0].id, ts[0].x[0] + ts[0].x[1]);
  }
  EXPECT_TRUE(st2.ask(1).empty());
}

TEST(GPSearcher, SaveLoadContinuesIdentically) {
  search::register_gp();
  const std::string path = ::testing::TempDir() + std::to_string(::getpid()) + "_kt_gp_study.json";
  Study a(branin_space(), gp_searcher(hedge()), {Direction::Minimize}, 42);
  for (int i = 0; i < 14; ++i) {
    auto t = a.ask(1).at(0);
    a.tell(t.id, branin(t.x));
  }
  auto pending = a.ask(1).at(0);  // a running trial survives the round trip too
  a.save(path);
  auto b = Study::load(path);
  a.tell(pending.id, branin(pending.x));
  b->tell(pending.id, branin(pending.x));
  for (int i = 0; i < 4; ++i) {
    auto ta = a.ask(2), tb = b->ask(2);
    ASSERT_EQ(ta.size(), tb.size());
    for (std::size_t k = 0; k < ta.size(); ++k) {
      EXPECT_EQ(ta[k].x, tb[k].x);
      EXPECT_EQ(ta[k].system_attrs, tb[k].system_attrs);
      a.tell(ta[k].id, branin(ta[k].x));
      b->tell(tb[k].id, branin(tb[k].x));
    }
  }
  std::remove(path.c_str());
  std::remove((path + ".lock").c_str());
}

TEST(GPSearcher, RefitScheduleExactValues) {
  using search::gp::refit_due;
  // step = max(1, floor(n_fit / refit_scale)); refit once n >= n_fit + step.
  EXPECT_FALSE(refit_due(10, 10, 10));
  EXPECT_TRUE(refit_due(11, 10, 10));    // step 1
  EXPECT_FALSE(refit_due(219, 200, 10));
  EXPECT_TRUE(refit_due(220, 200, 10));  // step 20
  EXPECT_FALSE(refit_due(1088, 990, 10));
  EXPECT_TRUE(refit_due(1089, 990, 10)); // step 99
  EXPECT_TRUE(refit_due(101, 100, 100)); // step 1
  EXPECT_FALSE(refit_due(205, 200, 25));
  EXPECT_TRUE(refit_due(208, 200, 25));  // step 8
  EXPECT_TRUE(refit_due(9, 10, 10));     // history shrank: refit
  EXPECT_TRUE(refit_due(200, 200, 0));   // 0: every ask
}

// Asks that reuse hyperparameters extend the previous ask's factorisation (a cache in the searcher); a
// study reloaded before every ask (fresh searcher, empty cache) must propose exactly the same points. The
// stored fit size follows refit_due.
TEST(GPSearcher, FactorCacheNeverChangesProposalsAndScheduleIsFollowed) {
  GPConfig c;
  c.n_threads = 1;
  c.refit_scale = 3;  // refits every ~n/3 trials: most asks below reuse hyperparameters
  c.n_candidates = 128;
  search::register_gp();
  Study a(hartmann_space(), gp_searcher(c), {Direction::Minimize}, 8);
  std::unique_ptr<Study> b = Study::from_json(a.to_json());
  double last_fit_n = -1;
  int reused = 0;
  for (int i = 0; i < 34; ++i) {
    b = Study::from_json(b->to_json());
    auto ta = a.ask(1).at(0), tb = b->ask(1).at(0);
    ASSERT_EQ(ta.x, tb.x) << "ask " << i;
    ASSERT_EQ(ta.system_attrs, tb.system_attrs) << "ask " << i;
    const std::size_t n_done = a.n_trials() - 1;
    if (ta.system_attrs.count("gp_fit_n")) {
      const double fit_n = ta.system_attrs.at("gp_fit_n");
      if (last_fit_n < 0 || search::gp::refit_due(n_done, static_cast<std::size_t>(last_fit_n), 3)) {
        EXPECT_EQ(fit_n, static_cast<double>(n_done)) << "ask " << i;
      } else {
        EXPECT_EQ(fit_n, last_fit_n) << "ask " << i;
        ++reused;
        for (Eigen::Index j = 0; j < 9; ++j)  // hyperparameters passed on unchanged
          EXPECT_EQ(ta.system_attrs.at("gp_theta_" + std::to_string(j)),
                    a.trial(ta.id - 1).system_attrs.at("gp_theta_" + std::to_string(j)));
      }
      last_fit_n = fit_n;
    }
    const double v = hartmann6(ta.x);
    a.tell(ta.id, v);
    b->tell(tb.id, v);
  }
  EXPECT_GE(reused, 15);
}

TEST(GPSearcher, DeterministicAndThreadCountIndependent) {
  GPConfig one, four;
  one.n_threads = 1;
  four.n_threads = 4;
  Study a(hartmann_space(), gp_searcher(one), {Direction::Minimize}, 5);
  Study b(hartmann_space(), gp_searcher(four), {Direction::Minimize}, 5);
  for (int i = 0; i < 14; ++i) {
    auto ta = a.ask(1).at(0), tb = b.ask(1).at(0);
    ASSERT_EQ(ta.x, tb.x) << "ask " << i;
    a.tell(ta.id, hartmann6(ta.x));
    b.tell(tb.id, hartmann6(tb.x));
  }
}

TEST(GPSearcher, KatibSettingsAndConfigRoundTrip) {
  search::register_gp();
  auto s = make_searcher({{"type", "bayesianoptimization"},
                          {"base_estimator", "GP"},
                          {"n_initial_points", "5"},
                          {"acq_func", "LCB"},
                          {"acq_optimizer", "sampling"},
                          {"random_state", "10"}});
  auto* g = dynamic_cast<GPSearcher*>(s.get());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->settings().n_initial_points, 5);
  EXPECT_EQ(g->settings().acq, search::gp::AcqType::UCB);
  EXPECT_EQ(g->settings().n_refine, 0);
  EXPECT_EQ(*g->settings().seed, 10u);
  auto again = make_searcher(s->config());
  EXPECT_EQ(again->config(), s->config());
  EXPECT_EQ(s->type(), "gp");
  EXPECT_THROW(make_searcher({{"type", "gp"}, {"base_estimator", "RF"}}), InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "gp"}, {"n_initial_points", "ten"}}), InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "gp"}, {"bogus", 1}}), InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "gp"}, {"acq_optimizer", "cmaes"}}), InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "gp"}, {"n_candidates", 0}}), InvalidArgument);
  try {
    make_searcher({{"type", "gp"}, {"bogus", 1}});
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos);
  }
}

TEST(GPSearcher, ConditionalCategoricalAndMaximiseSpaces) {
  SearchSpace s;
  s.add_categorical("model", {"linear", "tree"})
      .add_float("alpha", 1e-3, 10.0, true)
      .add_int("depth", 1, 12)
      .add_discrete("width", {16, 32, 64, 128});
  s.set_condition("alpha", "model", {"linear"}).set_condition("depth", "model", {"tree"});
  // Maximise: tree with depth 7 and width 64 is best.
  auto f = [](const std::vector<double>& x) {
    if (x[0] == 0) return 1.0 - std::pow(std::log10(x[1]), 2) * 0.1;
    return 2.0 - 0.05 * (x[2] - 7) * (x[2] - 7) - 0.2 * std::abs(x[3] - 2);
  };
  Study st(s, gp_searcher(with_init(6)), {Direction::Maximize}, 8);
  for (int i = 0; i < 30; ++i) {
    auto t = st.ask(1).at(0);
    s.validate_point(t.x);  // legal values, inactive ones NaN
    st.tell(t.id, f(t.x));
  }
  EXPECT_GT(st.best()->values[0], 1.85);
  // Failed and pruned trials are ignored without errors.
  auto t = st.ask(1).at(0);
  st.tell_state(t.id, TrialState::Failed);
  EXPECT_EQ(st.ask(1).size(), 1u);
}
