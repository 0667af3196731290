// The extender's protocol in kube-scheduler's exact JSON, its state from Kubernetes node and pod lists and watch
// events, and bind with the API writes (a recording KubeWriter), rollback and one-bind-per-pod under concurrency.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/extender.hpp"
#include "kubetune/sched/gpu/policy.hpp"

namespace kt = kubetune;
using namespace kubetune::sched::gpu;
using nlohmann::json;

namespace {
/// A v1.Node as gpushare's device plugin leaves it: aliyun.com/gpu-count GPUs, aliyun.com/gpu-mem GiB in all.
json kube_node(const std::string& name, int gpus, int gib_per_gpu, const std::string& unhealthy = "") {
  json n = {{"kind", "Node"},
            {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", "Tesla-T4"}}}}},
            {"status",
             {{"capacity",
               {{"cpu", "32"}, {"memory", "128Gi"}, {kGpuCountResource, std::to_string(gpus)},
                {kGpuMemResource, std::to_string(gpus * gib_per_gpu)}}},
              {"allocatable", {{"cpu", "32"}, {"memory", "128Gi"}}}}}};
  if (!unhealthy.empty()) n["metadata"]["annotations"] = {{kAnnoUnhealthyGpus, unhealthy}};
  return n;
}

json kube_pod(const std::string& name, int gib, const std::string& node = "", const json& anno = json::object(),
              const std::string& phase = "Pending") {
  return {{"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "uid-" + name}, {"annotations", anno}}},
          {"spec",
           {{"nodeName", node},
            {"containers", {{{"name", "c"}, {"resources", {{"limits", {{kGpuMemResource, std::to_string(gib)}}}}}}}}}},
          {"status", {{"phase", phase}}}};
}

json list(const std::string& kind, std::vector<json> items) {
  return {{"kind", kind}, {"metadata", {{"resourceVersion", "7"}}}, {"items", std::move(items)}};
}

json filter_args(const json& pod, std::vector<std::string> names) { return {{"Pod", pod}, {"NodeNames", names}}; }
json bind_args(const std::string& name, const std::string& node) {
  return {{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + name}, {"Node", node}};
}

/// Records the API writes; fails the n-th binding on request.
struct RecordingWriter : KubeWriter {
  std::mutex mu;
  std::vector<std::string> calls;
  std::map<std::string, std::map<std::string, std::string>> annotations;
  std::map<std::string, json> pods;  // served by get_pod
  std::atomic<int> fail_bindings{0};
  std::string get_pod(const std::string& ns, const std::string& name) override {
    std::lock_guard l(mu);
    auto it = pods.find(ns + "/" + name);
    if (it == pods.end()) throw std::runtime_error("pods \"" + name + "\" not found (404)");
    return it->second.dump();
  }
  void patch_pod_annotations(const std::string& ns, const std::string& name, const std::string&,
                             const std::map<std::string, std::string>& a) override {
    std::lock_guard l(mu);
    calls.push_back("patch " + ns + "/" + name);
    annotations[ns + "/" + name] = a;
  }
  void create_binding(const std::string& ns, const std::string& name, const std::string&,
                      const std::string& node) override {
    std::lock_guard l(mu);
    if (fail_bindings > 0) {
      --fail_bindings;
      throw std::runtime_error("Internal Server Error (500)");
    }
    calls.push_back("bind " + ns + "/" + name + " " + node);
  }
};

std::shared_ptr<Extender> synced(std::vector<json> nodes, std::vector<json> pods = {}, ExtenderConfig cfg = {}) {
  auto ex = std::make_shared<Extender>(make_policy("best_fit"), cfg);
  EXPECT_FALSE(ex->ready());
  ex->sync(list("NodeList", std::move(nodes)).dump(), list("PodList", std::move(pods)).dump());
  EXPECT_TRUE(ex->ready());
  return ex;
}

std::int64_t free_mib(const Extender& ex, const std::string& node, int gpu) {
  auto a = ex.allocator();
  return a->node_state(a->cluster().find_node(node)).gpus[static_cast<std::size_t>(gpu)].memory_free;
}
}  // namespace

// ---------------------------------------------------------------- protocol
TEST(ExtenderProtocol, FilterBothNodeFormsAndFailureMaps) {
  auto ex = synced({kube_node("big", 2, 16), kube_node("small", 1, 8), kube_node("full", 1, 16)});
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("hog", 16), {"full"}).dump()))["Error"], "");
  ASSERT_EQ(json::parse(ex->bind(bind_args("hog", "full").dump()))["Error"], "");

  const json pod = kube_pod("p", 12);
  // nodeCacheCapable: NodeNames in, NodeNames out, Nodes null.
  json f = json::parse(ex->filter(filter_args(pod, {"big", "small", "full", "ghost"}).dump()));
  EXPECT_EQ(f["NodeNames"], json::array({"big"}));
  EXPECT_TRUE(f["Nodes"].is_null());
  EXPECT_EQ(f["FailedNodes"], json({{"full", "insufficient GPU resources"}}));  // free after preemption
  EXPECT_EQ(f["FailedAndUnresolvableNodes"].size(), 2u);                       // 8 GiB GPUs; unknown node
  EXPECT_TRUE(f["FailedAndUnresolvableNodes"].contains("small"));
  EXPECT_TRUE(f["FailedAndUnresolvableNodes"].contains("ghost"));
  EXPECT_EQ(f["Error"], "");
  // Not nodeCacheCapable: the v1.NodeList in, the kept Node objects out, exactly as sent.
  const json args = {{"Pod", pod}, {"Nodes", {{"items", {kube_node("small", 1, 8), kube_node("big", 2, 16)}}}}};
  f = json::parse(ex->filter(args.dump()));
  EXPECT_TRUE(f["NodeNames"].is_null());
  ASSERT_EQ(f["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(f["Nodes"]["items"][0], kube_node("big", 2, 16));
  // Go decodes field names ignoring case.
  f = json::parse(ex->filter(json{{"pod", pod}, {"nodenames", {"big"}}}.dump()));
  EXPECT_EQ(f["NodeNames"], json::array({"big"}));
  // HostPriorityList: [{"Host","Score"}] in [0, 10].
  const json pr = json::parse(ex->prioritize(filter_args(pod, {"big", "small"}).dump()));
  EXPECT_EQ(pr, json::parse(R"([{"Host":"big","Score":10},{"Host":"small","Score":0}])"));
}

TEST(ExtenderProtocol, PreemptKeepsNodesWhereTheVictimsFreeEnoughGpu) {
  auto ex = synced({kube_node("a", 1, 16), kube_node("b", 1, 16)});
  for (const auto& [name, gib, node] : {std::tuple{"va", 12, "a"}, {"vb1", 6, "b"}, {"vb2", 6, "b"}}) {
    ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod(name, gib), {node}).dump()))["Error"], "");
    ASSERT_EQ(json::parse(ex->bind(bind_args(name, node).dump()))["Error"], "");
  }
  const json pod = kube_pod("urgent", 10);
  // Victims as full pods (not nodeCacheCapable): on a, evicting va frees 16 GiB; on b only vb1 is offered: 10 free.
  json args = {{"Pod", pod},
               {"NodeNameToVictims",
                {{"a", {{"Pods", {kube_pod("va", 12)}}, {"NumPDBViolations", 1}}},
                 {"b", {{"Pods", {kube_pod("vb1", 6)}}, {"NumPDBViolations", 0}}},
                 {"ghost", {{"Pods", json::array()}, {"NumPDBViolations", 0}}}}}};
  json r = json::parse(ex->preempt(args.dump()));
  EXPECT_EQ(r, json::parse(R"({"NodeNameToMetaVictims":{"a":{"Pods":[{"UID":"uid-va"}],"NumPDBViolations":1},
                                                         "b":{"Pods":[{"UID":"uid-vb1"}],"NumPDBViolations":0}}})"));
  // MetaVictims by UID (nodeCacheCapable): an empty victim list on a does not make room.
  args = {{"Pod", kube_pod("huge", 16)},
          {"NodeNameToMetaVictims",
           {{"a", {{"Pods", json::array()}, {"NumPDBViolations", 0}}},
            {"b", {{"Pods", {{{"UID", "uid-vb1"}}, {{"UID", "uid-vb2"}}}}, {"NumPDBViolations", 0}}}}}};
  r = json::parse(ex->preempt(args.dump()));
  EXPECT_EQ(r["NodeNameToMetaVictims"].size(), 1u);
  EXPECT_EQ(r["NodeNameToMetaVictims"]["b"]["Pods"].size(), 2u);
  // Nothing was evicted by asking.
  EXPECT_EQ(ex->status().placements, 3);
}

