// C API of the gpu module: allocator handle, place / gang / release / stats and the extender verbs, all JSON.
#include "kubetune/c_api/gpu.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "c_api_internal.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/allocator_config.hpp"
#include "kubetune/sched/gpu/device_plugin.hpp"
#include "kubetune/sched/gpu/extender.hpp"

namespace g = kubetune::sched::gpu;
using nlohmann::json;

struct kt_gpu_allocator {
  std::shared_ptr<g::Allocator> alloc;
  std::unique_ptr<g::Extender> ext;
};

namespace {
json parse_or_throw(const char* s, const char* what) {
  KT_CHECK(s != nullptr, InvalidArgument, what, " must not be NULL");
  try {
    return json::parse(s);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, what, " does not parse as JSON: ", e.what());
  }
}

json placement_json(const g::Allocator& a, const g::Placement& p) {
  json j = json::parse(g::placement_to_json(p));
  j["placed"] = true;
  j["node_name"] = a.cluster().node(p.node).name;
  return j;
}
}  // namespace

extern "C" {

KT_API int kt_gpu_allocator_create(const char* cluster_json, const char* options_json, kt_gpu_allocator** out,
                                   char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out != nullptr, InvalidArgument, "out must not be NULL");
  KT_CHECK(cluster_json != nullptr, InvalidArgument, "cluster_json must not be NULL");
  g::Cluster c = g::Cluster::from_json(cluster_json);
  const json o = options_json ? parse_or_throw(options_json, "options_json") : json::object();
  const auto [ac, ec] = g::allocator_and_extender_from_json(o);
  auto h = std::make_unique<kt_gpu_allocator>();
  h->alloc = g::make_allocator(std::move(c), ac);
  h->ext = std::make_unique<g::Extender>(h->alloc, ec);
  *out = h.release();
  KT_API_END(err_out)
}

KT_API void kt_gpu_allocator_free(kt_gpu_allocator* a) { delete a; }

KT_API int kt_gpu_place(kt_gpu_allocator* a, const char* request_json, int node, char** placement_json_out,
                        char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a && request_json && placement_json_out, InvalidArgument,
           "allocator, request_json and placement_json_out must not be NULL");
  KT_CHECK(node >= -1, InvalidArgument, "node = ", node, " must be a node index or -1 (let the policy choose)");
  const g::Request r = g::request_from_json(request_json);
  auto p = node >= 0 ? a->alloc->place_on(r, node) : a->alloc->place(r);
  *placement_json_out = kubetune::capi::dup_string(p ? placement_json(*a->alloc, *p).dump() : json{{"placed", false}}.dump());
  KT_API_END(err_out)
}

KT_API int kt_gpu_place_gang(kt_gpu_allocator* a, const char* members_json, const char* preference,
                             char** result_json_out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a && result_json_out, InvalidArgument, "allocator and result_json_out must not be NULL");
  const json m = parse_or_throw(members_json, "members_json");
  KT_CHECK(m.is_array(), InvalidArgument, "members_json must be a JSON array of requests");
  std::vector<g::Request> rs;
  for (const json& r : m) rs.push_back(g::request_from_json(r.dump()));
  auto ps = a->alloc->place_gang(rs, g::parse_gang_preference(preference ? preference : "pack"));
  json out{{"placed", ps.has_value()}};
  if (ps) {
    out["placements"] = json::array();
    for (const auto& p : *ps) out["placements"].push_back(placement_json(*a->alloc, p));
  }
  *result_json_out = kubetune::capi::dup_string(out.dump());
  KT_API_END(err_out)
}

KT_API int kt_gpu_release(kt_gpu_allocator* a, uint64_t placement_id, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a != nullptr, InvalidArgument, "allocator must not be NULL");
  a->alloc->release(placement_id);
  KT_API_END(err_out)
}

KT_API int kt_gpu_stats(const kt_gpu_allocator* a, char** stats_json_out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a && stats_json_out, InvalidArgument, "allocator and stats_json_out must not be NULL");
  const g::AllocatorStats s = a->alloc->stats();
  *stats_json_out = kubetune::capi::dup_string(json{{"gpu_milli_capacity", s.gpu_milli_capacity},
                                                    {"gpu_milli_allocated", s.gpu_milli_allocated},
                                                    {"cpu_milli_allocated", s.cpu_milli_allocated},
                                                    {"placements", s.placements},
                                                    {"fully_free_gpus", s.fully_free_gpus},
                                                    {"unhealthy_gpus", s.unhealthy_gpus},
                                                    {"placements_on_unhealthy", s.placements_on_unhealthy}}
                                                   .dump());
  KT_API_END(err_out)
}

KT_API int kt_gpu_check_invariants(const kt_gpu_allocator* a, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a != nullptr, InvalidArgument, "allocator must not be NULL");
  a->alloc->check_invariants();
  KT_API_END(err_out)
}

KT_API int kt_gpu_set_gpu_health(kt_gpu_allocator* a, const char* node_name, int gpu, int healthy,
                                 char** placements_json_out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a && node_name, InvalidArgument, "allocator and node_name must not be NULL");
  const int node = a->alloc->cluster().find_node(node_name);
  KT_CHECK(node >= 0, NotFound, "node '", node_name, "' is unknown");
  const auto on = a->alloc->set_gpu_health(node, gpu, healthy != 0);
  if (placements_json_out) {
    json arr = json::array();
    for (const auto& p : on) arr.push_back(placement_json(*a->alloc, p));
    *placements_json_out = kubetune::capi::dup_string(arr.dump());
  }
  KT_API_END(err_out)
}

KT_API int kt_gpu_unhealthy(const kt_gpu_allocator* a, char** json_out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a && json_out, InvalidArgument, "allocator and json_out must not be NULL");
  json gpus = json::array(), ps = json::array();
  for (const auto& [node, gpu] : a->alloc->unhealthy_gpus())
    gpus.push_back({{"node", node}, {"node_name", a->alloc->cluster().node(node).name}, {"gpu", gpu}});
  for (const auto& p : a->alloc->placements_on_unhealthy()) ps.push_back(placement_json(*a->alloc, p));
  *json_out = kubetune::capi::dup_string(json{{"gpus", gpus}, {"placements", ps}}.dump());
  KT_API_END(err_out)
}

KT_API int kt_gpu_device_plugin_allocate(const char* request_json, char** response_json_out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(request_json && response_json_out, InvalidArgument, "request_json and response_json_out must not be NULL");
  *response_json_out = kubetune::capi::dup_string(g::gpushare_allocate_json(request_json));
  KT_API_END(err_out)
}

KT_API int kt_gpu_extender(kt_gpu_allocator* a, const char* verb, const char* body_json, char** response_json_out,
                           char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(a && verb && body_json && response_json_out, InvalidArgument,
           "allocator, verb, body_json and response_json_out must not be NULL");
  const g::ExtenderReply r = a->ext->handle(verb, body_json);
  // A body the verb cannot read is an error of the call; a refusal (no fit, conflict) is the protocol's Error field.
  KT_CHECK(r.status != 404, InvalidArgument, "extender verb '", verb,
           "' is not one of filter, prioritize, bind, preempt, release");
  KT_CHECK(r.status != 400 && r.status != 413, InvalidArgument, "extender ", verb, ": ", r.body);
  const std::string& out = r.body;
  *response_json_out = kubetune::capi::dup_string(out);
  KT_API_END(err_out)
}

}  // extern "C"
