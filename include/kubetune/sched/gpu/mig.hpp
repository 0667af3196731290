// NVIDIA Multi-Instance GPU geometry (A100 / H100): 7 compute slices, 8 memory slices, fixed start slices, and the
// explicit GPU model -> MIG profile table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kubetune::sched::gpu {

/// One MIG (GPU-instance) profile: compute slices, memory slices (= width in placement slots), allowed start
/// slots, the instance memory, the most instances of it one GPU holds and whether it carries the media extensions.
/// Facts from NVIDIA's "Multi-Instance GPU User Guide" (docs.nvidia.com/datacenter/tesla/mig-user-guide),
/// section "Supported MIG Profiles" (per-model tables: fraction of memory / SMs, number of instances available)
/// and the placement figure / `nvidia-smi mig -lgipp` listing: 1g (1 slot, starts 0..6), 1g with double memory
/// (2 slots, starts 0,2,4,6), 2g (2 slots, starts 0,2,4), 3g (4 slots, starts 0,4), 4g (4 slots, start 0),
/// 7g (8 slots, start 0); a "+me" profile is a 1g instance that owns the GPU's media engines (at most one per GPU).
struct MigProfile {
  std::string name;
  int compute_slices = 0;
  int memory_slices = 0;
  std::vector<int> starts;
  int memory_gb = 0;          // instance memory as NVIDIA names it (the "5gb" of "1g.5gb"); 0 for generic names
  int max_instances = 0;      // "Number of Instances Available" per GPU
  bool media_extensions = false;  // "+me": NVDEC/NVJPG/OFA of the whole GPU; one such instance per GPU
};

/// The profile table of one MIG-capable GPU model (one row per profile of NVIDIA's table for that model).
struct MigModel {
  std::string name;                  // canonical: "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB"
  std::vector<std::string> aliases;  // node model names that mean this GPU (matched case-insensitively)
  std::vector<MigProfile> profiles;
};

inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;
inline constexpr int kMaxMigModels = 8;

/// The explicit model -> profile table (A100-40GB, A100-80GB, H100-80GB, H100-94GB).
const std::vector<MigModel>& mig_models();
/// Index into mig_models() of a node's GPU model name ("A100", "A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", ...;
/// case-insensitive alias match); -1 when the model has no MIG table.
int mig_model_index(const std::string& gpu_model) noexcept;
/// Profile `name` on model index `model` (mig_models()); the generic names "1g", "2g", "3g", "4g", "7g" resolve
/// to the model's standard-memory profile of that compute size. nullptr when the model has no such profile.
const MigProfile* find_mig_profile(int model, const std::string& name) noexcept;
/// Profile `name` on GPU model `gpu_model`. Throws InvalidArgument naming both (and listing the model's profiles)
/// when that model has no such profile, or naming the model when it has no MIG table.
const MigProfile& mig_profile(const std::string& gpu_model, const std::string& name);
/// Model-independent lookup, for callers that do not know the GPU: the geometry every model with `name` shares
/// (e.g. "3g.20gb", "1g.5gb", "2g.20gb", or a generic name). Throws InvalidArgument naming the profile when it is
/// unknown, or when its geometry depends on the model ("1g.10gb": 2 memory slices on A100-40GB, 1 on
/// A100-80GB / H100-80GB) -- give the model then.
const MigProfile& mig_profile(const std::string& name);
/// True when some model (or the generic set) has a profile of this name.
bool mig_profile_known(const std::string& name) noexcept;
/// Compute slices of a known profile name ("3g.40gb" -> 3); 0 when unknown.
int mig_compute_slices(const std::string& name) noexcept;
/// Comma-separated profile names of a model (for error messages).
std::string mig_profile_names(int model);

/// Occupancy of one MIG-mode GPU: a bitmask of used memory slots, used compute slices and media-extension
/// instances.
struct MigState {
  std::uint8_t used_mask = 0;  // bit i = memory slot i taken
  int compute_used = 0;
  int media_ext_used = 0;      // "+me" instances (at most one)

  bool empty() const noexcept { return used_mask == 0 && compute_used == 0; }
  /// True when `p` can start at slot `start`.
  bool can_place(const MigProfile& p, int start) const noexcept;
  /// Allowed start slots where `p` fits now.
  std::vector<int> feasible_starts(const MigProfile& p) const;
  /// Number of (profile, start) placements of the standard profiles that remain possible.
  int remaining_placements() const;
  void place(const MigProfile& p, int start);   // throws StateError if it does not fit
  void release(const MigProfile& p, int start); // throws StateError if not placed there
  /// The start that keeps the most future placements possible (ties: lowest start); -1 when none fits.
  int best_start(const MigProfile& p) const;
};

}  // namespace kubetune::sched::gpu
