// Hostile input to the core (issue #18): deeply nested JSON, corrupted study files, user-sized allocations and
// integer conversions. Each case feeds the input that used to crash or be accepted silently and checks the
// clear error it now gets, with the study (or file) left as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/settings.hpp"
#include "kubetune/core/study.hpp"

using namespace kubetune;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
// The document of issue #18: 75k levels, 150 KB.
const std::string kDeep = std::string(75000, '[') + std::string(75000, ']');

std::unique_ptr<Study> small_study() {
  register_builtins();
  SearchSpace s;
  s.add_float("x", -5, 10).add_int("n", 1, 100).add_categorical("c", {"a", "b", "c"});
  return std::make_unique<Study>(std::move(s), make_searcher({{"type", "random"}}),
                                 std::vector<Direction>{Direction::Minimize}, 3,
                                 make_pruner({{"type", "median_stop"}}));
}

// A saved study with one complete, one pruned and one running trial, as JSON.
json saved_study_json() {
  auto s = small_study();
  auto t = s->ask(3);
  s->report(t[0].id, 1, 0.5);
  s->tell(t[0].id, 1.5);
  s->tell_state(t[1].id, TrialState::Pruned);
  return s->to_json();
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Study::load of `text` fails with InvalidArgument whose message holds every part; the file is not touched.
void expect_load_error(const std::string& text, std::initializer_list<const char*> parts) {
  const std::string p = temp_path("kt_hardening.json");
  write(p, text);
  try {
    Study::load(p);
    ADD_FAILURE() << "loaded without error; expected a message with '" << *parts.begin() << "'";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    for (const char* part : parts)
      EXPECT_NE(msg.find(part), std::string::npos) << "missing '" << part << "' in: " << msg;
    EXPECT_LT(msg.size(), 1000u) << "error messages stay short";
  }
  EXPECT_EQ(read(p), text) << "load never modifies the file";
  fs::remove(p);
}

// The saved study's text with the JSON value at `where` (set to a marker) replaced by raw `text`.
std::string with_raw(const std::function<void(json&)>& where, const std::string& raw) {
  json j = saved_study_json();
  where(j);
  std::string s = j.dump();
  const std::string marker = "\"@RAW@\"";
  return s.replace(s.find(marker), marker.size(), raw);
}

std::string mutated(const std::function<void(json&)>& f) {
  json j = saved_study_json();
  f(j);
  return j.dump();
}
}  // namespace

// ---- 1. nesting depth ----

