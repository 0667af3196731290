// The autoscale configs' JSON forms come from one settings table each: every field survives to_json/from_json,
// the keys are those the previous hand-written forms used, unknown keys are refused naming the key, the
// deprecated names are still read, and validate() still runs after reading.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "kubetune/sched/autoscale/simulate.hpp"
#include "../error_of.hpp"

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

namespace {
SimConfig changed_sim_config() {
  SimConfig c;
  c.policy = SimPolicy::kSlo;
  c.service_time_s = 0.25;
  c.container_concurrency = 4;
  c.pod_startup_delay_s = 3.5;
  c.slo = LatencySlo{0.8, 0.99, false, 0.9};
  c.initial_replicas = 2;
  c.kpa = changed_kpa_config();
  c.kpa_revision = changed_kpa_revision();
  c.hpa = HpaSpec{2, 7, HpaBehavior{}};
  c.hpa_controller.downscale_stabilization_window_s = 60.0;
  c.hpa_controller.tolerance = 0.2;
  c.hpa_controller.sync_period_s = 30.0;
  c.hpa_target_utilization = 0.55;
  c.hpa_metric_window_s = 45.0;
  c.slo_interval_s = 2.0;
  c.slo_lookback_s = 20.0;
  c.slo_headroom = 1.3;
  c.slo_min_replicas = 3;
  c.max_replicas = 50;
  return c;
}

// The hand-written form the table replaced, kept here to check that the written JSON is the same.
json old_sim_config_json(const SimConfig& c) {
  const char* policy = c.policy == SimPolicy::kHpa ? "hpa" : c.policy == SimPolicy::kSlo ? "slo" : "kpa";
  return json{{"policy", policy},
              {"service_time_s", c.service_time_s},
              {"container_concurrency", c.container_concurrency},
              {"pod_startup_delay_s", c.pod_startup_delay_s},
              {"slo",
               {{"latency_s", c.slo.latency_s},
                {"quantile", c.slo.quantile},
                {"on_response_time", c.slo.on_response_time},
                {"max_utilization", c.slo.max_utilization}}},
              {"initial_replicas", c.initial_replicas},
              {"kpa", json::parse(c.kpa.to_json())},
              {"kpa_revision", json::parse(c.kpa_revision.to_json())},
              {"hpa", json::parse(c.hpa.to_json())},
              {"hpa_controller", json::parse(c.hpa_controller.to_json())},
              {"hpa_target_utilization", c.hpa_target_utilization},
              {"hpa_metric_window_s", c.hpa_metric_window_s},
              {"slo_interval_s", c.slo_interval_s},
              {"slo_lookback_s", c.slo_lookback_s},
              {"slo_headroom", c.slo_headroom},
              {"slo_min_replicas", c.slo_min_replicas},
              {"max_replicas", c.max_replicas}};
}
}  // namespace

TEST(AutoscaleConfigTables, SimConfigWritesTheSameJson) {
  EXPECT_EQ(sim_config_to_json(SimConfig{}), old_sim_config_json(SimConfig{}).dump());
  const SimConfig c = changed_sim_config();
  EXPECT_EQ(sim_config_to_json(c), old_sim_config_json(c).dump());
  SimConfig h;
  h.policy = SimPolicy::kHpa;
  EXPECT_EQ(json::parse(sim_config_to_json(h)).at("policy"), "hpa");
  EXPECT_EQ(keys_of(sim_config_to_json(c)),
            (std::set<std::string>{"policy", "service_time_s", "container_concurrency", "pod_startup_delay_s", "slo",
                                   "initial_replicas", "kpa", "kpa_revision", "hpa", "hpa_controller",
                                   "hpa_target_utilization", "hpa_metric_window_s", "slo_interval_s",
                                   "slo_lookback_s", "slo_headroom", "slo_min_replicas", "max_replicas"}));
  EXPECT_EQ(keys_of(json::parse(sim_config_to_json(c)).at("slo").dump()),
            (std::set<std::string>{"latency_s", "quantile", "on_response_time", "max_utilization"}));
}

