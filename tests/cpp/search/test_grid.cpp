// Tests of grid search: Katib axes, enumeration order and counts, conditions, exhaustion, batch, reload, errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/grid.hpp"
#include "kubetune/search/registration.hpp"

using kubetune::Direction;
using kubetune::SearchSpace;
using kubetune::Study;
using kubetune::search::GridSearch;

namespace {
std::unique_ptr<kubetune::Searcher> grid(nlohmann::json cfg = nlohmann::json::object()) {
  kubetune::search::register_basic_searchers();
  cfg["type"] = "grid";
  return kubetune::make_searcher(cfg);
}
std::string key(const std::vector<double>& x) {
  std::string k;
  for (double v : x) k += std::isnan(v) ? "nan," : std::to_string(v) + ",";
  return k;
}
}  // namespace

TEST(Grid, KatibAxes) {
  // Katib: int range(min, max+1, step); double numpy.arange(min, max+step, step) without values above max.
  SearchSpace s;
  s.add_int("batch", 16, 64, false, 16);       // 16 32 48 64
  s.add_float("dropout", 0.1, 0.5, false, 0.15);  // 0.1 0.25 0.4
  s.add_discrete("width", {128, 64, 256});     // sorted: 64 128 256 -> indices
  s.add_categorical("opt", {"sgd", "adam"});
  GridSearch g;
  auto ax = g.axes(s);
  EXPECT_EQ(ax[0], (std::vector<double>{16, 32, 48, 64}));
  ASSERT_EQ(ax[1].size(), 3u);
  EXPECT_DOUBLE_EQ(ax[1][2], 0.4);
  EXPECT_EQ(ax[2], (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(ax[3], (std::vector<double>{0, 1}));
  EXPECT_EQ(g.grid_size(s), 4u * 3 * 3 * 2);
}

TEST(Grid, DoubleWithoutStepNeedsPoints) {
  SearchSpace s;
  s.add_float("lr", 1e-4, 1e-1, true);
  s.add_float("wd", 0.0, 1.0);
  try {
    Study st(s, grid());
    FAIL() << "expected an error";
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'lr'"), std::string::npos) << e.what();
  }
  // default_points: log-spaced on the log parameter, linear on the other, endpoints exact.
  GridSearch::Config cfg;
  cfg.default_points = 4;
  GridSearch g(cfg);
  auto ax = g.axes(s);
  ASSERT_EQ(ax[0].size(), 4u);
  EXPECT_DOUBLE_EQ(ax[0][0], 1e-4);
  EXPECT_NEAR(ax[0][1], 1e-3, 1e-15);
  EXPECT_NEAR(ax[0][2], 1e-2, 1e-15);
  EXPECT_DOUBLE_EQ(ax[0][3], 1e-1);
  EXPECT_DOUBLE_EQ(ax[1][1], 1.0 / 3);
  // Per-parameter overrides: Katib's linear step on a log double, and a point count.
  auto g2 = grid({{"steps", {{"lr", "0.025"}}}, {"points", {{"wd", 1}}}});
  Study st(s, grid({{"steps", {{"lr", "0.025"}}}, {"points", {{"wd", 1}}}}));
  auto ax2 = dynamic_cast<GridSearch&>(*g2).axes(s);
  EXPECT_EQ(ax2[0].size(), 4u);  // 1e-4, 0.0251, 0.0501, 0.0751 (0.1001 > max is dropped, as numpy.arange)
  EXPECT_DOUBLE_EQ(ax2[0][3], 1e-4 + 3 * 0.025);
  EXPECT_EQ(ax2[1], (std::vector<double>{0.5}));
  EXPECT_EQ(st.ask(10).size(), 4u);
  EXPECT_TRUE(st.exhausted());
  // Overrides must name continuous doubles.
  SearchSpace t;
  t.add_int("n", 1, 3);
  EXPECT_THROW(Study(t, grid({{"points", {{"n", 3}}}})), kubetune::InvalidArgument);
  EXPECT_THROW(Study(t, grid({{"steps", {{"zz", 0.1}}}})), kubetune::InvalidArgument);
}

TEST(Grid, OrderIsLexicographicLastFastest) {
  SearchSpace s;
  s.add_categorical("a", {"x", "y"});
  s.add_int("b", 0, 2);
  Study st(s, grid());
  auto t = st.ask(6);
  ASSERT_EQ(t.size(), 6u);
  const double expect[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(t[i].x[0], expect[i][0]);
    EXPECT_EQ(t[i].x[1], expect[i][1]);
  }
  EXPECT_TRUE(st.ask(1).empty());
  EXPECT_TRUE(st.exhausted());
}

TEST(Grid, ExhaustionBatchesAndPendingTrials) {
  SearchSpace s;
  s.add_int("a", 1, 3);
  s.add_discrete("b", {0.5, 1.5, 2.5, 3.5});
  Study st(s, grid());
  std::set<std::string> seen;
  // Enqueued (pending) point: the grid skips it.
  st.enqueue({{"a", std::int64_t{2}}, {"b", 1.5}});
  std::size_t total = 0;
  for (int round = 0; round < 10; ++round) {
    auto batch = st.ask(5);  // running trials are never told: asks must still not repeat
    for (const auto& t : batch) EXPECT_TRUE(seen.insert(key(t.x)).second) << key(t.x);
    total += batch.size();
    if (batch.size() < 5) break;
  }
  EXPECT_EQ(total, 12u);
  EXPECT_TRUE(st.exhausted());
  EXPECT_TRUE(st.ask(3).empty());
}

TEST(Grid, ConditionalSpaceEnumeratesActiveCombinationsOnly) {
  SearchSpace s;
  s.add_categorical("opt", {"sgd", "adam", "none"});
  s.add_discrete("momentum", {0.0, 0.9});
  s.set_condition("momentum", "opt", {"sgd"});
  s.add_int("beta", 1, 3);
  s.set_condition("beta", "opt", {"adam"});
  s.add_categorical("act", {"relu", "tanh"});
  GridSearch g;
  // sgd: 2 momenta x 2 act; adam: 3 betas x 2 act; none: 2 act -> 4 + 6 + 2.
  EXPECT_EQ(g.grid_size(s), 12u);
  auto all = g.enumerate(s);
  ASSERT_EQ(all.size(), 12u);
  std::set<std::string> keys;
  for (const auto& x : all) {
    s.validate_point(x);
    EXPECT_TRUE(keys.insert(key(x)).second);
  }
  // Order: parent first; within sgd, momentum before act.
  EXPECT_EQ(key(all[0]), key({0, 0, NAN, 0}));
  EXPECT_EQ(key(all[1]), key({0, 0, NAN, 1}));
  EXPECT_EQ(key(all[2]), key({0, 1, NAN, 0}));
  EXPECT_EQ(key(all[4]), key({1, NAN, 1, 0}));
  EXPECT_EQ(key(all[11]), key({2, NAN, NAN, 1}));
  // The study hands out exactly these, in order, then reports exhaustion.
  Study st(s, grid());
  auto t = st.ask(20);
  ASSERT_EQ(t.size(), 12u);
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(key(t[i].x), key(all[i]));
  EXPECT_TRUE(st.exhausted());
}

TEST(Grid, NestedConditions) {
  SearchSpace s;
  s.add_categorical("model", {"linear", "tree"});
  s.add_categorical("depth_kind", {"fixed", "auto"});
  s.set_condition("depth_kind", "model", {"tree"});
  s.add_int("depth", 2, 4);
  s.set_condition("depth", "depth_kind", {"fixed"});
  GridSearch g;
  // linear: 1; tree/auto: 1; tree/fixed: 3.
  EXPECT_EQ(g.grid_size(s), 5u);
  auto all = g.enumerate(s);
  std::set<std::string> keys;
  for (const auto& x : all) {
    s.validate_point(x);
    keys.insert(key(x));
  }
  EXPECT_EQ(keys.size(), 5u);
}

TEST(Grid, ReloadContinuesAndToldTrialsCount) {
  SearchSpace s;
  s.add_int("a", 0, 9);
  s.add_int("b", 0, 9);
  Study st(s, grid(), {Direction::Minimize}, 3);
  for (int i = 0; i < 7; ++i) {
    auto t = st.ask(1).at(0);
    if (i % 3 == 0) st.tell(t.id, static_cast<double>(i));
    else if (i % 3 == 1) st.tell_state(t.id, kubetune::TrialState::Failed);
  }
  auto snap = st.to_json();
  auto r = Study::from_json(snap);
  auto a = st.ask(5), b = r->ask(5);
  ASSERT_EQ(a.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(a[i].x, b[i].x);
  EXPECT_EQ(a[0].x, (std::vector<double>{0, 7}));
  // A completed trial added from elsewhere takes its grid point too.
  st.add_trial({{"a", std::int64_t{1}}, {"b", std::int64_t{2}}}, {0.5});
  auto c = st.ask(100);
  EXPECT_EQ(c.size(), 100u - 12u - 1u);
  for (const auto& t : c) EXPECT_NE(t.x, (std::vector<double>{1, 2}));
}

TEST(Grid, ShuffleIsAPermutation) {
  SearchSpace s;
  s.add_int("a", 0, 6);
  s.add_int("b", 0, 5);
  GridSearch::Config cfg;
  cfg.shuffle = true;
  cfg.seed = 11;
  GridSearch plain, sh(cfg);
  auto p = plain.enumerate(s), q = sh.enumerate(s);
  ASSERT_EQ(q.size(), 42u);
  EXPECT_NE(p, q);
  std::set<std::vector<double>> ps(p.begin(), p.end()), qs(q.begin(), q.end());
  EXPECT_EQ(ps, qs);
  // Asking through a study follows the shuffled order and stays exhaustive with batches.
  Study st(s, grid({{"random_state", "11"}}));
  std::vector<std::vector<double>> got;
  for (int i = 0; i < 10; ++i)
    for (auto& t : st.ask(5)) got.push_back(t.x);
  EXPECT_EQ(got, q);
}

TEST(Grid, CapAndConfig) {
  SearchSpace s;
  for (int i = 0; i < 8; ++i) s.add_int("p" + std::to_string(i), 1, 10);  // 1e8 points
  try {
    Study st(s, grid());
    FAIL();
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("max_grid_size"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Study(s, grid({{"max_grid_size", 1e8}})));
  // Overflowing grids are rejected, not wrapped around.
  SearchSpace huge;
  for (int i = 0; i < 40; ++i) huge.add_int("p" + std::to_string(i), 1, 10);
  EXPECT_THROW(Study(huge, grid({{"max_grid_size", "18000000000000000000"}})), kubetune::InvalidArgument);

  auto g = grid({{"default_points", "5"}, {"points", {{"x", 3}}}, {"steps", {{"y", 0.5}}}, {"shuffle", true},
                 {"seed", 2}, {"max_grid_size", 1000}});
  auto c = g->config();
  EXPECT_EQ(c["default_points"], 5);
  EXPECT_EQ(c["points"]["x"], 3);
  EXPECT_EQ(c["steps"]["y"], 0.5);
  EXPECT_EQ(kubetune::make_searcher(c)->config(), c);
  EXPECT_THROW(grid({{"default_point", 5}}), kubetune::InvalidArgument);
  EXPECT_THROW(grid({{"steps", {{"y", -1}}}}), kubetune::InvalidArgument);
  EXPECT_THROW(grid({{"points", {{"y", 0}}}}), kubetune::InvalidArgument);
  EXPECT_THROW(grid({{"max_grid_size", "lots"}}), kubetune::InvalidArgument);
}

TEST(Grid, FromKatibParameters) {
  auto params = nlohmann::json::parse(R"([
    {"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.01", "max": "0.05", "step": "0.01"}},
    {"name": "layers", "parameterType": "int", "feasibleSpace": {"min": "2", "max": "5"}},
    {"name": "opt", "parameterType": "categorical", "feasibleSpace": {"list": ["sgd", "adam", "ftrl"]}}
  ])");
  SearchSpace s = SearchSpace::from_katib(params);
  Study st(s, grid());
  auto all = st.ask(1000);
  EXPECT_EQ(all.size(), 5u * 4 * 3);
  auto a = s.to_assignment(all[1].x);
  EXPECT_EQ(std::get<std::string>(a[2].second), "adam");
}

TEST(Grid, ConcurrentAsksNeverDuplicate) {
  SearchSpace s;
  s.add_int("a", 0, 19);
  s.add_categorical("b", {"p", "q", "r", "s", "t"});
  Study st(s, grid());
  std::vector<std::thread> workers;
  std::mutex mu;
  std::vector<std::vector<double>> got;
  for (int w = 0; w < 8; ++w)
    workers.emplace_back([&, w] {
      for (;;) {
        auto batch = st.ask(w % 2 ? 1 : 3);
        if (batch.empty()) return;
        std::lock_guard<std::mutex> lk(mu);
        for (auto& t : batch) {
          got.push_back(t.x);
          st.tell(t.id, 0.0);
        }
      }
    });
  for (auto& t : workers) t.join();
  std::set<std::vector<double>> uniq(got.begin(), got.end());
  EXPECT_EQ(got.size(), 100u);
  EXPECT_EQ(uniq.size(), 100u);
}

TEST(Grid, AHugeAxisIsRefusedNamingTheParameter) {
  SearchSpace s;
  s.add_int("n", 0, 3'000'000'000LL);
  try {
    Study st(s, grid());
    (void)st.ask();
    FAIL() << "expected an error";
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'n' has 3000000001 values"), std::string::npos) << e.what();
  }
}
