// Katib Suggestion service logic: replay semantics, value text, bookkeeping round trip, validation errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/katib.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/kubetune.hpp"

namespace {

using nlohmann::json;
namespace katib = kubetune::katib;

// [[name, value], ...] (a braced list of pairs would read as a JSON object).
json kv(std::vector<std::pair<std::string, std::string>> ps) {
  json out = json::array();
  for (auto& [k, v] : ps) out.push_back(json::array({k, v}));
  return out;
}

json param(const std::string& name, const std::string& type, const std::string& min, const std::string& max,
           json list = json::array(), const std::string& dist = "", const std::string& step = "") {
  return {{"name", name}, {"type", type}, {"min", min}, {"max", max}, {"step", step}, {"list", list},
          {"distribution", dist}};
}

json experiment(const std::string& algorithm, json settings = json::array(), const std::string& type = "MINIMIZE") {
  return {{"name", "exp-a"},
          {"algorithm", {{"name", algorithm}, {"settings", settings}}},
          {"objective", {{"type", type}, {"metric", "loss"}}},
          {"parameters",
           {param("lr", "DOUBLE", "1e-4", "0.1", json::array(), "LOG_UNIFORM"), param("layers", "INT", "1", "8"),
            param("drop", "DISCRETE", "", "", {"0.5", "1e-1", "0.25"}),
            param("opt", "CATEGORICAL", "", "", {"sgd", "adam"})}}};
}

json trial(const std::string& name, const json& assignments, const std::string& condition, double loss) {
  json t = {{"name", name}, {"condition", condition}, {"assignments", assignments}, {"metrics", json::array()}};
  if (condition == "SUCCEEDED") t["metrics"] = kv({{"accuracy", "0.1"}, {"loss", std::to_string(loss)}});
  return t;
}

json ask(const json& exp, const json& trials, int count) {
  return katib::get_suggestions({{"experiment", exp}, {"trials", trials}, {"count", count}});
}

// Evaluate an assignment: a made-up loss from its text, so replies can be turned into finished trials.
double loss_of(const json& a) {
  double v = 0;
  for (const auto& p : a) v += static_cast<double>(std::hash<std::string>{}(p[1].get<std::string>()) % 1000) / 1000;
  return v;
}

class Katib : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { kubetune::register_builtins(); }
};

TEST_F(Katib, ValuesAreKatibTextInSpaceOrder) {
  json r = ask(experiment("random"), json::array(), 5);
  ASSERT_EQ(r["assignments"].size(), 5u);
  EXPECT_FALSE(r["exhausted"].get<bool>());
  for (const auto& a : r["assignments"]) {
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[0][0], "lr");
    double lr = std::stod(a[0][1].get<std::string>());
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 0.1);
    EXPECT_EQ(std::to_string(std::stoll(a[1][1].get<std::string>())), a[1][1].get<std::string>());  // "3", not "3.0"
    // Discrete values come back in the experiment's own spelling ("1e-1", not "0.1").
    std::set<std::string> drops = {"0.5", "1e-1", "0.25"};
    EXPECT_TRUE(drops.count(a[2][1].get<std::string>())) << a[2][1];
    EXPECT_TRUE(a[3][1] == "sgd" || a[3][1] == "adam");
  }
}

TEST_F(Katib, SameRequestSameReplyAndTrialOrderDoesNotMatter) {
  json exp = experiment("tpe", kv({{"n_startup_jobs", "3"}}));
  json trials = json::array();
  json first = ask(exp, trials, 4);
  int i = 0;
  for (const auto& a : first["assignments"]) trials.push_back(trial("t" + std::to_string(i++), a, "SUCCEEDED", loss_of(a)));
  json second = ask(exp, trials, 3);
  EXPECT_EQ(second, ask(exp, trials, 3));
  json reversed = json::array();
  for (auto it = trials.rbegin(); it != trials.rend(); ++it) reversed.push_back(*it);
  EXPECT_EQ(second, ask(exp, reversed, 3));
  // A repeated trial entry is one trial (the last entry wins).
  json repeated = trials;
  repeated.push_back(trials[0]);
  EXPECT_EQ(second, ask(exp, repeated, 3));
  // Another experiment name is another random stream.
  json other = exp;
  other["name"] = "exp-b";
  EXPECT_NE(second["assignments"], ask(other, trials, 3)["assignments"]);
}

