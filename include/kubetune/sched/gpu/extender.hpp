// Kubernetes scheduler-extender protocol (filter / prioritize / bind JSON) over the allocator, gpushare-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/request.hpp"

namespace kubetune::sched::gpu {

/// gpushare-scheduler-extender names (AliyunContainerService/gpushare-scheduler-extender, pkg/utils/const.go).
inline constexpr const char* kGpuMemResource = "aliyun.com/gpu-mem";
inline constexpr const char* kGpuCountResource = "aliyun.com/gpu-count";
inline constexpr const char* kAnnoGpuIndex = "ALIYUN_COM_GPU_MEM_IDX";
inline constexpr const char* kAnnoGpuMemPod = "ALIYUN_COM_GPU_MEM_POD";
inline constexpr const char* kAnnoGpuMemDev = "ALIYUN_COM_GPU_MEM_DEV";
inline constexpr const char* kAnnoAssigned = "ALIYUN_COM_GPU_MEM_ASSIGNED";
inline constexpr const char* kAnnoAssumeTime = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";

struct ExtenderConfig {
  std::int64_t gpu_mem_unit_mib = 1024;  // one unit of aliyun.com/gpu-mem (gpushare reports GiB by default)
  int max_priority = 10;                 // Kubernetes MaxExtenderPriority
};

/// Parses a v1.Pod JSON into a Request. Recognised limits/requests: cpu, memory, aliyun.com/gpu-mem,
/// nvidia.com/gpu (whole GPUs), kubetune.io/gpu-milli (fraction), kubetune.io/gpu-compute (compute share for
/// gpu-mem pods), nvidia.com/mig-<profile>. Annotations: kubetune.io/gpu-models ("T4|V100M32"), kubetune.io/gang.
Request request_from_pod_json(const std::string& pod_json, const ExtenderConfig& cfg = {});
/// Kubernetes quantities: "500m", "2", "1.5", "4Gi", "512Mi", "1G", "100M", "1000k".
double parse_quantity(const std::string& q);

/// Serves ExtenderArgs -> ExtenderFilterResult / HostPriorityList and ExtenderBindingArgs -> ExtenderBindingResult.
/// Thread-safe (the allocator is; the pod cache has its own mutex).
class Extender {
 public:
  explicit Extender(std::shared_ptr<Allocator> alloc, ExtenderConfig cfg = {});
  std::string filter(const std::string& extender_args_json);
  std::string prioritize(const std::string& extender_args_json);
  /// Places the cached pod on the node; the result carries the gpushare annotations in "Annotations".
  std::string bind(const std::string& binding_args_json);
  /// Pod deleted: {"PodName","PodNamespace"} -> {"Error": ""}.
  std::string release(const std::string& pod_ref_json);
  Allocator& allocator() { return *alloc_; }

 private:
  std::shared_ptr<Allocator> alloc_;
  ExtenderConfig cfg_;
  std::mutex mu_;
  std::map<std::string, Request> pods_;  // "namespace/name" -> request seen by filter
};

/// JSON helpers shared by the C API and bindings.
Request request_from_json(const std::string& json);
std::string placement_to_json(const Placement& p);

}  // namespace kubetune::sched::gpu
