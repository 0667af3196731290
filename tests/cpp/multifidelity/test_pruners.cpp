// ASHA rung decisions, median stopping (Vizier and Katib rules) and percentile pruning on hand-computed curves.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <thread>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/multifidelity/asha.hpp"
#include "kubetune/search/multifidelity/median_stop.hpp"
#include "kubetune/search/registration.hpp"

using namespace kubetune;
using namespace kubetune::search;

namespace {
SearchSpace sp() {
  SearchSpace s;
  s.add_float("a", 0, 1).add_int("epochs", 1, 27);
  return s;
}
std::unique_ptr<Study> asha_study(Direction d = Direction::Minimize, int s = 0) {
  ASHA::Config c;
  c.rungs = {1, 27, 3, s};
  return std::make_unique<Study>(sp(), std::make_unique<ASHA>(c), std::vector<Direction>{d}, 1);
}
// Report one value and ask the study.
bool rep(Study& st, std::int64_t id, std::int64_t step, double v) {
  st.report(id, step, v);
  return st.should_prune(id);
}
}  // namespace

TEST(ASHA, HandComputedRungDecisions) {
  auto st = asha_study();
  std::vector<std::int64_t> id;
  for (int i = 0; i < 8; ++i) id.push_back(st->ask(1).at(0).id);
  // Rung at step 1 (eta = 3): continue iff value <= sorted[max(n/3, 1) - 1] of the n values recorded there.
  EXPECT_FALSE(rep(*st, id[0], 1, 0.5));   // [0.5]: best so far
  EXPECT_TRUE(rep(*st, id[1], 1, 0.7));    // [0.5 0.7]: not best
  st->tell_state(id[1], TrialState::Pruned);
  EXPECT_FALSE(rep(*st, id[2], 1, 0.4));   // [0.4 0.5 0.7]: top 1
  EXPECT_TRUE(rep(*st, id[3], 1, 0.45));   // [0.4 0.45 0.5 0.7]: top 1 is 0.4
  st->tell_state(id[3], TrialState::Pruned);
  EXPECT_FALSE(rep(*st, id[4], 1, 0.3));   // 5 values, top 1
  EXPECT_TRUE(rep(*st, id[5], 1, 0.6));    // 6 values, top 2 = {0.3, 0.4}
  EXPECT_TRUE(rep(*st, id[6], 1, 0.42));   // 7 values, top 2 = {0.3, 0.4}
  EXPECT_FALSE(rep(*st, id[7], 1, 0.35));  // 8 values, top 2 = {0.3, 0.35}
  // Between rungs nothing is decided.
  EXPECT_FALSE(rep(*st, id[0], 2, 9.0));
  // Rung at step 3: own value at the first report >= 3.
  EXPECT_FALSE(rep(*st, id[0], 3, 0.4));   // alone
  EXPECT_FALSE(rep(*st, id[2], 4, 0.38));  // crosses 3 at step 4: [0.38 0.4] best
  EXPECT_TRUE(rep(*st, id[4], 3, 0.41));   // [0.38 0.4 0.41]: top 1 = 0.38
  // Rung 9 and nothing at or above max_resource (27).
  EXPECT_FALSE(rep(*st, id[2], 9, 0.2));
  EXPECT_FALSE(rep(*st, id[2], 27, 5.0));  // 27 = max_resource is no rung
  // A failed trial's values never compete.
  st->tell_state(id[7], TrialState::Failed);
}

TEST(ASHA, MaximizeAndNaNAndEarlyStoppingRate) {
  auto st = asha_study(Direction::Maximize, 1);  // rungs at 3 and 9
  auto a = st->ask(1)[0].id, b = st->ask(1)[0].id, c = st->ask(1)[0].id;
  EXPECT_FALSE(rep(*st, a, 1, 0.1));  // step 1 is no rung when s = 1
  EXPECT_FALSE(rep(*st, a, 3, 0.9));
  EXPECT_TRUE(rep(*st, b, 3, 0.8));   // lower is worse when maximising
  EXPECT_TRUE(rep(*st, c, 3, std::nan("")));
}

