// Tests of the gpu module: gpushare GPU rule, FGD fragmentation by hand, gang, NVLink, MIG, invariants, extender, replay.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/extender.hpp"
#include "kubetune/sched/gpu/mig.hpp"
#include "kubetune/sched/gpu/policy.hpp"
#include "kubetune/sched/gpu/topology.hpp"
#include "kubetune/sched/gpu/trace.hpp"

using namespace kubetune::sched::gpu;
namespace kt = kubetune;

namespace {
NodeSpec gpu_node(const std::string& name, int gpus, std::int64_t gpu_mem = 16384, std::string model = "T4",
                  std::int64_t cpu = 64000) {
  NodeSpec s;
  s.name = name;
  s.cpu_milli = cpu;
  s.memory_mib = 262144;
  s.num_gpus = gpus;
  s.gpu_memory_mib = gpu_mem;
  s.model = std::move(model);
  return s;
}
Request mem_req(std::int64_t mib, const std::string& name = "") {
  Request r;
  r.name = name;
  r.cpu_milli = 1000;
  r.gpu_memory_mib = mib;
  return r;
}
Request whole(int n, std::int64_t cpu = 1000) {
  Request r;
  r.cpu_milli = cpu;
  r.gpu_count = n;
  r.gpu_milli = 1000;
  return r;
}
Request share(int milli, std::int64_t cpu = 1000) {
  Request r;
  r.cpu_milli = cpu;
  r.gpu_count = 1;
  r.gpu_milli = milli;
  return r;
}
}  // namespace

// ---------------------------------------------------------------- gpushare rule
TEST(Gpushare, LeastFreeMemoryThatFitsLowestIndexOnTies) {
  Cluster c;
  c.add_node(gpu_node("n0", 4, 16384));
  Allocator a(c, make_policy("gpushare"));
  // Shape the node: GPU0 8 GiB free, GPU1 4 GiB free, GPU2 4 GiB free, GPU3 16 GiB free.
  ASSERT_EQ(a.place_on(mem_req(8192), 0)->gpus, std::vector<int>{0});   // all tie at 16 GiB -> index 0
  ASSERT_EQ(a.place_on(mem_req(12288), 0)->gpus, std::vector<int>{1});  // GPU0 too small now -> GPU1
  ASSERT_EQ(a.place_on(mem_req(12288), 0)->gpus, std::vector<int>{2});
  EXPECT_EQ(a.node_state(0).gpus[0].memory_free, 8192);
  EXPECT_EQ(a.node_state(0).gpus[1].memory_free, 4096);
  EXPECT_EQ(a.node_state(0).gpus[3].memory_free, 16384);
  EXPECT_EQ(a.place_on(mem_req(4096), 0)->gpus, std::vector<int>{1});   // 4 GiB: GPU1 and GPU2 tie -> 1
  EXPECT_EQ(a.place_on(mem_req(6144), 0)->gpus, std::vector<int>{0});   // only GPU0 (8) and GPU3 (16) fit -> 0
  EXPECT_EQ(a.place_on(mem_req(10240), 0)->gpus, std::vector<int>{3});
  EXPECT_FALSE(a.place_on(mem_req(8192), 0).has_value());               // nothing has 8 GiB left
  a.check_invariants();
}

TEST(Gpushare, BestFitNodeScoreMatchesSimulatorFormula) {
  Cluster c;
  c.add_node(gpu_node("a", 2, 16384, "T4", 64000));
  c.add_node(gpu_node("b", 8, 16384, "T4", 96000));
  Allocator a(c, make_policy("best_fit"));
  // score = 1 - (0.5 (cpu_free - cpu)/128000 + 0.5 (gpu_free - gpu)/8000)
  const Request r = whole(1, 8000);
  EXPECT_NEAR(*a.score(r, 0), 1.0 - (0.5 * 56000 / 128000.0 + 0.5 * 1000 / 8000.0), 1e-12);
  EXPECT_NEAR(*a.score(r, 1), 1.0 - (0.5 * 88000 / 128000.0 + 0.5 * 7000 / 8000.0), 1e-12);
  EXPECT_EQ(a.place(r)->node, 0);  // the tighter node wins
}

