// Python bindings of the multifidelity module: Hyperband, BOHB, ASHA, pruners, learning-curve benchmark.
#include <cmath>
#include <memory>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dict_conv.hpp"
#include "json_conv.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/multifidelity/asha.hpp"
#include "kubetune/search/multifidelity/bohb.hpp"
#include "kubetune/search/multifidelity/curves.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"
#include "kubetune/search/multifidelity/median_stop.hpp"

namespace kubetune::python {
namespace {
using namespace kubetune::search;
using namespace py::literals;

py::list brackets_to_py(const std::vector<Bracket>& bs) {
  return list_of(bs, [](const Bracket& b) {
    auto rung = [](const auto& r) { return py::make_tuple(r.n, r.resource); };
    return py::dict("s"_a = b.s, "rungs"_a = list_of(b.rungs, rung), "configs"_a = b.configs(),
                    "total_resource"_a = b.total_resource());
  });
}

py::dict progress_to_py(const Hyperband::Progress& p) {
  return py::dict("brackets_total"_a = p.brackets_total, "brackets_started"_a = p.brackets_started,
                  "brackets_finished"_a = p.brackets_finished, "running"_a = p.running, "ready"_a = p.ready,
                  "finished"_a = p.finished, "waiting"_a = p.waiting);
}

/// __init__(first, **kw) of a class whose settings table also takes `first` (e.g. resource_name) by position.
template <class T, class Base, class First>
auto init_with_first(const nlohmann::json& schema, const char* cls, const char* type, const char* first) {
  return py::init([&schema, cls, type, first](First value, const py::kwargs& kw) {
    nlohmann::json j = settings_from_kwargs(kw, schema, cls, type);
    j[first] = value;
    return build_as<T, Base>(j);
  });
}

// A configuration from a sequence/array of coordinates or a dict {"x0": .., ...} (or an object with .params).
std::vector<double> coords(const LearningCurves& lc, py::handle h, double* budget_out, const std::string& res) {
  py::object params;
  if (!py::isinstance<py::dict>(h) && py::hasattr(h, "params")) {
    params = h.attr("params");
    h = params;
  }
  const auto dim = static_cast<std::size_t>(lc.config().dim);
  if (py::isinstance<py::dict>(h)) {
    auto d = h.cast<py::dict>();
    std::vector<double> u(dim);
    for (std::size_t j = 0; j < dim; ++j) {
      std::string k = "x" + std::to_string(j);
      KT_CHECK(d.contains(k), InvalidArgument, "learning curves: parameter '", k, "' is missing");
      u[j] = d[py::str(k)].cast<double>();
    }
    if (budget_out && d.contains(res)) *budget_out = d[py::str(res)].cast<double>();
    return u;
  }
  return h.cast<std::vector<double>>();
}

/// LearningCurves.value / __call__: the noisy value at `budget` (default: the dict's resource_name entry, else
/// max_budget).
double curve_value(const LearningCurves& l, py::handle u, std::optional<double> budget,
                   const std::string& resource_name) {
  double b = budget.value_or(l.config().max_budget);
  auto x = coords(l, u, budget ? nullptr : &b, resource_name);
  return l.value(x, b);
}

}  // namespace

void bind_multifidelity(py::module_& m) {
  m.def(
      "hyperband_brackets",
      [](double max_resource, int eta, const std::string& mode, double min_resource) {
        return brackets_to_py(hyperband_brackets(max_resource, eta, bracket_mode_from_string(mode), min_resource));
      },
      py::arg("max_resource"), py::arg("eta") = 3, py::kw_only(), py::arg("mode") = "exact",
      py::arg("min_resource") = 1.0,
      "Hyperband's brackets for one iteration: [{s, rungs: [(n_i, r_i)], configs, total_resource}]. mode is "
      "'exact' (Li et al. 2018), 'katib' or 'hpbandster' (those projects' arithmetic).");

  // Keyword arguments, docstrings and `_settings_schema()` come from the C++ settings tables. Hyperband and BOHB
  // also take resource_name by position, PercentilePruner its percentile.
  static const nlohmann::json hb_schema = Hyperband::settings_schema(), bohb_schema = BOHB::settings_schema(),
                              pct_schema = PercentilePruner::settings_schema();
  static const std::string hb_doc = settings_docstring(
      "Hyperband (Li et al., JMLR 2018) with exact bracket arithmetic. Each ask returns the next "
      "(configuration, budget): a new random configuration or a promotion (same point, larger `resource_name`). "
      "Brackets run to completion across workers; state lives in trial attributes (hb_bracket, hb_rung, "
      "hb_config). mode='katib'/'hpbandster' reproduce those projects' arithmetic; bracket=s runs successive "
      "halving with one bracket.",
      hb_schema);
  py::class_<Hyperband, Searcher, std::shared_ptr<Hyperband>>(m, "Hyperband", hb_doc.c_str())
      .def(init_with_first<Hyperband, Searcher, const std::string&>(hb_schema, "Hyperband", "hyperband",
                                                                     "resource_name"),
           py::arg("resource_name"), "resource_name, then keyword arguments as listed in the class docstring.")
      .def_static("_settings_schema", [] { return schema_to_py(hb_schema, {"resource_name"}, {"resource_name"}); },
                  "The settings table (for stubs and docs).")
      .def_static(
          "from_katib",
          [](py::handle s) { return build_as<Hyperband, Searcher>(katib_settings(s, "hyperband")); },
          py::arg("settings"), "Build from Katib algorithmSettings (r_l, resource_name, eta; values may be strings).")
      .def_property_readonly("brackets", [](const Hyperband& h) { return brackets_to_py(h.brackets()); })
      .def(
          "progress", [](const Hyperband& h, const Study& s) { return progress_to_py(h.progress(s.space(), s.trials())); },
          py::arg("study"),
          "Where a study run by this Hyperband stands: finished (nothing will ever run again) vs waiting "
          "(nothing to run now; running trials will unlock promotions).");

  static const std::string bohb_doc = settings_docstring(
      "BOHB (Falkner, Klein & Hutter, ICML 2018): Hyperband brackets whose new configurations come from a "
      "multivariate KDE (good/bad densities, Gaussian + Aitchison-Aitken kernels) of the largest budget with "
      "enough observations. Defaults as the paper/HpBandSter; n_iterations=0 repeats brackets forever.",
      bohb_schema);
  py::class_<BOHB, Hyperband, std::shared_ptr<BOHB>>(m, "BOHB", bohb_doc.c_str())
      .def(init_with_first<BOHB, Searcher, const std::string&>(bohb_schema, "BOHB", "bohb", "resource_name"),
           py::arg("resource_name"), "resource_name, then keyword arguments as listed in the class docstring.")
      .def_static("_settings_schema", [] { return schema_to_py(bohb_schema, {"resource_name"}, {"resource_name"}); },
                  "The settings table (for stubs and docs).")
      .def_static(
          "from_katib", [](py::handle s) { return build_as<BOHB, Searcher>(katib_settings(s, "bohb")); },
          py::arg("settings"));

  settings_class<ASHA, Searcher>(
      m, "ASHA", "asha",
      "Asynchronous successive halving (Li et al., MLSys 2020). mode='prune' (default): trials run to "
      "max_resource reporting intermediate values and should_prune stops those outside the best 1/eta at each "
      "rung min_resource*eta^(s+k); mode='promote': ask promotes the best 1/eta of a rung when possible, else "
      "starts a new configuration (needs resource_name).");

  settings_class<ASHAPruner, Pruner>(
      m, "ASHAPruner", "asha",
      "ASHA's rung rule as a pruner for any searcher: at step min_resource*eta^(s+k) a trial continues only if "
      "it is among the best floor(n/eta) of the n values recorded at that rung (best-so-far with fewer than eta, "
      "as Optuna's SuccessiveHalvingPruner). Call should_prune after every report.");

  settings_class<HyperbandPruner, Pruner>(
      m, "HyperbandPruner", "hyperband",
      "Asynchronous Hyperband as a pruner (Li et al. 2020; Optuna's HyperbandPruner): ASHA brackets with "
      "min_early_stopping_rate = bracket; each trial joins one bracket (hash of its id, weighted by Hyperband's "
      "bracket sizes) and competes only within it. mode='optuna' counts brackets with Optuna's float log.")
      .def_property_readonly("n_brackets", &HyperbandPruner::n_brackets)
      .def("bracket_of", &HyperbandPruner::bracket_of, py::arg("trial_id"));

  settings_class<MedianStop, Pruner>(
      m, "MedianStop", "median_stop",
      "Median stopping rule (Golovin et al., Vizier, KDD 2017) with Katib's settings: prune when the best value "
      "so far is worse than the median of completed trials' running averages at the same step, after "
      "start_step reports and with at least min_trials_required completed trials. rule='katib' reproduces "
      "Katib's medianstop service (mean of first-start_step averages, checked once).")
      .def_static(
          "from_katib",
          [](py::handle s) { return build_as<MedianStop, Pruner>(katib_settings(s, "median_stop")); },
          py::arg("settings") = py::none(), "Build from Katib earlyStopping algorithmSettings.");

  static const std::string pct_doc = settings_docstring(
      "Percentile pruning (Optuna's PercentilePruner semantics): prune when the best value so far is worse "
      "than the given percentile of completed trials' values at the same step.",
      pct_schema);
  py::class_<PercentilePruner, Pruner, std::shared_ptr<PercentilePruner>>(m, "PercentilePruner", pct_doc.c_str())
      .def(init_with_first<PercentilePruner, Pruner, double>(pct_schema, "PercentilePruner", "percentile",
                                                              "percentile"),
           py::arg("percentile") = PercentilePruner::Config{}.percentile,
           "percentile, then keyword arguments as listed in the class docstring.")
      .def_static("_settings_schema", [] { return schema_to_py(pct_schema, {"percentile"}); },
                  "The settings table (for stubs and docs).");

  // Synthetic multi-fidelity benchmark, in the shared `functions` submodule (kt.functions re-exports it).
  py::module_ fm = py::hasattr(m, "functions") ? m.attr("functions").cast<py::module_>() : m.def_submodule("functions");
  py::class_<LearningCurves>(
      fm, "LearningCurves",
      "Synthetic learning curves (minimise): final value f(u) known in closed form (minimum 0 at argmin), "
      "curves y(u, b) = f(u) + A(u) h(b) + noise that cross between configurations, deterministic under seed. "
      "Configurations are x0..x{dim-1} in [0, 1]; the budget is a separate parameter (default 'epochs').")
      .def(py::init([](int dim, double max_budget, double noise, double crossing, std::uint64_t seed) {
             return LearningCurves({dim, max_budget, noise, crossing, seed});
           }),
           py::kw_only(), py::arg("dim") = 4, py::arg("max_budget") = 81.0, py::arg("noise") = 0.01,
           py::arg("crossing") = 0.3, py::arg("seed") = 0)
      .def_property_readonly("dim", [](const LearningCurves& l) { return l.config().dim; })
      .def_property_readonly("max_budget", [](const LearningCurves& l) { return l.config().max_budget; })
      .def_property_readonly("optimum", &LearningCurves::min_value)
      .def_property_readonly("argmin", &LearningCurves::argmin)
      .def(
          "final_value", [](const LearningCurves& l, py::handle u) { return l.final_value(coords(l, u, nullptr, "")); },
          py::arg("config"), "Noise-free value at max_budget (the configuration's true objective).")
      .def("value", &curve_value, py::arg("config"), py::arg("budget") = py::none(), py::kw_only(),
           py::arg("resource_name") = "epochs",
           "Noisy curve value at `budget` (default: the dict's resource_name entry, else max_budget).")
      .def("__call__", &curve_value, py::arg("config"), py::arg("budget") = py::none(), py::kw_only(),
           py::arg("resource_name") = "epochs")
      .def(
          "mean_value", [](const LearningCurves& l, py::handle u, double b) { return l.mean_value(coords(l, u, nullptr, ""), b); },
          py::arg("config"), py::arg("budget"))
      .def(
          "curve",
          [](const LearningCurves& l, py::handle u, std::optional<std::vector<double>> budgets) {
            std::vector<double> bs;
            if (budgets) bs = *budgets;
            else
              for (int b = 1; b <= static_cast<int>(l.config().max_budget); ++b) bs.push_back(b);
            return l.curve(coords(l, u, nullptr, ""), bs);
          },
          py::arg("config"), py::arg("budgets") = py::none(), "Values at each budget (default 1, 2, ..., max_budget).")
      .def("space", &LearningCurves::space, py::arg("resource_name") = "epochs",
           "SearchSpace x0..x{dim-1} in [0, 1] plus the Int resource [1, max_budget].");
  fm.def(
      "learning_curves",
      [](int dim, double max_budget, double noise, double crossing, std::uint64_t seed) {
        return LearningCurves({dim, max_budget, noise, crossing, seed});
      },
      py::kw_only(), py::arg("dim") = 4, py::arg("max_budget") = 81.0, py::arg("noise") = 0.01,
      py::arg("crossing") = 0.3, py::arg("seed") = 0, "A LearningCurves benchmark problem.");
}

}  // namespace kubetune::python
