// kube-scheduler's extender v1 verbs (k8s.io/kube-scheduler/extender/v1 types: ExtenderArgs, ExtenderFilterResult,
// HostPriorityList, ExtenderBindingArgs/Result, ExtenderPreemptionArgs/Result). Those Go structs carry no JSON tags,
// so the keys are the Go field names and decoding matches them ignoring case (go_field).
#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <utility>

#include "extender_impl.hpp"
#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

using nlohmann::json;
using State = PodRecord::State;

namespace {
constexpr const char* kVerbs[] = {"filter", "prioritize", "bind", "preempt", "release"};

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string string_field(const json& args, const char* key, const char* what, bool required) {
  const json* v = go_field(args, key);
  if (v == nullptr) {
    KT_CHECK(!required, InvalidArgument, what, " lacks field '", key, "'");
    return {};
  }
  KT_CHECK(v->is_string(), InvalidArgument, what, " field '", key, "' must be a string, got ", dump(*v));
  KT_CHECK(!required || !v->get_ref<const std::string&>().empty(), InvalidArgument, what, " field '", key,
           "' is empty");
  return v->get<std::string>();
}

const json& pod_of(const json& args, const char* what) {
  const json* pod = go_field(args, "Pod");
  KT_CHECK(pod != nullptr && pod->is_object(), InvalidArgument, what, " field 'Pod' must be a v1.Pod object");
  const json* meta = go_field(*pod, "metadata");
  KT_CHECK(meta != nullptr && meta->is_object(), InvalidArgument, what, " Pod lacks metadata");
  (void)string_field(*meta, "name", "Pod metadata", true);
  return *pod;
}

std::string pod_uid(const json& pod) {
  const json* meta = go_field(pod, "metadata");
  const json* uid = meta ? go_field(*meta, "uid") : nullptr;
  return uid && uid->is_string() ? uid->get<std::string>() : std::string();
}

/// Candidate node names of ExtenderArgs: NodeNames (nodeCacheCapable) or Nodes.items[].metadata.name.
std::vector<std::string> candidate_names(ExtenderArgsView& view, bool& by_names) {
  by_names = true;
  if (view.names) return std::move(*view.names);
  const json& args = view.rest;
  std::vector<std::string> names;
  const json* nn = go_field(args, "NodeNames");
  const json* nodes = go_field(args, "Nodes");
  by_names = nn != nullptr;
  if (nn != nullptr) {
    KT_CHECK(nn->is_array(), InvalidArgument, "ExtenderArgs field 'NodeNames' must be an array of strings");
    names.reserve(nn->size());
    for (const json& n : *nn) {
      KT_CHECK(n.is_string(), InvalidArgument, "ExtenderArgs NodeNames entry ", dump(n), " is not a string");
      names.push_back(n.get<std::string>());
    }
  } else {
    KT_CHECK(nodes != nullptr && nodes->is_object(), InvalidArgument,
             "ExtenderArgs has neither 'NodeNames' (nodeCacheCapable) nor 'Nodes' (a v1.NodeList)");
    const json* items = go_field(*nodes, "items");
    KT_CHECK(items == nullptr || items->is_array(), InvalidArgument, "ExtenderArgs Nodes.items must be an array");
    if (items)
      for (const json& n : *items) {
        const json* meta = go_field(n, "metadata");
        KT_CHECK(meta != nullptr, InvalidArgument, "ExtenderArgs Nodes.items entry lacks metadata");
        names.push_back(string_field(*meta, "name", "node metadata", true));
      }
  }
  return names;
}

json parse_body(std::string_view body) {
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    KT_THROW(InvalidArgument, "request body is not JSON: ", e.what());
  }
}

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && json_space(s[i])) ++i;
  return i;
}

