// Thread-safe allocator: place / release / gang / snapshot / restore over a cluster, with an incremental index.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kubetune/core/rng.hpp"
#include "kubetune/sched/gpu/cluster.hpp"
#include "kubetune/sched/gpu/policy.hpp"
#include "kubetune/sched/gpu/request.hpp"

namespace kubetune::sched::gpu {

struct AllocatorOptions {
  /// Use the per-shape max-index (decisions cost O(changes since the shape was last seen · log N) instead of a
  /// scan). Ignored when the policy uses Kubernetes semantics (random ties need a scan).
  bool indexed = true;
  std::uint64_t seed = 0;    // random tie-breaking under Kubernetes semantics
  int max_shapes = 64;       // index entries kept (LRU evicted); each holds 16 bytes x nodes (rounded up to 2^k)
};

/// How gang members should be laid out.
enum class GangPreference { kNone, kPack, kSpread };
GangPreference parse_gang_preference(const std::string& s);

/// A copy of the allocator's mutable state.
struct Snapshot {
  std::vector<NodeState> nodes;
  std::map<std::uint64_t, Placement> placements;
  std::uint64_t next_id = 1;
};

struct AllocatorStats {
  std::int64_t gpu_milli_capacity = 0;   // healthy GPUs only
  std::int64_t gpu_milli_allocated = 0;  // on healthy GPUs
  std::int64_t cpu_milli_allocated = 0;
  std::int64_t placements = 0;
  std::int64_t fully_free_gpus = 0;      // healthy and unused
  std::int64_t unhealthy_gpus = 0;
  std::int64_t placements_on_unhealthy = 0;  // placements using at least one unhealthy GPU (to evict)
  double fragmentation_milli = 0.0;  // FGD cluster fragmentation (needs typical pods; else 0)
  double fragmentation_ratio = 0.0;  // fragmentation / free GPU milli
};

class Allocator {
 public:
  Allocator(Cluster cluster, std::shared_ptr<const Policy> policy, AllocatorOptions opt = {});
  ~Allocator();

  const Cluster& cluster() const noexcept { return cluster_; }
  std::string policy_name() const { return policy_->name(); }
  const std::shared_ptr<const Policy>& policy() const noexcept { return policy_; }
  const AllocatorOptions& options() const noexcept { return opt_; }

  /// Places one request (validated); nullopt when no node can host it. Never over-commits.
  std::optional<Placement> place(const Request& r);
  /// Places on a given node (the extender's bind); nullopt when it does not fit there. Throws InvalidArgument
  /// (naming both) when the request's MIG profile does not exist on that MIG node's GPU model, StateError when a
  /// placement of r.name exists (the check and the placement are one atomic step).
  std::optional<Placement> place_on(const Request& r, int node);
  /// Places r on exactly `gpus` of `node` (MIG: at slot `mig_start`): how an existing pod is adopted from the
  /// GPU indices its annotations record. nullopt when it does not fit there (a conflict with placements already
  /// made). Throws InvalidArgument for a GPU list that does not match the request (count, range, duplicates) or a
  /// MIG placement without a start, NotFound for a bad node, StateError when a placement of r.name exists.
  std::optional<Placement> place_pinned(const Request& r, int node, const std::vector<int>& gpus, int mig_start = -1);
  /// All-or-nothing: either every member is placed or none is (state unchanged).
  std::optional<std::vector<Placement>> place_gang(const std::vector<Request>& members,
                                                   GangPreference pref = GangPreference::kPack);
  /// Marks GPU `gpu` of node `node` healthy or unhealthy and returns the placements that use it (a controller
  /// evicts those when marking it unhealthy). An unhealthy GPU takes no new placement and leaves the capacity
  /// measures; placements already on it stay (and stay releasable) until released. Throws NotFound for a bad
  /// node, InvalidArgument for a bad GPU index.
  std::vector<Placement> set_gpu_health(int node, int gpu, bool healthy);
  bool gpu_healthy(int node, int gpu) const;
  /// (node, gpu) of every unhealthy GPU, in node then GPU order.
  std::vector<std::pair<int, int>> unhealthy_gpus() const;
  /// Placements that use at least one unhealthy GPU, by id.
  std::vector<Placement> placements_on_unhealthy() const;

  /// Frees a placement; throws NotFound for an unknown id.
  void release(std::uint64_t id);
  /// Frees by pod name; returns false when unknown.
  bool release_by_name(const std::string& name);

  /// Nodes (indices) that can host r now; `reasons` (optional) gets "<node>: <why>" per rejected node and
  /// `unresolvable` (optional, parallel to reasons) whether r would not fit on that node even if it were empty
  /// (no GPU, wrong model, too little per-GPU memory...: preemption cannot help there).
  std::vector<int> feasible_nodes(const Request& r, const std::vector<int>& candidates,
                                  std::vector<std::string>* reasons = nullptr,
                                  std::vector<char>* unresolvable = nullptr) const;
  /// Preemption: whether r fits on `node` once the pods named in `victims` are gone (names not placed on the
  /// node are ignored). Simulated on a copy: nothing changes.
  bool fits_without(const Request& r, int node, const std::vector<std::string>& victims) const;
  /// Policy score of node for r (nullopt if infeasible).
  std::optional<double> score(const Request& r, int node) const;

  Snapshot snapshot() const;
  void restore(const Snapshot& s);
  NodeState node_state(int node) const;
  std::optional<Placement> placement(std::uint64_t id) const;
  std::optional<Placement> placement_by_name(const std::string& name) const;
  AllocatorStats stats(const std::vector<TypicalPod>& typical = {}) const;
  /// Recomputes every node's usage from the placements and compares; throws StateError on any mismatch
  /// or over-commit.
  void check_invariants() const;

 private:
  struct Index;
  std::optional<Placement> place_locked(const PreparedRequest& pr, int only_node, const std::vector<int>* prefer);
  Placement record(Placement p);  // stores an applied placement
  int choose_node(const PreparedRequest& pr, Choice& ch);
  void apply(Placement& p, const PreparedRequest& pr);
  void unapply(const Placement& p);
  void touch(int node);
  const MigProfile& mig_of(const Placement& p) const;
  void check_gpu(int node, int gpu) const;

  Cluster cluster_;
  std::shared_ptr<const Policy> policy_;
  AllocatorOptions opt_;
  mutable std::shared_mutex mu_;
  std::vector<NodeState> state_;
  std::map<std::uint64_t, Placement> placements_;
  std::unordered_map<std::string, std::uint64_t> by_name_;
  std::uint64_t next_id_ = 1;
  kubetune::Rng rng_;  // reservoir choice among tied nodes (kube semantics); Rng(opt.seed)
  std::unique_ptr<Index> index_;
};

}  // namespace kubetune::sched::gpu
