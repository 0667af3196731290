// libFuzzer target: arbitrary bytes as every extender request body and watch object. Bad input must end as a 4xx,
// an Error field or a kubetune::Error; a crash, hang, sanitizer report or broken allocator invariant is a finding.
// Run through scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/extender.hpp"
#include "kubetune/sched/gpu/policy.hpp"

namespace {
using namespace kubetune::sched::gpu;

/// Two gpushare nodes (2 x 16 GiB, 1 x 16 GiB) and one pod already bound to b's GPU 0, so preempt, release and
/// pod events meet a placement.
constexpr const char* kNodeList = R"({"kind":"NodeList","metadata":{"resourceVersion":"7"},"items":[
 {"kind":"Node","metadata":{"name":"a","labels":{"nvidia.com/gpu.product":"Tesla-T4"}},
  "status":{"capacity":{"cpu":"32","memory":"128Gi","aliyun.com/gpu-count":"2","aliyun.com/gpu-mem":"32"},
            "allocatable":{"cpu":"32","memory":"128Gi"}}},
 {"kind":"Node","metadata":{"name":"b"},
  "status":{"capacity":{"cpu":"16","memory":"64Gi","aliyun.com/gpu-count":"1","aliyun.com/gpu-mem":"16"},
            "allocatable":{"cpu":"16","memory":"64Gi"}}}]})";
constexpr const char* kPodList = R"({"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[
 {"kind":"Pod","metadata":{"name":"v","namespace":"ml","uid":"uid-v",
   "annotations":{"ALIYUN_COM_GPU_MEM_IDX":"0","ALIYUN_COM_GPU_MEM_POD":"8","ALIYUN_COM_GPU_MEM_DEV":"16",
                  "ALIYUN_COM_GPU_MEM_ASSIGNED":"true"}},
  "spec":{"nodeName":"b","containers":[{"name":"c","resources":{"limits":{"aliyun.com/gpu-mem":"8"}}}]},
  "status":{"phase":"Running"}}]})";

/// Accepts every write; get_pod answers with the input itself, so bind of an unfiltered pod parses fuzz bytes too.
struct EchoWriter : KubeWriter {
  std::string pod;
  std::string get_pod(const std::string&, const std::string&) override { return pod; }
  void patch_pod_annotations(const std::string&, const std::string&, const std::string&,
                             const std::map<std::string, std::string>&) override {}
  void create_binding(const std::string&, const std::string&, const std::string&, const std::string&) override {}
};

/// A fresh extender per input (state carried between inputs would make findings irreproducible); the policy and
/// the parsed-once cluster text are shared.
std::unique_ptr<Extender> fresh(const std::shared_ptr<EchoWriter>& writer) {
  static const std::shared_ptr<const Policy> policy = make_policy("best_fit");
  auto ex = std::make_unique<Extender>(policy, ExtenderConfig{});
  ex->set_writer(writer);
  ex->sync(kNodeList, kPodList);
  return ex;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  static const auto writer = std::make_shared<EchoWriter>();
  writer->pod = body;
  auto ex = fresh(writer);
  for (const char* verb : {"filter", "prioritize", "bind", "preempt", "release"}) ex->handle(verb, body);
  try {
    ex->pod_event("MODIFIED", body);
  } catch (const kubetune::Error&) {
  }
  try {
    ex->node_event("ADDED", body);
  } catch (const kubetune::Error&) {
  }
  ex->allocator()->check_invariants();
  return 0;
}
