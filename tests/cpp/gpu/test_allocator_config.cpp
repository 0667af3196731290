// AllocatorConfig: the one allocator factory (policy, typical pods, options) the C API and Python both call.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator_config.hpp"

using namespace kubetune::sched::gpu;
namespace kt = kubetune;
using nlohmann::json;

namespace {
Cluster two_nodes() {
  Cluster c;
  for (const char* n : {"a", "b"}) {
    NodeSpec s;
    s.name = n;
    s.cpu_milli = 64000;
    s.memory_mib = 262144;
    s.num_gpus = 4;
    s.gpu_memory_mib = 16384;
    s.model = "T4";
    c.add_node(s);
  }
  return c;
}

Request req(int gpu_count, int gpu_milli, std::int64_t cpu = 1000) {
  Request r;
  r.cpu_milli = cpu;
  r.gpu_count = gpu_count;
  r.gpu_milli = gpu_milli;
  return r;
}

std::string error_of(const json& j) {
  try {
    AllocatorConfig::from_json(j);
  } catch (const kt::InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

bool same(const std::vector<TypicalPod>& a, const std::vector<TypicalPod>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].cpu_milli != b[i].cpu_milli || a[i].gpu_count != b[i].gpu_count || a[i].gpu_milli != b[i].gpu_milli ||
        a[i].weight != b[i].weight)
      return false;
  return true;
}
}  // namespace

TEST(AllocatorConfig, JsonRoundTripAndDefaults) {
  const AllocatorConfig d = AllocatorConfig::from_json(json::object());
  EXPECT_EQ(d.policy, "best_fit");
  EXPECT_TRUE(d.workload.empty());
  EXPECT_DOUBLE_EQ(d.popularity, 0.95);
  EXPECT_TRUE(d.gpu_weighted_typical);
  EXPECT_FALSE(d.kube_semantics);
  EXPECT_TRUE(d.indexed);
  EXPECT_EQ(d.seed, 0u);
  const json j = json::parse(R"({"policy": "fgd", "workload": [{"cpu_milli": 1000, "gpu_count": 1, "gpu_milli": 500}],
                                 "popularity": 0.9, "gpu_weighted_typical": false, "kube_semantics": true,
                                 "indexed": false, "seed": 17})");
  const AllocatorConfig c = AllocatorConfig::from_json(j);
  EXPECT_EQ(c.policy, "fgd");
  ASSERT_EQ(c.workload.size(), 1u);
  EXPECT_EQ(c.workload[0].gpu_milli, 500);
  EXPECT_EQ(c.seed, 17u);
  EXPECT_EQ(AllocatorConfig::from_json(c.to_json()).to_json(), c.to_json());
  EXPECT_FALSE(c.options().indexed);
  EXPECT_EQ(c.options().seed, 17u);
}

TEST(AllocatorConfig, UnknownKeysAndBadValuesAreRefusedByName) {
  EXPECT_NE(error_of(json{{"polcy", "fgd"}}).find("field 'polcy' is unknown"), std::string::npos);
  EXPECT_NE(error_of(json{{"gpu_mem_unit_mib", 1024}}).find("'gpu_mem_unit_mib' is unknown"), std::string::npos);
  EXPECT_NE(error_of(json::array()).find("must be a JSON object"), std::string::npos);
  EXPECT_NE(error_of(json{{"policy", "random"}}).find("policy 'random' is unknown"), std::string::npos);
  EXPECT_NE(error_of(json{{"policy", 3}}).find("'policy' must be a string"), std::string::npos);
  EXPECT_NE(error_of(json{{"popularity", 1.5}}).find("popularity = 1.5"), std::string::npos);
  EXPECT_NE(error_of(json{{"popularity", "high"}}).find("'popularity' must be a number"), std::string::npos);
  EXPECT_NE(error_of(json{{"indexed", 1}}).find("'indexed' must be true or false"), std::string::npos);
  EXPECT_NE(error_of(json{{"seed", -1}}).find("'seed' = -1"), std::string::npos);
  EXPECT_NE(error_of(json{{"workload", json::object()}}).find("'workload' must be an array"), std::string::npos);
  EXPECT_NE(error_of(json{{"workload", {json{{"gpus", 1}}}}}).find("'gpus' is unknown"), std::string::npos);
}