TEST(AutoscaleConfigTables, SimConfigRoundTripsEveryField) {
  const SimConfig c = changed_sim_config();
  c.validate();
  const std::string text = sim_config_to_json(c);
  expect_every_field_differs(text, sim_config_to_json(SimConfig{}));
  // Inside the nested objects too.
  const json j = json::parse(text), d = json::parse(sim_config_to_json(SimConfig{}));
  for (const char* sub : {"slo", "kpa", "kpa_revision", "hpa_controller"})
    expect_every_field_differs(j.at(sub).dump(), d.at(sub).dump());
  const SimConfig back = sim_config_from_json(text);
  EXPECT_EQ(sim_config_to_json(back), text);
  EXPECT_EQ(back.policy, SimPolicy::kSlo);
  EXPECT_EQ(back.container_concurrency, 4);
  EXPECT_EQ(back.slo.latency_s, 0.8);
  EXPECT_EQ(back.slo.quantile, 0.99);
  EXPECT_FALSE(back.slo.on_response_time);
  EXPECT_EQ(back.slo.max_utilization, 0.9);
  EXPECT_EQ(back.kpa.to_json(), c.kpa.to_json());
  EXPECT_EQ(back.kpa_revision.to_json(), c.kpa_revision.to_json());
  EXPECT_EQ(back.hpa.to_json(), c.hpa.to_json());
  EXPECT_EQ(back.hpa.max_replicas, 7);
  EXPECT_TRUE(back.hpa.behavior.has_value());
  EXPECT_EQ(back.hpa_controller.sync_period_s, 30.0);
  EXPECT_EQ(back.slo_min_replicas, 3);
  EXPECT_EQ(back.max_replicas, 50);
  // Absent keys keep the defaults, also inside a nested object given in part.
  EXPECT_EQ(sim_config_to_json(sim_config_from_json("{}")), sim_config_to_json(SimConfig{}));
  const SimConfig part = sim_config_from_json(R"({"slo": {"quantile": 0.9}, "kpa": {"stable_window_s": 30}})");
  EXPECT_EQ(part.slo.quantile, 0.9);
  EXPECT_EQ(part.slo.latency_s, LatencySlo{}.latency_s);
  EXPECT_EQ(part.kpa.stable_window_s, 30.0);
  EXPECT_EQ(part.kpa.max_scale_up_rate, KpaConfig{}.max_scale_up_rate);
}

TEST(AutoscaleConfigTables, SimConfigKeysAndMessages) {
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"service_time_s": 0.2, "bogus": 1})"); }),
            "SimConfig JSON: unknown key 'bogus'");
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"type": "sim"})"); }), "SimConfig JSON: unknown key 'type'");
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"slo": {"latency_s": 1, "p": 2}})"); }),
            "LatencySlo JSON: unknown key 'p'");
  // The nested configs keep their own messages (and validate() runs on them).
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"kpa": {"extra": 1}})"); }), "KpaConfig JSON: unknown key 'extra'");
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"kpa": {"stable_window_s": 1}})"); }),
            "stable-window = 1s must be in [6s, 3600s] range");
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"hpa_controller": {"sync": 1}})"); }),
            "HpaControllerConfig JSON: unknown key 'sync'");
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"kpa": [1]})"); }), "KpaConfig JSON must be an object");
  // Deprecated names, at the top and inside "slo"; one field under both names is refused.
  const SimConfig old = sim_config_from_json(
      R"({"service_time": 0.2, "pod_startup_delay": 4, "hpa_metric_window": 20, "slo_interval": 3,
          "slo_lookback": 12, "slo": {"latency": 0.7}})");
  EXPECT_EQ(old.service_time_s, 0.2);
  EXPECT_EQ(old.pod_startup_delay_s, 4.0);
  EXPECT_EQ(old.hpa_metric_window_s, 20.0);
  EXPECT_EQ(old.slo_interval_s, 3.0);
  EXPECT_EQ(old.slo_lookback_s, 12.0);
  EXPECT_EQ(old.slo.latency_s, 0.7);
  EXPECT_NE(error_of([] { sim_config_from_json(R"({"service_time": 0.2, "service_time_s": 0.3})"); })
                .find("'service_time' (deprecated) and 'service_time_s'"),
            std::string::npos);
  // Bad values name the key and the value; validate() runs after reading with its own messages.
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"policy": "vpa"})"); }),
            "SimConfig JSON: setting 'policy' = \"vpa\" is not one of kpa, hpa, slo");
  const std::string bad = error_of([] { sim_config_from_json(R"({"max_replicas": 2.5})"); });
  EXPECT_NE(bad.find("SimConfig JSON: setting 'max_replicas' = 2.5"), std::string::npos) << bad;
  EXPECT_NE(error_of([] { sim_config_from_json(R"({"slo": {"on_response_time": "maybe"}})"); })
                .find("LatencySlo JSON: setting 'on_response_time'"),
            std::string::npos);
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"container_concurrency": 0})"); }),
            "container_concurrency = 0 must be >= 1");
  EXPECT_EQ(error_of([] { sim_config_from_json(R"({"slo_headroom": 0})"); }),
            "slo_interval_s, slo_lookback_s and slo_headroom must be > 0");
  EXPECT_EQ(error_of([] { sim_config_from_json("[]"); }), "SimConfig JSON must be an object");
  EXPECT_EQ(error_of([] { sim_config_from_json("{"); }).rfind("SimConfig JSON: ", 0), 0u);
}
