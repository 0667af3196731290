// TPEConfig: its settings table (JSON with kubetune, Katib and hyperopt names, validation), presets, recency weights.
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/search/tpe.hpp"

namespace kubetune::search {
namespace {
// Every TPE setting, once: JSON (kubetune, Katib's and hyperopt's names), validation, Python keywords, stubs.
const settings::Fields<TPEConfig>& table() {
  static const settings::Fields<TPEConfig> t =
      settings::Fields<TPEConfig>("tpe")
          .field<&TPEConfig::n_startup_trials>("n_startup_trials", "Random draws from the priors before the model starts.")
          .alias("n_startup_jobs")
          .field<&TPEConfig::n_ei_candidates>("n_ei_candidates", "Candidates drawn from l(x) and ranked by l(x) / g(x).")
          .alias("n_EI_candidates")
          // Each ask scores every candidate against every kernel: beyond 10^6 an ask would take minutes.
          .range(1, 1'000'000)
          .field<&TPEConfig::n_refine_candidates>(
              "n_refine_candidates",
              "Multivariate only: more candidates drawn around the incumbent and ranked the same way (0 = off).")
          .field<&TPEConfig::refine_scale>("refine_scale", "Width of the refinement draws, times the incumbent's kernel widths.")
          .above(0)
          .choice<&TPEConfig::gamma_rule>("gamma_rule", {"linear", "sqrt"},
                                          "Good-set size rule: min(ceil(gamma n), gamma_max) or with sqrt(n).")
          .field<&TPEConfig::gamma>("gamma", "Good-set fraction in the gamma rule.")
          .above(0)
          .field<&TPEConfig::gamma_max>("gamma_max", "Cap on the good-set size.")
          .at_least(1)
          .field<&TPEConfig::prior_weight>("prior_weight", "Weight of the prior kernel in both densities.")
          .above(0)
          .field<&TPEConfig::consider_magic_clip>("consider_magic_clip", "Lower-bound kernel widths (hyperopt's magic clip).")
          .field<&TPEConfig::consider_endpoints>("consider_endpoints", "Neighbour widths also measure to the bounds.")
          .field<&TPEConfig::n_flat_weights>("n_flat_weights", "Newest observations weighing 1; older ones ramp up from 1/n (0 = all 1).")
          .alias("linear_forgetting")
          .field<&TPEConfig::multivariate>("multivariate", "One joint density over the parameters instead of one each.")
          .choice<&TPEConfig::bandwidth>("bandwidth", {"neighbour", "scott"},
                                         "Kernel widths: neighbour distances, or Scott's rule (multivariate).")
          .field<&TPEConfig::group>("group", "Multivariate: model groups of parameters that are active together.")
          .field<&TPEConfig::constant_liar>("constant_liar", "Running trials join g(x) as bad observations.")
          .field<&TPEConfig::seed>("seed", "Extra seed mixed into each ask's stream (None: the study's alone).")
          .alias("random_state")
          .field<&TPEConfig::n_threads>("n_threads", "Threads for candidate scoring (<= 0: hardware threads).")
          .extra("preset");
  return t;
}
}  // namespace

// ------------------------------------------------------------------ config
TPEConfig TPEConfig::optuna() {
  TPEConfig c;
  c.n_refine_candidates = 0;
  return c;
}

TPEConfig TPEConfig::hyperopt() {
  TPEConfig c = optuna();
  c.n_startup_trials = 20;
  c.n_ei_candidates = 24;
  c.gamma_rule = GammaRule::Sqrt;
  c.gamma = 0.25;
  c.gamma_max = 25;
  c.prior_weight = 1.0;
  return c;
}

std::size_t TPEConfig::n_below(std::size_t n) const {
  double x = static_cast<double>(n);
  double v = gamma_rule == GammaRule::Linear ? std::ceil(gamma * x) : std::ceil(gamma * std::sqrt(x));
  return std::min<std::size_t>(static_cast<std::size_t>(std::max(v, 0.0)), gamma_max);
}

void TPEConfig::validate() const { table().check(*this); }

nlohmann::json TPEConfig::settings_schema() { return table().schema(); }

nlohmann::json TPEConfig::to_json() const {
  nlohmann::json j = table().to_json(*this);
  j["type"] = "tpe";
  return j;
}

TPEConfig TPEConfig::from_json(const nlohmann::json& j) {
  TPEConfig c;
  if (j.is_object() && j.contains("preset")) {
    const nlohmann::json& p = j["preset"];
    KT_CHECK(p.is_string() && (p == "optuna" || p == "hyperopt"), InvalidArgument, "tpe: setting 'preset' = ",
             p.dump(), " is unknown (expected \"optuna\" or \"hyperopt\")");
    c = p == "hyperopt" ? hyperopt() : optuna();
  }
  c = table().from_json(j, c);
  c.validate();
  return c;
}

void tpe_recency_weights(std::size_t n, std::size_t n_flat, double* out) {
  // Optuna default_weights: n < 25 -> ones; else linspace(1/n, 1, n - 25) followed by 25 ones.
  if (n_flat == 0 || n < n_flat) {
    std::fill(out, out + n, 1.0);
    return;
  }
  const std::size_t ramp = n - n_flat;
  const double lo = 1.0 / static_cast<double>(n);
  for (std::size_t i = 0; i < ramp; ++i)
    out[i] = ramp == 1 ? lo : lo + (1.0 - lo) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  std::fill(out + ramp, out + n, 1.0);
}


}  // namespace kubetune::search
