// Kubernetes scheduler extender (kube-scheduler's extender v1 protocol: filter, prioritize, bind, preempt) over the
// allocator, gpushare-compatible, with its cluster state rebuilt from and kept in step with the Kubernetes API.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/request.hpp"

namespace kubetune::sched::gpu {

/// gpushare-scheduler-extender names (AliyunContainerService/gpushare-scheduler-extender, pkg/utils/const.go).
inline constexpr const char* kGpuMemResource = "aliyun.com/gpu-mem";
inline constexpr const char* kGpuCountResource = "aliyun.com/gpu-count";
/// GPU compute share in percent of one GPU (Alibaba ACK cGPU's resource name); kubetune.io/gpu-compute (milli)
/// is the same thing in kubetune's unit.
inline constexpr const char* kGpuCoreResource = "aliyun.com/gpu-core.percentage";
inline constexpr const char* kAnnoGpuIndex = "ALIYUN_COM_GPU_MEM_IDX";
inline constexpr const char* kAnnoGpuMemPod = "ALIYUN_COM_GPU_MEM_POD";
inline constexpr const char* kAnnoGpuMemDev = "ALIYUN_COM_GPU_MEM_DEV";
inline constexpr const char* kAnnoAssigned = "ALIYUN_COM_GPU_MEM_ASSIGNED";
inline constexpr const char* kAnnoAssumeTime = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";
inline constexpr const char* kAnnoMigStart = "kubetune.io/mig-start";
/// Node annotation naming GPUs (indices, comma-separated) that take no new pods (set by a health agent or an
/// operator; see docs/gpu.md).
inline constexpr const char* kAnnoUnhealthyGpus = "kubetune.io/unhealthy-gpus";

struct ExtenderConfig {
  std::int64_t gpu_mem_unit_mib = 1024;  // one unit of aliyun.com/gpu-mem (gpushare reports GiB by default)
  int max_priority = 10;                 // kube-scheduler's extenderv1.MaxExtenderPriority
  /// A pod filtered but never bound is forgotten after this long (bind then fetches it from the API server).
  double pending_ttl_s = 300.0;
  std::size_t max_pending = 100000;      // filtered-not-bound pods kept at most (oldest forgotten first)
  /// On a resync, a pod this extender bound that the API server's list does not show bound yet keeps its GPUs for
  /// this long after its bind (the list may predate the Binding; the watch then confirms it).
  double assume_grace_s = 60.0;
  /// Largest request body the protocol handlers parse, and deepest JSON nesting (a v1.Pod nests about 10 deep).
  std::size_t max_body_bytes = 64u << 20;
  int max_json_depth = 64;

  void validate() const;  // throws InvalidArgument naming the field
};

/// The Kubernetes API writes (and the one read) that binding needs. The extender process implements it with a
/// Kubernetes client (kubetune.sched.kube); every method throws on failure (any exception: the bind rolls back).
class KubeWriter {
 public:
  virtual ~KubeWriter() = default;
  /// v1.Pod JSON of namespace/name (bind of a pod this extender has not filtered, e.g. after a restart).
  virtual std::string get_pod(const std::string& ns, const std::string& name) = 0;
  /// Merge-patches metadata.annotations of the pod (uid: precondition; empty = none).
  virtual void patch_pod_annotations(const std::string& ns, const std::string& name, const std::string& uid,
                                     const std::map<std::string, std::string>& annotations) = 0;
  /// Creates the pod's v1.Binding to node (POST .../pods/<name>/binding).
  virtual void create_binding(const std::string& ns, const std::string& name, const std::string& uid,
                              const std::string& node) = 0;
};

/// An HTTP answer of a protocol handler: status 200 with the protocol's result (whose Error field carries a
/// failure kube-scheduler should see), 400 for a body that is not the verb's JSON, 404 for an unknown verb, 413 for
/// a body over max_body_bytes.
struct ExtenderReply {
  int status = 200;
  std::string body;
};

/// Counters behind the extender's Prometheus metrics (kubetune_extender_*).
struct ExtenderCounters {
  std::int64_t filter = 0, prioritize = 0, bind = 0, preempt = 0, bad_requests = 0;
  std::int64_t bind_ok = 0, bind_failed = 0, rollbacks = 0, bind_conflicts = 0;
  std::int64_t releases = 0, pin_conflicts = 0, syncs = 0, node_events = 0, pod_events = 0, rebuilds = 0;
  std::int64_t pending_expired = 0, bad_objects = 0;

