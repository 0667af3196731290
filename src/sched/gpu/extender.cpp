// Kubernetes scheduler-extender JSON (filter / prioritize / bind) and request/placement JSON helpers.
#include "kubetune/sched/gpu/extender.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

using nlohmann::json;

namespace {
json parse(const std::string& s, const char* what) {
  try {
    return json::parse(s);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, what, " JSON does not parse: ", e.what());
  }
}

std::string pod_key(const std::string& ns, const std::string& name) { return (ns.empty() ? "default" : ns) + "/" + name; }

std::vector<std::string> split_models(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '|' || c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string quantity_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  KT_THROW(InvalidArgument, "resource quantity ", v.dump(), " must be a string or number");
}
}  // namespace

double parse_quantity(const std::string& q) {
  KT_CHECK(!q.empty(), InvalidArgument, "quantity is empty");
  static const std::pair<const char*, double> kSuffix[] = {
      {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
      {"m", 1e-3},    {"k", 1e3},        {"M", 1e6},            {"G", 1e9}, {"T", 1e12}};
  double mult = 1.0;
  std::string num = q;
  for (const auto& [suf, m] : kSuffix) {
    const std::size_t n = std::char_traits<char>::length(suf);
    if (q.size() > n && q.compare(q.size() - n, n, suf) == 0) {
      mult = m;
      num = q.substr(0, q.size() - n);
      break;
    }
  }
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(num, &pos);
  } catch (...) {
    KT_THROW(InvalidArgument, "quantity '", q, "' is not a Kubernetes quantity");
  }
  KT_CHECK(pos == num.size() && std::isfinite(v) && v >= 0, InvalidArgument, "quantity '", q,
           "' is not a non-negative Kubernetes quantity");
  return v * mult;
}

Request request_from_pod_json(const std::string& pod_json, const ExtenderConfig& cfg) {
  const json pod = parse(pod_json, "pod");
  KT_CHECK(pod.is_object(), InvalidArgument, "pod must be a JSON object");
  Request r;
  const json meta = pod.value("metadata", json::object());
  r.name = pod_key(meta.value("namespace", std::string("default")), meta.value("name", std::string()));
  const json anno = meta.value("annotations", json::object());
  if (anno.contains("kubetune.io/gpu-models")) r.models = split_models(anno["kubetune.io/gpu-models"].get<std::string>());
  if (anno.contains("kubetune.io/gang")) r.gang = anno["kubetune.io/gang"].get<std::string>();
  const json spec = pod.value("spec", json::object());
  double cpu = 0, mem = 0, gpu_mem_units = 0, whole = 0, milli = 0, compute = 0;
  for (const json& c : spec.value("containers", json::array())) {
    const json res = c.value("resources", json::object());
    const json lim = res.value("limits", json::object());
    const json req = res.value("requests", json::object());
    auto get = [&](const char* k) -> double {
      if (req.contains(k)) return parse_quantity(quantity_string(req[k]));
      if (lim.contains(k)) return parse_quantity(quantity_string(lim[k]));
      return 0.0;
    };
    cpu += get("cpu");
    mem += get("memory");
    gpu_mem_units += get(kGpuMemResource);
    whole += get("nvidia.com/gpu");
    milli += get("kubetune.io/gpu-milli");
    compute += get("kubetune.io/gpu-compute");
    for (const json* src : {&lim, &req})
      for (auto it = src->begin(); it != src->end(); ++it)
        if (it.key().rfind("nvidia.com/mig-", 0) == 0) r.mig_profile = it.key().substr(15);
  }
  r.cpu_milli = static_cast<std::int64_t>(std::llround(cpu * 1000.0));
  r.memory_mib = static_cast<std::int64_t>(std::ceil(mem / 1048576.0));
  if (!r.mig_profile.empty()) {
    r.gpu_count = 1;
  } else if (gpu_mem_units > 0) {
    r.gpu_count = 1;
    r.gpu_memory_mib = static_cast<std::int64_t>(std::llround(gpu_mem_units * static_cast<double>(cfg.gpu_mem_unit_mib)));
    r.compute_milli = static_cast<int>(std::llround(compute));
  } else if (milli > 0) {
    r.gpu_count = 1;
    r.gpu_milli = static_cast<int>(std::llround(milli));
  } else if (whole > 0) {
    r.gpu_count = static_cast<int>(std::llround(whole));
    r.gpu_milli = kMilli;
  }
  r.validate_and_normalise();
  return r;
}

