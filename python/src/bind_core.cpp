// Python bindings of the core: SearchSpace, Trial, Study, Searcher/Pruner bases, device queries.
#include <cmath>
#include <memory>

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "json_conv.hpp"
#include "kubetune/core/device.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"

namespace kubetune::python {
namespace {

struct SearchExhaustedError : StateError {
  using StateError::StateError;
};

py::object value_to_py(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) return py::float_(*d);
  if (auto* i = std::get_if<std::int64_t>(&v)) return py::int_(*i);
  return py::str(std::get<std::string>(v));
}

Value py_to_value(const std::string& name, py::handle h) {
  if (py::isinstance<py::bool_>(h))
    KT_THROW(InvalidArgument, "parameter '", name, "': booleans are not parameter values (use a categorical)");
  if (py::isinstance<py::int_>(h)) return Value{h.cast<std::int64_t>()};
  if (py::isinstance<py::float_>(h)) return Value{h.cast<double>()};
  if (py::isinstance<py::str>(h)) return Value{h.cast<std::string>()};
  if (py::hasattr(h, "item")) return py_to_value(name, h.attr("item")());
  KT_THROW(InvalidArgument, "parameter '", name, "': unsupported value type ",
           py::str(py::type::of(h).attr("__name__")).cast<std::string>());
}

Assignment dict_to_assignment(const py::dict& d) {
  Assignment a;
  for (auto item : d) {
    KT_CHECK(py::isinstance<py::str>(item.first), InvalidArgument, "parameter names must be strings");
    std::string name = item.first.cast<std::string>();
    a.emplace_back(name, py_to_value(name, item.second));
  }
  return a;
}

py::dict assignment_to_dict(const Assignment& a) {
  py::dict d;
  for (const auto& [k, v] : a) d[py::str(k)] = value_to_py(v);
  return d;
}

nlohmann::json json_arg(py::handle h) {
  if (py::isinstance<py::str>(h)) {
    try {
      return nlohmann::json::parse(h.cast<std::string>());
    } catch (const nlohmann::json::exception& e) {
      KT_THROW(InvalidArgument, "invalid JSON: ", e.what());
    }
  }
  return py_to_json(h);
}

/// What Python sees of a trial: the C++ trial plus its decoded parameters.
struct PyTrial {
  Trial t;
  py::dict params;
};

PyTrial make_py_trial(const SearchSpace& s, Trial t) {
  PyTrial p{std::move(t), {}};
  p.params = assignment_to_dict(s.to_assignment(p.t.x));
  return p;
}

// The edge only converts: a searcher / pruner argument (a T, a type name or a config dict) becomes the JSON value
// Study::from_config reads; anything else is a TypeError with `error`.
template <class T>
nlohmann::json spec_of(py::handle h, const char* error) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<T>(h)) return h.cast<std::shared_ptr<T>>()->config();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::dict>(h)) return py_to_json(h);
  throw py::type_error(error);
}

nlohmann::json searcher_spec(py::handle h) {
  return spec_of<Searcher>(h, "searcher must be a kubetune searcher (e.g. kt.TPE()), a type name or a config dict");
}

nlohmann::json pruner_spec(py::handle h) {
  return spec_of<Pruner>(h, "pruner must be a kubetune pruner (e.g. kt.MedianStop()), a type name or a config dict");
}

double value_arg(py::handle h) {
  if (py::isinstance<py::bool_>(h)) throw py::type_error("objective value must be a number, got bool");
  try {
    return h.cast<double>();
  } catch (const py::cast_error&) {
    throw py::type_error("objective value must be a number, got " +
                         py::str(py::type::of(h).attr("__name__")).cast<std::string>());
  }
}

std::int64_t id_arg(py::handle h) {
  if (py::isinstance<PyTrial>(h)) return h.cast<const PyTrial&>().t.id;
  if (py::hasattr(h, "id") && !py::isinstance<py::int_>(h)) return h.attr("id").cast<std::int64_t>();
  return h.cast<std::int64_t>();
}

}  // namespace

