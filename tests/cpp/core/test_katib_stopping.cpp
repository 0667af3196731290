// Katib early-stopping rules: settings validation, Katib's mean, the true median, percentile, odd metric values.
// Every expected threshold below is worked out by hand from the listed logs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/katib_stopping.hpp"
#ifdef KT_HAVE_MULTIFIDELITY
#include "kubetune/core/rng.hpp"
#include "kubetune/core/searcher.hpp"
#include "kubetune/core/space.hpp"
#include "kubetune/search/multifidelity/median_stop.hpp"
#endif

using namespace kubetune;
using namespace kubetune::katib;

namespace {

// Message of the InvalidArgument `f` throws ("" if it throws nothing).
template <class F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

void expect_invalid(const std::string& algo, const SettingList& settings, const std::vector<std::string>& parts) {
  const std::string msg = invalid_message([&] { parse_stopping_settings(algo, settings); });
  ASSERT_FALSE(msg.empty()) << "accepted: " << algo;
  for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

StoppingSettings medianstop(std::int64_t min_trials, std::int64_t start_step, const std::string& rule) {
  return parse_stopping_settings("medianstop", {{"min_trials_required", std::to_string(min_trials)},
                                                {"start_step", std::to_string(start_step)},
                                                {"rule", rule}});
}

// With start_step = 2 the averages of the first two values are A: (1+3)/2 = 2, B: (2+6)/2 = 4, C: 9 (one value).
std::vector<TrialMetricLog> three_trials() {
  return {{"a", {"1", "3", "100"}}, {"b", {"2", "6"}}, {"c", {"9"}}};
}

}  // namespace

TEST(KatibStopping, DefaultsAreKatibs) {
  const StoppingSettings s = parse_stopping_settings("medianstop", {});
  EXPECT_EQ(s.algorithm, "medianstop");
  EXPECT_EQ(s.min_trials_required, 3);
  EXPECT_EQ(s.start_step, 4);
  EXPECT_EQ(s.rule, "katib");
  const StoppingSettings p = parse_stopping_settings("percentile", {});
  EXPECT_EQ(p.percentile, 25.0);
  EXPECT_EQ(p.min_trials_required, 3);
  EXPECT_EQ(p.start_step, 4);
  EXPECT_EQ(stopping_algorithms(), (std::vector<std::string>{"medianstop", "percentile"}));
}

TEST(KatibStopping, ParsesValidSettings) {
  const StoppingSettings s = parse_stopping_settings(
      "medianstop", {{"min_trials_required", "2"}, {"start_step", "5"}, {"rule", "median"}});
  EXPECT_EQ(s.min_trials_required, 2);
  EXPECT_EQ(s.start_step, 5);
  EXPECT_EQ(s.rule, "median");
  EXPECT_EQ(parse_stopping_settings("medianstop", {{"start_step", "1"}}).start_step, 1);
  EXPECT_EQ(parse_stopping_settings("percentile", {{"percentile", "50"}}).percentile, 50.0);
  EXPECT_EQ(parse_stopping_settings("percentile", {{"percentile", "0"}}).percentile, 0.0);
  EXPECT_EQ(parse_stopping_settings("percentile", {{"percentile", "12.5"}}).percentile, 12.5);
}

TEST(KatibStopping, RejectsBadSettingsNamingThem) {
  expect_invalid("unknown", {}, {"algorithm", "'unknown'", "medianstop"});
  expect_invalid("", {}, {"algorithm", "''"});
  expect_invalid("medianstop", {{"unknown_conf", "100"}}, {"unknown setting", "'unknown_conf'", "'100'"});
  expect_invalid("medianstop", {{"percentile", "50"}}, {"unknown setting", "'percentile'"});
  expect_invalid("percentile", {{"rule", "median"}}, {"unknown setting", "'rule'"});
  for (const char* bad : {"0", "-1", "2147483648"})
    expect_invalid("medianstop", {{"min_trials_required", bad}}, {"'min_trials_required'", std::string("'") + bad + "'"});
  for (const char* bad : {"abc", "", "2.5"}) expect_invalid("medianstop", {{"min_trials_required", bad}}, {"'min_trials_required'", bad});
  for (const char* bad : {"0", "-3", "1e12"})
    expect_invalid("medianstop", {{"start_step", bad}}, {"'start_step'", std::string("'") + bad + "'"});
  for (const char* bad : {"four", "4.5"}) expect_invalid("percentile", {{"start_step", bad}}, {"'start_step'", bad});
  expect_invalid("medianstop", {{"rule", "mean"}}, {"'rule'", "'mean'"});
  expect_invalid("medianstop", {{"rule", ""}}, {"'rule'", "''"});
  for (const char* bad : {"101", "-0.5", "nan", "x"})
    expect_invalid("percentile", {{"percentile", bad}}, {"'percentile'", bad});
  expect_invalid("medianstop", {{"start_step", "3"}, {"start_step", "5"}}, {"'start_step'", "more than once", "'5'"});
}

TEST(KatibStopping, KatibRuleIsTheMeanOfAverages) {
  const auto r = stopping_rules(medianstop(3, 2, "katib"), "loss", Direction::Minimize, three_trials());
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(r.rules[0].metric_name, "loss");
  EXPECT_DOUBLE_EQ(r.rules[0].value, 5.0);  // (2 + 4 + 9) / 3
  EXPECT_EQ(r.rules[0].value_text, "5");
  EXPECT_EQ(r.rules[0].comparison, Comparison::Greater);
  EXPECT_EQ(r.rules[0].start_step, 2);
  EXPECT_EQ(r.trials_counted, 3);
  EXPECT_TRUE(r.trials_ignored.empty());
  EXPECT_EQ(r.values_skipped, 0);
}

TEST(KatibStopping, MedianRuleIsTheMedianOfAverages) {
  const auto r = stopping_rules(medianstop(3, 2, "median"), "loss", Direction::Minimize, three_trials());
  ASSERT_EQ(r.rules.size(), 1u);
  EXPECT_EQ(r.rules[0].value, 4.0);  // median of {2, 4, 9}
  EXPECT_EQ(r.rules[0].value_text, "4");
  // Even count: d averages (0 + 2) / 2 = 1; median of {1, 2, 4, 9} = 3, mean = 4.
  auto four = three_trials();
  four.push_back({"d", {"0", "2", "-50"}});
  EXPECT_EQ(stopping_rules(medianstop(3, 2, "median"), "loss", Direction::Minimize, four).rules.at(0).value, 3.0);
  EXPECT_EQ(stopping_rules(medianstop(3, 2, "katib"), "loss", Direction::Minimize, four).rules.at(0).value, 4.0);
}

TEST(KatibStopping, MaximizeComparesLessWithTheSameThreshold) {
  for (const char* rule : {"katib", "median"}) {
    const auto r = stopping_rules(medianstop(3, 2, rule), "accuracy", Direction::Maximize, three_trials());
    ASSERT_EQ(r.rules.size(), 1u) << rule;
    EXPECT_EQ(r.rules[0].comparison, Comparison::Less);
    EXPECT_DOUBLE_EQ(r.rules[0].value, std::string(rule) == "katib" ? 5.0 : 4.0);
  }
  EXPECT_EQ(to_string(Comparison::Less), "LESS");
  EXPECT_EQ(to_string(Comparison::Greater), "GREATER");
}

TEST(KatibStopping, StartStepSelectsTheAveragedPrefix) {
  // start_step 3: a averages (1 + 3 + 100) / 3 = 104/3, b (2 + 6) / 2 = 4, c 9; start_step 1: 1, 2, 9.
  const auto r3 = stopping_rules(medianstop(3, 3, "katib"), "loss", Direction::Minimize, three_trials());
  EXPECT_DOUBLE_EQ(r3.rules.at(0).value, (104.0 / 3 + 4 + 9) / 3);
  EXPECT_EQ(r3.rules.at(0).start_step, 3);
  const auto r1 = stopping_rules(medianstop(3, 1, "median"), "loss", Direction::Minimize, three_trials());
  EXPECT_EQ(r1.rules.at(0).value, 2.0);
  EXPECT_EQ(r1.rules.at(0).start_step, 1);
}

TEST(KatibStopping, TooFewTrialsGiveNoRule) {
  auto two = three_trials();
  two.pop_back();
  for (const char* rule : {"katib", "median"}) {
    const auto r = stopping_rules(medianstop(3, 2, rule), "loss", Direction::Minimize, two);
    EXPECT_TRUE(r.rules.empty());
    EXPECT_EQ(r.trials_counted, 2);
  }
  EXPECT_TRUE(stopping_rules(medianstop(1, 2, "katib"), "loss", Direction::Minimize, {}).rules.empty());
  EXPECT_EQ(stopping_rules(medianstop(2, 2, "katib"), "loss", Direction::Minimize, two).rules.at(0).value, 3.0);
}

TEST(KatibStopping, NonNumericValuesAreSkippedAndEmptyTrialsIgnored) {
  std::vector<TrialMetricLog> t = three_trials();
  t.push_back({"unreported", {"unavailable"}});
  t.push_back({"empty", {}});
  t.push_back({"partly", {"oops", " 4 ", "nan", "1000"}});  // step 1 skipped; average of the numeric one: 4
  const auto r = stopping_rules(medianstop(3, 2, "katib"), "loss", Direction::Minimize, t);
  EXPECT_EQ(r.trials_counted, 4);
  EXPECT_EQ(r.trials_ignored, (std::vector<std::string>{"unreported", "empty"}));
  EXPECT_EQ(r.values_skipped, 2);  // "unavailable", "oops" (the "nan" lies beyond start_step)
  EXPECT_DOUBLE_EQ(r.rules.at(0).value, (2.0 + 4 + 9 + 4) / 4);
  const auto m = stopping_rules(medianstop(3, 2, "median"), "loss", Direction::Minimize, t);
  EXPECT_EQ(m.rules.at(0).value, 4.0);  // median of {2, 4, 4, 9}
  // Ignored trials do not count toward min_trials_required.
  const auto few = stopping_rules(medianstop(3, 2, "katib"), "loss", Direction::Minimize,
                                  {{"a", {"1"}}, {"b", {"unavailable"}}, {"c", {}}, {"d", {"2"}}});
  EXPECT_TRUE(few.rules.empty());
  EXPECT_EQ(few.trials_counted, 2);
}

TEST(KatibStopping, InfiniteValuesCountNaNThresholdGivesNoRule) {
  const auto inf = stopping_rules(medianstop(3, 4, "katib"), "loss", Direction::Minimize,
                                  {{"a", {"inf"}}, {"b", {"1"}}, {"c", {"2"}}});
  EXPECT_EQ(inf.rules.at(0).value_text, "inf");
  const auto med = stopping_rules(medianstop(3, 4, "median"), "loss", Direction::Minimize,
                                  {{"a", {"inf"}}, {"b", {"1"}}, {"c", {"2"}}});
  EXPECT_EQ(med.rules.at(0).value, 2.0);
  const auto nan = stopping_rules(medianstop(3, 4, "katib"), "loss", Direction::Minimize,
                                  {{"a", {"inf"}}, {"b", {"-inf"}}, {"c", {"2"}}});
  EXPECT_TRUE(nan.rules.empty());
  EXPECT_EQ(nan.trials_counted, 3);
}

TEST(KatibStopping, PercentileIsOptunasAtStartStep) {
  // Values at step 2: a 3, b 6, d 2; c has no second value. Minimize, q = 25: sorted {2, 3, 6}, position
  // 0.25 * 2 = 0.5 -> 2.5. Maximize uses the mirrored orientation: position 1.5 of {2, 3, 6} -> 4.5.
  auto t = three_trials();
  t.push_back({"d", {"0", "2"}});
  const StoppingSettings s =
      parse_stopping_settings("percentile", {{"start_step", "2"}, {"min_trials_required", "3"}});
  const auto mn = stopping_rules(s, "loss", Direction::Minimize, t);
  ASSERT_EQ(mn.rules.size(), 1u);
  EXPECT_DOUBLE_EQ(mn.rules[0].value, 2.5);
  EXPECT_EQ(mn.rules[0].comparison, Comparison::Greater);
  EXPECT_EQ(mn.trials_counted, 3);
  EXPECT_EQ(mn.trials_ignored, std::vector<std::string>{"c"});
  const auto mx = stopping_rules(s, "acc", Direction::Maximize, t);
  EXPECT_DOUBLE_EQ(mx.rules.at(0).value, 4.5);
  EXPECT_EQ(mx.rules.at(0).comparison, Comparison::Less);
  const StoppingSettings s50 = parse_stopping_settings(
      "percentile", {{"start_step", "2"}, {"min_trials_required", "3"}, {"percentile", "50"}});
  EXPECT_EQ(stopping_rules(s50, "loss", Direction::Minimize, t).rules.at(0).value, 3.0);
  const StoppingSettings s4 =
      parse_stopping_settings("percentile", {{"start_step", "2"}, {"min_trials_required", "4"}});
  EXPECT_TRUE(stopping_rules(s4, "loss", Direction::Minimize, t).rules.empty());
}

TEST(KatibStopping, RejectsBadRequests) {
  const auto s = medianstop(3, 2, "katib");
  EXPECT_NE(invalid_message([&] { stopping_rules(s, "", Direction::Minimize, three_trials()); })
                .find("objective_metric_name"),
            std::string::npos);
  EXPECT_NE(invalid_message([&] {
              stopping_rules(s, "loss", Direction::Minimize, {{"a", {"1"}}, {"b", {"2"}}, {"a", {"3"}}});
            }).find("'a'"),
            std::string::npos);
  EXPECT_FALSE(invalid_message([&] { stopping_rules(s, "loss", Direction::Minimize, {{"", {"1"}}}); }).empty());
  StoppingSettings bad = s;
  bad.start_step = 0;
  EXPECT_NE(invalid_message([&] { stopping_rules(bad, "loss", Direction::Minimize, {}); }).find("'start_step'"),
            std::string::npos);
  bad = s;
  bad.rule = "mean";
  EXPECT_THROW(stopping_rules(bad, "loss", Direction::Minimize, {}), InvalidArgument);
  EXPECT_EQ(parse_objective_type("MAXIMIZE"), Direction::Maximize);
  EXPECT_EQ(parse_objective_type("minimize"), Direction::Minimize);
  EXPECT_NE(invalid_message([] { parse_objective_type("unknown"); }).find("'unknown'"), std::string::npos);
  const RulesRequest rq = parse_rules_request("medianstop", {{"start_step", "2"}}, "loss", "MINIMIZE");
  EXPECT_EQ(rq.settings.start_step, 2);
  EXPECT_EQ(rq.metric_name, "loss");
  EXPECT_THROW(parse_rules_request("medianstop", {}, "", "MINIMIZE"), InvalidArgument);
  EXPECT_THROW(parse_rules_request("medianstop", {}, "loss", "UNKNOWN"), InvalidArgument);
}

TEST(KatibStopping, ParsesAndFormatsMetricValues) {
  EXPECT_EQ(parse_metric_value("  1.5 "), 1.5);
  EXPECT_EQ(parse_metric_value("+2"), 2.0);
  EXPECT_EQ(parse_metric_value("-3e2"), -300.0);
  EXPECT_EQ(parse_metric_value("Infinity"), std::numeric_limits<double>::infinity());
  for (const char* bad : {"", "  ", "unavailable", "1,5", "0x10", "+-1", "1.5.2", "nan"})
    EXPECT_TRUE(std::isnan(parse_metric_value(bad))) << bad;
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(2.5e-7), "2.5e-07");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-inf");
  const double third = 1.0 / 3;
  EXPECT_EQ(parse_metric_value(format_metric_value(third)), third);
  EXPECT_EQ(parse_metric_value(format_metric_value(0.7250000000000001)), 0.7250000000000001);
}

