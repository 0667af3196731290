// DartsConfig's settings table: JSON round trip, the supernet's settings flat beside DARTS', unknown keys and
// bad values refused naming them, "threads" read as the deprecated name of "n_threads".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/nas/darts.hpp"

using kubetune::InvalidArgument;
using kubetune::nas::DartsConfig;

TEST(DartsConfigTable, RoundTripsEverySetting) {
  DartsConfig c;
  c.net.channels = 6;
  c.net.layers = 2;
  c.net.ops = {"none", "skip_connect", "sep_conv_3x3"};
  c.net.affine = true;
  c.batch_size = 32;
  c.w_lr = 0.05;
  c.second_order = true;
  c.seed = 7;
  c.n_threads = 3;
  const nlohmann::json j = c.to_json();
  EXPECT_EQ(j.at("channels"), 6);
  EXPECT_EQ(j.at("ops"), nlohmann::json({"none", "skip_connect", "sep_conv_3x3"}));
  EXPECT_FALSE(j.contains("threads"));
  const DartsConfig d = DartsConfig::from_json(j);
  EXPECT_EQ(d.to_json(), j);
  EXPECT_EQ(d.net.ops, c.net.ops);
  EXPECT_EQ(d.n_threads, 3);
  EXPECT_TRUE(d.second_order);
}

TEST(DartsConfigTable, DefaultsAreTheStructsAndThreadsIsAnOldName) {
  const DartsConfig d = DartsConfig::from_json(nlohmann::json::object());
  EXPECT_EQ(d.to_json(), DartsConfig{}.to_json());
  EXPECT_EQ(DartsConfig::from_json({{"threads", 2}}).n_threads, 2);
  bool found = false;
  for (const auto& f : DartsConfig::settings_schema())
    if (f.at("name") == "n_threads") found = f.at("deprecated") == nlohmann::json({"threads"});
  EXPECT_TRUE(found);
}

TEST(DartsConfigTable, BadInputNamesTheSetting) {
  auto message = [](const nlohmann::json& j) {
    try {
      DartsConfig::from_json(j);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"chanels", 4}}).find("unknown setting 'chanels'"), std::string::npos) << message({{"chanels", 4}});
  EXPECT_NE(message({{"ops", {"none", 3}}}).find("ops[1]"), std::string::npos) << message({{"ops", {"none", 3}}});
  EXPECT_NE(message({{"ops", "none"}}).find("list of strings"), std::string::npos);
  EXPECT_NE(message({{"batch_size", 1.5}}).find("batch_size"), std::string::npos);
  EXPECT_NE(message({{"threads", 2}, {"n_threads", 3}}).find("n_threads"), std::string::npos);
}
