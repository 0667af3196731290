// The device-plugin half of gpushare: at Allocate, which pending pod the kubelet is starting, which GPU it gets
// and which environment variables its containers see -- as a pure function of the pod annotations the extender
// wrote, the requested units and the node's devices.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kubetune::sched::gpu {

/// Names of gpushare-device-plugin (AliyunContainerService/gpushare-device-plugin, pkg/gpu/nvidia/const.go).
inline constexpr const char* kEnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES";
inline constexpr const char* kEnvGpuMemIdx = "ALIYUN_COM_GPU_MEM_IDX";
inline constexpr const char* kEnvGpuMemPod = "ALIYUN_COM_GPU_MEM_POD";
inline constexpr const char* kEnvGpuMemContainer = "ALIYUN_COM_GPU_MEM_CONTAINER";
inline constexpr const char* kEnvGpuMemDev = "ALIYUN_COM_GPU_MEM_DEV";
inline constexpr const char* kEnvCgpuDisable = "CGPU_DISABLE";
inline constexpr const char* kAnnoGpuMemAssigned = "ALIYUN_COM_GPU_MEM_ASSIGNED";
inline constexpr const char* kAnnoGpuMemAssumeTime = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";

/// A pending pod on the node, as the device plugin sees it.
struct DevicePluginPod {
  std::string name;
  std::string ns = "default";
  std::string uid;
  std::map<std::string, std::string> annotations;
  /// aliyun.com/gpu-mem of the pod in device-plugin units: the sum over its containers' limits (gpushare's
  /// getGPUMemoryFromPodResource; Quantity.Value() rounds up).
  std::int64_t gpu_mem = 0;
};

/// One physical GPU of the node (the plugin's device-name map: NVML UUID -> /dev/nvidiaN index).
struct DevicePluginDevice {
  std::string uuid;
  int index = 0;
};

struct DevicePluginConfig {
  /// ALIYUN_COM_GPU_MEM_DEV: memory of one GPU in units (gpushare takes the first device's and uses it for all).
  std::int64_t gpu_memory_per_device = 0;
  std::string memory_unit = "GiB";        // gpushare's --memory-unit: "GiB" or "MiB" (only in the error marker)
  bool disable_cgpu_isolation = false;    // node label cgpu.disable.isolation=true -> CGPU_DISABLE=true
};

enum class AllocatePath {
  kAssumedPod,    // the oldest matching assumed pod; its ALIYUN_COM_GPU_MEM_IDX names the GPU
  kSingleDevice,  // no matching pod but the node has one GPU: gpushare uses it directly
  kError,         // gpushare answers with its error environment (the container starts without a usable GPU)
};
const char* to_string(AllocatePath p) noexcept;

struct AllocateDecision {
  bool ok = false;
  AllocatePath path = AllocatePath::kError;
  std::string error;           // why not (empty when ok)
  int pod = -1;                // index into the given pods of the pod chosen (-1: none)
  int gpu_index = -1;          // device index given to the containers (-1 on error)
  std::string device_uuid;     // that device's UUID
  std::int64_t pod_request = 0;  // units asked by this Allocate call (sum over its containers)
  /// Environment of each container request, in order.
  std::vector<std::map<std::string, std::string>> container_envs;
  /// Annotations the plugin then patches onto the chosen pod (kAssumedPod only): ASSIGNED=true and a new
  /// ASSUME_TIME (gpushare's patchPodAnnotationSpecAssigned writes the current time into ASSUME_TIME).
  std::map<std::string, std::string> pod_patch;
};

/// gpushare's candidate rule (podmanager.go getCandidatePods / podutils.go isGPUMemoryAssumedPod): a pod asks for
/// aliyun.com/gpu-mem > 0, carries ALIYUN_COM_GPU_MEM_ASSUME_TIME, and ALIYUN_COM_GPU_MEM_ASSIGNED == "false".
bool gpushare_assumed_pod(const DevicePluginPod& pod);
/// ALIYUN_COM_GPU_MEM_ASSUME_TIME as gpushare reads it (strconv.ParseUint, base 10); 0 when absent or unparsable.
std::uint64_t gpushare_assume_time(const DevicePluginPod& pod) noexcept;
/// Indices of the candidate pods, oldest assume time first (ties keep the given order; gpushare's sort.Sort is not
/// stable, so it leaves ties unspecified).
std::vector<int> gpushare_candidates(const std::vector<DevicePluginPod>& pods);

/// The Allocate decision (allocate.go): the pod request is the sum of `container_units` (the number of fake device
/// IDs kubelet passed per container). Among the candidates, oldest first, the first whose gpu_mem equals the
/// request is the pod being started; its ALIYUN_COM_GPU_MEM_IDX (strconv.Atoi) must name a device of the node.
/// Each container then gets NVIDIA_VISIBLE_DEVICES = that index (gpushare since #50; before, the UUID),
/// ALIYUN_COM_GPU_MEM_IDX = index, _POD = request, _CONTAINER = its own units, _DEV = gpu_memory_per_device
/// (+ CGPU_DISABLE=true when isolation is disabled). Without a matching pod, a node with exactly one GPU gets that
/// GPU (NVIDIA_VISIBLE_DEVICES = its UUID, as gpushare does there). Otherwise, or when the index is missing, bad or
/// names no device, the decision is gpushare's error response: NVIDIA_VISIBLE_DEVICES =
/// "no-gpu-has-<request><unit>-to-run", _IDX = -1, with `error` saying why. `now_ns` is the time written into the
/// pod patch (0 = the system clock). Throws InvalidArgument for malformed input (no container, negative units,
/// duplicate device index or UUID, bad unit).
AllocateDecision gpushare_allocate(const std::vector<std::int64_t>& container_units,
                                   const std::vector<DevicePluginPod>& pods,
                                   const std::vector<DevicePluginDevice>& devices, const DevicePluginConfig& cfg,
                                   std::uint64_t now_ns = 0);

/// JSON form (C API and Python):
///   {"container_requests": [2, ["GPU-a-_-0", "GPU-a-_-1"], ...]   (units, or the fake device IDs of a container),
///    "pods": [ v1.Pod objects, or {"name","namespace","uid","annotations":{...},"gpu_mem"} ],
///    "devices": [{"uuid": "GPU-...", "index": 0}, ...], "gpu_memory_per_device": 16, "memory_unit": "GiB",
///    "disable_cgpu_isolation": false, "now_ns": 0}
/// -> {"ok","path","error","pod_index","pod":{"name","namespace","uid"}|null,"gpu_index","device_uuid",
///     "pod_request","container_envs":[{...}],"pod_patch":{...}}
std::string gpushare_allocate_json(const std::string& request_json);
/// A v1.Pod JSON object as the device plugin reads it (metadata name / namespace / uid / annotations; gpu_mem =
/// sum of the containers' aliyun.com/gpu-mem limits, rounded up).
DevicePluginPod device_plugin_pod_from_json(const std::string& pod_json);

}  // namespace kubetune::sched::gpu
