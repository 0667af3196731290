// ASHA: asynchronous successive halving as a pruner (rung decisions on reports) and as a searcher.
#include "kubetune/search/multifidelity/asha.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"
#include "schedule.hpp"
#include "config_json.hpp"
#include "settings.hpp"

namespace kubetune::search {
namespace {
namespace md = mf_detail;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Value at the first reported step >= budget, if any.
bool rung_value(const Trial& t, double budget, double* v) {
  const auto& iv = t.intermediate;  // ascending steps
  if (iv.empty() || static_cast<double>(iv.back().first) < budget) return false;
  auto it = std::lower_bound(iv.begin(), iv.end(), budget,
                             [](const auto& p, double b) { return static_cast<double>(p.first) < b; });
  *v = it->second;
  return true;
}

// The rung settings, shared by the ASHA pruner, the ASHA searcher (nested) and named after their owner.
settings::Fields<ASHARungs> rung_fields(const std::string& what) {
  return settings::Fields<ASHARungs>(what)
      .field<&ASHARungs::min_resource>("min_resource", "Budget of the first rung (before eta^min_early_stopping_rate).")
      .alias("r_min")
      .field<&ASHARungs::max_resource>("max_resource", "Rungs at or above this budget are not checked (0 = no bound).")
      .alias("r_l")
      .alias("R")
      .field<&ASHARungs::eta>("eta", "Reduction factor: the best 1/eta of a rung continue.")
      .alias("reduction_factor")
      .field<&ASHARungs::min_early_stopping_rate>("min_early_stopping_rate", "Rungs start at min_resource * eta^s.")
      .alias("s");
}

const settings::Fields<ASHARungs>& pruner_table() {
  static const settings::Fields<ASHARungs> t = rung_fields("asha pruner");
  return t;
}

const settings::Fields<ASHA::Config>& asha_table() {
  using C = ASHA::Config;
  static const settings::Fields<C> t =
      settings::Fields<C>("asha")
          .nest<&C::rungs>(rung_fields("asha"))
          .field<&C::resource_name>("resource_name", "Parameter that receives the budget (needed by mode promote).")
          .choice<&C::promote>("mode", {"prune", "promote"},
                               "prune: trials run to max_resource and are stopped at rungs; promote: ask promotes.")
          .field<&C::max_configs>("max_configs", "New configurations at most (0 = unlimited).");
  return t;
}

struct HyperbandPrunerFields {
  using C = HyperbandPruner::Config;
  static const settings::Fields<C>& table() {
    static const settings::Fields<C> t =
        settings::Fields<C>("hyperband pruner")
            .field<&C::min_resource>("min_resource", "Smallest budget.")
            .alias("r_min")
            .field<&C::max_resource>("max_resource", "Largest budget (> 0).")
            .alias("r_l")
            .alias("R")
            .field<&C::eta>("eta", "Reduction factor.")
            .alias("reduction_factor")
            .choice<&C::optuna_brackets>("mode", {"exact", "optuna"},
                                         "Bracket count: exact s_max + 1, or Optuna's float floor(log(max/min)/log(eta)) + 1.");
    return t;
  }
};
}  // namespace

void ASHARungs::validate(const std::string& who) const {
  KT_CHECK(std::isfinite(min_resource) && min_resource > 0, InvalidArgument, who, ": setting 'min_resource' = ",
           min_resource, " must be > 0");
  KT_CHECK(std::isfinite(max_resource) && max_resource >= 0, InvalidArgument, who, ": setting 'max_resource' = ",
           max_resource, " must be >= 0 (0 = unbounded)");
  KT_CHECK(max_resource == 0 || max_resource >= min_resource, InvalidArgument, who, ": setting 'max_resource' = ",
           max_resource, " must be >= min_resource = ", min_resource);
  KT_CHECK(eta >= 2 && eta <= 1000, InvalidArgument, who, ": setting 'eta' = ", eta, " must be in [2, 1000]");
  KT_CHECK(min_early_stopping_rate >= 0 && min_early_stopping_rate <= 60, InvalidArgument, who,
           ": setting 'min_early_stopping_rate' = ", min_early_stopping_rate, " must be in [0, 60]");
}

std::vector<double> ASHARungs::budgets() const {
  std::vector<double> out;
  double r = min_resource * std::pow(static_cast<double>(eta), min_early_stopping_rate);
  while (out.size() < 64 && (max_resource == 0 || r < max_resource * (1 - 1e-12))) {
    out.push_back(r);
    r *= eta;
  }
  return out;
}

// --------------------------------------------------------------------------------------------- pruner

ASHAPruner::ASHAPruner(ASHARungs r) : r_(r) { r_.validate("asha"); }

std::unique_ptr<Pruner> ASHAPruner::from_json(const nlohmann::json& j) {
  return std::make_unique<ASHAPruner>(md::config_from_json(pruner_table(), j, "asha pruner"));
}

nlohmann::json ASHAPruner::settings_schema() { return pruner_table().schema(); }

nlohmann::json ASHAPruner::config() const {
  return md::config_to_json(pruner_table(), r_, type());
}

bool ASHAPruner::should_prune(const SearchContext& ctx, const Trial& trial) {
  return asha_rung_prune(ctx, trial, r_, nullptr);
}

bool asha_rung_prune(const SearchContext& ctx, const Trial& trial, const ASHARungs& r,
                     const std::function<bool(const Trial&)>& competes) {
  const auto& iv = trial.intermediate;
  if (iv.empty()) return false;
  const double last = static_cast<double>(iv.back().first);
  const double prev = iv.size() >= 2 ? static_cast<double>(iv[iv.size() - 2].first)
                                     : -std::numeric_limits<double>::infinity();
  // The highest rung crossed by the latest report (each rung is decided once, when it is crossed).
  double budget = kNaN;
  for (double b : r.budgets())
    if (prev < b && b <= last) budget = b;
  if (std::isnan(budget)) return false;
  const double own = ctx.signed_value(iv.back().second);
  if (std::isnan(own)) return true;
  std::vector<double> vals{own};
  for (const Trial& t : ctx.trials) {
    if (t.id == trial.id || t.state == TrialState::Failed) continue;
    if (competes && !competes(t)) continue;
    double v;
    if (!rung_value(t, budget, &v)) continue;
    v = ctx.signed_value(v);
    if (!std::isnan(v)) vals.push_back(v);
  }
  std::sort(vals.begin(), vals.end());
  std::size_t k = vals.size() / static_cast<std::size_t>(r.eta);
  std::size_t idx = k == 0 ? 0 : k - 1;  // fewer than eta values: continue only as the best so far
  return !(own <= vals[idx]);
}

// -------------------------------------------------------------------------------- hyperband pruner

HyperbandPruner::HyperbandPruner(Config c) : cfg_(c) {
  ASHARungs{cfg_.min_resource, cfg_.max_resource, cfg_.eta, 0}.validate("hyperband pruner");
  KT_CHECK(cfg_.max_resource > 0, InvalidArgument, "hyperband pruner: setting 'max_resource' must be > 0");
  int s_max = 0;
  if (cfg_.optuna_brackets) {
    // Optuna HyperbandPruner: n_brackets = floor(log(max / min) / log(eta)) + 1 (floating point).
    s_max = static_cast<int>(std::floor(std::log(cfg_.max_resource / cfg_.min_resource) / std::log(double(cfg_.eta))));
  } else {
    s_max = hyperband_s_max(cfg_.max_resource, cfg_.eta, BracketMode::Exact, cfg_.min_resource);
  }
  const int nb = s_max + 1;
  for (int i = 0; i < nb; ++i) {
    // Trials per bracket ∝ Hyperband's n for s = nb - 1 - i (Optuna's _calculate_trial_allocation_budget).
    const double w = std::ceil(nb * std::pow(double(cfg_.eta), nb - 1 - i) / (nb - i));
    budgets_.push_back(static_cast<std::uint64_t>(w));
    total_ += budgets_.back();
  }
}

std::unique_ptr<Pruner> HyperbandPruner::from_json(const nlohmann::json& j) {
  return std::make_unique<HyperbandPruner>(
      md::config_from_json(HyperbandPrunerFields::table(), j, "hyperband pruner"));
}

nlohmann::json HyperbandPruner::settings_schema() { return HyperbandPrunerFields::table().schema(); }

nlohmann::json HyperbandPruner::config() const {
  return md::config_to_json(HyperbandPrunerFields::table(), cfg_, type());
}

int HyperbandPruner::bracket_of(std::int64_t trial_id) const {
  std::uint64_t h = hash_combine(0x68625f7072756e65ULL, static_cast<std::uint64_t>(trial_id)) % total_;  // "hb_prune"
  for (std::size_t i = 0; i < budgets_.size(); ++i) {
    if (h < budgets_[i]) return static_cast<int>(i);
    h -= budgets_[i];
  }
  return static_cast<int>(budgets_.size()) - 1;
}

bool HyperbandPruner::should_prune(const SearchContext& ctx, const Trial& trial) {
  const int b = bracket_of(trial.id);
  ASHARungs r{cfg_.min_resource, cfg_.max_resource, cfg_.eta, b};
  return asha_rung_prune(ctx, trial, r, [&](const Trial& t) { return bracket_of(t.id) == b; });
}

// ------------------------------------------------------------------------------------------- searcher

ASHA::ASHA(Config c) : cfg_(std::move(c)), pruner_(cfg_.rungs) {
  KT_CHECK(cfg_.rungs.max_resource > 0, InvalidArgument, "asha: setting 'max_resource' must be > 0 for the searcher");
  KT_CHECK(!cfg_.promote || !cfg_.resource_name.empty(), InvalidArgument,
           "asha: mode 'promote' needs setting 'resource_name' (the parameter that receives the budget)");
  KT_CHECK(cfg_.max_configs >= 0, InvalidArgument, "asha: setting 'max_configs' = ", cfg_.max_configs,
           " must be >= 0");
}

std::unique_ptr<Searcher> ASHA::from_json(const nlohmann::json& j) {
  return std::make_unique<ASHA>(md::config_from_json(asha_table(), j, "asha"));
}

nlohmann::json ASHA::settings_schema() { return asha_table().schema(); }

nlohmann::json ASHA::config() const {
  return md::config_to_json(asha_table(), cfg_, type());
}

void ASHA::check_space(const SearchSpace& space) const {
  if (cfg_.resource_name.empty()) return;
  md::check_resource_param(space, cfg_.resource_name, "asha");
  const std::size_t idx = space.index_of(cfg_.resource_name);
  md::resource_value(space, idx, cfg_.rungs.max_resource, "asha");
  if (cfg_.promote)
    for (double b : cfg_.rungs.budgets()) md::resource_value(space, idx, b, "asha");
}

bool ASHA::should_prune(const SearchContext& ctx, const Trial& trial) {
  if (cfg_.promote) return false;  // promotions happen in ask
  return pruner_.should_prune(ctx, trial);
}

std::vector<Suggestion> ASHA::ask(const SearchContext& ctx, std::size_t n) {
  std::vector<Suggestion> out;
  const bool has_res = !cfg_.resource_name.empty();
  const std::size_t ridx = has_res ? ctx.space.index_of(cfg_.resource_name) : 0;
  md::SeenConfigs seen(ctx.space, ctx.trials);
  auto fresh = [&](double res) {
    std::vector<double> x = seen.draw([&] {
      std::vector<double> y = ctx.space.sample(ctx.rng);
      if (has_res) y[ridx] = md::resource_value(ctx.space, ridx, res, "asha");
      return y;
    });
    seen.insert(x);
    return x;
  };
  if (!cfg_.promote) {
    for (std::size_t i = 0; i < n; ++i) out.push_back({fresh(cfg_.rungs.max_resource), {}});
    return out;
  }
  // Promote mode: rungs 0..K with budgets min * eta^(s+k) <= max (Li et al. 2020, Algorithm 2).
  std::vector<double> budgets = cfg_.rungs.budgets();
  const double top = budgets.empty() ? cfg_.rungs.max_resource : budgets.back() * cfg_.rungs.eta;
  if (top <= cfg_.rungs.max_resource * (1 + 1e-12)) budgets.push_back(top);
  if (budgets.empty()) budgets.push_back(cfg_.rungs.max_resource);
  const std::size_t K = budgets.size();
  struct M {
    std::int64_t cfg;
    const Trial* t;
  };
  std::vector<std::vector<M>> rungs(K);
  std::int64_t next_cfg = 0;
  for (const Trial& t : ctx.trials) {
    auto r = md::attr(t, "asha_rung");
    auto c = md::attr(t, "asha_config");
    if (!r || !c) continue;
    const auto k = static_cast<std::size_t>(*r);
    KT_CHECK(*r >= 0 && k < K, StateError, "trial ", t.id, " has asha_rung=", *r, " beyond this ASHA's ", K,
             " rungs (changed settings?)");
    rungs[k].push_back({static_cast<std::int64_t>(*c), &t});
    next_cfg = std::max(next_cfg, static_cast<std::int64_t>(*c) + 1);
  }
  while (out.size() < n) {
    bool promoted = false;
    for (std::size_t k = K - 1; k-- > 0 && !promoted;) {
      std::vector<std::pair<double, const M*>> done;
      for (const auto& m : rungs[k])
        if (m.t && m.t->state == TrialState::Complete && !std::isnan(ctx.loss(*m.t))) done.push_back({ctx.loss(*m.t), &m});
      std::sort(done.begin(), done.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second->cfg < b.second->cfg;
      });
      const std::size_t keep = done.size() / static_cast<std::size_t>(cfg_.rungs.eta);
      for (std::size_t j = 0; j < keep; ++j) {
        const M* m = done[j].second;
        bool there = std::any_of(rungs[k + 1].begin(), rungs[k + 1].end(), [&](const M& u) { return u.cfg == m->cfg; });
        if (there) continue;
        Suggestion s;
        s.x = m->t->x;
        s.x[ridx] = md::resource_value(ctx.space, ridx, budgets[k + 1], "asha");
        s.attrs = {{"asha_rung", static_cast<double>(k + 1)}, {"asha_config", static_cast<double>(m->cfg)},
                   {"asha_resource", s.x[ridx]}};
        rungs[k + 1].push_back({m->cfg, nullptr});
        seen.insert(s.x);
        out.push_back(std::move(s));
        promoted = true;
        break;
      }
    }
    if (promoted) continue;
    if (cfg_.max_configs > 0 && next_cfg >= cfg_.max_configs) break;
    Suggestion s;
    s.x = fresh(budgets[0]);
    s.attrs = {{"asha_rung", 0.0}, {"asha_config", static_cast<double>(next_cfg)}, {"asha_resource", s.x[ridx]}};
    rungs[0].push_back({next_cfg++, nullptr});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kubetune::search