/// A top-level NodeNames array whose entries are all plain strings (printable ASCII, no escapes), found by a scan
/// of the raw body: such strings need no decoding or UTF-8 check, so they are read here at memory speed rather than
/// by nlohmann's lexer (a few ns a byte: most of a 5,000-name filter). `begin`/`end` delimit the array in the body.
struct PlainNames {
  std::size_t begin = 0, end = 0;
  std::vector<std::string> names;
};

std::optional<PlainNames> plain_string_array(std::string_view s, std::size_t begin) {
  auto plain = [](char c) { return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x80 &&
                                   c != '"' && c != '\\'; };
  PlainNames out;
  out.begin = begin;
  std::size_t i = skip_space(s, begin + 1);
  for (bool first = true;; first = false) {
    if (i < s.size() && s[i] == ']') {
      out.end = i + 1;
      return out;
    }
    if (!first) {
      if (i >= s.size() || s[i] != ',') return std::nullopt;
      i = skip_space(s, i + 1);
    }
    if (i >= s.size() || s[i] != '"') return std::nullopt;
    const std::size_t start = ++i;
    while (i < s.size() && plain(s[i])) ++i;
    if (i >= s.size() || s[i] != '"') return std::nullopt;
    out.names.emplace_back(s.substr(start, i - start));
    i = skip_space(s, i + 1);
  }
}

std::optional<PlainNames> plain_node_names(std::string_view s) {
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[' || s[i] == '{') {
      ++depth;
    } else if (s[i] == ']' || s[i] == '}') {
      --depth;
    } else if (s[i] == '"') {
      const std::size_t start = ++i;
      while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
      if (i >= s.size()) return std::nullopt;
      if (depth != 1 || !iequals_ascii(s.substr(start, i - start), "NodeNames")) continue;
      std::size_t j = skip_space(s, i + 1);
      if (j >= s.size() || s[j] != ':') continue;  // a string value, not a key
      j = skip_space(s, j + 1);
      return j < s.size() && s[j] == '[' ? plain_string_array(s, j) : std::nullopt;
    }
  }
  return std::nullopt;
}

/// The body parsed for filter / prioritize. Plain NodeNames are read by the scan and the parser sees "[]" in their
/// place; anything else (escaped names, several keys that Go would match as NodeNames, a body that does not parse)
/// is parsed whole, so its errors and its reading are exactly the DOM's.
ExtenderArgsView parse_extender_args(std::string_view body) {
  if (std::optional<PlainNames> plain = plain_node_names(body)) {
    std::string rest;
    rest.reserve(body.size() - (plain->end - plain->begin) + 2);
    rest.append(body.substr(0, plain->begin)).append("[]").append(body.substr(plain->end));
    json j = json::parse(rest, nullptr, /*allow_exceptions=*/false);
    int keys = 0;
    if (j.is_object())
      for (const auto& kv : j.items()) keys += iequals_ascii(kv.key(), "NodeNames") ? 1 : 0;
    if (keys == 1) return {std::move(j), std::move(plain->names)};
  }
  return {parse_body(body), std::nullopt};
}

/// Appends s as a JSON string, escaped as dump escapes it. Non-ASCII text goes through dump itself, which replaces
/// invalid UTF-8 as every other reply does (node and model names may come from the library API, not from JSON).
void append_json_string(std::string& out, std::string_view s) {
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    out += dump(json(std::string(s)));
    return;
  }
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet appended
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s, run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        constexpr char hex[] = "0123456789abcdef";
        const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        out.append(u, sizeof u);
      }
    }
  }
  out.append(s, run, s.size() - run);
  out += '"';
}

