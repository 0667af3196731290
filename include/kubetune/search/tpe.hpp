// Tree-structured Parzen Estimator searcher: univariate, multivariate and group-decomposed TPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/parzen.hpp"

namespace kubetune::search {

using ParzenBandwidth = ParzenOptions::Bandwidth;

/// TPE settings. Defaults are Optuna's TPESampler settings plus kubetune's candidate refinement
/// (n_refine_candidates); `optuna()` turns the refinement off (Optuna's algorithm exactly), `hyperopt()` gives
/// hyperopt's (tpe.suggest).
struct TPEConfig {
  /// How many "good" observations l(x) is fitted on, out of n finished (complete + pruned) trials.
  enum class GammaRule {
    Linear,  ///< min(ceil(gamma * n), gamma_max)        (Optuna default_gamma: gamma 0.1, max 25)
    Sqrt,    ///< min(ceil(gamma * sqrt(n)), gamma_max)  (hyperopt: gamma 0.25, max 25)
  };
  std::size_t n_startup_trials = 10;  ///< random draws from the priors before the model starts
  std::size_t n_ei_candidates = 24;   ///< candidates drawn from l(x) and ranked by l(x) / g(x)
  /// Candidate refinement of joint models (kubetune; multivariate only, univariate asks ignore it; 0 = off, as
  /// Optuna and hyperopt): this many more candidates drawn around the incumbent (the best trial of l(x)'s
  /// set), from a normal with refine_scale times the widths of its l(x) kernel (categorical values kept),
  /// ranked by the same ratio as the n_ei_candidates; the best of all is proposed. A local search of
  /// l(x) / g(x) around the best point, as SMAC's acquisition optimiser does: see docs/tpe.md for what it
  /// buys and costs.
  std::size_t n_refine_candidates = 8;
  double refine_scale = 0.25;
  GammaRule gamma_rule = GammaRule::Linear;
  double gamma = 0.1;
  std::size_t gamma_max = 25;
  double prior_weight = 1.0;
  bool consider_magic_clip = true;
  bool consider_endpoints = false;
  /// Recency weights (Optuna default_weights, hyperopt linear_forgetting): the newest `n_flat_weights`
  /// observations weigh 1, older ones ramp linearly from 1/n up to 1. 0 = all weights 1.
  std::size_t n_flat_weights = 25;
  /// Joint (product-kernel) density over parameters instead of one density per parameter.
  bool multivariate = false;
  /// Kernel widths: neighbour distances (Optuna 5.x, univariate and multivariate) or, for multivariate,
  /// Scott's rule as Optuna 4.x's multivariate TPE ("scott").
  ParzenBandwidth bandwidth = ParzenBandwidth::Neighbour;
  /// With multivariate: split the space into groups of parameters that are always active together
  /// (conditional spaces), each modelled jointly on the trials where it is active. false: conditional
  /// parameters fall back to univariate models (Optuna's multivariate without group).
  bool group = true;
  /// Running / enqueued trials (and earlier points of the same batch) join g(x) as bad observations.
  bool constant_liar = true;
  /// Setting "seed" (Katib's random_state, accepted as an alias): when set, mixed into each ask's random stream
  /// (results still depend on the study seed too, so a study stays reproducible).
  std::optional<std::uint64_t> seed;
  /// Threads for candidate scoring (<= 0: hardware threads); results do not depend on it.
  int n_threads = 1;

  /// Optuna's TPESampler: the defaults without candidate refinement.
  static TPEConfig optuna();
  /// hyperopt preset: gamma 0.25 * sqrt(n) (cap 25), 20 startup trials, 24 candidates, prior weight 1, no refinement.
  static TPEConfig hyperopt();
  /// Number of "below" observations for n finished trials.
  std::size_t n_below(std::size_t n) const;
  /// Throws InvalidArgument naming the first bad field.
  void validate() const;