TEST_F(Katib, RunningTrialsAreAvoidedWithinAndAcrossBatches) {
  // A 2 x 2 categorical space: 4 points. Two running trials leave exactly two for a batch of three.
  json exp = experiment("random");
  exp["parameters"] = {param("a", "CATEGORICAL", "", "", {"x", "y"}), param("b", "CATEGORICAL", "", "", {"u", "v"})};
  json trials = {trial("r1", kv({{"a", "x"}, {"b", "u"}}), "RUNNING", 0),
                 trial("r2", kv({{"a", "y"}, {"b", "v"}}), "CREATED", 0)};
  json r = ask(exp, trials, 3);
  ASSERT_EQ(r["assignments"].size(), 2u);
  std::set<std::string> seen = {"xu", "yv"};
  for (const auto& a : r["assignments"]) {
    EXPECT_TRUE(seen.insert(a[0][1].get<std::string>() + a[1][1].get<std::string>()).second);
  }
  // Fewer than asked with trials still running: the searcher could not do better (random dedupes) => waiting.
  EXPECT_TRUE(r["waiting"].get<bool>());
  EXPECT_FALSE(r["exhausted"].get<bool>());
  trials[0]["condition"] = "FAILED";
  trials[1]["condition"] = "KILLED";
  trials.push_back(trial("r3", r["assignments"][0], "SUCCEEDED", 1.0));
  trials.push_back(trial("r4", r["assignments"][1], "EARLYSTOPPED", 2.0));
  json done = ask(exp, trials, 2);
  EXPECT_EQ(done["assignments"].size(), 0u);
  EXPECT_TRUE(done["exhausted"].get<bool>());
}

TEST_F(Katib, SobolStateTravelsInAlgorithmSettings) {
  json exp = experiment("sobol");
  json r = ask(exp, json::array(), 3);
  ASSERT_EQ(r["state"].size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(r["state"][k][0].get<std::string>().rfind(katib::kStatePrefix, 0), 0u);
    EXPECT_EQ(r["state"][k][1], "sobol_index=" + std::to_string(k));
  }
  // Katib merges the reply's settings into the next request; the trials then continue the sequence at 3.
  json merged = exp;
  for (const auto& s : r["state"]) merged["algorithm"]["settings"].push_back(s);
  json trials = json::array();
  for (std::size_t k = 0; k < 3; ++k) trials.push_back(trial("s" + std::to_string(k), r["assignments"][k], "SUCCEEDED", 1));
  json next = ask(merged, trials, 2);
  EXPECT_EQ(next["state"][0][1], "sobol_index=3");
  EXPECT_EQ(next["state"][1][1], "sobol_index=4");
  // The same five points as one request for five.
  json five = ask(exp, json::array(), 5);
  EXPECT_EQ(five["assignments"][3], next["assignments"][0]);
  EXPECT_EQ(five["assignments"][4], next["assignments"][1]);
  // Corrupt state is named, not guessed at.
  merged["algorithm"]["settings"].push_back(json::array({std::string(katib::kStatePrefix) + "00", "sobol_index"}));
  try {
    ask(merged, trials, 1);
    FAIL() << "corrupt state accepted";
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("kubetune.state/00"), std::string::npos) << e.what();
  }
}

