// A pod's resource request (CPU, memory, GPU share / count / memory / model / MIG profile, gang) and its placement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kubetune::sched::gpu {

/// What a pod asks for. Exactly one GPU form is used:
///  - gpu_count == 0: CPU-only;
///  - gpu_count == 1 and gpu_milli in (0, 1000): a shared fraction of one GPU (FGD / Alibaba trace form);
///  - gpu_memory_mib > 0 (gpu_count == 1): gpushare form, memory of one GPU (`aliyun.com/gpu-mem`), plus an
///    optional compute share `compute_milli`;
///  - gpu_count >= 1 with gpu_milli == 1000 (or 0): whole GPUs;
///  - mig_profile non-empty: one MIG instance (gpu_count must be 1).
struct Request {
  std::string name;
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  int gpu_count = 0;
  int gpu_milli = 0;
  std::int64_t gpu_memory_mib = 0;
  int compute_milli = 0;
  std::vector<std::string> models;  // allowed GPU models; empty = any
  std::string mig_profile;
  std::string gang;                 // gang id; members are placed all-or-nothing by place_gang

  /// Throws InvalidArgument naming the field and value when inconsistent. Normalises gpu_milli to 1000 for
  /// whole-GPU requests.
  void validate_and_normalise();
  bool is_share() const noexcept { return gpu_count == 1 && ((gpu_milli > 0 && gpu_milli < 1000) || gpu_memory_mib > 0); }
  bool is_whole() const noexcept { return gpu_count >= 1 && gpu_milli >= 1000 && gpu_memory_mib == 0 && mig_profile.empty(); }
  bool is_mig() const noexcept { return !mig_profile.empty(); }
  /// Total GPU demand in milli-GPU (share fraction or count x 1000; MIG: compute slices / 7 x 1000).
  std::int64_t total_gpu_milli() const noexcept;
};

/// Where a request went.
struct Placement {
  std::uint64_t id = 0;
  int node = -1;
  std::vector<int> gpus;       // GPU indices on the node
  int mig_start = -1;          // MIG start slot (MIG requests)
  int gpu_milli = 0;           // per GPU consumed share
  std::int64_t gpu_memory_mib = 0;  // per GPU consumed memory
  std::int64_t cpu_milli = 0;
  std::int64_t memory_mib = 0;
  std::string name;
  std::string mig_profile;
  std::string gang;
};

}  // namespace kubetune::sched::gpu
