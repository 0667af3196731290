// Kubernetes objects -> kubetune requests (v1.Pod resources, quantities), the extender's configuration and the
// request/placement JSON helpers.
#include "kubetune/sched/gpu/extender.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "kube_json.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

// The Extender class itself: extender_protocol.cpp (ExtenderReply Extender::handle and the verbs) and
// extender_state.cpp (sync, watch events, metrics).
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

std::string pod_key(const std::string& ns, const std::string& name) { return (ns.empty() ? "default" : ns) + "/" + name; }

bool iequals_ascii(std::string_view a, std::string_view b) noexcept {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) {
           return lower(x) == lower(y);
         });
}

const json* go_field(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end())
    for (it = j.begin(); it != j.end(); ++it)
      if (iequals_ascii(it.key(), key)) break;
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

void ExtenderConfig::validate() const {
  KT_CHECK(gpu_mem_unit_mib > 0, InvalidArgument, "gpu_mem_unit_mib = ", gpu_mem_unit_mib, " must be > 0");
  KT_CHECK(max_priority > 0, InvalidArgument, "max_priority = ", max_priority, " must be > 0");
  KT_CHECK(pending_ttl_s > 0 && pending_ttl_s <= 86400, InvalidArgument, "pending_ttl_s = ", pending_ttl_s,
           " must be in (0, 86400]");
  KT_CHECK(max_pending >= 1 && max_pending <= 10000000, InvalidArgument, "max_pending = ", max_pending,
           " must be in [1, 10000000]");
  KT_CHECK(assume_grace_s >= 0 && assume_grace_s <= 3600, InvalidArgument, "assume_grace_s = ", assume_grace_s,
           " must be in [0, 3600]");
  KT_CHECK(max_body_bytes >= 1024 && max_body_bytes <= (std::size_t{1} << 30), InvalidArgument,
           "max_body_bytes = ", max_body_bytes, " must be in [1024, 2^30]");
  KT_CHECK(max_json_depth >= 8 && max_json_depth <= 1000, InvalidArgument, "max_json_depth = ", max_json_depth,
           " must be in [8, 1000]");
}

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
  return request_from_pod(parse(pod_json, "pod"), cfg);
}

Request request_from_pod(const json& pod, const ExtenderConfig& cfg) {
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
    compute += get("kubetune.io/gpu-compute") + 10.0 * get(kGpuCoreResource);
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
    r.cpu_milli = checked_int_or(j, "cpu_milli", std::int64_t{0}, "request field 'cpu_milli'");
    r.memory_mib = checked_int_or(j, "memory_mib", std::int64_t{0}, "request field 'memory_mib'");
    r.gpu_count = checked_int_or(j, "gpu_count", 0, "request field 'gpu_count'");
    r.gpu_milli = checked_int_or(j, "gpu_milli", 0, "request field 'gpu_milli'");
    r.gpu_memory_mib = checked_int_or(j, "gpu_memory_mib", std::int64_t{0}, "request field 'gpu_memory_mib'");
    r.compute_milli = checked_int_or(j, "compute_milli", 0, "request field 'compute_milli'");
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