// ---------------------------------------------------------------- FGD fragmentation by hand
TEST(Fgd, FragmentationMatchesHandComputation) {
  Cluster c;
  c.add_node(gpu_node("n", 2, 10000, "T4", 64000));
  c.add_node(gpu_node("v", 2, 10000, "V100M32", 64000));
  NodeState st;
  st.cpu_free = 10000;
  st.memory_free = 1 << 20;
  st.gpus = {GpuState{1000, 10000, {}}, GpuState{300, 3000, {}}};  // memory left in proportion to the share
  std::vector<TypicalPod> tp = {
      {2000, 1, 500, 0, 0.5},   // fits on GPU0, GPU1 (300 < 500) is a fragment: 300
      {4000, 1, 1000, 0, 0.3},  // fits on GPU0, GPU1 is a fragment: 300
      {20000, 0, 0, 0, 0.2},    // CPU-only task: all 1300 free milli count
  };
  // 0.5*300 + 0.3*300 + 0.2*1300 = 150 + 90 + 260 = 500
  EXPECT_NEAR(node_fragmentation(c.node(0), 0, st, tp), 500.0, 1e-9);
  st.cpu_free = 3000;  // the second task no longer fits on CPU -> all 1300 count for it
  EXPECT_NEAR(node_fragmentation(c.node(0), 0, st, tp), 150.0 + 0.3 * 1300 + 260.0, 1e-9);
  // A typical task restricted to V100M32 cannot use the T4 node: all of its free GPU is fragment for it.
  std::vector<TypicalPod> tp2 = {{1000, 1, 200, std::uint64_t{1} << c.model_id("V100M32"), 1.0}};
  st.cpu_free = 10000;
  EXPECT_NEAR(node_fragmentation(c.node(0), 0, st, tp2), 1300.0, 1e-9);
  EXPECT_NEAR(node_fragmentation(c.node(1), c.model_id("V100M32"), st, tp2), 0.0, 1e-9);
  // Two-GPU task: only one GPU is fully free, so the node cannot host it: everything is fragment.
  std::vector<TypicalPod> tp3 = {{1000, 2, 1000, 0, 1.0}};
  EXPECT_NEAR(node_fragmentation(c.node(0), 0, st, tp3), 1300.0, 1e-9);
}

TEST(Fgd, PrefersTheGpuThatReducesFragmentation) {
  Cluster c;
  c.add_node(gpu_node("n", 2, 0));
  std::vector<TypicalPod> tp = {{1000, 1, 500, 0, 0.5}, {1000, 1, 1000, 0, 0.5}};
  Allocator a(c, make_policy("fgd", tp));
  ASSERT_EQ(a.place_on(share(400), 0)->gpus, std::vector<int>{0});  // GPU0 now 600 free
  // A 600 task: on GPU0 it leaves {0, 1000} -> frag 0; on GPU1 {600, 400} -> more frag. FGD picks GPU0.
  EXPECT_EQ(a.place_on(share(600), 0)->gpus, std::vector<int>{0});
  const double f = a.stats(tp).fragmentation_milli;
  EXPECT_NEAR(f, 0.0, 1e-9);
}

TEST(Fgd, TypicalPodsFollowSimulatorPopularityRule) {
  Cluster c;
  c.add_node(gpu_node("n", 2));
  std::vector<Request> w;
  for (int i = 0; i < 60; ++i) w.push_back(share(500, 2000));
  for (int i = 0; i < 38; ++i) w.push_back(whole(1, 4000));
  for (int i = 0; i < 2; ++i) w.push_back(whole(2, 8000));
  auto tp = typical_pods(c, w, 0.98);
  ASSERT_EQ(tp.size(), 2u);  // 60 % + 38 % = 98 % >= 98 %: the 2-GPU shape is dropped
  EXPECT_NEAR(tp[0].weight, 60.0 / 98.0, 1e-12);
  EXPECT_NEAR(tp[1].weight, 38.0 / 98.0, 1e-12);
  // GPU-weighted: 60*1.5 = 90, 38*2 = 76, 2*3 = 6 of 172; 166/172 = 96.5 % < 98 % -> all three kept
  auto tpw = typical_pods(c, w, 0.98, true, true);
  EXPECT_EQ(tpw.size(), 3u);
  // kubetune: shapes popular by count or by GPU demand, weighted by count (at 95 %: the GPU-weighted cut keeps
  // 90 + 76 = 166 >= 163.4 -> two shapes; count cut 60 + 38 >= 95 -> the same two; so 60/98 and 38/98).
  auto tpk = kubetune_typical_pods(c, w, 0.95);
  ASSERT_EQ(tpk.size(), 2u);
  EXPECT_NEAR(tpk[0].weight, 60.0 / 98.0, 1e-12);
  auto tpk2 = kubetune_typical_pods(c, w, 0.98);  // GPU-weighted cut now keeps the 2-GPU shape: 2/100
  ASSERT_EQ(tpk2.size(), 3u);
  EXPECT_NEAR(tpk2[2].weight, 2.0 / 100.0, 1e-12);
}

