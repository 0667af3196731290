// The basic searchers' settings tables: one declaration gives JSON, Katib aliases, errors and the schema.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "../error_of.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/search/grid.hpp"
#include "kubetune/search/random.hpp"
#include "kubetune/search/sobol.hpp"

namespace {
using nlohmann::json;
using namespace kubetune::search;

TEST(SettingsTables, SobolSeedAliasAndTheOneBooleanRule) {
  auto a = Sobol::from_json({{"type", "sobol"}, {"random_state", "7"}, {"scramble", "False"}, {"skip", 3}});
  EXPECT_EQ(a->config(), json({{"type", "sobol"}, {"seed", 7}, {"scramble", false}, {"skip", 3}}));
  EXPECT_EQ(error_of([] { Sobol::from_json({{"scramble", "yes"}}); }).find("sobol: setting 'scramble' = \"yes\" is not a boolean"),
            0u);
  EXPECT_EQ(error_of([] { Sobol::from_json({{"seed", 1}, {"random_state", 2}}); }),
            "sobol: setting 'seed' is given twice (as 'random_state' and 'seed')");
  EXPECT_EQ(error_of([] { Sobol::from_json({{"skip", 1ULL << 41}}); }),
            "sobol: setting 'skip' = 2199023255552 must be < 1099511627776");
  EXPECT_EQ(error_of([] { Sobol::from_json({{"bogus", 1}}); }),
            "sobol: unknown setting 'bogus' (accepted: seed / random_state, scramble, skip)");
  const json s = Sobol::settings_schema();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0]["name"], "seed");
  EXPECT_EQ(s[0]["default"], 0);
  EXPECT_EQ(s[1]["type"], "bool");
}

TEST(SettingsTables, RandomChecksKatibSeedWithoutStoringIt) {
  auto r = RandomSearch::from_json({{"type", "random"}, {"random_state", "3"}, {"dedupe", 0}});
  EXPECT_EQ(r->config(), json({{"type", "random"}, {"dedupe", false}}));
  EXPECT_NE(error_of([] { RandomSearch::from_json({{"random_state", "-5"}}); }).find("'random_state' = \"-5\" must be a non-negative integer"),
            std::string::npos);
  EXPECT_EQ(RandomSearch::settings_schema()[1]["ignored"], true);
}

TEST(SettingsTables, GridKatibRandomStateShufflesAndMapsRoundTrip) {
  auto g = GridSearch::from_json({{"type", "grid"}, {"random_state", "4"}});
  const json c = g->config();
  EXPECT_EQ(c["seed"], 4);
  EXPECT_EQ(c["shuffle"], true);
  auto h = GridSearch::from_json({{"points", {{"lr", "5"}}}, {"steps", {{"x", 0.5}}}, {"max_grid_size", "100"}});
  EXPECT_EQ(h->config(), json::parse(R"({"type": "grid", "default_points": 0, "points": {"lr": 5},
                                         "steps": {"x": 0.5}, "max_grid_size": 100, "shuffle": false, "seed": 0})"));
  EXPECT_EQ(GridSearch::from_json(h->config())->config(), h->config());
  EXPECT_NE(error_of([] { GridSearch::from_json({{"points", {{"lr", 0}}}}); }).find("'points.lr' = 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { GridSearch::from_json({{"steps", {{"x", -1}}}}); }).find("'steps.x' = -1 must be > 0"),
            std::string::npos);
  EXPECT_EQ(error_of([] { GridSearch::from_json({{"max_grid_size", 0}}); }),
            "grid: setting 'max_grid_size' = 0 must be >= 1");
  EXPECT_NE(error_of([] { GridSearch::from_json({{"seed", 1}, {"random_state", 2}}); }).find("given twice"),
            std::string::npos);
}

}  // namespace
