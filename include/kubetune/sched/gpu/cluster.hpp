// Cluster model: nodes with CPU (milli), memory (MiB) and GPUs (memory MiB, compute share, model, MIG).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kubetune/sched/gpu/topology.hpp"

namespace kubetune::sched::gpu {

inline constexpr int kMilli = 1000;  // milli-GPU per GPU (FGD / gpushare fraction unit)

/// Static description of one node. All GPUs of a node share one model (as in Kubernetes node labels).
struct NodeSpec {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int num_gpus = 0;
  std::int64_t gpu_memory_mib = 0;  // per GPU; 0 = derive it (below) or unknown (memory tracks the fraction only)
  /// Node total GPU memory as gpushare advertises it (`aliyun.com/gpu-mem` capacity, converted to MiB). When
  /// `gpu_memory_mib` is 0 the per-GPU memory is derived from it as gpushare-scheduler-extender's NodeInfo does
  /// (pkg/cache/nodeinfo.go: total / `aliyun.com/gpu-count`, Go integer division in gpushare units): per GPU =
  /// floor(total / unit / gpus) * unit MiB; a remainder is not usable, as in gpushare. When both are given they
  /// must agree. 0 = not given.
  std::int64_t gpu_memory_total_mib = 0;
  std::int64_t gpu_memory_unit_mib = 1;  // gpushare's unit for that division (1024 for GiB, gpushare's default)
  std::string model;                // e.g. "V100M32"; empty for CPU-only nodes
  bool mig = false;                 // GPUs run in MIG mode (A100/H100 geometry)
  std::shared_ptr<const Topology> topology;  // null = all pairs PCIe
};

/// Per-GPU memory (MiB) assumed for the Alibaba trace models (public spec sheets; G1/G2/G3 undisclosed, 32 GiB
/// assumed). Unknown names give 0.
std::int64_t default_gpu_memory_mib(const std::string& model);

/// Per-GPU memory (MiB) of a gpushare node: floor(total_units / gpu_count) units (gpushare-scheduler-extender
/// NodeInfo). Throws InvalidArgument naming the values when gpu_count <= 0 with total_units > 0, when a value is
/// negative, or when the quotient is 0 (fewer units than GPUs).
std::int64_t gpushare_gpu_memory_mib(std::int64_t total_units, int gpu_count, std::int64_t unit_mib);

/// Label and resource names read from a Kubernetes Node (node_spec_from_kube_node).
inline constexpr const char* kLabelGpuProduct = "nvidia.com/gpu.product";  // NVIDIA GPU Feature Discovery
inline constexpr const char* kLabelGpuMemory = "nvidia.com/gpu.memory";    // GFD: per-GPU memory in MiB
inline constexpr const char* kLabelKtGpuModel = "kubetune.io/gpu-model";   // overrides the GFD product
inline constexpr const char* kLabelKtGpuMemory = "kubetune.io/gpu-memory-mib";  // overrides the GFD memory
inline constexpr const char* kLabelKtMig = "kubetune.io/mig";              // "true": GPUs run in MIG mode

/// A NodeSpec from a v1.Node JSON object: name; cpu and memory from status.allocatable (else capacity); GPU
/// count from capacity aliyun.com/gpu-count (gpushare's device plugin patches it), else nvidia.com/gpu; model from
/// the kubetune.io/gpu-model or nvidia.com/gpu.product label; per-GPU memory from the kubetune.io/gpu-memory-mib
/// or nvidia.com/gpu.memory label (MiB) and, when neither labels it, derived from capacity aliyun.com/gpu-mem (the
/// node total in units of `gpu_mem_unit_mib`) / gpu count, as gpushare does (gpushare_gpu_memory_mib). Throws
/// InvalidArgument naming the field (e.g. aliyun.com/gpu-mem without a GPU count).
NodeSpec node_spec_from_kube_node(const std::string& node_json, std::int64_t gpu_mem_unit_mib = 1024);

/// The set of nodes plus an interned GPU-model table (model names -> small ids used in bitmasks).
class Cluster {
 public:
  Cluster() = default;
  /// Adds a node, validating every field (errors name the node and field); returns its index. A MIG node's model
  /// must have a MIG profile table (mig_models()).
  int add_node(NodeSpec spec);
  int num_nodes() const noexcept { return static_cast<int>(nodes_.size()); }
  const NodeSpec& node(int i) const;
  const std::vector<NodeSpec>& nodes() const noexcept { return nodes_; }
  int find_node(const std::string& name) const;  // -1 if absent
  /// Interned id of a GPU model (0..63); -1 when the model is unknown to this cluster.
  int model_id(const std::string& model) const;
  int node_model_id(int i) const { return node_model_[static_cast<std::size_t>(i)]; }
  /// Index into mig_models() of a MIG node's GPU model; -1 for non-MIG nodes.
  int node_mig_model(int i) const { return node_mig_model_[static_cast<std::size_t>(i)]; }
  const std::vector<std::string>& models() const noexcept { return model_names_; }
  std::int64_t total_gpus() const noexcept { return total_gpus_; }
  std::int64_t total_gpu_milli() const noexcept { return total_gpus_ * kMilli; }
  std::int64_t total_cpu_milli() const noexcept { return total_cpu_; }

  /// JSON: {"nodes":[{"name","cpu_milli","memory_mib","gpus","gpu_memory_mib","gpu_memory_total_mib",
  ///                  "gpu_memory_unit_mib","model","mig","nvlink_islands" | "links":[[a,b,"nvlink"],...]}, ...]}
  static Cluster from_json(const std::string& json);
  std::string to_json() const;

 private:
  std::vector<NodeSpec> nodes_;
  std::vector<int> node_model_;
  std::vector<int> node_mig_model_;
  std::vector<std::string> model_names_;
  std::unordered_map<std::string, int> model_index_;
  std::unordered_map<std::string, int> name_index_;
  std::int64_t total_gpus_ = 0;
  std::int64_t total_cpu_ = 0;
};

}  // namespace kubetune::sched::gpu
