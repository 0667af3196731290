// One allocator configuration and one factory: the policy, its typical pods (the one empty-workload rule) and the
// allocator options, read from JSON (the C API) or filled field by field (Python) and built the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/extender.hpp"

namespace kubetune::sched::gpu {

struct AllocatorConfig {
  std::string policy = "best_fit";  ///< best_fit (gpushare, binpack), spread, fgd, kubetune
  /// Typical tasks that fgd and kubetune measure fragmentation against (see typical_pods_for); the other policies
  /// ignore it. fgd and kubetune need at least one request here.
  std::vector<Request> workload;
  double popularity = 0.95;           ///< typical-pod coverage, in (0, 1]
  bool gpu_weighted_typical = true;   ///< fgd's typical pods counted by GPU demand (kubetune's variant)
  bool kube_semantics = false;        ///< integer scores with seeded random tie-breaking (kube-scheduler)
  bool indexed = true;                ///< AllocatorOptions::indexed
  std::uint64_t seed = 0;             ///< AllocatorOptions::seed (ties under kube_semantics)

  /// InvalidArgument naming the field: an unknown policy, popularity outside (0, 1], fgd / kubetune without a
  /// workload.
  void validate() const;
  AllocatorOptions options() const;
  /// Keys: policy, workload ([request JSON objects]), popularity, gpu_weighted_typical, kube_semantics, indexed,
  /// seed. Absent keys keep the defaults; an unknown key or a wrong type is InvalidArgument naming it. Validated.
  static AllocatorConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  /// The key names from_json reads.
  static const std::vector<std::string>& keys();
};

/// The typical pods a policy measures fragmentation against -- the one rule every edge uses: an empty workload
/// gives none; "kubetune" takes kubetune_typical_pods(workload, popularity); every other policy
/// typical_pods(workload, popularity, include_cpu_pods = true, gpu_weighted).
std::vector<TypicalPod> typical_pods_for(const Cluster& c, const std::string& policy,
                                         const std::vector<Request>& workload, double popularity = 0.95,
                                         bool gpu_weighted = true);

/// The configured policy for cluster `c` (validates `cfg`; kube_semantics set).
std::shared_ptr<Policy> make_policy(const Cluster& c, const AllocatorConfig& cfg);
/// The one allocator factory: make_policy(c, cfg) and cfg.options().
std::shared_ptr<Allocator> make_allocator(Cluster c, const AllocatorConfig& cfg);

/// The C API's allocator options: AllocatorConfig's keys plus ExtenderConfig's gpu_mem_unit_mib, pending_ttl_s,
/// max_pending, assume_grace_s and max_body_bytes (for the extender over that allocator). An unknown key is
/// InvalidArgument naming it; both parts are validated.
std::pair<AllocatorConfig, ExtenderConfig> allocator_and_extender_from_json(const nlohmann::json& j);

}  // namespace kubetune::sched::gpu