/// Appends {"key":"value",...} as a json object of these pairs dumps: keys sorted, the last of equal keys kept.
void append_json_object(std::string& out, std::vector<std::pair<std::string_view, std::string_view>>& kv) {
  std::stable_sort(kv.begin(), kv.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out += '{';
  bool first = true;
  for (std::size_t k = 0; k < kv.size(); ++k) {
    if (k + 1 < kv.size() && kv[k + 1].first == kv[k].first) continue;
    out += first ? "" : ",";
    first = false;
    append_json_string(out, kv[k].first);
    out += ':';
    append_json_string(out, kv[k].second);
  }
  out += '}';
}

std::string gpu_index_annotation(const std::vector<int>& gpus) {
  std::string idx;
  for (std::size_t k = 0; k < gpus.size(); ++k) idx += (k ? "," : "") + std::to_string(gpus[k]);
  return idx;
}
}  // namespace

Extender::Extender(std::shared_ptr<Allocator> alloc, ExtenderConfig cfg) : cfg_(cfg) {
  KT_CHECK(alloc != nullptr, InvalidArgument, "extender allocator must not be null");
  cfg_.validate();
  impl_ = std::make_unique<Impl>(alloc->policy(), alloc->options());
  impl_->specs = alloc->cluster().nodes();
  impl_->alloc = std::move(alloc);
  ready_ = true;
}

Extender::Extender(std::shared_ptr<const Policy> policy, ExtenderConfig cfg, AllocatorOptions opt) : cfg_(cfg) {
  KT_CHECK(policy != nullptr, InvalidArgument, "extender policy must not be null");
  cfg_.validate();
  impl_ = std::make_unique<Impl>(std::move(policy), opt);
  impl_->alloc = std::make_shared<Allocator>(Cluster{}, impl_->policy, opt);
}

Extender::~Extender() = default;

void Extender::set_writer(std::shared_ptr<KubeWriter> writer) {
  std::lock_guard lock(impl_->writer_mu);
  impl_->writer = std::move(writer);
}

std::shared_ptr<Allocator> Extender::allocator() const {
  std::shared_lock lock(impl_->alloc_mu);
  return impl_->alloc;
}

// ---------------------------------------------------------------- dispatch
ExtenderReply Extender::handle(std::string_view verb, std::string_view body) {
  const auto* it = std::find(std::begin(kVerbs), std::end(kVerbs), verb);
  if (it == std::end(kVerbs))
    return {404, dump(json{{"Error", "unknown verb '" + std::string(verb) +
                                          "' (filter, prioritize, bind, preempt, release)"}})};
  const int v = static_cast<int>(it - std::begin(kVerbs));
  Counter* count[] = {&impl_->n.filter, &impl_->n.prioritize, &impl_->n.bind, &impl_->n.preempt, nullptr};
  if (count[v]) ++*count[v];
  if (body.size() > cfg_.max_body_bytes) {
    ++impl_->n.bad_requests;
    return {413, dump(json{{"Error", "request body of " + std::to_string(body.size()) + " bytes exceeds the limit of " +
                                         std::to_string(cfg_.max_body_bytes)}})};
  }
  try {
    check_json_depth(body, "request JSON", cfg_.max_json_depth);
    if (v <= 1) {  // ExtenderArgs
      ExtenderArgsView view = parse_extender_args(body);
      KT_CHECK(view.rest.is_object(), InvalidArgument, "request body must be a JSON object");
      if (v == 0) return {200, impl_->filter(cfg_, std::move(view))};
      return {200, dump(impl_->prioritize(cfg_, std::move(view)))};
    }
    const json args = parse_body(body);
    KT_CHECK(args.is_object(), InvalidArgument, "request body must be a JSON object");
    switch (v) {
      case 2: return {200, dump(impl_->bind(cfg_, args))};
      case 3: return {200, dump(impl_->preempt(cfg_, args))};
      default: return {200, dump(impl_->release(cfg_, args))};
    }
  } catch (const InvalidArgument& e) {
    ++impl_->n.bad_requests;
    return {400, dump(json{{"Error", e.what()}})};
  } catch (const json::exception& e) {  // a field of the wrong type deep inside a Pod or Node
    ++impl_->n.bad_requests;
    return {400, dump(json{{"Error", std::string("request JSON has a field of the wrong type: ") + e.what()}})};
  } catch (const std::exception& e) {
    // filter, bind and release answer failures in their result's Error; the others have no such field.
    return {v == 1 || v == 3 ? 500 : 200, dump(json{{"Error", e.what()}})};
  }
}

