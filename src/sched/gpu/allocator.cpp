// Allocator: state, place/release/gang/snapshot, invariants and the per-shape incremental max-index.
#include "kubetune/sched/gpu/allocator.hpp"

#include <algorithm>
#include <limits>
#include <mutex>
#include <set>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// A node with nothing placed on it.
NodeState empty_state(const NodeSpec& s) {
  NodeState st;
  st.cpu_free = s.cpu_milli;
  st.memory_free = s.memory_mib;
  st.gpus.assign(static_cast<std::size_t>(s.num_gpus), GpuState{kMilli, s.gpu_memory_mib, MigState{}});
  return st;
}

/// What placement p holds on its node, given back to / taken from st (prof: its MIG profile, null otherwise).
void free_usage(NodeState& st, const Placement& p, const MigProfile* prof) {
  st.cpu_free += p.cpu_milli;
  st.memory_free += p.memory_mib;
  for (int g : p.gpus) {
    GpuState& gs = st.gpus[static_cast<std::size_t>(g)];
    if (prof) {
      gs.mig.release(*prof, p.mig_start);
    } else {
      gs.milli_free += p.gpu_milli;
      gs.memory_free += p.gpu_memory_mib;
    }
  }
}
}  // namespace

GangPreference parse_gang_preference(const std::string& s) {
  if (s == "none" || s.empty()) return GangPreference::kNone;
  if (s == "pack") return GangPreference::kPack;
  if (s == "spread") return GangPreference::kSpread;
  KT_THROW(InvalidArgument, "gang preference '", s, "' is not one of none, pack, spread");
}

// ---------------------------------------------------------------- index
/// One max segment tree of policy scores per request shape, refreshed lazily from a log of changed nodes:
/// a decision costs O((#nodes changed since this shape was last asked) x score + log N), not a scan.
struct Allocator::Index {
  struct Shape {
    PreparedRequest pr;
    std::vector<double> tree;  // 2 * size; leaves at [size, size + n)
    std::size_t log_pos = 0;   // absolute log position already applied
    std::uint64_t last_use = 0;
  };
  int n = 0;
  std::size_t size = 1;
  std::vector<int> log;
  std::size_t log_base = 0;
  std::unordered_map<std::string, std::unique_ptr<Shape>> shapes;
  std::uint64_t clock = 0;
  std::vector<std::uint64_t> stamp;  // per node: last refresh pass that re-scored it (dedupes the log)
  std::uint64_t pass = 0;

  explicit Index(int nodes) : n(nodes), stamp(static_cast<std::size_t>(std::max(0, nodes)), 0) {
    while (size < static_cast<std::size_t>(std::max(1, n))) size <<= 1;
  }
  void clear() {
    shapes.clear();
    log.clear();
    log_base = 0;
  }
  void set_leaf(Shape& s, int i, double v) {
    std::size_t p = size + static_cast<std::size_t>(i);
    s.tree[p] = v;
    for (p >>= 1; p >= 1; p >>= 1) s.tree[p] = std::max(s.tree[2 * p], s.tree[2 * p + 1]);
  }
  /// Leftmost leaf holding the maximum; -1 when all are -inf.
  int argmax(const Shape& s) const {
    if (s.tree[1] == kNegInf) return -1;
    std::size_t p = 1;
    while (p < size) p = (s.tree[2 * p] == s.tree[p]) ? 2 * p : 2 * p + 1;
    return static_cast<int>(p - size);
  }
};

Allocator::Allocator(Cluster cluster, std::shared_ptr<const Policy> policy, AllocatorOptions opt)
    : cluster_(std::move(cluster)), policy_(std::move(policy)), opt_(opt) {
  KT_CHECK(policy_ != nullptr, InvalidArgument, "allocator policy must not be null");
  KT_CHECK(opt_.max_shapes >= 1, InvalidArgument, "max_shapes = ", opt_.max_shapes, " must be >= 1");
  rng_ = kubetune::Rng(opt_.seed);  // ties under Kubernetes semantics: one seeded stream per allocator
  state_.reserve(static_cast<std::size_t>(cluster_.num_nodes()));
  for (const NodeSpec& s : cluster_.nodes()) state_.push_back(empty_state(s));
  index_ = std::make_unique<Index>(cluster_.num_nodes());
}

Allocator::~Allocator() = default;

