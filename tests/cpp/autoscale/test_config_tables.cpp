// The autoscale configs' JSON forms come from one settings table each: every field survives to_json/from_json,
// the keys are those the previous hand-written forms used, unknown keys are refused naming the key, the
// deprecated names are still read, and validate() still runs after reading.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "error_of.hpp"

using namespace kubetune::sched::autoscale;
using nlohmann::json;

namespace {
std::set<std::string> keys_of(const std::string& text) {
  std::set<std::string> k;
  const json j = json::parse(text);
  for (const auto& [key, v] : j.items()) k.insert(key);
  return k;
}

// Every key of `changed` differs from the default's, so a round trip that keeps the JSON keeps every field.
void expect_every_field_differs(const std::string& changed, const std::string& defaults) {
  const json c = json::parse(changed), d = json::parse(defaults);
  ASSERT_EQ(keys_of(changed), keys_of(defaults));
  for (const auto& [k, v] : c.items()) EXPECT_NE(v, d.at(k)) << k << " is still the default";
}

KpaConfig changed_kpa_config() {
  KpaConfig c;
  c.enable_scale_to_zero = false;
  c.container_concurrency_target_fraction = 0.5;
  c.container_concurrency_target_default = 50.0;
  c.target_utilization = 0.6;
  c.rps_target_default = 150.0;
  c.target_burst_capacity = -1.0;
  c.max_scale_up_rate = 500.0;
  c.max_scale_down_rate = 3.0;
  c.stable_window_s = 120.0;
  c.panic_window_percent = 20.0;
  c.panic_threshold_percent = 300.0;
  c.activator_capacity = 50.0;
  c.scale_to_zero_grace_period_s = 40.0;
  c.scale_to_zero_pod_retention_period_s = 10.0;
  c.scale_down_delay_s = 5.0;
  c.initial_scale = 2;
  c.allow_zero_initial_scale = true;
  c.min_scale = 1;
  c.max_scale = 8;
  c.max_scale_limit = 20;
  c.activation_timeout_s = KpaConfig{}.activation_timeout_s + 1.5;
  return c;
}

KpaRevision changed_kpa_revision() {
  KpaRevision r;
  r.metric = ScalingMetric::kRps;
  r.aggregation = Aggregation::kWeightedExponential;
  r.container_concurrency = 10;
  r.target = 50.5;
  r.target_utilization_percent = 80.0;
  r.target_burst_capacity = 100.0;
  r.window_s = 30.0;
  r.panic_window_percent = 15.0;
  r.panic_threshold_percent = 250.0;
  r.scale_down_delay_s = 10.0;
  r.scale_to_zero_pod_retention_period_s = 20.0;
  r.initial_scale = 3;
  r.min_scale = 1;
  r.max_scale = 5;
  r.activation_scale = 2;
  r.reachable = false;
  r.progress_deadline_s = 600.0;
  return r;
}
}  // namespace

TEST(AutoscaleConfigTables, KpaConfigRoundTripsEveryField) {
  const KpaConfig c = changed_kpa_config();
  c.validate();
  expect_every_field_differs(c.to_json(), KpaConfig{}.to_json());
  const KpaConfig back = KpaConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  EXPECT_EQ(back.enable_scale_to_zero, false);
  EXPECT_EQ(back.stable_window_s, 120.0);
  EXPECT_EQ(back.max_scale, 8);
  EXPECT_EQ(back.activation_timeout_s, c.activation_timeout_s);
  // The keys of the hand-written form it replaced.
  EXPECT_EQ(keys_of(c.to_json()),
            (std::set<std::string>{"enable_scale_to_zero", "container_concurrency_target_fraction",
                                   "container_concurrency_target_default", "target_utilization", "rps_target_default",
                                   "target_burst_capacity", "max_scale_up_rate", "max_scale_down_rate",
                                   "stable_window_s", "panic_window_percent", "panic_threshold_percent",
                                   "activator_capacity", "scale_to_zero_grace_period_s",
                                   "scale_to_zero_pod_retention_period_s", "scale_down_delay_s", "initial_scale",
                                   "allow_zero_initial_scale", "min_scale", "max_scale", "max_scale_limit",
                                   "activation_timeout_s"}));
}

TEST(AutoscaleConfigTables, KpaConfigKeysAndMessages) {
  EXPECT_EQ(error_of([] { KpaConfig::from_json(R"({"stable_window_s": 60, "extra": 1})"); }),
            "KpaConfig JSON: unknown key 'extra'");
  EXPECT_EQ(error_of([] { KpaConfig::from_json(R"({"type": "kpa"})"); }), "KpaConfig JSON: unknown key 'type'");
  EXPECT_EQ(KpaConfig::from_json(R"({"stable_window": 90})").stable_window_s, 90.0);  // deprecated name
  EXPECT_NE(error_of([] { KpaConfig::from_json(R"({"stable_window": 60, "stable_window_s": 90})"); })
                .find("'stable_window' (deprecated) and 'stable_window_s'"),
            std::string::npos);
  // validate() runs after reading, with upstream's message.
  EXPECT_EQ(error_of([] { KpaConfig::from_json(R"({"stable_window_s": 5})"); }),
            "stable-window = 5s must be in [6s, 3600s] range");
  // Bad values name the key and the value; bad text and non-objects stay InvalidArgument.
  const std::string bad = error_of([] { KpaConfig::from_json(R"({"max_scale": 2.5})"); });
  EXPECT_NE(bad.find("KpaConfig JSON: setting 'max_scale' = 2.5"), std::string::npos) << bad;
  EXPECT_NE(error_of([] { KpaConfig::from_json(R"({"enable_scale_to_zero": "maybe"})"); }).find("enable_scale_to_zero"),
            std::string::npos);
  EXPECT_EQ(error_of([] { KpaConfig::from_json("[1]"); }), "KpaConfig JSON must be an object");
  EXPECT_EQ(error_of([] { KpaConfig::from_json("{"); }).rfind("KpaConfig JSON: ", 0), 0u);
  // Absent keys keep the defaults.
  EXPECT_EQ(KpaConfig::from_json("{}").to_json(), KpaConfig{}.to_json());
}

