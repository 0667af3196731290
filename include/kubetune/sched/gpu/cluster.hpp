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
  std::int64_t gpu_memory_mib = 0;  // per GPU; 0 = unknown (memory then tracks the fraction only)
  std::string model;                // e.g. "V100M32"; empty for CPU-only nodes
  bool mig = false;                 // GPUs run in MIG mode (A100/H100 geometry)
  std::shared_ptr<const Topology> topology;  // null = all pairs PCIe
};

/// Per-GPU memory (MiB) assumed for the Alibaba trace models (public spec sheets; G1/G2/G3 undisclosed, 32 GiB
/// assumed). Unknown names give 0.
std::int64_t default_gpu_memory_mib(const std::string& model);

/// The set of nodes plus an interned GPU-model table (model names -> small ids used in bitmasks).
class Cluster {
 public:
  Cluster() = default;
  /// Adds a node, validating every field (errors name the node and field); returns its index.
  int add_node(NodeSpec spec);
  int num_nodes() const noexcept { return static_cast<int>(nodes_.size()); }
  const NodeSpec& node(int i) const;
  const std::vector<NodeSpec>& nodes() const noexcept { return nodes_; }
  int find_node(const std::string& name) const;  // -1 if absent
  /// Interned id of a GPU model (0..63); -1 when the model is unknown to this cluster.
  int model_id(const std::string& model) const;
  int node_model_id(int i) const { return node_model_[static_cast<std::size_t>(i)]; }
  const std::vector<std::string>& models() const noexcept { return model_names_; }
  std::int64_t total_gpus() const noexcept { return total_gpus_; }
  std::int64_t total_gpu_milli() const noexcept { return total_gpus_ * kMilli; }
  std::int64_t total_cpu_milli() const noexcept { return total_cpu_; }

  /// JSON: {"nodes":[{"name","cpu_milli","memory_mib","gpus","gpu_memory_mib","model","mig",
  ///                  "nvlink_islands" | "links":[[a,b,"nvlink"],...]}, ...]}
  static Cluster from_json(const std::string& json);
  std::string to_json() const;

 private:
  std::vector<NodeSpec> nodes_;
  std::vector<int> node_model_;
  std::vector<std::string> model_names_;
  std::unordered_map<std::string, int> model_index_;
  std::unordered_map<std::string, int> name_index_;
  std::int64_t total_gpus_ = 0;
  std::int64_t total_cpu_ = 0;
};

}  // namespace kubetune::sched::gpu
