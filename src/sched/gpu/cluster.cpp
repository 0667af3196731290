// Cluster construction, validation, JSON round trip; request validation.
#include "kubetune/sched/gpu/cluster.hpp"

#include <limits>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/sched/gpu/mig.hpp"
#include "kubetune/sched/gpu/request.hpp"

namespace kubetune::sched::gpu {

std::int64_t default_gpu_memory_mib(const std::string& model) {
  // Public spec sheets: P100 16 GB, T4 16 GB, V100 16/32 GB, A10 24 GB, A100 40/80 GB, H100 80 GB.
  // G1/G2/G3 are undisclosed in the Alibaba trace; 32 GiB is an assumption.
  static const std::pair<const char*, std::int64_t> kTable[] = {
      {"P100", 16384}, {"T4", 16384},  {"V100M16", 16384}, {"V100M32", 32768}, {"A10", 24576},
      {"G1", 32768},   {"G2", 32768},  {"G3", 32768},      {"A100", 40960},    {"A100-80", 81920},
      {"H100", 81920}, {"V100", 16384}};
  for (const auto& [name, mib] : kTable)
    if (model == name) return mib;
  return 0;
}

std::int64_t gpushare_gpu_memory_mib(std::int64_t total_units, int gpu_count, std::int64_t unit_mib) {
  KT_CHECK(unit_mib > 0, InvalidArgument, "gpu memory unit = ", unit_mib, " MiB must be > 0");
  KT_CHECK(total_units >= 0, InvalidArgument, "aliyun.com/gpu-mem = ", total_units, " must be >= 0");
  KT_CHECK(gpu_count > 0, InvalidArgument, "aliyun.com/gpu-count = ", gpu_count, " must be > 0 when aliyun.com/gpu-mem = ",
           total_units, " (gpushare splits the node total over the GPU count)");
  // gpushare-scheduler-extender, pkg/cache/nodeinfo.go NewNodeInfo: every device gets
  // GetTotalGPUMemory(node) / GetGPUCountInNode(node) -- Go integer division in the plugin's unit.
  const std::int64_t per = total_units / gpu_count;
  KT_CHECK(per > 0, InvalidArgument, "aliyun.com/gpu-mem = ", total_units, " over aliyun.com/gpu-count = ", gpu_count,
           " leaves no memory per GPU");
  return per * unit_mib;
}

int Cluster::add_node(NodeSpec spec) {
  KT_CHECK(!spec.name.empty(), InvalidArgument, "node #", nodes_.size(), ": field 'name' must not be empty");
  KT_CHECK(!name_index_.count(spec.name), InvalidArgument, "node '", spec.name, "': duplicate name");
  KT_CHECK(spec.cpu_milli >= 0, InvalidArgument, "node '", spec.name, "': cpu_milli = ", spec.cpu_milli, " must be >= 0");
  KT_CHECK(spec.memory_mib >= 0, InvalidArgument, "node '", spec.name, "': memory_mib = ", spec.memory_mib,
           " must be >= 0");
  KT_CHECK(spec.num_gpus >= 0 && spec.num_gpus <= 64, InvalidArgument, "node '", spec.name, "': gpus = ",
           spec.num_gpus, " must be in [0, 64]");
  KT_CHECK(spec.gpu_memory_mib >= 0, InvalidArgument, "node '", spec.name, "': gpu_memory_mib = ",
           spec.gpu_memory_mib, " must be >= 0");
  KT_CHECK(spec.gpu_memory_total_mib >= 0, InvalidArgument, "node '", spec.name, "': gpu_memory_total_mib = ",
           spec.gpu_memory_total_mib, " must be >= 0");
  KT_CHECK(spec.gpu_memory_unit_mib > 0, InvalidArgument, "node '", spec.name, "': gpu_memory_unit_mib = ",
           spec.gpu_memory_unit_mib, " must be > 0");
  if (spec.gpu_memory_total_mib > 0) {
    KT_CHECK(spec.gpu_memory_total_mib % spec.gpu_memory_unit_mib == 0, InvalidArgument, "node '", spec.name,
             "': gpu_memory_total_mib = ", spec.gpu_memory_total_mib, " is not a multiple of gpu_memory_unit_mib = ",
             spec.gpu_memory_unit_mib);
    KT_CHECK(spec.num_gpus > 0, InvalidArgument, "node '", spec.name, "': gpu_memory_total_mib = ",
             spec.gpu_memory_total_mib, " needs gpus > 0 (gpushare splits the node total over aliyun.com/gpu-count)");
    std::int64_t per = 0;
    try {
      per = gpushare_gpu_memory_mib(spec.gpu_memory_total_mib / spec.gpu_memory_unit_mib, spec.num_gpus,
                                    spec.gpu_memory_unit_mib);
    } catch (const InvalidArgument& e) {
      KT_THROW(InvalidArgument, "node '", spec.name, "': ", e.what());
    }
    KT_CHECK(spec.gpu_memory_mib == 0 || spec.gpu_memory_mib == per, InvalidArgument, "node '", spec.name,
             "': gpu_memory_mib = ", spec.gpu_memory_mib, " disagrees with gpu_memory_total_mib / gpus = ",
             spec.gpu_memory_total_mib, " / ", spec.num_gpus, " -> ", per, " MiB per GPU");
    spec.gpu_memory_mib = per;
  }
  int mig_model = -1;
  if (spec.mig && spec.num_gpus > 0) {
    mig_model = mig_model_index(spec.model);
    std::string known;
    for (const MigModel& m : mig_models()) known += (known.empty() ? "" : ", ") + m.name;
    KT_CHECK(mig_model >= 0, InvalidArgument, "node '", spec.name, "': mig = true but GPU model '", spec.model,
             "' has no MIG profile table (MIG models: ", known, ")");
  }
  if (spec.topology)
    KT_CHECK(spec.topology->num_gpus() == spec.num_gpus, InvalidArgument, "node '", spec.name, "': topology has ",
             spec.topology->num_gpus(), " GPUs but gpus = ", spec.num_gpus);
  KT_CHECK(spec.cpu_milli <= std::numeric_limits<std::int64_t>::max() - total_cpu_, InvalidArgument, "node '",
           spec.name, "': cpu_milli = ", spec.cpu_milli, " overflows the cluster's total CPU");
  int mid = -1;
  if (spec.num_gpus > 0) {
    if (spec.gpu_memory_mib == 0) spec.gpu_memory_mib = default_gpu_memory_mib(spec.model);
    auto it = model_index_.find(spec.model);
    if (it == model_index_.end()) {
      KT_CHECK(model_names_.size() < 64, InvalidArgument, "node '", spec.name, "': more than 64 GPU models");
      mid = static_cast<int>(model_names_.size());
      model_index_.emplace(spec.model, mid);
      model_names_.push_back(spec.model);
    } else {
      mid = it->second;
    }
  }
  total_gpus_ += spec.num_gpus;
  total_cpu_ += spec.cpu_milli;
  name_index_.emplace(spec.name, static_cast<int>(nodes_.size()));
  nodes_.push_back(std::move(spec));
  node_model_.push_back(mid);
  node_mig_model_.push_back(mig_model);
  return static_cast<int>(nodes_.size()) - 1;
}

const NodeSpec& Cluster::node(int i) const {
  KT_CHECK(i >= 0 && i < num_nodes(), NotFound, "node index ", i, " out of range [0, ", num_nodes(), ")");
  return nodes_[static_cast<std::size_t>(i)];
}

int Cluster::find_node(const std::string& name) const {
  auto it = name_index_.find(name);
  return it == name_index_.end() ? -1 : it->second;
}

int Cluster::model_id(const std::string& model) const {
  auto it = model_index_.find(model);
  return it == model_index_.end() ? -1 : it->second;
}

Cluster Cluster::from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, "cluster JSON does not parse: ", e.what());
  }
  KT_CHECK(j.is_object() && j.contains("nodes") && j["nodes"].is_array(), InvalidArgument,
           "cluster JSON needs an array field 'nodes'");
  Cluster c;
  std::size_t k = 0;
  for (const auto& n : j["nodes"]) {
    KT_CHECK(n.is_object(), InvalidArgument, "nodes[", k, "] must be an object");
    NodeSpec s;
    try {
      s.name = n.value("name", std::string("node-") + std::to_string(k));
      const std::string at = detail::concat("nodes[", k, "].");
      s.cpu_milli = checked_int_or(n, "cpu_milli", std::int64_t{0}, at + "cpu_milli");
      s.memory_mib = checked_int_or(n, "memory_mib", std::int64_t{0}, at + "memory_mib");
      s.num_gpus = checked_int_or(n, "gpus", 0, at + "gpus");
      s.gpu_memory_mib = checked_int_or(n, "gpu_memory_mib", std::int64_t{0}, at + "gpu_memory_mib");
      s.gpu_memory_total_mib = checked_int_or(n, "gpu_memory_total_mib", std::int64_t{0}, at + "gpu_memory_total_mib");
      s.gpu_memory_unit_mib = checked_int_or(n, "gpu_memory_unit_mib", std::int64_t{1}, at + "gpu_memory_unit_mib");
      s.model = n.value("model", std::string());
      s.mig = n.value("mig", false);
    } catch (const nlohmann::json::exception& e) {
      KT_THROW(InvalidArgument, "nodes[", k, "]: bad field type: ", e.what());
    }
    if (n.contains("nvlink_islands")) {
      s.topology = std::make_shared<Topology>(Topology::nvlink_islands(
          s.num_gpus, checked_int<int>(n["nvlink_islands"], detail::concat("nodes[", k, "].nvlink_islands"))));
    } else if (n.contains("links")) {
      auto t = std::make_shared<Topology>(s.num_gpus);
      for (const auto& l : n["links"]) {
        KT_CHECK(l.is_array() && l.size() == 3, InvalidArgument, "nodes[", k, "].links entries must be [a, b, type]");
        const std::string at = detail::concat("nodes[", k, "].links entry");
        KT_CHECK(l[2].is_string(), InvalidArgument, at, " type must be a string");
        t->set_link(checked_int<int>(l[0], at + " [0]"), checked_int<int>(l[1], at + " [1]"),
                    parse_link_type(l[2].get<std::string>()));
      }
      s.topology = t;
    }
    c.add_node(std::move(s));
    ++k;
  }
  return c;
}