TEST(ASHA, PrunerRegisteredAndUsableWithAnySearcher) {
  search::register_multifidelity();
  auto p = make_pruner({{"type", "asha"}, {"min_resource", "1"}, {"reduction_factor", 3}});
  EXPECT_EQ(p->config()["eta"], 3);
  EXPECT_EQ(make_pruner(p->config())->config(), p->config());
  EXPECT_THROW(make_pruner({{"type", "asha"}, {"eta", 1}}), InvalidArgument);
  EXPECT_THROW(make_pruner({{"type", "asha"}, {"typo", 1}}), InvalidArgument);
  ASHARungs r{1, 100, 3, 0};
  EXPECT_EQ(r.budgets(), (std::vector<double>{1, 3, 9, 27, 81}));
}

TEST(ASHA, PromoteModeFollowsAlgorithm2) {
  ASHA::Config c;
  c.rungs = {1, 9, 3, 0};
  c.resource_name = "epochs";
  c.promote = true;
  Study st(sp(), std::make_unique<ASHA>(c), {Direction::Minimize}, 4);
  std::vector<double> loss{3, 1, 2};
  std::vector<Trial> r0;
  for (int i = 0; i < 3; ++i) {
    auto t = st.ask(1).at(0);
    EXPECT_EQ(t.system_attrs.at("asha_rung"), 0);
    EXPECT_EQ(t.x[1], 1);
    r0.push_back(t);
    st.tell(t.id, loss[static_cast<std::size_t>(i)]);
  }
  auto p = st.ask(1).at(0);  // floor(3/3) = 1: the best (config 1) goes to rung 1 at 3 epochs
  EXPECT_EQ(p.system_attrs.at("asha_rung"), 1);
  EXPECT_EQ(p.system_attrs.at("asha_config"), 1);
  EXPECT_EQ(p.x[0], r0[1].x[0]);
  EXPECT_EQ(p.x[1], 3);
  auto n = st.ask(1).at(0);  // no other promotable: a new configuration
  EXPECT_EQ(n.system_attrs.at("asha_rung"), 0);
  EXPECT_EQ(n.system_attrs.at("asha_config"), 3);
  st.tell(p.id, 0.5);
  st.tell(n.id, 5);
  // Rung 1 has 1 complete (< eta): no promotion to 9; rung 0 has 4 complete: top 1 already promoted.
  auto m = st.ask(1).at(0);
  EXPECT_EQ(m.system_attrs.at("asha_rung"), 0);
}

TEST(MedianStop, HandComputedVizierRule) {
  MedianStop::Config c;
  c.min_trials_required = 2;
  c.start_step = 2;
  Study st(sp(), std::make_unique<ASHA>(ASHA::Config{}), {Direction::Minimize}, 1, std::make_unique<MedianStop>(c));
  st.add_trial({{"a", 0.1}, {"epochs", std::int64_t(1)}}, {0.5}, TrialState::Complete, {{1, 1.0}, {2, 0.8}, {3, 0.6}, {4, 0.5}});
  st.add_trial({{"a", 0.2}, {"epochs", std::int64_t(1)}}, {0.7}, TrialState::Complete, {{1, 2.0}, {2, 1.0}, {3, 0.9}, {4, 0.7}});
  st.add_trial({{"a", 0.3}, {"epochs", std::int64_t(1)}}, {2.0}, TrialState::Complete, {{1, 3.0}, {2, 2.0}});
  auto t = st.ask(1)[0].id, u = st.ask(1)[0].id;
  EXPECT_FALSE(rep(st, t, 1, 1.2));  // fewer than start_step reports
  // Step 2: running averages 0.9, 1.5, 2.5 -> median 1.5; best of t = 1.2.
  EXPECT_FALSE(rep(st, t, 2, 1.5));
  // Step 3: averages 0.8, 1.3, 2.5 -> 1.3; best 1.2.
  EXPECT_FALSE(rep(st, t, 3, 1.3));
  EXPECT_FALSE(rep(st, u, 1, 2.0));
  EXPECT_TRUE(rep(st, u, 2, 1.9));  // 1.9 > 1.5
  MedianStop ms(c);
  std::vector<Direction> d{Direction::Minimize};
  Rng rng;
  auto all = st.trials();
  SearchContext ctx{st.space(), all, d, rng};
  EXPECT_DOUBLE_EQ(ms.threshold(ctx, all[static_cast<std::size_t>(u)]), 1.5);
}

