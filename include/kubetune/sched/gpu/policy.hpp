// Placement policies: gpushare best-fit, spread, FGD (Weng et al., ATC'23) and kubetune's fragmentation-aware policy.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kubetune/sched/gpu/cluster.hpp"
#include "kubetune/sched/gpu/mig.hpp"
#include "kubetune/sched/gpu/request.hpp"

namespace kubetune::sched::gpu {

/// Mutable state of one GPU.
struct GpuState {
  int milli_free = kMilli;         // compute share left (milli-GPU)
  std::int64_t memory_free = 0;    // MiB left (0 total = memory not modelled)
  MigState mig;                    // MIG-mode GPUs only
  /// False once the GPU is marked unhealthy (Allocator::set_gpu_health): it takes no new placement, its free share
  /// counts as 0 and it leaves the capacity measures; placements already on it stay until released.
  bool healthy = true;
};

/// Mutable state of one node.
struct NodeState {
  std::int64_t cpu_free = 0;
  std::int64_t memory_free = 0;
  std::vector<GpuState> gpus;
};

/// Free share of one GPU in milli-GPU: min(compute left, memory left as a fraction of the GPU's memory); 0 for an
/// unhealthy GPU.
int gpu_share_free(const GpuState& g, std::int64_t gpu_memory_mib) noexcept;
/// Sum of free shares of a node's (non-MIG) GPUs.
std::int64_t node_gpu_milli_free(const NodeSpec& spec, const NodeState& st) noexcept;

/// A request resolved against a cluster: model bitmask, MIG profile per MIG model, validated fields.
struct PreparedRequest {
  Request req;
  std::uint64_t model_mask = 0;  // 0 = any model; bit i = model id i allowed
  bool impossible_model = false; // some named model exists nowhere in the cluster and none other does
  bool is_mig = false;
  /// The request's MIG profile on each MIG model (index of mig_models()); nullptr where that model lacks it.
  std::array<const MigProfile*, kMaxMigModels> mig_on{};
  std::string key;               // shape key for the allocator's index (same key => same scores)

  /// The profile on node `node` of `c`; nullptr for non-MIG requests, non-MIG nodes or a model without it.
  const MigProfile* mig_for(const Cluster& c, int node) const noexcept {
    const int m = c.node_mig_model(node);
    return is_mig && m >= 0 ? mig_on[static_cast<std::size_t>(m)] : nullptr;
  }
};
PreparedRequest prepare(const Cluster& c, Request r);

/// One entry of the "typical task" distribution FGD measures fragmentation against.
struct TypicalPod {
  std::int64_t cpu_milli = 0;
  int gpu_count = 0;
  int gpu_milli = 0;              // per GPU (1000 for whole GPUs)
  std::uint64_t model_mask = 0;   // 0 = any (unless impossible_model)
  double weight = 0.0;            // popularity, sums to 1
  /// The task names GPU models of which none is in the cluster: no node can host it (it is never "any model").
  bool impossible_model = false;
};

/// Typical pods as the FGD simulator builds them (hkust-adsl/kubernetes-scheduler-simulator, GetTypicalPods):
/// group requests by (cpu, gpu count, gpu milli, model set), sort by count, keep the most popular shapes until
/// `popularity` (default 95 %) of the requests are covered, renormalise. CPU-only tasks are included when
/// `include_cpu_pods` (simulator default in the paper's configs).
/// `gpu_weighted`: count each task by 1 + its GPU demand in GPUs (kubetune's variant, so that rare but large
/// multi-GPU tasks -- 0.5 % of Alibaba tasks but 5 % of GPU demand -- enter the typical set).
std::vector<TypicalPod> typical_pods(const Cluster& c, const std::vector<Request>& workload, double popularity = 0.95,
                                     bool include_cpu_pods = true, bool gpu_weighted = false);

/// kubetune's typical set: the shapes popular by count or by GPU demand (either 95 % cut), weighted by task count.
/// Keeps the rare but large multi-GPU shapes in view without inflating their weight (GPU-weighted counts hurt on
/// model-constrained workloads, plain counts drop 8-GPU tasks; measured in benchmarks/gpu.md).
std::vector<TypicalPod> kubetune_typical_pods(const Cluster& c, const std::vector<Request>& workload,
                                              double popularity = 0.95);

/// FGD node fragmentation F_n(M) = sum_m p_m F_n(m) in milli-GPU (paper Eq. 1-2; simulator
/// NodeGpuShareFragAmountScore): for a typical task m that the node cannot host (GPU model -- including a task whose
/// models are all absent from the cluster --, CPU, or not enough GPUs with enough free share) -- and for CPU-only
/// tasks -- every free GPU share is a fragment; otherwise the free shares of GPUs with less free than m asks are.
double node_fragmentation(const NodeSpec& spec, int model_id, const NodeState& st, const std::vector<TypicalPod>& tp);

/// A scored option for one node.
struct Choice {
  double score = 0.0;
  std::vector<int> gpus;
  int mig_start = -1;
};

/// Policy interface: score a node for a request and pick its GPUs; higher scores win.
class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  /// False when the node cannot host the request; otherwise fills `out`.
  virtual bool evaluate(const Cluster& c, int node, const NodeState& st, const PreparedRequest& r, Choice& out) const = 0;
  /// Integer scores with random tie-breaking (Kubernetes scheduler framework semantics, used by the paper).
  bool kube_semantics() const noexcept { return kube_semantics_; }
  void set_kube_semantics(bool on) noexcept { kube_semantics_ = on; }

 protected:
  bool kube_semantics_ = false;
};

/// Feasibility on CPU, memory, model and GPU resources (no scoring).
bool node_fits(const Cluster& c, int node, const NodeState& st, const PreparedRequest& r);
/// gpushare's GPU rule for one shared GPU: the GPU with the least free memory (or share, for fraction
/// requests) that still fits; lowest index on ties. -1 when none fits.
int gpushare_pick_gpu(const NodeSpec& spec, const NodeState& st, const PreparedRequest& r);
/// Whole GPUs: the k fully free GPUs with the best topology score (NVLink first), lowest indices on ties.
std::vector<int> pick_whole_gpus(const NodeSpec& spec, const NodeState& st, int k);

/// Factory: "best_fit" (alias "gpushare", "binpack"), "spread", "fgd", "kubetune".
/// `typical` is needed by "fgd" and "kubetune" (throws InvalidArgument when empty for them).
std::shared_ptr<Policy> make_policy(const std::string& name, std::vector<TypicalPod> typical = {});
std::vector<std::string> policy_names();

}  // namespace kubetune::sched::gpu