  /// f(name, value) for every counter, in declaration order (the bindings' dict keys).
  template <class F>
  void each(F&& f) const {
    for (const auto& [name, v] : {std::pair{"filter", filter}, {"prioritize", prioritize}, {"bind", bind},
                                  {"preempt", preempt}, {"bad_requests", bad_requests}, {"bind_ok", bind_ok},
                                  {"bind_failed", bind_failed}, {"rollbacks", rollbacks},
                                  {"bind_conflicts", bind_conflicts}, {"releases", releases},
                                  {"pin_conflicts", pin_conflicts}, {"syncs", syncs}, {"node_events", node_events},
                                  {"pod_events", pod_events}, {"rebuilds", rebuilds},
                                  {"pending_expired", pending_expired}, {"bad_objects", bad_objects}})
      f(name, v);
  }
};

struct ExtenderStatus {
  bool ready = false;     // a first sync happened (or the extender was built over a fixed cluster)
  int nodes = 0;
  std::int64_t gpus = 0;
  std::int64_t placements = 0;
  std::int64_t pending = 0;  // filtered, not bound
  std::int64_t binding = 0;  // bind in flight (API writes not finished)
  AllocatorStats alloc;
  ExtenderCounters counters;
};

/// Parses a v1.Pod JSON into a Request. Recognised limits/requests: cpu, memory, aliyun.com/gpu-mem,
/// aliyun.com/gpu-core.percentage (compute share in %), nvidia.com/gpu (whole GPUs), kubetune.io/gpu-milli
/// (fraction), kubetune.io/gpu-compute (compute share for gpu-mem pods, milli), nvidia.com/mig-<profile>.
/// Annotations: kubetune.io/gpu-models ("T4|V100M32"), kubetune.io/gang. Throws InvalidArgument naming the field.
Request request_from_pod_json(const std::string& pod_json, const ExtenderConfig& cfg = {});
/// Kubernetes quantities: "500m", "2", "1.5", "4Gi", "512Mi", "1G", "100M", "1000k".
double parse_quantity(const std::string& q);

/// kube-scheduler's extender v1 verbs over an allocator, plus the cluster state kept from the Kubernetes API.
///
/// Thread-safe. Decisions: filter answers from the allocator's current state (FailedNodes: does not fit now;
/// FailedAndUnresolvableNodes: would not fit on the empty node either, so preemption cannot help); bind is one
/// atomic claim-and-place per pod (a second bind of the same pod fails with a conflict, never a second
/// placement), then the gpushare annotations and the Binding are written through the KubeWriter, and any failure
/// there releases the GPUs again. Node events rebuild the allocator when a node is added, removed or resized
/// (every placement kept, pinned to its GPUs); pod events pin pods bound elsewhere to the GPUs their annotations
/// name and release pods deleted, Succeeded or Failed.
class Extender {
 public:
  /// Over a fixed cluster (library use; node events still add, remove and resize nodes).
  explicit Extender(std::shared_ptr<Allocator> alloc, ExtenderConfig cfg = {});
  /// Empty until the first sync() (the deployable extender; not ready before).
  Extender(std::shared_ptr<const Policy> policy, ExtenderConfig cfg, AllocatorOptions opt = {});
  ~Extender();

  void set_writer(std::shared_ptr<KubeWriter> writer);

  // ---- protocol: JSON body in, JSON body out (never throws for bad input: 4xx or the Error field)
  /// verb: filter, prioritize, bind, preempt, release. Counts the request in the metrics.
  ExtenderReply handle(std::string_view verb, std::string_view body);
  std::string filter(const std::string& extender_args_json);        // ExtenderArgs -> ExtenderFilterResult
  std::string prioritize(const std::string& extender_args_json);    // ExtenderArgs -> HostPriorityList
  std::string bind(const std::string& binding_args_json);           // ExtenderBindingArgs -> ExtenderBindingResult
  std::string preempt(const std::string& preemption_args_json);     // ExtenderPreemptionArgs -> ..Result
  /// Pod deleted (library use without a watch): {"PodName","PodNamespace"} -> {"Error": ""}.
  std::string release(const std::string& pod_ref_json);

  // ---- state from the Kubernetes API
  /// Full (re)build from a v1.NodeList and a v1.PodList: nodes replaced, every pod bound to a known node that
  /// asks for GPUs and is not Succeeded/Failed placed (gpushare-annotated ones pinned to their recorded GPUs),
  /// every other placement released (except binds in flight or within assume_grace_s of their bind).
  void sync(std::string_view node_list_json, std::string_view pod_list_json);
  /// A watch event on a node: type ADDED, MODIFIED or DELETED; object a v1.Node.
  void node_event(std::string_view type, std::string_view node_json);
  /// A watch event on a pod: type ADDED, MODIFIED or DELETED; object a v1.Pod.
  void pod_event(std::string_view type, std::string_view pod_json);

  ExtenderStatus status() const;
  bool ready() const noexcept { return ready_.load(); }
  /// Prometheus text exposition of the extender's gauges and counters.
  std::string metrics_text() const;
  /// The current allocator (replaced when nodes change: do not keep it across node events).
  std::shared_ptr<Allocator> allocator() const;
  const ExtenderConfig& config() const noexcept { return cfg_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  ExtenderConfig cfg_;
  std::atomic<bool> ready_{false};
};

/// JSON helpers shared by the C API and bindings.
Request request_from_json(const std::string& json);
std::string placement_to_json(const Placement& p);

}  // namespace kubetune::sched::gpu