namespace {
nlohmann::json direction_spec(py::handle direction) {
  if (py::isinstance<py::str>(direction)) return direction.cast<std::string>();
  nlohmann::json dirs = nlohmann::json::array();
  for (auto d : direction) dirs.push_back(py::str(d).cast<std::string>());
  return dirs;
}

// {"params": {...}, "state": "running", "values": [..] or a number, "intermediate": {step: v} or [[step, v]],
//  "system_attrs": {name: number}}; only "params" is required.
TrialRecord trial_record_arg(py::handle item, std::size_t index) {
  KT_CHECK(py::isinstance<py::dict>(item), InvalidArgument, "trials[", index, "] must be a dict, got ",
           py::str(py::type::of(item)).cast<std::string>());
  auto d = py::reinterpret_borrow<py::dict>(item);
  KT_CHECK(d.contains("params") && py::isinstance<py::dict>(d["params"]), InvalidArgument, "trials[", index,
           "] needs a 'params' dict");
  TrialRecord r;
  r.params = dict_to_assignment(py::reinterpret_borrow<py::dict>(d["params"]));
  if (d.contains("state")) r.state = trial_state_from_string(py::str(d["state"]).cast<std::string>());
  if (d.contains("values") && !d["values"].is_none()) {
    py::handle v = d["values"];
    if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      for (auto e : v) r.values.push_back(value_arg(e));
    } else {
      r.values.push_back(value_arg(v));
    }
  }
  if (d.contains("intermediate") && !d["intermediate"].is_none()) {
    py::handle iv = d["intermediate"];
    if (py::isinstance<py::dict>(iv)) {
      for (auto [k, v] : py::reinterpret_borrow<py::dict>(iv)) r.intermediate.emplace_back(k.cast<std::int64_t>(), value_arg(v));
    } else {
      for (auto p : iv) {
        auto pair = py::reinterpret_borrow<py::sequence>(p);
        KT_CHECK(pair.size() == 2, InvalidArgument, "trials[", index, "].intermediate entries are [step, value]");
        r.intermediate.emplace_back(pair[0].cast<std::int64_t>(), value_arg(pair[1]));
      }
    }
  }
  if (d.contains("system_attrs") && !d["system_attrs"].is_none())
    for (auto [k, v] : py::reinterpret_borrow<py::dict>(d["system_attrs"]))
      r.system_attrs[py::str(k).cast<std::string>()] = value_arg(v);
  return r;
}