TEST(ExtenderProtocol, BadInputIsA4xxAndChangesNothing) {
  ExtenderConfig cfg;
  cfg.max_body_bytes = 4096;
  auto ex = synced({kube_node("a", 1, 16)}, {}, cfg);
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("p", 4), {"a"}).dump()))["Error"], "");
  ASSERT_EQ(json::parse(ex->bind(bind_args("p", "a").dump()))["Error"], "");
  const auto before = ex->allocator()->snapshot();
  const std::string deep = std::string(75000, '[') + std::string(75000, ']');
  const std::pair<const char*, std::string> bad[] = {
      {"filter", "{not json"},
      {"filter", "[1,2]"},
      {"filter", R"({"Pod": 5, "NodeNames": ["a"]})"},
      {"filter", R"({"Pod": {"metadata": {"name": "x"}}, "NodeNames": "a"})"},
      {"filter", R"({"Pod": {"metadata": {"name": "x"}}, "NodeNames": [7]})"},
      {"filter", R"({"Pod": {"metadata": {"name": 3}}, "NodeNames": ["a"]})"},
      {"filter", R"({"Pod": {"metadata": {"name": "x"}, "spec": {"containers": [{"resources": {"limits": {"aliyun.com/gpu-mem": "lots"}}}]}}, "NodeNames": ["a"]})"},
      {"filter", "{\"Pod\": \"\xff\xfe\"}"},
      {"filter", deep},
      {"filter", "{\"Pod\": \"" + std::string(5000, 'x') + "\"}"},
      {"bind", R"({"PodName": 1, "Node": "a"})"},
      {"bind", R"({"PodName": "p", "PodNamespace": "ml"})"},
      {"preempt", R"({"Pod": {"metadata": {"name": "x"}}})"},
      {"prioritize", "null"},
  };
  for (const auto& [verb, body] : bad) {
    const ExtenderReply r = ex->handle(verb, body);
    EXPECT_TRUE(r.status == 400 || r.status == 413) << verb << " " << body.substr(0, 80) << " -> " << r.status;
    EXPECT_FALSE(json::parse(r.body)["Error"].get<std::string>().empty());
  }
  EXPECT_EQ(ex->handle("dance", "{}").status, 404);
  EXPECT_EQ(ex->handle("filter", std::string(5000, ' ')).status, 413);
  // Refusals are the protocol's Error, not a bad request: unknown node, a pod never filtered.
  EXPECT_EQ(ex->handle("bind", bind_args("p", "ghost").dump()).status, 200);
  EXPECT_NE(json::parse(ex->bind(bind_args("nobody", "a").dump()))["Error"], "");
  const auto after = ex->allocator()->snapshot();
  EXPECT_EQ(after.placements.size(), before.placements.size());
  EXPECT_EQ(free_mib(*ex, "a", 0), 12 * 1024);
  ex->allocator()->check_invariants();
  EXPECT_GE(ex->status().counters.bad_requests, 15);
}