// ---------------------------------------------------------------- gang
TEST(Gang, AllOrNothing) {
  Cluster c;
  c.add_node(gpu_node("a", 2));
  c.add_node(gpu_node("b", 2));
  Allocator a(c, make_policy("best_fit"));
  std::vector<Request> g3(3, whole(2));
  for (auto& r : g3) r.gang = "job1";
  EXPECT_FALSE(a.place_gang(g3).has_value());
  EXPECT_EQ(a.stats().gpu_milli_allocated, 0);
  EXPECT_EQ(a.stats().placements, 0);
  a.check_invariants();
  std::vector<Request> g2(2, whole(2));
  auto ok = a.place_gang(g2);
  ASSERT_TRUE(ok.has_value());
  EXPECT_NE((*ok)[0].node, (*ok)[1].node);
  EXPECT_EQ(a.stats().gpu_milli_allocated, 4000);
  a.check_invariants();
}

TEST(Gang, PackPrefersNodesAlreadyUsedSpreadAvoidsThem) {
  Cluster c;
  for (int i = 0; i < 4; ++i) c.add_node(gpu_node("n" + std::to_string(i), 4));
  Allocator a(c, make_policy("spread"));
  std::vector<Request> g(3, whole(1));
  auto p = a.place_gang(g, GangPreference::kPack);
  ASSERT_TRUE(p);
  EXPECT_EQ((*p)[0].node, (*p)[1].node);
  EXPECT_EQ((*p)[1].node, (*p)[2].node);
  auto s = a.place_gang(g, GangPreference::kSpread);
  ASSERT_TRUE(s);
  EXPECT_NE((*s)[0].node, (*s)[1].node);
  EXPECT_NE((*s)[1].node, (*s)[2].node);
  EXPECT_NE((*s)[0].node, (*s)[2].node);
}

// ---------------------------------------------------------------- topology
TEST(Topology, MultiGpuPrefersNvlinkConnectedSet) {
  Cluster c;
  NodeSpec s = gpu_node("dgx", 8, 32768, "V100M32", 96000);
  s.topology = std::make_shared<Topology>(Topology::nvlink_islands(8, 2));  // {0..3} and {4..7}
  c.add_node(s);
  Allocator a(c, make_policy("best_fit"));
  std::vector<std::uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(a.place(whole(1))->id);  // GPUs 0..3
  a.release(ids[3]);                                                   // free: 3,4,5,6,7
  EXPECT_EQ(a.place(whole(2))->gpus, (std::vector<int>{4, 5}));        // not {3,4} (PCIe)
  EXPECT_EQ(a.place(whole(2))->gpus, (std::vector<int>{6, 7}));
  EXPECT_EQ(c.node(0).topology->nvlink_component_size(5), 4);
  Topology t(4);
  t.set_link(0, 3, LinkType::kNvLink);
  EXPECT_EQ(t.best_subset({0, 1, 2, 3}, 2), (std::vector<int>{0, 3}));
  EXPECT_EQ(t.best_subset({0, 1, 2}, 2), (std::vector<int>{0, 1}));
  EXPECT_THROW(t.set_link(0, 4, LinkType::kPcie), kt::InvalidArgument);
}

// ---------------------------------------------------------------- MIG
TEST(Mig, GeometryRules) {
  const MigProfile& g3 = mig_profile("3g.20gb");
  const MigProfile& g4 = mig_profile("4g.20gb");
  const MigProfile& g2 = mig_profile("2g.10gb");
  const MigProfile& g1 = mig_profile("1g.5gb");
  {  // two 3g fill a GPU
    MigState m;
    m.place(g3, 0);
    m.place(g3, 4);
    EXPECT_EQ(m.remaining_placements(), 0);
    EXPECT_TRUE(m.feasible_starts(g1).empty());
  }
  {  // 4g + 3g fits
    MigState m;
    m.place(g4, 0);
    EXPECT_EQ(m.feasible_starts(g3), std::vector<int>{4});
    m.place(g3, 4);
    EXPECT_EQ(m.compute_used, 7);
  }
  {  // 3g at slot 0 + 2g at slot 4 leaves room for exactly one 1g (at slot 6)
    MigState m;
    m.place(g3, 0);
    m.place(g2, 4);
    EXPECT_EQ(m.feasible_starts(g1), std::vector<int>{6});
    m.place(g1, 6);
    EXPECT_TRUE(m.feasible_starts(g1).empty());
    EXPECT_EQ(m.remaining_placements(), 0);
  }
  {  // the allocator keeps options open: a 1g goes where it blocks least
    MigState m;
    EXPECT_EQ(m.best_start(g1), 6);  // slot 6 does not touch the 3g/4g/7g start slots 0 and 4... only 2g at 4
    EXPECT_FALSE(MigState{}.can_place(g3, 2));
  }
  EXPECT_THROW(mig_profile("5g.99gb"), kt::InvalidArgument);
}

