// NVIDIA Multi-Instance GPU geometry (A100 / H100): 7 compute slices, 8 memory slices, fixed start slices.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kubetune::sched::gpu {

/// One MIG profile: compute slices, memory slices (= width in placement slots) and allowed start slots.
/// Geometry from NVIDIA's MIG user guide ("Supported MIG Profiles", A100 40/80 GB and H100 80 GB tables):
/// 1g (1 slot, starts 0..6), 1g.*+double memory (2 slots, starts 0,2,4,6), 2g (2 slots, starts 0,2,4),
/// 3g (4 slots, starts 0,4), 4g (4 slots, start 0), 7g (8 slots, start 0).
struct MigProfile {
  std::string name;
  int compute_slices = 0;
  int memory_slices = 0;
  std::vector<int> starts;
};

inline constexpr int kMigComputeSlices = 7;
inline constexpr int kMigMemorySlices = 8;

/// Look up a profile by name: "1g", "2g", "3g", "4g", "7g" or NVIDIA names such as "1g.5gb", "1g.10gb",
/// "1g.20gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb", "1g.10gb"(H100), "3g.40gb", "7g.80gb".
/// Throws InvalidArgument naming the profile when unknown.
const MigProfile& mig_profile(const std::string& name);

/// Occupancy of one MIG-mode GPU: a bitmask of used memory slots and used compute slices.
struct MigState {
  std::uint8_t used_mask = 0;  // bit i = memory slot i taken
  int compute_used = 0;

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