  /// {"type": "tpe", ...}: every setting is declared once in src/search/tpe/config.cpp's table. from_json accepts
  /// the kubetune names, Katib's / hyperopt's aliases (n_startup_jobs, n_EI_candidates, random_state for seed,
  /// linear_forgetting) and "preset": "optuna" | "hyperopt" (the preset first, then the other keys). Values may be
  /// Katib's strings ("10", "true"); unknown keys and out-of-range values throw InvalidArgument naming them.
  nlohmann::json to_json() const;
  static TPEConfig from_json(const nlohmann::json& j);
  /// The settings table as data (name, type, default, range, aliases, doc) for the bindings and stubs.
  static nlohmann::json settings_schema();
};

/// Optuna's default_weights(n) / hyperopt's linear forgetting: writes n weights, oldest first.
void tpe_recency_weights(std::size_t n, std::size_t n_flat, double* out);

/// The split TPE fits on, as indices into ctx.trials in id order: `below` holds the best n_below(n) complete
/// trials, topped up with pruned ones (deepest step first, then last intermediate value); `above` the other
/// finished trials plus, with constant_liar, running and enqueued ones. Failed trials are in neither.
/// Returns n, the number of finished (complete + pruned) trials.
std::size_t tpe_split(const SearchContext& ctx, const TPEConfig& cfg, std::vector<std::size_t>& below,
                      std::vector<std::size_t>& above);

/// One group of parameters and the two densities an ask fits for it, in model coordinates (log for
/// log-scaled parameters, the index for ordered lists and categories). For inspection and differential tests.
struct TPEGroupModel {
  std::vector<std::size_t> params;  ///< parameter indices, space order
  ParzenEstimator below, above;     ///< l(x) and g(x)
};
/// The models the next ask would fit on ctx's history (before any in-batch constant liar), one per group.
/// Empty while fewer than n_startup_trials trials are finished.
std::vector<TPEGroupModel> tpe_models(const SearchContext& ctx, const TPEConfig& cfg);

namespace detail {
struct TPEWorkspace;
}

/// Tree-structured Parzen Estimator. Bergstra, Bardenet, Bengio & Kégl, "Algorithms for Hyper-Parameter
/// Optimization", NeurIPS 2011 (univariate TPE); Falkner, Klein & Hutter, "BOHB", ICML 2018 (multivariate
/// kernel); Watanabe, "Tree-Structured Parzen Estimator: Understanding Its Algorithm Components and Their
/// Roles for Better Empirical Performance", 2023. Defaults as in Optuna's TPESampler, plus candidate refinement.
///
/// - Finished trials are split: the best n_below(n) complete ones form l(x) — topped up with pruned
///   ones ranked by deepest step, then last intermediate value (Optuna's rule) — and the rest form g(x).
///   Failed trials are ignored; running / enqueued ones are constant liars in g(x).
/// - Each ask draws n_ei_candidates from l(x) and keeps the one with the largest log l(x) - log g(x); with
///   multivariate and n_refine_candidates > 0 it also draws that many around the incumbent (narrower
///   kernel) and keeps the best of all.
/// - Log-scaled parameters are modelled in log space, int / stepped ones as discrete (bin masses),
///   ordered lists by index, categories with smoothed indicator kernels; the prior kernel follows the
///   space's prior (Normal / LogNormal mu, sigma).
/// - Conditional spaces: inactive parameters are never imputed; each parameter (or group) is modelled only
///   on trials where it is active.
/// Stateless beyond its config (buffers are reused between asks but never change results).
class TPE final : public Searcher {
 public:
  TPE();
  explicit TPE(TPEConfig c);
  ~TPE() override;
  TPE(const TPE&) = delete;
  TPE& operator=(const TPE&) = delete;
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);

  std::string type() const override { return "tpe"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;
  const TPEConfig& settings() const noexcept { return cfg_; }

 private:
  TPEConfig cfg_;
  std::unique_ptr<detail::TPEWorkspace> ws_;
};

}  // namespace kubetune::search