void Allocator::touch(int node) {
  Index& ix = *index_;
  if (ix.shapes.empty()) return;
  ix.log.push_back(node);
  const std::size_t cap = std::max<std::size_t>(1 << 16, 4 * static_cast<std::size_t>(ix.n));
  if (ix.log.size() > cap) {  // compaction: shapes that fall behind are rebuilt when next asked
    const std::size_t drop = ix.log.size() / 2;
    ix.log.erase(ix.log.begin(), ix.log.begin() + static_cast<std::ptrdiff_t>(drop));
    ix.log_base += drop;
  }
}

int Allocator::choose_node(const PreparedRequest& pr, Choice& ch) {
  const int n = cluster_.num_nodes();
  if (!opt_.indexed || policy_->kube_semantics()) {
    int best = -1, ties = 0;
    double best_score = kNegInf;
    Choice tmp;
    for (int i = 0; i < n; ++i) {
      if (!policy_->evaluate(cluster_, i, state_[static_cast<std::size_t>(i)], pr, tmp)) continue;
      if (best < 0 || tmp.score > best_score) {
        best = i;
        best_score = tmp.score;
        ties = 1;
        ch = tmp;
      } else if (tmp.score == best_score && policy_->kube_semantics()) {
        // Kubernetes selectHost: uniform choice among the top scores (reservoir sampling).
        ++ties;
        if (rng_.below(static_cast<std::uint64_t>(ties)) == 0) {
          best = i;
          ch = tmp;
        }
      }
    }
    return best;
  }
  Index& ix = *index_;
  auto it = ix.shapes.find(pr.key);
  Index::Shape* s = nullptr;
  const std::size_t log_end = ix.log_base + ix.log.size();
  Choice tmp;
  auto rebuild = [&](Index::Shape& sh) {
    sh.tree.assign(2 * ix.size, kNegInf);
    for (int i = 0; i < n; ++i)
      sh.tree[ix.size + static_cast<std::size_t>(i)] =
          policy_->evaluate(cluster_, i, state_[static_cast<std::size_t>(i)], pr, tmp) ? tmp.score : kNegInf;
    for (std::size_t p = ix.size - 1; p >= 1; --p) sh.tree[p] = std::max(sh.tree[2 * p], sh.tree[2 * p + 1]);
    sh.log_pos = log_end;
  };
  if (it == ix.shapes.end()) {
    if (static_cast<int>(ix.shapes.size()) >= opt_.max_shapes) {
      auto victim = ix.shapes.begin();
      for (auto jt = ix.shapes.begin(); jt != ix.shapes.end(); ++jt)
        if (jt->second->last_use < victim->second->last_use) victim = jt;
      ix.shapes.erase(victim);
    }
    auto sh = std::make_unique<Index::Shape>();
    sh->pr = pr;
    s = sh.get();
    ix.shapes.emplace(pr.key, std::move(sh));
    rebuild(*s);
  } else {
    s = it->second.get();
    if (s->log_pos < ix.log_base || log_end - s->log_pos > static_cast<std::size_t>(n)) {
      rebuild(*s);
    } else {
      ++ix.pass;
      for (std::size_t p = s->log_pos; p < log_end; ++p) {
        const int i = ix.log[p - ix.log_base];
        if (ix.stamp[static_cast<std::size_t>(i)] == ix.pass) continue;
        ix.stamp[static_cast<std::size_t>(i)] = ix.pass;
        ix.set_leaf(*s, i,
                    policy_->evaluate(cluster_, i, state_[static_cast<std::size_t>(i)], pr, tmp) ? tmp.score : kNegInf);
      }
      s->log_pos = log_end;
    }
  }
  s->last_use = ++ix.clock;
  const int best = ix.argmax(*s);
  if (best >= 0 && !policy_->evaluate(cluster_, best, state_[static_cast<std::size_t>(best)], pr, ch))
    KT_THROW(StateError, "index out of date for node ", best);  // cannot happen: every change is logged
  return best;
}

