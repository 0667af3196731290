// Hyperband searcher: full runs follow the bracket table, promotions keep the point, many threads never
// duplicate a (configuration, budget), state reloads bit for bit.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/multifidelity/curves.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"
#include "kubetune/search/registration.hpp"

using namespace kubetune;
using namespace kubetune::search;

namespace {
SearchSpace space2() {
  SearchSpace s;
  s.add_float("a", 0, 1).add_float("b", -1, 1).add_int("epochs", 1, 243);
  return s;
}
double objective(const std::vector<double>& x) {
  // Lower is better; larger budgets help a bit.
  return (x[0] - 0.3) * (x[0] - 0.3) + 0.5 * (x[1] + 0.2) * (x[1] + 0.2) + 1.0 / x[2];
}
Hyperband::Config cfg(double R, int eta, BracketMode m = BracketMode::Exact) {
  Hyperband::Config c;
  c.resource_name = "epochs";
  c.max_resource = R;
  c.eta = eta;
  c.mode = m;
  return c;
}
std::map<std::pair<int, int>, int> rung_counts(const std::vector<Trial>& ts) {
  std::map<std::pair<int, int>, int> m;
  for (const auto& t : ts) m[{int(t.system_attrs.at("hb_bracket")), int(t.system_attrs.at("hb_rung"))}]++;
  return m;
}
}  // namespace

TEST(Hyperband, SequentialRunFollowsTheTable) {
  for (auto mode : {BracketMode::Exact, BracketMode::Katib, BracketMode::HpBandSter}) {
    Study st(space2(), std::make_unique<Hyperband>(cfg(27, 3, mode)), {Direction::Minimize}, 7);
    auto table = hyperband_brackets(27, 3, mode);
    std::size_t expected = 0;
    for (const auto& b : table)
      for (const auto& r : b.rungs) expected += static_cast<std::size_t>(r.n);
    for (;;) {
      auto ts = st.ask(1);
      if (ts.empty()) break;
      st.tell(ts[0].id, objective(ts[0].x));
    }
    auto all = st.trials();
    EXPECT_EQ(all.size(), expected) << to_string(mode);
    auto counts = rung_counts(all);
    for (std::size_t k = 0; k < table.size(); ++k)
      for (std::size_t i = 0; i < table[k].rungs.size(); ++i)
        EXPECT_EQ(counts[std::make_pair(int(k), int(i))], table[k].rungs[i].n) << to_string(mode) << " " << k << "," << i;
    for (const auto& t : all) {
      const auto k = static_cast<std::size_t>(t.system_attrs.at("hb_bracket"));
      const auto i = static_cast<std::size_t>(t.system_attrs.at("hb_rung"));
      EXPECT_DOUBLE_EQ(t.x[2], std::round(table[k].rungs[i].resource));
    }
    Hyperband hb(cfg(27, 3, mode));
    EXPECT_TRUE(hb.progress(st.space(), all).finished);
  }
}

