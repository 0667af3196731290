// BOHB: KDE model per budget (Falkner et al. 2018) on top of the Hyperband scheduler.
#include "kubetune/search/multifidelity/bohb.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "kde.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/normal.hpp"
#include "settings.hpp"

namespace kubetune::search {
namespace mf_detail {

double truncated_normal(Rng& rng, double m, double sd) {
  for (int i = 0; i < 100; ++i) {
    double v = m + sd * rng.normal();
    if (v >= 0.0 && v <= 1.0) return v;
  }
  return std::clamp(m, 0.0, 1.0);
}

Kde Kde::fit(std::vector<std::vector<double>> rows, const std::vector<int>& levels, double min_bw) {
  Kde k;
  k.data = std::move(rows);
  k.levels = levels;
  const std::size_t d = levels.size();
  const double n = static_cast<double>(k.data.size());
  k.bw.assign(d, min_bw);
  for (std::size_t j = 0; j < d; ++j) {
    double mean = 0;
    for (const auto& r : k.data) mean += r[j];
    mean /= n;
    double var = 0;
    for (const auto& r : k.data) var += (r[j] - mean) * (r[j] - mean);
    const double sd = std::sqrt(var / n);  // numpy std, ddof = 0
    double bw = 1.06 * sd * std::pow(n, -1.0 / (4.0 + static_cast<double>(d)));
    bw = std::max(bw, min_bw);
    if (levels[j] > 0) bw = std::min(bw, static_cast<double>(levels[j] - 1) / levels[j]);
    k.bw[j] = bw;
  }
  return k;
}

double Kde::pdf(const std::vector<double>& u) const {
  double total = 0;
  for (const auto& r : data) {
    double p = 1;
    for (std::size_t j = 0; j < levels.size(); ++j) {
      if (levels[j] == 0) {
        const double z = (u[j] - r[j]) / bw[j];
        p *= normal::pdf(z) / bw[j];
      } else {
        const bool same = std::lround(u[j]) == std::lround(r[j]);
        p *= same ? 1.0 - bw[j] : bw[j] / (levels[j] - 1);
      }
    }
    total += p;
  }
  return total / static_cast<double>(data.size());
}

}  // namespace mf_detail

namespace {
namespace md = mf_detail;

// Impute inactive (NaN) entries as HpBandSter's impute_conditional_data: copy the value of a random other
// row where the dimension is active, else draw uniformly.
void impute(std::vector<std::vector<double>>& rows, const std::vector<int>& levels, Rng& rng) {
  for (std::size_t j = 0; j < levels.size(); ++j) {
    std::vector<std::size_t> active;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (!std::isnan(rows[i][j])) active.push_back(i);
    for (auto& r : rows) {
      if (!std::isnan(r[j])) continue;
      if (!active.empty()) r[j] = rows[active[rng.below(active.size())]][j];
      else r[j] = levels[j] == 0 ? rng.uniform() : static_cast<double>(rng.below(static_cast<std::uint64_t>(levels[j])));
    }
  }
}
}  // namespace

BOHB::BOHB(Config c, Options o) : Hyperband(std::move(c)), opt_(o) {
  KT_CHECK(opt_.top_n_percent > 0 && opt_.top_n_percent < 100, InvalidArgument, "bohb: setting 'top_n_percent' = ",
           opt_.top_n_percent, " must be in (0, 100)");
  KT_CHECK(opt_.num_samples >= 1, InvalidArgument, "bohb: setting 'num_samples' = ", opt_.num_samples, " must be >= 1");
  KT_CHECK(opt_.random_fraction >= 0 && opt_.random_fraction <= 1, InvalidArgument,
           "bohb: setting 'random_fraction' = ", opt_.random_fraction, " must be in [0, 1]");
  KT_CHECK(opt_.bandwidth_factor > 0, InvalidArgument, "bohb: setting 'bandwidth_factor' = ", opt_.bandwidth_factor,
           " must be > 0");
  KT_CHECK(opt_.min_bandwidth > 0, InvalidArgument, "bohb: setting 'min_bandwidth' = ", opt_.min_bandwidth,
           " must be > 0");
  KT_CHECK(opt_.min_points_in_model >= 0, InvalidArgument, "bohb: setting 'min_points_in_model' = ",
           opt_.min_points_in_model, " must be >= 0 (0 = d + 1)");
}

BOHB::~BOHB() = default;

namespace {
// BOHB's settings: Hyperband's (min_budget / max_budget as HpBandSter names them; n_iterations 0 = forever)
// plus the model's.
struct BOHBSettings {
  Hyperband::Config hb = [] {
    Hyperband::Config c;
    c.n_iterations = 0;
    return c;
  }();
  BOHB::Options opt;
};

const settings::Fields<BOHBSettings>& bohb_table() {
  using O = BOHB::Options;
  static const settings::Fields<BOHBSettings> t =
      settings::Fields<BOHBSettings>("bohb")
          .nest<&BOHBSettings::hb>(md::hyperband_fields("bohb"))
          .alias_of("max_resource", "max_budget")
          .alias_of("min_resource", "min_budget")
          .nest<&BOHBSettings::opt>(
              settings::Fields<O>("bohb")
                  .field<&O::top_n_percent>("top_n_percent", "Percent of observations forming the good density l(x).")
                  .field<&O::num_samples>("num_samples", "Candidates drawn from l(x) per new configuration.")
                  .field<&O::random_fraction>("random_fraction", "Fraction of new configurations drawn from the priors.")
                  .field<&O::bandwidth_factor>("bandwidth_factor", "Widening of l(x)'s bandwidths when sampling.")
                  .field<&O::min_bandwidth>("min_bandwidth", "Lower clip of the kernel bandwidths.")
                  .field<&O::min_points_in_model>("min_points_in_model", "Observations a model needs (0 = d + 1)."));
  return t;
}
}  // namespace

std::unique_ptr<Searcher> BOHB::from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "bohb config must be a JSON object, got ", json_summary(j));
  BOHBSettings b = bohb_table().from_json(j);
  return std::make_unique<BOHB>(b.hb, b.opt);
}