TEST(MedianStop, HandComputedKatibRuleIsAMeanCheckedOnce) {
  MedianStop::Config c;
  c.min_trials_required = 2;
  c.start_step = 2;
  c.katib_rule = true;
  Study st(sp(), std::make_unique<ASHA>(ASHA::Config{}), {Direction::Maximize}, 1, std::make_unique<MedianStop>(c));
  // Accuracies (maximise). First-2 averages: 0.5, 0.3, 0.1 -> mean 0.3 (the median would be 0.3 too; use 4).
  st.add_trial({{"a", 0.1}, {"epochs", std::int64_t(1)}}, {0.9}, TrialState::Complete, {{1, 0.4}, {2, 0.6}, {3, 0.9}});
  st.add_trial({{"a", 0.2}, {"epochs", std::int64_t(1)}}, {0.5}, TrialState::Complete, {{1, 0.2}, {2, 0.4}});
  st.add_trial({{"a", 0.3}, {"epochs", std::int64_t(1)}}, {0.1}, TrialState::Complete, {{1, 0.1}, {2, 0.1}});
  st.add_trial({{"a", 0.4}, {"epochs", std::int64_t(1)}}, {0.9}, TrialState::Complete, {{1, 1.0}, {2, 1.0}});
  st.add_trial({{"a", 0.5}, {"epochs", std::int64_t(1)}}, {0.9}, TrialState::Complete, {{1, 1.0}});  // too short
  // Averages 0.5, 0.3, 0.1, 1.0 -> Katib threshold = mean = 0.475 (the true median would be 0.4).
  auto t = st.ask(1)[0].id, u = st.ask(1)[0].id;
  EXPECT_FALSE(rep(st, t, 1, 0.2));
  EXPECT_TRUE(rep(st, t, 2, 0.45));   // best-so-far 0.45 < 0.475
  EXPECT_FALSE(rep(st, u, 1, 0.1));
  EXPECT_FALSE(rep(st, u, 2, 0.48));  // 0.48 >= 0.475
  EXPECT_FALSE(rep(st, u, 3, 0.0));   // never checked again after the start_step-th report
  MedianStop vizier({2, 2, false});
  std::vector<Direction> d{Direction::Maximize};
  Rng rng;
  auto all = st.trials();
  SearchContext ctx{st.space(), all, d, rng};
  MedianStop katib(c);
  EXPECT_DOUBLE_EQ(katib.threshold(ctx, all[static_cast<std::size_t>(t)]), -0.475);  // signed: lower is better
}

TEST(Percentile, HandComputedOptunaSemantics) {
  search::register_multifidelity();
  auto make = [](double q) {
    PercentilePruner::Config c;
    c.percentile = q;
    c.n_startup_trials = 2;
    return std::make_unique<PercentilePruner>(c);
  };
  for (double q : {50.0, 75.0}) {
    Study st(sp(), std::make_unique<ASHA>(ASHA::Config{}), {Direction::Minimize}, 1, make(q));
    st.add_trial({{"a", 0.1}, {"epochs", std::int64_t(1)}}, {1}, TrialState::Complete, {{1, 1.0}, {2, 0.8}});
    st.add_trial({{"a", 0.2}, {"epochs", std::int64_t(1)}}, {1}, TrialState::Complete, {{1, 2.0}, {2, 1.0}});
    st.add_trial({{"a", 0.3}, {"epochs", std::int64_t(1)}}, {1}, TrialState::Complete, {{1, 3.0}, {2, 2.0}});
    auto t = st.ask(1)[0].id;
    st.report(t, 1, 1.2);
    // q = 50: values at step 2 are 0.8, 1.0, 2.0 -> 1.0 < 1.2 prune; q = 75: 1.0 + 0.5 * 1.0 = 1.5 keep.
    EXPECT_EQ(rep(st, t, 2, 1.3), q == 50.0) << q;
  }
  EXPECT_DOUBLE_EQ(percentile_linear({3, 1, 2, 4}, 25), 1.75);
  EXPECT_THROW(make_pruner({{"type", "percentile"}, {"percentile", 101}}), InvalidArgument);
  auto m = make_pruner({{"type", "medianstop"}, {"min_trials_required", "3"}, {"start_step", "4"}});
  EXPECT_EQ(m->config()["rule"], "median");
  EXPECT_EQ(make_pruner(m->config())->config(), m->config());
  EXPECT_THROW(make_pruner({{"type", "median_stop"}, {"start_step", "0"}}), InvalidArgument);
  EXPECT_THROW(make_pruner({{"type", "median_stop"}, {"rule", "mean"}}), InvalidArgument);
}