TEST(Hyperband, PromotionsAreTheBestAndKeepThePoint) {
  Study st(space2(), std::make_unique<Hyperband>(cfg(9, 3)), {Direction::Minimize}, 3);
  // Bracket 0 (s = 2): 9 configs at 1 epoch.
  auto first = st.ask(20);
  ASSERT_EQ(first.size(), 9u + 5u + 3u);  // all of rung 0 of brackets s=2, s=1 (5 at 3) and s=0 (3 at 9)
  std::vector<std::pair<double, std::int64_t>> r0;
  for (const auto& t : first) {
    if (t.system_attrs.at("hb_bracket") != 0) continue;
    double v = objective(t.x);
    r0.push_back({v, t.id});
  }
  ASSERT_EQ(r0.size(), 9u);
  // Nothing else can start until rung 0 of some bracket finishes.
  EXPECT_TRUE(st.ask(1).empty());
  for (std::size_t j = 0; j < r0.size(); ++j) {
    if (j + 1 < r0.size()) st.tell(r0[j].second, r0[j].first);
  }
  EXPECT_TRUE(st.ask(1).empty()) << "one trial of the rung is still running";
  st.tell(r0.back().second, r0.back().first);
  auto promo = st.ask(10);
  ASSERT_EQ(promo.size(), 3u);  // floor(9 / 3)
  std::sort(r0.begin(), r0.end());
  std::set<std::int64_t> best_cfg;
  for (int j = 0; j < 3; ++j) best_cfg.insert(std::int64_t(st.trial(r0[j].second).system_attrs.at("hb_config")));
  for (const auto& p : promo) {
    EXPECT_EQ(p.system_attrs.at("hb_rung"), 1);
    EXPECT_EQ(p.x[2], 3);
    auto c = std::int64_t(p.system_attrs.at("hb_config"));
    EXPECT_TRUE(best_cfg.count(c));
    // Same point as its rung-0 trial except the resource.
    for (const auto& t : first)
      if (std::int64_t(t.system_attrs.at("hb_config")) == c) {
        EXPECT_EQ(t.x[0], p.x[0]);
        EXPECT_EQ(t.x[1], p.x[1]);
        EXPECT_EQ(t.x[2], 1);
      }
  }
}

TEST(Hyperband, FailedTrialsAreNotPromotedAndProgressReports) {
  Hyperband::Config c = cfg(9, 3);
  c.bracket = 2;  // successive halving with one bracket
  Study st(space2(), std::make_unique<Hyperband>(c), {Direction::Minimize}, 1);
  auto r0 = st.ask(100);
  ASSERT_EQ(r0.size(), 9u);
  for (std::size_t j = 0; j < r0.size(); ++j) {
    if (j < 8) st.tell(r0[j].id, std::nan(""));  // failed
    else st.tell(r0[j].id, 1.0);
  }
  auto r1 = st.ask(100);
  ASSERT_EQ(r1.size(), 1u);  // min(3, successes = 1)
  EXPECT_EQ(r1[0].system_attrs.at("hb_config"), r0[8].system_attrs.at("hb_config"));
  Hyperband hb(c);
  auto p = hb.progress(st.space(), st.trials());
  EXPECT_FALSE(p.finished);
  EXPECT_TRUE(p.waiting);
  EXPECT_EQ(p.running, 1);
  st.tell(r1[0].id, 0.5);
  auto r2 = st.ask(100);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].x[2], 9);
  st.tell(r2[0].id, 0.2);
  EXPECT_TRUE(st.ask(5).empty());
  p = hb.progress(st.space(), st.trials());
  EXPECT_TRUE(p.finished);
  EXPECT_EQ(p.brackets_finished, 1);
}

