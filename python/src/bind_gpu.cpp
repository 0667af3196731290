// Python bindings of the gpu module (submodule kubetune._kubetune.sched): cluster, requests, allocator, extender, replay.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <vector>

#include "bindings.hpp"
#include "dict_conv.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/allocator_config.hpp"
#include "kubetune/sched/gpu/cluster.hpp"
#include "kubetune/sched/gpu/device_plugin.hpp"
#include "kubetune/sched/gpu/extender.hpp"
#include "kubetune/sched/gpu/mig.hpp"
#include "kubetune/sched/gpu/policy.hpp"
#include "kubetune/sched/gpu/topology.hpp"
#include "kubetune/sched/gpu/trace.hpp"

namespace kubetune::python {
namespace {

namespace g = kubetune::sched::gpu;
using namespace py::literals;

py::dict point_dict(const g::ReplayPoint& p) {
  return py::dict("arrived_pct"_a = p.arrived_pct, "allocated_pct"_a = p.allocated_pct,
                  "allocation_rate_pct"_a = p.allocation_rate_pct, "unallocated_pct"_a = p.unallocated_pct,
                  "frag_ratio_pct"_a = p.frag_ratio_pct, "frag_pct"_a = p.frag_pct);
}

py::dict placement_dict(const g::Placement& p) {
  return py::dict("id"_a = p.id, "node"_a = p.node, "gpus"_a = p.gpus, "mig_start"_a = p.mig_start,
                  "gpu_milli"_a = p.gpu_milli, "gpu_memory_mib"_a = p.gpu_memory_mib, "cpu_milli"_a = p.cpu_milli,
                  "memory_mib"_a = p.memory_mib, "name"_a = p.name, "mig_profile"_a = p.mig_profile,
                  "gang"_a = p.gang);
}

py::list placement_list(const std::vector<g::Placement>& ps) { return list_of(ps, placement_dict); }

py::dict profile_dict(const g::MigProfile& p) {
  return py::dict("name"_a = p.name, "compute_slices"_a = p.compute_slices, "memory_slices"_a = p.memory_slices,
                  "memory_gb"_a = p.memory_gb, "max_instances"_a = p.max_instances, "starts"_a = p.starts,
                  "media_extensions"_a = p.media_extensions);
}

py::dict node_dict(const g::NodeSpec& n) {
  return py::dict("name"_a = n.name, "cpu_milli"_a = n.cpu_milli, "memory_mib"_a = n.memory_mib,
                  "gpus"_a = n.num_gpus, "gpu_memory_mib"_a = n.gpu_memory_mib,
                  "gpu_memory_total_mib"_a = n.gpu_memory_total_mib, "model"_a = n.model, "mig"_a = n.mig);
}

/// A JSON text from a str, or from any JSON-serialisable Python object (dict / list).
std::string json_text(const py::object& o) {
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();
  return py::module_::import("json").attr("dumps")(o).cast<std::string>();
}

int node_index(const g::Allocator& a, const py::object& node) {
  if (py::isinstance<py::str>(node)) {
    const std::string name = node.cast<std::string>();
    const int i = a.cluster().find_node(name);
    KT_CHECK(i >= 0, NotFound, "node '", name, "' is unknown");
    return i;
  }
  KT_CHECK(py::isinstance<py::int_>(node) && !py::isinstance<py::bool_>(node), InvalidArgument,
           "node must be a node index (int) or name (str), got ", py::repr(node).cast<std::string>());
  return node.cast<int>();
}

/// Python subclasses of KubeWriter, called from C++ server threads: the GIL is taken here, and a Python exception
/// becomes a C++ one carrying its message (so the bind can roll back without touching Python objects).
class PyKubeWriter : public g::KubeWriter {
 public:
  std::string get_pod(const std::string& ns, const std::string& name) override {
    return call<std::string>("get_pod", ns, name);
  }
  void patch_pod_annotations(const std::string& ns, const std::string& name, const std::string& uid,
                             const std::map<std::string, std::string>& annotations) override {
    call<void>("patch_pod_annotations", ns, name, uid, annotations);
  }
  void create_binding(const std::string& ns, const std::string& name, const std::string& uid,
                      const std::string& node) override {
    call<void>("create_binding", ns, name, uid, node);
  }