std::string Extender::filter(const std::string& body) { return handle("filter", body).body; }
std::string Extender::prioritize(const std::string& body) { return handle("prioritize", body).body; }
std::string Extender::bind(const std::string& body) { return handle("bind", body).body; }
std::string Extender::preempt(const std::string& body) { return handle("preempt", body).body; }
std::string Extender::release(const std::string& body) { return handle("release", body).body; }

// ---------------------------------------------------------------- filter / prioritize
std::string Extender::Impl::filter(const ExtenderConfig& cfg_, ExtenderArgsView&& args) {
  const json& pod = pod_of(args.rest, "ExtenderArgs");
  const Request r = request_from_pod(pod, cfg_);
  bool by_names = true;
  const std::vector<std::string> names = candidate_names(args, by_names);
  std::vector<std::pair<std::string_view, std::string_view>> failed, unresolvable;  // node -> why
  std::shared_lock lock(alloc_mu);
  const double t = Impl::now();
  {
    std::lock_guard plock(pods_mu);
    PodRecord& rec = record(r.name);
    if (rec.state == State::kPending) {  // a bound pod stays bound; a pending one is refreshed
      rec.req = r;
      rec.uid = pod_uid(pod);
      rec.since = t;
      if (!rec.uid.empty()) uid_key[rec.uid] = r.name;
    }
    if (t - last_sweep > 1.0 || pending > static_cast<std::int64_t>(cfg_.max_pending))
      sweep_pending(cfg_, t);
  }
  const Allocator& a = *alloc;
  std::vector<int> idx;
  std::vector<int> pos;  // position in `names` of each idx entry
  idx.reserve(names.size());
  pos.reserve(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    const int i = a.cluster().find_node(names[k]);
    if (i < 0) {
      unresolvable.emplace_back(names[k], "node unknown to kubetune-extender (no such Node, or not synced yet)");
    } else {
      idx.push_back(i);
      pos.push_back(static_cast<int>(k));
    }
  }
  std::vector<std::string> reasons;
  std::vector<char> unres;
  const std::vector<int> ok = a.feasible_nodes(r, idx, &reasons, &unres);
  for (std::size_t k = 0; k < reasons.size(); ++k) {
    const std::string_view why = reasons[k];
    const std::size_t colon = why.find(": ");
    (unres[k] ? unresolvable : failed).emplace_back(why.substr(0, colon), why.substr(colon + 2));
  }
  // ExtenderFilterResult, keys in the order json's std::map dumps them.
  std::string out;
  out.reserve(96 + 16 * ok.size() + 64 * (failed.size() + unresolvable.size()));
  out += R"({"Error":"","FailedAndUnresolvableNodes":)";
  append_json_object(out, unresolvable);
  out += R"(,"FailedNodes":)";
  append_json_object(out, failed);
  if (by_names) {
    out += R"(,"NodeNames":[)";
    for (std::size_t j = 0; j < ok.size(); ++j) {
      if (j) out += ',';
      append_json_string(out, a.cluster().node(ok[j]).name);
    }
    out += R"(],"Nodes":null})";
  } else {  // not nodeCacheCapable: the kept v1.Node objects, as sent
    const json* items = go_field(*go_field(args.rest, "Nodes"), "items");  // absent: no candidates, none kept
    json kept = json::array();
    std::size_t j = 0;
    for (std::size_t k = 0; k < idx.size() && j < ok.size(); ++k)
      if (idx[k] == ok[j]) {
        kept.push_back((*items)[static_cast<std::size_t>(pos[k])]);
        ++j;
      }
    out += R"(,"NodeNames":null,"Nodes":)";
    out += dump(json{{"metadata", json::object()}, {"items", std::move(kept)}});
    out += '}';
  }
  return out;
}