TEST(Hyperband, ManyThreadsNeverRunAConfigurationTwiceAtTheSameBudget) {
  Hyperband::Config c = cfg(27, 3);
  c.n_iterations = 2;
  Study st(space2(), std::make_unique<Hyperband>(c), {Direction::Minimize}, 11);
  Hyperband probe(c);
  std::atomic<int> done{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w)
    workers.emplace_back([&, w] {
      for (int spins = 0; spins < 200000; ++spins) {
        auto ts = st.ask(1);
        if (ts.empty()) {
          if (probe.progress(st.space(), st.trials()).finished) break;
          std::this_thread::yield();
          continue;
        }
        if ((ts[0].id + w) % 17 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        st.tell(ts[0].id, objective(ts[0].x));
        ++done;
      }
    });
  for (auto& t : workers) t.join();
  auto all = st.trials();
  EXPECT_EQ(all.size(), 2u * 69u);  // 27+9+3+1 + 12+4+1 + 6+2 + 4 = 69 per iteration
  std::set<std::pair<std::int64_t, double>> seen;
  std::set<std::vector<double>> points;
  for (const auto& t : all) {
    EXPECT_EQ(t.state, TrialState::Complete);
    EXPECT_TRUE(seen.insert({std::int64_t(t.system_attrs.at("hb_config")), t.x[2]}).second);
    EXPECT_TRUE(points.insert(t.x).second);
  }
  EXPECT_TRUE(probe.progress(st.space(), all).finished);
}

TEST(Hyperband, ReloadedStudyContinuesIdentically) {
  search::register_multifidelity();
  auto run = [](Study& st, int n) {
    std::vector<std::vector<double>> xs;
    for (int i = 0; i < n; ++i) {
      auto ts = st.ask(2);
      for (auto& t : ts) {
        xs.push_back(t.x);
        st.tell(t.id, objective(t.x));
      }
    }
    return xs;
  };
  Study a(space2(), std::make_unique<Hyperband>(cfg(27, 3)), {Direction::Minimize}, 5);
  run(a, 10);
  auto b = Study::from_json(a.to_json());
  EXPECT_EQ(run(a, 15), run(*b, 15));
  EXPECT_EQ(a.searcher_config(), b->searcher_config());
}

TEST(Hyperband, ConfigJsonKatibNamesAndErrors) {
  search::register_multifidelity();
  auto s = make_searcher({{"type", "hyperband"}, {"r_l", "81"}, {"eta", "3"}, {"resource_name", "epochs"}});
  EXPECT_EQ(s->config()["max_resource"], 81.0);
  EXPECT_EQ(make_searcher(s->config())->config(), s->config());
  EXPECT_THROW(make_searcher({{"type", "hyperband"}, {"r_l", "81"}, {"resource_name", "e"}, {"bogus", 1}}),
               InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "hyperband"}, {"r_l", "81"}, {"resource_name", "e"}, {"current_s", "2"}}),
               InvalidArgument);
  EXPECT_THROW(make_searcher({{"type", "hyperband"}, {"r_l", "81"}}), InvalidArgument);  // resource_name missing
  EXPECT_THROW(make_searcher({{"type", "hyperband"}, {"r_l", "x"}, {"resource_name", "e"}}), InvalidArgument);
  // The resource must exist and fit the budgets.
  SearchSpace sp;
  sp.add_float("a", 0, 1).add_int("epochs", 1, 10);
  EXPECT_THROW(Study(sp, std::make_unique<Hyperband>(cfg(27, 3))), InvalidArgument);
  SearchSpace sp2;
  sp2.add_float("a", 0, 1).add_categorical("epochs", {"x"});
  EXPECT_THROW(Study(sp2, std::make_unique<Hyperband>(cfg(27, 3))), InvalidArgument);
}

TEST(Hyperband, DoubleResourceAndMaximize) {
  SearchSpace sp;
  sp.add_float("a", 0, 1).add_float("budget", 0.5, 100);
  Hyperband::Config c;
  c.resource_name = "budget";
  c.max_resource = 4;
  c.min_resource = 0.5;
  c.eta = 2;
  Study st(sp, std::make_unique<Hyperband>(c), {Direction::Maximize}, 2);
  auto table = hyperband_brackets(4, 2, BracketMode::Exact, 0.5);
  ASSERT_EQ(table.front().rungs.front().resource, 0.5);
  auto r0 = st.ask(static_cast<std::size_t>(table[0].rungs[0].n));
  for (auto& t : r0) st.tell(t.id, t.x[0]);  // maximise a
  auto up = st.ask(1);
  ASSERT_EQ(up.size(), 1u);
  if (up[0].system_attrs.at("hb_bracket") == 0) {
    double best = 0;
    for (auto& t : r0) best = std::max(best, t.x[0]);
    EXPECT_EQ(up[0].x[0], best);
    EXPECT_EQ(up[0].x[1], 1.0);
  }
}

TEST(Hyperband, IntegerSettingsOutsideIntAreRefusedNotWrapped) {
  search::register_multifidelity();
  auto refused = [](const char* key, const nlohmann::json& value) {
    try {
      make_searcher({{"type", "hyperband"}, {"r_l", "81"}, {"resource_name", "e"}, {key, value}});
    } catch (const kubetune::InvalidArgument& e) {
      return std::string(e.what()).find(std::string("'") + key + "'") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused("eta", "4294967298"));  // 2^32 + 2 used to become eta = 2
  EXPECT_TRUE(refused("bracket", 4294967296.0));
}
