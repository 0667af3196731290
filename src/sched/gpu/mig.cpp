// MIG profile tables per GPU model and slot arithmetic (NVIDIA MIG user guide geometry for A100 / H100).
#include "kubetune/sched/gpu/mig.hpp"

#include <algorithm>
#include <cctype>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

namespace {
/// Start slots of a GPU-instance geometry (compute slices, memory slices): the placement figure of NVIDIA's MIG
/// user guide ("A100 MIG profile placements"; H100 uses the same 7-compute / 8-memory-slice layout).
std::vector<int> starts_of(int compute, int memory) {
  if (compute == 1 && memory == 1) return {0, 1, 2, 3, 4, 5, 6};
  if (compute == 1 && memory == 2) return {0, 2, 4, 6};
  if (compute == 2) return {0, 2, 4};
  if (compute == 3) return {0, 4};
  return {0};  // 4g (4 slots) and 7g (8 slots)
}

MigProfile make(const char* name, int compute, int memory, int gb, int max_instances, bool me = false) {
  return MigProfile{name, compute, memory, starts_of(compute, memory), gb, max_instances, me};
}

/// Profiles of the 80 GB parts (A100-SXM4-80GB and H100-SXM5-80GB tables of the MIG user guide share names and
/// geometry; the H100's instances have more media engines, which does not change placement).
std::vector<MigProfile> profiles_80gb() {
  return {make("1g.10gb", 1, 1, 10, 7),        make("1g.10gb+me", 1, 1, 10, 1, true), make("1g.20gb", 1, 2, 20, 4),
          make("2g.20gb", 2, 2, 20, 3),        make("3g.40gb", 3, 4, 40, 2),          make("4g.40gb", 4, 4, 40, 1),
          make("7g.80gb", 7, 8, 80, 1)};
}

const std::vector<MigModel>& models_table() {
  // NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles": one table per GPU. Columns used here:
  // fraction of memory (-> memory slices of 8), fraction of SMs (-> compute slices of 7), number of instances
  // available (-> max_instances). "+me" rows: one 1g instance with the media extensions (NVDEC/NVJPG/OFA).
  static const std::vector<MigModel> t = {
      {"A100-40GB",
       {"A100", "A100-40GB", "A100-SXM4-40GB", "A100-PCIE-40GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"},
       {make("1g.5gb", 1, 1, 5, 7), make("1g.5gb+me", 1, 1, 5, 1, true), make("1g.10gb", 1, 2, 10, 4),
        make("2g.10gb", 2, 2, 10, 3), make("3g.20gb", 3, 4, 20, 2), make("4g.20gb", 4, 4, 20, 1),
        make("7g.40gb", 7, 8, 40, 1)}},
      {"A100-80GB",
       {"A100-80", "A100-80GB", "A100-SXM4-80GB", "A100-PCIE-80GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"},
       profiles_80gb()},
      {"H100-80GB",
       {"H100", "H100-80GB", "H100-SXM5-80GB", "H100-PCIE-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe"},
       profiles_80gb()},
      {"H100-94GB",
       {"H100-94GB", "H100-NVL", "NVIDIA-H100-NVL"},
       {make("1g.12gb", 1, 1, 12, 7), make("1g.12gb+me", 1, 1, 12, 1, true), make("1g.24gb", 1, 2, 24, 4),
        make("2g.24gb", 2, 2, 24, 3), make("3g.47gb", 3, 4, 47, 2), make("4g.47gb", 4, 4, 47, 1),
        make("7g.94gb", 7, 8, 94, 1)}},
  };
  return t;
}

/// Generic names (no memory size): the standard-memory geometry of each compute size, valid on every model.
const std::vector<MigProfile>& generic_table() {
  static const std::vector<MigProfile> g = {make("1g", 1, 1, 0, 7), make("2g", 2, 2, 0, 3), make("3g", 3, 4, 0, 2),
                                            make("4g", 4, 4, 0, 1), make("7g", 7, 8, 0, 1)};
  return g;
}

const MigProfile* find_generic(const std::string& name) noexcept {
  for (const MigProfile& p : generic_table())
    if (p.name == name) return &p;
  return nullptr;
}

std::string lower(const std::string& s) {
  std::string o = s;
  for (char& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool same_geometry(const MigProfile& a, const MigProfile& b) {
  return a.compute_slices == b.compute_slices && a.memory_slices == b.memory_slices && a.starts == b.starts &&
         a.media_extensions == b.media_extensions && a.max_instances == b.max_instances;
}

std::uint8_t mask_of(const MigProfile& p, int start) {
  return static_cast<std::uint8_t>(((1u << p.memory_slices) - 1u) << start);
}

std::string known_models() {
  std::string s;
  for (const MigModel& m : models_table()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}
}  // namespace

static_assert(kMaxMigModels >= 4, "kMaxMigModels must cover the MIG model table");

const std::vector<MigModel>& mig_models() { return models_table(); }

int mig_model_index(const std::string& gpu_model) noexcept {
  try {
    const std::string m = lower(gpu_model);
    const auto& t = models_table();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (lower(t[i].name) == m) return static_cast<int>(i);
      for (const std::string& a : t[i].aliases)
        if (lower(a) == m) return static_cast<int>(i);
    }
  } catch (...) {
  }
  return -1;
}

const MigProfile* find_mig_profile(int model, const std::string& name) noexcept {
  const auto& t = models_table();
  if (model < 0 || model >= static_cast<int>(t.size())) return nullptr;
  for (const MigProfile& p : t[static_cast<std::size_t>(model)].profiles)
    if (p.name == name) return &p;
  return find_generic(name);
}

std::string mig_profile_names(int model) {
  const auto& t = models_table();
  if (model < 0 || model >= static_cast<int>(t.size())) return "";
  std::string s;
  for (const MigProfile& p : t[static_cast<std::size_t>(model)].profiles) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

const MigProfile& mig_profile(const std::string& gpu_model, const std::string& name) {
  const int m = mig_model_index(gpu_model);
  KT_CHECK(m >= 0, InvalidArgument, "GPU model '", gpu_model, "' has no MIG profile table (MIG models: ",
           known_models(), ")");
  const MigProfile* p = find_mig_profile(m, name);
  KT_CHECK(p != nullptr, InvalidArgument, "mig_profile '", name, "' does not exist on GPU model '", gpu_model,
           "' (", models_table()[static_cast<std::size_t>(m)].name, " profiles: ", mig_profile_names(m),
           "; or generic 1g, 2g, 3g, 4g, 7g)");
  return *p;
}

const MigProfile& mig_profile(const std::string& name) {
  if (const MigProfile* g = find_generic(name)) return *g;
  const MigProfile* first = nullptr;
  std::string first_model;
  for (const MigModel& m : models_table()) {
    for (const MigProfile& p : m.profiles) {
      if (p.name != name) continue;
      if (!first) {
        first = &p;
        first_model = m.name;
      } else {
        KT_CHECK(same_geometry(*first, p), InvalidArgument, "mig_profile '", name,
                 "' has a model-dependent geometry (", first_model, ": ", first->memory_slices, " memory slices; ",
                 m.name, ": ", p.memory_slices, "): give the GPU model");
      }
    }
  }
  KT_CHECK(first != nullptr, InvalidArgument, "mig_profile '", name,
           "' is unknown (A100-40GB: 1g.5gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb; A100-80GB / H100-80GB: 1g.10gb, "
           "2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb; generic 1g, 2g, 3g, 4g, 7g)");
  return *first;
}

bool mig_profile_known(const std::string& name) noexcept {
  if (find_generic(name)) return true;
  for (const MigModel& m : models_table())
    for (const MigProfile& p : m.profiles)
      if (p.name == name) return true;
  return false;
}

int mig_compute_slices(const std::string& name) noexcept {
  if (const MigProfile* g = find_generic(name)) return g->compute_slices;
  for (const MigModel& m : models_table())
    for (const MigProfile& p : m.profiles)
      if (p.name == name) return p.compute_slices;
  return 0;
}

bool MigState::can_place(const MigProfile& p, int start) const noexcept {
  bool allowed = false;
  for (int s : p.starts) allowed |= (s == start);
  if (!allowed || start + p.memory_slices > kMigMemorySlices) return false;
  if (compute_used + p.compute_slices > kMigComputeSlices) return false;
  if (p.media_extensions && media_ext_used >= 1) return false;
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
  for (const MigProfile& p : generic_table())
    for (int s : p.starts) n += can_place(p, s);
  return n;
}

void MigState::place(const MigProfile& p, int start) {
  KT_CHECK(can_place(p, start), StateError, "MIG profile ", p.name, " does not fit at start slot ", start);
  used_mask = static_cast<std::uint8_t>(used_mask | mask_of(p, start));
  compute_used += p.compute_slices;
  media_ext_used += p.media_extensions ? 1 : 0;
}

void MigState::release(const MigProfile& p, int start) {
  KT_CHECK(start >= 0 && start + p.memory_slices <= kMigMemorySlices, StateError, "MIG profile ", p.name,
           " is not placed at start slot ", start);
  const std::uint8_t m = mask_of(p, start);
  KT_CHECK((used_mask & m) == m && compute_used >= p.compute_slices && (!p.media_extensions || media_ext_used > 0),
           StateError, "MIG profile ", p.name, " is not placed at start slot ", start);
  used_mask = static_cast<std::uint8_t>(used_mask & ~m);
  compute_used -= p.compute_slices;
  media_ext_used -= p.media_extensions ? 1 : 0;
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