json Extender::Impl::prioritize(const ExtenderConfig& cfg_, ExtenderArgsView&& args) {
  const Request r = request_from_pod(pod_of(args.rest, "ExtenderArgs"), cfg_);
  bool by_names = true;
  const std::vector<std::string> names = candidate_names(args, by_names);
  std::shared_lock lock(alloc_mu);
  const Allocator& a = *alloc;
  std::vector<std::optional<double>> scores;
  double lo = 0, hi = 0;
  bool any = false;
  for (const std::string& n : names) {
    const int i = a.cluster().find_node(n);
    std::optional<double> s = i < 0 ? std::nullopt : a.score(r, i);
    if (s) {
      lo = any ? std::min(lo, *s) : *s;
      hi = any ? std::max(hi, *s) : *s;
      any = true;
    }
    scores.push_back(s);
  }
  json out = json::array();
  for (std::size_t k = 0; k < names.size(); ++k) {
    const std::optional<double>& s = scores[k];
    std::int64_t v = 0;  // infeasible or unknown: the lowest score
    if (s) v = hi > lo ? static_cast<std::int64_t>(std::llround((*s - lo) / (hi - lo) * cfg_.max_priority)) : cfg_.max_priority;
    out.push_back({{"Host", names[k]}, {"Score", v}});
  }
  return out;
}

