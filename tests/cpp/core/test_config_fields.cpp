// Config tables (core/config_fields.hpp): one declaration gives from_json, to_json, checks and the schema.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"

namespace {
using nlohmann::json;
using kubetune::InvalidArgument;
using kubetune::settings::Fields;

enum class Shape { Round, Square };

struct Inner {
  double lo = 1.0;
  int eta = 3;
};

struct Demo {
  std::size_t count = 10;
  double rate = 0.5;
  bool flag = true;
  int n_threads = 1;
  std::int64_t offset = -2;
  std::string name = "x";
  Shape shape = Shape::Round;
  bool fast = false;  // a bool written as a choice
  std::optional<std::uint64_t> random_state;
  std::map<std::string, std::uint64_t> points;
  Inner inner;
};

Shape shape_from(const std::string& s) {
  if (s == "ROUND") return Shape::Round;
  KT_THROW(InvalidArgument, "shape '", s, "' is unknown");
}

const Fields<Demo>& table() {
  static const Fields<Demo> t =
      Fields<Demo>("demo")
          .field<&Demo::count>("count", "how many").alias("n").range(1, 100)
          .field<&Demo::rate>("rate", "a rate").above(0).below(1)
          .field<&Demo::flag>("flag", "a flag")
          .field<&Demo::n_threads>("n_threads", "threads").deprecated("threads")
          .field<&Demo::offset>("offset", "signed")
          .field<&Demo::name>("name", "a name")
          .choice<&Demo::shape, &shape_from>("shape", {"round", "square"}, "a shape")
          .choice<&Demo::fast>("mode", {"slow", "fast"}, "speed")
          .field<&Demo::random_state>("seed", "a seed").alias("random_state")
          .field<&Demo::points>("points", "counts")
          .nest<&Demo::inner>(Fields<Inner>("inner")
                                  .field<&Inner::lo>("lo", "low").at_least(0)
                                  .field<&Inner::eta>("eta", "factor").alias("reduction_factor"))
          .ignored("legacy", "ignored")
          .extra("preset");
  return t;
}

std::string error_of(const json& j) {
  try {
    table().from_json(j);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigFields, DefaultsComeFromTheStructAndRoundTrip) {
  const json d = table().to_json(Demo{});
  EXPECT_EQ(d, json::parse(R"({"count": 10, "rate": 0.5, "flag": true, "n_threads": 1, "offset": -2, "name": "x",
                               "shape": "round", "mode": "slow", "seed": null, "points": {}, "lo": 1.0, "eta": 3})"));
  Demo c = table().from_json({{"count", 7}, {"rate", 0.25}, {"flag", false}, {"shape", "square"}, {"mode", "fast"},
                              {"seed", 9}, {"points", {{"a", 2}}}, {"lo", 2.5}, {"eta", 4}, {"offset", -7}});
  EXPECT_EQ(c.count, 7u);
  EXPECT_EQ(c.shape, Shape::Square);
  EXPECT_TRUE(c.fast);
  EXPECT_EQ(c.random_state, std::optional<std::uint64_t>(9));
  EXPECT_EQ(c.inner.eta, 4);
  EXPECT_EQ(c.points.at("a"), 2u);
  const json back = table().to_json(c);
  EXPECT_EQ(table().to_json(table().from_json(back)), back);
  EXPECT_FALSE(table().from_json({{"seed", nullptr}}).random_state.has_value());
  // A start object keeps its values for absent keys (presets).
  Demo start;
  start.count = 50;
  EXPECT_EQ(table().from_json({{"rate", 0.1}}, start).count, 50u);
}

TEST(ConfigFields, KatibStringsFollowOneRule) {
  Demo c = table().from_json({{"count", "12"}, {"rate", "0.125"}, {"flag", "False"}, {"seed", "5"}, {"eta", "6"}});
  EXPECT_EQ(c.count, 12u);
  EXPECT_EQ(c.rate, 0.125);
  EXPECT_FALSE(c.flag);
  EXPECT_EQ(*c.random_state, 5u);
  EXPECT_EQ(c.inner.eta, 6);
  for (const json& yes : {json(true), json(1), json("true"), json("True"), json("1")})
    EXPECT_TRUE(table().from_json({{"flag", yes}, {"name", "y"}}).flag) << yes;
  for (const json& no : {json(false), json(0), json("false"), json("False"), json("0")})
    EXPECT_FALSE(table().from_json({{"flag", no}, {"name", "y"}}).flag) << no;
  for (const json& bad : {json("yes"), json("no"), json(2), json(1.0), json("TRUE"), json(nullptr)}) {
    const std::string e = error_of({{"flag", bad}});
    EXPECT_NE(e.find("demo: setting 'flag'"), std::string::npos) << e;
    EXPECT_NE(e.find("is not a boolean"), std::string::npos) << e;
  }
  EXPECT_EQ(table().from_json({{"count", 3.0}}).count, 3u);
  EXPECT_NE(error_of({{"count", 2.5}}).find("'count' = 2.5 must be a non-negative integer"), std::string::npos);
  EXPECT_NE(error_of({{"n_threads", 4294967297.0}}).find("out of range"), std::string::npos);
  EXPECT_NE(error_of({{"rate", "fast"}}).find("'fast' is not a number"), std::string::npos);
}

TEST(ConfigFields, RangesAndChoicesNameTheFieldAndValue) {
  EXPECT_EQ(error_of({{"count", 0}}), "demo: setting 'count' = 0 must be in [1, 100]");
  EXPECT_EQ(error_of({{"n", 101}}), "demo: setting 'n' = 101 must be in [1, 100]");  // the key as given
  EXPECT_EQ(error_of({{"rate", 1}}), "demo: setting 'rate' = 1 must be in (0, 1)");
  EXPECT_EQ(error_of({{"rate", "nan"}}).find("demo: setting 'rate'"), 0u);
  EXPECT_EQ(error_of({{"lo", -1}}), "demo: setting 'lo' = -1 must be >= 0");
  EXPECT_EQ(error_of({{"mode", "medium"}}), "demo: setting 'mode' = \"medium\" is not one of slow, fast");
  EXPECT_EQ(table().from_json({{"shape", "ROUND"}}).shape, Shape::Round);  // the lenient parser
  EXPECT_NE(error_of({{"shape", "oval"}}).find("shape 'oval' is unknown"), std::string::npos);
  EXPECT_NE(error_of({{"points", {{"a", 0}}}}).find("'points.a' = 0 must be >= 1"), std::string::npos);
  // check() validates a struct built in C++, naming the canonical field.
  Demo c;
  c.inner.lo = -0.5;
  try {
    table().check(c);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "demo: setting 'lo' = -0.5 must be >= 0");
  }
}

TEST(ConfigFields, UnknownKeysDuplicatesAliasesExtras) {
  const std::string e = error_of({{"bogus", 1}});
  EXPECT_EQ(e.find("demo: unknown setting 'bogus' (accepted: count / n, rate, flag, n_threads / threads,"), 0u) << e;
  EXPECT_NE(e.find("seed / random_state"), std::string::npos) << e;
  EXPECT_NE(e.find(", preset)"), std::string::npos) << e;
  EXPECT_EQ(error_of({{"seed", 1}, {"random_state", 2}}),
            "demo: setting 'seed' is given twice (as 'random_state' and 'seed')");
  EXPECT_EQ(table().from_json({{"threads", 3}}).n_threads, 3);
  EXPECT_EQ(table().from_json({{"reduction_factor", 5}}).inner.eta, 5);
  EXPECT_NO_THROW(table().from_json({{"preset", "anything"}, {"type", "demo"}}));
  EXPECT_NO_THROW(table().from_json({{"legacy", "7"}}));
  EXPECT_NE(error_of({{"legacy", -1}}).find("'legacy' = -1"), std::string::npos);
  EXPECT_NE(error_of(json::array()).find("demo config must be a JSON object"), std::string::npos);
  EXPECT_NO_THROW(table().from_json(nullptr));
}

TEST(ConfigFields, SchemaListsEverythingTheBindingsNeed) {
  const json s = table().schema();
  ASSERT_EQ(s.size(), 13u);
  EXPECT_EQ(s[0]["name"], "count");
  EXPECT_EQ(s[0]["type"], "int");
  EXPECT_EQ(s[0]["default"], 10);
  EXPECT_EQ(s[0]["aliases"], json::array({"n"}));
  EXPECT_EQ(s[0]["min"], 1.0);
  EXPECT_EQ(s[0]["max"], 100.0);
  EXPECT_EQ(s[1]["above"], 0.0);
  EXPECT_EQ(s[1]["below"], 1.0);
  EXPECT_EQ(s[3]["deprecated"], json::array({"threads"}));
  EXPECT_EQ(s[6]["choices"], json::array({"round", "square"}));
  EXPECT_EQ(s[6]["exact"], false);
  EXPECT_EQ(s[7]["exact"], true);
  EXPECT_EQ(s[8]["type"], "int | None");
  EXPECT_TRUE(s[8]["default"].is_null());
  EXPECT_EQ(s[9]["type"], "dict[str, int]");
  EXPECT_EQ(s[11]["name"], "eta");
  EXPECT_EQ(s[12]["ignored"], true);
  const std::string doc = kubetune::settings::schema_doc(s);
  EXPECT_NE(doc.find("count: int = 10. how many. Must be >= 1, <= 100. Also accepted as n.\n"), std::string::npos)
      << doc;
  EXPECT_NE(doc.find("flag: bool = True. a flag.\n"), std::string::npos) << doc;
  EXPECT_NE(doc.find("seed: int | None = None."), std::string::npos) << doc;
  EXPECT_NE(doc.find("Deprecated name: threads."), std::string::npos) << doc;
}

}  // namespace
