// gpushare's device-plugin Allocate decision as a pure function, and its JSON form.
//
// Facts (behaviour, names, formats) from AliyunContainerService/gpushare-device-plugin at 45fb8b8 (2022-04):
// pkg/gpu/nvidia/allocate.go (Allocate, buildErrResponse), podmanager.go (getCandidatePods, makePodOrderdByAge),
// podutils.go (isGPUMemoryAssumedPod, getGPUIDFromPodAnnotation, getAssumeTimeFromPodAnnotation,
// getGPUMemoryFromPodResource, patchPodAnnotationSpecAssigned), const.go (names). The code here is kubetune's.
#include "kubetune/sched/gpu/device_plugin.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/extender.hpp"

namespace kubetune::sched::gpu {

using nlohmann::json;

namespace {
std::string who(const DevicePluginPod& p) { return (p.ns.empty() ? "default" : p.ns) + "/" + p.name; }

/// strconv.Atoi semantics: optional sign, decimal digits only, fits in int64 (Go's int on 64-bit).
bool go_atoi(const std::string& s, std::int64_t* out) {
  std::size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i == s.size()) return false;
  std::int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    const int d = s[i] - '0';
    if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = neg ? -v : v;
  return true;
}

/// strconv.ParseUint(s, 10, 64): digits only, no sign, fits in uint64.
bool go_parse_uint(const std::string& s, std::uint64_t* out) {
  if (s.empty()) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

const std::string* anno(const DevicePluginPod& p, const char* key) {
  auto it = p.annotations.find(key);
  return it == p.annotations.end() ? nullptr : &it->second;
}

std::map<std::string, std::string> envs(const std::string& visible, std::int64_t idx, std::int64_t pod_req,
                                        std::int64_t container_req, std::int64_t dev_mem) {
  return {{kEnvVisibleDevices, visible},
          {kEnvGpuMemIdx, std::to_string(idx)},
          {kEnvGpuMemPod, std::to_string(pod_req)},
          {kEnvGpuMemContainer, std::to_string(container_req)},
          {kEnvGpuMemDev, std::to_string(dev_mem)}};
}

json get_object(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return json::object();
  KT_CHECK(j[key].is_object(), InvalidArgument, "field '", key, "' must be an object");
  return j[key];
}

std::string get_string(const json& j, const char* key, const std::string& dflt, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  KT_CHECK(j[key].is_string(), InvalidArgument, where, ": field '", key, "' must be a string, got ", j[key].dump());
  return j[key].get<std::string>();
}

std::map<std::string, std::string> annotations_of(const json& meta, const std::string& where) {
  std::map<std::string, std::string> out;
  const json a = get_object(meta, "annotations");
  for (auto it = a.begin(); it != a.end(); ++it) {
    KT_CHECK(it.value().is_string(), InvalidArgument, where, ": annotation '", it.key(), "' must be a string, got ",
             it.value().dump());
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

/// Quantity.Value(): the value rounded up to an integer.
std::int64_t quantity_value(const json& v, const std::string& where) {
  std::string q;
  if (v.is_string()) q = v.get<std::string>();
  else if (v.is_number()) q = v.dump();
  else KT_THROW(InvalidArgument, where, ": aliyun.com/gpu-mem limit ", v.dump(), " must be a quantity");
  const double x = parse_quantity(q);
  KT_CHECK(x < 9.0e15, InvalidArgument, where, ": aliyun.com/gpu-mem limit '", q, "' is too large");
  return static_cast<std::int64_t>(std::ceil(x));
}

DevicePluginPod pod_from(const json& p, std::size_t k) {
  const std::string where = "pods[" + std::to_string(k) + "]";
  KT_CHECK(p.is_object(), InvalidArgument, where, " must be an object");
  DevicePluginPod out;
  if (p.contains("metadata")) {  // a v1.Pod
    const json meta = get_object(p, "metadata");
    out.name = get_string(meta, "name", "", where + ".metadata");
    out.ns = get_string(meta, "namespace", "default", where + ".metadata");
    out.uid = get_string(meta, "uid", "", where + ".metadata");
    out.annotations = annotations_of(meta, where + ".metadata");
    const json spec = get_object(p, "spec");
    const json containers = spec.contains("containers") ? spec["containers"] : json::array();
    KT_CHECK(containers.is_array(), InvalidArgument, where, ".spec.containers must be an array");
    for (const json& c : containers) {  // limits only, containers only (not init containers), as gpushare
      const json lim = get_object(get_object(c, "resources"), "limits");
      if (lim.contains(kGpuMemResource)) out.gpu_mem += quantity_value(lim[kGpuMemResource], where);
    }
    return out;
  }
  static const char* kKnown[] = {"name", "namespace", "uid", "annotations", "gpu_mem"};
  for (auto it = p.begin(); it != p.end(); ++it) {
    bool ok = false;
    for (const char* key : kKnown) ok |= it.key() == key;
    KT_CHECK(ok, InvalidArgument, where, ": field '", it.key(), "' is unknown (name, namespace, uid, annotations, "
             "gpu_mem; or give a v1.Pod with metadata)");
  }
  out.name = get_string(p, "name", "", where);
  out.ns = get_string(p, "namespace", "default", where);
  out.uid = get_string(p, "uid", "", where);
  out.annotations = annotations_of(p, where);
  if (p.contains("gpu_mem")) {
    KT_CHECK(p["gpu_mem"].is_number_integer() && p["gpu_mem"].get<std::int64_t>() >= 0, InvalidArgument, where,
             ": field 'gpu_mem' = ", p["gpu_mem"].dump(), " must be an integer >= 0");
    out.gpu_mem = p["gpu_mem"].get<std::int64_t>();
  } else if (auto a = out.annotations.find(kAnnoGpuMemPod); a != out.annotations.end()) {
    // kubetune convenience: the extender's ALIYUN_COM_GPU_MEM_POD annotation holds the pod's request.
    std::int64_t v = 0;
    KT_CHECK(go_atoi(a->second, &v) && v >= 0, InvalidArgument, where, ": annotation ", kAnnoGpuMemPod, " = '",
             a->second, "' is not a non-negative integer");
    out.gpu_mem = v;
  }
  return out;
}
}  // namespace

const char* to_string(AllocatePath p) noexcept {
  switch (p) {
    case AllocatePath::kAssumedPod: return "assumed_pod";
    case AllocatePath::kSingleDevice: return "single_device";
    case AllocatePath::kError: return "error";
  }
  return "error";
}

bool gpushare_assumed_pod(const DevicePluginPod& pod) {
  if (pod.gpu_mem <= 0) return false;
  if (!anno(pod, kAnnoGpuMemAssumeTime)) return false;
  const std::string* a = anno(pod, kAnnoGpuMemAssigned);
  return a != nullptr && *a == "false";
}

std::uint64_t gpushare_assume_time(const DevicePluginPod& pod) noexcept {
  const std::string* s = anno(pod, kAnnoGpuMemAssumeTime);
  std::uint64_t v = 0;
  if (s && go_parse_uint(*s, &v)) return v;
  return 0;
}

std::vector<int> gpushare_candidates(const std::vector<DevicePluginPod>& pods) {
  std::vector<int> idx;
  for (std::size_t i = 0; i < pods.size(); ++i)
    if (gpushare_assumed_pod(pods[i])) idx.push_back(static_cast<int>(i));
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    return gpushare_assume_time(pods[static_cast<std::size_t>(a)]) <
           gpushare_assume_time(pods[static_cast<std::size_t>(b)]);
  });
  return idx;
}

AllocateDecision gpushare_allocate(const std::vector<std::int64_t>& container_units,
                                   const std::vector<DevicePluginPod>& pods,
                                   const std::vector<DevicePluginDevice>& devices, const DevicePluginConfig& cfg,
                                   std::uint64_t now_ns) {
  KT_CHECK(!container_units.empty(), InvalidArgument, "container_requests must not be empty (kubelet sends one per "
           "container)");
  KT_CHECK(cfg.gpu_memory_per_device >= 0, InvalidArgument, "gpu_memory_per_device = ", cfg.gpu_memory_per_device,
           " must be >= 0");
  KT_CHECK(cfg.memory_unit == "GiB" || cfg.memory_unit == "MiB", InvalidArgument, "memory_unit = '", cfg.memory_unit,
           "' must be GiB or MiB (gpushare's --memory-unit)");
  std::int64_t req = 0;
  for (std::size_t i = 0; i < container_units.size(); ++i) {
    KT_CHECK(container_units[i] >= 0, InvalidArgument, "container_requests[", i, "] = ", container_units[i],
             " must be >= 0");
    req += container_units[i];
  }
  std::set<int> seen_idx;
  std::set<std::string> seen_uuid;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DevicePluginDevice& d = devices[i];
    KT_CHECK(!d.uuid.empty(), InvalidArgument, "devices[", i, "]: field 'uuid' must not be empty");
    KT_CHECK(d.index >= 0, InvalidArgument, "devices[", i, "]: index = ", d.index, " must be >= 0");
    KT_CHECK(seen_idx.insert(d.index).second, InvalidArgument, "devices[", i, "]: index ", d.index, " is duplicated");
    KT_CHECK(seen_uuid.insert(d.uuid).second, InvalidArgument, "devices[", i, "]: uuid '", d.uuid, "' is duplicated");
  }