void Allocator::apply(Placement& p, const PreparedRequest& pr) {
  NodeState& st = state_[static_cast<std::size_t>(p.node)];
  const NodeSpec& spec = cluster_.node(p.node);
  const Request& r = pr.req;
  p.cpu_milli = r.cpu_milli;
  p.memory_mib = r.memory_mib;
  p.name = r.name;
  p.gang = r.gang;
  p.mig_profile = r.mig_profile;
  KT_CHECK(st.cpu_free >= r.cpu_milli && st.memory_free >= r.memory_mib, StateError, "over-commit on node ",
           spec.name);
  if (pr.is_mig) {
    const MigProfile* prof = pr.mig_for(cluster_, p.node);
    KT_CHECK(prof != nullptr, StateError, "MIG profile ", r.mig_profile, " chosen for node ", spec.name,
             " that lacks it");
    for (int g : p.gpus) st.gpus[static_cast<std::size_t>(g)].mig.place(*prof, p.mig_start);
  } else if (r.gpu_count > 0) {
    if (r.gpu_memory_mib > 0) {
      p.gpu_milli = r.compute_milli;
      p.gpu_memory_mib = r.gpu_memory_mib;
    } else if (r.gpu_milli >= kMilli) {
      p.gpu_milli = kMilli;
      p.gpu_memory_mib = spec.gpu_memory_mib;
    } else {
      p.gpu_milli = r.gpu_milli;
      p.gpu_memory_mib = spec.gpu_memory_mib > 0 ? static_cast<std::int64_t>(r.gpu_milli) * spec.gpu_memory_mib / kMilli : 0;
    }
    for (int g : p.gpus) {
      GpuState& gs = st.gpus[static_cast<std::size_t>(g)];
      KT_CHECK(gs.milli_free >= p.gpu_milli && gs.memory_free >= p.gpu_memory_mib, StateError, "over-commit of GPU ",
               g, " on node ", spec.name);
    }
    for (int g : p.gpus) {
      GpuState& gs = st.gpus[static_cast<std::size_t>(g)];
      gs.milli_free -= p.gpu_milli;
      gs.memory_free -= p.gpu_memory_mib;
    }
  }
  st.cpu_free -= r.cpu_milli;
  st.memory_free -= r.memory_mib;
  touch(p.node);
}

void Allocator::unapply(const Placement& p) {
  free_usage(state_[static_cast<std::size_t>(p.node)], p, p.mig_profile.empty() ? nullptr : &mig_of(p));
  touch(p.node);
}

std::optional<Placement> Allocator::place_locked(const PreparedRequest& pr, int only_node,
                                                 const std::vector<int>* prefer) {
  Choice ch;
  int node = -1;
  if (only_node >= 0) {
    if (policy_->evaluate(cluster_, only_node, state_[static_cast<std::size_t>(only_node)], pr, ch)) node = only_node;
  } else if (prefer && !prefer->empty()) {
    double best = kNegInf;
    Choice tmp;
    for (int i : *prefer) {
      if (policy_->evaluate(cluster_, i, state_[static_cast<std::size_t>(i)], pr, tmp) && (node < 0 || tmp.score > best)) {
        node = i;
        best = tmp.score;
        ch = tmp;
      }
    }
    if (node < 0) node = choose_node(pr, ch);
  } else {
    node = choose_node(pr, ch);
  }
  if (node < 0) return std::nullopt;
  Placement p;
  p.node = node;
  p.gpus = ch.gpus;
  p.mig_start = ch.mig_start;
  apply(p, pr);
  return record(std::move(p));
}

Placement Allocator::record(Placement p) {
  p.id = next_id_++;
  placements_.emplace(p.id, p);
  if (!p.name.empty()) by_name_[p.name] = p.id;
  return p;
}

std::optional<Placement> Allocator::place(const Request& r) {
  PreparedRequest pr = prepare(cluster_, r);
  std::unique_lock lock(mu_);
  return place_locked(pr, -1, nullptr);
}

std::optional<Placement> Allocator::place_on(const Request& r, int node) {
  KT_CHECK(node >= 0 && node < cluster_.num_nodes(), NotFound, "node index ", node, " out of range");
  PreparedRequest pr = prepare(cluster_, r);
  if (pr.is_mig && cluster_.node_mig_model(node) >= 0 && pr.mig_for(cluster_, node) == nullptr)
    (void)mig_profile(cluster_.node(node).model, pr.req.mig_profile);  // throws, naming profile and model
  std::unique_lock lock(mu_);
  KT_CHECK(r.name.empty() || !by_name_.count(r.name), StateError, "pod ", r.name, " is already placed");
  return place_locked(pr, node, nullptr);
}

