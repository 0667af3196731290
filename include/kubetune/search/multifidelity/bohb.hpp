// BOHB: Hyperband's brackets with a multivariate KDE model (good/bad densities) proposing new configurations.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kubetune/search/multifidelity/hyperband.hpp"

namespace kubetune::search {

namespace mf_detail {
struct KdePair;
}

/// Falkner, Klein & Hutter, "BOHB: Robust and Efficient Hyperparameter Optimization at Scale", ICML 2018.
/// Brackets, promotions and attributes exactly as Hyperband (same `mode` options). A bracket's new
/// configurations come, with probability 1 - random_fraction, from the model of the largest budget that has
/// enough completed observations: the best top_n_percent (at least min_points_in_model = d + 1) form l(x),
/// the rest (same minimum) g(x); both are product kernels — Gaussian on the unit-scaled value of Double,
/// Int and Discrete parameters, Aitchison–Aitken on Categorical ones — with statsmodels' normal-reference
/// bandwidths clipped below at min_bandwidth. num_samples candidates are drawn from l with bandwidths
/// multiplied by bandwidth_factor (truncated to [0, 1]) and the one minimising g/l is returned. Inactive
/// (conditional) values are imputed from other observations as HpBandSter does. Defaults are the paper's /
/// HpBandSter's: 15 %, 64 samples, factor 3, 1e-3, random fraction 1/3. The model is refitted from the trials
/// on every ask (no hidden state). Unlike Hyperband, n_iterations defaults to 0 (repeat brackets forever).
class BOHB final : public Hyperband {
 public:
  struct Options {
    double top_n_percent = 15.0;
    int num_samples = 64;
    double random_fraction = 1.0 / 3.0;
    double bandwidth_factor = 3.0;
    double min_bandwidth = 1e-3;
    int min_points_in_model = 0;  ///< 0 = d + 1 (d = parameters other than the resource)
  };
  BOHB(Config c, Options o);
  ~BOHB() override;
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  std::string type() const override { return "bohb"; }
  nlohmann::json config() const override;
  const Options& options() const noexcept { return opt_; }

 protected:
  void prepare(const SearchContext& ctx) override;
  std::vector<double> sample_config(const SearchContext& ctx) override;

 private:
  Options opt_;
  std::unique_ptr<mf_detail::KdePair> model_;  // per-ask cache, rebuilt from ctx.trials in prepare()
};

}  // namespace kubetune::search
