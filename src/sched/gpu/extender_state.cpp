// The extender's cluster state from the Kubernetes API: a full sync from node and pod lists, watch events, the
// allocator rebuilt (placements pinned) when nodes change, pending-pod expiry, status and Prometheus metrics.
#include <algorithm>
#include <limits>
#include <sstream>

#include "extender_impl.hpp"
#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

using nlohmann::json;
using State = PodRecord::State;

namespace {
json parse_object(std::string_view text, const char* what, int max_depth) {
  check_json_depth(text, std::string(what) + " JSON", max_depth);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    KT_THROW(InvalidArgument, what, " JSON does not parse: ", e.what());
  }
  KT_CHECK(j.is_object(), InvalidArgument, what, " JSON must be an object");
  return j;
}

const json& items_of(const json& list, const char* what) {
  const json* items = go_field(list, "items");
  static const json kEmpty = json::array();
  if (items == nullptr) return kEmpty;
  KT_CHECK(items->is_array(), InvalidArgument, what, ".items must be an array");
  return *items;
}

std::string str_at(const json& j, const char* key) {
  const json* v = go_field(j, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

bool same_node(const NodeSpec& a, const NodeSpec& b) {
  return a.name == b.name && a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib && a.num_gpus == b.num_gpus &&
         a.gpu_memory_mib == b.gpu_memory_mib && a.gpu_memory_total_mib == b.gpu_memory_total_mib &&
         a.gpu_memory_unit_mib == b.gpu_memory_unit_mib && a.model == b.model && a.mig == b.mig;
}

/// A pod as the watch or a list shows it.
struct SeenPod {
  std::string key, uid, node;
  bool terminal = false;  // Succeeded or Failed: its GPUs are free
  bool gpu = false;       // asks for GPUs (the extender ignores other pods)
  Request req;
  std::vector<int> gpus;  // ALIYUN_COM_GPU_MEM_IDX
  int mig_start = -1;
};

SeenPod seen_pod(const json& pod, const ExtenderConfig& cfg) {
  SeenPod s;
  const json* meta = go_field(pod, "metadata");
  KT_CHECK(meta && meta->is_object(), InvalidArgument, "pod lacks metadata");
  const std::string name = str_at(*meta, "name");
  KT_CHECK(!name.empty(), InvalidArgument, "pod metadata.name is missing");
  s.key = pod_key(str_at(*meta, "namespace"), name);
  s.uid = str_at(*meta, "uid");
  if (const json* spec = go_field(pod, "spec")) s.node = str_at(*spec, "nodeName");
  if (const json* status = go_field(pod, "status")) {
    const std::string phase = str_at(*status, "phase");
    s.terminal = phase == "Succeeded" || phase == "Failed";
  }
  s.req = request_from_pod(pod, cfg);
  s.gpu = s.req.gpu_count > 0;
  if (const json* anno = go_field(*meta, "annotations"); anno && anno->is_object()) {
    constexpr int kAny = std::numeric_limits<int>::max();  // place_pinned checks the range on the node
    s.gpus = index_list(str_at(*anno, kAnnoGpuIndex), kAny, "pod " + s.key + ": annotation " + kAnnoGpuIndex);
    const std::vector<int> mig =
        index_list(str_at(*anno, kAnnoMigStart), kAny, "pod " + s.key + ": annotation " + kAnnoMigStart);
    if (!mig.empty()) s.mig_start = mig[0];
  }
  return s;
}

PodRecord bound_record(SeenPod&& s) {
  PodRecord rec;
  rec.state = State::kBound;
  rec.req = std::move(s.req);
  rec.uid = std::move(s.uid);
  rec.node = std::move(s.node);
  rec.gpus = std::move(s.gpus);
  rec.mig_start = s.mig_start;
  return rec;
}
}  // namespace

// ---------------------------------------------------------------- records
PodRecord& Extender::Impl::record(const std::string& key) {
  auto [it, fresh] = pods.try_emplace(key);
  if (fresh) ++pending;
  return it->second;
}

void Extender::Impl::set_state(PodRecord& rec, State s) {
  if (rec.state == State::kPending && s != State::kPending) --pending;
  if (rec.state != State::kPending && s == State::kPending) ++pending;
  rec.state = s;
}

void Extender::Impl::erase_record(const std::string& key) {
  auto it = pods.find(key);
  if (it == pods.end()) return;
  if (it->second.state == State::kPending) --pending;
  if (!it->second.uid.empty()) {
    auto u = uid_key.find(it->second.uid);
    if (u != uid_key.end() && u->second == key) uid_key.erase(u);
  }
  pods.erase(it);
}

void Extender::Impl::sweep_pending(const ExtenderConfig& cfg, double t) {
  last_sweep = t;
  std::vector<std::pair<double, std::string>> live;
  std::vector<std::string> expired;
  for (const auto& [key, rec] : pods) {
    if (rec.state != State::kPending) continue;
    if (t - rec.since > cfg.pending_ttl_s) expired.push_back(key);
    else live.emplace_back(rec.since, key);
  }
  if (live.size() > cfg.max_pending) {  // the oldest beyond the bound go too
    const std::size_t drop = live.size() - cfg.max_pending;
    std::nth_element(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(drop), live.end());
    for (std::size_t k = 0; k < drop; ++k) expired.push_back(live[k].second);
  }
  for (const std::string& key : expired) erase_record(key);
  n.pending_expired += static_cast<std::int64_t>(expired.size());
}

bool Extender::Impl::place_record(Allocator& a, PodRecord& rec) {
  rec.placed = false;
  const int i = a.cluster().find_node(rec.node);
  if (i < 0) return true;  // its node is not (yet) known: placed when it is
  std::optional<Placement> p;
  try {
    p = rec.gpus.empty() ? a.place_on(rec.req, i) : a.place_pinned(rec.req, i, rec.gpus, rec.mig_start);
  } catch (const InvalidArgument&) {
    // Recorded indices that do not match the request (a foreign annotation): let the allocator choose.
    p = a.place_on(rec.req, i);
  }
  if (!p) {
    ++n.pin_conflicts;
    return false;
  }
  rec.placed = true;
  rec.gpus = p->gpus;
  rec.mig_start = p->mig_start;
  return true;
}

void Extender::Impl::rebuild() {
  Cluster c;
  std::vector<NodeSpec> kept;
  for (const NodeSpec& s : specs) {
    try {
      c.add_node(s);
      kept.push_back(s);
    } catch (const InvalidArgument&) {
      ++n.bad_objects;  // e.g. MIG mode on a model without a MIG profile table
    }
  }
  specs = std::move(kept);
  auto a = std::make_shared<Allocator>(std::move(c), policy, aopt);
  for (const auto& [node, gpus] : unhealthy) {
    const int i = a->cluster().find_node(node);
    if (i >= 0)
      for (int g : gpus)
        if (g < a->cluster().node(i).num_gpus) a->set_gpu_health(i, g, false);
  }
  for (auto& entry : pods) {
    PodRecord& rec = entry.second;
    if (rec.state == State::kBound || (rec.state == State::kBinding && rec.placed)) place_record(*a, rec);
  }
  alloc = std::move(a);
  ++n.rebuilds;
}

// ---------------------------------------------------------------- sync and watch events
void Extender::sync(std::string_view node_list_json, std::string_view pod_list_json) {
  Impl& im = *impl_;
  const json nodes = parse_object(node_list_json, "node list", cfg_.max_json_depth);
  const json pods = parse_object(pod_list_json, "pod list", cfg_.max_json_depth);
  std::vector<NodeSpec> specs;
  std::map<std::string, std::vector<int>> unhealthy;
  for (const json& n : items_of(nodes, "node list")) {
    try {
      NodeSpec s = node_spec_from_kube_node(n, cfg_.gpu_mem_unit_mib);
      if (unhealthy.count(s.name)) continue;  // a repeated name: the first wins
      unhealthy[s.name] = unhealthy_gpus_of_kube_node(n, s.num_gpus);
      specs.push_back(std::move(s));
    } catch (const std::exception&) {
      ++im.n.bad_objects;  // one malformed Node does not stop the others
    }
  }
  std::unordered_map<std::string, PodRecord> listed;
  for (const json& p : items_of(pods, "pod list")) {
    try {
      SeenPod s = seen_pod(p, cfg_);
      if (s.gpu && !s.node.empty() && !s.terminal) {
        const std::string key = s.key;
        listed.emplace(key, bound_record(std::move(s)));
      }
    } catch (const std::exception&) {
      ++im.n.bad_objects;
    }
  }
  std::unique_lock lock(im.alloc_mu);
  std::lock_guard plock(im.pods_mu);
  const double t = Impl::now();
  for (auto it = im.pods.begin(); it != im.pods.end();) {  // what the lists cannot know yet is kept
    const PodRecord& rec = it->second;
    const bool keep = !listed.count(it->first) &&
                      (rec.state != State::kBound || (rec.by_us && t - rec.since < cfg_.assume_grace_s));
    if (keep) {
      ++it;
    } else {
      const std::string key = it++->first;
      im.erase_record(key);
    }
  }
  for (auto& [key, rec] : listed) {
    if (!rec.uid.empty()) im.uid_key[rec.uid] = key;
    im.pods.emplace(key, std::move(rec));
  }
  im.specs = std::move(specs);
  im.unhealthy = std::move(unhealthy);
  im.rebuild();
  ++im.n.syncs;
  ready_ = true;
}

void Extender::node_event(std::string_view type, std::string_view node_json) {
  Impl& im = *impl_;
  KT_CHECK(type == "ADDED" || type == "MODIFIED" || type == "DELETED", InvalidArgument, "node watch event type '",
           std::string(type), "' is not ADDED, MODIFIED or DELETED");
  const json n = parse_object(node_json, "node", cfg_.max_json_depth);
  ++im.n.node_events;
  std::unique_lock lock(im.alloc_mu);
  std::lock_guard plock(im.pods_mu);
  if (type == "DELETED") {
    const json* meta = go_field(n, "metadata");
    const std::string name = meta ? str_at(*meta, "name") : std::string();
    auto it = std::find_if(im.specs.begin(), im.specs.end(), [&](const NodeSpec& s) { return s.name == name; });
    if (it == im.specs.end()) return;
    im.specs.erase(it);
    im.unhealthy.erase(name);
    im.rebuild();
    return;
  }
  NodeSpec spec = node_spec_from_kube_node(n, cfg_.gpu_mem_unit_mib);
  std::vector<int> bad = unhealthy_gpus_of_kube_node(n, spec.num_gpus);
  auto it = std::find_if(im.specs.begin(), im.specs.end(), [&](const NodeSpec& s) { return s.name == spec.name; });
  if (it != im.specs.end() && same_node(*it, spec)) {  // only its health may have changed: no rebuild
    const int i = im.alloc->cluster().find_node(spec.name);
    if (i < 0) return;
    for (int g = 0; g < spec.num_gpus; ++g)
      im.alloc->set_gpu_health(i, g, std::find(bad.begin(), bad.end(), g) == bad.end());
    im.unhealthy[spec.name] = std::move(bad);
    return;
  }
  if (it != im.specs.end()) *it = spec;  // resized, relabelled
  else im.specs.push_back(spec);
  im.unhealthy[spec.name] = std::move(bad);
  im.rebuild();
}

void Extender::pod_event(std::string_view type, std::string_view pod_json) {
  Impl& im = *impl_;
  KT_CHECK(type == "ADDED" || type == "MODIFIED" || type == "DELETED", InvalidArgument, "pod watch event type '",
           std::string(type), "' is not ADDED, MODIFIED or DELETED");
  SeenPod s = seen_pod(parse_object(pod_json, "pod", cfg_.max_json_depth), cfg_);
  ++im.n.pod_events;
  std::shared_lock lock(im.alloc_mu);
  std::lock_guard plock(im.pods_mu);
  auto it = im.pods.find(s.key);
  PodRecord* rec = it == im.pods.end() ? nullptr : &it->second;
  if (rec && rec->state == State::kBinding) {  // the bind in flight owns it; a deletion ends it there
    rec->deleted = rec->deleted || type == "DELETED" || s.terminal;
    return;
  }
  if (type == "DELETED" || s.terminal) {
    if (rec) {
      if (rec->placed && im.alloc->release_by_name(s.key)) ++im.n.releases;
      im.erase_record(s.key);
    }
    return;
  }
  if (!s.gpu || s.node.empty()) return;  // not ours, or not bound yet
  if (rec && rec->state == State::kBound && rec->node == s.node && (s.gpus.empty() || s.gpus == rec->gpus)) {
    rec->by_us = false;  // the API server confirms what we hold
    return;
  }
  // Bound elsewhere, by someone else, or before this extender started: adopt it where it is.
  if (rec && rec->placed) im.alloc->release_by_name(s.key);
  if (rec) im.erase_record(s.key);
  const std::string key = s.key;
  PodRecord fresh = bound_record(std::move(s));
  if (!fresh.uid.empty()) im.uid_key[fresh.uid] = key;
  PodRecord& r = im.pods.emplace(key, std::move(fresh)).first->second;
  im.place_record(*im.alloc, r);
}

// ---------------------------------------------------------------- status and metrics
ExtenderStatus Extender::status() const {
  const Impl& im = *impl_;
  ExtenderStatus st;
  st.ready = ready_;
  std::shared_lock lock(im.alloc_mu);
  st.nodes = im.alloc->cluster().num_nodes();
  st.gpus = im.alloc->cluster().total_gpus();
  st.alloc = im.alloc->stats();
  st.placements = st.alloc.placements;
  {
    std::lock_guard plock(im.pods_mu);
    st.pending = im.pending;
    for (const auto& [key, rec] : im.pods) st.binding += rec.state == State::kBinding ? 1 : 0;
  }
  const auto& n = im.n;
  st.counters = ExtenderCounters{.filter = n.filter,
                                 .prioritize = n.prioritize,
                                 .bind = n.bind,
                                 .preempt = n.preempt,
                                 .bad_requests = n.bad_requests,
                                 .bind_ok = n.bind_ok,
                                 .bind_failed = n.bind_failed,
                                 .rollbacks = n.rollbacks,
                                 .bind_conflicts = n.bind_conflicts,
                                 .releases = n.releases,
                                 .pin_conflicts = n.pin_conflicts,
                                 .syncs = n.syncs,
                                 .node_events = n.node_events,
                                 .pod_events = n.pod_events,
                                 .rebuilds = n.rebuilds,
                                 .pending_expired = n.pending_expired,
                                 .bad_objects = n.bad_objects};
  return st;
}

std::string Extender::metrics_text() const {
  const ExtenderStatus s = status();
  const ExtenderCounters& c = s.counters;
  std::ostringstream o;
  auto metric = [&](const char* name, const char* type, const char* help,
                    std::initializer_list<std::pair<const char*, std::int64_t>> values) {
    o << "# HELP kubetune_extender_" << name << ' ' << help << "\n# TYPE kubetune_extender_" << name << ' ' << type
      << '\n';
    for (const auto& [labels, v] : values) o << "kubetune_extender_" << name << labels << ' ' << v << '\n';
  };
  metric("ready", "gauge", "1 once the first sync from the API server is done.", {{"", s.ready ? 1 : 0}});
  metric("nodes", "gauge", "Nodes the allocator knows.", {{"", s.nodes}});
  metric("gpus", "gauge", "GPUs on those nodes.", {{"", s.gpus}});
  metric("gpus_unhealthy", "gauge", "GPUs marked unhealthy.", {{"", s.alloc.unhealthy_gpus}});
  metric("gpu_milli_capacity", "gauge", "Healthy GPU capacity in milli-GPU.", {{"", s.alloc.gpu_milli_capacity}});
  metric("gpu_milli_allocated", "gauge", "Allocated milli-GPU on healthy GPUs.", {{"", s.alloc.gpu_milli_allocated}});
  metric("placements", "gauge", "Pods holding GPUs.", {{"", s.placements}});
  metric("pods_pending", "gauge", "Pods filtered and not bound yet.", {{"", s.pending}});
  metric("binds_in_flight", "gauge", "Binds whose API writes are in flight.", {{"", s.binding}});
  metric("requests_total", "counter", "Protocol requests by verb.",
         {{"{verb=\"filter\"}", c.filter}, {"{verb=\"prioritize\"}", c.prioritize}, {"{verb=\"bind\"}", c.bind},
          {"{verb=\"preempt\"}", c.preempt}});
  metric("bad_requests_total", "counter", "Requests answered 4xx.", {{"", c.bad_requests}});
  metric("binds_total", "counter", "Binds by result.", {{"{result=\"ok\"}", c.bind_ok}, {"{result=\"failed\"}", c.bind_failed}});
  metric("bind_rollbacks_total", "counter", "Binds whose API writes failed; their GPUs were released.", {{"", c.rollbacks}});
  metric("bind_conflicts_total", "counter", "Binds of a pod already bound or being bound.", {{"", c.bind_conflicts}});
  metric("releases_total", "counter", "Placements released (pod deleted or finished).", {{"", c.releases}});
  metric("pin_conflicts_total", "counter", "Bound pods whose recorded GPUs did not fit (not placed).", {{"", c.pin_conflicts}});
  metric("syncs_total", "counter", "Full syncs from node and pod lists.", {{"", c.syncs}});
  metric("watch_events_total", "counter", "Watch events applied.",
         {{"{kind=\"node\"}", c.node_events}, {"{kind=\"pod\"}", c.pod_events}});
  metric("rebuilds_total", "counter", "Allocator rebuilds after node changes.", {{"", c.rebuilds}});
  metric("pending_expired_total", "counter", "Filtered pods forgotten unbound.", {{"", c.pending_expired}});
  metric("bad_objects_total", "counter", "Nodes or pods from the API that could not be read (skipped).", {{"", c.bad_objects}});
  return o.str();
}

}  // namespace kubetune::sched::gpu
