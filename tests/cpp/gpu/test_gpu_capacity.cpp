// Tests of the gpu module's capacity rules: typical tasks on absent models, MIG profiles per GPU model, gpushare node
// totals, unhealthy GPUs.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/extender.hpp"
#include "kubetune/sched/gpu/mig.hpp"
#include "kubetune/sched/gpu/policy.hpp"
#include "kubetune/sched/gpu/trace.hpp"

using namespace kubetune::sched::gpu;
namespace kt = kubetune;

namespace {
NodeSpec node(const std::string& name, int gpus, std::int64_t gpu_mem = 16384, std::string model = "T4") {
  NodeSpec s;
  s.name = name;
  s.cpu_milli = 64000;
  s.memory_mib = 262144;
  s.num_gpus = gpus;
  s.gpu_memory_mib = gpu_mem;
  s.model = std::move(model);
  return s;
}
NodeSpec mig_node(const std::string& name, const std::string& model, int gpus = 1) {
  NodeSpec s = node(name, gpus, 0, model);
  s.mig = true;
  return s;
}
Request share(int milli, std::vector<std::string> models = {}) {
  Request r;
  r.cpu_milli = 1000;
  r.gpu_count = 1;
  r.gpu_milli = milli;
  r.models = std::move(models);
  return r;
}
Request whole(int n) {
  Request r;
  r.cpu_milli = 1000;
  r.gpu_count = n;
  return r;
}
Request mem(std::int64_t mib) {
  Request r;
  r.cpu_milli = 1000;
  r.gpu_memory_mib = mib;
  return r;
}
Request mig(const std::string& profile) {
  Request r;
  r.mig_profile = profile;
  return r;
}
std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// ---------------------------------------------------------------- 1. typical tasks on absent GPU models
TEST(Fgd, TypicalTaskOnAbsentModelNeverFits) {
  Cluster c;
  c.add_node(node("t4", 2, 16384, "T4"));
  std::vector<Request> w;
  for (int i = 0; i < 50; ++i) w.push_back(share(500, {"A10"}));  // A10 exists nowhere in the cluster
  for (int i = 0; i < 50; ++i) w.push_back(whole(1));
  const auto tp = typical_pods(c, w, 1.0);
  ASSERT_EQ(tp.size(), 2u);
  const TypicalPod& a10 = tp[0];  // same count: first appearance first
  EXPECT_EQ(a10.gpu_milli, 500);
  EXPECT_TRUE(a10.impossible_model);
  EXPECT_EQ(a10.model_mask, 0u);
  EXPECT_FALSE(tp[1].impossible_model);

  NodeState st;
  st.cpu_free = 64000;
  st.memory_free = 262144;
  st.gpus = {GpuState{1000, 16384, {}}, GpuState{1000, 16384, {}}};
  // A10 task: the T4 node cannot host it -> all 2000 free milli are fragment (weight 0.5); the whole-GPU task fits
  // with no GPU smaller than it asks -> 0. F = 0.5 * 2000 = 1000.
  EXPECT_NEAR(node_fragmentation(c.node(0), c.model_id("T4"), st, tp), 1000.0, 1e-9);
  // The old reading (constraint dropped -> "any model") saw 0 here.
  std::vector<TypicalPod> dropped = tp;
  dropped[0].impossible_model = false;
  EXPECT_NEAR(node_fragmentation(c.node(0), c.model_id("T4"), st, dropped), 0.0, 1e-9);

  Allocator al(c, make_policy("best_fit"));
  const AllocatorStats s = al.stats(tp);
  EXPECT_NEAR(s.fragmentation_milli, 1000.0, 1e-9);
  EXPECT_NEAR(s.fragmentation_ratio, 0.5, 1e-12);

  // A model list naming one present model keeps that model (not impossible, mask = T4).
  std::vector<Request> w2(10, share(500, {"A10", "T4"}));
  const auto tp2 = typical_pods(c, w2, 1.0);
  ASSERT_EQ(tp2.size(), 1u);
  EXPECT_FALSE(tp2[0].impossible_model);
  EXPECT_EQ(tp2[0].model_mask, std::uint64_t{1} << c.model_id("T4"));
  // The kubetune typical set keeps the flag too.
  const auto tpk = kubetune_typical_pods(c, w, 1.0);
  ASSERT_EQ(tpk.size(), 2u);
  EXPECT_TRUE(tpk[0].impossible_model);
}

// ---------------------------------------------------------------- 2. MIG profiles per GPU model
namespace {
struct Row {
  const char* name;
  int compute, memory_slices, gb, max_instances;
  bool me;
};
// NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles" tables, written out independently of mig.cpp.
const std::vector<Row> kA100_40 = {{"1g.5gb", 1, 1, 5, 7, false},   {"1g.5gb+me", 1, 1, 5, 1, true},
                                   {"1g.10gb", 1, 2, 10, 4, false}, {"2g.10gb", 2, 2, 10, 3, false},
                                   {"3g.20gb", 3, 4, 20, 2, false}, {"4g.20gb", 4, 4, 20, 1, false},
                                   {"7g.40gb", 7, 8, 40, 1, false}};
const std::vector<Row> k80 = {{"1g.10gb", 1, 1, 10, 7, false}, {"1g.10gb+me", 1, 1, 10, 1, true},
                              {"1g.20gb", 1, 2, 20, 4, false}, {"2g.20gb", 2, 2, 20, 3, false},
                              {"3g.40gb", 3, 4, 40, 2, false}, {"4g.40gb", 4, 4, 40, 1, false},
                              {"7g.80gb", 7, 8, 80, 1, false}};
const std::vector<Row> kH100_94 = {{"1g.12gb", 1, 1, 12, 7, false}, {"1g.12gb+me", 1, 1, 12, 1, true},
                                   {"1g.24gb", 1, 2, 24, 4, false}, {"2g.24gb", 2, 2, 24, 3, false},
                                   {"3g.47gb", 3, 4, 47, 2, false}, {"4g.47gb", 4, 4, 47, 1, false},
                                   {"7g.94gb", 7, 8, 94, 1, false}};

void check_model(const std::string& model, const std::vector<Row>& rows) {
  const int m = mig_model_index(model);
  ASSERT_GE(m, 0) << model;
  ASSERT_EQ(mig_models()[static_cast<std::size_t>(m)].profiles.size(), rows.size()) << model;
  for (const Row& r : rows) {
    const MigProfile& p = mig_profile(model, r.name);
    EXPECT_EQ(p.compute_slices, r.compute) << model << " " << r.name;
    EXPECT_EQ(p.memory_slices, r.memory_slices) << model << " " << r.name;
    EXPECT_EQ(p.memory_gb, r.gb) << model << " " << r.name;
    EXPECT_EQ(p.max_instances, r.max_instances) << model << " " << r.name;
    EXPECT_EQ(p.media_extensions, r.me) << model << " " << r.name;
    // The geometry itself admits exactly max_instances on an empty GPU (greedy, best start each time).
    MigState s;
    int n = 0;
    for (int st = s.best_start(p); st >= 0 && n < 16; st = s.best_start(p), ++n) s.place(p, st);
    EXPECT_EQ(n, r.max_instances) << model << " " << r.name;
  }
}
}  // namespace

TEST(Mig, ProfileTablePerModel) {
  check_model("A100-40GB", kA100_40);
  check_model("A100-80GB", k80);
  check_model("H100-80GB", k80);
  check_model("H100-94GB", kH100_94);
  // Aliases, case-insensitive: node labels name the GPU in several ways.
  EXPECT_EQ(mig_model_index("A100"), mig_model_index("A100-40GB"));
  EXPECT_EQ(mig_model_index("nvidia-a100-sxm4-80gb"), mig_model_index("A100-80GB"));
  EXPECT_EQ(mig_model_index("NVIDIA-H100-80GB-HBM3"), mig_model_index("H100-80GB"));
  EXPECT_EQ(mig_model_index("H100"), mig_model_index("H100-80GB"));
  EXPECT_EQ(mig_model_index("T4"), -1);
  // Names that do not exist on a model: errors name both.
  const std::string e1 = what_of([] { (void)mig_profile("H100", "1g.5gb"); });
  EXPECT_NE(e1.find("'1g.5gb'"), std::string::npos) << e1;
  EXPECT_NE(e1.find("'H100'"), std::string::npos) << e1;
  EXPECT_NE(e1.find("1g.10gb"), std::string::npos) << e1;  // lists what H100 has
  const std::string e2 = what_of([] { (void)mig_profile("A100-40GB", "7g.80gb"); });
  EXPECT_NE(e2.find("7g.80gb"), std::string::npos);
  EXPECT_NE(e2.find("A100-40GB"), std::string::npos);
  EXPECT_NE(what_of([] { (void)mig_profile("T4", "1g.5gb"); }).find("no MIG profile table"), std::string::npos);
  EXPECT_THROW((void)mig_profile("A100-80GB", "1g.5gb+me"), kt::InvalidArgument);
  // 1g.10gb is two memory slices on A100-40GB but one on the 80 GB parts: model-less lookup refuses it.
  EXPECT_EQ(mig_profile("A100-40GB", "1g.10gb").memory_slices, 2);
  EXPECT_EQ(mig_profile("A100-80GB", "1g.10gb").memory_slices, 1);
  EXPECT_NE(what_of([] { (void)mig_profile("1g.10gb"); }).find("give the GPU model"), std::string::npos);
  EXPECT_EQ(mig_profile("3g.40gb").compute_slices, 3);  // same everywhere it exists
  EXPECT_EQ(mig_profile("H100", "3g").memory_slices, 4);  // generic names resolve on every model
  EXPECT_FALSE(mig_profile_known("5g.50gb"));
  EXPECT_EQ(mig_compute_slices("4g.47gb"), 4);
}

TEST(Mig, MediaExtensionsOnePerGpu) {
  const MigProfile& me = mig_profile("A100-40GB", "1g.5gb+me");
  const MigProfile& one = mig_profile("A100-40GB", "1g.5gb");
  MigState s;
  s.place(me, s.best_start(me));
  EXPECT_EQ(s.best_start(me), -1);          // a second +me instance: no
  EXPECT_FALSE(s.feasible_starts(one).empty());  // plain 1g instances still fit
  const int at = s.feasible_starts(one)[0];
  s.place(one, at);
  EXPECT_EQ(s.compute_used, 2);
  MigState t = s;
  EXPECT_THROW(t.release(me, 7), kt::StateError);
}

TEST(Mig, AllocatorResolvesProfilesByNodeModel) {
  Cluster c;
  c.add_node(mig_node("a100", "A100"));       // A100-40GB
  c.add_node(mig_node("h100", "H100-80GB"));
  EXPECT_THROW(c.add_node(mig_node("t4", "T4")), kt::InvalidArgument);  // no MIG table for T4
  Allocator a(c, make_policy("best_fit"));
  // 1g.5gb exists only on the A100-40GB; 3g.40gb only on the H100.
  EXPECT_EQ(a.place(mig("1g.5gb"))->node, 0);
  EXPECT_EQ(a.place(mig("3g.40gb"))->node, 1);
  // A bind of a profile the node's model lacks is an error naming both.
  const std::string e = what_of([&] { (void)a.place_on(mig("1g.5gb"), 1); });
  EXPECT_NE(e.find("1g.5gb"), std::string::npos) << e;
  EXPECT_NE(e.find("H100-80GB"), std::string::npos) << e;
  std::vector<std::string> why;
  EXPECT_EQ(a.feasible_nodes(mig("2g.10gb"), {0, 1}, &why), std::vector<int>{0});
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("does not exist on GPU model 'H100-80GB'"), std::string::npos) << why[0];
  a.check_invariants();