// ---------------------------------------------------------------- bind
TEST(ExtenderBind, WritesGpushareAnnotationsThenTheBinding) {
  auto ex = synced({kube_node("a", 2, 16)});
  auto w = std::make_shared<RecordingWriter>();
  ex->set_writer(w);
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("p", 10), {"a"}).dump()))["Error"], "");
  const json b = json::parse(ex->bind(bind_args("p", "a").dump()));
  ASSERT_EQ(b["Error"], "");
  ASSERT_EQ(w->calls, (std::vector<std::string>{"patch ml/p", "bind ml/p a"}));
  const auto& anno = w->annotations["ml/p"];
  EXPECT_EQ(anno.at(kAnnoGpuIndex), "0");
  EXPECT_EQ(anno.at(kAnnoGpuMemPod), "10");
  EXPECT_EQ(anno.at(kAnnoGpuMemDev), "16");
  EXPECT_EQ(anno.at(kAnnoAssigned), "false");
  EXPECT_GT(std::stoull(anno.at(kAnnoAssumeTime)), 1'600'000'000'000'000'000ULL);  // ns since the epoch
  EXPECT_EQ(free_mib(*ex, "a", 0), 6 * 1024);
  // A second bind of the same pod is a conflict and places nothing.
  EXPECT_NE(json::parse(ex->bind(bind_args("p", "a").dump()))["Error"], "");
  EXPECT_EQ(ex->status().placements, 1);
  EXPECT_EQ(ex->status().counters.bind_conflicts, 1);
}