TEST(KatibStopping, SameInputSameAnswer) {
  const auto a = stopping_rules(medianstop(2, 3, "median"), "loss", Direction::Minimize, three_trials());
  const auto b = stopping_rules(medianstop(2, 3, "median"), "loss", Direction::Minimize, three_trials());
  ASSERT_EQ(a.rules.size(), 1u);
  EXPECT_EQ(a.rules[0].value_text, b.rules[0].value_text);
}

#ifdef KT_HAVE_MULTIFIDELITY
// The "median" rule is MedianStop's threshold (rule "median") for a trial at step start_step, and "percentile"
// is percentile_linear in lower-is-better orientation: checked bit for bit on random logs with gaps.
TEST(KatibStopping, AgreesWithMedianStopAndPercentileLinear) {
  std::mt19937_64 gen(20240611);
  std::uniform_real_distribution<double> value(-5.0, 5.0);
  std::uniform_int_distribution<int> n_trials(1, 9), n_values(0, 7), step(1, 6), coin(0, 9);
  int rules_seen = 0;
  for (int rep = 0; rep < 300; ++rep) {
    const std::int64_t start_step = step(gen);
    std::vector<TrialMetricLog> logs;
    std::vector<Trial> trials;
    const int n = n_trials(gen);
    for (int i = 0; i < n; ++i) {
      TrialMetricLog log{"t" + std::to_string(i), {}};
      Trial t;
      t.id = i;
      t.state = TrialState::Complete;
      const int k = n_values(gen);
      for (int j = 0; j < k; ++j) {
        const bool gap = coin(gen) == 0;
        const double v = value(gen);
        log.values.push_back(gap ? "unavailable" : format_metric_value(v));
        t.intermediate.emplace_back(j + 1, gap ? std::numeric_limits<double>::quiet_NaN() : v);
      }
      logs.push_back(log);
      trials.push_back(t);
    }
    for (Direction dir : {Direction::Minimize, Direction::Maximize}) {
      const SearchSpace space;
      const std::vector<Direction> dirs{dir};
      Rng rng(0);
      const SearchContext ctx{space, trials, dirs, rng};
      Trial probe;
      probe.id = -1;
      probe.state = TrialState::Running;
      probe.intermediate.emplace_back(start_step, 0.0);
      const search::MedianStop pruner(search::MedianStop::Config{2, start_step, false});
      const double signed_median = pruner.threshold(ctx, probe);
      const auto ours = stopping_rules(medianstop(2, start_step, "median"), "m", dir, logs);
      ASSERT_EQ(ours.rules.empty(), std::isnan(signed_median)) << rep;
      if (!ours.rules.empty()) {
        EXPECT_EQ(ours.rules[0].value, dir == Direction::Maximize ? -signed_median : signed_median) << rep;
        ++rules_seen;
      }

      std::vector<double> at_step;
      for (const Trial& t : trials) {
        auto v = t.intermediate_at(start_step);
        if (v && !std::isnan(*v)) at_step.push_back(ctx.signed_value(*v));
      }
      const StoppingSettings ps = parse_stopping_settings(
          "percentile", {{"percentile", "30"}, {"min_trials_required", "2"}, {"start_step", std::to_string(start_step)}});
      const auto pct = stopping_rules(ps, "m", dir, logs);
      ASSERT_EQ(pct.rules.empty(), at_step.size() < 2) << rep;
      if (!pct.rules.empty()) {
        const double signed_pct = search::percentile_linear(at_step, 30.0);
        EXPECT_EQ(pct.rules[0].value, dir == Direction::Maximize ? -signed_pct : signed_pct) << rep;
      }
    }
  }
  EXPECT_GT(rules_seen, 200);
}
#endif  // KT_HAVE_MULTIFIDELITY