  AllocateDecision out;
  out.pod_request = req;
  auto fail = [&](std::string why) {
    // buildErrResponse: a successful gRPC answer whose environment makes the container see no GPU.
    out.ok = false;
    out.path = AllocatePath::kError;
    out.error = std::move(why);
    out.gpu_index = -1;
    out.device_uuid.clear();
    out.pod_patch.clear();
    out.container_envs.clear();
    const std::string marker = "no-gpu-has-" + std::to_string(req) + cfg.memory_unit + "-to-run";
    for (std::int64_t u : container_units) out.container_envs.push_back(envs(marker, -1, req, u, cfg.gpu_memory_per_device));
    return out;
  };
  auto grant = [&](const std::string& visible, int index, const std::string& uuid) {
    out.ok = true;
    out.gpu_index = index;
    out.device_uuid = uuid;
    for (std::int64_t u : container_units) {
      auto e = envs(visible, index, req, u, cfg.gpu_memory_per_device);
      if (cfg.disable_cgpu_isolation) e[kEnvCgpuDisable] = "true";
      out.container_envs.push_back(std::move(e));
    }
  };

  // The first candidate, oldest assume time first, whose pod-level request equals this Allocate's request.
  const std::vector<int> cand = gpushare_candidates(pods);
  int chosen = -1;
  for (int i : cand)
    if (pods[static_cast<std::size_t>(i)].gpu_mem == req) {
      chosen = i;
      break;
    }