  // 1g.10gb means 2 slots (4 per GPU) on A100-40GB and 1 slot (7 per GPU) on H100.
  Cluster c40, c80;
  c40.add_node(mig_node("a", "A100-SXM4-40GB"));
  c80.add_node(mig_node("h", "H100"));
  Allocator a40(c40, make_policy("best_fit")), a80(c80, make_policy("best_fit"));
  int n40 = 0, n80 = 0;
  while (n40 < 10 && a40.place(mig("1g.10gb"))) ++n40;
  while (n80 < 10 && a80.place(mig("1g.10gb"))) ++n80;
  EXPECT_EQ(n40, 4);
  EXPECT_EQ(n80, 7);
  a40.check_invariants();
  a80.check_invariants();
  // Unknown names are refused when the request is validated.
  EXPECT_NE(what_of([&] { (void)a.place(mig("5g.50gb")); }).find("mig_profile '5g.50gb' is unknown"), std::string::npos);
}

// ---------------------------------------------------------------- 3. gpushare node totals
TEST(Capacity, PerGpuMemoryFromGpushareNodeTotal) {
  // gpushare-scheduler-extender NodeInfo: per device = aliyun.com/gpu-mem / aliyun.com/gpu-count, integer division.
  EXPECT_EQ(gpushare_gpu_memory_mib(32, 2, 1024), 16384);
  EXPECT_EQ(gpushare_gpu_memory_mib(31, 2, 1024), 15360);  // 15 GiB each, 1 GiB unusable (as in gpushare)
  EXPECT_EQ(gpushare_gpu_memory_mib(32510, 2, 1), 16255);  // --memory-unit=MiB
  EXPECT_NE(what_of([] { (void)gpushare_gpu_memory_mib(32, 0, 1024); }).find("aliyun.com/gpu-count"), std::string::npos);
  EXPECT_THROW((void)gpushare_gpu_memory_mib(1, 2, 1024), kt::InvalidArgument);  // nothing per GPU
  EXPECT_THROW((void)gpushare_gpu_memory_mib(-1, 2, 1024), kt::InvalidArgument);

  Cluster c;
  NodeSpec s = node("gs", 2, 0, "V100M16");  // V100M16 would default to 16 GiB; the total says 15.5 -> 15
  s.gpu_memory_total_mib = 31 * 1024;
  s.gpu_memory_unit_mib = 1024;
  c.add_node(s);
  EXPECT_EQ(c.node(0).gpu_memory_mib, 15360);
  Allocator a(c, make_policy("gpushare"));
  EXPECT_FALSE(a.place(mem(16384)).has_value());
  EXPECT_EQ(a.place(mem(15360))->gpus, std::vector<int>{0});
  EXPECT_EQ(a.place(mem(15360))->gpus, std::vector<int>{1});
  a.check_invariants();

  auto bad = [&](auto edit) {
    NodeSpec t = node("x", 2, 0);
    t.gpu_memory_total_mib = 32768;
    t.gpu_memory_unit_mib = 1024;
    edit(t);
    Cluster d;
    return what_of([&] { d.add_node(t); });
  };
  EXPECT_NE(bad([](NodeSpec& t) { t.gpu_memory_mib = 8192; }).find("disagrees"), std::string::npos);
  EXPECT_EQ(bad([](NodeSpec& t) { t.gpu_memory_mib = 16384; }), "");  // agreeing values are fine
  EXPECT_NE(bad([](NodeSpec& t) { t.num_gpus = 0; }).find("needs gpus > 0"), std::string::npos);
  EXPECT_NE(bad([](NodeSpec& t) { t.gpu_memory_total_mib = 32769; }).find("not a multiple"), std::string::npos);

  // JSON round trip keeps the total.
  const Cluster r = Cluster::from_json(c.to_json());
  EXPECT_EQ(r.node(0).gpu_memory_mib, 15360);
  EXPECT_EQ(r.node(0).gpu_memory_total_mib, 31 * 1024);
}