TEST(ExtenderBind, FailedBindingRollsBackAndARetrySucceeds) {
  auto ex = synced({kube_node("a", 1, 16)});
  auto w = std::make_shared<RecordingWriter>();
  w->fail_bindings = 1;
  ex->set_writer(w);
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("p", 16), {"a"}).dump()))["Error"], "");
  const std::string err = json::parse(ex->bind(bind_args("p", "a").dump()))["Error"];
  EXPECT_NE(err.find("GPUs were released"), std::string::npos) << err;
  EXPECT_NE(err.find("500"), std::string::npos) << err;
  EXPECT_EQ(free_mib(*ex, "a", 0), 16 * 1024);
  EXPECT_EQ(ex->status().placements, 0);
  EXPECT_EQ(ex->status().counters.rollbacks, 1);
  EXPECT_EQ(json::parse(ex->bind(bind_args("p", "a").dump()))["Error"], "");  // kube-scheduler retries
  EXPECT_EQ(free_mib(*ex, "a", 0), 0);
}

TEST(ExtenderBind, UnfilteredPodIsFetchedAndExpiredPendingPodsAreForgotten) {
  ExtenderConfig cfg;
  cfg.pending_ttl_s = 0.05;
  auto ex = synced({kube_node("a", 1, 16)}, {}, cfg);
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("old", 4), {"a"}).dump()))["Error"], "");
  EXPECT_EQ(ex->status().pending, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the TTL and the 1 s sweep interval
  (void)ex->filter(filter_args(kube_pod("new", 4), {"a"}).dump());
  EXPECT_EQ(ex->status().pending, 1);
  EXPECT_EQ(ex->status().counters.pending_expired, 1);
  // Without a client, a forgotten pod cannot be bound; with one, it is read from the API server.
  EXPECT_NE(json::parse(ex->bind(bind_args("old", "a").dump()))["Error"].get<std::string>().find("never filtered"),
            std::string::npos);
  auto w = std::make_shared<RecordingWriter>();
  w->pods["ml/old"] = kube_pod("old", 4);
  ex->set_writer(w);
  EXPECT_EQ(json::parse(ex->bind(bind_args("old", "a").dump()))["Error"], "");
  EXPECT_EQ(free_mib(*ex, "a", 0), 12 * 1024);
}

TEST(ExtenderBind, SimultaneousBindsOfOnePodPlaceItOnce) {
  auto ex = synced({kube_node("a", 8, 32), kube_node("b", 8, 32)});
  auto w = std::make_shared<RecordingWriter>();
  ex->set_writer(w);
  for (int round = 0; round < 50; ++round) {
    const std::string name = "p" + std::to_string(round);
    ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod(name, 2), {"a", "b"}).dump()))["Error"], "");
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        if (json::parse(ex->bind(bind_args(name, t % 2 ? "a" : "b").dump()))["Error"] == "") ++ok;
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok, 1) << name;
  }
  EXPECT_EQ(ex->status().placements, 50);
  ex->allocator()->check_invariants();
}