TEST(AutoscaleConfigTables, KpaRevisionRoundTripsEveryField) {
  const KpaRevision r = changed_kpa_revision();
  r.validate();
  expect_every_field_differs(r.to_json(), KpaRevision{}.to_json());
  const KpaRevision back = KpaRevision::from_json(r.to_json());
  EXPECT_EQ(back.to_json(), r.to_json());
  EXPECT_EQ(back.metric, ScalingMetric::kRps);
  EXPECT_EQ(back.aggregation, Aggregation::kWeightedExponential);
  EXPECT_EQ(back.target, 50.5);
  EXPECT_EQ(back.min_scale, 1);
  EXPECT_EQ(back.progress_deadline_s, 600.0);
  // Unset annotations are written as null and read back unset.
  const json d = json::parse(KpaRevision{}.to_json());
  EXPECT_TRUE(d.at("target").is_null());
  EXPECT_TRUE(d.at("max_scale").is_null());
  EXPECT_EQ(d.at("metric"), "concurrency");
  EXPECT_EQ(d.at("aggregation"), "linear");
  EXPECT_FALSE(KpaRevision::from_json(R"({"target": null, "min_scale": null})").min_scale.has_value());
  EXPECT_EQ(keys_of(r.to_json()),
            (std::set<std::string>{"metric", "aggregation", "container_concurrency", "activation_scale", "reachable",
                                   "target", "target_utilization_percent", "target_burst_capacity", "window_s",
                                   "panic_window_percent", "panic_threshold_percent", "scale_down_delay_s",
                                   "scale_to_zero_pod_retention_period_s", "initial_scale", "min_scale",
                                   "max_scale", "progress_deadline_s"}));
}

TEST(AutoscaleConfigTables, KpaRevisionKeysAndMessages) {
  EXPECT_EQ(error_of([] { KpaRevision::from_json(R"({"windows": 30})"); }), "KpaRevision JSON: unknown key 'windows'");
  const KpaRevision old = KpaRevision::from_json(R"({"window": 30, "target_utilization_percentage": 60})");
  EXPECT_EQ(old.window_s, 30.0);
  EXPECT_EQ(old.target_utilization_percent, 60.0);
  EXPECT_EQ(KpaRevision::from_json(R"({"aggregation": "weighted_exponential"})").aggregation,
            Aggregation::kWeightedExponential);
  EXPECT_NE(error_of([] { KpaRevision::from_json(R"({"metric": "qps"})"); }).find("must be 'concurrency' or 'rps'"),
            std::string::npos);
  EXPECT_EQ(error_of([] { KpaRevision::from_json(R"({"window_s": 7000})"); }),
            "window_s = 7000s must be whole seconds in [6s, 3600s]");
  EXPECT_NE(error_of([] { KpaRevision::from_json(R"({"initial_scale": 1e24})"); }).find("initial_scale"),
            std::string::npos);
}

TEST(AutoscaleConfigTables, HpaControllerConfigRoundTripsEveryField) {
  HpaControllerConfig c;
  c.downscale_stabilization_window_s = 60.0;
  c.tolerance = 0.2;
  c.sync_period_s = 30.0;
  expect_every_field_differs(c.to_json(), HpaControllerConfig{}.to_json());
  const HpaControllerConfig back = HpaControllerConfig::from_json(c.to_json());
  EXPECT_EQ(back.downscale_stabilization_window_s, 60.0);
  EXPECT_EQ(back.tolerance, 0.2);
  EXPECT_EQ(back.sync_period_s, 30.0);
  EXPECT_EQ(keys_of(c.to_json()),
            (std::set<std::string>{"downscale_stabilization_window_s", "tolerance", "sync_period_s"}));
  EXPECT_EQ(error_of([] { HpaControllerConfig::from_json(R"({"sync": 1})"); }),
            "HpaControllerConfig JSON: unknown key 'sync'");
  EXPECT_EQ(HpaControllerConfig::from_json(R"({"sync_period": 45})").sync_period_s, 45.0);  // deprecated name
  EXPECT_EQ(error_of([] { HpaControllerConfig::from_json(R"({"tolerance": -0.5})"); }),
            "tolerance = -0.5 must be >= 0");
  EXPECT_EQ(error_of([] { HpaControllerConfig::from_json("3"); }), "HpaControllerConfig JSON must be an object");
}
