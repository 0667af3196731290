// GPConfig's settings table: n_threads / seed names with the old ones accepted, Katib's extras, one bool rule.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/search/gp/bayesopt.hpp"

namespace {
using nlohmann::json;
using kubetune::search::gp::GPConfig;
using kubetune::search::gp::GPSearcher;

std::string error_of(const json& j) {
  try {
    GPSearcher::config_from_json(j);
  } catch (const kubetune::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(GPConfigTable, OldNamesLoadAndTheNewOnesAreWritten) {
  GPConfig c = GPSearcher::config_from_json({{"type", "gp"}, {"threads", 2}, {"random_state", "9"}});
  EXPECT_EQ(c.n_threads, 2);
  EXPECT_EQ(*c.seed, 9u);
  const json j = GPSearcher(c).config();
  EXPECT_EQ(j["n_threads"], 2);
  EXPECT_EQ(j["seed"], 9);
  EXPECT_FALSE(j.contains("threads") || j.contains("random_state"));
  EXPECT_EQ(GPSearcher::from_json(j)->config(), j);
  EXPECT_NE(error_of({{"threads", 1}, {"n_threads", 2}}).find("given twice"), std::string::npos);
}

TEST(GPConfigTable, KatibExtrasKeepTheirMeaning) {
  EXPECT_EQ(GPSearcher::config_from_json({{"acq_optimizer", "sampling"}}).n_refine, 0);
  EXPECT_EQ(GPSearcher::config_from_json({{"acq_optimizer", "sampling"}, {"n_refine", 5}}).n_refine, 5);
  EXPECT_EQ(GPSearcher::config_from_json({{"acq_optimizer", "LBFGS"}}).n_refine, GPConfig{}.n_refine);
  EXPECT_EQ(GPSearcher::config_from_json({{"acq_func", "LCB"}, {"algorithm_name", "bayesianoptimization"}}).acq,
            kubetune::search::gp::AcqType::UCB);
  EXPECT_NE(error_of({{"base_estimator", "RF"}}).find("'base_estimator' = 'RF' is not supported"), std::string::npos);
  EXPECT_NE(error_of({{"acq_optimizer", "grid"}}).find("is not one of auto, sampling, lbfgs"), std::string::npos);
  EXPECT_NE(error_of({{"kernel", "cubic"}}).find("gp: setting 'kernel' = \"cubic\" is not one of matern52, rbf"),
            std::string::npos);
}

TEST(GPConfigTable, OneBooleanRuleAndRanges) {
  EXPECT_TRUE(GPSearcher::config_from_json({{"deterministic_objective", "1"}}).deterministic);
  // GP used to read 2 as true and accept "yes".
  EXPECT_EQ(error_of({{"warm_start", 2}}).find("gp: setting 'warm_start' = 2 is not a boolean"), 0u);
  EXPECT_EQ(error_of({{"deterministic", "yes"}}).find("gp: setting 'deterministic' = \"yes\" is not a boolean"), 0u);
  EXPECT_EQ(error_of({{"n_candidates", "0"}}), "gp: setting 'n_candidates' = 0 must be >= 1");
  EXPECT_EQ(error_of({{"xi", -0.5}}), "gp: setting 'xi' = -0.5 must be >= 0");
  GPConfig bad;
  bad.max_enumeration = 0;
  EXPECT_THROW(GPSearcher{bad}, kubetune::InvalidArgument);
}

}  // namespace