  if (chosen >= 0) {
    const DevicePluginPod& p = pods[static_cast<std::size_t>(chosen)];
    out.pod = chosen;
    const std::string* idx_s = anno(p, kAnnoGpuIndex);
    if (!idx_s) return fail("pod " + who(p) + ": annotation " + kAnnoGpuIndex + " is missing");
    std::int64_t idx = -1;
    if (!go_atoi(*idx_s, &idx)) return fail("pod " + who(p) + ": annotation " + kAnnoGpuIndex + " = '" + *idx_s +
                                            "' is not an integer");
    if (idx < 0) return fail("pod " + who(p) + ": annotation " + kAnnoGpuIndex + " = " + *idx_s + " is negative");
    const DevicePluginDevice* dev = nullptr;
    for (const DevicePluginDevice& d : devices)
      if (d.index == idx) dev = &d;
    if (!dev) {
      std::string have;
      for (const DevicePluginDevice& d : devices) have += (have.empty() ? "" : ", ") + std::to_string(d.index);
      return fail("pod " + who(p) + ": " + kAnnoGpuIndex + " = " + std::to_string(idx) +
                  " names no device on this node (device indices: " + (have.empty() ? "none" : have) + ")");
    }
    out.path = AllocatePath::kAssumedPod;
    grant(std::to_string(idx), static_cast<int>(idx), dev->uuid);
    if (now_ns == 0)
      now_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
    out.pod_patch = {{kAnnoGpuMemAssigned, "true"}, {kAnnoGpuMemAssumeTime, std::to_string(now_ns)}};
    return out;
  }
  if (devices.size() == 1) {
    out.path = AllocatePath::kSingleDevice;
    grant(devices[0].uuid, devices[0].index, devices[0].uuid);
    return out;
  }
  std::string seen;
  for (int i : cand) {
    const DevicePluginPod& p = pods[static_cast<std::size_t>(i)];
    seen += (seen.empty() ? "" : ", ") + who(p) + " asks " + std::to_string(p.gpu_mem);
  }
  return fail("no pending pod on this node is an assumed gpushare pod (" + std::string(kAnnoGpuMemAssigned) +
              "=false with an " + kAnnoGpuMemAssumeTime + ") asking aliyun.com/gpu-mem = " + std::to_string(req) +
              " (candidates: " + (seen.empty() ? "none" : seen) + "), and the node has " +
              std::to_string(devices.size()) + " GPUs, not 1");
}

DevicePluginPod device_plugin_pod_from_json(const std::string& pod_json) {
  json j;
  try {
    j = json::parse(pod_json);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, "pod JSON does not parse: ", e.what());
  }
  return pod_from(j, 0);
}

