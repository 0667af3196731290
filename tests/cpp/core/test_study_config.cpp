// Study::from_config (the one reading of a study config, shared by the C API and Python) and
// distribution_from_string.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"

using namespace kubetune;
using nlohmann::json;

namespace {
const json kSpace = json::parse(R"({"parameters": [{"name": "x", "type": "double", "low": 0, "high": 1}]})");

std::string error_of(const json& cfg) {
  try {
    Study::from_config(cfg);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

std::vector<double> first_asks(Study& s, int n) {
  std::vector<double> xs;
  for (const auto& t : s.ask(static_cast<std::size_t>(n))) xs.push_back(t.x[0]);
  return xs;
}
}  // namespace

TEST(StudyConfig, DefaultsAreRandomMinimizeSeedZero) {
  register_builtins();
  auto s = Study::from_config(json{{"space", kSpace}});
  EXPECT_EQ(s->searcher_config()["type"], "random");
  ASSERT_EQ(s->directions().size(), 1u);
  EXPECT_EQ(s->directions()[0], Direction::Minimize);
  EXPECT_EQ(s->seed(), 0u);
  EXPECT_FALSE(s->pruner_config().has_value());
}

TEST(StudyConfig, EveryFormOfTheSearcherGivesTheSameStudy) {
  register_builtins();
  auto a = Study::from_config(json{{"space", kSpace}, {"searcher", "tpe"}, {"seed", 7}});
  auto b = Study::from_config(json{{"space", kSpace}, {"searcher", json{{"type", "tpe"}}}, {"seed", 7}});
  auto c = Study::from_config(json{{"space", kSpace}, {"searcher", R"({"type": "tpe"})"}, {"seed", 7}});
  EXPECT_EQ(a->searcher_config(), b->searcher_config());
  EXPECT_EQ(a->searcher_config(), c->searcher_config());
  const std::vector<double> xa = first_asks(*a, 3);
  EXPECT_EQ(xa, first_asks(*b, 3));
  EXPECT_EQ(xa, first_asks(*c, 3));
  auto n = Study::from_config(json{{"space", kSpace}, {"searcher", nullptr}});
  EXPECT_EQ(n->searcher_config()["type"], "random");
}

TEST(StudyConfig, DirectionFormsAndTheGivenSpace) {
  register_builtins();
  auto one = Study::from_config(json{{"space", kSpace}, {"direction", "maximize"}});
  EXPECT_EQ(one->directions(), std::vector<Direction>{Direction::Maximize});
  auto list = Study::from_config(json{{"space", kSpace}, {"direction", json::array({"minimize", "maximize"})}});
  auto dirs = Study::from_config(json{{"space", kSpace}, {"directions", json::array({"minimize", "maximize"})}});
  const std::vector<Direction> two{Direction::Minimize, Direction::Maximize};
  EXPECT_EQ(list->directions(), two);
  EXPECT_EQ(dirs->directions(), two);

  SearchSpace space = SearchSpace::from_json(kSpace);
  auto given = Study::from_config(space, json{{"seed", 3}, {"pruner", "median_stop"}});
  EXPECT_EQ(given->space(), space);
  EXPECT_EQ(given->seed(), 3u);
  ASSERT_TRUE(given->pruner_config().has_value());
  EXPECT_EQ((*given->pruner_config())["type"], "median_stop");
  try {
    Study::from_config(space, json{{"space", kSpace}});
    ADD_FAILURE() << "a second space was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("the space is given"), std::string::npos) << e.what();
  }
}

TEST(StudyConfig, KatibParametersAreASpace) {
  register_builtins();
  const json katib = json::parse(
      R"([{"name": "lr", "parameterType": "double", "feasibleSpace": {"min": "0.01", "max": "0.1"}}])");
  auto s = Study::from_config(json{{"katib_parameters", katib}});
  EXPECT_EQ(s->space().size(), 1u);
  EXPECT_TRUE(s->space().contains("lr"));
}

TEST(StudyConfig, ErrorsNameTheField) {
  register_builtins();
  EXPECT_NE(error_of(json::array()).find("study config must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of(json::object()).find("needs 'space' or 'katib_parameters'"), std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"sede", 1}}).find("unknown key 'sede'"), std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"katib_parameters", json::array()}}).find("not both"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"direction", "minimize"}, {"directions", {"minimize"}}})
                .find("'direction' or 'directions', not both"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"directions", "minimize"}}).find("'directions' must be a list"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"directions", {1}}}).find("'directions' entries must be strings"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"direction", 2}}).find("'direction' must be a string or a list"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"direction", json::array()}}).find("at least one direction"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"direction", "up"}}).find("up"), std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"searcher", 5}}).find("'searcher' must be a type name or an object"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"searcher", ""}}).find("'searcher' must not be an empty"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"searcher", "{not json"}}).find("study config: 'searcher'"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"pruner", 1.5}}).find("'pruner' must be a type name or an object"),
            std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"seed", -1}}).find("'seed' = -1"), std::string::npos);
  EXPECT_NE(error_of(json{{"space", kSpace}, {"seed", "3"}}).find("'seed'"), std::string::npos);
}

TEST(DistributionFromString, EverySpellingAndRefusals) {
  EXPECT_EQ(distribution_from_string("uniform"), Distribution::Uniform);
  for (const char* s : {"log_uniform", "loguniform", "logUniform"})
    EXPECT_EQ(distribution_from_string(s), Distribution::LogUniform) << s;
  EXPECT_EQ(distribution_from_string("normal"), Distribution::Normal);
  for (const char* s : {"log_normal", "lognormal", "logNormal"})
    EXPECT_EQ(distribution_from_string(s), Distribution::LogNormal) << s;
  for (Distribution d : {Distribution::Uniform, Distribution::LogUniform, Distribution::Normal,
                         Distribution::LogNormal})
    EXPECT_EQ(distribution_from_string(to_string(d)), d);
  for (const char* bad : {"", "gaussian", "Uniform"}) {
    try {
      distribution_from_string(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("unknown distribution '") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
  // A space's JSON reads an empty distribution as uniform and names the parameter on an unknown one.
  json p = json::parse(R"({"parameters": [{"name": "x", "type": "double", "low": 1, "high": 2,
                                           "distribution": "wide"}]})");
  try {
    SearchSpace::from_json(p);
    ADD_FAILURE() << "unknown distribution accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'x': unknown distribution 'wide'"), std::string::npos)
        << e.what();
  }
}