TEST(Mig, AllocatorPlacesProfiles) {
  Cluster c;
  NodeSpec s = gpu_node("a100", 1, 40960, "A100");
  s.mig = true;
  c.add_node(s);
  Allocator a(c, make_policy("best_fit"));
  Request r;
  r.mig_profile = "3g.20gb";
  auto p1 = a.place(r);
  auto p2 = a.place(r);
  ASSERT_TRUE(p1 && p2);
  EXPECT_NE(p1->mig_start, p2->mig_start);
  EXPECT_FALSE(a.place(r).has_value());
  Request one;
  one.mig_profile = "1g.5gb";
  EXPECT_FALSE(a.place(one).has_value());
  a.release(p2->id);
  EXPECT_TRUE(a.place(one).has_value());
  EXPECT_FALSE(a.place(whole(1)).has_value());  // MIG GPUs serve only MIG requests
  a.check_invariants();
}

// ---------------------------------------------------------------- invariants and index
TEST(Allocator, InvariantsUnder100kRandomOps) {
  SyntheticTrace t = synthetic_trace(40, 500, 7);
  NodeSpec mig = gpu_node("mig-0", 2, 40960, "A100");
  mig.mig = true;
  t.cluster.add_node(mig);
  Allocator a(t.cluster, make_policy("best_fit"));
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> live;
  const char* profiles[] = {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"};
  int placed = 0;
  for (int op = 0; op < 100000; ++op) {
    if (!live.empty() && rng() % 100 < 45) {
      const std::size_t k = rng() % live.size();
      a.release(live[k]);
      live[k] = live.back();
      live.pop_back();
    } else {
      Request r = t.pods[rng() % t.pods.size()];
      const int kind = static_cast<int>(rng() % 10);
      if (kind == 0) r = mem_req(1024 * (1 + static_cast<std::int64_t>(rng() % 16)));
      if (kind == 1) {
        r = Request{};
        r.mig_profile = profiles[rng() % 5];
      }
      r.name.clear();
      if (auto p = a.place(r)) {
        live.push_back(p->id);
        ++placed;
      }
    }
    if (op % 5000 == 0) a.check_invariants();
  }
  a.check_invariants();
  EXPECT_GT(placed, 10000);
  EXPECT_THROW(a.release(987654321), kt::NotFound);
}

TEST(Allocator, IndexedDecisionsEqualFullScan) {
  SyntheticTrace t = synthetic_trace(60, 400, 3);
  auto tp = typical_pods(t.cluster, t.pods);
  for (const char* pol : {"best_fit", "spread", "fgd", "kubetune"}) {
    AllocatorOptions on, off;
    off.indexed = false;
    on.max_shapes = 8;  // force evictions too
    Allocator ai(t.cluster, make_policy(pol, tp), on);
    Allocator as(t.cluster, make_policy(pol, tp), off);
    std::mt19937_64 rng(5);
    std::vector<std::uint64_t> live;
    for (int op = 0; op < 4000; ++op) {
      if (!live.empty() && rng() % 100 < 40) {
        const std::size_t k = rng() % live.size();
        ai.release(live[k]);
        as.release(live[k]);
        live[k] = live.back();
        live.pop_back();
        continue;
      }
      Request r = t.pods[rng() % t.pods.size()];
      r.name.clear();
      auto x = ai.place(r);
      auto y = as.place(r);
      ASSERT_EQ(x.has_value(), y.has_value()) << pol << " op " << op;
      if (x) {
        ASSERT_EQ(x->node, y->node) << pol << " op " << op;
        ASSERT_EQ(x->gpus, y->gpus) << pol << " op " << op;
        live.push_back(x->id);
      }
    }
  }
}

TEST(Allocator, ConcurrentCallersNeverOverCommit) {
  SyntheticTrace t = synthetic_trace(30, 300, 9);
  Allocator a(t.cluster, make_policy("best_fit"));
  std::atomic<int> placed{0};
  std::vector<std::thread> th;
  for (int w = 0; w < 4; ++w) {
    th.emplace_back([&, w] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(w) + 100);
      std::vector<std::uint64_t> mine;
      for (int i = 0; i < 3000; ++i) {
        if (!mine.empty() && rng() % 2) {
          a.release(mine.back());
          mine.pop_back();
        } else {
          Request r = t.pods[rng() % t.pods.size()];
          r.name.clear();
          if (auto p = a.place(r)) {
            mine.push_back(p->id);
            ++placed;
          }
        }
      }
    });
  }
  for (auto& x : th) x.join();
  a.check_invariants();
  EXPECT_GT(placed.load(), 1000);
}

