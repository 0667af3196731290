// Feasibility, GPU choice rules, FGD fragmentation and the four placement policies.
#include "kubetune/sched/gpu/policy.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

namespace {
constexpr int kMaxGpus = 64;
// Normalisation constants of the simulator's BestFit score (hkust-adsl simulator, gpushareutils.MaxSpecCpu/Gpu).
constexpr double kMaxSpecCpu = 128000.0;
constexpr double kMaxSpecGpu = 8000.0;

inline bool model_ok(std::uint64_t mask, int model_id) {
  return mask == 0 || (model_id >= 0 && ((mask >> model_id) & 1u));
}

/// Per-GPU consumption of a (non-MIG) GPU request on a node.
struct Need {
  int milli = 0;
  std::int64_t mem = 0;
  bool whole = false;
  bool ok = true;  // false: the node cannot express this request (gpushare memory on a GPU of unknown memory)
};

Need need_on(const NodeSpec& spec, const Request& r) {
  Need n;
  if (r.gpu_count == 0) return n;
  if (r.gpu_memory_mib > 0) {
    n.milli = r.compute_milli;
    n.mem = r.gpu_memory_mib;
    n.ok = spec.gpu_memory_mib > 0 && r.gpu_memory_mib <= spec.gpu_memory_mib;
    return n;
  }
  if (r.gpu_milli >= kMilli) {
    n.whole = true;
    n.milli = kMilli;
    n.mem = spec.gpu_memory_mib;
    return n;
  }
  n.milli = r.gpu_milli;
  n.mem = spec.gpu_memory_mib > 0 ? static_cast<std::int64_t>(r.gpu_milli) * spec.gpu_memory_mib / kMilli : 0;
  return n;
}

inline bool gpu_fits(const GpuState& g, const Need& n) {
  return g.healthy && g.milli_free >= n.milli && g.memory_free >= n.mem;
}

/// Free shares of a node's non-MIG GPUs into `out`; returns count.
int collect_free(const NodeSpec& spec, const NodeState& st, int* out) {
  if (spec.mig) return 0;
  const int n = std::min<int>(static_cast<int>(st.gpus.size()), kMaxGpus);
  for (int i = 0; i < n; ++i) out[i] = gpu_share_free(st.gpus[static_cast<std::size_t>(i)], spec.gpu_memory_mib);
  return n;
}

double frag_of(const int* free, int n, std::int64_t cpu_free, int model_id, const std::vector<TypicalPod>& tp) {
  std::int64_t total = 0;
  for (int i = 0; i < n; ++i) total += free[i];
  if (total == 0) return 0.0;
  double f = 0.0;
  for (const TypicalPod& t : tp) {
    if (t.gpu_count == 0 || t.impossible_model || !model_ok(t.model_mask, model_id)) {
      f += t.weight * static_cast<double>(total);
      continue;
    }
    int fit = 0;
    std::int64_t small = 0;
    for (int i = 0; i < n; ++i) {
      if (free[i] >= t.gpu_milli) ++fit;
      else small += free[i];
    }
    if (fit >= t.gpu_count && cpu_free >= t.cpu_milli) f += t.weight * static_cast<double>(small);
    else f += t.weight * static_cast<double>(total);
  }
  return f;
}

std::vector<int> pick_mig(const NodeSpec& spec, const NodeState& st, const MigProfile& p, int* start_out) {
  // Best fit over GPUs: the GPU whose best start leaves the fewest further placements (packs partially used
  // GPUs first), lowest index on ties; within the GPU, the start that keeps most options open.
  int best_gpu = -1, best_start = -1, best_left = 1 << 30;
  for (int i = 0; i < static_cast<int>(st.gpus.size()) && spec.mig; ++i) {
    if (!st.gpus[static_cast<std::size_t>(i)].healthy) continue;
    const MigState& m = st.gpus[static_cast<std::size_t>(i)].mig;
    const int s = m.best_start(p);
    if (s < 0) continue;
    MigState t = m;
    t.place(p, s);
    const int left = t.remaining_placements();
    if (left < best_left) {
      best_left = left;
      best_gpu = i;
      best_start = s;
    }
  }
  *start_out = best_start;
  if (best_gpu < 0) return {};
  return {best_gpu};
}

/// Generic GPU choice shared by policies; `share_rule`: 0 best-fit (gpushare), 1 worst-fit. `mig`: the request's
/// MIG profile on this node's model (MIG requests only).
bool choose_gpus(const NodeSpec& spec, const NodeState& st, const PreparedRequest& pr, const MigProfile* mig,
                 int share_rule, Choice& out) {
  const Request& r = pr.req;
  out.gpus.clear();
  out.mig_start = -1;
  if (r.gpu_count == 0) return true;
  if (pr.is_mig) {
    if (mig == nullptr) return false;  // not a MIG node, or its model has no such profile
    out.gpus = pick_mig(spec, st, *mig, &out.mig_start);
    return !out.gpus.empty();
  }
  if (spec.mig) return false;
  const Need n = need_on(spec, r);
  if (!n.ok) return false;
  if (n.whole) {
    out.gpus = pick_whole_gpus(spec, st, r.gpu_count);
    return !out.gpus.empty();
  }
  int g = -1;
  if (share_rule == 0) {
    g = gpushare_pick_gpu(spec, st, pr);
  } else {
    int best = -1;
    for (int i = 0; i < static_cast<int>(st.gpus.size()); ++i) {
      const GpuState& gs = st.gpus[static_cast<std::size_t>(i)];
      if (!gpu_fits(gs, n)) continue;
      const int f = gpu_share_free(gs, spec.gpu_memory_mib);
      if (f > best) {
        best = f;
        g = i;
      }
    }
  }
  if (g < 0) return false;
  out.gpus = {g};
  return true;
}

bool basic_fits(const Cluster& c, int node, const NodeState& st, const PreparedRequest& pr) {
  const Request& r = pr.req;
  if (st.cpu_free < r.cpu_milli || st.memory_free < r.memory_mib) return false;
  if (r.gpu_count == 0) return true;
  if (pr.impossible_model) return false;
  const NodeSpec& spec = c.node(node);
  if (spec.num_gpus < r.gpu_count) return false;
  return model_ok(pr.model_mask, c.node_model_id(node));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ---------------------------------------------------------------- policies
class BestFitPolicy : public Policy {
 public:
  explicit BestFitPolicy(bool spread) : spread_(spread) {}
  std::string name() const override { return spread_ ? "spread" : "best_fit"; }
  bool evaluate(const Cluster& c, int node, const NodeState& st, const PreparedRequest& pr, Choice& out) const override {
    if (!basic_fits(c, node, st, pr)) return false;
    const NodeSpec& spec = c.node(node);
    if (!choose_gpus(spec, st, pr, pr.mig_for(c, node), spread_ ? 1 : 0, out)) return false;
    // Simulator BestFit: sum_i w_i (free_i - request_i) / maxSpec_i with w = (0.5, 0.5) over (CPU, GPU).
    const double gpu_left = static_cast<double>(node_gpu_milli_free(spec, st));
    const double raw = 0.5 * static_cast<double>(st.cpu_free - pr.req.cpu_milli) / kMaxSpecCpu +
                       0.5 * (gpu_left - static_cast<double>(pr.req.total_gpu_milli())) / kMaxSpecGpu;
    double s = spread_ ? raw : 1.0 - raw;
    if (kube_semantics_) s = std::trunc(s * 100.0);
    out.score = s;
    return true;
  }

 private:
  bool spread_;
};

/// FGD: Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
/// Descent", USENIX ATC'23. Score = decrease of the node's fragmentation against the typical task distribution
/// when the task lands there (the "gradient"); for a shared task, every GPU that fits is tried and the one with
/// the smallest fragmentation increase kept. Kubernetes semantics reproduce the simulator's integer score
/// int(100 * sigmoid(delta / 1000)).
class FgdPolicy : public Policy {
 public:
  FgdPolicy(std::vector<TypicalPod> tp, bool ours) : tp_(std::move(tp)), ours_(ours) {
    KT_CHECK(!tp_.empty(), InvalidArgument, "policy '", ours ? "kubetune" : "fgd", "' needs typical pods (got none)");
  }
  std::string name() const override { return ours_ ? "kubetune" : "fgd"; }

  bool evaluate(const Cluster& c, int node, const NodeState& st, const PreparedRequest& pr, Choice& out) const override {
    if (!basic_fits(c, node, st, pr)) return false;
    const NodeSpec& spec = c.node(node);
    const Request& r = pr.req;
    const int mid = c.node_model_id(node);
    int free[kMaxGpus];
    const int n = collect_free(spec, st, free);
    const double before = frag_of(free, n, st.cpu_free, mid, tp_);
    const std::int64_t cpu_after = st.cpu_free - r.cpu_milli;
    out.mig_start = -1;
    if (r.gpu_count > 0 && (pr.is_mig || spec.mig)) {
      // MIG GPUs are outside the share-fragmentation model: fall back to the MIG best fit.
      if (!choose_gpus(spec, st, pr, pr.mig_for(c, node), 0, out)) return false;
      out.score = before - frag_of(free, n, cpu_after, mid, tp_);
      return true;
    }
    if (r.is_share()) {
      const Need nd = need_on(spec, r);
      if (!nd.ok) return false;
      int best_gpu = -1;
      double best = 0.0;
      for (int i = 0; i < n; ++i) {
        const GpuState& g = st.gpus[static_cast<std::size_t>(i)];
        if (!gpu_fits(g, nd)) continue;
        // GPUs in the same state give the same score; only the lowest index of each state can win.
        bool seen = false;
        for (int j = 0; j < i && !seen; ++j) {
          const GpuState& h = st.gpus[static_cast<std::size_t>(j)];
          seen = h.healthy && h.milli_free == g.milli_free && h.memory_free == g.memory_free;
        }
        if (seen) continue;
        const int saved = free[i];
        GpuState after = g;
        after.milli_free -= nd.milli;
        after.memory_free -= nd.mem;
        free[i] = gpu_share_free(after, spec.gpu_memory_mib);
        const double s = score_of(before - frag_of(free, n, cpu_after, mid, tp_), st, spec, pr, saved);
        free[i] = saved;
        if (best_gpu < 0 || s > best) {
          best = s;
          best_gpu = i;
        }
      }
      if (best_gpu < 0) return false;
      out.gpus = {best_gpu};
      out.score = best;
      return true;
    }
    if (!choose_gpus(spec, st, pr, nullptr, 0, out)) return false;
    for (int g : out.gpus) free[g] = 0;
    out.score = score_of(before - frag_of(free, n, cpu_after, mid, tp_), st, spec, pr, kMilli);
    return true;
  }

 private:
  double score_of(double delta, const NodeState& st, const NodeSpec& spec, const PreparedRequest& pr,
                  int gpu_free_before) const {
    if (kube_semantics_) return std::trunc(sigmoid(delta / 1000.0) * 100.0);
    if (!ours_) return delta;
    // kubetune: FGD's gradient read at a resolution of kDeltaBucket milli-GPU (smaller differences are below what
    // the typical-task estimate can resolve), then, among equal buckets, the node with the least leftover CPU and
    // GPU (best fit, weight < one bucket so it only orders ties), then the GPU that was already most used.
    // Measured on the Alibaba trace (benchmarks/gpu.md): lower unallocated GPU share than FGD's random ties.
    const double gpu_left = static_cast<double>(node_gpu_milli_free(spec, st));
    const double leftover = 0.5 * static_cast<double>(st.cpu_free - pr.req.cpu_milli) / kMaxSpecCpu +
                            0.5 * (gpu_left - static_cast<double>(pr.req.total_gpu_milli())) / kMaxSpecGpu;
    return std::floor(delta / kDeltaBucket) * kDeltaBucket - kLeftoverWeight * leftover -
           1e-3 * static_cast<double>(gpu_free_before) / kMilli;
  }

  static constexpr double kDeltaBucket = 20.0;     // milli-GPU
  static constexpr double kLeftoverWeight = 10.0;  // < kDeltaBucket: orders equal buckets only

  std::vector<TypicalPod> tp_;
  bool ours_;
};
}  // namespace

// ---------------------------------------------------------------- free functions
int gpu_share_free(const GpuState& g, std::int64_t gpu_memory_mib) noexcept {
  if (!g.healthy) return 0;
  if (gpu_memory_mib <= 0) return g.milli_free;
  const std::int64_t m = g.memory_free * kMilli / gpu_memory_mib;
  return static_cast<int>(std::min<std::int64_t>(g.milli_free, m));
}

std::int64_t node_gpu_milli_free(const NodeSpec& spec, const NodeState& st) noexcept {
  if (spec.mig) return 0;
  std::int64_t s = 0;
  for (const GpuState& g : st.gpus) s += gpu_share_free(g, spec.gpu_memory_mib);
  return s;
}

PreparedRequest prepare(const Cluster& c, Request r) {
  r.validate_and_normalise();
  PreparedRequest p;
  for (const std::string& m : r.models) {
    const int id = c.model_id(m);
    if (id >= 0) p.model_mask |= (std::uint64_t{1} << id);
  }
  if (!r.models.empty() && p.model_mask == 0) p.impossible_model = true;
  if (!r.mig_profile.empty()) {
    p.is_mig = true;
    const std::size_t nm = mig_models().size();
    for (std::size_t m = 0; m < nm && m < p.mig_on.size(); ++m)
      p.mig_on[m] = find_mig_profile(static_cast<int>(m), r.mig_profile);
  }
  p.key = std::to_string(r.cpu_milli) + "|" + std::to_string(r.memory_mib) + "|" + std::to_string(r.gpu_count) + "|" +
          std::to_string(r.gpu_milli) + "|" + std::to_string(r.gpu_memory_mib) + "|" + std::to_string(r.compute_milli) +
          "|" + std::to_string(p.model_mask) + "|" + (p.impossible_model ? "x" : "") + "|" + r.mig_profile;
  p.req = std::move(r);
  return p;
}

std::vector<TypicalPod> typical_pods(const Cluster& c, const std::vector<Request>& workload, double popularity,
                                     bool include_cpu_pods, bool gpu_weighted) {
  KT_CHECK(popularity > 0.0 && popularity <= 1.0, InvalidArgument, "popularity = ", popularity, " must be in (0, 1]");
  using Key = std::tuple<std::int64_t, int, int, std::uint64_t, bool>;
  std::map<Key, std::pair<double, std::size_t>> count;  // key -> (count, first appearance)
  double total = 0;
  std::size_t order = 0;
  for (const Request& r0 : workload) {
    PreparedRequest p = prepare(c, r0);
    const Request& r = p.req;
    if (r.gpu_count == 0 && !include_cpu_pods) continue;
    if (p.is_mig) continue;
    int milli = r.gpu_memory_mib > 0 ? std::max(1, r.compute_milli) : r.gpu_milli;
    // The model constraint is part of the shape; a task whose models are all absent from the cluster keeps that
    // fact (impossible) instead of collapsing to "any model" (mask 0).
    const bool impossible = r.gpu_count > 0 && p.impossible_model;
    Key k{r.cpu_milli, r.gpu_count, r.gpu_count == 0 ? 0 : milli, p.model_mask, impossible};
    const double wgt = gpu_weighted ? 1.0 + static_cast<double>(r.total_gpu_milli()) / kMilli : 1.0;
    auto it = count.find(k);
    if (it == count.end()) count.emplace(k, std::make_pair(wgt, order++));
    else it->second.first += wgt;
    total += wgt;
  }
  std::vector<std::pair<Key, std::pair<double, std::size_t>>> v(count.begin(), count.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    if (a.second.first != b.second.first) return a.second.first > b.second.first;
    return a.second.second < b.second.second;
  });
  std::vector<TypicalPod> out;
  double cum = 0;
  for (const auto& [k, cnt] : v) {
    if (cum >= popularity * total) break;
    cum += cnt.first;
    out.push_back(TypicalPod{std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), cnt.first, std::get<4>(k)});
  }
  for (TypicalPod& t : out) t.weight /= cum;
  return out;
}