nlohmann::json BOHB::settings_schema() { return bohb_table().schema(); }

nlohmann::json BOHB::config() const {
  BOHBSettings b;
  b.hb = settings();
  b.opt = opt_;
  nlohmann::json j = bohb_table().to_json(b);
  j["type"] = type();
  return j;
}

void BOHB::prepare(const SearchContext& ctx) {
  model_.reset();
  const SearchSpace& sp = ctx.space;
  const std::size_t ridx = sp.index_of(settings().resource_name);
  std::vector<std::size_t> dims;
  std::vector<int> levels;
  for (std::size_t j = 0; j < sp.size(); ++j) {
    if (j == ridx) continue;
    dims.push_back(j);
    const Param& p = sp.param(j);
    levels.push_back(p.type == ParamType::Categorical ? static_cast<int>(p.choices.size()) : 0);
  }
  const std::size_t d = dims.size();
  if (d == 0) return;
  const std::size_t min_points = opt_.min_points_in_model > 0 ? static_cast<std::size_t>(opt_.min_points_in_model) : d + 1;
  // Observations per budget (the resource value of each completed trial).
  std::map<double, std::vector<std::pair<double, const Trial*>>> by_budget;
  for (const Trial& t : ctx.trials) {
    if (t.state != TrialState::Complete) continue;
    const double l = ctx.loss(t);
    if (std::isnan(l) || t.x.size() != sp.size() || std::isnan(t.x[ridx])) continue;
    by_budget[t.x[ridx]].push_back({l, &t});
  }
  for (auto it = by_budget.rbegin(); it != by_budget.rend(); ++it) {
    auto obs = it->second;
    const std::size_t N = obs.size();
    if (N < min_points) continue;
    std::stable_sort(obs.begin(), obs.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second->id < b.second->id;
    });
    // HpBandSter: n_good = max(min_points, top_n_percent * N // 100), n_bad = max(min_points, (100-top)*N // 100).
    const auto n_good = std::max(min_points, static_cast<std::size_t>(std::floor(opt_.top_n_percent * N / 100.0)));
    const auto n_bad = std::max(min_points, static_cast<std::size_t>(std::floor((100.0 - opt_.top_n_percent) * N / 100.0)));
    if (n_good >= N) continue;
    const std::size_t bad_end = std::min(N, n_good + n_bad);
    if (n_good <= d || bad_end - n_good <= d) continue;
    auto encode = [&](const Trial* t) {
      std::vector<double> u(d);
      for (std::size_t q = 0; q < d; ++q) {
        const std::size_t j = dims[q];
        const double v = t->x[j];
        if (std::isnan(v)) u[q] = v;
        else u[q] = levels[q] > 0 ? v : sp.to_unit(j, v);
      }
      return u;
    };
    std::vector<std::vector<double>> good, bad;
    for (std::size_t i = 0; i < n_good; ++i) good.push_back(encode(obs[i].second));
    for (std::size_t i = n_good; i < bad_end; ++i) bad.push_back(encode(obs[i].second));
    impute(good, levels, ctx.rng);
    impute(bad, levels, ctx.rng);
    model_ = std::make_unique<md::KdePair>();
    model_->good = md::Kde::fit(std::move(good), levels, opt_.min_bandwidth);
    model_->bad = md::Kde::fit(std::move(bad), levels, opt_.min_bandwidth);
    return;
  }
}

std::vector<double> BOHB::sample_config(const SearchContext& ctx) {
  if (!model_ || ctx.rng.uniform() < opt_.random_fraction) return ctx.space.sample(ctx.rng);
  const SearchSpace& sp = ctx.space;
  const std::size_t ridx = sp.index_of(settings().resource_name);
  const md::Kde& l = model_->good;
  const md::Kde& g = model_->bad;
  const std::size_t d = l.levels.size();
  std::vector<double> best_u;
  double best = std::numeric_limits<double>::infinity();
  for (int s = 0; s < opt_.num_samples; ++s) {
    const auto& datum = l.data[ctx.rng.below(l.data.size())];
    std::vector<double> u(d);
    for (std::size_t q = 0; q < d; ++q) {
      const double bw = std::max(l.bw[q], opt_.min_bandwidth);
      if (l.levels[q] == 0) {
        u[q] = md::truncated_normal(ctx.rng, datum[q], opt_.bandwidth_factor * bw);
      } else {
        u[q] = ctx.rng.uniform() < 1.0 - bw ? std::round(datum[q])
                                            : static_cast<double>(ctx.rng.below(static_cast<std::uint64_t>(l.levels[q])));
      }
    }
    const double val = std::max(1e-32, g.pdf(u)) / std::max(l.pdf(u), 1e-32);
    if (std::isfinite(val) && val < best) {
      best = val;
      best_u = u;
    }
  }
  if (best_u.empty()) return sp.sample(ctx.rng);
  std::vector<double> x(sp.size());
  std::size_t q = 0;
  for (std::size_t j = 0; j < sp.size(); ++j) {
    if (j == ridx) {
      x[j] = sp.param(j).low;
      continue;
    }
    x[j] = l.levels[q] > 0 ? best_u[q] : sp.from_unit(j, best_u[q]);
    ++q;
  }
  return x;
}

}  // namespace kubetune::search
