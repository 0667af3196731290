// Python bindings of the autoscale module (submodule kubetune._kubetune.autoscale): KPA, HPA, queueing, simulator.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "bindings.hpp"
#include "dict_conv.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "kubetune/sched/autoscale/queueing.hpp"
#include "kubetune/sched/autoscale/simulate.hpp"
#include "kubetune/sched/autoscale/throttler.hpp"
#include "kubetune/sched/autoscale/units.hpp"
#include "kubetune/sched/autoscale/window.hpp"

namespace kubetune::python {
namespace {

namespace as = kubetune::sched::autoscale;

// The old name of a field renamed to the unit rule (units.hpp), or nullptr.
const as::RenamedField* renamed(const char* type, const std::string& old_name) {
  for (const as::RenamedField& f : as::renamed_fields())
    if (f.type == std::string_view(type) && old_name == f.old_name) return &f;
  return nullptr;
}

void warn_deprecated(const std::string& msg) {
  if (PyErr_WarnEx(PyExc_DeprecationWarning, msg.c_str(), 1) != 0) throw py::error_already_set();
}

void warn_renamed(const as::RenamedField& f) {
  warn_deprecated(std::string(f.type) + "." + f.old_name + " is deprecated (removed in the next release); use " +
                  f.new_name);
}

// A method keyword renamed to the naming rule (threads -> n_threads): the old one still works, with a warning.
// Giving both is a TypeError naming both (the package's rule for renamed keywords).
int renamed_int_keyword(const char* fn, std::optional<int> value, std::optional<int> old_value, const char* new_name,
                        const char* old_name, int fallback) {
  if (!old_value) return value.value_or(fallback);
  if (value)
    throw py::type_error(std::string(fn) + "() got both " + new_name + "= and its deprecated alias " + old_name +
                         "=");
  warn_deprecated(std::string(fn) + "(" + old_name + "=...) is deprecated (removed in the next release); use " +
                  new_name + "=");
  return *old_value;
}

// Keyword arguments with each deprecated name moved to its new one (warned); a field given twice is a ValueError.
py::dict upgrade_kwargs(const py::kwargs& kw, const char* type) {
  py::dict out;
  for (auto item : kw) {
    const std::string k = item.first.cast<std::string>();
    const as::RenamedField* f = renamed(type, k);
    if (f) {
      warn_renamed(*f);
      KT_CHECK(!kw.contains(f->new_name), InvalidArgument, type, ": '", k, "' (deprecated) and '", f->new_name,
               "' are the same field; give one");
    }
    out[f ? f->new_name : k.c_str()] = item.second;
  }
  return out;
}

// Sets attributes of a freshly built config from keyword arguments (unknown names are a ValueError).
template <class T>
T from_kwargs(const py::kwargs& kw, const char* type_name) {
  T obj{};
  py::object o = py::cast(&obj, py::return_value_policy::reference);
  for (auto item : upgrade_kwargs(kw, type_name)) {
    const std::string k = item.first.cast<std::string>();
    KT_CHECK(py::hasattr(o, k.c_str()), InvalidArgument, type_name, ": unknown field '", k, "'");
    o.attr(k.c_str()) = item.second;
  }
  return obj;
}

// A second overload of module function `name` for its deprecated keywords: it warns, renames them and calls the
// function again. Without a deprecated keyword the call matched no overload at all: a TypeError.
void def_deprecated_keywords(py::module_& m, const char* name) {
  m.def(name, [m, name](const py::args& args, const py::kwargs& kw) -> py::object {
    bool any = false;
    for (auto item : kw) any = any || renamed(name, item.first.cast<std::string>()) != nullptr;
    if (!any) throw py::type_error(std::string(name) + "(): incompatible arguments; see help(" + name + ")");
    return m.attr(name)(*args, **upgrade_kwargs(kw, name));
  });
}

// Each deprecated field name becomes a property of its class that warns and forwards to the new name; each
// renamed function keyword gets the overload above.
void add_deprecated_aliases(py::module_& m) {
  const py::object property = py::module_::import("builtins").attr("property");
  std::vector<std::string> functions;
  for (const as::RenamedField& f : as::renamed_fields()) {
    if (!PyType_Check(m.attr(f.type).ptr())) {
      if (std::find(functions.begin(), functions.end(), f.type) == functions.end()) {
        functions.emplace_back(f.type);
        def_deprecated_keywords(m, f.type);
      }
      continue;
    }
    const std::string new_name = f.new_name;
    const std::string doc = "Deprecated alias of " + new_name + " (removed in the next release)";
    py::cpp_function get(
        [f, new_name](py::object self) -> py::object {
          warn_renamed(f);
          return self.attr(new_name.c_str());
        },
        py::doc(doc.c_str()));
    py::cpp_function set([f, new_name](py::object self, py::object value) {
      warn_renamed(f);
      self.attr(new_name.c_str()) = value;
    });
    m.attr(f.type).attr(f.old_name) = property(get, set);
  }
}

using Rates = py::array_t<double, py::array::c_style | py::array::forcecast>;

as::Trace trace_from_array(const Rates& rate, double dt_s) {
  KT_CHECK(dt_s > 0, InvalidArgument, "dt_s = ", dt_s, " must be > 0");
  as::Trace t;
  t.dt_s = dt_s;
  t.rate.assign(rate.data(), rate.data() + rate.size());
  for (std::size_t i = 0; i < t.rate.size(); ++i)
    KT_CHECK(std::isfinite(t.rate[i]) && t.rate[i] >= 0, InvalidArgument, "rate[", i, "] = ", t.rate[i],
             " must be finite and >= 0");
  return t;
}

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// State snapshots cross as the C++ JSON form: a dict (a list for a fleet) out; a dict, list or JSON string in.
py::object from_json_text(const std::string& text) { return py::module_::import("json").attr("loads")(text); }
std::string to_json_text(const py::object& state) {
  if (py::isinstance<py::str>(state)) return state.cast<std::string>();
  return py::module_::import("json").attr("dumps")(state).cast<std::string>();
}

// snapshot() / restore(state) of a class whose C++ type has snapshot(), restore(State) and State::from_json.
template <class T, class... Extra>
void def_state(py::class_<T, Extra...>& cls) {
  cls.def(
         "snapshot", [](const T& x) { return from_json_text(x.snapshot().to_json()).template cast<py::dict>(); },
         "The state as a JSON-ready dict, to persist across restarts (docs/autoscale.md)")
      .def(
          "restore", [](T& x, const py::object& state) { x.restore(T::State::from_json(to_json_text(state))); },
          py::arg("state"), "Replaces the state with a snapshot() (dict or JSON string); all or nothing");
}

// snapshot() / restore(state) of a fleet whose C++ type has snapshot_json() and restore_json(): a list with one
// state per member (`member` names one in the docstrings).
template <class T>
void def_fleet_state(py::class_<T>& cls, const std::string& member) {
  cls.def(
         "snapshot", [](const T& f) { return from_json_text(f.snapshot_json()).template cast<py::list>(); },
         ("The " + member + "s' states, one dict each in fleet order, to persist across restarts").c_str())
      .def(
          "restore", [](T& f, const py::object& state) { f.restore_json(to_json_text(state)); }, py::arg("state"),
          ("Replaces every " + member + "'s state with snapshot()'s list (or its JSON); all or nothing").c_str());
}

std::vector<std::optional<std::int32_t>> proposals_from(const py::sequence& seq) {
  std::vector<std::optional<std::int32_t>> p;
  for (auto h : seq) {
    if (h.is_none()) p.emplace_back(std::nullopt);
    else if (py::isinstance<as::ReplicaResult>(h)) {
      const auto& r = h.cast<const as::ReplicaResult&>();
      p.emplace_back(r.valid ? std::optional<std::int32_t>(r.replicas) : std::nullopt);
    } else {
      p.emplace_back(h.cast<std::int32_t>());
    }
  }
  return p;
}

}  // namespace

void bind_autoscale(py::module_& parent) {
  py::module_ m = parent.def_submodule(
      "autoscale", "Knative KPA and Kubernetes HPA maths, queueing (Erlang C) sizing and a trace simulator");

  // ----------------------------------------------------------------------------------------------- enums
  py::enum_<as::ScalingMetric>(m, "ScalingMetric")
      .value("concurrency", as::ScalingMetric::kConcurrency)
      .value("rps", as::ScalingMetric::kRps);
  py::enum_<as::Aggregation>(m, "Aggregation")
      .value("linear", as::Aggregation::kLinear)
      .value("weighted_exponential", as::Aggregation::kWeightedExponential);
  py::enum_<as::PaState>(m, "PaState")
      .value("activating", as::PaState::kActivating)
      .value("active", as::PaState::kActive)
      .value("inactive", as::PaState::kInactive);
  py::enum_<as::PodPhase>(m, "PodPhase")
      .value("pending", as::PodPhase::kPending)
      .value("running", as::PodPhase::kRunning)
      .value("succeeded", as::PodPhase::kSucceeded)
      .value("failed", as::PodPhase::kFailed);
  py::enum_<as::ReadyCondition>(m, "ReadyCondition")
      .value("none", as::ReadyCondition::kNone)
      .value("true", as::ReadyCondition::kTrue)
      .value("false", as::ReadyCondition::kFalse);
  py::enum_<as::PolicyType>(m, "PolicyType").value("pods", as::PolicyType::kPods).value("percent", as::PolicyType::kPercent);
  py::enum_<as::SelectPolicy>(m, "SelectPolicy")
      .value("max", as::SelectPolicy::kMax)
      .value("min", as::SelectPolicy::kMin)
      .value("disabled", as::SelectPolicy::kDisabled);
  py::enum_<as::SimPolicy>(m, "SimPolicy")
      .value("kpa", as::SimPolicy::kKpa)
      .value("hpa", as::SimPolicy::kHpa)
      .value("slo", as::SimPolicy::kSlo);

  // --------------------------------------------------------------------------------------------- windows
  py::class_<as::BucketWindow>(m, "BucketWindow", "Knative TimedFloat64Buckets: linear window average")
      .def(py::init<double, double>(), py::arg("window_s"), py::arg("granularity_s") = 1.0)
      .def("record", &as::BucketWindow::record, py::arg("now"), py::arg("value"))
      .def("window_average", &as::BucketWindow::window_average, py::arg("now"))
      .def("is_empty", &as::BucketWindow::is_empty, py::arg("now"))
      .def("resize", &as::BucketWindow::resize, py::arg("window_s"), py::arg("now"))
      .def_property_readonly("window_s", &as::BucketWindow::window_s)
      .def_property_readonly("num_buckets", &as::BucketWindow::num_buckets);
  py::class_<as::WeightedBucketWindow, as::BucketWindow>(m, "WeightedBucketWindow",
                                                         "Knative WeightedFloat64Buckets: exponentially weighted")
      .def(py::init<double, double>(), py::arg("window_s"), py::arg("granularity_s") = 1.0)
      .def("window_average", &as::WeightedBucketWindow::window_average, py::arg("now"))
      .def_property_readonly("smoothing_coefficient", &as::WeightedBucketWindow::smoothing_coefficient);
  py::class_<as::MaxTimeWindow>(m, "MaxTimeWindow", "Trailing maximum over a time window")
      .def(py::init<double, double>(), py::arg("duration_s"), py::arg("granularity_s"))
      .def("record", &as::MaxTimeWindow::record, py::arg("now"), py::arg("value"))
      .def("current", &as::MaxTimeWindow::current);
  m.def("smoothing_coefficient", &as::smoothing_coefficient, py::arg("num_buckets"));

  // ------------------------------------------------------------------------------------------------- KPA
  py::class_<as::KpaConfig>(m, "KpaConfig", "config-autoscaler settings with Knative Serving's defaults")
      .def(py::init([](const py::kwargs& kw) {
        as::KpaConfig c = from_kwargs<as::KpaConfig>(kw, "KpaConfig");
        c.validate();
        return c;
      }))
      KT_RW(as::KpaConfig, enable_scale_to_zero) KT_RW(as::KpaConfig, container_concurrency_target_fraction)
      KT_RW(as::KpaConfig, container_concurrency_target_default) KT_RW(as::KpaConfig, target_utilization)
      KT_RW(as::KpaConfig, rps_target_default) KT_RW(as::KpaConfig, target_burst_capacity)
      KT_RW(as::KpaConfig, max_scale_up_rate) KT_RW(as::KpaConfig, max_scale_down_rate)
      KT_RW(as::KpaConfig, stable_window_s) KT_RW(as::KpaConfig, panic_window_percent)
      KT_RW(as::KpaConfig, panic_threshold_percent) KT_RW(as::KpaConfig, activator_capacity)
      KT_RW(as::KpaConfig, scale_to_zero_grace_period_s) KT_RW(as::KpaConfig, scale_to_zero_pod_retention_period_s)
      KT_RW(as::KpaConfig, scale_down_delay_s) KT_RW(as::KpaConfig, initial_scale)
      KT_RW(as::KpaConfig, allow_zero_initial_scale) KT_RW(as::KpaConfig, min_scale) KT_RW(as::KpaConfig, max_scale)
      KT_RW(as::KpaConfig, max_scale_limit) KT_RW(as::KpaConfig, activation_timeout_s)
      .def("validate", &as::KpaConfig::validate)
      .def("to_json", &as::KpaConfig::to_json)
      .def_static("from_json", &as::KpaConfig::from_json, py::arg("json"))
      .def_static("from_configmap", &as::KpaConfig::from_configmap, py::arg("data"))
      .def("__repr__", [](const as::KpaConfig& c) { return "KpaConfig(" + c.to_json() + ")"; });
  py::class_<as::KpaRevision>(m, "KpaRevision", "Per-revision settings (spec + annotations); None = config default")
      .def(py::init([](const py::kwargs& kw) {
        as::KpaRevision r = from_kwargs<as::KpaRevision>(kw, "KpaRevision");
        r.validate();
        return r;
      }))
      KT_RW(as::KpaRevision, metric) KT_RW(as::KpaRevision, aggregation) KT_RW(as::KpaRevision, container_concurrency)
      KT_RW(as::KpaRevision, target) KT_RW(as::KpaRevision, target_utilization_percent)
      KT_RW(as::KpaRevision, target_burst_capacity) KT_RW(as::KpaRevision, window_s)
      KT_RW(as::KpaRevision, panic_window_percent) KT_RW(as::KpaRevision, panic_threshold_percent)
      KT_RW(as::KpaRevision, scale_down_delay_s) KT_RW(as::KpaRevision, scale_to_zero_pod_retention_period_s)
      KT_RW(as::KpaRevision, initial_scale) KT_RW(as::KpaRevision, min_scale) KT_RW(as::KpaRevision, max_scale)
      KT_RW(as::KpaRevision, activation_scale) KT_RW(as::KpaRevision, reachable)
      KT_RW(as::KpaRevision, progress_deadline_s)
      .def("validate", &as::KpaRevision::validate)
      .def("to_json", &as::KpaRevision::to_json)
      .def_static("from_json", &as::KpaRevision::from_json, py::arg("json"))
      .def("__repr__", [](const as::KpaRevision& r) { return "KpaRevision(" + r.to_json() + ")"; });
  py::class_<as::DeciderSpec>(m, "DeciderSpec", "What the KPA decider needs, resolved from config + revision")
      .def(py::init([](const py::kwargs& kw) { return from_kwargs<as::DeciderSpec>(kw, "DeciderSpec"); }))
      KT_RW(as::DeciderSpec, max_scale_up_rate) KT_RW(as::DeciderSpec, max_scale_down_rate)
      KT_RW(as::DeciderSpec, metric) KT_RW(as::DeciderSpec, target_value) KT_RW(as::DeciderSpec, total_value)
      KT_RW(as::DeciderSpec, target_burst_capacity) KT_RW(as::DeciderSpec, panic_threshold)
      KT_RW(as::DeciderSpec, stable_window_s) KT_RW(as::DeciderSpec, panic_window_s)
      KT_RW(as::DeciderSpec, scale_down_delay_s) KT_RW(as::DeciderSpec, initial_scale) KT_RW(as::DeciderSpec, reachable)
      KT_RW(as::DeciderSpec, activator_capacity) KT_RW(as::DeciderSpec, activation_scale)
      .def("validate", &as::DeciderSpec::validate);
  m.def("make_decider_spec", &as::make_decider_spec, py::arg("config") = as::KpaConfig{},
        py::arg("revision") = as::KpaRevision{});
  m.def(
      "resolve_metric_target",
      [](const as::KpaConfig& c, const as::KpaRevision& r) {
        const auto t = as::resolve_metric_target(c, r);
        return py::make_tuple(t.target, t.total);
      },
      py::arg("config"), py::arg("revision"), "(target per pod, total per pod)");
  m.def("resolve_initial_scale", &as::resolve_initial_scale, py::arg("config"), py::arg("revision"));
  m.def("compute_num_activators", &as::compute_num_activators, py::arg("ready_pods"), py::arg("spec"));
  m.attr("MIN_ACTIVATORS") = as::kMinActivators;

  py::class_<as::ThrottlerInput>(m, "ThrottlerInput", "What one activator knows when it sizes its throttler")
      .def(py::init([](const py::kwargs& kw) { return from_kwargs<as::ThrottlerInput>(kw, "ThrottlerInput"); }))
      KT_RW(as::ThrottlerInput, backends) KT_RW(as::ThrottlerInput, pod_trackers)
      KT_RW(as::ThrottlerInput, container_concurrency) KT_RW(as::ThrottlerInput, activator_count)
      KT_RW(as::ThrottlerInput, activator_index) KT_RW(as::ThrottlerInput, via_cluster_ip);
  py::class_<as::ThrottlerShare>(m, "ThrottlerShare", "One activator's breaker capacity and owned pod trackers")
      KT_RO(as::ThrottlerShare, capacity) KT_RO(as::ThrottlerShare, infinite_breaker)
      KT_RO(as::ThrottlerShare, breaker_capacity) KT_RO(as::ThrottlerShare, tracker_capacity)
      KT_RO(as::ThrottlerShare, slice_begin) KT_RO(as::ThrottlerShare, slice_end) KT_RO(as::ThrottlerShare, remnant)
      .def_property_readonly("assigned", &as::ThrottlerShare::assigned)
      .def_property_readonly("tracker_indices", &as::ThrottlerShare::tracker_indices);
  m.def("throttler_share", &as::throttler_share, py::arg("input"));
  m.def(
      "pick_tracker_indices",
      [](std::int64_t trackers, std::int64_t self_index, std::int64_t activators) {
        const as::TrackerSlice t = as::pick_tracker_indices(trackers, self_index, activators);
        return py::make_tuple(t.begin, t.end, t.remnants);
      },
      py::arg("trackers"), py::arg("self_index"), py::arg("activators"), "(begin, end, remnants)");
  m.attr("REVISION_MAX_CONCURRENCY") = as::kRevisionMaxConcurrency;
  m.attr("TICK_INTERVAL_S") = as::kTickIntervalSeconds;

  py::class_<as::ScaleResult>(m, "ScaleResult")
      .def(py::init<>())
      KT_RW(as::ScaleResult, desired_pod_count) KT_RW(as::ScaleResult, excess_burst_capacity)
      KT_RW(as::ScaleResult, num_activators) KT_RW(as::ScaleResult, scale_valid) KT_RW(as::ScaleResult, panicking)
      .def("__repr__", [](const as::ScaleResult& r) {
        return "ScaleResult(desired_pod_count=" + std::to_string(r.desired_pod_count) +
               ", excess_burst_capacity=" + std::to_string(r.excess_burst_capacity) +
               ", num_activators=" + std::to_string(r.num_activators) + ", scale_valid=" +
               (r.scale_valid ? "True" : "False") + ", panicking=" + (r.panicking ? "True" : "False") + ")";
      });
  py::class_<as::KpaDecider> decider(m, "KpaDecider",
                                     "Knative KPA decider (panic mode, rate limits, scale-down delay)");
  decider.def(py::init<const as::DeciderSpec&, std::int32_t, double>(), py::arg("spec"),
           py::arg("ready_pods_at_start") = 0, py::arg("now") = 0.0)
      .def("decide", &as::KpaDecider::decide, py::arg("now"), py::arg("ready_pods"), py::arg("observed_stable"),
           py::arg("observed_panic"))
      .def_static("no_data", &as::KpaDecider::no_data)
      .def("update", &as::KpaDecider::update, py::arg("spec"))
      .def_property_readonly("spec", &as::KpaDecider::spec)
      .def_property_readonly("panicking", &as::KpaDecider::panicking)
      .def_property_readonly("panic_time", &as::KpaDecider::panic_time)
      .def_property_readonly("max_panic_pods", &as::KpaDecider::max_panic_pods);
  def_state(decider);
  py::class_<as::KpaFleet> kpa_fleet(m, "KpaFleet", "Many KPA deciders decided in one batch call (numpy in and out)");
  kpa_fleet
      .def(py::init([](const as::DeciderSpec& spec, std::size_t n, std::optional<py::array_t<std::int32_t>> ready,
                       double now) {
             std::vector<std::int32_t> r;
             if (ready) r.assign(ready->data(), ready->data() + ready->size());
             return std::make_unique<as::KpaFleet>(spec, n, r, now);
           }),
           py::arg("spec"), py::arg("n"), py::arg("ready_pods_at_start") = py::none(), py::arg("now") = 0.0)
      .def("__len__", &as::KpaFleet::size)
      .def(
          "decide",
          [](as::KpaFleet& f, double now, py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> ready,
             py::array_t<double, py::array::c_style | py::array::forcecast> stable,
             py::array_t<double, py::array::c_style | py::array::forcecast> panic, std::optional<int> n_threads_arg,
             std::optional<int> threads) {
            const int n_threads =
                renamed_int_keyword("KpaFleet.decide", n_threads_arg, threads, "n_threads", "threads", 1);
            const std::size_t n = f.size();
            KT_CHECK(static_cast<std::size_t>(ready.size()) == n && static_cast<std::size_t>(stable.size()) == n &&
                         static_cast<std::size_t>(panic.size()) == n,
                     InvalidArgument, "ready_pods, observed_stable and observed_panic must each have ", n,
                     " entries (got ", ready.size(), ", ", stable.size(), ", ", panic.size(), ")");
            const std::vector<as::ScaleResult>* res = nullptr;
            {
              py::gil_scoped_release nogil;
              res = &f.decide(now, ready.data(), stable.data(), panic.data(), n_threads);
            }
            py::array_t<std::int32_t> desired(n), ebc(n), act(n);
            py::array_t<bool> pan(n);
            auto* d = desired.mutable_data();
            auto* e = ebc.mutable_data();
            auto* a = act.mutable_data();
            auto* p = pan.mutable_data();
            for (std::size_t i = 0; i < n; ++i) {
              d[i] = (*res)[i].desired_pod_count;
              e[i] = (*res)[i].excess_burst_capacity;
              a[i] = (*res)[i].num_activators;
              p[i] = (*res)[i].panicking;
            }
            py::dict r;
            r["desired_pod_count"] = desired;
            r["excess_burst_capacity"] = ebc;
            r["num_activators"] = act;
            r["panicking"] = pan;
            return r;
          },
          py::arg("now"), py::arg("ready_pods"), py::arg("observed_stable"), py::arg("observed_panic"),
          py::arg("n_threads") = py::none(), py::kw_only(), py::arg("threads") = py::none(),
          "One decide of every decider; n_threads (default 1) <= 0: all hardware threads (threads=: deprecated "
          "alias)");
  def_fleet_state(kpa_fleet, "decider");

  py::class_<as::Stat>(m, "Stat", "A metric report: concurrency and request count (minus what the activator saw)")
      .def(py::init([](double time, double concurrency, double proxied_concurrency, double request_count,
                       double proxied_request_count) {
             return as::Stat{time, concurrency, proxied_concurrency, request_count, proxied_request_count};
           }),
           py::arg("time") = 0.0, py::arg("concurrency") = 0.0, py::arg("proxied_concurrency") = 0.0,
           py::arg("request_count") = 0.0, py::arg("proxied_request_count") = 0.0)
      KT_RW(as::Stat, time) KT_RW(as::Stat, concurrency) KT_RW(as::Stat, proxied_concurrency)
      KT_RW(as::Stat, request_count) KT_RW(as::Stat, proxied_request_count);
  m.def("scrape_sample_size", &as::scrape_sample_size, py::arg("population"));
  m.def("aggregate_scrape", &as::aggregate_scrape, py::arg("now"), py::arg("sampled"), py::arg("ready_pods"));
  py::class_<as::KpaMetricCollector::Observed>(m, "Observed")
      KT_RO(as::KpaMetricCollector::Observed, stable) KT_RO(as::KpaMetricCollector::Observed, panic)
      KT_RO(as::KpaMetricCollector::Observed, has_data);
  py::class_<as::KpaMetricCollector> collector(m, "KpaMetricCollector", "Stable and panic windows of one revision");
  collector
      .def(py::init<double, double, as::Aggregation>(), py::arg("stable_window_s") = 60.0, py::kw_only(),
           py::arg("panic_window_s") = 6.0, py::arg("aggregation") = as::Aggregation::kLinear)
      .def(py::init([](const py::args& args, const py::kwargs& kw) {
             // The deprecated form (stable_window, panic_window_percentage, aggregation): the panic window as a
             // percentage of the stable window. panic_window_s is keyword-only so that the old positional call
             // lands here instead of being read in seconds.
             double stable = 60.0, pct = 10.0;
             auto agg = as::Aggregation::kLinear;
             KT_CHECK(args.size() <= 3, InvalidArgument, "KpaMetricCollector: at most 3 positional arguments");
             if (args.size() > 0) stable = args[0].cast<double>();
             if (args.size() > 1) pct = args[1].cast<double>();
             if (args.size() > 2) agg = args[2].cast<as::Aggregation>();
             for (auto item : kw) {
               const std::string k = item.first.cast<std::string>();
               if (k == "stable_window") stable = item.second.cast<double>();
               else if (k == "panic_window_percentage") pct = item.second.cast<double>();
               else if (k == "aggregation") agg = item.second.cast<as::Aggregation>();
               else KT_THROW(InvalidArgument, "KpaMetricCollector: unknown keyword '", k, "'");
             }
             warn_deprecated("KpaMetricCollector(stable_window, panic_window_percentage) is deprecated (removed in the "
                             "next release); use KpaMetricCollector(stable_window_s, panic_window_s=seconds)");
             return as::KpaMetricCollector(stable, as::resolve_panic_window(stable, pct), agg);
           }))
      .def("record", &as::KpaMetricCollector::record, py::arg("stat"))
      .def("concurrency", &as::KpaMetricCollector::concurrency, py::arg("now"))
      .def("rps", &as::KpaMetricCollector::rps, py::arg("now"))
      .def_property_readonly("panic_window_s", &as::KpaMetricCollector::panic_window_s);
  def_state(collector);
  py::class_<as::ScalerStep>(m, "ScalerStep")
      KT_RO(as::ScalerStep, want) KT_RO(as::ScalerStep, applied) KT_RO(as::ScalerStep, replicas)
      KT_RO(as::ScalerStep, proxy_mode) KT_RO(as::ScalerStep, state) KT_RO(as::ScalerStep, reason)
      KT_RO(as::ScalerStep, requeue_after_s) KT_RO(as::ScalerStep, probe_activator);
  py::class_<as::KpaScaler> scaler(m, "KpaScaler",
                                   "KPA scaler: bounds, initial scale, scale-to-zero gating, PA state");
  scaler
      .def(py::init<const as::KpaConfig&, const as::KpaRevision&, double, std::int32_t>(), py::arg("config"),
           py::arg("revision"), py::arg("now") = 0.0, py::arg("initial_replicas") = -1)
      .def("reconcile", &as::KpaScaler::reconcile, py::arg("now"), py::arg("decision"), py::arg("ready_pods"),
           py::arg("activator_probe") = std::nullopt)
      .def_property_readonly("state", &as::KpaScaler::state)
      .def_property_readonly("state_reason", &as::KpaScaler::state_reason)
      .def_property_readonly("state_since", &as::KpaScaler::state_since)
      .def_property_readonly("activation_timeout_s", &as::KpaScaler::activation_timeout_s)
      .def_property_readonly("replicas", &as::KpaScaler::replicas)
      .def_property_readonly("proxy_mode", &as::KpaScaler::proxy_mode)
      .def_property_readonly("scale_target_initialized", &as::KpaScaler::scale_target_initialized)
      .def("scale_bounds", &as::KpaScaler::scale_bounds);
  def_state(scaler);
  py::class_<as::KpaAutoscaler> autoscaler(m, "KpaAutoscaler", "Collector + decider + scaler of one revision");
  autoscaler
      .def(py::init<const as::KpaConfig&, const as::KpaRevision&, double, std::int32_t>(),
           py::arg("config") = as::KpaConfig{}, py::arg("revision") = as::KpaRevision{}, py::arg("now") = 0.0,
           py::arg("initial_replicas") = -1)
      .def("record", &as::KpaAutoscaler::record, py::arg("stat"))
      .def("tick", &as::KpaAutoscaler::tick, py::arg("now"), py::arg("ready_pods"))
      .def_property_readonly("last_decision", &as::KpaAutoscaler::last_decision);
  def_state(autoscaler);

  // ------------------------------------------------------------------------------------------------- HPA
  py::class_<as::Tolerances>(m, "Tolerances")
      .def(py::init<double, double>(), py::arg("scale_down") = 0.1, py::arg("scale_up") = 0.1)
      KT_RW(as::Tolerances, scale_down) KT_RW(as::Tolerances, scale_up)
      .def("is_within", &as::Tolerances::is_within, py::arg("usage_ratio"));
  py::class_<as::HpaPod>(m, "HpaPod", "One pod as the HPA replica calculator sees it (milli-units)")
      .def(py::init([](const py::kwargs& kw) { return from_kwargs<as::HpaPod>(kw, "HpaPod"); }))
      KT_RW(as::HpaPod, phase) KT_RW(as::HpaPod, deleting) KT_RW(as::HpaPod, ready)
      KT_RW(as::HpaPod, ready_transition_time) KT_RW(as::HpaPod, start_time) KT_RW(as::HpaPod, has_metric)
      KT_RW(as::HpaPod, metric) KT_RW(as::HpaPod, metric_timestamp) KT_RW(as::HpaPod, metric_window_s)
      KT_RW(as::HpaPod, request);
  py::class_<as::ReplicaCalcConfig>(m, "ReplicaCalcConfig")
      .def(py::init<double, double>(), py::arg("cpu_initialization_period_s") = 300.0,
           py::arg("delay_of_initial_readiness_status_s") = 30.0)
      .def(py::init([](const py::kwargs& kw) { return from_kwargs<as::ReplicaCalcConfig>(kw, "ReplicaCalcConfig"); }))
      KT_RW(as::ReplicaCalcConfig, cpu_initialization_period_s)
      KT_RW(as::ReplicaCalcConfig, delay_of_initial_readiness_status_s);
  py::class_<as::ReplicaResult>(m, "ReplicaResult")
      KT_RO(as::ReplicaResult, replicas) KT_RO(as::ReplicaResult, usage) KT_RO(as::ReplicaResult, raw_average)
      KT_RO(as::ReplicaResult, valid) KT_RO(as::ReplicaResult, error)
      .def("__repr__", [](const as::ReplicaResult& r) {
        return "ReplicaResult(replicas=" + std::to_string(r.replicas) + ", usage=" + std::to_string(r.usage) +
               ", valid=" + (r.valid ? "True" : "False") + (r.valid ? "" : ", error='" + r.error + "'") + ")";
      });
  m.def("resource_utilization_replicas", &as::resource_utilization_replicas, py::arg("now"),
        py::arg("current_replicas"), py::arg("target_utilization_percent"), py::arg("pods"), py::arg("is_cpu") = true,
        py::arg("tolerances") = as::Tolerances{}, py::arg("config") = as::ReplicaCalcConfig{});
  m.def("resource_average_value_replicas", &as::resource_average_value_replicas, py::arg("now"),
        py::arg("current_replicas"), py::arg("target_average"), py::arg("pods"), py::arg("is_cpu") = true,
        py::arg("tolerances") = as::Tolerances{}, py::arg("config") = as::ReplicaCalcConfig{});
  m.def("pods_metric_replicas", &as::pods_metric_replicas, py::arg("now"), py::arg("current_replicas"),
        py::arg("target_average"), py::arg("pods"), py::arg("tolerances") = as::Tolerances{},
        py::arg("config") = as::ReplicaCalcConfig{});
  m.def("object_value_replicas", &as::object_value_replicas, py::arg("current_replicas"), py::arg("usage"),
        py::arg("target"), py::arg("ready_pods"), py::arg("tolerances") = as::Tolerances{});
  m.def("object_average_value_replicas", &as::object_average_value_replicas, py::arg("status_replicas"),
        py::arg("usage"), py::arg("target_average"), py::arg("tolerances") = as::Tolerances{});
  m.def("external_value_replicas", &as::external_value_replicas, py::arg("current_replicas"), py::arg("values"),
        py::arg("target"), py::arg("ready_pods"), py::arg("tolerances") = as::Tolerances{});
  m.def("external_average_value_replicas", &as::external_average_value_replicas, py::arg("status_replicas"),
        py::arg("values"), py::arg("target_average"), py::arg("tolerances") = as::Tolerances{});
  m.def("ready_pod_count", &as::ready_pod_count, py::arg("pods"));

  py::class_<as::ScalingPolicy>(m, "ScalingPolicy")
      .def(py::init([](as::PolicyType type, std::int32_t value, double period_s) {
             return as::ScalingPolicy{type, value, period_s};
           }),
           py::arg("type"), py::arg("value"), py::arg("period_s"))
      .def(py::init([](const py::kwargs& kw) { return from_kwargs<as::ScalingPolicy>(kw, "ScalingPolicy"); }))
      KT_RW(as::ScalingPolicy, type) KT_RW(as::ScalingPolicy, value) KT_RW(as::ScalingPolicy, period_s);
  py::class_<as::ScalingRules>(m, "ScalingRules")
      .def(py::init([](const py::kwargs& kw) { return from_kwargs<as::ScalingRules>(kw, "ScalingRules"); }))
      KT_RW(as::ScalingRules, stabilization_window_s) KT_RW(as::ScalingRules, select_policy)
      KT_RW(as::ScalingRules, policies) KT_RW(as::ScalingRules, tolerance)
      .def("validate", [](const as::ScalingRules& r) { r.validate("rules"); });
  py::class_<as::HpaBehavior>(m, "HpaBehavior", "HPA behaviour; defaults as autoscaling/v2")
      .def(py::init([](std::optional<as::ScalingRules> up, std::optional<as::ScalingRules> down) {
             as::HpaBehavior b;
             if (up) b.scale_up = *up;
             if (down) b.scale_down = *down;
             return b;
           }),
           py::arg("scale_up") = py::none(), py::arg("scale_down") = py::none())
      KT_RW(as::HpaBehavior, scale_up) KT_RW(as::HpaBehavior, scale_down)
      .def_static("default_scale_up", &as::HpaBehavior::default_scale_up)
      .def_static("default_scale_down", &as::HpaBehavior::default_scale_down);
  py::class_<as::HpaSpec>(m, "HpaSpec")
      .def(py::init([](std::int32_t min_replicas, std::int32_t max_replicas, std::optional<as::HpaBehavior> behavior) {
             as::HpaSpec s{min_replicas, max_replicas, behavior};
             s.validate();
             return s;
           }),
           py::arg("min_replicas") = 1, py::arg("max_replicas") = 10, py::arg("behavior") = py::none())
      KT_RW(as::HpaSpec, min_replicas) KT_RW(as::HpaSpec, max_replicas) KT_RW(as::HpaSpec, behavior)
      .def("validate", &as::HpaSpec::validate)
      .def("to_json", &as::HpaSpec::to_json)
      .def_static("from_json", &as::HpaSpec::from_json, py::arg("json"));
  py::class_<as::HpaControllerConfig>(m, "HpaControllerConfig")
      .def(py::init([](double w, double tol, double sync) { return as::HpaControllerConfig{w, tol, sync}; }),
           py::arg("downscale_stabilization_window_s") = 300.0, py::arg("tolerance") = 0.1,
           py::arg("sync_period_s") = 15.0)
      .def(py::init(
          [](const py::kwargs& kw) { return from_kwargs<as::HpaControllerConfig>(kw, "HpaControllerConfig"); }))
      KT_RW(as::HpaControllerConfig, downscale_stabilization_window_s) KT_RW(as::HpaControllerConfig, tolerance)
      KT_RW(as::HpaControllerConfig, sync_period_s);
  py::enum_<as::HpaConditionType>(m, "HpaConditionType")
      .value("able_to_scale", as::HpaConditionType::kAbleToScale)
      .value("scaling_active", as::HpaConditionType::kScalingActive)
      .value("scaling_limited", as::HpaConditionType::kScalingLimited);
  py::class_<as::HpaCondition>(m, "HpaCondition", "One HPA status condition (upstream reason and message)")
      .def_property_readonly("type", [](const as::HpaCondition& c) { return std::string(as::to_string(c.type)); })
      KT_RO(as::HpaCondition, status) KT_RO(as::HpaCondition, reason) KT_RO(as::HpaCondition, message)
      .def("__repr__", [](const as::HpaCondition& c) {
        return std::string("HpaCondition(") + as::to_string(c.type) + "=" + (c.status ? "True" : "False") + ", " +
               c.reason + ")";
      });
  py::class_<as::HpaDecision>(m, "HpaDecision")
      KT_RO(as::HpaDecision, desired_replicas) KT_RO(as::HpaDecision, rescale)
      KT_RO(as::HpaDecision, metric_desired_replicas) KT_RO(as::HpaDecision, reason) KT_RO(as::HpaDecision, conditions)
      .def(
          "condition",
          [](const as::HpaDecision& d, as::HpaConditionType t) -> std::optional<as::HpaCondition> {
            const as::HpaCondition* c = d.condition(t);
            return c ? std::optional<as::HpaCondition>(*c) : std::nullopt;
          },
          py::arg("type"), "The condition of `type` this reconcile set, or None")
      .def("to_json", &as::HpaDecision::to_json);
  py::class_<as::HpaController::Recommendation>(m, "HpaRecommendation", "A timestamped replica recommendation")
      .def(py::init([](std::int32_t replicas, double time) { return as::HpaController::Recommendation{replicas, time}; }),
           py::arg("replicas"), py::arg("time"))
      .def_readwrite("replicas", &as::HpaController::Recommendation::replicas)
      .def_readwrite("time", &as::HpaController::Recommendation::time);
  py::class_<as::HpaController> hpa(m, "HpaController", "HPA controller state machine for one HPA");
  hpa.def(py::init<const as::HpaSpec&, const as::HpaControllerConfig&>(), py::arg("spec"),
           py::arg("config") = as::HpaControllerConfig{})
      .def(
          "reconcile",
          [](as::HpaController& c, double now, std::int32_t current, const py::sequence& proposals) {
            return c.reconcile(now, current, proposals_from(proposals));
          },
          py::arg("now"), py::arg("current_replicas"), py::arg("proposals"),
          "proposals: one per metric, an int, a ReplicaResult, or None for a failed metric")
      .def("tolerances", &as::HpaController::tolerances)
      .def_property_readonly("recommendations", &as::HpaController::recommendations)
      .def("set_recommendations", &as::HpaController::set_recommendations, py::arg("recommendations"),
           "Replace the recommendation history (e.g. restored after a restart); [] stays empty");
  def_state(hpa);
  py::class_<as::HpaFleet> hpa_fleet(m, "HpaFleet",
                                     "Many HPAs with one spec, reconciled in one batch call (numpy in and out)");
  hpa_fleet
      .def(py::init<const as::HpaSpec&, std::size_t, const as::HpaControllerConfig&>(), py::arg("spec"), py::arg("n"),
           py::arg("config") = as::HpaControllerConfig{})
      .def("__len__", &as::HpaFleet::size)
      .def(
          "reconcile",
          [](as::HpaFleet& f, double now, py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> current,
             py::array_t<std::int32_t, py::array::c_style | py::array::forcecast> proposals,
             std::optional<int> n_threads_arg, std::optional<int> threads) {
            const int n_threads =
                renamed_int_keyword("HpaFleet.reconcile", n_threads_arg, threads, "n_threads", "threads", 1);
            const as::HpaFleet::Results* res = nullptr;
            {
              py::gil_scoped_release nogil;
              res = &f.reconcile(now, current.data(), static_cast<std::size_t>(current.size()), proposals.data(),
                                 static_cast<std::size_t>(proposals.size()), n_threads);
            }
            py::dict out;
            out["desired_replicas"] = to_array(res->desired_replicas);
            out["rescale"] = to_array(res->rescale).attr("astype")("bool");
            return out;
          },
          py::arg("now"), py::arg("current_replicas"), py::arg("proposals"), py::arg("n_threads") = py::none(),
          py::kw_only(), py::arg("threads") = py::none(),
          "One reconcile of every HPA; proposals[i] < 0 marks HPA i's metric as failed; n_threads (default 1) <= 0: "
          "all hardware threads (threads=: deprecated alias)");
  def_fleet_state(hpa_fleet, "HPA");

  // -------------------------------------------------------------------------------------------- queueing
  m.def("erlang_b", &as::erlang_b, py::arg("servers"), py::arg("load"));
  m.def("erlang_c", &as::erlang_c, py::arg("servers"), py::arg("load"));
  m.def("prob_wait_exceeds", &as::prob_wait_exceeds, py::arg("servers"), py::arg("load"), py::arg("service_time_s"),
        py::arg("t_s"));
  m.def("mean_wait", &as::mean_wait, py::arg("servers"), py::arg("load"), py::arg("service_time_s"));
  m.def("mean_queue_length", &as::mean_queue_length, py::arg("servers"), py::arg("load"));
  m.def("prob_response_exceeds", &as::prob_response_exceeds, py::arg("servers"), py::arg("load"),
        py::arg("service_time_s"), py::arg("t_s"));
  py::class_<as::LatencySlo>(m, "LatencySlo", "P(latency <= latency_s) >= quantile, on response time or wait")
      .def(py::init([](double latency_s, double quantile, bool on_response_time, double max_utilization) {
             as::LatencySlo s{latency_s, quantile, on_response_time, max_utilization};
             s.validate();
             return s;
           }),
           py::arg("latency_s") = 0.5, py::arg("quantile") = 0.95, py::arg("on_response_time") = true,
           py::arg("max_utilization") = 1.0)
      .def(py::init([](const py::kwargs& kw) {
        as::LatencySlo s = from_kwargs<as::LatencySlo>(kw, "LatencySlo");
        s.validate();
        return s;
      }))
      KT_RW(as::LatencySlo, latency_s) KT_RW(as::LatencySlo, quantile) KT_RW(as::LatencySlo, on_response_time)
      KT_RW(as::LatencySlo, max_utilization);
  m.def("min_servers_for_slo", &as::min_servers_for_slo, py::arg("load"), py::arg("service_time_s"), py::arg("slo"),
        py::arg("max_servers") = 1000000);
  m.def("min_replicas_for_slo", &as::min_replicas_for_slo, py::arg("arrival_rate"), py::arg("service_time_s"),
        py::arg("concurrency"), py::arg("slo") = as::LatencySlo{}, py::arg("max_replicas") = 100000);
  m.def("sqrt_staffing", &as::sqrt_staffing, py::arg("load"), py::arg("beta"));
  m.def("halfin_whitt_delay_probability", &as::halfin_whitt_delay_probability, py::arg("beta"));
  m.def("halfin_whitt_beta", &as::halfin_whitt_beta, py::arg("p_wait"));

  // ------------------------------------------------------------------------------------------ simulation
  py::class_<as::Trace>(m, "Trace", "Request rate (req/s) at steps of dt_s seconds")
      .def(py::init(&trace_from_array), py::arg("rate"), py::arg("dt_s") = 1.0)
      .def(py::init([](const Rates& rate, double dt) {
             warn_renamed({"Trace", "dt", "dt_s"});
             return trace_from_array(rate, dt);
           }),
           py::arg("rate"), py::arg("dt"))
      .def_readwrite("dt_s", &as::Trace::dt_s)
      .def_property_readonly("rate", [](const as::Trace& t) { return to_array(t.rate); })
      .def_property_readonly("duration_s", &as::Trace::duration_s)
      .def("__len__", [](const as::Trace& t) { return t.rate.size(); });
  m.def("trace_steps", &as::trace_steps, py::arg("steps"), py::arg("dt_s") = 1.0);
  m.def("trace_spike", &as::trace_spike, py::arg("base"), py::arg("peak"), py::arg("start"), py::arg("length_s"),
        py::arg("total_s"), py::arg("dt_s") = 1.0);
  m.def("trace_diurnal", &as::trace_diurnal, py::arg("mean"), py::arg("amplitude"), py::arg("period_s"),
        py::arg("total_s"), py::arg("dt_s") = 1.0, py::arg("noise") = 0.0, py::arg("seed") = 0);
  m.def("trace_from_csv", &as::trace_from_csv, py::arg("path"));
  py::class_<as::SimConfig>(m, "SimConfig", "Simulator settings (see docs/autoscale.md)")
      .def(py::init([](const py::kwargs& kw) {
        as::SimConfig c = from_kwargs<as::SimConfig>(kw, "SimConfig");
        c.validate();
        return c;
      }))
      KT_RW(as::SimConfig, policy) KT_RW(as::SimConfig, service_time_s) KT_RW(as::SimConfig, container_concurrency)
      KT_RW(as::SimConfig, pod_startup_delay_s) KT_RW(as::SimConfig, slo) KT_RW(as::SimConfig, initial_replicas)
      KT_RW(as::SimConfig, kpa) KT_RW(as::SimConfig, kpa_revision) KT_RW(as::SimConfig, hpa)
      KT_RW(as::SimConfig, hpa_controller) KT_RW(as::SimConfig, hpa_target_utilization)
      KT_RW(as::SimConfig, hpa_metric_window_s) KT_RW(as::SimConfig, slo_interval_s)
      KT_RW(as::SimConfig, slo_lookback_s) KT_RW(as::SimConfig, slo_headroom) KT_RW(as::SimConfig, slo_min_replicas)
      KT_RW(as::SimConfig, max_replicas)
      .def("validate", &as::SimConfig::validate)
      .def("to_json", [](const as::SimConfig& c) { return as::sim_config_to_json(c); })
      .def_static("from_json", &as::sim_config_from_json, py::arg("json"));
  py::class_<as::SimResult>(m, "SimResult", "Series (numpy) and totals of a simulation run")
      .def_property_readonly("time", [](const as::SimResult& r) { return to_array(r.time); })
      .def_property_readonly("rate", [](const as::SimResult& r) { return to_array(r.rate); })
      .def_property_readonly("desired", [](const as::SimResult& r) { return to_array(r.desired); })
      .def_property_readonly("ready", [](const as::SimResult& r) { return to_array(r.ready); })
      .def_property_readonly("provisioned", [](const as::SimResult& r) { return to_array(r.provisioned); })
      .def_property_readonly("in_flight", [](const as::SimResult& r) { return to_array(r.in_flight); })
      .def_property_readonly("violation_probability",
                             [](const as::SimResult& r) { return to_array(r.violation_probability); })
      KT_RO(as::SimResult, cold_starts) KT_RO(as::SimResult, cold_start_requests) KT_RO(as::SimResult, requests)
      KT_RO(as::SimResult, violating_requests) KT_RO(as::SimResult, slo_violation_fraction)
      KT_RO(as::SimResult, pod_seconds) KT_RO(as::SimResult, mean_ready) KT_RO(as::SimResult, scale_events)
      .def("to_json", [](const as::SimResult& r) { return as::sim_result_to_json(r); });
  m.def("simulate", &as::simulate, py::arg("trace"), py::arg("config"), py::call_guard<py::gil_scoped_release>());
  add_deprecated_aliases(m);
}

}  // namespace kubetune::python