std::vector<TypicalPod> kubetune_typical_pods(const Cluster& c, const std::vector<Request>& workload, double popularity) {
  const std::vector<TypicalPod> all = typical_pods(c, workload, 1.0, true, false);
  const std::vector<TypicalPod> by_count = typical_pods(c, workload, popularity, true, false);
  const std::vector<TypicalPod> by_gpu = typical_pods(c, workload, popularity, true, true);
  auto same = [](const TypicalPod& a, const TypicalPod& b) {
    return a.cpu_milli == b.cpu_milli && a.gpu_count == b.gpu_count && a.gpu_milli == b.gpu_milli &&
           a.model_mask == b.model_mask && a.impossible_model == b.impossible_model;
  };
  std::vector<TypicalPod> out;
  double sum = 0;
  for (const TypicalPod& t : all) {
    bool keep = false;
    for (const TypicalPod& x : by_count) keep = keep || same(t, x);
    for (const TypicalPod& x : by_gpu) keep = keep || same(t, x);
    if (keep) {
      out.push_back(t);
      sum += t.weight;
    }
  }
  for (TypicalPod& t : out) t.weight /= sum;
  return out;
}

double node_fragmentation(const NodeSpec& spec, int model_id, const NodeState& st, const std::vector<TypicalPod>& tp) {
  int free[kMaxGpus];
  const int n = collect_free(spec, st, free);
  return frag_of(free, n, st.cpu_free, model_id, tp);
}