TEST(Capacity, KubeNodeLabelsAndGpushareCapacity) {
  nlohmann::json n = {{"metadata", {{"name", "gpu-7"}, {"labels", {{"nvidia.com/gpu.product", "Tesla-T4"}}}}},
                      {"status",
                       {{"capacity", {{"cpu", "64"}, {"memory", "256Gi"}, {"aliyun.com/gpu-mem", "30"},
                                      {"aliyun.com/gpu-count", "2"}}},
                        {"allocatable", {{"cpu", "63500m"}, {"memory", "250Gi"}}}}}};
  NodeSpec s = node_spec_from_kube_node(n.dump());
  EXPECT_EQ(s.name, "gpu-7");
  EXPECT_EQ(s.cpu_milli, 63500);
  EXPECT_EQ(s.memory_mib, 250 * 1024);
  EXPECT_EQ(s.num_gpus, 2);
  EXPECT_EQ(s.model, "Tesla-T4");
  EXPECT_EQ(s.gpu_memory_mib, 0);  // not labelled ...
  Cluster c;
  c.add_node(s);
  EXPECT_EQ(c.node(0).gpu_memory_mib, 15 * 1024);  // ... so node total / count
  // A labelled per-GPU memory wins (GFD: MiB).
  n["metadata"]["labels"]["nvidia.com/gpu.memory"] = "15360";
  EXPECT_EQ(node_spec_from_kube_node(n.dump()).gpu_memory_mib, 15360);
  n["metadata"]["labels"]["nvidia.com/gpu.memory"] = "lots";
  EXPECT_NE(what_of([&] { (void)node_spec_from_kube_node(n.dump()); }).find("nvidia.com/gpu.memory"), std::string::npos);
  n["metadata"]["labels"].erase("nvidia.com/gpu.memory");
  // MiB unit.
  n["status"]["capacity"]["aliyun.com/gpu-mem"] = "30000";
  Cluster c2;
  c2.add_node(node_spec_from_kube_node(n.dump(), 1));
  EXPECT_EQ(c2.node(0).gpu_memory_mib, 15000);
  // gpu-mem without gpu-count: gpushare cannot split it.
  n["status"]["capacity"].erase("aliyun.com/gpu-count");
  n["status"]["capacity"]["nvidia.com/gpu"] = "2";
  const std::string e = what_of([&] { (void)node_spec_from_kube_node(n.dump()); });
  EXPECT_NE(e.find("aliyun.com/gpu-count"), std::string::npos) << e;
  EXPECT_NE(what_of([] { (void)node_spec_from_kube_node(R"({"metadata":{}})"); }).find("metadata.name"),
            std::string::npos);
  // Whole-GPU nodes: nvidia.com/gpu gives the count, the model default the memory.
  nlohmann::json w = {{"metadata", {{"name", "v"}, {"labels", {{"kubetune.io/gpu-model", "V100M32"}}}}},
                      {"status", {{"capacity", {{"cpu", "8"}, {"nvidia.com/gpu", "4"}}}}}};
  Cluster c3;
  c3.add_node(node_spec_from_kube_node(w.dump()));
  EXPECT_EQ(c3.node(0).num_gpus, 4);
  EXPECT_EQ(c3.node(0).gpu_memory_mib, 32768);
}