Extender::Extender(std::shared_ptr<Allocator> alloc, ExtenderConfig cfg) : alloc_(std::move(alloc)), cfg_(cfg) {
  KT_CHECK(alloc_ != nullptr, InvalidArgument, "extender allocator must not be null");
  KT_CHECK(cfg_.gpu_mem_unit_mib > 0, InvalidArgument, "gpu_mem_unit_mib = ", cfg_.gpu_mem_unit_mib, " must be > 0");
  KT_CHECK(cfg_.max_priority > 0, InvalidArgument, "max_priority = ", cfg_.max_priority, " must be > 0");
}

namespace {
/// Candidate node names of ExtenderArgs (NodeNames when nodeCacheCapable, else Nodes.items[].metadata.name).
std::vector<std::string> candidate_names(const json& args) {
  std::vector<std::string> names;
  if (args.contains("NodeNames") && args["NodeNames"].is_array()) {
    for (const json& n : args["NodeNames"]) names.push_back(n.get<std::string>());
  } else if (args.contains("Nodes") && args["Nodes"].is_object()) {
    for (const json& n : args["Nodes"].value("items", json::array()))
      names.push_back(n.value("metadata", json::object()).value("name", std::string()));
  }
  return names;
}
}  // namespace

std::string Extender::filter(const std::string& args_json) {
  json out{{"NodeNames", json::array()}, {"FailedNodes", json::object()}, {"Error", ""}};
  try {
    const json args = parse(args_json, "ExtenderArgs");
    KT_CHECK(args.contains("Pod"), InvalidArgument, "ExtenderArgs lacks field 'Pod'");
    Request r = request_from_pod_json(args["Pod"].dump(), cfg_);
    {
      std::lock_guard lock(mu_);
      pods_[r.name] = r;
    }
    const std::vector<std::string> names = candidate_names(args);
    std::vector<int> idx;
    for (const std::string& n : names) {
      const int i = alloc_->cluster().find_node(n);
      if (i < 0) out["FailedNodes"][n] = "node unknown to the kubetune allocator";
      else idx.push_back(i);
    }
    std::vector<std::string> reasons;
    const std::vector<int> ok = alloc_->feasible_nodes(r, idx, &reasons);
    for (int i : ok) out["NodeNames"].push_back(alloc_->cluster().node(i).name);
    for (const std::string& why : reasons) {
      const std::size_t colon = why.find(": ");
      out["FailedNodes"][why.substr(0, colon)] = why.substr(colon + 2);
    }
    if (args.contains("Nodes") && args["Nodes"].is_object()) {  // not nodeCacheCapable: echo the kept Node objects
      json items = json::array();
      for (const json& n : args["Nodes"].value("items", json::array())) {
        const std::string nm = n.value("metadata", json::object()).value("name", std::string());
        for (int i : ok)
          if (alloc_->cluster().node(i).name == nm) items.push_back(n);
      }
      out["Nodes"] = json{{"items", items}};
    }
  } catch (const std::exception& e) {
    out["Error"] = e.what();
  }
  return out.dump();
}

std::string Extender::prioritize(const std::string& args_json) {
  const json args = parse(args_json, "ExtenderArgs");
  KT_CHECK(args.contains("Pod"), InvalidArgument, "ExtenderArgs lacks field 'Pod'");
  const Request r = request_from_pod_json(args["Pod"].dump(), cfg_);
  std::vector<std::pair<std::string, std::optional<double>>> scores;
  double lo = 0, hi = 0;
  bool any = false;
  for (const std::string& n : candidate_names(args)) {
    const int i = alloc_->cluster().find_node(n);
    std::optional<double> s = i < 0 ? std::nullopt : alloc_->score(r, i);
    if (s) {
      lo = any ? std::min(lo, *s) : *s;
      hi = any ? std::max(hi, *s) : *s;
      any = true;
    }
    scores.emplace_back(n, s);
  }
  json out = json::array();
  for (const auto& [n, s] : scores) {
    std::int64_t v = 0;
    if (s) v = hi > lo ? static_cast<std::int64_t>(std::llround((*s - lo) / (hi - lo) * cfg_.max_priority)) : cfg_.max_priority;
    out.push_back({{"Host", n}, {"Score", v}});
  }
  return out.dump();
}