// ---------------------------------------------------------------- state from the API
TEST(ExtenderState, SyncPinsAnnotatedPodsToTheirRecordedGpus) {
  const json anno = {{kAnnoGpuIndex, "2"}, {kAnnoGpuMemPod, "6"}, {kAnnoAssigned, "true"}};
  auto ex = synced({kube_node("a", 4, 16), kube_node("b", 1, 16)},
                   {kube_pod("run", 6, "a", anno, "Running"), kube_pod("done", 6, "a", {{kAnnoGpuIndex, "1"}}, "Succeeded"),
                    kube_pod("waiting", 6), kube_pod("elsewhere", 4, "c", {{kAnnoGpuIndex, "0"}}, "Running"),
                    {{"metadata", {{"name", "broken"}}}, {"spec", {{"containers", 3}}}}});
  const auto run = ex->allocator()->placement_by_name("ml/run");
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->gpus, std::vector<int>{2});  // best fit alone would have chosen GPU 0
  EXPECT_EQ(free_mib(*ex, "a", 2), 10 * 1024);
  EXPECT_EQ(free_mib(*ex, "a", 1), 16 * 1024);  // Succeeded pods hold nothing
  EXPECT_EQ(ex->status().placements, 1);
  EXPECT_EQ(ex->status().counters.bad_objects, 1);
  // The pod on an unknown node is placed when that node appears.
  ex->node_event("ADDED", kube_node("c", 1, 16).dump());
  EXPECT_EQ(ex->status().placements, 2);
  EXPECT_EQ(free_mib(*ex, "c", 0), 12 * 1024);
  EXPECT_EQ(ex->allocator()->placement_by_name("ml/run")->gpus, std::vector<int>{2});  // still pinned
}

TEST(ExtenderState, WatchEventsReleaseResizeAndMarkUnhealthy) {
  auto ex = synced({kube_node("a", 2, 16)});
  ex->pod_event("MODIFIED", kube_pod("x", 8, "a", {{kAnnoGpuIndex, "1"}}, "Running").dump());
  ex->pod_event("ADDED", kube_pod("y", 8, "a", {{kAnnoGpuIndex, "1"}}, "Running").dump());
  EXPECT_EQ(free_mib(*ex, "a", 1), 0);
  ex->pod_event("MODIFIED", kube_pod("x", 8, "a", {{kAnnoGpuIndex, "1"}}, "Succeeded").dump());
  EXPECT_EQ(free_mib(*ex, "a", 1), 8 * 1024);
  ex->pod_event("DELETED", kube_pod("y", 8, "a", {{kAnnoGpuIndex, "1"}}, "Running").dump());
  EXPECT_EQ(free_mib(*ex, "a", 1), 16 * 1024);
  EXPECT_EQ(ex->status().counters.releases, 2);

  ex->pod_event("ADDED", kube_pod("z", 8, "a", {{kAnnoGpuIndex, "1"}}, "Running").dump());
  ex->node_event("MODIFIED", kube_node("a", 4, 16).dump());  // resized: 4 GPUs
  EXPECT_EQ(ex->allocator()->cluster().node(0).num_gpus, 4);
  EXPECT_EQ(ex->allocator()->placement_by_name("ml/z")->gpus, std::vector<int>{1});
  const std::int64_t rebuilds = ex->status().counters.rebuilds;
  ex->node_event("MODIFIED", kube_node("a", 4, 16, "0,3").dump());  // health only: no rebuild
  EXPECT_EQ(ex->status().counters.rebuilds, rebuilds);
  json f = json::parse(ex->filter(filter_args(kube_pod("w", 16), {"a"}).dump()));
  EXPECT_EQ(f["NodeNames"], json::array({"a"}));  // GPU 2 is still whole and healthy
  ASSERT_EQ(json::parse(ex->bind(bind_args("w", "a").dump()))["Error"], "");
  EXPECT_EQ(ex->allocator()->placement_by_name("ml/w")->gpus, std::vector<int>{2});
  f = json::parse(ex->filter(filter_args(kube_pod("v", 16), {"a"}).dump()));
  EXPECT_TRUE(f["FailedNodes"].contains("a"));
  ex->node_event("DELETED", kube_node("a", 4, 16).dump());
  EXPECT_EQ(ex->status().nodes, 0);
  EXPECT_EQ(ex->status().placements, 0);
  EXPECT_THROW(ex->node_event("BOOKMARK", "{}"), kt::InvalidArgument);
  EXPECT_THROW(ex->pod_event("ADDED", "{\"metadata\": 1}"), kt::InvalidArgument);
}

