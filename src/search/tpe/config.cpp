// TPEConfig: presets, validation, JSON (kubetune, Katib and hyperopt setting names), recency weights.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "kubetune/core/error.hpp"
#include "kubetune/core/settings.hpp"
#include "kubetune/search/tpe.hpp"

namespace kubetune::search {
namespace {
// ------------------------------------------------------------------ settings parsing (Katib sends strings)
double as_number(const nlohmann::json& v, const std::string& key) {
  return settings::parse_number(v, "tpe: setting '" + key + "'");
}

std::size_t as_count(const nlohmann::json& v, const std::string& key) {
  double d = as_number(v, key);
  KT_CHECK(std::isfinite(d) && d >= 0.0 && d == std::floor(d) && d < 1e15, InvalidArgument, "tpe: setting '", key,
           "' = ", v.dump(), " must be a non-negative integer");
  return static_cast<std::size_t>(d);
}

bool as_bool(const nlohmann::json& v, const std::string& key) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) {
    double d = v.get<double>();
    KT_CHECK(d == 0.0 || d == 1.0, InvalidArgument, "tpe: setting '", key, "' = ", v.dump(), " is not a boolean");
    return d == 1.0;
  }
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (s == "true" || s == "1" || s == "yes") return true;
    if (s == "false" || s == "0" || s == "no") return false;
  }
  KT_THROW(InvalidArgument, "tpe: setting '", key, "' = ", v.dump(), " is not a boolean");
}