// ---------------------------------------------------------------- bind
json Extender::Impl::bind(const ExtenderConfig& cfg_, const json& args) {
  const char* what = "ExtenderBindingArgs";
  const std::string name = string_field(args, "PodName", what, true);
  const std::string ns = string_field(args, "PodNamespace", what, false);
  const std::string uid = string_field(args, "PodUID", what, false);
  const std::string node = string_field(args, "Node", what, true);
  const std::string key = pod_key(ns, name);
  Impl& im = *this;
  auto fail = [&](const std::string& why) {
    ++im.n.bind_failed;
    return json{{"Error", why}};
  };

  // 1. Claim the pod: from here on a second bind of it is a conflict, never a second placement.
  Request r;
  bool cached = false;
  {
    std::lock_guard plock(im.pods_mu);
    PodRecord& rec = im.record(key);
    if (rec.state != State::kPending) {
      ++im.n.bind_conflicts;
      return fail("pod " + key + (rec.state == State::kBinding ? " is being bound" : " is already bound") +
                  " to node " + rec.node);
    }
    cached = rec.since > 0 && (uid.empty() || rec.uid.empty() || rec.uid == uid);
    if (cached) r = rec.req;
    im.set_state(rec, State::kBinding);
    rec.node = node;
    rec.uid = uid.empty() ? rec.uid : uid;
  }
  auto unclaim = [&](bool keep_request) {
    std::lock_guard plock(im.pods_mu);
    auto it = im.pods.find(key);
    if (it == im.pods.end()) return;
    if (!keep_request || it->second.deleted) {
      im.erase_record(key);
      return;
    }
    im.set_state(it->second, State::kPending);
    it->second.since = Impl::now();
  };

  // 2. A pod this extender has not filtered (restarted, or forgotten after pending_ttl_s): ask the API server.
  const std::shared_ptr<KubeWriter> writer = im.current_writer();
  if (!cached) {
    if (!writer) {
      unclaim(false);
      return fail("pod " + key + " was never filtered by this extender (or was forgotten after pending_ttl_s) and "
                  "no Kubernetes client is set to fetch it");
    }
    try {
      const json pod = json::parse(writer->get_pod(ns.empty() ? "default" : ns, name));
      KT_CHECK(uid.empty() || pod_uid(pod) == uid, NotFound, "pod ", key, " has uid '", pod_uid(pod),
               "', not the uid '", uid, "' being bound (recreated)");
      r = request_from_pod(pod, cfg_);
    } catch (const std::exception& e) {
      unclaim(false);
      return fail("pod " + key + " could not be read from the API server: " + e.what());
    }
  }

  // 3. Place it on the node (one atomic check-and-place in the allocator).
  std::map<std::string, std::string> anno;
  std::uint64_t placement_id = 0;
  {
    std::shared_lock lock(im.alloc_mu);
    Allocator& a = *im.alloc;
    const int i = a.cluster().find_node(node);
    std::optional<Placement> p;
    std::string why;
    try {
      if (i < 0) why = "node '" + node + "' is unknown to kubetune-extender";
      else if (!(p = a.place_on(r, i))) why = "pod " + key + " no longer fits on node " + node;
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!p) {
      unclaim(true);
      return fail(why);
    }
    placement_id = p->id;
    {
      std::lock_guard plock(im.pods_mu);
      PodRecord& rec = im.pods.at(key);
      rec.req = r;
      rec.gpus = p->gpus;
      rec.mig_start = p->mig_start;
      rec.placed = true;
    }
    if (!p->gpus.empty()) {  // gpushare's annotations (pkg/utils/pod.go: GetUpdatedPodAnnotationSpec)
      const NodeSpec& spec = a.cluster().node(i);
      const std::int64_t unit = cfg_.gpu_mem_unit_mib;
      anno[kAnnoGpuIndex] = gpu_index_annotation(p->gpus);
      anno[kAnnoGpuMemPod] = std::to_string((r.gpu_memory_mib > 0 ? r.gpu_memory_mib : p->gpu_memory_mib) / unit);
      anno[kAnnoGpuMemDev] = std::to_string(spec.gpu_memory_mib / unit);
      anno[kAnnoAssigned] = "false";
      anno[kAnnoAssumeTime] = std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::system_clock::now().time_since_epoch())
                                                 .count());
      if (p->mig_start >= 0) anno[kAnnoMigStart] = std::to_string(p->mig_start);
    }
  }

  // 4. Write the annotations, then the Binding; any failure gives the GPUs back.
  std::string error;
  if (writer) {
    try {
      if (!anno.empty()) writer->patch_pod_annotations(ns.empty() ? "default" : ns, name, uid, anno);
      writer->create_binding(ns.empty() ? "default" : ns, name, uid, node);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  std::shared_lock lock(im.alloc_mu);
  std::lock_guard plock(im.pods_mu);
  auto it = im.pods.find(key);
  const bool gone = it == im.pods.end() || it->second.deleted;
  if (!error.empty() || gone) {
    im.alloc->release_by_name(key);
    ++im.n.rollbacks;
    if (gone) {
      im.erase_record(key);
      return fail("pod " + key + " was deleted while it was being bound" + (error.empty() ? "" : ": " + error));
    }
    PodRecord& rec = it->second;
    rec.placed = false;
    rec.gpus.clear();
    rec.mig_start = -1;
    im.set_state(rec, State::kPending);
    rec.since = Impl::now();
    return fail("binding pod " + key + " to node " + node + " failed (its GPUs were released): " + error);
  }
  PodRecord& rec = it->second;
  im.set_state(rec, State::kBound);
  if (!rec.uid.empty()) im.uid_key[rec.uid] = key;  // preemption names victims by UID
  rec.by_us = true;
  rec.since = Impl::now();
  ++im.n.bind_ok;
  json out{{"Error", ""}, {"Annotations", anno}, {"PlacementId", placement_id}};
  return out;
}

// ---------------------------------------------------------------- preempt / release
json Extender::Impl::preempt(const ExtenderConfig& cfg_, const json& args) {
  const json& pod = pod_of(args, "ExtenderPreemptionArgs");
  const Request r = request_from_pod(pod, cfg_);
  const json* meta = go_field(args, "NodeNameToMetaVictims");
  const json* full = go_field(args, "NodeNameToVictims");
  KT_CHECK((meta && meta->is_object()) || (full && full->is_object()), InvalidArgument,
           "ExtenderPreemptionArgs has neither 'NodeNameToVictims' nor 'NodeNameToMetaVictims' objects");
  struct Victim {
    std::string uid, key;
  };
  std::map<std::string, std::pair<std::vector<Victim>, std::int64_t>> per_node;
  auto read = [&](const json& m, bool metapods) {
    for (auto it = m.begin(); it != m.end(); ++it) {
      KT_CHECK(it->is_object(), InvalidArgument, "victims of node '", it.key(), "' must be an object");
      auto& [victims, pdb] = per_node[it.key()];
      const json* pods = go_field(*it, "Pods");
      const json* npdb = go_field(*it, "NumPDBViolations");
      KT_CHECK(!npdb || npdb->is_number_integer(), InvalidArgument, "NumPDBViolations of node '", it.key(),
               "' must be an integer");
      pdb = npdb ? npdb->get<std::int64_t>() : 0;
      KT_CHECK(!pods || pods->is_array(), InvalidArgument, "victims of node '", it.key(), "': Pods must be an array");
      if (pods)
        for (const json& v : *pods) {
          KT_CHECK(v.is_object(), InvalidArgument, "victim of node '", it.key(), "' must be an object");
          Victim vic;
          if (metapods) {
            vic.uid = string_field(v, "UID", "MetaPod", true);
          } else {
            const json* vm = go_field(v, "metadata");
            KT_CHECK(vm && vm->is_object(), InvalidArgument, "victim pod on node '", it.key(), "' lacks metadata");
            vic.key = pod_key(string_field(*vm, "namespace", "victim metadata", false),
                              string_field(*vm, "name", "victim metadata", true));
            vic.uid = pod_uid(v);
          }
          victims.push_back(std::move(vic));
        }
    }
  };
  if (full && full->is_object()) read(*full, false);
  if (meta && meta->is_object()) read(*meta, true);

  json result = json::object();
  std::shared_lock lock(alloc_mu);
  const Allocator& a = *alloc;
  for (auto& [node, entry] : per_node) {
    auto& [victims, pdb] = entry;
    const int i = a.cluster().find_node(node);
    if (i < 0) continue;  // unknown to us: the pod cannot go there
    std::vector<std::string> keys;
    {
      std::lock_guard plock(pods_mu);
      for (Victim& v : victims) {
        if (v.key.empty()) {
          auto it = uid_key.find(v.uid);
          if (it != uid_key.end()) v.key = it->second;
        }
        if (!v.key.empty()) keys.push_back(v.key);
      }
    }
    // The scheduler chose these victims for the resources it sees; GPU memory it ignores (ignoredByScheduler), so
    // a node stays only when the pod's GPUs fit once they are gone. Victims are never added or dropped here.
    if (!a.fits_without(r, i, keys)) continue;
    json pods = json::array();
    for (const Victim& v : victims) pods.push_back({{"UID", v.uid}});
    result[node] = {{"Pods", pods}, {"NumPDBViolations", pdb}};
  }
  return json{{"NodeNameToMetaVictims", result}};
}

json Extender::Impl::release(const ExtenderConfig& cfg_, const json& args) {
  const std::string key = pod_key(string_field(args, "PodNamespace", "pod reference", false),
                                  string_field(args, "PodName", "pod reference", true));
  std::shared_lock lock(alloc_mu);
  std::lock_guard plock(pods_mu);
  auto it = pods.find(key);
  if (it != pods.end() && it->second.state == State::kBinding) return json{{"Error", "pod " + key + " is being bound"}};
  const bool released = alloc->release_by_name(key);
  if (it != pods.end()) erase_record(key);
  if (!released) return json{{"Error", "pod " + key + " is not bound"}};
  ++n.releases;
  return json{{"Error", ""}};
}

}  // namespace kubetune::sched::gpu