TEST_F(Katib, ConditionsAndMetrics) {
  json exp = experiment("random");
  json a = ask(exp, json::array(), 1)["assignments"][0];
  auto err = [&](json t) {
    try {
      ask(exp, json::array({t}), 1);
    } catch (const kubetune::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json ok = trial("t", a, "SUCCEEDED", 0.5);
  EXPECT_EQ(ask(exp, json::array({ok}), 1)["assignments"].size(), 1u);
  json t = ok;
  t["metrics"] = kv({{"loss", "abc"}});
  EXPECT_NE(err(t).find("'loss' = 'abc' is not a number"), std::string::npos) << err(t);
  t["metrics"] = kv({{"accuracy", "1"}});
  EXPECT_NE(err(t).find("without objective metric 'loss'"), std::string::npos) << err(t);
  t["metrics"] = kv({{"loss", "unavailable"}});
  t["condition"] = "METRICSUNAVAILABLE";
  EXPECT_EQ(err(t), "no error");
  t["condition"] = "PAUSED";
  EXPECT_NE(err(t).find("unknown condition 'PAUSED'"), std::string::npos);
  t = ok;
  t["assignments"].erase(1);
  EXPECT_NE(err(t).find("parameter 'layers' is missing"), std::string::npos) << err(t);
  t = ok;
  t["assignments"][1][1] = "2.5";
  EXPECT_NE(err(t).find("'layers' = '2.5' is not an integer"), std::string::npos) << err(t);
  t["assignments"][1][1] = "99";
  EXPECT_NE(err(t).find("layers"), std::string::npos) << err(t);
  t = ok;
  t["assignments"].push_back(json::array({"momentum", "0.9"}));
  EXPECT_NE(err(t).find("unknown parameter 'momentum'"), std::string::npos) << err(t);
}

TEST_F(Katib, MaximizeReadsTheObjectiveUpsideDown) {
  // With one dimension and TPE past its startup trials, maximize and minimize pull towards opposite ends.
  auto run = [&](const std::string& type) {
    json exp = experiment("tpe", kv({{"n_startup_jobs", "4"}, {"random_state", "7"}}), type);
    exp["parameters"] = json::array({param("x", "DOUBLE", "0", "1")});  // clang 14 reads {one json} as a copy
    json trials = json::array();
    for (int i = 0; i < 30; ++i) {
      json a = ask(exp, trials, 1)["assignments"][0];
      double x = std::stod(a[0][1].get<std::string>());
      trials.push_back(trial("t" + std::to_string(100 + i), a, "SUCCEEDED", x));
    }
    double mean = 0;
    for (int i = 20; i < 30; ++i) mean += std::stod(trials[i]["assignments"][0][1].get<std::string>()) / 10;
    return mean;
  };
  EXPECT_LT(run("MINIMIZE"), 0.3);
  EXPECT_GT(run("MAXIMIZE"), 0.7);
}

TEST_F(Katib, ValidationNamesWhatIsWrong) {
  auto msg = [](json exp) {
    try {
      katib::validate_algorithm_settings(exp);
    } catch (const kubetune::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("valid");
  };
  EXPECT_EQ(msg(experiment("tpe", kv({{"n_EI_candidates", "24"}, {"random_state", "1"}}))), "valid");
  EXPECT_NE(msg(experiment("cmaes")).find("unknown algorithm 'cmaes'"), std::string::npos);
  EXPECT_NE(msg(experiment("tpe", kv({{"n_EI_candidates", "abc"}}))).find("n_EI_candidates"), std::string::npos);
  EXPECT_NE(msg(experiment("tpe", kv({{"bogus", "1"}}))).find("unknown setting 'bogus'"), std::string::npos);
  EXPECT_NE(msg(experiment("tpe", kv({{"gamma", "0.1"}, {"gamma", "0.2"}}))).find("given twice"), std::string::npos);
  EXPECT_NE(msg(experiment("bayesianoptimization", kv({{"base_estimator", "RF"}}))).find("'RF'"), std::string::npos);
  EXPECT_NE(msg(experiment("random", kv({{"random_state", "-1"}}))).find("random_state"), std::string::npos);
  json exp = experiment("random");
  exp["parameters"][0] = param("lr", "DOUBLE", "0.1", "1e-4");
  EXPECT_NE(msg(exp).find("lr"), std::string::npos) << msg(exp);
  exp["parameters"][0] = param("lr", "DOUBLE", "0", "1", json::array(), "LOG_UNIFORM");
  EXPECT_NE(msg(exp).find("lr"), std::string::npos) << msg(exp);
  exp["parameters"][0] = param("lr", "UNKNOWN_TYPE", "0", "1");
  EXPECT_NE(msg(exp).find("unknown parameter type 'UNKNOWN_TYPE'"), std::string::npos);
  exp["parameters"][0] = param("opt", "CATEGORICAL", "", "", json::array());
  EXPECT_NE(msg(exp).find("'opt': feasibleSpace.list is empty"), std::string::npos) << msg(exp);
  exp["parameters"][0] = param("layers", "INT", "1", "3");
  EXPECT_NE(msg(exp).find("'layers' is declared twice"), std::string::npos) << msg(exp);
  exp["parameters"] = json::array();
  EXPECT_NE(msg(exp).find("no parameters"), std::string::npos);
  EXPECT_THROW(ask(experiment("random"), json::array(), -1), kubetune::InvalidArgument);
  EXPECT_THROW(ask(experiment("random"), json::array(), 1000000), kubetune::InvalidArgument);
}

}  // namespace

namespace {

TEST_F(Katib, GpModelStateTravelsOnceAndIsRead) {
  json exp = experiment("bayesianoptimization", kv({{"n_initial_points", "3"}, {"random_state", "5"}}));
  json trials = json::array();
  json merged = exp;
  std::vector<json> model_values;
  for (int round = 0; round < 4; ++round) {
    json r = ask(merged, trials, 2);
    ASSERT_EQ(r["assignments"].size(), 2u);
    // Katib merges: a setting of the same name is replaced, a new one appended.
    for (const auto& s : r["state"]) {
      bool replaced = false;
      for (auto& m : merged["algorithm"]["settings"])
        if (m[0] == s[0]) m[1] = s[1], replaced = true;
      if (!replaced) merged["algorithm"]["settings"].push_back(s);
    }
    for (const auto& a : r["assignments"])
      trials.push_back(trial("t" + std::to_string(trials.size()), a, "SUCCEEDED", loss_of(a)));
    for (const auto& s : r["state"])
      if (s[0] == std::string(katib::kStatePrefix) + "model") model_values.push_back(s[1]);
  }
  // The GP's model state (hyperparameters, fit size) is one setting, not one per trial.
  std::size_t n_state = 0;
  for (const auto& s : merged["algorithm"]["settings"])
    n_state += s[0].get<std::string>().rfind(katib::kStatePrefix, 0) == 0;
  EXPECT_EQ(n_state, 1u);
  ASSERT_GE(model_values.size(), 2u);
  EXPECT_NE(model_values.back().get<std::string>().find("gp_theta_0="), std::string::npos);
  EXPECT_EQ(model_values.back().get<std::string>().find("gp_acq_value"), std::string::npos);
  // The model state is read: without it the GP fits cold and answers otherwise; with it, the same each time.
  json warm = ask(merged, trials, 1);
  EXPECT_EQ(warm, ask(merged, trials, 1));
  EXPECT_NE(warm["assignments"], ask(exp, trials, 1)["assignments"]);
}

}  // namespace

namespace {

TEST_F(Katib, HyperbandParallelCountThatStallsTheScheduleIsRefused) {
  json exp = experiment("hyperband", kv({{"r_l", "9"}, {"eta", "3"}, {"resource_name", "layers"}}));
  exp["parameters"][1] = param("layers", "INT", "1", "9");
  json seeded = exp;
  seeded["algorithm"]["settings"].push_back(json::array({"random_state", "7"}));
  EXPECT_NO_THROW(katib::validate_algorithm_settings(seeded));  // Katib's seed setting, taken as the study seed
  for (int ok : {1, 2, 3, 9, 10}) {
    exp["parallel_trial_count"] = ok;
    EXPECT_NO_THROW(katib::validate_algorithm_settings(exp)) << ok;
  }
  // Brackets 9@1 3@3 1@9, 5@3 1@9, 3@9 (22 trials): 8 at a time, the ninth config of the first rung is a short
  // reply with nothing running, which Katib's controller rejects for ever.
  exp["parallel_trial_count"] = 8;
  try {
    katib::validate_algorithm_settings(exp);
    FAIL() << "parallelTrialCount 8 accepted";
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("parallelTrialCount = 8 stops the bracket schedule after 21 of its 22"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("<= 7"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

TEST(Fnv1a64, PublishedTestVectors) {
  // Landon Curt Noll's FNV test vectors (64-bit FNV-1a).
  EXPECT_EQ(kubetune::fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(kubetune::fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(kubetune::fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(kubetune::fnv1a64("bar", kubetune::fnv1a64("foo")), kubetune::fnv1a64("foobar"));
}

}  // namespace