std::string as_string(const nlohmann::json& v, const std::string& key) {
  KT_CHECK(v.is_string(), InvalidArgument, "tpe: setting '", key, "' = ", v.dump(), " must be a string");
  return v.get<std::string>();
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

void TPEConfig::validate() const {
  // Each ask scores every candidate against every kernel: beyond 10^6 an ask would take minutes (Optuna uses 24).
  KT_CHECK(n_ei_candidates >= 1 && n_ei_candidates <= 1'000'000, InvalidArgument, "tpe: n_ei_candidates = ",
           n_ei_candidates, " must be in [1, 1000000]");
  KT_CHECK(std::isfinite(gamma) && gamma > 0.0, InvalidArgument, "tpe: gamma = ", gamma, " must be > 0");
  KT_CHECK(std::isfinite(refine_scale) && refine_scale > 0.0, InvalidArgument, "tpe: refine_scale = ", refine_scale,
           " must be > 0");
  KT_CHECK(gamma_max >= 1, InvalidArgument, "tpe: gamma_max = ", gamma_max, " must be >= 1");
  KT_CHECK(std::isfinite(prior_weight) && prior_weight > 0.0, InvalidArgument, "tpe: prior_weight = ",
           prior_weight, " must be > 0");
}

nlohmann::json TPEConfig::to_json() const {
  nlohmann::json j;
  j["type"] = "tpe";
  j["n_startup_trials"] = n_startup_trials;
  j["n_ei_candidates"] = n_ei_candidates;
  j["n_refine_candidates"] = n_refine_candidates;
  j["refine_scale"] = refine_scale;
  j["gamma_rule"] = gamma_rule == GammaRule::Linear ? "linear" : "sqrt";
  j["gamma"] = gamma;
  j["gamma_max"] = gamma_max;
  j["prior_weight"] = prior_weight;
  j["consider_magic_clip"] = consider_magic_clip;
  j["consider_endpoints"] = consider_endpoints;
  j["n_flat_weights"] = n_flat_weights;
  j["multivariate"] = multivariate;
  j["bandwidth"] = bandwidth == ParzenBandwidth::Scott ? "scott" : "neighbour";
  j["group"] = group;
  j["constant_liar"] = constant_liar;
  j["random_state"] = random_state ? nlohmann::json(*random_state) : nlohmann::json(nullptr);
  j["n_threads"] = n_threads;
  return j;
}

TPEConfig TPEConfig::from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object() || j.is_null(), InvalidArgument, "tpe: config must be a JSON object, got ", j.dump());
  TPEConfig c;
  if (j.is_null()) return c;
  if (j.contains("preset")) {
    std::string p = as_string(j["preset"], "preset");
    if (p == "hyperopt") {
      c = hyperopt();
    } else {
      c = optuna();
      KT_CHECK(p == "optuna", InvalidArgument, "tpe: setting 'preset' = \"", p,
               "\" is unknown (expected \"optuna\" or \"hyperopt\")");
    }
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    if (k == "type" || k == "preset") continue;
    if (k == "n_startup_trials" || k == "n_startup_jobs") {
      c.n_startup_trials = as_count(v, k);
    } else if (k == "n_ei_candidates" || k == "n_EI_candidates") {
      c.n_ei_candidates = as_count(v, k);
    } else if (k == "n_refine_candidates") {
      c.n_refine_candidates = as_count(v, k);
    } else if (k == "refine_scale") {
      c.refine_scale = as_number(v, k);
    } else if (k == "gamma") {
      c.gamma = as_number(v, k);
    } else if (k == "gamma_rule") {
      std::string r = as_string(v, k);
      KT_CHECK(r == "linear" || r == "sqrt", InvalidArgument, "tpe: setting 'gamma_rule' = \"", r,
               "\" is unknown (expected \"linear\" or \"sqrt\")");
      c.gamma_rule = r == "linear" ? GammaRule::Linear : GammaRule::Sqrt;
    } else if (k == "gamma_max") {
      c.gamma_max = as_count(v, k);
    } else if (k == "prior_weight") {
      c.prior_weight = as_number(v, k);
    } else if (k == "consider_magic_clip") {
      c.consider_magic_clip = as_bool(v, k);
    } else if (k == "consider_endpoints") {
      c.consider_endpoints = as_bool(v, k);
    } else if (k == "n_flat_weights" || k == "linear_forgetting") {
      c.n_flat_weights = as_count(v, k);
    } else if (k == "multivariate") {
      c.multivariate = as_bool(v, k);
    } else if (k == "bandwidth") {
      std::string b = as_string(v, k);
      KT_CHECK(b == "neighbour" || b == "scott", InvalidArgument, "tpe: setting 'bandwidth' = \"", b,
               "\" is unknown (expected \"neighbour\" or \"scott\")");
      c.bandwidth = b == "scott" ? ParzenBandwidth::Scott : ParzenBandwidth::Neighbour;
    } else if (k == "group") {
      c.group = as_bool(v, k);
    } else if (k == "constant_liar") {
      c.constant_liar = as_bool(v, k);
    } else if (k == "random_state" || k == "seed") {
      if (v.is_null()) {
        c.random_state.reset();
      } else {
        double d = as_number(v, k);
        KT_CHECK(std::isfinite(d) && d >= 0.0 && d == std::floor(d) && d < 1.8e19, InvalidArgument,
                 "tpe: setting '", k, "' = ", v.dump(), " must be a non-negative integer");
        c.random_state = v.is_number_unsigned() ? v.get<std::uint64_t>() : static_cast<std::uint64_t>(d);
      }
    } else if (k == "n_threads") {
      double d = as_number(v, k);
      KT_CHECK(d == std::floor(d) && std::abs(d) < 1e6, InvalidArgument, "tpe: setting 'n_threads' = ", v.dump(),
               " must be an integer");
      c.n_threads = static_cast<int>(d);
    } else {
      KT_THROW(InvalidArgument, "tpe: unknown setting '", k,
               "' (known: n_startup_trials, n_ei_candidates, n_refine_candidates, refine_scale, gamma, gamma_rule, "
               "gamma_max, prior_weight, consider_magic_clip, consider_endpoints, n_flat_weights, multivariate, "
               "bandwidth, group, constant_liar, random_state, n_threads, preset)");
    }
  }
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
