// AllocatorConfig: the one reading of an allocator's configuration and the one allocator factory.
#include "kubetune/sched/gpu/allocator_config.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

namespace kubetune::sched::gpu {
namespace {
using nlohmann::json;

const std::vector<std::string>& extender_keys() {
  static const std::vector<std::string> k{"gpu_mem_unit_mib", "pending_ttl_s", "max_pending", "assume_grace_s",
                                          "max_body_bytes"};
  return k;
}

bool has(const std::vector<std::string>& keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

bool bool_field(const json& j, const char* key, bool fallback, const char* what) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  KT_CHECK(it->is_boolean(), InvalidArgument, what, " field '", key, "' must be true or false, got ",
           json_summary(*it));
  return it->get<bool>();
}

double number_field(const json& j, const char* key, double fallback, const char* what) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  KT_CHECK(it->is_number(), InvalidArgument, what, " field '", key, "' must be a number, got ", json_summary(*it));
  return it->get<double>();
}

// from_json without the unknown-key check (the caller did it, against its own key set).
AllocatorConfig read_allocator(const json& j) {
  constexpr const char* what = "allocator options";
  AllocatorConfig c;
  if (const auto it = j.find("policy"); it != j.end()) {
    KT_CHECK(it->is_string(), InvalidArgument, what, " field 'policy' must be a string, got ", json_summary(*it));
    c.policy = it->get<std::string>();
  }
  if (const auto it = j.find("workload"); it != j.end()) {
    KT_CHECK(it->is_array(), InvalidArgument, what, " field 'workload' must be an array of requests, got ",
             json_summary(*it));
    c.workload.reserve(it->size());
    for (const json& r : *it) c.workload.push_back(request_from_json(r.dump()));
  }
  c.popularity = number_field(j, "popularity", c.popularity, what);
  c.gpu_weighted_typical = bool_field(j, "gpu_weighted_typical", c.gpu_weighted_typical, what);
  c.kube_semantics = bool_field(j, "kube_semantics", c.kube_semantics, what);
  c.indexed = bool_field(j, "indexed", c.indexed, what);
  c.seed = checked_int_or(j, "seed", std::uint64_t{0}, std::string(what) + " field 'seed'");
  c.validate();
  return c;
}

void check_keys(const json& j, const char* what, const std::vector<std::string>& allowed) {
  KT_CHECK(j.is_object(), InvalidArgument, what, " must be a JSON object, got ", json_summary(j));
  for (const auto& [k, v] : j.items()) {
    (void)v;
    KT_CHECK(has(allowed, k), InvalidArgument, what, " field '", k, "' is unknown (expected ", join_names(allowed), ")");
  }
}
}  // namespace

const std::vector<std::string>& AllocatorConfig::keys() {
  static const std::vector<std::string> k{"policy", "workload", "popularity", "gpu_weighted_typical",
                                          "kube_semantics", "indexed", "seed"};
  return k;
}

void AllocatorConfig::validate() const {
  const auto names = policy_names();
  KT_CHECK(policy == "binpack" || has(names, policy), InvalidArgument, "allocator policy '", policy,
           "' is unknown (expected best_fit, gpushare, binpack, spread, fgd, kubetune)");
  KT_CHECK(popularity > 0.0 && popularity <= 1.0, InvalidArgument, "allocator popularity = ", popularity,
           " must be in (0, 1]");
  KT_CHECK(!(workload.empty() && (policy == "fgd" || policy == "kubetune")), InvalidArgument, "allocator policy '",
           policy, "' needs a non-empty 'workload' (the typical tasks it measures fragmentation against)");
}

AllocatorOptions AllocatorConfig::options() const {
  AllocatorOptions o;
  o.indexed = indexed;
  o.seed = seed;
  return o;
}

AllocatorConfig AllocatorConfig::from_json(const nlohmann::json& j) {
  check_keys(j, "allocator options", keys());
  return read_allocator(j);
}

nlohmann::json AllocatorConfig::to_json() const {
  json w = json::array();
  for (const Request& r : workload) {
    json q{{"name", r.name},
           {"cpu_milli", r.cpu_milli},
           {"memory_mib", r.memory_mib},
           {"gpu_count", r.gpu_count},
           {"gpu_milli", r.gpu_milli},
           {"gpu_memory_mib", r.gpu_memory_mib},
           {"compute_milli", r.compute_milli},
           {"models", r.models},
           {"mig_profile", r.mig_profile},
           {"gang", r.gang}};
    w.push_back(std::move(q));
  }
  return json{{"policy", policy},
              {"workload", std::move(w)},
              {"popularity", popularity},
              {"gpu_weighted_typical", gpu_weighted_typical},
              {"kube_semantics", kube_semantics},
              {"indexed", indexed},
              {"seed", seed}};
}

std::vector<TypicalPod> typical_pods_for(const Cluster& c, const std::string& policy,
                                         const std::vector<Request>& workload, double popularity,
                                         bool gpu_weighted) {
  KT_CHECK(popularity > 0.0 && popularity <= 1.0, InvalidArgument, "popularity = ", popularity, " must be in (0, 1]");
  if (workload.empty()) return {};
  if (policy == "kubetune") return kubetune_typical_pods(c, workload, popularity);
  return typical_pods(c, workload, popularity, true, gpu_weighted);
}

std::shared_ptr<Policy> make_policy(const Cluster& c, const AllocatorConfig& cfg) {
  cfg.validate();
  // Only the fragmentation-aware policies read typical pods: the others skip computing them.
  const bool fragmentation_aware = cfg.policy == "fgd" || cfg.policy == "kubetune";
  auto p = make_policy(cfg.policy, fragmentation_aware ? typical_pods_for(c, cfg.policy, cfg.workload,
                                                                          cfg.popularity, cfg.gpu_weighted_typical)
                                                       : std::vector<TypicalPod>{});
  p->set_kube_semantics(cfg.kube_semantics);
  return p;
}

std::shared_ptr<Allocator> make_allocator(Cluster c, const AllocatorConfig& cfg) {
  auto p = make_policy(c, cfg);
  return std::make_shared<Allocator>(std::move(c), std::move(p), cfg.options());
}

std::pair<AllocatorConfig, ExtenderConfig> allocator_and_extender_from_json(const nlohmann::json& j) {
  std::vector<std::string> all = AllocatorConfig::keys();
  all.insert(all.end(), extender_keys().begin(), extender_keys().end());
  check_keys(j, "allocator options", all);
  AllocatorConfig a = read_allocator(j);
  ExtenderConfig e;
  constexpr const char* what = "allocator options";
  e.gpu_mem_unit_mib = checked_int_or(j, "gpu_mem_unit_mib", e.gpu_mem_unit_mib,
                                      std::string(what) + " field 'gpu_mem_unit_mib'");
  e.pending_ttl_s = number_field(j, "pending_ttl_s", e.pending_ttl_s, what);
  e.max_pending = checked_int_or(j, "max_pending", e.max_pending, std::string(what) + " field 'max_pending'");
  e.assume_grace_s = number_field(j, "assume_grace_s", e.assume_grace_s, what);
  e.max_body_bytes =
      checked_int_or(j, "max_body_bytes", e.max_body_bytes, std::string(what) + " field 'max_body_bytes'");
  e.validate();
  return {std::move(a), e};
}

}  // namespace kubetune::sched::gpu
