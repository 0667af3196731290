// Submodule kubetune._kubetune._katib_stopping: Katib early-stopping rules (kubetune/core/katib_stopping.hpp)
// over plain Python values: settings as [(name, value)], trials as [(name, [metric value strings])].
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/katib_stopping.hpp"

namespace kubetune::python {
namespace {
namespace kk = kubetune::katib;
using TrialList = std::vector<std::pair<std::string, std::vector<std::string>>>;

#ifdef KT_HAVE_MULTIFIDELITY
py::dict settings_to_py(const kk::StoppingSettings& s) {
  py::dict d;
  d["algorithm"] = s.algorithm;
  d["min_trials_required"] = s.min_trials_required;
  d["start_step"] = s.start_step;
  if (s.algorithm == "medianstop") d["rule"] = s.rule;
  if (s.algorithm == "percentile") d["percentile"] = s.percentile;
  return d;
}

py::dict request_to_py(const kk::RulesRequest& r) {
  py::dict d;
  d["settings"] = settings_to_py(r.settings);
  d["metric_name"] = r.metric_name;
  d["direction"] = to_string(r.direction);
  return d;
}

py::dict rules_to_py(const kk::StoppingRules& r) {
  py::list rules;
  for (const auto& rule : r.rules) {
    py::dict d;
    d["name"] = rule.metric_name;
    d["value"] = rule.value;
    d["value_text"] = rule.value_text;
    d["comparison"] = kk::to_string(rule.comparison);
    d["start_step"] = rule.start_step;
    rules.append(d);
  }
  py::dict d;
  d["rules"] = rules;
  d["trials_counted"] = r.trials_counted;
  d["trials_ignored"] = r.trials_ignored;
  d["values_skipped"] = r.values_skipped;
  return d;
}

std::vector<kk::TrialMetricLog> to_logs(const TrialList& trials) {
  std::vector<kk::TrialMetricLog> logs;
  logs.reserve(trials.size());
  for (const auto& [name, values] : trials) logs.push_back({name, values});
  return logs;
}
#endif

}  // namespace

void bind_katib_stopping(py::module_& m) {
  py::module_ k = m.def_submodule("_katib_stopping", "Katib early-stopping rules (used by kubetune.katib)");
#ifdef KT_HAVE_MULTIFIDELITY
  k.def("algorithms", &kk::stopping_algorithms, "Accepted EarlyStoppingSpec.algorithm_name values.");
  k.def(
      "validate_settings",
      [](const std::string& algorithm_name, const kk::SettingList& settings) {
        return settings_to_py(kk::parse_stopping_settings(algorithm_name, settings));
      },
      py::arg("algorithm_name"), py::arg("settings"),
      "Parsed settings as a dict; ValueError naming the algorithm or the setting and value.");
  k.def(
      "parse_rules_request",
      [](const std::string& algorithm_name, const kk::SettingList& settings, const std::string& metric_name,
         const std::string& objective_type) {
        return request_to_py(kk::parse_rules_request(algorithm_name, settings, metric_name, objective_type));
      },
      py::arg("algorithm_name"), py::arg("settings"), py::arg("metric_name"), py::arg("objective_type"),
      "Validates a GetEarlyStoppingRules request (everything but the logs); returns it as a dict.");
  k.def(
      "stopping_rules",
      [](const std::string& algorithm_name, const kk::SettingList& settings, const std::string& metric_name,
         const std::string& objective_type, const TrialList& trials) {
        const auto request = kk::parse_rules_request(algorithm_name, settings, metric_name, objective_type);
        return rules_to_py(kk::stopping_rules(request, to_logs(trials)));
      },
      py::arg("algorithm_name"), py::arg("settings"), py::arg("metric_name"), py::arg("objective_type"),
      py::arg("trials"),
      "Rules from succeeded trials [(name, [metric values])]: {'rules', 'trials_counted', 'trials_ignored', "
      "'values_skipped'}.");
#else
  // The rule maths live in the multifidelity module; a build without it keeps the names but cannot run them.
  for (const char* name : {"algorithms", "validate_settings", "parse_rules_request", "stopping_rules"}) {
    k.def(name, [](const py::args&, const py::kwargs&) -> py::object {
      KT_THROW(Unsupported, "Katib early stopping needs kubetune built with the multifidelity module");
    });
  }
#endif
}

}  // namespace kubetune::python