std::string Cluster::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& n : nodes_) {
    nlohmann::json o{{"name", n.name},   {"cpu_milli", n.cpu_milli}, {"memory_mib", n.memory_mib},
                     {"gpus", n.num_gpus}, {"gpu_memory_mib", n.gpu_memory_mib}, {"model", n.model},
                     {"mig", n.mig}};
    if (n.gpu_memory_total_mib > 0) {
      o["gpu_memory_total_mib"] = n.gpu_memory_total_mib;
      o["gpu_memory_unit_mib"] = n.gpu_memory_unit_mib;
    }
    if (n.topology) {
      nlohmann::json links = nlohmann::json::array();
      for (int a = 0; a < n.num_gpus; ++a)
        for (int b = a + 1; b < n.num_gpus; ++b)
          if (n.topology->link(a, b) != LinkType::kPcie) links.push_back({a, b, to_string(n.topology->link(a, b))});
      o["links"] = links;
    }
    arr.push_back(o);
  }
  return nlohmann::json{{"nodes", arr}}.dump();
}

// ---------------------------------------------------------------- Request
void Request::validate_and_normalise() {
  const std::string who = name.empty() ? std::string("request") : "request '" + name + "'";
  KT_CHECK(cpu_milli >= 0, InvalidArgument, who, ": cpu_milli = ", cpu_milli, " must be >= 0");
  KT_CHECK(memory_mib >= 0, InvalidArgument, who, ": memory_mib = ", memory_mib, " must be >= 0");
  KT_CHECK(gpu_count >= 0 && gpu_count <= 64, InvalidArgument, who, ": gpu_count = ", gpu_count,
           " must be in [0, 64]");
  KT_CHECK(gpu_milli >= 0 && gpu_milli <= kMilli, InvalidArgument, who, ": gpu_milli = ", gpu_milli,
           " must be in [0, 1000]");
  KT_CHECK(gpu_memory_mib >= 0, InvalidArgument, who, ": gpu_memory_mib = ", gpu_memory_mib, " must be >= 0");
  KT_CHECK(compute_milli >= 0 && compute_milli <= kMilli, InvalidArgument, who, ": compute_milli = ", compute_milli,
           " must be in [0, 1000]");
  if (!mig_profile.empty()) {
    KT_CHECK(mig_profile_known(mig_profile), InvalidArgument, who, ": mig_profile '", mig_profile,
             "' is unknown (A100-40GB: 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb; A100-80GB / "
             "H100-80GB: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb; H100-94GB: 1g.12gb, ..., "
             "7g.94gb; generic 1g, 2g, 3g, 4g, 7g)");
    if (gpu_count == 0) gpu_count = 1;
    KT_CHECK(gpu_count == 1, InvalidArgument, who, ": gpu_count = ", gpu_count, " must be 1 with a mig_profile");
    KT_CHECK(gpu_milli == 0 && gpu_memory_mib == 0, InvalidArgument, who,
             ": gpu_milli/gpu_memory_mib must be 0 with a mig_profile");
    return;
  }
  if (gpu_memory_mib > 0) {
    if (gpu_count == 0) gpu_count = 1;
    KT_CHECK(gpu_count == 1, InvalidArgument, who, ": gpu_count = ", gpu_count,
             " must be 1 when gpu_memory_mib is given (gpushare shares one GPU)");
    KT_CHECK(gpu_milli == 0, InvalidArgument, who, ": give gpu_milli or gpu_memory_mib, not both");
    return;
  }
  if (gpu_count == 0) {
    KT_CHECK(gpu_milli == 0, InvalidArgument, who, ": gpu_milli = ", gpu_milli, " needs gpu_count >= 1");
    return;
  }
  if (gpu_milli == 0) gpu_milli = kMilli;
  KT_CHECK(gpu_count == 1 || gpu_milli == kMilli, InvalidArgument, who, ": gpu_milli = ", gpu_milli,
           " with gpu_count = ", gpu_count, " (more than one GPU means whole GPUs, gpu_milli = 1000)");
}

std::int64_t Request::total_gpu_milli() const noexcept {
  if (!mig_profile.empty())
    return static_cast<std::int64_t>(mig_compute_slices(mig_profile)) * kMilli / kMigComputeSlices;
  if (gpu_memory_mib > 0) return compute_milli;
  return static_cast<std::int64_t>(gpu_count) * gpu_milli;
}

}  // namespace kubetune::sched::gpu