// ---------------------------------------------------------------- 4. unhealthy GPUs
TEST(Health, UnhealthyGpuTakesNothingNewReportsAndReleases) {
  Cluster c;
  c.add_node(node("n", 2, 16384));
  Allocator a(c, make_policy("gpushare"));
  const Placement p1 = *a.place(mem(8192));  // GPU0 (tie -> lowest index)
  ASSERT_EQ(p1.gpus, std::vector<int>{0});
  const auto on = a.set_gpu_health(0, 0, false);
  ASSERT_EQ(on.size(), 1u);
  EXPECT_EQ(on[0].id, p1.id);
  EXPECT_FALSE(a.gpu_healthy(0, 0));
  // gpushare's rule would pick GPU0 (least free that fits); it is unhealthy, so GPU1.
  EXPECT_EQ(a.place(mem(4096))->gpus, std::vector<int>{1});
  EXPECT_FALSE(a.place(whole(1)).has_value());  // GPU1 is partly used, GPU0 unhealthy
  std::vector<std::string> why;
  EXPECT_TRUE(a.feasible_nodes(whole(1), {0}, &why).empty());
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("1 unhealthy GPU"), std::string::npos) << why[0];
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.gpu_milli_capacity, 1000);  // one healthy GPU
  EXPECT_EQ(s.gpu_milli_allocated, 250);  // 4 GiB of 16 on GPU1; GPU0's 8 GiB is not counted
  EXPECT_EQ(s.unhealthy_gpus, 1);
  EXPECT_EQ(s.placements_on_unhealthy, 1);
  EXPECT_EQ(s.fully_free_gpus, 0);
  EXPECT_EQ(a.unhealthy_gpus(), (std::vector<std::pair<int, int>>{{0, 0}}));
  ASSERT_EQ(a.placements_on_unhealthy().size(), 1u);
  a.check_invariants();
  // The placement on the unhealthy GPU is still releasable; the GPU stays out.
  a.release(p1.id);
  a.check_invariants();
  EXPECT_EQ(a.node_state(0).gpus[0].memory_free, 16384);
  EXPECT_TRUE(a.placements_on_unhealthy().empty());
  EXPECT_FALSE(a.place(whole(1)).has_value());
  EXPECT_EQ(a.stats().fully_free_gpus, 0);
  // Snapshot keeps the health; healthy again -> usable again.
  const Snapshot snap = a.snapshot();
  EXPECT_TRUE(a.set_gpu_health(0, 0, true).empty());
  EXPECT_EQ(a.place(whole(1))->gpus, std::vector<int>{0});
  a.restore(snap);
  EXPECT_FALSE(a.gpu_healthy(0, 0));
  a.check_invariants();
  // Errors name the field.
  EXPECT_NE(what_of([&] { a.set_gpu_health(0, 2, false); }).find("gpu = 2"), std::string::npos);
  EXPECT_THROW(a.set_gpu_health(5, 0, false), kt::NotFound);
}

