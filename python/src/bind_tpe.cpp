// Python bindings of the tpe module: kt.TPE (Optuna / hyperopt presets, Katib settings).
#include <memory>
#include <string>

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "json_conv.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/parzen.hpp"
#include "kubetune/search/tpe.hpp"

namespace kubetune::python {
namespace {
using kubetune::search::TPE;
using kubetune::search::TPEConfig;
using kubetune::search::ParzenEstimator;

std::shared_ptr<TPE> build_tpe(const nlohmann::json& j) {
  return std::make_shared<TPE>(TPEConfig::from_json(j));
}


constexpr const char* kDoc =
    "Tree-structured Parzen Estimator (Bergstra et al., NeurIPS 2011; Watanabe 2023), defaults as Optuna's "
    "TPESampler: n_startup_trials 10, n_ei_candidates 24, gamma(n) = min(ceil(0.1 n), 25), prior_weight 1, "
    "magic clip, recency weights; plus kubetune's candidate refinement for multivariate=True (n_refine_candidates "
    "more candidates drawn around the best trial so far with refine_scale times its kernel's widths; TPE.optuna() turns it "
    "off). multivariate=True models parameters jointly (group-decomposed on "
    "conditional spaces). Running trials are constant liars, so batch asks are distinct; failed trials are "
    "ignored; pruned trials rank by their last intermediate value. TPE.hyperopt() gives hyperopt's preset, "
    "TPE.from_katib(settings) accepts Katib's algorithmSettings.";
}  // namespace

void bind_tpe(py::module_& m) {
  // Inspection hooks (differential tests against other TPE implementations); not part of the public API.
  py::class_<ParzenEstimator, std::shared_ptr<ParzenEstimator>>(m, "_ParzenEstimator",
                                                                "A fitted Parzen estimator (model coordinates).")
      .def_property_readonly("weights", [](const ParzenEstimator& e) { return e.weights(); })
      .def_property_readonly("n_dims", &ParzenEstimator::n_dims)
      .def_property_readonly("n_kernels", &ParzenEstimator::n_kernels)
      .def("mus", [](const ParzenEstimator& e, std::size_t d) {
        KT_CHECK(d < e.n_dims(), InvalidArgument, "dimension ", d, " out of range");
        return std::vector<double>(e.mus(d), e.mus(d) + e.n_kernels());
      }, py::arg("d"))
      .def("sigmas", [](const ParzenEstimator& e, std::size_t d) {
        KT_CHECK(d < e.n_dims(), InvalidArgument, "dimension ", d, " out of range");
        return std::vector<double>(e.sigmas(d), e.sigmas(d) + e.n_kernels());
      }, py::arg("d"))
      .def("log_pdf", [](const ParzenEstimator& e, const std::vector<std::vector<double>>& pts) {
        std::vector<double> out;
        for (const auto& p : pts) {
          KT_CHECK(p.size() == e.n_dims(), InvalidArgument, "point has ", p.size(), " values, expected ", e.n_dims());
          out.push_back(e.log_pdf(p.data()));
        }
        return out;
      }, py::arg("points"), "Log density (mass for discrete / categorical dimensions) of points in model coordinates.")
      .def("sample", [](const ParzenEstimator& e, std::size_t m, std::uint64_t seed) {
        kubetune::Rng rng(seed);
        std::vector<double> flat(m * e.n_dims());
        e.sample(rng, m, flat.data());
        std::vector<std::vector<double>> out(m);
        for (std::size_t r = 0; r < m; ++r)
          out[r].assign(flat.begin() + static_cast<std::ptrdiff_t>(r * e.n_dims()),
                        flat.begin() + static_cast<std::ptrdiff_t>((r + 1) * e.n_dims()));
        return out;
      }, py::arg("m"), py::arg("seed") = 0, "m points drawn from the mixture (model coordinates).");
  m.def(
      "_tpe_models",
      [](const TPE& t, const kubetune::Study& s) {
        std::vector<kubetune::Trial> trials = s.trials();
        kubetune::Rng rng(0);
        kubetune::SearchContext ctx{s.space(), trials, s.directions(), rng};
        py::list out;
        for (auto& gm : kubetune::search::tpe_models(ctx, t.settings())) {
          py::dict d;
          d["params"] = gm.params;
          d["below"] = std::make_shared<ParzenEstimator>(std::move(gm.below));
          d["above"] = std::make_shared<ParzenEstimator>(std::move(gm.above));
          out.append(d);
        }
        return out;
      },
      py::arg("tpe"), py::arg("study"),
      "The l(x) / g(x) models the next ask of `tpe` would fit on `study`'s history, one dict per group.");
  // Every keyword comes from the C++ settings table (TPEConfig::settings_schema); the stubs are generated from it.
  static const nlohmann::json schema = TPEConfig::settings_schema();
  auto from_kwargs = [](const char* preset) {
    return [preset](const py::kwargs& kw) {
      nlohmann::json j = settings_from_kwargs(kw, schema, "TPE", "tpe");
      if (preset) j["preset"] = preset;
      return build_tpe(j);
    };
  };
  static const std::string doc = settings_docstring(kDoc, schema);
  py::class_<TPE, Searcher, std::shared_ptr<TPE>>(m, "TPE", doc.c_str())
      .def(py::init(from_kwargs(nullptr)), "Keyword arguments as listed in the class docstring (all optional).")
      .def_static("_settings_schema", [] { return schema_to_py(schema); }, "The settings table (for stubs, docs).")
      .def_static(
          "optuna", from_kwargs("optuna"),
          "Optuna's TPESampler algorithm: the defaults without candidate refinement (n_refine_candidates=0); "
          "keyword arguments override single settings.")
      .def_static(
          "hyperopt", from_kwargs("hyperopt"),
          "hyperopt's tpe.suggest preset (gamma 0.25 * sqrt(n) capped at 25, 20 startup trials, no refinement); "
          "keyword arguments override single settings.")
      .def_static(
          "from_katib",
          [](py::handle settings, bool multivariate) {
            nlohmann::json j = katib_settings(settings);
            if (multivariate && !j.contains("multivariate")) j["multivariate"] = true;
            return build_tpe(j);
          },
          py::arg("settings") = py::none(), py::arg("multivariate") = false,
          "From Katib algorithmSettings (dict or [{name, value}], values may be strings): n_startup_trials, "
          "n_ei_candidates, random_state (seed), gamma, prior_weight, ... multivariate=True for 'multivariate-tpe'.")
      .def("n_below", [](const TPE& t, std::size_t n) { return t.settings().n_below(n); }, py::arg("n"),
           "How many of n finished trials form the 'good' density l(x).")
      .def_property_readonly("multivariate", [](const TPE& t) { return t.settings().multivariate; })
      .def_property_readonly("n_startup_trials", [](const TPE& t) { return t.settings().n_startup_trials; })
      .def_property_readonly("n_ei_candidates", [](const TPE& t) { return t.settings().n_ei_candidates; })
      .def_property_readonly("n_refine_candidates", [](const TPE& t) { return t.settings().n_refine_candidates; });
}

}  // namespace kubetune::python
