// The unit naming rule (units.hpp): renamed fields, their deprecated JSON keys, and the second-valued checks.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "kubetune/sched/autoscale/simulate.hpp"
#include "kubetune/sched/autoscale/units.hpp"

using namespace kubetune::sched::autoscale;
using kubetune::InvalidArgument;
using nlohmann::json;

namespace {
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Units, RenamedFieldsFollowTheRule) {
  // Every new name ends in _s or _percent, and each JSON form writes the new name, never the old one.
  const json forms = {{"KpaConfig", json::parse(KpaConfig{}.to_json())},
                      {"KpaRevision", json::parse(KpaRevision{}.to_json())},
                      {"HpaControllerConfig", json::parse(HpaControllerConfig{}.to_json())},
                      {"SimConfig", json::parse(sim_config_to_json(SimConfig{}))}};
  int checked = 0;
  for (const RenamedField& f : renamed_fields()) {
    const std::string n = f.new_name;
    EXPECT_TRUE(n.ends_with("_s") || n.ends_with("_percent")) << n;
    if (!forms.contains(f.type)) continue;
    EXPECT_TRUE(forms.at(f.type).contains(f.new_name)) << f.type << "." << f.new_name;
    EXPECT_FALSE(forms.at(f.type).contains(f.old_name)) << f.type << "." << f.old_name;
    ++checked;
  }
  EXPECT_EQ(checked, 20);
  EXPECT_TRUE(forms.at("SimConfig").at("slo").contains("latency_s"));
}

TEST(Units, DeprecatedJsonKeysAreAccepted) {
  const KpaConfig c = KpaConfig::from_json(R"({"stable_window": 120, "panic_threshold_percentage": 300})");
  EXPECT_EQ(c.stable_window_s, 120.0);
  EXPECT_EQ(c.panic_threshold_percent, 300.0);
  EXPECT_EQ(KpaRevision::from_json(R"({"window": 30, "scale_down_delay": 10})").window_s, 30.0);
  const SimConfig s = sim_config_from_json(R"({"service_time": 0.2, "slo": {"latency": 0.8},
                                               "hpa_controller": {"sync_period": 30}})");
  EXPECT_EQ(s.service_time_s, 0.2);
  EXPECT_EQ(s.slo.latency_s, 0.8);
  EXPECT_EQ(s.hpa_controller.sync_period_s, 30.0);
  EXPECT_EQ(HpaControllerConfig::from_json(R"({"downscale_stabilization_window": 60})")
                .downscale_stabilization_window_s,
            60.0);
  // One field under both names, and unknown keys, are refused with the names in the message.
  const std::string both = error_of([] { KpaConfig::from_json(R"({"stable_window": 60, "stable_window_s": 90})"); });
  EXPECT_NE(both.find("'stable_window' (deprecated) and 'stable_window_s'"), std::string::npos) << both;
  EXPECT_NE(error_of([] { HpaControllerConfig::from_json(R"({"sync": 1})"); }).find("unknown key 'sync'"),
            std::string::npos);
  EXPECT_NE(error_of([] { HpaControllerConfig::from_json(R"({"sync_period_s": 0})"); }).find("sync_period_s"),
            std::string::npos);
}

TEST(Units, CollectorTakesSeconds) {
  EXPECT_EQ(KpaMetricCollector(60.0, 6.0).panic_window_s(), 6.0);
  EXPECT_EQ(KpaMetricCollector(60.0, 60.0).panic_window_s(), 60.0);
  EXPECT_NE(error_of([] { KpaMetricCollector(60.0, 0.5); }).find("panic_window_s = 0.5"), std::string::npos);
  EXPECT_NE(error_of([] { KpaMetricCollector(60.0, 61.0); }).find("panic_window_s = 61"), std::string::npos);
  EXPECT_NE(error_of([] { resolve_panic_window(60.0, 0.0); }).find("panic_window_percent"), std::string::npos);
}

TEST(Units, HpaPeriodsAreWholeSecondsWrittenAsIntegers) {
  ScalingRules r = HpaBehavior::default_scale_up();
  r.policies[0].period_s = 15.5;
  EXPECT_NE(error_of([&] { r.validate("behavior.scaleUp"); }).find("periodSeconds = 15.5"), std::string::npos);
  r.policies[0].period_s = 15;
  r.stabilization_window_s = 0.25;
  EXPECT_NE(error_of([&] { r.validate("behavior.scaleUp"); }).find("stabilizationWindowSeconds = 0.25"),
            std::string::npos);
  HpaSpec spec;
  spec.behavior = HpaBehavior{};
  const std::string j = spec.to_json();
  EXPECT_NE(j.find("\"periodSeconds\":15"), std::string::npos) << j;
  EXPECT_EQ(j.find("\"periodSeconds\":15."), std::string::npos) << j;  // an int32, as autoscaling/v2
  EXPECT_EQ(HpaSpec::from_json(j).behavior->scale_up.policies[0].period_s, 15.0);
  // A fractional periodSeconds in the JSON is refused, not truncated.
  const std::string frac = error_of([] {
    HpaSpec::from_json(
        R"({"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 1.5}]}}})");
  });
  EXPECT_NE(frac.find("periodSeconds = 1.5"), std::string::npos) << frac;
}
