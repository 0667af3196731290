// Kubernetes Node -> NodeSpec: gpushare's node capacity (aliyun.com/gpu-mem total, aliyun.com/gpu-count) and the
// GPU Feature Discovery labels.
#include <cmath>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/cluster.hpp"
#include "kubetune/sched/gpu/extender.hpp"
#include "kube_json.hpp"

namespace kubetune::sched::gpu {

namespace {
using nlohmann::json;

json object_at(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return json::object();
  KT_CHECK(j[key].is_object(), InvalidArgument, where, ".", key, " must be an object");
  return j[key];
}

/// Quantity of resource `key` in `res` (a capacity / allocatable map); -1 when absent.
double quantity(const json& res, const char* key, const std::string& where) {
  if (!res.contains(key)) return -1.0;
  const json& v = res[key];
  std::string q;
  if (v.is_string()) q = v.get<std::string>();
  else if (v.is_number()) q = v.dump();
  else KT_THROW(InvalidArgument, where, "[\"", key, "\"] = ", v.dump(), " must be a quantity");
  try {
    return parse_quantity(q);
  } catch (const InvalidArgument& e) {
    KT_THROW(InvalidArgument, where, "[\"", key, "\"]: ", e.what());
  }
}

std::int64_t whole(double v, const char* key, const std::string& who) {
  KT_CHECK(v >= 0 && v < 9.0e15 && std::floor(v) == v, InvalidArgument, "node '", who, "': ", key, " = ", v,
           " must be a non-negative integer");
  return static_cast<std::int64_t>(v);
}

std::string label(const json& labels, const char* key) {
  if (!labels.contains(key)) return {};
  KT_CHECK(labels[key].is_string(), InvalidArgument, "label '", key, "' must be a string");
  return labels[key].get<std::string>();
}
}  // namespace

NodeSpec node_spec_from_kube_node(const std::string& node_json, std::int64_t gpu_mem_unit_mib) {
  json n;
  try {
    n = json::parse(node_json);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, "node JSON does not parse: ", e.what());
  }
  return node_spec_from_kube_node(n, gpu_mem_unit_mib);
}

NodeSpec node_spec_from_kube_node(const json& n, std::int64_t gpu_mem_unit_mib) {
  KT_CHECK(gpu_mem_unit_mib > 0, InvalidArgument, "gpu_mem_unit_mib = ", gpu_mem_unit_mib, " must be > 0");
  KT_CHECK(n.is_object(), InvalidArgument, "node JSON must be an object (a v1.Node)");
  const json meta = object_at(n, "metadata", "node");
  KT_CHECK(meta.contains("name") && meta["name"].is_string() && !meta["name"].get<std::string>().empty(),
           InvalidArgument, "node JSON: metadata.name must be a non-empty string");
  NodeSpec s;
  s.name = meta["name"].get<std::string>();
  const std::string where = "node '" + s.name + "': status";
  const json labels = object_at(meta, "labels", "metadata");
  const json status = object_at(n, "status", "node");
  const json cap = object_at(status, "capacity", where);
  const json alloc = object_at(status, "allocatable", where);
  auto pick = [&](const char* key) {  // allocatable first, as the scheduler uses it
    const double a = quantity(alloc, key, where + ".allocatable");
    return a >= 0 ? a : quantity(cap, key, where + ".capacity");
  };
  const double cpu = pick("cpu");
  const double mem = pick("memory");
  s.cpu_milli = cpu < 0 ? 0 : static_cast<std::int64_t>(std::llround(cpu * 1000.0));
  s.memory_mib = mem < 0 ? 0 : static_cast<std::int64_t>(std::floor(mem / 1048576.0));

  const double count = quantity(cap, kGpuCountResource, where + ".capacity");
  const double nv = quantity(cap, "nvidia.com/gpu", where + ".capacity");
  const double total = quantity(cap, kGpuMemResource, where + ".capacity");
  if (count >= 0) s.num_gpus = static_cast<int>(whole(count, kGpuCountResource, s.name));
  else if (nv >= 0) s.num_gpus = static_cast<int>(whole(nv, "nvidia.com/gpu", s.name));
  KT_CHECK(s.num_gpus <= 64, InvalidArgument, "node '", s.name, "': GPU count ", s.num_gpus, " must be <= 64");

  s.model = label(labels, kLabelKtGpuModel);
  if (s.model.empty()) s.model = label(labels, kLabelGpuProduct);
  s.mig = label(labels, kLabelKtMig) == "true";

  std::string per = label(labels, kLabelKtGpuMemory);
  const char* per_key = kLabelKtGpuMemory;
  if (per.empty()) {
    per = label(labels, kLabelGpuMemory);
    per_key = kLabelGpuMemory;
  }
  if (!per.empty()) {  // the per-GPU memory is labelled: it wins
    std::size_t pos = 0;
    long long v = -1;
    try {
      v = std::stoll(per, &pos);
    } catch (...) {
      pos = 0;
    }
    KT_CHECK(pos == per.size() && v > 0, InvalidArgument, "node '", s.name, "': label ", per_key, " = '", per,
             "' must be a positive integer (MiB)");
    s.gpu_memory_mib = v;
  } else if (total > 0) {
    // Not labelled: gpushare's node total over its GPU count (gpushare-scheduler-extender NodeInfo).
    const std::int64_t units = whole(total, kGpuMemResource, s.name);
    KT_CHECK(count > 0, InvalidArgument, "node '", s.name, "': capacity ", kGpuMemResource, " = ", units,
             " needs capacity ", kGpuCountResource, " > 0 to split it over GPUs (gpushare's device plugin sets it)");
    s.gpu_memory_total_mib = units * gpu_mem_unit_mib;
    s.gpu_memory_unit_mib = gpu_mem_unit_mib;
  }
  return s;
}

std::vector<int> index_list(const std::string& text, int limit, const std::string& what) {
  std::vector<int> out;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t to = text.find(',', from);
    if (to == std::string::npos) to = text.size();
    std::string item = text.substr(from, to - from);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) {
      std::size_t pos = 0;
      int v = -1;
      try {
        v = std::stoi(item, &pos);
      } catch (...) {
        pos = 0;
      }
      KT_CHECK(pos == item.size() && v >= 0 && v < limit, InvalidArgument, what, " = '", text, "': '", item,
               "' is not an index in [0, ", limit, ")");
      out.push_back(v);
    }
    from = to + 1;
  }
  return out;
}

std::vector<int> unhealthy_gpus_of_kube_node(const json& n, int num_gpus) {
  const json meta = object_at(n, "metadata", "node");
  return index_list(label(object_at(meta, "annotations", "metadata"), kAnnoUnhealthyGpus), num_gpus,
                    std::string("annotation ") + kAnnoUnhealthyGpus);
}

}  // namespace kubetune::sched::gpu