TEST(HyperbandPruner, BracketsAndAllocation) {
  HyperbandPruner exact({1, 243, 3, false}), optuna({1, 243, 3, true});
  EXPECT_EQ(exact.n_brackets(), 6u);
  EXPECT_EQ(optuna.n_brackets(), 5u);  // floor(4.999999999999999) + 1
  HyperbandPruner p({1, 81, 3, false});
  ASSERT_EQ(p.n_brackets(), 5u);
  // Allocation weights 81, 34, 15, 8, 5 (of 143): frequencies within 4 sigma over 20000 ids.
  std::vector<int> cnt(5);
  const int N = 20000;
  for (int i = 0; i < N; ++i) cnt[static_cast<std::size_t>(p.bracket_of(i))]++;
  const double w[] = {81, 34, 15, 8, 5};
  for (int b = 0; b < 5; ++b) {
    const double q = w[b] / 143.0;
    EXPECT_NEAR(cnt[static_cast<std::size_t>(b)], N * q, 4 * std::sqrt(N * q * (1 - q))) << b;
  }
}

TEST(HyperbandPruner, TrialsCompeteOnlyWithinTheirBracket) {
  search::register_multifidelity();
  HyperbandPruner probe({1, 81, 3, false});
  auto st = std::make_unique<Study>(sp(), std::make_unique<ASHA>(ASHA::Config{}), std::vector<Direction>{Direction::Minimize},
                                    1, make_pruner({{"type", "hyperband"}, {"max_resource", 81}}));
  std::vector<std::int64_t> b0, other;
  for (int i = 0; i < 40; ++i) {
    auto id = st->ask(1).at(0).id;
    (probe.bracket_of(id) == 0 ? b0 : other).push_back(id);
  }
  ASSERT_GE(b0.size(), 2u);
  ASSERT_GE(other.size(), 1u);
  EXPECT_FALSE(rep(*st, b0[0], 1, 0.5));
  // A trial of another bracket has no rung at step 1 (its min_early_stopping_rate is >= 1) and does not compete.
  EXPECT_FALSE(rep(*st, other[0], 1, 0.1));
  EXPECT_FALSE(rep(*st, b0[1], 1, 0.4));  // best of bracket 0 so far, although 0.1 exists elsewhere
  EXPECT_THROW(make_pruner({{"type", "hyperband"}, {"mode", "katib"}}), InvalidArgument);
}

TEST(ASHA, PromoteModeThreadsNeverDuplicateARung) {
  ASHA::Config c;
  c.rungs = {1, 27, 3, 0};
  c.resource_name = "epochs";
  c.promote = true;
  c.max_configs = 120;
  Study st(sp(), std::make_unique<ASHA>(c), {Direction::Minimize}, 8);
  std::vector<std::thread> ws;
  for (int w = 0; w < 6; ++w)
    ws.emplace_back([&] {
      for (int i = 0; i < 400; ++i) {
        auto ts = st.ask(1);
        if (ts.empty()) break;
        const auto& t = ts[0];
        st.tell(t.id, std::fabs(t.x[0] - 0.3) + 1.0 / t.x[1]);
      }
    });
  for (auto& t : ws) t.join();
  std::set<std::pair<double, double>> seen;
  int promoted = 0;
  for (const auto& t : st.trials()) {
    EXPECT_TRUE(seen.insert({t.system_attrs.at("asha_config"), t.system_attrs.at("asha_rung")}).second);
    EXPECT_DOUBLE_EQ(t.x[1], std::pow(3.0, t.system_attrs.at("asha_rung")));
    promoted += t.system_attrs.at("asha_rung") > 0;
  }
  EXPECT_GT(promoted, 40);  // about 120/3 + 40/3 + 13/3 once every configuration finished
}