 private:
  template <class R, class... A>
  R call(const char* fn, const A&... args) {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const g::KubeWriter*>(this), fn);
    if (!f) throw std::runtime_error(std::string("KubeWriter.") + fn + " is not implemented");
    try {
      if constexpr (std::is_void_v<R>) {
        f(args...);
      } else {
        return f(args...).template cast<R>();
      }
    } catch (py::error_already_set& e) {
      throw std::runtime_error(std::string(fn) + ": " + e.what());
    } catch (const py::cast_error& e) {
      throw std::runtime_error(std::string(fn) + " returned the wrong type: " + e.what());
    }
  }
};

}  // namespace

void bind_gpu(py::module_& parent) {
  py::module_ m = parent.def_submodule(
      "sched", "GPU-sharing allocator: gpushare best-fit, spread, FGD (Weng et al. ATC'23), kubetune policy, MIG, "
               "NVLink topology, gangs, scheduler-extender JSON and Alibaba-trace replay");

  py::class_<g::Request>(m, "Request", "A pod's resource request (see kubetune/sched/gpu/request.hpp)")
      .def(py::init([](std::string name, std::int64_t cpu_milli, std::int64_t memory_mib, int gpu_count, int gpu_milli,
                       std::int64_t gpu_memory_mib, int compute_milli, std::vector<std::string> models,
                       std::string mig_profile, std::string gang) {
             g::Request r{.name = std::move(name), .cpu_milli = cpu_milli, .memory_mib = memory_mib,
                          .gpu_count = gpu_count, .gpu_milli = gpu_milli, .gpu_memory_mib = gpu_memory_mib,
                          .compute_milli = compute_milli, .models = std::move(models),
                          .mig_profile = std::move(mig_profile), .gang = std::move(gang)};
             r.validate_and_normalise();
             return r;
           }),
           py::kw_only(), py::arg("name") = "", py::arg("cpu_milli") = 0, py::arg("memory_mib") = 0,
           py::arg("gpu_count") = 0, py::arg("gpu_milli") = 0, py::arg("gpu_memory_mib") = 0,
           py::arg("compute_milli") = 0, py::arg("models") = std::vector<std::string>{}, py::arg("mig_profile") = "",
           py::arg("gang") = "")
      .def_static("from_json", &g::request_from_json, py::arg("json"))
      KT_RW(g::Request, name) KT_RW(g::Request, cpu_milli) KT_RW(g::Request, memory_mib) KT_RW(g::Request, gpu_count)
      KT_RW(g::Request, gpu_milli) KT_RW(g::Request, gpu_memory_mib) KT_RW(g::Request, compute_milli)
      KT_RW(g::Request, models) KT_RW(g::Request, mig_profile) KT_RW(g::Request, gang)
      .def_property_readonly("total_gpu_milli", &g::Request::total_gpu_milli)
      .def("__repr__", [](const g::Request& r) {
        return "Request(name='" + r.name + "', cpu_milli=" + std::to_string(r.cpu_milli) +
               ", gpu_count=" + std::to_string(r.gpu_count) + ", gpu_milli=" + std::to_string(r.gpu_milli) +
               ", gpu_memory_mib=" + std::to_string(r.gpu_memory_mib) + ", mig_profile='" + r.mig_profile + "')";
      });

  py::class_<g::Cluster>(m, "Cluster", "Nodes with CPU, memory and GPUs (model, memory, MIG, NVLink topology)")
      .def(py::init<>())
      .def_static("from_json", &g::Cluster::from_json, py::arg("json"))
      .def("to_json", &g::Cluster::to_json)
      .def(
          "add_node",
          [](g::Cluster& c, std::string name, std::int64_t cpu_milli, std::int64_t memory_mib, int gpus,
             std::int64_t gpu_memory_mib, std::string model, bool mig, int nvlink_islands,
             std::int64_t gpu_memory_total_mib, std::int64_t gpu_memory_unit_mib) {
            g::NodeSpec s{.name = std::move(name), .cpu_milli = cpu_milli, .memory_mib = memory_mib,
                          .num_gpus = gpus, .gpu_memory_mib = gpu_memory_mib,
                          .gpu_memory_total_mib = gpu_memory_total_mib, .gpu_memory_unit_mib = gpu_memory_unit_mib,
                          .model = std::move(model), .mig = mig,
                          .topology = nvlink_islands > 0 ? std::make_shared<g::Topology>(
                                                               g::Topology::nvlink_islands(gpus, nvlink_islands))
                                                         : nullptr};
            return c.add_node(std::move(s));
          },
          py::arg("name"), py::kw_only(), py::arg("cpu_milli"), py::arg("memory_mib") = 0, py::arg("gpus") = 0,
          py::arg("gpu_memory_mib") = 0, py::arg("model") = "", py::arg("mig") = false, py::arg("nvlink_islands") = 0,
          py::arg("gpu_memory_total_mib") = 0, py::arg("gpu_memory_unit_mib") = 1,
          "Adds a node; gpu_memory_total_mib (gpushare's node total) gives the per-GPU memory when gpu_memory_mib is "
          "0: floor(total / unit / gpus) * unit")
      .def(
          "add_kube_node",
          [](g::Cluster& c, const py::object& node, std::int64_t unit) {
            return c.add_node(g::node_spec_from_kube_node(json_text(node), unit));
          },
          py::arg("node"), py::arg("gpu_mem_unit_mib") = 1024,
          "Adds a node from a v1.Node (dict or JSON): GPU count from aliyun.com/gpu-count, per-GPU memory from the "
          "nvidia.com/gpu.memory label or else the aliyun.com/gpu-mem total / count (gpushare)")
      .def("node", [](const g::Cluster& c, int i) { return node_dict(c.node(i)); }, py::arg("index"))
      .def_property_readonly("num_nodes", &g::Cluster::num_nodes)
      .def_property_readonly("total_gpus", &g::Cluster::total_gpus)
      .def_property_readonly("models", &g::Cluster::models)
      .def("node_names",
           [](const g::Cluster& c) {
             std::vector<std::string> v;
             for (const auto& n : c.nodes()) v.push_back(n.name);
             return v;
           })
      .def("find_node", &g::Cluster::find_node, py::arg("name"))
      .def("__len__", &g::Cluster::num_nodes);

  py::class_<g::Snapshot>(m, "Snapshot", "Opaque copy of an allocator's state (for restore)");

  py::class_<g::Allocator, std::shared_ptr<g::Allocator>>(
      m, "Allocator", "Thread-safe GPU allocator; policy in {best_fit, gpushare, spread, fgd, kubetune}")
      .def(py::init([](const g::Cluster& c, const std::string& policy, std::optional<std::vector<g::Request>> workload,
                       double popularity, bool gpu_weighted_typical, bool kube_semantics, bool indexed,
                       std::uint64_t seed) {
             const g::AllocatorConfig cfg{.policy = policy,
                                          .workload = std::move(workload).value_or(std::vector<g::Request>{}),
                                          .popularity = popularity, .gpu_weighted_typical = gpu_weighted_typical,
                                          .kube_semantics = kube_semantics, .indexed = indexed, .seed = seed};
             return g::make_allocator(c, cfg);
           }),
           py::arg("cluster"), py::arg("policy") = "best_fit", py::kw_only(), py::arg("workload") = py::none(),
           py::arg("popularity") = 0.95, py::arg("gpu_weighted_typical") = true, py::arg("kube_semantics") = false,
           py::arg("indexed") = true, py::arg("seed") = 0)
      .def_property_readonly("policy", &g::Allocator::policy_name)
      .def_property_readonly("cluster", &g::Allocator::cluster, py::return_value_policy::reference_internal)
      .def(
          "place",
          [](g::Allocator& a, const g::Request& r) -> py::object {
            std::optional<g::Placement> p;
            {
              py::gil_scoped_release rel;
              p = a.place(r);
            }
            if (!p) return py::none();
            return placement_dict(*p);
          },
          py::arg("request"), "Place one request; a placement dict, or None when nothing fits")
      .def(
          "place_on",
          [](g::Allocator& a, const g::Request& r, int node) -> py::object {
            auto p = a.place_on(r, node);
            if (!p) return py::none();
            return placement_dict(*p);
          },
          py::arg("request"), py::arg("node"))
      .def(
          "place_gang",
          [](g::Allocator& a, const std::vector<g::Request>& members, const std::string& pref) -> py::object {
            std::optional<std::vector<g::Placement>> ps;
            const auto gp = g::parse_gang_preference(pref);
            {
              py::gil_scoped_release rel;
              ps = a.place_gang(members, gp);
            }
            if (!ps) return py::none();
            return placement_list(*ps);
          },
          py::arg("members"), py::arg("preference") = "pack", "All-or-nothing gang placement (None when it fails)")
      .def("release", &g::Allocator::release, py::arg("id"))
      .def(
          "set_gpu_health",
          [](g::Allocator& a, const py::object& node, int gpu, bool healthy) {
            return placement_list(a.set_gpu_health(node_index(a, node), gpu, healthy));
          },
          py::arg("node"), py::arg("gpu"), py::arg("healthy"),
          "Marks a GPU (node index or name) healthy or unhealthy; returns the placements using it (to evict). An "
          "unhealthy GPU takes no new placement and leaves the capacity measures; its placements stay releasable")
      .def(
          "gpu_healthy",
          [](const g::Allocator& a, const py::object& node, int gpu) { return a.gpu_healthy(node_index(a, node), gpu); },
          py::arg("node"), py::arg("gpu"))
      .def("unhealthy_gpus", &g::Allocator::unhealthy_gpus, "[(node index, gpu index), ...]")
      .def(
          "placements_on_unhealthy",
          [](const g::Allocator& a) { return placement_list(a.placements_on_unhealthy()); },
          "Placements using at least one unhealthy GPU")
      .def("release_by_name", &g::Allocator::release_by_name, py::arg("name"))
      .def(
          "placement_by_name",
          [](const g::Allocator& a, const std::string& name) -> py::object {
            auto p = a.placement_by_name(name);
            return p ? py::object(placement_dict(*p)) : py::object(py::none());
          },
          py::arg("name"), "The placement dict of pod `name` (\"namespace/name\" for extender pods), or None")
      .def("snapshot", &g::Allocator::snapshot)
      .def("restore", &g::Allocator::restore, py::arg("snapshot"))
      .def("check_invariants", &g::Allocator::check_invariants, py::call_guard<py::gil_scoped_release>())
      .def("feasible_nodes",
           [](const g::Allocator& a, const g::Request& r) {
             std::vector<int> all(static_cast<std::size_t>(a.cluster().num_nodes()));
             for (int i = 0; i < a.cluster().num_nodes(); ++i) all[static_cast<std::size_t>(i)] = i;
             return a.feasible_nodes(r, all);
           },
           py::arg("request"))
      .def("score", &g::Allocator::score, py::arg("request"), py::arg("node"))
      .def(
          "node_state",
          [](const g::Allocator& a, int node) {
            g::NodeState st = a.node_state(node);
            return py::dict("cpu_free"_a = st.cpu_free, "memory_free"_a = st.memory_free,
                            "gpus"_a = list_of(st.gpus, [](const auto& gs) {
                              return py::dict("milli_free"_a = gs.milli_free, "memory_free"_a = gs.memory_free,
                                              "mig_used_mask"_a = static_cast<int>(gs.mig.used_mask),
                                              "healthy"_a = gs.healthy);
                            }));
          },
          py::arg("node"))
      .def(
          "stats",
          [](const g::Allocator& a, std::optional<std::vector<g::Request>> workload) {
            g::AllocatorStats s =
                a.stats(workload ? g::typical_pods_for(a.cluster(), "fgd", *workload) : std::vector<g::TypicalPod>{});
            return py::dict("gpu_milli_capacity"_a = s.gpu_milli_capacity,
                            "gpu_milli_allocated"_a = s.gpu_milli_allocated,
                            "cpu_milli_allocated"_a = s.cpu_milli_allocated, "placements"_a = s.placements,
                            "fully_free_gpus"_a = s.fully_free_gpus, "unhealthy_gpus"_a = s.unhealthy_gpus,
                            "placements_on_unhealthy"_a = s.placements_on_unhealthy,
                            "fragmentation_milli"_a = s.fragmentation_milli,
                            "fragmentation_ratio"_a = s.fragmentation_ratio);
          },
          py::arg("workload") = py::none());

  py::class_<g::KubeWriter, PyKubeWriter, std::shared_ptr<g::KubeWriter>>(
      m, "KubeWriter",
      "The Kubernetes API calls an Extender's bind makes; subclass it (kubetune.sched.kube.KubeWriter does, over the "
      "kubernetes client). Called from server threads with the GIL taken; raise to fail (the bind rolls back).")
      .def(py::init<>())
      .def("get_pod", &g::KubeWriter::get_pod, py::arg("namespace"), py::arg("name"))
      .def("patch_pod_annotations", &g::KubeWriter::patch_pod_annotations, py::arg("namespace"), py::arg("name"),
           py::arg("uid"), py::arg("annotations"))
      .def("create_binding", &g::KubeWriter::create_binding, py::arg("namespace"), py::arg("name"), py::arg("uid"),
           py::arg("node"));

  py::class_<g::Extender, std::shared_ptr<g::Extender>>(
      m, "Extender", "kube-scheduler's extender v1 verbs over an Allocator, with state kept from the Kubernetes API")
      .def(py::init([](std::shared_ptr<g::Allocator> a, const std::string& policy, std::int64_t unit, double ttl,
                       std::size_t max_pending, double grace, std::size_t max_body, std::uint64_t seed) {
             const g::ExtenderConfig cfg{.gpu_mem_unit_mib = unit, .pending_ttl_s = ttl, .max_pending = max_pending,
                                         .assume_grace_s = grace, .max_body_bytes = max_body};
             if (a) return std::make_shared<g::Extender>(std::move(a), cfg);
             g::AllocatorConfig ac;
             ac.policy = policy;
             ac.seed = seed;
             return std::make_shared<g::Extender>(g::make_policy(g::Cluster{}, ac), cfg, ac.options());
           }),
           py::arg("allocator") = nullptr, py::arg("policy") = "best_fit", py::arg("gpu_mem_unit_mib") = 1024,
           py::arg("pending_ttl_s") = 300.0, py::arg("max_pending") = 100000, py::arg("assume_grace_s") = 60.0,
           py::arg("max_body_bytes") = std::size_t{64} << 20, py::arg("seed") = 0,
           "Over `allocator` (a fixed cluster), or empty (policy by name) until sync() fills it from the API server.")
      .def("filter", &g::Extender::filter, py::arg("extender_args_json"), py::call_guard<py::gil_scoped_release>())
      .def("prioritize", &g::Extender::prioritize, py::arg("extender_args_json"),
           py::call_guard<py::gil_scoped_release>())
      .def("bind", &g::Extender::bind, py::arg("binding_args_json"), py::call_guard<py::gil_scoped_release>())
      .def("preempt", &g::Extender::preempt, py::arg("preemption_args_json"), py::call_guard<py::gil_scoped_release>())
      .def("release", &g::Extender::release, py::arg("pod_ref_json"), py::call_guard<py::gil_scoped_release>())
      .def(
          "handle",
          [](g::Extender& e, const std::string& verb, const std::string& body) {
            g::ExtenderReply r = e.handle(verb, body);
            return std::make_pair(r.status, std::move(r.body));
          },
          py::arg("verb"), py::arg("body"), py::call_guard<py::gil_scoped_release>(), "-> (HTTP status, body)")
      .def("sync", &g::Extender::sync, py::arg("node_list_json"), py::arg("pod_list_json"),
           py::call_guard<py::gil_scoped_release>())
      .def("node_event", &g::Extender::node_event, py::arg("type"), py::arg("node_json"),
           py::call_guard<py::gil_scoped_release>())
      .def("pod_event", &g::Extender::pod_event, py::arg("type"), py::arg("pod_json"),
           py::call_guard<py::gil_scoped_release>())
      .def("set_writer", &g::Extender::set_writer, py::arg("writer"), py::keep_alive<1, 2>())
      .def("allocator", &g::Extender::allocator)
      .def_property_readonly("ready", &g::Extender::ready)
      .def("metrics_text", &g::Extender::metrics_text)
      .def("status", [](const g::Extender& e) {
        const g::ExtenderStatus s = e.status();
        py::dict counters;
        s.counters.each([&](const char* k, std::int64_t v) { counters[k] = v; });
        return py::dict("ready"_a = s.ready, "nodes"_a = s.nodes, "gpus"_a = s.gpus, "placements"_a = s.placements,
                        "pending"_a = s.pending, "binding"_a = s.binding,
                        "gpu_milli_capacity"_a = s.alloc.gpu_milli_capacity,
                        "gpu_milli_allocated"_a = s.alloc.gpu_milli_allocated,
                        "unhealthy_gpus"_a = s.alloc.unhealthy_gpus, "counters"_a = counters);
      });

  m.def("load_trace_cluster", &g::load_trace_cluster, py::arg("csv_path"), py::arg("gpu_nodes_only") = true);
  m.def("load_trace_pods", &g::load_trace_pods, py::arg("csv_path"));
  m.def(
      "synthetic_trace",
      [](int nodes, int pods, std::uint64_t seed) {
        g::SyntheticTrace t = g::synthetic_trace(nodes, pods, seed);
        return py::make_tuple(t.cluster, t.pods);
      },
      py::arg("num_nodes"), py::arg("num_pods"), py::arg("seed") = 0,
      "Seeded (Cluster, [Request]) with the Alibaba trace's shapes");
  m.def(
      "replay",
      [](const g::Cluster& c, const std::vector<g::Request>& pods, const std::string& policy, std::uint64_t seed,
         double inflation, bool kube_semantics, bool gpu_weighted_typical, double step_pct) {
        const g::ReplayOptions o{.policy = policy, .inflation = inflation, .seed = seed,
                                 .kube_semantics = kube_semantics, .gpu_weighted_typical = gpu_weighted_typical,
                                 .step_pct = step_pct};
        g::ReplayResult r;
        {
          py::gil_scoped_release rel;
          r = g::replay(c, pods, o);
        }
        return py::dict("policy"_a = r.policy, "seed"_a = r.seed, "pods_arrived"_a = r.pods_arrived,
                        "pods_failed"_a = r.pods_failed, "seconds"_a = r.seconds, "at_100"_a = point_dict(r.at_100),
                        "curve"_a = list_of(r.curve, point_dict));
      },
      py::arg("cluster"), py::arg("pods"), py::arg("policy") = "fgd", py::kw_only(), py::arg("seed") = 42,
      py::arg("inflation") = 1.3, py::arg("kube_semantics") = true, py::arg("gpu_weighted_typical") = true,
      py::arg("step_pct") = 1.0,
      "FGD-paper replay: sample with replacement to inflation x GPU capacity, shuffle, place one by one");
  m.def(
      "mig_feasible_starts",
      [](const std::string& profile, const std::vector<std::pair<std::string, int>>& placed, const std::string& model) {
        auto look = [&](const std::string& name) -> const g::MigProfile& {
          return model.empty() ? g::mig_profile(name) : g::mig_profile(model, name);
        };
        g::MigState s;
        for (const auto& [p, start] : placed) s.place(look(p), start);
        return s.feasible_starts(look(profile));
      },
      py::arg("profile"), py::arg("placed") = std::vector<std::pair<std::string, int>>{}, py::arg("model") = "",
      "Start slots where `profile` fits on a MIG GPU already holding `placed` [(profile, start), ...]; `model` (e.g. "
      "'A100-40GB', 'H100') resolves model-dependent names such as 1g.10gb");
  m.def(
      "mig_profile",
      [](const std::string& name, const std::string& model) {
        return profile_dict(model.empty() ? g::mig_profile(name) : g::mig_profile(model, name));
      },
      py::arg("name"), py::arg("model") = "",
      "A MIG profile (compute/memory slices, memory_gb, max_instances, starts); ValueError naming profile and model "
      "when that model lacks it");
  m.def(
      "mig_models",
      [] {
        return list_of(g::mig_models(), [](const g::MigModel& mm) {
          return py::dict("name"_a = mm.name, "aliases"_a = mm.aliases,
                          "profiles"_a = list_of(mm.profiles, profile_dict));
        });
      },
      "The GPU model -> MIG profile table (NVIDIA MIG user guide)");
  m.def("gpushare_allocate_json", &g::gpushare_allocate_json, py::arg("request_json"),
        "gpushare device plugin's Allocate decision, JSON in and out (see kubetune.sched.device_plugin_allocate)");
  m.def("policy_names", &g::policy_names);
  m.attr("GPU_MEM_RESOURCE") = g::kGpuMemResource;
}

}  // namespace kubetune::python