std::optional<Placement> Allocator::place_pinned(const Request& r, int node, const std::vector<int>& gpus,
                                                 int mig_start) {
  KT_CHECK(node >= 0 && node < cluster_.num_nodes(), NotFound, "node index ", node, " out of range");
  PreparedRequest pr = prepare(cluster_, r);
  const NodeSpec& spec = cluster_.node(node);
  const std::size_t want = pr.req.gpu_count > 0 ? static_cast<std::size_t>(pr.req.gpu_count) : 0;
  KT_CHECK(gpus.size() == want, InvalidArgument, "pod ", r.name, " asks for ", want, " GPU(s) but ", gpus.size(),
           " GPU index(es) were recorded for it on node ", spec.name);
  std::set<int> seen;
  for (int g : gpus)
    KT_CHECK(g >= 0 && g < spec.num_gpus && seen.insert(g).second, InvalidArgument, "GPU index ", g, " of pod ",
             r.name, " is out of range [0, ", spec.num_gpus, ") or repeated on node ", spec.name);
  const MigProfile* mig = pr.mig_for(cluster_, node);
  if (pr.is_mig) {
    KT_CHECK(mig != nullptr, InvalidArgument, "pod ", r.name, ": MIG profile ", r.mig_profile,
             " does not exist on node ", spec.name);
    KT_CHECK(mig_start >= 0, InvalidArgument, "pod ", r.name, " is a MIG pod without a recorded start slot");
  }
  std::unique_lock lock(mu_);
  KT_CHECK(r.name.empty() || !by_name_.count(r.name), StateError, "pod ", r.name, " is already placed");
  const NodeState& st = state_[static_cast<std::size_t>(node)];
  if (st.cpu_free < pr.req.cpu_milli || st.memory_free < pr.req.memory_mib) return std::nullopt;
  if (mig != nullptr && !st.gpus[static_cast<std::size_t>(gpus[0])].mig.can_place(*mig, mig_start)) return std::nullopt;
  Placement p;
  p.node = node;
  p.gpus = gpus;
  p.mig_start = pr.is_mig ? mig_start : -1;
  try {
    apply(p, pr);  // checks every GPU before it changes any
  } catch (const StateError&) {
    return std::nullopt;
  }
  return record(std::move(p));
}

std::optional<std::vector<Placement>> Allocator::place_gang(const std::vector<Request>& members, GangPreference pref) {
  std::vector<PreparedRequest> prs;
  prs.reserve(members.size());
  for (const Request& r : members) prs.push_back(prepare(cluster_, r));
  std::unique_lock lock(mu_);
  std::vector<Placement> done;
  std::vector<int> used;
  for (const PreparedRequest& pr : prs) {
    std::optional<Placement> p;
    if (pref == GangPreference::kPack) {
      p = place_locked(pr, -1, &used);
    } else if (pref == GangPreference::kSpread && !used.empty()) {
      // Best-scoring node not yet used by the gang; any node when none is left.
      Choice tmp, ch;
      int node = -1;
      double best = kNegInf;
      for (int i = 0; i < cluster_.num_nodes(); ++i) {
        if (std::find(used.begin(), used.end(), i) != used.end()) continue;
        if (policy_->evaluate(cluster_, i, state_[static_cast<std::size_t>(i)], pr, tmp) && (node < 0 || tmp.score > best)) {
          node = i;
          best = tmp.score;
        }
      }
      p = place_locked(pr, node, nullptr);
      if (!p && node < 0) p = place_locked(pr, -1, nullptr);
    } else {
      p = place_locked(pr, -1, nullptr);
    }
    if (!p) {  // roll back: all or nothing
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        unapply(*it);
        placements_.erase(it->id);
        if (!it->name.empty()) by_name_.erase(it->name);
      }
      return std::nullopt;
    }
    if (std::find(used.begin(), used.end(), p->node) == used.end()) used.push_back(p->node);
    done.push_back(*p);
  }
  return done;
}

const MigProfile& Allocator::mig_of(const Placement& p) const {
  const MigProfile* prof = find_mig_profile(cluster_.node_mig_model(p.node), p.mig_profile);
  KT_CHECK(prof != nullptr, StateError, "placement ", p.id, ": MIG profile ", p.mig_profile,
           " does not exist on node ", cluster_.node(p.node).name);
  return *prof;
}

