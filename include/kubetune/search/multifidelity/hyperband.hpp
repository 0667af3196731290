// Hyperband (and synchronous successive halving): exact bracket arithmetic and a stateless searcher.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"

namespace kubetune::search {

/// How bracket sizes and budgets are computed.
/// - Exact: Li et al., "Hyperband: A Novel Bandit-Based Approach to Hyperparameter Optimization", JMLR 18
///   (2018), Algorithm 1, in exact integer arithmetic: s_max = largest s with min*eta^s <= max,
///   n = ceil((s_max+1)/(s+1) * eta^s), n_i = floor(n * eta^-i), r_i = max * eta^(i-s).
/// - Katib: kubeflow/katib pkg/suggestion/v1beta1/hyperband/service.py: s_max = int(log(r_l)/log(eta)) in
///   floating point (so R = 243, eta = 3 gives 4, not 5), budgets truncated to integers
///   (r = int(r_l * eta^-s), r_i = int(r * eta^i)) and rung sizes rounded up: n_{i+1} = ceil(ceil(n*eta^-i)/eta).
/// - HpBandSter: automl/HpBandSter hyperband.py/bohb.py: max_SH_iter = -int(log(min/max)/log(eta)) + 1,
///   n_0 = floor((s_max+1)/(s+1)) * eta^s (the ratio is floored first), n_i = max(floor(n_0 eta^-i), 1),
///   budgets max * eta^-k.
enum class BracketMode { Exact, Katib, HpBandSter };
std::string to_string(BracketMode m);
BracketMode bracket_mode_from_string(const std::string& s);

/// One rung of a bracket: `n` configurations trained with `resource` each.
struct Rung {
  std::int64_t n = 0;
  double resource = 0.0;
};

/// One successive-halving bracket (s = number of halvings; rungs.size() == s + 1).
struct Bracket {
  int s = 0;
  std::vector<Rung> rungs;
  /// Distinct configurations started (rung 0 size).
  std::int64_t configs() const noexcept { return rungs.empty() ? 0 : rungs[0].n; }
  /// Sum of n_i * r_i (every rung trained from scratch, as in the paper's budget accounting).
  double total_resource() const noexcept;
};

/// s_max for the mode (see BracketMode). Throws InvalidArgument on bad max/min/eta.
int hyperband_s_max(double max_resource, int eta, BracketMode mode = BracketMode::Exact, double min_resource = 1.0);
/// The brackets of one Hyperband iteration in run order (s = s_max first).
std::vector<Bracket> hyperband_brackets(double max_resource, int eta, BracketMode mode = BracketMode::Exact,
                                        double min_resource = 1.0);

/// Hyperband as a Searcher. Each ask returns the next (configuration, budget) to run: a fresh random
/// configuration for a bracket's first rung, or a promotion — the same point with only the resource
/// parameter raised — once every trial of the rung below has finished (the best floor(n_i/eta) by objective 0
/// go up; failed and pruned trials never do). Brackets run to completion across any number of workers; when
/// the open brackets wait for stragglers the next bracket starts (brackets are independent, paper §3), and
/// only when every bracket has started and all wait does ask return fewer suggestions ("nothing to run now";
/// progress() tells it apart from "finished"). The resource is written into `resource_name` (an Int or Double
/// parameter of the space). Stateless: bracket, rung and configuration id live in each trial's system_attrs
/// (hb_bracket, hb_s, hb_rung, hb_config, hb_resource), so a reloaded study continues bit for bit.
/// Synchronous successive halving (Jamieson & Talwalkar, AISTATS 2016) is `bracket = s`: only that bracket.
class Hyperband : public Searcher {
 public:
  struct Config {
    std::string resource_name;   ///< parameter that receives the budget (Katib: resource_name)
    double max_resource = 81.0;  ///< R (Katib: r_l)
    double min_resource = 1.0;   ///< smallest budget unit (Hyperband's R is max/min)
    int eta = 3;                 ///< reduction factor (>= 2)
    BracketMode mode = BracketMode::Exact;
    std::int64_t n_iterations = 1;  ///< outer Hyperband loops; 0 = repeat forever
    int bracket = -1;               ///< -1: all brackets; s: successive halving with that bracket only
  };
  /// Where a study stands (computed from its trials).
  struct Progress {
    std::int64_t brackets_total = 0;  ///< 0 = unlimited
    std::int64_t brackets_started = 0;
    std::int64_t brackets_finished = 0;
    std::int64_t running = 0;  ///< trials of this searcher not finished yet
    std::int64_t ready = 0;    ///< suggestions available now in started brackets
    bool finished = false;     ///< every bracket done: ask returns nothing, ever
    bool waiting = false;      ///< nothing to run now, but running trials will unlock more
  };

  explicit Hyperband(Config c);
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, aliases, doc.
  static nlohmann::json settings_schema();
  /// Parse kubetune / Katib names (values may be strings); `what` names the searcher in errors.
  static Config parse_config(const nlohmann::json& j, const std::string& what);

  std::string type() const override { return "hyperband"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;
  void check_space(const SearchSpace& space) const override;

  const Config& settings() const noexcept { return cfg_; }
  /// Brackets of one iteration in run order (only `bracket` when set).
  const std::vector<Bracket>& brackets() const noexcept { return table_; }
  Progress progress(const SearchSpace& space, const std::vector<Trial>& trials) const;

 protected:
  /// Fresh configurations for a first rung (resource entry is overwritten by the caller). Default: priors.
  virtual std::vector<double> sample_config(const SearchContext& ctx);
  /// Called once per ask before any sample_config (BOHB fits its model here).
  virtual void prepare(const SearchContext& ctx) { (void)ctx; }
  nlohmann::json base_config() const;

 private:
  Config cfg_;
  std::vector<Bracket> table_;
};

}  // namespace kubetune::search
