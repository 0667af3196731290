// Multi-fidelity settings tables: Katib / HpBandSter aliases, choices backed by bools and enums, round trips.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "../error_of.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/search/multifidelity/asha.hpp"
#include "kubetune/search/multifidelity/bohb.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"
#include "kubetune/search/multifidelity/median_stop.hpp"

namespace {
using nlohmann::json;
using namespace kubetune::search;

TEST(MultiFidelityTables, EveryConfigRoundTrips) {
  const json configs[] = {
      {{"type", "hyperband"}, {"resource_name", "epochs"}, {"r_l", "27"}, {"reduction_factor", 3}, {"rounding", "katib"}},
      {{"type", "bohb"}, {"resource_name", "epochs"}, {"max_budget", 9}, {"num_samples", "8"}},
      {{"type", "asha"}, {"R", 27}, {"s", 1}, {"mode", "prune"}},
  };
  for (const json& c : configs) {
    auto s = c["type"] == "hyperband" ? Hyperband::from_json(c) : c["type"] == "bohb" ? BOHB::from_json(c) : ASHA::from_json(c);
    const json out = s->config();
    auto again = c["type"] == "hyperband" ? Hyperband::from_json(out)
                 : c["type"] == "bohb"    ? BOHB::from_json(out)
                                          : ASHA::from_json(out);
    EXPECT_EQ(again->config(), out) << c;
  }
  auto hb = Hyperband::from_json(configs[0]);
  EXPECT_EQ(hb->config()["max_resource"], 27.0);
  EXPECT_EQ(hb->config()["mode"], "katib");
  EXPECT_EQ(BOHB::from_json(configs[1])->config()["n_iterations"], 0);  // BOHB's own default
  const json pruners[] = {
      {{"type", "median_stop"}, {"rule", "katib"}, {"start_step", "2"}},
      {{"type", "percentile"}, {"percentile", "40"}, {"n_min_trials", 2}},
      {{"type", "asha"}, {"r_min", 2}, {"eta", "4"}},
      {{"type", "hyperband"}, {"R", 9}, {"mode", "optuna"}},
  };
  for (const json& c : pruners) {
    const std::string t = c["type"];
    auto make = [&](const json& j) {
      return t == "median_stop" ? MedianStop::from_json(j)
             : t == "percentile" ? PercentilePruner::from_json(j)
             : t == "asha"       ? ASHAPruner::from_json(j)
                                 : HyperbandPruner::from_json(j);
    };
    const json out = make(c)->config();
    EXPECT_EQ(make(out)->config(), out) << c;
  }
  EXPECT_EQ(MedianStop::from_json(pruners[0])->config()["rule"], "katib");
  EXPECT_EQ(HyperbandPruner::from_json(pruners[3])->config()["mode"], "optuna");
}

TEST(MultiFidelityTables, ErrorsNameTheSettingAndOwner) {
  EXPECT_EQ(error_of([] { MedianStop::from_json({{"rule", "vizier"}}); }),
            "median_stop: setting 'rule' = \"vizier\" is not one of median, katib");
  EXPECT_EQ(error_of([] { ASHAPruner::from_json({{"eta", 2.5}}); }), "asha pruner: setting 'eta' = 2.5 must be an integer");
  EXPECT_NE(error_of([] { Hyperband::from_json({{"resource_name", "e"}, {"current_s", 1}}); })
                .find("Katib state setting 'current_s' is not accepted"),
            std::string::npos);
  EXPECT_NE(error_of([] { Hyperband::from_json({{"resource_name", "e"}, {"mode", "fast"}}); })
                .find("hyperband: setting 'mode' = \"fast\" is not one of exact, katib, hpbandster"),
            std::string::npos);
  EXPECT_NE(error_of([] { BOHB::from_json({{"resource_name", "e"}, {"bogus", 1}}); })
                .find("bohb: unknown setting 'bogus' (accepted: resource_name, max_resource / r_l / R / max_budget,"),
            std::string::npos);
  EXPECT_NE(error_of([] { PercentilePruner::from_json({{"n_warmup_steps", "x"}}); }).find("'n_warmup_steps'"),
            std::string::npos);
}

TEST(MultiFidelityTables, SchemasListDefaultsOfTheirOwnStructs) {
  const json asha = ASHA::settings_schema(), pruner = ASHAPruner::settings_schema();
  EXPECT_EQ(asha[1]["name"], "max_resource");
  EXPECT_EQ(asha[1]["default"], 81.0);  // the searcher's rungs
  EXPECT_EQ(pruner[1]["default"], 0.0);  // the pruner's: unbounded
  EXPECT_EQ(asha[5]["choices"], json::array({"prune", "promote"}));
  EXPECT_EQ(BOHB::settings_schema()[5]["default"], 0);  // n_iterations
}

}  // namespace