void Allocator::check_gpu(int node, int gpu) const {
  KT_CHECK(node >= 0 && node < cluster_.num_nodes(), NotFound, "node index ", node, " out of range [0, ",
           cluster_.num_nodes(), ")");
  const int n = cluster_.node(node).num_gpus;
  KT_CHECK(gpu >= 0 && gpu < n, InvalidArgument, "gpu = ", gpu, " is out of range [0, ", n, ") on node '",
           cluster_.node(node).name, "'");
}

std::vector<Placement> Allocator::set_gpu_health(int node, int gpu, bool healthy) {
  check_gpu(node, gpu);
  std::unique_lock lock(mu_);
  GpuState& g = state_[static_cast<std::size_t>(node)].gpus[static_cast<std::size_t>(gpu)];
  if (g.healthy != healthy) {
    g.healthy = healthy;
    touch(node);  // scores of this node change
  }
  std::vector<Placement> on;
  for (const auto& [id, p] : placements_)
    if (p.node == node && std::find(p.gpus.begin(), p.gpus.end(), gpu) != p.gpus.end()) on.push_back(p);
  return on;
}

bool Allocator::gpu_healthy(int node, int gpu) const {
  check_gpu(node, gpu);
  std::shared_lock lock(mu_);
  return state_[static_cast<std::size_t>(node)].gpus[static_cast<std::size_t>(gpu)].healthy;
}

std::vector<std::pair<int, int>> Allocator::unhealthy_gpus() const {
  std::shared_lock lock(mu_);
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = 0; i < state_.size(); ++i)
    for (std::size_t g = 0; g < state_[i].gpus.size(); ++g)
      if (!state_[i].gpus[g].healthy) out.emplace_back(static_cast<int>(i), static_cast<int>(g));
  return out;
}

std::vector<Placement> Allocator::placements_on_unhealthy() const {
  std::shared_lock lock(mu_);
  std::vector<Placement> out;
  for (const auto& [id, p] : placements_) {
    bool bad = false;
    for (int g : p.gpus) bad = bad || !state_[static_cast<std::size_t>(p.node)].gpus[static_cast<std::size_t>(g)].healthy;
    if (bad) out.push_back(p);
  }
  return out;
}

void Allocator::release(std::uint64_t id) {
  std::unique_lock lock(mu_);
  auto it = placements_.find(id);
  KT_CHECK(it != placements_.end(), NotFound, "placement id ", id, " is unknown");
  unapply(it->second);
  if (!it->second.name.empty()) {
    auto jt = by_name_.find(it->second.name);
    if (jt != by_name_.end() && jt->second == id) by_name_.erase(jt);
  }
  placements_.erase(it);
}

bool Allocator::release_by_name(const std::string& name) {
  std::uint64_t id = 0;
  {
    std::shared_lock lock(mu_);
    auto it = by_name_.find(name);
    if (it == by_name_.end()) return false;
    id = it->second;
  }
  try {
    release(id);
  } catch (const NotFound&) {
    return false;
  }
  return true;
}

std::vector<int> Allocator::feasible_nodes(const Request& r, const std::vector<int>& candidates,
                                           std::vector<std::string>* reasons, std::vector<char>* unresolvable) const {
  PreparedRequest pr = prepare(cluster_, r);
  std::shared_lock lock(mu_);
  std::vector<int> out;
  Choice ch;
  for (int i : candidates) {
    KT_CHECK(i >= 0 && i < cluster_.num_nodes(), NotFound, "node index ", i, " out of range");
    const NodeState& st = state_[static_cast<std::size_t>(i)];
    if (policy_->evaluate(cluster_, i, st, pr, ch)) {
      out.push_back(i);
    } else if (reasons) {
      std::string why;
      if (st.cpu_free < pr.req.cpu_milli) why = "insufficient cpu";
      else if (st.memory_free < pr.req.memory_mib) why = "insufficient memory";
      else if (pr.req.gpu_count > 0 && cluster_.node(i).num_gpus == 0) why = "no GPU on node";
      else if (pr.model_mask && !((pr.model_mask >> std::max(0, cluster_.node_model_id(i))) & 1u)) why = "GPU model not allowed";
      else if (pr.is_mig && cluster_.node_mig_model(i) < 0) why = "node GPUs are not in MIG mode";
      else if (pr.is_mig && !pr.mig_for(cluster_, i))
        why = "MIG profile '" + pr.req.mig_profile + "' does not exist on GPU model '" + cluster_.node(i).model +
              "' (" + mig_models()[static_cast<std::size_t>(cluster_.node_mig_model(i))].name + " profiles: " +
              mig_profile_names(cluster_.node_mig_model(i)) + ")";
      else {
        why = "insufficient GPU resources";
        int bad = 0;
        for (const GpuState& g : st.gpus) bad += g.healthy ? 0 : 1;
        if (bad > 0) why += " (" + std::to_string(bad) + " unhealthy GPU" + (bad > 1 ? "s" : "") + ")";
      }
      reasons->push_back(cluster_.node(i).name + ": " + why);
      if (unresolvable) {
        NodeState empty = empty_state(cluster_.node(i));
        for (std::size_t g = 0; g < empty.gpus.size(); ++g) empty.gpus[g].healthy = st.gpus[g].healthy;
        unresolvable->push_back(policy_->evaluate(cluster_, i, empty, pr, ch) ? 0 : 1);
      }
    }
  }
  return out;
}