TEST(ExtenderState, ResyncKeepsBindsTheListDoesNotShowYet) {
  auto ex = synced({kube_node("a", 2, 16)});
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("fresh", 8), {"a"}).dump()))["Error"], "");
  ASSERT_EQ(json::parse(ex->bind(bind_args("fresh", "a").dump()))["Error"], "");
  ex->pod_event("ADDED", kube_pod("gone", 8, "a", {{kAnnoGpuIndex, "1"}}, "Running").dump());
  // A relist after a watch gap: "gone" was deleted meanwhile, "fresh" is not bound in the list yet.
  ex->sync(list("NodeList", {kube_node("a", 2, 16)}).dump(), list("PodList", {kube_pod("fresh", 8)}).dump());
  EXPECT_TRUE(ex->allocator()->placement_by_name("ml/fresh").has_value());
  EXPECT_FALSE(ex->allocator()->placement_by_name("ml/gone").has_value());
  // Past the grace period a resync drops what the API server never showed bound.
  ExtenderConfig cfg;
  cfg.assume_grace_s = 0;
  auto ex2 = synced({kube_node("a", 2, 16)}, {}, cfg);
  ASSERT_EQ(json::parse(ex2->filter(filter_args(kube_pod("lost", 8), {"a"}).dump()))["Error"], "");
  ASSERT_EQ(json::parse(ex2->bind(bind_args("lost", "a").dump()))["Error"], "");
  ex2->sync(list("NodeList", {kube_node("a", 2, 16)}).dump(), list("PodList", {}).dump());
  EXPECT_EQ(ex2->status().placements, 0);
}

TEST(ExtenderState, MetricsNameEveryGauge) {
  auto ex = synced({kube_node("a", 2, 16)});
  const std::string m = ex->metrics_text();
  for (const char* name : {"kubetune_extender_ready 1", "kubetune_extender_nodes 1", "kubetune_extender_gpus 2",
                           "kubetune_extender_binds_total{result=\"ok\"} 0", "kubetune_extender_syncs_total 1",
                           "# TYPE kubetune_extender_placements gauge"})
    EXPECT_NE(m.find(name), std::string::npos) << name;
}