TEST(Health, FragmentationAndMigExcludeUnhealthyGpus) {
  Cluster c;
  c.add_node(node("n", 2, 10000));
  c.add_node(mig_node("m", "A100-80GB"));
  const std::vector<TypicalPod> tp = {{1000, 1, 600, 0, 1.0}};
  Allocator a(c, make_policy("fgd", tp));
  ASSERT_EQ(a.place_on(share(500), 0)->gpus, std::vector<int>{0});  // GPU0: 500 free < 600 -> a fragment
  EXPECT_NEAR(a.stats(tp).fragmentation_milli, 500.0, 1e-9);
  a.set_gpu_health(0, 0, false);  // the fragment leaves the measure
  AllocatorStats s = a.stats(tp);
  EXPECT_NEAR(s.fragmentation_milli, 0.0, 1e-9);
  EXPECT_EQ(s.gpu_milli_capacity, 2000);  // GPU1 + the MIG GPU
  a.set_gpu_health(1, 0, false);
  EXPECT_FALSE(a.place(mig("1g.10gb")).has_value());
  a.set_gpu_health(1, 0, true);
  EXPECT_TRUE(a.place(mig("1g.10gb")).has_value());
  a.check_invariants();
}

TEST(Health, IndexedDecisionsEqualFullScanWithHealthChanges) {
  SyntheticTrace t = synthetic_trace(40, 300, 13);
  const auto tp = typical_pods(t.cluster, t.pods);
  for (const char* pol : {"best_fit", "kubetune"}) {
    AllocatorOptions off;
    off.indexed = false;
    Allocator ai(t.cluster, make_policy(pol, tp)), as(t.cluster, make_policy(pol, tp), off);
    std::mt19937_64 rng(3);
    std::vector<std::uint64_t> live;
    for (int op = 0; op < 3000; ++op) {
      const auto k = rng() % 100;
      if (k < 5) {  // flip a GPU's health
        const int n = static_cast<int>(rng() % static_cast<std::uint64_t>(t.cluster.num_nodes()));
        const int gpus = t.cluster.node(n).num_gpus;
        if (gpus == 0) continue;
        const int g = static_cast<int>(rng() % static_cast<std::uint64_t>(gpus));
        const bool h = rng() % 2 == 0;
        ASSERT_EQ(ai.set_gpu_health(n, g, h).size(), as.set_gpu_health(n, g, h).size());
      } else if (k < 40 && !live.empty()) {
        const std::size_t i = rng() % live.size();
        ai.release(live[i]);
        as.release(live[i]);
        live[i] = live.back();
        live.pop_back();
      } else {
        Request r = t.pods[rng() % t.pods.size()];
        r.name.clear();
        auto x = ai.place(r);
        auto y = as.place(r);
        ASSERT_EQ(x.has_value(), y.has_value()) << pol << " op " << op;
        if (x) {
          ASSERT_EQ(x->node, y->node) << pol << " op " << op;
          ASSERT_EQ(x->gpus, y->gpus) << pol << " op " << op;
          for (int g : x->gpus) ASSERT_TRUE(ai.gpu_healthy(x->node, g));
          live.push_back(x->id);
        }
      }
    }
    ai.check_invariants();
    EXPECT_EQ(ai.stats().unhealthy_gpus, as.stats().unhealthy_gpus);
  }
}