bool Allocator::fits_without(const Request& r, int node, const std::vector<std::string>& victims) const {
  KT_CHECK(node >= 0 && node < cluster_.num_nodes(), NotFound, "node index ", node, " out of range");
  PreparedRequest pr = prepare(cluster_, r);
  std::shared_lock lock(mu_);
  NodeState st = state_[static_cast<std::size_t>(node)];  // simulated on a copy
  for (const std::string& v : victims) {
    auto it = by_name_.find(v);
    if (it == by_name_.end()) continue;
    const Placement& p = placements_.at(it->second);
    if (p.node == node) free_usage(st, p, p.mig_profile.empty() ? nullptr : &mig_of(p));
  }
  Choice ch;
  return policy_->evaluate(cluster_, node, st, pr, ch);
}

std::optional<double> Allocator::score(const Request& r, int node) const {
  KT_CHECK(node >= 0 && node < cluster_.num_nodes(), NotFound, "node index ", node, " out of range");
  PreparedRequest pr = prepare(cluster_, r);
  std::shared_lock lock(mu_);
  Choice ch;
  if (!policy_->evaluate(cluster_, node, state_[static_cast<std::size_t>(node)], pr, ch)) return std::nullopt;
  return ch.score;
}

Snapshot Allocator::snapshot() const {
  std::shared_lock lock(mu_);
  return Snapshot{state_, placements_, next_id_};
}

void Allocator::restore(const Snapshot& s) {
  KT_CHECK(s.nodes.size() == state_.size(), InvalidArgument, "snapshot has ", s.nodes.size(),
           " nodes but the cluster has ", state_.size());
  std::unique_lock lock(mu_);
  state_ = s.nodes;
  placements_ = s.placements;
  next_id_ = s.next_id;
  by_name_.clear();
  for (const auto& [id, p] : placements_)
    if (!p.name.empty()) by_name_[p.name] = id;
  index_->clear();
}

NodeState Allocator::node_state(int node) const {
  KT_CHECK(node >= 0 && node < cluster_.num_nodes(), NotFound, "node index ", node, " out of range");
  std::shared_lock lock(mu_);
  return state_[static_cast<std::size_t>(node)];
}

std::optional<Placement> Allocator::placement(std::uint64_t id) const {
  std::shared_lock lock(mu_);
  auto it = placements_.find(id);
  if (it == placements_.end()) return std::nullopt;
  return it->second;
}

std::optional<Placement> Allocator::placement_by_name(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return placements_.at(it->second);
}