std::string Extender::bind(const std::string& args_json) {
  json out{{"Error", ""}};
  try {
    const json args = parse(args_json, "ExtenderBindingArgs");
    const std::string name = args.value("PodName", std::string());
    const std::string ns = args.value("PodNamespace", std::string("default"));
    const std::string node = args.value("Node", std::string());
    KT_CHECK(!name.empty(), InvalidArgument, "ExtenderBindingArgs field 'PodName' is empty");
    const int i = alloc_->cluster().find_node(node);
    KT_CHECK(i >= 0, NotFound, "ExtenderBindingArgs field 'Node' = '", node, "' is not a known node");
    Request r;
    {
      std::lock_guard lock(mu_);
      auto it = pods_.find(pod_key(ns, name));
      KT_CHECK(it != pods_.end(), NotFound, "pod ", pod_key(ns, name), " was never filtered by this extender");
      r = it->second;
    }
    KT_CHECK(!alloc_->placement_by_name(r.name), StateError, "pod ", r.name, " is already bound");
    auto p = alloc_->place_on(r, i);
    KT_CHECK(p.has_value(), StateError, "pod ", r.name, " no longer fits on node ", node);
    json anno = json::object();
    std::string idx;
    for (std::size_t k = 0; k < p->gpus.size(); ++k) idx += (k ? "," : "") + std::to_string(p->gpus[k]);
    if (!p->gpus.empty()) {
      const NodeSpec& spec = alloc_->cluster().node(i);
      anno[kAnnoGpuIndex] = idx;
      anno[kAnnoGpuMemPod] = std::to_string(r.gpu_memory_mib > 0 ? r.gpu_memory_mib / cfg_.gpu_mem_unit_mib
                                                                 : p->gpu_memory_mib / cfg_.gpu_mem_unit_mib);
      anno[kAnnoGpuMemDev] = std::to_string(spec.gpu_memory_mib / cfg_.gpu_mem_unit_mib);
      anno[kAnnoAssigned] = "false";
      anno[kAnnoAssumeTime] = std::to_string(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
      if (p->mig_start >= 0) anno["kubetune.io/mig-start"] = std::to_string(p->mig_start);
    }
    out["Annotations"] = anno;
    out["PlacementId"] = p->id;
  } catch (const std::exception& e) {
    out["Error"] = e.what();
  }
  return out.dump();
}

std::string Extender::release(const std::string& args_json) {
  json out{{"Error", ""}};
  try {
    const json args = parse(args_json, "pod reference");
    const std::string key = pod_key(args.value("PodNamespace", std::string("default")), args.value("PodName", std::string()));
    if (!alloc_->release_by_name(key)) out["Error"] = "pod " + key + " is not bound";
    std::lock_guard lock(mu_);
    pods_.erase(key);
  } catch (const std::exception& e) {
    out["Error"] = e.what();
  }
  return out.dump();
}

Request request_from_json(const std::string& text) {
  const json j = parse(text, "request");
  KT_CHECK(j.is_object(), InvalidArgument, "request JSON must be an object");
  static const char* kKnown[] = {"name", "cpu_milli", "memory_mib", "gpu_count", "gpu_milli", "gpu_memory_mib",
                                 "compute_milli", "models", "mig_profile", "gang"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : kKnown) ok |= (it.key() == k);
    KT_CHECK(ok, InvalidArgument, "request JSON field '", it.key(), "' is unknown");
  }
  Request r;
  try {
    r.name = j.value("name", std::string());
    r.cpu_milli = j.value("cpu_milli", std::int64_t{0});
    r.memory_mib = j.value("memory_mib", std::int64_t{0});
    r.gpu_count = j.value("gpu_count", 0);
    r.gpu_milli = j.value("gpu_milli", 0);
    r.gpu_memory_mib = j.value("gpu_memory_mib", std::int64_t{0});
    r.compute_milli = j.value("compute_milli", 0);
    r.models = j.value("models", std::vector<std::string>{});
    r.mig_profile = j.value("mig_profile", std::string());
    r.gang = j.value("gang", std::string());
  } catch (const nlohmann::json::exception& e) {
    KT_THROW(InvalidArgument, "request JSON has a field of the wrong type: ", e.what());
  }
  r.validate_and_normalise();
  return r;
}

std::string placement_to_json(const Placement& p) {
  return json{{"id", p.id},           {"node", p.node},           {"gpus", p.gpus},
              {"mig_start", p.mig_start}, {"gpu_milli", p.gpu_milli}, {"gpu_memory_mib", p.gpu_memory_mib},
              {"cpu_milli", p.cpu_milli}, {"memory_mib", p.memory_mib}, {"name", p.name},
              {"mig_profile", p.mig_profile}, {"gang", p.gang}}
      .dump();
}

}  // namespace kubetune::sched::gpu
