// Tests of the gpushare device-plugin Allocate decision: candidate rule, GPU and environment, errors, JSON form, and
// the round trip with the extender's bind annotations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/device_plugin.hpp"
#include "kubetune/sched/gpu/extender.hpp"

using namespace kubetune::sched::gpu;
namespace kt = kubetune;
using Env = std::map<std::string, std::string>;

namespace {
DevicePluginPod pod(const std::string& name, std::int64_t mem, std::map<std::string, std::string> anno) {
  DevicePluginPod p;
  p.name = name;
  p.ns = "ml";
  p.uid = "uid-" + name;
  p.gpu_mem = mem;
  p.annotations = std::move(anno);
  return p;
}
std::map<std::string, std::string> assumed(const std::string& t, const std::string& idx) {
  return {{"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"}, {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", t},
          {"ALIYUN_COM_GPU_MEM_IDX", idx}, {"ALIYUN_COM_GPU_MEM_POD", "0"}, {"ALIYUN_COM_GPU_MEM_DEV", "16"}};
}
const std::vector<DevicePluginDevice> kTwo = {{"GPU-aaaa", 0}, {"GPU-bbbb", 1}};
DevicePluginConfig cfg16() {
  DevicePluginConfig c;
  c.gpu_memory_per_device = 16;
  return c;
}
}  // namespace

TEST(DevicePlugin, CandidateRuleOldestAssumedPodWithEqualRequest) {
  std::vector<DevicePluginPod> pods = {
      pod("a", 2, assumed("300", "1")),
      pod("b", 2, assumed("100", "0")),
      pod("c", 2, {{"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}, {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "50"}}),  // assigned
      pod("d", 4, assumed("10", "1")),
      pod("e", 2, {{"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"}}),           // never assumed: no ASSUME_TIME
      pod("f", 0, assumed("5", "0")),                                    // not a gpushare pod
      pod("g", 2, {{"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "1"}}),            // no ASSIGNED flag
  };
  EXPECT_EQ(gpushare_candidates(pods), (std::vector<int>{3, 1, 0}));  // d (10), b (100), a (300)
  // 2 units over two containers: the oldest candidate asking exactly 2 is b, on GPU 0.
  AllocateDecision d = gpushare_allocate({1, 1}, pods, kTwo, cfg16(), 777);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.path, AllocatePath::kAssumedPod);
  EXPECT_EQ(d.pod, 1);
  EXPECT_EQ(d.gpu_index, 0);
  EXPECT_EQ(d.device_uuid, "GPU-aaaa");
  EXPECT_EQ(d.pod_request, 2);
  ASSERT_EQ(d.container_envs.size(), 2u);
  const Env want = {{"NVIDIA_VISIBLE_DEVICES", "0"},
                    {"ALIYUN_COM_GPU_MEM_IDX", "0"},
                    {"ALIYUN_COM_GPU_MEM_POD", "2"},
                    {"ALIYUN_COM_GPU_MEM_CONTAINER", "1"},
                    {"ALIYUN_COM_GPU_MEM_DEV", "16"}};
  EXPECT_EQ(d.container_envs[0], want);
  EXPECT_EQ(d.container_envs[1], want);
  EXPECT_EQ(d.pod_patch, (Env{{"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}, {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "777"}}));
  // Once b is assigned, the same request goes to a (GPU 1); 4 units go to d.
  pods[1].annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"] = "true";
  d = gpushare_allocate({2}, pods, kTwo, cfg16(), 1);
  EXPECT_EQ(d.pod, 0);
  EXPECT_EQ(d.container_envs[0].at("NVIDIA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(d.container_envs[0].at("ALIYUN_COM_GPU_MEM_CONTAINER"), "2");
  d = gpushare_allocate({3, 1}, pods, kTwo, cfg16(), 1);
  EXPECT_EQ(d.pod, 3);
  EXPECT_EQ(d.gpu_index, 1);
  EXPECT_EQ(d.container_envs[0].at("ALIYUN_COM_GPU_MEM_CONTAINER"), "3");
  EXPECT_EQ(d.container_envs[1].at("ALIYUN_COM_GPU_MEM_POD"), "4");
}

TEST(DevicePlugin, AssumeTimeParsingAndTies) {
  // An unparsable assume time reads as 0 (strconv.ParseUint fails -> 0): it sorts first.
  std::vector<DevicePluginPod> pods = {pod("late", 2, assumed("200", "0")), pod("bad", 2, assumed("soon", "1")),
                                       pod("tie1", 2, assumed("150", "0")), pod("tie2", 2, assumed("150", "1"))};
  EXPECT_EQ(gpushare_assume_time(pods[1]), 0u);
  EXPECT_EQ(gpushare_assume_time(pods[0]), 200u);
  EXPECT_EQ(gpushare_candidates(pods), (std::vector<int>{1, 2, 3, 0}));  // ties keep the given order
  EXPECT_EQ(gpushare_allocate({2}, pods, kTwo, cfg16(), 1).gpu_index, 1);
  pods[1].annotations["ALIYUN_COM_GPU_MEM_ASSUME_TIME"] = "+5";  // ParseUint takes no sign
  EXPECT_EQ(gpushare_assume_time(pods[1]), 0u);
  pods[1].annotations["ALIYUN_COM_GPU_MEM_ASSUME_TIME"] = "18446744073709551616";  // overflows uint64
  EXPECT_EQ(gpushare_assume_time(pods[1]), 0u);
}

TEST(DevicePlugin, SingleDeviceShortcutAndErrorResponse) {
  const std::vector<DevicePluginPod> pods = {pod("a", 4, assumed("1", "0"))};
  // No pod asks 3 units; the node has one GPU: gpushare gives it directly, by UUID.
  AllocateDecision d = gpushare_allocate({3}, pods, {{"GPU-only", 0}}, cfg16(), 1);
  ASSERT_TRUE(d.ok);
  EXPECT_EQ(d.path, AllocatePath::kSingleDevice);
  EXPECT_EQ(d.pod, -1);
  EXPECT_EQ(d.container_envs[0].at("NVIDIA_VISIBLE_DEVICES"), "GPU-only");
  EXPECT_EQ(d.container_envs[0].at("ALIYUN_COM_GPU_MEM_IDX"), "0");
  EXPECT_TRUE(d.pod_patch.empty());
  // Two GPUs: gpushare's error response (the container starts but sees no GPU).
  d = gpushare_allocate({2, 1}, pods, kTwo, cfg16(), 1);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.path, AllocatePath::kError);
  EXPECT_NE(d.error.find("aliyun.com/gpu-mem = 3"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("ml/a asks 4"), std::string::npos) << d.error;
  ASSERT_EQ(d.container_envs.size(), 2u);
  EXPECT_EQ(d.container_envs[0], (Env{{"NVIDIA_VISIBLE_DEVICES", "no-gpu-has-3GiB-to-run"},
                                      {"ALIYUN_COM_GPU_MEM_IDX", "-1"},
                                      {"ALIYUN_COM_GPU_MEM_POD", "3"},
                                      {"ALIYUN_COM_GPU_MEM_CONTAINER", "2"},
                                      {"ALIYUN_COM_GPU_MEM_DEV", "16"}}));
  EXPECT_EQ(d.container_envs[1].at("ALIYUN_COM_GPU_MEM_CONTAINER"), "1");
  DevicePluginConfig mib = cfg16();
  mib.memory_unit = "MiB";
  EXPECT_EQ(gpushare_allocate({3}, pods, kTwo, mib, 1).container_envs[0].at("NVIDIA_VISIBLE_DEVICES"),
            "no-gpu-has-3MiB-to-run");
  EXPECT_FALSE(gpushare_allocate({3}, {}, {}, cfg16(), 1).ok);  // no devices, no pods
}

TEST(DevicePlugin, BadGpuIndexOfTheMatchedPod) {
  auto with_idx = [](const std::string& v) {
    auto a = assumed("1", v);
    return std::vector<DevicePluginPod>{pod("p", 2, a)};
  };
  for (const auto& [idx, expect] : std::vector<std::pair<std::string, std::string>>{
           {"x", "'x' is not an integer"}, {"0,1", "'0,1' is not an integer"}, {"-1", "is negative"},
           {"5", "= 5 names no device on this node (device indices: 0, 1)"}}) {
    const AllocateDecision d = gpushare_allocate({2}, with_idx(idx), kTwo, cfg16(), 1);
    EXPECT_FALSE(d.ok) << idx;
    EXPECT_EQ(d.pod, 0) << idx;
    EXPECT_NE(d.error.find(expect), std::string::npos) << idx << ": " << d.error;
    EXPECT_NE(d.error.find("ml/p"), std::string::npos) << d.error;
    EXPECT_EQ(d.container_envs[0].at("ALIYUN_COM_GPU_MEM_IDX"), "-1");
  }
  // gpushare does not fall back to the single GPU when the matched pod's index is bad.
  EXPECT_FALSE(gpushare_allocate({2}, with_idx("3"), {{"GPU-only", 0}}, cfg16(), 1).ok);
  auto no_idx = with_idx("0");
  no_idx[0].annotations.erase("ALIYUN_COM_GPU_MEM_IDX");
  EXPECT_NE(gpushare_allocate({2}, no_idx, kTwo, cfg16(), 1).error.find("ALIYUN_COM_GPU_MEM_IDX is missing"),
            std::string::npos);
  EXPECT_EQ(gpushare_allocate({2}, with_idx("+1"), kTwo, cfg16(), 1).gpu_index, 1);  // Atoi takes a sign
}

TEST(DevicePlugin, CgpuIsolationAndMalformedInput) {
  DevicePluginConfig c = cfg16();
  c.disable_cgpu_isolation = true;
  const std::vector<DevicePluginPod> pods = {pod("p", 2, assumed("1", "1"))};
  EXPECT_EQ(gpushare_allocate({2}, pods, kTwo, c, 1).container_envs[0].at("CGPU_DISABLE"), "true");
  EXPECT_EQ(gpushare_allocate({5}, pods, kTwo, c, 1).container_envs[0].count("CGPU_DISABLE"), 0u);  // error env
  EXPECT_THROW(gpushare_allocate({}, pods, kTwo, cfg16(), 1), kt::InvalidArgument);
  EXPECT_THROW(gpushare_allocate({-1}, pods, kTwo, cfg16(), 1), kt::InvalidArgument);
  EXPECT_THROW(gpushare_allocate({2}, pods, {{"GPU-a", 0}, {"GPU-b", 0}}, cfg16(), 1), kt::InvalidArgument);
  EXPECT_THROW(gpushare_allocate({2}, pods, {{"GPU-a", 0}, {"GPU-a", 1}}, cfg16(), 1), kt::InvalidArgument);
  DevicePluginConfig kib = cfg16();
  kib.memory_unit = "KiB";
  EXPECT_THROW(gpushare_allocate({2}, pods, kTwo, kib, 1), kt::InvalidArgument);
  // now_ns = 0: the system clock goes into the patch.
  const auto d = gpushare_allocate({2}, pods, kTwo, cfg16(), 0);
  EXPECT_GT(std::stoull(d.pod_patch.at("ALIYUN_COM_GPU_MEM_ASSUME_TIME")), 1600000000000000000ULL);
}

TEST(DevicePlugin, JsonFormWithKubePodsAndDeviceIds) {
  nlohmann::json v1pod = {
      {"metadata",
       {{"name", "train"}, {"namespace", "ml"}, {"uid", "u-1"},
        {"annotations",
         {{"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"}, {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "42"},
          {"ALIYUN_COM_GPU_MEM_IDX", "1"}}}}},
      {"spec",
       {{"containers",
         {{{"resources", {{"limits", {{"aliyun.com/gpu-mem", "2"}}}}}},
          {{"resources", {{"limits", {{"aliyun.com/gpu-mem", 1.5}}}}}},  // Value() rounds up: 2
          {{"resources", {{"requests", {{"aliyun.com/gpu-mem", "7"}}}}}}}}}}};  // requests are not read
  EXPECT_EQ(device_plugin_pod_from_json(v1pod.dump()).gpu_mem, 4);
  nlohmann::json req = {{"container_requests", {nlohmann::json::array({"GPU-b-_-0", "GPU-b-_-1"}), 2}},
                        {"pods", {v1pod, {{"name", "other"}, {"gpu_mem", 4}, {"annotations", assumed("43", "0")}}}},
                        {"devices", {{{"uuid", "GPU-a"}, {"index", 0}}, {{"uuid", "GPU-b"}, {"index", 1}}}},
                        {"gpu_memory_per_device", 16},
                        {"now_ns", 99}};
  auto out = nlohmann::json::parse(gpushare_allocate_json(req.dump()));
  EXPECT_EQ(out["ok"], true);
  EXPECT_EQ(out["path"], "assumed_pod");
  EXPECT_EQ(out["pod_index"], 0);
  EXPECT_EQ(out["pod"]["name"], "train");
  EXPECT_EQ(out["pod"]["uid"], "u-1");
  EXPECT_EQ(out["gpu_index"], 1);
  EXPECT_EQ(out["device_uuid"], "GPU-b");
  EXPECT_EQ(out["container_envs"][0]["ALIYUN_COM_GPU_MEM_CONTAINER"], "2");
  EXPECT_EQ(out["container_envs"][1]["ALIYUN_COM_GPU_MEM_POD"], "4");
  EXPECT_EQ(out["pod_patch"]["ALIYUN_COM_GPU_MEM_ASSUME_TIME"], "99");
  // The explicit form may take the request from the extender's ALIYUN_COM_GPU_MEM_POD annotation.
  auto a = assumed("1", "0");
  a["ALIYUN_COM_GPU_MEM_POD"] = "3";
  req["pods"] = {{{"name", "q"}, {"annotations", a}}};
  req["container_requests"] = {3};
  out = nlohmann::json::parse(gpushare_allocate_json(req.dump()));
  EXPECT_EQ(out["pod"]["name"], "q");
  EXPECT_EQ(out["pod"]["namespace"], "default");
  // Malformed input names the field.
  auto err = [](const nlohmann::json& j) {
    try {
      (void)gpushare_allocate_json(j.dump());
    } catch (const kt::InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  nlohmann::json bad = req;
  bad["colour"] = 1;
  EXPECT_NE(err(bad).find("'colour'"), std::string::npos);
  bad = req;
  bad["container_requests"] = {"two"};
  EXPECT_NE(err(bad).find("container_requests[0]"), std::string::npos);
  bad = req;
  bad["devices"] = {{{"uuid", "GPU-a"}}};
  EXPECT_NE(err(bad).find("devices[0]"), std::string::npos);
  bad = req;
  bad["pods"] = {{{"name", "q"}, {"gpu_mem", -2}}};
  EXPECT_NE(err(bad).find("gpu_mem"), std::string::npos);
  bad = req;
  bad["pods"] = {{{"name", "q"}, {"annotation", {}}}};
  EXPECT_NE(err(bad).find("'annotation' is unknown"), std::string::npos);
  EXPECT_THROW((void)gpushare_allocate_json("{"), kt::InvalidArgument);
}

TEST(DevicePlugin, RoundTripWithExtenderBind) {
  // The extender binds a gpu-mem pod and writes gpushare's annotations; the device plugin decision made from them
  // hands the container the GPU the extender chose.
  Cluster c;
  NodeSpec n;
  n.name = "node-a";
  n.cpu_milli = 32000;
  n.memory_mib = 65536;
  n.num_gpus = 2;
  n.gpu_memory_total_mib = 32 * 1024;  // gpushare node: aliyun.com/gpu-mem = 32, gpu-count = 2
  n.gpu_memory_unit_mib = 1024;
  n.model = "T4";
  c.add_node(n);
  auto alloc = std::make_shared<Allocator>(c, make_policy("gpushare"));
  Extender ex(alloc);
  std::vector<DevicePluginPod> pods;
  for (const std::string name : {"p0", "p1", "p2"}) {
    const std::string units = name == "p1" ? "10" : "6";
    nlohmann::json pj = {{"metadata", {{"name", name}, {"namespace", "ml"}}},
                         {"spec", {{"containers", {{{"resources", {{"limits", {{"aliyun.com/gpu-mem", units}}}}}}}}}}};
    auto f = nlohmann::json::parse(ex.filter(nlohmann::json{{"Pod", pj}, {"NodeNames", {"node-a"}}}.dump()));
    ASSERT_EQ(f["NodeNames"].size(), 1u);
    auto b = nlohmann::json::parse(
        ex.bind(nlohmann::json{{"PodName", name}, {"PodNamespace", "ml"}, {"Node", "node-a"}}.dump()));
    ASSERT_EQ(b["Error"], "");
    pj["metadata"]["annotations"] = b["Annotations"];
    pods.push_back(device_plugin_pod_from_json(pj.dump()));
  }
  // gpushare's GPU rule: p0 (6) -> GPU0, p1 (10) -> GPU0 (least free that fits: 10 left), p2 (6) -> GPU1.
  EXPECT_EQ(pods[0].annotations.at("ALIYUN_COM_GPU_MEM_IDX"), "0");
  EXPECT_EQ(pods[1].annotations.at("ALIYUN_COM_GPU_MEM_IDX"), "0");
  EXPECT_EQ(pods[2].annotations.at("ALIYUN_COM_GPU_MEM_IDX"), "1");
  EXPECT_EQ(pods[0].annotations.at("ALIYUN_COM_GPU_MEM_DEV"), "16");
  DevicePluginConfig cfg;
  cfg.gpu_memory_per_device = 16;
  const std::vector<DevicePluginDevice> devs = {{"GPU-0", 0}, {"GPU-1", 1}};
  // kubelet starts the 10-unit pod: it is the only one asking 10.
  AllocateDecision d = gpushare_allocate({10}, pods, devs, cfg, 5);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_EQ(d.pod, 1);
  EXPECT_EQ(d.gpu_index, 0);
  // Two pods ask 6: the older assume time (p0, bound first) goes first, then p2 once p0 is assigned.
  d = gpushare_allocate({6}, pods, devs, cfg, 6);
  EXPECT_EQ(d.pod, 0);
  EXPECT_EQ(d.gpu_index, 0);
  for (const auto& [k, v] : d.pod_patch) pods[0].annotations[k] = v;
  d = gpushare_allocate({6}, pods, devs, cfg, 7);
  EXPECT_EQ(d.pod, 2);
  EXPECT_EQ(d.gpu_index, 1);
  EXPECT_EQ(d.container_envs[0].at("NVIDIA_VISIBLE_DEVICES"), "1");
}