// Trials in columns (the bulk path of integrations): {"x": (n, d) floats in the internal encoding (NaN =
// inactive), "state": (n,) kt.TrialState codes, "values": (n, k) floats (read on complete rows),
// "intermediate": (rows, steps, values) three equal-length 1-D arrays, "system_attrs": {row: {name: number}}}.
std::vector<TrialRecord> trial_columns_arg(const py::dict& d, std::size_t dim) {
  using farr = py::array_t<double, py::array::c_style | py::array::forcecast>;
  using iarr = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
  KT_CHECK(d.contains("x") && d.contains("state"), InvalidArgument, "trial columns need 'x' and 'state'");
  farr x = farr::ensure(d["x"]);
  iarr st = iarr::ensure(d["state"]);
  KT_CHECK(x && x.ndim() == 2, InvalidArgument, "trial columns: 'x' must be a 2-D float array (trials, parameters)");
  const auto n = static_cast<std::size_t>(x.shape(0));
  KT_CHECK(static_cast<std::size_t>(x.shape(1)) == dim || n == 0, InvalidArgument, "trial columns: 'x' has ",
           x.shape(1), " columns, the space has ", dim, " parameters");
  KT_CHECK(st && st.ndim() == 1 && static_cast<std::size_t>(st.shape(0)) == n, InvalidArgument,
           "trial columns: 'state' must be a 1-D integer array of ", n, " kt.TrialState codes");
  farr vals;
  std::size_t k = 0;
  if (d.contains("values") && !d["values"].is_none()) {
    vals = farr::ensure(d["values"]);
    KT_CHECK(vals && vals.ndim() == 2 && static_cast<std::size_t>(vals.shape(0)) == n, InvalidArgument,
             "trial columns: 'values' must be a 2-D float array with ", n, " rows");
    k = static_cast<std::size_t>(vals.shape(1));
  }
  std::vector<TrialRecord> recs(n);
  const double* xs = x.data();
  auto ss = st.unchecked<1>();
  for (std::size_t i = 0; i < n; ++i) {
    TrialRecord& r = recs[i];
    std::int64_t code = ss(static_cast<py::ssize_t>(i));
    KT_CHECK(code >= static_cast<std::int64_t>(TrialState::Pending) &&
                 code <= static_cast<std::int64_t>(TrialState::Failed),
             InvalidArgument, "trial columns: state[", i, "] = ", code, " is not a kt.TrialState code");
    r.state = static_cast<TrialState>(code);
    r.x.assign(xs + i * dim, xs + (i + 1) * dim);
    if (r.state == TrialState::Complete) {
      KT_CHECK(k > 0, InvalidArgument, "trial columns: trial ", i, " is complete but 'values' is missing");
      r.values.resize(k);
      for (std::size_t j = 0; j < k; ++j)
        r.values[j] = vals.at(static_cast<py::ssize_t>(i), static_cast<py::ssize_t>(j));
    }
  }
  if (d.contains("intermediate") && !d["intermediate"].is_none()) {
    auto t = py::reinterpret_borrow<py::sequence>(d["intermediate"]);
    KT_CHECK(t.size() == 3, InvalidArgument, "trial columns: 'intermediate' is (rows, steps, values)");
    iarr rows = iarr::ensure(t[0]), steps = iarr::ensure(t[1]);
    farr iv = farr::ensure(t[2]);
    KT_CHECK(rows && steps && iv && rows.ndim() == 1 && steps.ndim() == 1 && iv.ndim() == 1 &&
                 rows.shape(0) == steps.shape(0) && rows.shape(0) == iv.shape(0),
             InvalidArgument, "trial columns: 'intermediate' needs three 1-D arrays of one length");
    auto rr = rows.unchecked<1>();
    auto sr = steps.unchecked<1>();
    auto vr = iv.unchecked<1>();
    for (py::ssize_t e = 0; e < rows.shape(0); ++e) {
      std::int64_t row = rr(e);
      KT_CHECK(row >= 0 && static_cast<std::size_t>(row) < n, InvalidArgument, "trial columns: intermediate row ",
               row, " outside [0, ", n, ")");
      recs[static_cast<std::size_t>(row)].intermediate.emplace_back(sr(e), vr(e));
    }
  }
  if (d.contains("system_attrs") && !d["system_attrs"].is_none()) {
    for (auto [key, attrs] : py::reinterpret_borrow<py::dict>(d["system_attrs"])) {
      auto row = key.cast<std::int64_t>();
      KT_CHECK(row >= 0 && static_cast<std::size_t>(row) < n, InvalidArgument, "trial columns: system_attrs row ",
               row, " outside [0, ", n, ")");
      for (auto [name, v] : py::reinterpret_borrow<py::dict>(attrs))
        recs[static_cast<std::size_t>(row)].system_attrs[py::str(name).cast<std::string>()] = value_arg(v);
    }
  }
  return recs;
}

// Records from a list of dicts or from columns.
std::vector<TrialRecord> trial_records_arg(py::handle trials, std::size_t dim) {
  if (py::isinstance<py::dict>(trials)) return trial_columns_arg(py::reinterpret_borrow<py::dict>(trials), dim);
  KT_CHECK(py::isinstance<py::list>(trials), InvalidArgument,
           "trials must be a list of trial dicts or a dict of trial columns");
  std::vector<TrialRecord> recs;
  auto l = py::reinterpret_borrow<py::list>(trials);
  recs.reserve(l.size());
  for (auto item : l) recs.push_back(trial_record_arg(item, recs.size()));
  return recs;
}
}  // namespace