std::string gpushare_allocate_json(const std::string& request_json) {
  json j;
  try {
    j = json::parse(request_json);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, "device-plugin allocate request JSON does not parse: ", e.what());
  }
  KT_CHECK(j.is_object(), InvalidArgument, "device-plugin allocate request must be a JSON object");
  static const char* kKnown[] = {"container_requests", "pods", "devices", "gpu_memory_per_device", "memory_unit",
                                 "disable_cgpu_isolation", "now_ns"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : kKnown) ok |= it.key() == k;
    KT_CHECK(ok, InvalidArgument, "device-plugin allocate request: field '", it.key(), "' is unknown");
  }
  KT_CHECK(j.contains("container_requests") && j["container_requests"].is_array(), InvalidArgument,
           "field 'container_requests' must be an array (units or fake device IDs per container)");
  std::vector<std::int64_t> units;
  std::size_t k = 0;
  for (const json& c : j["container_requests"]) {
    if (c.is_number_integer()) {
      units.push_back(c.get<std::int64_t>());
    } else if (c.is_array()) {
      for (const json& id : c)
        KT_CHECK(id.is_string(), InvalidArgument, "container_requests[", k, "]: device IDs must be strings, got ",
                 id.dump());
      units.push_back(static_cast<std::int64_t>(c.size()));
    } else {
      KT_THROW(InvalidArgument, "container_requests[", k, "] = ", c.dump(),
               " must be an integer or an array of device IDs");
    }
    ++k;
  }
  std::vector<DevicePluginPod> pods;
  if (j.contains("pods")) {
    KT_CHECK(j["pods"].is_array(), InvalidArgument, "field 'pods' must be an array");
    k = 0;
    for (const json& p : j["pods"]) pods.push_back(pod_from(p, k++));
  }
  std::vector<DevicePluginDevice> devices;
  KT_CHECK(j.contains("devices") && j["devices"].is_array(), InvalidArgument,
           "field 'devices' must be an array of {\"uuid\", \"index\"}");
  k = 0;
  for (const json& d : j["devices"]) {
    KT_CHECK(d.is_object() && d.contains("uuid") && d["uuid"].is_string() && d.contains("index") &&
                 d["index"].is_number_integer(),
             InvalidArgument, "devices[", k, "] = ", d.dump(), " must be {\"uuid\": string, \"index\": integer}");
    const std::int64_t ix = d["index"].get<std::int64_t>();
    KT_CHECK(ix >= 0 && ix <= std::numeric_limits<int>::max(), InvalidArgument, "devices[", k, "]: index = ", ix,
             " must be >= 0");
    devices.push_back(DevicePluginDevice{d["uuid"].get<std::string>(), static_cast<int>(ix)});
    ++k;
  }
  DevicePluginConfig cfg;
  if (j.contains("gpu_memory_per_device")) {
    KT_CHECK(j["gpu_memory_per_device"].is_number_integer(), InvalidArgument, "field 'gpu_memory_per_device' = ",
             j["gpu_memory_per_device"].dump(), " must be an integer");
    cfg.gpu_memory_per_device = j["gpu_memory_per_device"].get<std::int64_t>();
  }
  cfg.memory_unit = get_string(j, "memory_unit", "GiB", "device-plugin allocate request");
  if (j.contains("disable_cgpu_isolation")) {
    KT_CHECK(j["disable_cgpu_isolation"].is_boolean(), InvalidArgument, "field 'disable_cgpu_isolation' must be a "
             "boolean");
    cfg.disable_cgpu_isolation = j["disable_cgpu_isolation"].get<bool>();
  }
  std::uint64_t now = 0;
  if (j.contains("now_ns")) {
    KT_CHECK(j["now_ns"].is_number_unsigned() || (j["now_ns"].is_number_integer() && j["now_ns"].get<std::int64_t>() >= 0),
             InvalidArgument, "field 'now_ns' = ", j["now_ns"].dump(), " must be an integer >= 0");
    now = j["now_ns"].get<std::uint64_t>();
  }
  const AllocateDecision d = gpushare_allocate(units, pods, devices, cfg, now);
  json out{{"ok", d.ok},
           {"path", to_string(d.path)},
           {"error", d.error},
           {"pod_index", d.pod},
           {"gpu_index", d.gpu_index},
           {"device_uuid", d.device_uuid},
           {"pod_request", d.pod_request},
           {"container_envs", d.container_envs},
           {"pod_patch", d.pod_patch}};
  if (d.pod >= 0) {
    const DevicePluginPod& p = pods[static_cast<std::size_t>(d.pod)];
    out["pod"] = {{"name", p.name}, {"namespace", p.ns}, {"uid", p.uid}};
  } else {
    out["pod"] = nullptr;
  }
  return out.dump();
}

}  // namespace kubetune::sched::gpu