TEST(Allocator, SnapshotRestoreAndValidation) {
  Cluster c;
  c.add_node(gpu_node("n", 2));
  Allocator a(c, make_policy("best_fit"));
  auto p = a.place(share(500));
  Snapshot s = a.snapshot();
  a.place(whole(1));
  EXPECT_EQ(a.stats().gpu_milli_allocated, 1500);
  a.restore(s);
  EXPECT_EQ(a.stats().gpu_milli_allocated, 500);
  a.check_invariants();
  a.release(p->id);
  EXPECT_EQ(a.stats().gpu_milli_allocated, 0);
  Request bad = share(500);
  bad.gpu_count = 2;
  EXPECT_THROW(a.place(bad), kt::InvalidArgument);
  Request neg;
  neg.cpu_milli = -1;
  try {
    a.place(neg);
    FAIL();
  } catch (const kt::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cpu_milli"), std::string::npos);
  }
  EXPECT_THROW(make_policy("nope"), kt::InvalidArgument);
  EXPECT_THROW(make_policy("fgd"), kt::InvalidArgument);  // needs typical pods
  NodeSpec dup = gpu_node("n", 1);
  EXPECT_THROW(c.add_node(dup), kt::InvalidArgument);
}

TEST(Allocator, ModelConstraint) {
  Cluster c;
  c.add_node(gpu_node("t4", 2, 16384, "T4"));
  c.add_node(gpu_node("v100", 2, 32768, "V100M32"));
  Allocator a(c, make_policy("best_fit"));
  Request r = whole(1);
  r.models = {"V100M32"};
  EXPECT_EQ(a.place(r)->node, 1);
  r.models = {"H100"};
  EXPECT_FALSE(a.place(r).has_value());
}

// ---------------------------------------------------------------- extender JSON
TEST(Extender, FilterPrioritizeBindRelease) {
  Cluster c;
  c.add_node(gpu_node("node-a", 2, 16384));
  c.add_node(gpu_node("node-b", 1, 16384));
  auto alloc = std::make_shared<Allocator>(c, make_policy("gpushare"));
  Extender ex(alloc);
  nlohmann::json pod = {{"metadata", {{"name", "p1"}, {"namespace", "ml"}}},
                        {"spec", {{"containers", {{{"resources", {{"limits", {{"aliyun.com/gpu-mem", "10"}, {"cpu", "500m"}, {"memory", "1Gi"}}}}}}}}}}};
  nlohmann::json args = {{"Pod", pod}, {"NodeNames", {"node-a", "node-b", "ghost"}}};
  auto f = nlohmann::json::parse(ex.filter(args.dump()));
  EXPECT_EQ(f["Error"], "");
  EXPECT_EQ(f["NodeNames"].size(), 2u);
  EXPECT_TRUE(f["FailedAndUnresolvableNodes"].contains("ghost"));  // preemption cannot help there
  auto pr = nlohmann::json::parse(ex.prioritize(args.dump()));
  ASSERT_EQ(pr.size(), 3u);
  EXPECT_EQ(pr[1]["Host"], "node-b");
  EXPECT_EQ(pr[1]["Score"], 10);  // tighter node (best fit)
  EXPECT_EQ(pr[2]["Score"], 0);
  auto b = nlohmann::json::parse(ex.bind(nlohmann::json{{"PodName", "p1"}, {"PodNamespace", "ml"}, {"Node", "node-b"}}.dump()));
  EXPECT_EQ(b["Error"], "");
  EXPECT_EQ(b["Annotations"][kAnnoGpuIndex], "0");
  EXPECT_EQ(b["Annotations"][kAnnoGpuMemPod], "10");
  EXPECT_EQ(b["Annotations"][kAnnoGpuMemDev], "16");
  EXPECT_EQ(b["Annotations"][kAnnoAssigned], "false");
  EXPECT_EQ(alloc->node_state(1).gpus[0].memory_free, 6144);
  // node-b has 6 GiB left: a second 10 GiB pod is filtered out there.
  pod["metadata"]["name"] = "p2";
  args["Pod"] = pod;
  f = nlohmann::json::parse(ex.filter(args.dump()));
  EXPECT_EQ(f["NodeNames"], nlohmann::json::array({"node-a"}));
  EXPECT_EQ(f["FailedNodes"]["node-b"], "insufficient GPU resources");
  auto bad = nlohmann::json::parse(ex.bind(R"({"PodName":"nobody","PodNamespace":"x","Node":"node-a"})"));
  EXPECT_NE(bad["Error"], "");
  EXPECT_EQ(nlohmann::json::parse(ex.release(R"({"PodName":"p1","PodNamespace":"ml"})"))["Error"], "");
  EXPECT_EQ(alloc->node_state(1).gpus[0].memory_free, 16384);
  EXPECT_NEAR(parse_quantity("1.5Gi"), 1.5 * 1073741824.0, 1e-3);
  EXPECT_NEAR(parse_quantity("250m"), 0.25, 1e-12);
  EXPECT_THROW(parse_quantity("12x"), kt::InvalidArgument);
}