TEST(ExtenderProtocol, FilterFastPathMatchesTheDomReplyByteForByte) {
  auto ex = synced({kube_node("big", 2, 16), kube_node("small", 1, 8), kube_node("full", 1, 16)});
  ASSERT_EQ(json::parse(ex->filter(filter_args(kube_pod("hog", 16), {"full"}).dump()))["Error"], "");
  ASSERT_EQ(json::parse(ex->bind(bind_args("hog", "full").dump()))["Error"], "");
  const std::string pod = kube_pod("p", 12).dump();
  const std::string unknown = "node unknown to kubetune-extender (no such Node, or not synced yet)";
  auto expected = [&](const json& unresolvable) {
    return json{{"FailedNodes", {{"full", "insufficient GPU resources"}}},
                {"FailedAndUnresolvableNodes", unresolvable},
                {"Error", ""},
                {"NodeNames", {"big", "big"}},
                {"Nodes", nullptr}}
        .dump();
  };
  // Plain names (read without the JSON lexer), a mixed-case key, a repeated node.
  EXPECT_EQ(ex->filter(R"({"Pod":)" + pod + R"(, "nodeNames" : [ "small","big" ,"full","ghost", "big" ]})"),
            expected({{"small", "insufficient GPU resources"}, {"ghost", unknown}}));
  // Names needing escapes (through the SAX handler); the reply escapes them as dump does.
  EXPECT_EQ(ex->filter(R"({"nODENAMES":["small","big","full","gh\"o\\st","t\u001fb\tc","big"],"Pod":)" + pod + "}"),
            expected({{"small", "insufficient GPU resources"}, {"gh\"o\\st", unknown}, {"t\x1f" "b\tc", unknown}}));
  // Two NodeNames keys: the exact spelling wins, as go_field reads the DOM.
  json f = json::parse(ex->filter(R"({"Pod":)" + pod + R"(,"nodenames":["small"],"NodeNames":["big"]})"));
  EXPECT_EQ(f["NodeNames"], json::array({"big"}));
  // A null NodeNames is absent: the v1.NodeList is read.
  f = json::parse(ex->filter(R"({"Pod":)" + pod + R"(,"NodeNames":null,"Nodes":{"items":[)" +
                             kube_node("big", 2, 16).dump() + "]}}"));
  EXPECT_TRUE(f["NodeNames"].is_null());
  EXPECT_EQ(f["Nodes"]["items"], json::array({kube_node("big", 2, 16)}));
  // A non-string entry, after plain or escaped names, is a bad request naming it.
  for (const std::string names : {R"(["big", 7])", R"(["a\"b", {"x": 1}])"}) {
    const ExtenderReply r = ex->handle("filter", R"({"Pod":)" + pod + R"(,"nodeNames":)" + names + "}");
    EXPECT_EQ(r.status, 400) << names;
    EXPECT_NE(json::parse(r.body)["Error"].get<std::string>().find("ExtenderArgs NodeNames entry"), std::string::npos)
        << r.body;
  }
  // A syntax error after plain names is reported at its place in the body, as json::parse reports it.
  const std::string broken = R"({"Pod":)" + pod + R"(,"NodeNames":["big","small"]} x)";
  const std::string parse_error = [&] {
    try {
      return json::parse(broken).dump();
    } catch (const json::exception& e) {
      return std::string(e.what());
    }
  }();
  const ExtenderReply r = ex->handle("filter", broken);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["Error"], "request body is not JSON: " + parse_error);
}

TEST(ExtenderProtocol, PreemptFindsByUidAPodBoundWithoutAFilter) {
  auto ex = synced({kube_node("a", 1, 16)});
  auto w = std::make_shared<RecordingWriter>();
  w->pods["ml/fetched"] = kube_pod("fetched", 16);
  ex->set_writer(w);
  ASSERT_EQ(json::parse(ex->bind(bind_args("fetched", "a").dump()))["Error"], "");  // read from the API server
  const json args = {{"Pod", kube_pod("urgent", 8)},
                     {"NodeNameToMetaVictims", {{"a", {{"Pods", {{{"UID", "uid-fetched"}}}}, {"NumPDBViolations", 0}}}}}};
  const json r = json::parse(ex->preempt(args.dump()));
  EXPECT_EQ(r["NodeNameToMetaVictims"].size(), 1u) << r.dump();  // evicting it frees the GPU
}

TEST(ExtenderProtocol, NodesWithoutItemsKeepsNothing) {  // found by tests/fuzz/fuzz_extender.cpp (UBSan)
  auto ex = synced({kube_node("a", 1, 16)});
  const json f = json::parse(ex->filter(json{{"Pod", kube_pod("p", 4)}, {"Nodes", json::object()}}.dump()));
  EXPECT_EQ(f["Error"], "");
  EXPECT_EQ(f["Nodes"]["items"], json::array());
}
