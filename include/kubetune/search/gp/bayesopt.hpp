// GP Bayesian optimisation searcher ("gp", Katib's "bayesianoptimization"): fit, acquire, batch by fantasies.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/gp/acquisition.hpp"
#include "kubetune/search/gp/gp.hpp"
#include "kubetune/search/gp/kernel.hpp"

namespace kubetune::search::gp {

/// How running trials and earlier members of a batch are fantasised (Ginsbourger, Le Riche & Carraro,
/// "Kriging is well-suited to parallelize optimization", 2010): kriging believer (posterior mean) or a
/// constant liar (min / mean / max of the observed losses).
enum class Fantasy { Believer, LiarMin, LiarMean, LiarMax };
std::string to_string(Fantasy f);
Fantasy fantasy_from_string(const std::string& s);

/// Amortised refit schedule: with n complete trials and hyperparameters last fitted at n_fit, refit when
/// n >= n_fit + max(1, floor(n_fit / refit_scale)) (geometric growth by ~1/refit_scale), when n < n_fit, or
/// always when refit_scale <= 0. Between refits the hyperparameters are reused and only the factorisation
/// is updated.
bool refit_due(std::size_t n, std::size_t n_fit, int refit_scale);

/// Runtime configuration; every setting is declared once in src/search/gp/bayesopt.cpp's table, which gives the
/// JSON round trip (kubetune names and Katib's), validation and the Python keywords. Aliases: "threads" for
/// "n_threads" (deprecated in Python), Katib's "random_state" for "seed".
struct GPConfig {
  KernelType kernel = KernelType::Matern52;
  AcqType acq = AcqType::LogEI;
  int n_initial_points = 10;     ///< random points before the model is used (Katib/skopt default 10)
  double xi = 0.0;               ///< EI/PI margin (skopt uses 0.01)
  double kappa = 1.96;           ///< LCB width (skopt default)
  int n_candidates = 512;        ///< random + local candidates scored per proposal
  int n_refine = 3;              ///< best candidates refined by L-BFGS-B (0 = sampling only)
  HyperPrior prior = HyperPrior::Optuna;
  int n_hyper_restarts = 2;      ///< random restarts of the likelihood fit
  bool warm_start = true;        ///< start the fit from the hyperparameters stored on the last GP trial
  bool deterministic = false;    ///< noise-free objective: noise fixed to a 1e-6 nugget (as Optuna)
  Fantasy fantasy = Fantasy::Believer;
  int max_enumeration = 64;      ///< categorical combinations enumerated exactly up to this count
  int refit_scale = 10;          ///< hyperparameters fitted at n_fit complete trials are reused until the
                                 ///< history has grown by max(1, n_fit / refit_scale) (see refit_due);
                                 ///< 0 = refit on every ask
  int max_fit_points = 400;      ///< hyperparameters fitted on at most this many points (best half +
                                 ///< most recent); the posterior always uses every point. 0 = no cap
  int n_threads = 0;             ///< OpenMP threads over candidates (<= 0: all)
  std::optional<std::uint64_t> seed;  ///< extra seed mixed into the study's stream (Katib/skopt)
};

/// Bayesian optimisation with a GP surrogate (Snoek, Larochelle & Adams, "Practical Bayesian Optimization
/// of Machine Learning Algorithms", NeurIPS 2012; Matérn-5/2 ARD as there). Each ask: fit the GP on the
/// complete trials (unit-cube inputs, log parameters in log space, categoricals one-hot), fantasise running
/// trials, then for each of the n points maximise the acquisition over random + local candidates, refine the
/// best few by L-BFGS-B, round the relaxation onto legal values, and fantasise it (rank-1 update).
/// Stateless beyond config(): the previous hyperparameters used for warm starts are stored in each
/// suggestion's attrs ("gp_theta_<j>") and read back from the history.
class GPSearcher final : public Searcher {
 public:
  GPSearcher();
  explicit GPSearcher(GPConfig c);
  /// Accepts kubetune keys and Katib's (base_estimator, n_initial_points, acq_func, acq_optimizer,
  /// random_state), values as numbers or strings. Unknown keys and out-of-range values -> InvalidArgument
  /// naming the key; the constructor checks the same ranges on a GPConfig built in C++.
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  static GPConfig config_from_json(const nlohmann::json& j);
  /// The settings table as data (name, type, default, range, aliases, doc) for the bindings and stubs.
  static nlohmann::json settings_schema();

  std::string type() const override { return "gp"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;
  void check_space(const SearchSpace& space) const override;
  const GPConfig& settings() const noexcept { return cfg_; }

 private:
  struct Cache;  // the last ask's factorisation, reused only where bit-identical (see ask())
  GPConfig cfg_;
  std::shared_ptr<Cache> cache_;
};

}  // namespace kubetune::search::gp