TEST(JsonLimits, DepthOfTextAndValue) {
  EXPECT_EQ(json_depth(std::string_view("1")), 0);
  EXPECT_EQ(json_depth(std::string_view(R"({"a": [1, {"b": "[[[["}]})")), 3) << "brackets in strings are skipped";
  EXPECT_EQ(json_depth(std::string_view(kDeep)), 75000);
  EXPECT_EQ(json_depth(json::parse(R"({"a": [1, {"b": []}]})")), 4);
  EXPECT_EQ(json_depth(json(5)), 0);
}

TEST(JsonLimits, DeepTextIsRefusedBeforeParsing) {
  try {
    parse_user_json(kDeep, "config_json");
    FAIL() << "deep JSON parsed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("config_json nests 75000 levels deep (limit 64)"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(parse_user_json(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), "x"));
  EXPECT_THROW(parse_user_json(std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'), "x"),
               InvalidArgument);
  EXPECT_THROW(parse_user_json("{\"a\": ", "x"), InvalidArgument);
}

TEST(JsonLimits, SummaryOfAHugeOrDeepValueIsShort) {
  json big = json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(i);
  EXPECT_EQ(json_summary(big), "an array of 100000 elements");
  EXPECT_EQ(json_summary(json::parse(kDeep)), "an array of 1 elements");
  EXPECT_EQ(json_summary(json("abc")), "\"abc\"");
  EXPECT_LE(json_summary(json(std::string(5000, 'a'))).size(), 123u);
}

TEST(JsonLimits, SearchSpaceFromJsonRefusesADeepValue) {
  std::string text = R"({"parameters": [{"name": "lr", "type": "double", "low": @, "high": 1}]})";
  text.replace(text.find('@'), 1, kDeep);
  const json j = json::parse(text);  // nlohmann parses and destroys iteratively; copying or dump() would not
  try {
    SearchSpace::from_json(j);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("nests more than 64 levels"), std::string::npos) << e.what();
  }
  // A wide (not deep) bad value: the message summarises instead of dumping it.
  json wide = json::parse(R"({"parameters": [{"name": "lr", "type": "double", "low": 0, "high": 1}]})");
  wide["parameters"][0]["low"] = json::array();
  for (int i = 0; i < 10000; ++i) wide["parameters"][0]["low"].push_back(i);
  try {
    SearchSpace::from_json(wide);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "lr.low: expected a number, got an array of 10000 elements");
  }
}

TEST(JsonLimits, MissingOrMistypedSpaceFieldsAreNamed) {
  auto msg = [](const char* text) {
    try {
      SearchSpace::from_json(json::parse(text));
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg(R"({"parameters": [{"type": "double"}]})"), "search space JSON: parameter 0: 'name' is missing");
  EXPECT_EQ(msg(R"({"parameters": [{"name": "a", "type": 3}]})"), "parameter 'a': 'type' must be a string, got 3");
  EXPECT_EQ(msg(R"({"parameters": [{"name": "a", "type": "categorical", "choices": ["x", 2]}]})"),
            "parameter 'a': 'choices' must be a list of strings, got element 2");
  EXPECT_EQ(msg(R"({"parameters": 5})"), "search space JSON: 'parameters' must be a list, got 5");
}

TEST(JsonLimits, StudyLoadRefusesDeepLowSearcherAndPruner) {
  expect_load_error(with_raw([](json& j) { j["space"]["parameters"][0]["low"] = "@RAW@"; }, kDeep),
                    {"the study nests 75004 levels deep (limit 64)"});
  expect_load_error(with_raw([](json& j) { j["searcher"] = "@RAW@"; }, kDeep), {"nests 75001 levels deep"});
  expect_load_error(with_raw([](json& j) { j["pruner"] = "@RAW@"; }, kDeep), {"nests 75001 levels deep"});
  EXPECT_THROW(make_searcher(json::parse("{\"type\": \"random\", \"x\": " + kDeep + "}")), InvalidArgument);
  EXPECT_THROW(make_pruner(json::parse("{\"type\": \"median_stop\", \"x\": " + kDeep + "}")), InvalidArgument);
}

// ---- 2. validation of loaded trials ----

TEST(StudyLoadValidation, ASavedStudyStillLoads) {
  const std::string text = saved_study_json().dump();
  const std::string p = temp_path("kt_hardening_ok.json");
  write(p, text);
  auto s = Study::load(p);
  EXPECT_EQ(s->n_trials(), 3u);
  EXPECT_EQ(s->best()->id, 0);
  fs::remove(p);
}

TEST(StudyLoadValidation, CompleteTrialWithoutValuesIsRefusedNotASegfaultInBest) {
  expect_load_error(mutated([](json& j) { j["trials"][0]["values"] = json::array(); }),
                    {"trial 0", "'values' has 0 entries for 1 directions"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["values"] = {1.0, 2.0}; }),
                    {"trial 0", "'values' has 2 entries"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["values"] = {nullptr}; }),
                    {"trial 0", "complete trial has finite values"});
}

TEST(StudyLoadValidation, PointsOutsideTheSpaceAreRefused) {
  expect_load_error(mutated([](json& j) { j["trials"][1]["x"][0] = 100.0; }), {"trial 1", "'x'", "'x': value 100"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["x"][1] = 2.5; }), {"trial 0", "'n'", "not legal"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["x"][2] = 7; }), {"trial 0", "'c'", "value 7"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["x"][2] = -1e300; }), {"trial 0", "'c'"});
  expect_load_error(mutated([](json& j) { j["trials"][2]["x"].erase(0); }), {"trial 2", "point has 2 values"});
  expect_load_error(mutated([](json& j) { j["trials"][2]["x"][0] = "abc"; }), {"trial 2", "bad number 'abc'"});
  expect_load_error(mutated([](json& j) { j["trials"][2]["x"][0] = json::object(); }),
                    {"trial 2", "expected a number, got {}"});
}

TEST(StudyLoadValidation, InconsistentStatesAreRefused) {
  expect_load_error(mutated([](json& j) { j["trials"][1]["values"] = {1.0}; }),
                    {"trial 1", "'values' must be empty for a pruned trial"});
  expect_load_error(mutated([](json& j) { j["trials"][2]["finished_at"] = 5.0; }),
                    {"trial 2", "'finished_at' = 5 for a running trial"});
  expect_load_error(mutated([](json& j) { j["trials"][2]["state"] = "done"; }), {"trial 2", "unknown trial state"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["intermediate"] = {{2, 0.5}, {1, 0.4}}; }),
                    {"trial 0", "strictly ascending"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["intermediate"] = {{1, 0.5, 3}}; }),
                    {"trial 0", "[step, value]"});
  expect_load_error(mutated([](json& j) { j["trials"][1]["id"] = 5; }), {"trial 1", "'id' = 5 out of sequence"});
  expect_load_error(mutated([](json& j) { j["trials"][1]["id"] = 1.7; }), {"trial 1", "'id' = 1.7"});
  expect_load_error(mutated([](json& j) { j["trials"][0].erase("state"); }), {"trial 0", "'state' is missing"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["user_attrs"] = {{"k", 1}}; }),
                    {"trial 0", "user_attrs 'k' must be a string"});
  expect_load_error(mutated([](json& j) { j["trials"] = 3; }), {"'trials' must be an array, got 3"});
}

// ---- 3. sizes ----