TEST(AllocatorConfig, OneEmptyWorkloadRule) {
  // fgd and kubetune need typical tasks: absent and empty workloads are refused alike, naming 'workload'.
  for (const char* p : {"fgd", "kubetune"}) {
    EXPECT_NE(error_of(json{{"policy", p}}).find("needs a non-empty 'workload'"), std::string::npos) << p;
    EXPECT_NE(error_of(json{{"policy", p}, {"workload", json::array()}}).find("needs a non-empty 'workload'"),
              std::string::npos)
        << p;
  }
  // The others ignore it; an empty workload gives no typical pods for any policy.
  for (const char* p : {"best_fit", "gpushare", "binpack", "spread"})
    EXPECT_NO_THROW(AllocatorConfig::from_json(json{{"policy", p}, {"workload", json::array()}})) << p;
  const Cluster c = two_nodes();
  for (const char* p : {"best_fit", "fgd", "kubetune"}) EXPECT_TRUE(typical_pods_for(c, p, {}).empty()) << p;
}

TEST(AllocatorConfig, TypicalPodsFollowThePolicy) {
  const Cluster c = two_nodes();
  std::vector<Request> w;
  for (int i = 0; i < 30; ++i) w.push_back(req(1, 250));
  for (int i = 0; i < 3; ++i) w.push_back(req(4, 1000));
  w.push_back(req(0, 0, 2000));
  EXPECT_TRUE(same(typical_pods_for(c, "kubetune", w, 0.9), kubetune_typical_pods(c, w, 0.9)));
  EXPECT_TRUE(same(typical_pods_for(c, "fgd", w, 0.9, false), typical_pods(c, w, 0.9, true, false)));
  EXPECT_TRUE(same(typical_pods_for(c, "fgd", w, 0.9, true), typical_pods(c, w, 0.9, true, true)));
  EXPECT_THROW(typical_pods_for(c, "fgd", w, 0.0), kt::InvalidArgument);
}

TEST(AllocatorConfig, FactoryBuildsTheConfiguredAllocator) {
  AllocatorConfig cfg;
  cfg.policy = "fgd";
  cfg.workload = {req(1, 500), req(1, 500), req(1, 1000)};
  cfg.kube_semantics = true;
  cfg.seed = 5;
  auto a = make_allocator(two_nodes(), cfg);
  EXPECT_EQ(a->policy_name(), "fgd");
  EXPECT_TRUE(a->policy()->kube_semantics());
  EXPECT_EQ(a->options().seed, 5u);
  // The same config gives the same decisions (ties broken by the seeded stream).
  auto b = make_allocator(two_nodes(), cfg);
  for (int i = 0; i < 12; ++i) {
    const Request r = req(1, i % 3 == 0 ? 500 : 250);
    const auto pa = a->place(r);
    const auto pb = b->place(r);
    ASSERT_TRUE(pa.has_value() && pb.has_value()) << i;
    EXPECT_EQ(pa->node, pb->node) << i;
    EXPECT_EQ(pa->gpus, pb->gpus) << i;
  }
  cfg.workload.clear();
  EXPECT_THROW(make_allocator(two_nodes(), cfg), kt::InvalidArgument);
}

TEST(AllocatorConfig, CApiOptionsAddTheExtenderKeys) {
  const auto [a, e] = allocator_and_extender_from_json(
      json{{"policy", "spread"}, {"gpu_mem_unit_mib", 1}, {"pending_ttl_s", 30.0}, {"max_pending", 10}});
  EXPECT_EQ(a.policy, "spread");
  EXPECT_EQ(e.gpu_mem_unit_mib, 1);
  EXPECT_DOUBLE_EQ(e.pending_ttl_s, 30.0);
  EXPECT_EQ(e.max_pending, 10u);
  try {
    allocator_and_extender_from_json(json{{"unit", 1}});
    ADD_FAILURE() << "unknown key accepted";
  } catch (const kt::InvalidArgument& ex) {
    EXPECT_NE(std::string(ex.what()).find("field 'unit' is unknown"), std::string::npos) << ex.what();
    EXPECT_NE(std::string(ex.what()).find("gpu_mem_unit_mib"), std::string::npos) << ex.what();
  }
  EXPECT_THROW(allocator_and_extender_from_json(json{{"gpu_mem_unit_mib", 0}}), kt::InvalidArgument);
}