void bind_core(py::module_& m) {
  register_builtins();
  m.attr("__version__") = "0.1.0";
  static py::exception<SearchExhaustedError> exhausted_exc(m, "SearchExhausted", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SearchExhaustedError& e) {
      PyErr_SetString(exhausted_exc.ptr(), e.what());
    }
  });

  m.def("cuda_available", &device::cuda_available, "True when built with CUDA and a GPU is usable.");
  m.def("built_with_cuda", &device::built_with_cuda, "True when the library was compiled with CUDA.");
  m.def("cuda_device_count", &device::cuda_device_count);
  m.def("registered_searchers", &registered_searchers);
  m.def("registered_pruners", &registered_pruners);

  py::class_<Searcher, std::shared_ptr<Searcher>>(m, "Searcher", "Base of every kubetune searcher.")
      .def_property_readonly("type", &Searcher::type)
      .def("config", [](const Searcher& s) { return json_to_py(s.config()); }, "Configuration as a dict.")
      .def("__repr__", [](const Searcher& s) { return "<kubetune searcher " + s.config().dump() + ">"; });
  py::class_<Pruner, std::shared_ptr<Pruner>>(m, "Pruner", "Base of every kubetune early-stopping rule.")
      .def_property_readonly("type", &Pruner::type)
      .def("config", [](const Pruner& s) { return json_to_py(s.config()); })
      .def("__repr__", [](const Pruner& s) { return "<kubetune pruner " + s.config().dump() + ">"; });
  m.def("make_searcher", [](py::handle cfg) -> std::shared_ptr<Searcher> { return searcher_from_spec(searcher_spec(cfg)); },
        py::arg("config"), "Build a searcher from a config dict / JSON string / type name.");

  py::class_<SearchSpace>(m, "SearchSpace", "Ordered, validated set of parameters.")
      .def(py::init<>())
      .def(
          "add_float",
          [](SearchSpace& s, const std::string& name, double lo, double hi, bool log, std::optional<double> step)
              -> SearchSpace& { return s.add_float(name, lo, hi, log, step.value_or(0.0)); },
          py::arg("name"), py::arg("low"), py::arg("high"), py::arg("log") = false, py::arg("step") = py::none(),
          py::return_value_policy::reference_internal)
      .def(
          "add_int",
          [](SearchSpace& s, const std::string& name, std::int64_t lo, std::int64_t hi, bool log,
             std::int64_t step) -> SearchSpace& { return s.add_int(name, lo, hi, log, step); },
          py::arg("name"), py::arg("low"), py::arg("high"), py::arg("log") = false, py::arg("step") = 1,
          py::return_value_policy::reference_internal)
      .def(
          "add_discrete",
          [](SearchSpace& s, const std::string& name, std::vector<double> v) -> SearchSpace& {
            return s.add_discrete(name, std::move(v));
          },
          py::arg("name"), py::arg("values"), py::return_value_policy::reference_internal)
      .def(
          "add_categorical",
          [](SearchSpace& s, const std::string& name, std::vector<std::string> v) -> SearchSpace& {
            return s.add_categorical(name, std::move(v));
          },
          py::arg("name"), py::arg("choices"), py::return_value_policy::reference_internal)
      .def(
          "set_prior",
          [](SearchSpace& s, const std::string& name, const std::string& dist, std::optional<double> mu,
             std::optional<double> sigma) -> SearchSpace& {
            return s.set_prior(name, distribution_from_string(dist), mu.value_or(std::nan("")), sigma.value_or(0.0));
          },
          py::arg("name"), py::arg("distribution"), py::arg("mu") = py::none(), py::arg("sigma") = py::none(),
          py::return_value_policy::reference_internal)
      .def(
          "set_condition",
          [](SearchSpace& s, const std::string& name, const std::string& parent,
             std::vector<std::string> values) -> SearchSpace& { return s.set_condition(name, parent, values); },
          py::arg("name"), py::arg("parent"), py::arg("values"), py::return_value_policy::reference_internal)
      .def_static(
          "from_katib", [](py::handle params) { return SearchSpace::from_katib(json_arg(params)); },
          py::arg("parameters"), "Build from Katib's `parameters` list (list of dicts or a JSON string).")
      .def_static(
          "from_json", [](py::handle j) { return SearchSpace::from_json(json_arg(j)); }, py::arg("data"))
      .def("to_json", [](const SearchSpace& s) { return json_to_py(s.to_json()); })
      .def("__len__", &SearchSpace::size)
      .def("__contains__", &SearchSpace::contains)
      .def("__eq__", &SearchSpace::operator==)
      .def_property_readonly("names",
                             [](const SearchSpace& s) {
                               std::vector<std::string> n;
                               for (const auto& p : s.params()) n.push_back(p.name);
                               return n;
                             })
      .def(
          "sample",
          [](const SearchSpace& s, std::uint64_t seed) {
            Rng rng(seed);
            return assignment_to_dict(s.to_assignment(s.sample(rng)));
          },
          py::arg("seed") = 0, "One random assignment drawn from the priors.")
      .def(
          "to_unit",
          [](const SearchSpace& s, const py::dict& params) { return s.to_unit(s.from_assignment(dict_to_assignment(params))); },
          py::arg("params"), "Assignment -> unit-cube coordinates (NaN for inactive parameters).")
      .def(
          "from_unit",
          [](const SearchSpace& s, const std::vector<double>& u) {
            return assignment_to_dict(s.to_assignment(s.from_unit(u)));
          },
          py::arg("u"))
      .def(
          "validate",
          [](const SearchSpace& s, const py::dict& params) {
            return assignment_to_dict(s.to_assignment(s.from_assignment(dict_to_assignment(params))));
          },
          py::arg("params"), "Check an assignment; returns it normalised or raises ValueError.")
      .def("__repr__", [](const SearchSpace& s) { return "SearchSpace(" + s.dump() + ")"; });

  py::enum_<TrialState>(m, "TrialState")
      .value("PENDING", TrialState::Pending)
      .value("RUNNING", TrialState::Running)
      .value("COMPLETE", TrialState::Complete)
      .value("PRUNED", TrialState::Pruned)
      .value("FAILED", TrialState::Failed)
      .def("__str__", [](TrialState s) { return to_string(s); });

  py::class_<PyTrial>(m, "Trial", "A trial of a study (a snapshot; ask the study again for updates).")
      .def_property_readonly("id", [](const PyTrial& p) { return p.t.id; })
      .def_property_readonly("number", [](const PyTrial& p) { return p.t.id; })
      .def_readonly("params", &PyTrial::params)
      .def_property_readonly("state", [](const PyTrial& p) { return p.t.state; })
      .def_property_readonly("value",
                             [](const PyTrial& p) -> py::object {
                               if (p.t.values.empty()) return py::none();
                               return py::float_(p.t.values[0]);
                             })
      .def_property_readonly("values", [](const PyTrial& p) { return p.t.values; })
      .def_property_readonly("intermediate_values",
                             [](const PyTrial& p) {
                               py::dict d;
                               for (const auto& [s, v] : p.t.intermediate) d[py::int_(s)] = v;
                               return d;
                             })
      .def_property_readonly("user_attrs", [](const PyTrial& p) { return p.t.user_attrs; })
      .def_property_readonly("system_attrs", [](const PyTrial& p) { return p.t.system_attrs; })
      .def_property_readonly("created_at", [](const PyTrial& p) { return p.t.created_at; })
      .def_property_readonly("finished_at", [](const PyTrial& p) { return p.t.finished_at; })
      .def_property_readonly("x", [](const PyTrial& p) { return p.t.x; }, "Internal encoding (indices for lists).")
      .def("__repr__", [](const PyTrial& p) {
        return "Trial(id=" + std::to_string(p.t.id) + ", state=" + to_string(p.t.state) +
               ", params=" + py::repr(p.params).cast<std::string>() +
               (p.t.values.empty() ? std::string() : ", value=" + py::repr(py::float_(p.t.values[0])).cast<std::string>()) +
               ")";
      });

  py::class_<Study>(m, "Study", "Ask/tell optimisation loop over a search space (thread-safe).")
      .def(py::init([](const SearchSpace& space, py::handle searcher, py::handle direction, std::uint64_t seed,
                       py::handle pruner) {
             return Study::from_config(space, {{"searcher", searcher_spec(searcher)},
                                               {"direction", direction_spec(direction)},
                                               {"seed", seed},
                                               {"pruner", pruner_spec(pruner)}});
           }),
           py::arg("space"), py::arg("searcher") = py::none(), py::arg("direction") = "minimize",
           py::arg("seed") = 0, py::arg("pruner") = py::none())
      .def(
          "ask",
          [](Study& s, std::optional<std::size_t> n) -> py::object {
            std::vector<Trial> ts;
            {
              py::gil_scoped_release rel;
              ts = s.ask(n.value_or(1));
            }
            if (!n) {
              if (ts.empty()) throw SearchExhaustedError("search space exhausted: the searcher has no new point");
              return py::cast(make_py_trial(s.space(), std::move(ts[0])));
            }
            py::list out;
            for (auto& t : ts) out.append(make_py_trial(s.space(), std::move(t)));
            return out;
          },
          py::arg("n") = py::none(),
          "ask() -> Trial (raises SearchExhausted when nothing is left); ask(n) -> list of up to n trials.")
      .def(
          "tell",
          [](Study& s, py::handle trial, py::handle value, std::optional<std::string> state) {
            std::int64_t id = id_arg(trial);
            if (state) {
              TrialState st = trial_state_from_string(*state);
              if (st == TrialState::Complete) {
                KT_CHECK(!value.is_none(), InvalidArgument, "state 'complete' needs a value");
              } else {
                py::gil_scoped_release rel;
                s.tell_state(id, st);
                return st;
              }
            }
            KT_CHECK(!value.is_none(), InvalidArgument, "tell(", id, ") needs a value or state='failed'/'pruned'");
            if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
              std::vector<double> vs;
              for (auto v : value) vs.push_back(value_arg(v));
              py::gil_scoped_release rel;
              return s.tell(id, vs);
            }
            double v = value_arg(value);
            py::gil_scoped_release rel;
            return s.tell(id, v);
          },
          py::arg("trial"), py::arg("value") = py::none(), py::arg("state") = py::none(),
          "Record a trial's objective (NaN/inf => failed) or finish it with state='failed'/'pruned'.")
      .def(
          "report",
          [](Study& s, py::handle trial, std::int64_t step, double value) { s.report(id_arg(trial), step, value); },
          py::arg("trial"), py::arg("step"), py::arg("value"))
      .def(
          "should_prune",
          [](Study& s, py::handle trial) {
            std::int64_t id = id_arg(trial);
            py::gil_scoped_release rel;
            return s.should_prune(id);
          },
          py::arg("trial"))
      .def_property_readonly("best",
                             [](const Study& s) -> py::object {
                               auto b = s.best();
                               if (!b) return py::none();
                               return py::cast(make_py_trial(s.space(), std::move(*b)));
                             })
      .def_property_readonly("best_value",
                             [](const Study& s) -> py::object {
                               auto b = s.best();
                               if (!b) return py::none();
                               return py::float_(b->values[0]);
                             })
      .def_property_readonly("best_params",
                             [](const Study& s) -> py::object {
                               auto b = s.best();
                               if (!b) return py::none();
                               return assignment_to_dict(s.space().to_assignment(b->x));
                             })
      .def_property_readonly("trials",
                             [](const Study& s) {
                               py::list out;
                               for (auto& t : s.trials()) out.append(make_py_trial(s.space(), std::move(t)));
                               return out;
                             })
      .def("trial", [](const Study& s, std::int64_t id) { return make_py_trial(s.space(), s.trial(id)); })
      .def("__len__", &Study::n_trials)
      .def(
          "enqueue", [](Study& s, const py::dict& params) { return s.enqueue(dict_to_assignment(params)); },
          py::arg("params"), "Warm start: the next ask returns these params.")
      .def(
          "add_trial",
          [](Study& s, const py::dict& params, py::handle value, const std::string& state,
             std::optional<std::map<std::int64_t, double>> intermediate) {
            std::vector<double> vs;
            if (!value.is_none()) {
              if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
                for (auto v : value) vs.push_back(value_arg(v));
              } else {
                vs.push_back(value_arg(value));
              }
            }
            std::vector<std::pair<std::int64_t, double>> iv;
            if (intermediate)
              for (const auto& [k, v] : *intermediate) iv.emplace_back(k, v);
            return s.add_trial(dict_to_assignment(params), vs, trial_state_from_string(state), iv);
          },
          py::arg("params"), py::arg("value") = py::none(), py::arg("state") = "complete",
          py::arg("intermediate") = py::none(), "Add a finished trial (e.g. from an earlier run).")
      .def_static(
          "replay",
          [](const SearchSpace& space, py::handle searcher, py::handle trials, py::handle direction,
             std::uint64_t seed, std::uint64_t ask_counter, py::handle pruner) {
            std::vector<TrialRecord> recs = trial_records_arg(trials, space.size());
            auto srch = searcher_from_spec(searcher_spec(searcher));
            auto prn = pruner_from_spec(pruner_spec(pruner));
            auto dirs = directions_from_spec(direction_spec(direction));
            py::gil_scoped_release rel;
            return Study::replay(space, std::move(srch), std::move(dirs), seed, recs, ask_counter, std::move(prn));
          },
          py::arg("space"), py::arg("searcher"), py::arg("trials"), py::arg("direction") = "minimize",
          py::arg("seed") = 0, py::arg("ask_counter") = 0, py::arg("pruner") = py::none(),
          "A study rebuilt from another engine's trials (dicts with params, state, values, intermediate, "
          "system_attrs, or a dict of columns: x, state, values, intermediate, system_attrs); running ones are "
          "pending points. Same arguments => same asks.")
      .def(
          "replace_trials",
          [](Study& s, py::handle trials, std::uint64_t ask_counter, std::size_t keep) {
            std::vector<TrialRecord> recs = trial_records_arg(trials, s.space().size());
            py::gil_scoped_release rel;
            s.replace_trials(std::move(recs), ask_counter, keep);
          },
          py::arg("trials"), py::arg("ask_counter") = 0, py::arg("keep") = 0,
          "Replace the trials as replay() builds them and set the ask counter, keeping this study's searcher "
          "and pruner (and their caches): the next asks equal those of a fresh replay() with the same arguments. "
          "keep > 0 keeps the first keep trials (finished ones replayed before) and replaces those after them.")
      .def("set_user_attr", &Study::set_user_attr, py::arg("trial_id"), py::arg("key"), py::arg("value"))
      .def_property_readonly("exhausted", &Study::exhausted)
      .def_property_readonly("space", [](const Study& s) { return s.space(); })
      .def_property_readonly("seed", &Study::seed)
      .def_property_readonly("directions",
                             [](const Study& s) {
                               std::vector<std::string> d;
                               for (auto x : s.directions()) d.push_back(to_string(x));
                               return d;
                             })
      .def_property_readonly("direction", [](const Study& s) { return to_string(s.directions()[0]); })
      .def_property_readonly("searcher", [](const Study& s) { return json_to_py(s.searcher_config()); },
                             "The searcher's configuration (dict).")
      .def(
          "save",
          [](const Study& s, const py::object& path, bool overwrite) {
            std::string p = py::str(path);
            py::gil_scoped_release rel;
            s.save(p, overwrite);
          },
          py::arg("path"), py::kw_only(), py::arg("overwrite") = false,
          "Atomic save (temp file, fsync, rename) under a lock on '<path>.lock'. Raises RuntimeError, leaving the "
          "file as it is, when the file holds a study this object did not load or save, or changed since this "
          "object loaded or last saved it; overwrite=True replaces it. One process per study file.")
      .def_static(
          "load",
          [](const py::object& path) {
            std::string p = py::str(path);
            py::gil_scoped_release rel;
            return Study::load(p);
          },
          py::arg("path"))
      .def("to_json", [](const Study& s) { return json_to_py(s.to_json()); })
      .def_static(
          "from_json", [](py::handle j) { return Study::from_json(json_arg(j)); }, py::arg("data"));
}

}  // namespace kubetune::python