TEST(Extender, RequestJson) {
  Request r = request_from_json(R"({"name":"a","cpu_milli":2000,"gpu_count":1,"gpu_milli":300,"models":["T4"]})");
  EXPECT_EQ(r.gpu_milli, 300);
  EXPECT_THROW(request_from_json(R"({"cpu":1})"), kt::InvalidArgument);
  EXPECT_THROW(request_from_json(R"({"gpu_count":2,"gpu_milli":300})"), kt::InvalidArgument);
}

// ---------------------------------------------------------------- trace replay
TEST(Replay, SyntheticKubetuneNotWorseThanBestFit) {
  SyntheticTrace t = synthetic_trace(150, 2000, 21);
  ReplayOptions o;
  o.seed = 1;
  o.policy = "best_fit";
  auto bf = replay(t.cluster, t.pods, o);
  o.policy = "kubetune";
  auto kt_ = replay(t.cluster, t.pods, o);
  EXPECT_GE(bf.at_100.arrived_pct, 100.0);
  EXPECT_GT(bf.pods_arrived, 500);
  EXPECT_LE(kt_.at_100.unallocated_pct, bf.at_100.unallocated_pct + 0.5);
  EXPECT_GE(bf.at_100.unallocated_pct, 0.0);
  ASSERT_FALSE(bf.curve.empty());
  for (std::size_t i = 1; i < bf.curve.size(); ++i) EXPECT_GE(bf.curve[i].arrived_pct, bf.curve[i - 1].arrived_pct);
  // Deterministic for a seed.
  auto again = replay(t.cluster, t.pods, o);
  EXPECT_EQ(again.pods_failed, kt_.pods_failed);
}

TEST(Replay, AlibabaTraceBestFitAndKubetune) {
  const std::string dir = std::string(KT_SHARED_DATA_DIR) + "/alibaba-gpu-2023/";
  if (!std::filesystem::exists(dir + "openb_node_list_gpu_node.csv") ||
      !std::filesystem::exists(dir + "openb_pod_list_default.csv"))
    GTEST_SKIP() << "Alibaba trace not present in " << dir;
  Cluster c = load_trace_cluster(dir + "openb_node_list_gpu_node.csv");
  EXPECT_EQ(c.num_nodes(), 1213);
  EXPECT_EQ(c.total_gpus(), 6212);
  auto pods = load_trace_pods(dir + "openb_pod_list_default.csv");
  EXPECT_EQ(pods.size(), 8152u);
  ReplayOptions o;
  o.seed = 42;
  o.policy = "best_fit";
  auto bf = replay(c, pods, o);
  o.policy = "kubetune";
  auto ours = replay(c, pods, o);
  // Paper: best-fit leaves 7.09 % unallocated at 100 % arrived (one seed here; the benchmark takes 10).
  EXPECT_NEAR(bf.at_100.unallocated_pct, 7.09, 1.0);
  EXPECT_LT(ours.at_100.unallocated_pct, bf.at_100.unallocated_pct);
}
