// Kubernetes objects (v1.Node, v1.Pod) already parsed as JSON -> kubetune types; the string entry points in
// cluster.hpp / extender.hpp parse and call these.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kubetune/core/json_limits.hpp"  // json_depth
#include "kubetune/sched/gpu/cluster.hpp"
#include "kubetune/sched/gpu/extender.hpp"

namespace kubetune::sched::gpu {

NodeSpec node_spec_from_kube_node(const nlohmann::json& node, std::int64_t gpu_mem_unit_mib);
/// GPU indices of the node's kubetune.io/unhealthy-gpus annotation ("1,3"); throws InvalidArgument naming a bad
/// entry (not an integer, out of [0, num_gpus)).
std::vector<int> unhealthy_gpus_of_kube_node(const nlohmann::json& node, int num_gpus);
Request request_from_pod(const nlohmann::json& pod, const ExtenderConfig& cfg);
/// "1, 3" -> {1, 3} (spaces and empty items ignored); InvalidArgument naming `what` for an entry that is not an
/// integer in [0, limit).
std::vector<int> index_list(const std::string& text, int limit, const std::string& what);

/// a == b ignoring ASCII case (how Go's encoding/json matches field names).
bool iequals_ascii(std::string_view a, std::string_view b) noexcept;
/// Member `key` of object j, matched as Go's encoding/json matches field names (exact first, then ignoring ASCII
/// case: kube-scheduler's structs have no JSON tags); nullptr when absent or null.
const nlohmann::json* go_field(const nlohmann::json& j, std::string_view key);
/// "namespace/name" (an empty namespace is "default").
std::string pod_key(const std::string& ns, const std::string& name);

}  // namespace kubetune::sched::gpu