TEST(StudySizes, AskBatchIsCapped) {
  auto s = small_study();
  try {
    s->ask(Study::kMaxAskBatch + 1);
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("n = 100001"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s->n_trials(), 0u);
  const auto after = s->ask(2);
  ASSERT_EQ(after.size(), 2u) << "the study still works";
  EXPECT_EQ(small_study()->ask(2)[1].x, after[1].x) << "the refused ask consumed no random stream";
}

TEST(StudySizes, LoadRefusesDevicesAndFolders) {
  try {
    Study::load("/dev/zero");
    FAIL() << "accepted";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Study::load(fs::temp_directory_path().string()), IoError);
}

TEST(StudySizes, IntBoundsBeyondExactDoublesAreRefused) {
  SearchSpace s;
  EXPECT_THROW(s.add_int("n", 0, INT64_MAX), InvalidArgument);
  EXPECT_THROW(s.add_int("n", -(std::int64_t{1} << 60), 0), InvalidArgument);
  EXPECT_NO_THROW(s.add_int("n", 0, std::int64_t{1} << 53));
  try {
    SearchSpace::from_json(json::parse(R"([{"name": "k", "type": "int", "low": 0, "high": 1e19}])"));
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'k': int bounds must lie within +-2^53"), std::string::npos)
        << e.what();
  }
}

TEST(StudySizes, AStepGridTooFineToCountIsRefused) {
  SearchSpace s;
  try {
    s.add_float("x", 0, 1, false, 1e-300);  // 1e300 grid points: the count used to overflow int64 (UB)
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'x': step=1e-300 gives more than 2^53 grid points"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(s.empty());
  s.add_float("x", 0, 1, false, 1e-6);
  EXPECT_EQ(s.param(0).cardinality(), 1000001u);
}

// ---- 4. checked integer conversions ----

TEST(CheckedInt, RefusesTruncationAndNamesTheField) {
  auto msg = [](auto f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg([] { checked_int<int>(json(4294967297LL), "gpus"); }),
            "gpus = 4294967297: out of range (allowed -2147483648..2147483647)");
  EXPECT_EQ(checked_int<std::int64_t>(json(4294967297LL), "gpus"), 4294967297LL);
  EXPECT_EQ(msg([] { checked_int<int>(json(1.7), "gpus"); }).rfind("gpus = 1.7: must be an integer", 0), 0u);
  EXPECT_EQ(checked_int<int>(json(3.0), "gpus"), 3);
  EXPECT_EQ(msg([] { checked_int<std::uint64_t>(json(-1), "seed"); }).rfind("seed = -1: must not be negative", 0),
            0u);
  EXPECT_EQ(msg([] { checked_int<std::uint64_t>(json(1e300), "seed"); }).rfind("seed = 1e+300: out of range", 0),
            0u);
  EXPECT_EQ(checked_int<std::uint64_t>(json(18446744073709551615ULL), "seed"), 18446744073709551615ULL);
  EXPECT_EQ(msg([] { checked_int<std::uint8_t>(json(256), "b"); }), "b = 256: out of range (allowed 0..255)");
  EXPECT_NE(msg([] { checked_int<int>(json(true), "x"); }), "no error");
  EXPECT_NE(msg([] { checked_int<int>(json("5"), "x"); }), "no error");
  EXPECT_NE(msg([] { checked_int<int>(json(nullptr), "x"); }), "no error");
}

TEST(CheckedInt, StudyFileSeedsAndVersionAreChecked) {
  expect_load_error(mutated([](json& j) { j["seed"] = -1; }), {"'seed' = -1: must not be negative"});
  expect_load_error(mutated([](json& j) { j["seed"] = 1e300; }), {"'seed' = 1e+300: out of range"});
  expect_load_error(mutated([](json& j) { j["version"] = 4294967297LL; }), {"'version' = 4294967297"});
  expect_load_error(mutated([](json& j) { j["ask_counter"] = 1.5; }), {"'ask_counter' = 1.5"});
  expect_load_error(mutated([](json& j) { j["trials"][0]["intermediate"] = {{1.5, 0.5}}; }),
                    {"trial 0", "intermediate step = 1.5"});
}

TEST(CheckedInt, SettingsIntegerAsRefusesWhatDoesNotFit) {
  EXPECT_EQ(settings::integer_as<int>(json("3"), "eta"), 3) << "Katib passes settings as strings";
  try {
    settings::integer_as<int>(json(4294967298LL), "eta");  // used to become 2 through static_cast<int>
    FAIL() << "accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()), "setting 'eta' = 4294967298 is out of range (allowed -2147483648..2147483647)");
  }
  EXPECT_THROW(settings::integer_as<std::size_t>(json(-1), "n"), InvalidArgument);
  EXPECT_THROW(settings::integer_as<int>(json(1.7), "eta"), InvalidArgument);
  EXPECT_THROW(settings::integer_as<int>(json(1e300), "eta"), InvalidArgument);
}
