// MIG profile table and slot arithmetic (NVIDIA MIG user guide geometry for A100 / H100).
#include "kubetune/sched/gpu/mig.hpp"

#include <map>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

namespace {
const std::map<std::string, MigProfile>& table() {
  static const std::map<std::string, MigProfile> t = [] {
    std::map<std::string, MigProfile> m;
    auto add = [&m](std::initializer_list<const char*> names, int c, int mem, std::vector<int> starts) {
      for (const char* n : names) m[n] = MigProfile{n, c, mem, starts};
    };
    add({"1g", "1g.5gb", "1g.10gb", "1g.12gb"}, 1, 1, {0, 1, 2, 3, 4, 5, 6});
    add({"1g.10gb+me", "1g.20gb", "1g.24gb"}, 1, 2, {0, 2, 4, 6});
    add({"2g", "2g.10gb", "2g.20gb", "2g.24gb"}, 2, 2, {0, 2, 4});
    add({"3g", "3g.20gb", "3g.40gb", "3g.47gb"}, 3, 4, {0, 4});
    add({"4g", "4g.20gb", "4g.40gb", "4g.47gb"}, 4, 4, {0});
    add({"7g", "7g.40gb", "7g.80gb", "7g.94gb"}, 7, 8, {0});
    return m;
  }();
  return t;
}
const char* kStandard[] = {"1g", "2g", "3g", "4g", "7g"};

std::uint8_t mask_of(const MigProfile& p, int start) {
  return static_cast<std::uint8_t>(((1u << p.memory_slices) - 1u) << start);
}
}  // namespace

const MigProfile& mig_profile(const std::string& name) {
  auto it = table().find(name);
  KT_CHECK(it != table().end(), InvalidArgument, "mig_profile '", name,
           "' is unknown (expected e.g. 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb)");
  return it->second;
}

bool MigState::can_place(const MigProfile& p, int start) const noexcept {
  bool allowed = false;
  for (int s : p.starts) allowed |= (s == start);
  if (!allowed || start + p.memory_slices > kMigMemorySlices) return false;
  if (compute_used + p.compute_slices > kMigComputeSlices) return false;
  return (used_mask & mask_of(p, start)) == 0;
}

std::vector<int> MigState::feasible_starts(const MigProfile& p) const {
  std::vector<int> out;
  for (int s : p.starts)
    if (can_place(p, s)) out.push_back(s);
  return out;
}

int MigState::remaining_placements() const {
  int n = 0;
  for (const char* name : kStandard) {
    const MigProfile& p = mig_profile(name);
    for (int s : p.starts) n += can_place(p, s);
  }
  return n;
}

void MigState::place(const MigProfile& p, int start) {
  KT_CHECK(can_place(p, start), StateError, "MIG profile ", p.name, " does not fit at start slot ", start);
  used_mask = static_cast<std::uint8_t>(used_mask | mask_of(p, start));
  compute_used += p.compute_slices;
}

void MigState::release(const MigProfile& p, int start) {
  const std::uint8_t m = mask_of(p, start);
  KT_CHECK((used_mask & m) == m && compute_used >= p.compute_slices, StateError, "MIG profile ", p.name,
           " is not placed at start slot ", start);
  used_mask = static_cast<std::uint8_t>(used_mask & ~m);
  compute_used -= p.compute_slices;
}

int MigState::best_start(const MigProfile& p) const {
  int best = -1, best_left = -1;
  for (int s : p.starts) {
    if (!can_place(p, s)) continue;
    MigState t = *this;
    t.place(p, s);
    const int left = t.remaining_placements();
    if (left > best_left) {
      best_left = left;
      best = s;
    }
  }
  return best;
}

}  // namespace kubetune::sched::gpu