bool node_fits(const Cluster& c, int node, const NodeState& st, const PreparedRequest& pr) {
  if (!basic_fits(c, node, st, pr)) return false;
  Choice ch;
  return choose_gpus(c.node(node), st, pr, pr.mig_for(c, node), 0, ch);
}

int gpushare_pick_gpu(const NodeSpec& spec, const NodeState& st, const PreparedRequest& pr) {
  if (spec.mig) return -1;
  const Need n = need_on(spec, pr.req);
  if (!n.ok) return -1;
  const bool by_memory = pr.req.gpu_memory_mib > 0;
  int g = -1;
  std::int64_t best = 0;
  for (int i = 0; i < static_cast<int>(st.gpus.size()); ++i) {
    const GpuState& gs = st.gpus[static_cast<std::size_t>(i)];
    if (!gpu_fits(gs, n)) continue;
    const std::int64_t f = by_memory ? gs.memory_free : gpu_share_free(gs, spec.gpu_memory_mib);
    if (g < 0 || f < best) {
      best = f;
      g = i;
    }
  }
  return g;
}

std::vector<int> pick_whole_gpus(const NodeSpec& spec, const NodeState& st, int k) {
  if (spec.mig) return {};
  std::vector<int> freeg;
  for (int i = 0; i < static_cast<int>(st.gpus.size()); ++i)
    if (gpu_share_free(st.gpus[static_cast<std::size_t>(i)], spec.gpu_memory_mib) == kMilli) freeg.push_back(i);
  if (static_cast<int>(freeg.size()) < k) return {};
  if (!spec.topology) return std::vector<int>(freeg.begin(), freeg.begin() + k);
  return spec.topology->best_subset(freeg, k);
}

std::shared_ptr<Policy> make_policy(const std::string& name, std::vector<TypicalPod> typical) {
  if (name == "best_fit" || name == "gpushare" || name == "binpack") return std::make_shared<BestFitPolicy>(false);
  if (name == "spread") return std::make_shared<BestFitPolicy>(true);
  if (name == "fgd") return std::make_shared<FgdPolicy>(std::move(typical), false);
  if (name == "kubetune") return std::make_shared<FgdPolicy>(std::move(typical), true);
  KT_THROW(InvalidArgument, "policy '", name, "' is unknown (expected best_fit, gpushare, spread, fgd, kubetune)");
}

std::vector<std::string> policy_names() { return {"best_fit", "gpushare", "spread", "fgd", "kubetune"}; }

}  // namespace kubetune::sched::gpu
