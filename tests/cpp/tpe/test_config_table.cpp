// TPEConfig's settings table: names, Katib/hyperopt aliases, presets, the one boolean rule, ranges, schema.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/search/tpe.hpp"

namespace {
using nlohmann::json;
using kubetune::search::TPEConfig;

std::string error_of(const json& j) {
  try {
    TPEConfig::from_json(j);
  } catch (const kubetune::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(TPEConfigTable, SeedIsWrittenUnderItsNameAndRandomStateStillReads) {
  TPEConfig c = TPEConfig::from_json({{"random_state", "11"}, {"n_startup_jobs", "3"}, {"n_EI_candidates", 12},
                                      {"linear_forgetting", 5}});
  EXPECT_EQ(*c.seed, 11u);
  EXPECT_EQ(c.n_startup_trials, 3u);
  EXPECT_EQ(c.n_ei_candidates, 12u);
  EXPECT_EQ(c.n_flat_weights, 5u);
  const json j = c.to_json();
  EXPECT_EQ(j["seed"], 11);
  EXPECT_FALSE(j.contains("random_state"));
  EXPECT_EQ(TPEConfig::from_json(j).to_json(), j);
  EXPECT_TRUE(TPEConfig{}.to_json()["seed"].is_null());
  EXPECT_FALSE(TPEConfig::from_json({{"seed", nullptr}}).seed.has_value());
}

TEST(TPEConfigTable, OneBooleanRuleAndNamedErrors) {
  EXPECT_TRUE(TPEConfig::from_json({{"multivariate", "True"}}).multivariate);
  EXPECT_FALSE(TPEConfig::from_json({{"group", 0}}).group);
  // TPE used to accept "yes", "TRUE" and 1.0; the one rule refuses them, naming the setting.
  for (const json& bad : {json("yes"), json("TRUE"), json(1.0), json(2)})
    EXPECT_EQ(error_of({{"constant_liar", bad}}).find("tpe: setting 'constant_liar' = "), 0u) << bad;
  EXPECT_EQ(error_of({{"n_ei_candidates", 0}}), "tpe: setting 'n_ei_candidates' = 0 must be in [1, 1000000]");
  EXPECT_EQ(error_of({{"gamma", "0"}}), "tpe: setting 'gamma' = \"0\" must be > 0");
  EXPECT_EQ(error_of({{"gamma_rule", "cubic"}}), "tpe: setting 'gamma_rule' = \"cubic\" is not one of linear, sqrt");
  EXPECT_EQ(error_of({{"preset", "smac"}}), "tpe: setting 'preset' = \"smac\" is unknown (expected \"optuna\" or \"hyperopt\")");
  EXPECT_NE(error_of({{"n_candidates", 3}}).find("tpe: unknown setting 'n_candidates' (accepted: n_startup_trials / "
                                                 "n_startup_jobs, n_ei_candidates / n_EI_candidates,"),
            std::string::npos);
  TPEConfig c;
  c.prior_weight = -1;
  EXPECT_THROW(c.validate(), kubetune::InvalidArgument);
}

TEST(TPEConfigTable, PresetsComeFirstThenSingleSettings) {
  TPEConfig h = TPEConfig::from_json({{"preset", "hyperopt"}, {"gamma", 0.3}});
  EXPECT_EQ(h.gamma_rule, TPEConfig::GammaRule::Sqrt);
  EXPECT_EQ(h.gamma, 0.3);
  EXPECT_EQ(h.n_startup_trials, 20u);
  EXPECT_EQ(TPEConfig::from_json({{"preset", "optuna"}}).n_refine_candidates, 0u);
}

TEST(TPEConfigTable, SchemaDefaultsAreTheStructs) {
  const json s = TPEConfig::settings_schema();
  json defaults = json::object();
  for (const auto& e : s) defaults[e["name"].get<std::string>()] = e["default"];
  json written = TPEConfig{}.to_json();
  written.erase("type");
  EXPECT_EQ(defaults, written);
}

}  // namespace