AllocatorStats Allocator::stats(const std::vector<TypicalPod>& typical) const {
  std::shared_lock lock(mu_);
  AllocatorStats s;
  s.placements = static_cast<std::int64_t>(placements_.size());
  double free_total = 0;
  for (int i = 0; i < cluster_.num_nodes(); ++i) {
    const NodeSpec& spec = cluster_.node(i);
    const NodeState& st = state_[static_cast<std::size_t>(i)];
    std::int64_t healthy = 0;
    for (const GpuState& g : st.gpus) healthy += g.healthy ? 1 : 0;
    s.unhealthy_gpus += static_cast<std::int64_t>(st.gpus.size()) - healthy;
    s.gpu_milli_capacity += healthy * kMilli;
    s.cpu_milli_allocated += spec.cpu_milli - st.cpu_free;
    if (spec.mig) {
      for (const GpuState& g : st.gpus) {
        if (!g.healthy) continue;
        s.gpu_milli_allocated += static_cast<std::int64_t>(g.mig.compute_used) * kMilli / kMigComputeSlices;
        s.fully_free_gpus += g.mig.empty();
      }
      continue;
    }
    const std::int64_t f = node_gpu_milli_free(spec, st);  // unhealthy GPUs contribute 0
    free_total += static_cast<double>(f);
    s.gpu_milli_allocated += healthy * kMilli - f;
    for (const GpuState& g : st.gpus) s.fully_free_gpus += gpu_share_free(g, spec.gpu_memory_mib) == kMilli;
    if (!typical.empty()) s.fragmentation_milli += node_fragmentation(spec, cluster_.node_model_id(i), st, typical);
  }
  s.fragmentation_ratio = free_total > 0 ? s.fragmentation_milli / free_total : 0.0;
  if (s.unhealthy_gpus > 0)
    for (const auto& [id, p] : placements_) {
      bool bad = false;
      for (int g : p.gpus) bad = bad || !state_[static_cast<std::size_t>(p.node)].gpus[static_cast<std::size_t>(g)].healthy;
      s.placements_on_unhealthy += bad ? 1 : 0;
    }
  return s;
}

void Allocator::check_invariants() const {
  std::shared_lock lock(mu_);
  const int n = cluster_.num_nodes();
  std::vector<NodeState> expect(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const NodeSpec& s = cluster_.node(i);
    NodeState& st = expect[static_cast<std::size_t>(i)];
    st = empty_state(s);
    const NodeState& actual = state_[static_cast<std::size_t>(i)];
    KT_CHECK(actual.gpus.size() == st.gpus.size(), StateError, "node ", s.name, " has ", actual.gpus.size(),
             " GPU states for ", s.num_gpus, " GPUs");
    for (std::size_t g = 0; g < st.gpus.size(); ++g) st.gpus[g].healthy = actual.gpus[g].healthy;  // not derived
  }
  for (const auto& [id, p] : placements_) {
    KT_CHECK(p.node >= 0 && p.node < n, StateError, "placement ", id, " on bad node ", p.node);
    NodeState& st = expect[static_cast<std::size_t>(p.node)];
    st.cpu_free -= p.cpu_milli;
    st.memory_free -= p.memory_mib;
    std::set<int> seen;
    for (int g : p.gpus) {
      KT_CHECK(g >= 0 && g < static_cast<int>(st.gpus.size()) && seen.insert(g).second, StateError, "placement ", id,
               " has bad GPU list");
      GpuState& gs = st.gpus[static_cast<std::size_t>(g)];
      if (!p.mig_profile.empty()) {
        gs.mig.place(mig_of(p), p.mig_start);  // throws StateError on overlap
      } else {
        gs.milli_free -= p.gpu_milli;
        gs.memory_free -= p.gpu_memory_mib;
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    const NodeState& a = expect[static_cast<std::size_t>(i)];
    const NodeState& b = state_[static_cast<std::size_t>(i)];
    const std::string& nm = cluster_.node(i).name;
    KT_CHECK(a.cpu_free >= 0 && a.memory_free >= 0, StateError, "node ", nm, " over-committed on CPU or memory");
    KT_CHECK(a.cpu_free == b.cpu_free && a.memory_free == b.memory_free, StateError, "node ", nm,
             " CPU/memory accounting mismatch");
    for (std::size_t g = 0; g < a.gpus.size(); ++g) {
      const GpuState& x = a.gpus[g];
      const GpuState& y = b.gpus[g];
      KT_CHECK(x.milli_free >= 0 && x.memory_free >= 0, StateError, "node ", nm, " GPU ", g, " over-committed");
      KT_CHECK(x.milli_free == y.milli_free && x.memory_free == y.memory_free && x.mig.used_mask == y.mig.used_mask &&
                   x.mig.compute_used == y.mig.compute_used && x.mig.media_ext_used == y.mig.media_ext_used,
               StateError, "node ", nm, " GPU ", g, " accounting mismatch");
    }
  }
}

}  // namespace kubetune::sched::gpu
