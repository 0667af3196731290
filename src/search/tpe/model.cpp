// SpaceModel: each parameter's Parzen dimension and the groups of jointly modelled parameters.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/core/rng.hpp"
#include "model.hpp"

namespace kubetune::search::tpe {
namespace {
// Field-by-field equality of two spaces (what SearchSpace::operator== decides through to_json, without
// building JSON on every ask). Bitwise for the doubles, so any difference at all rebuilds the model.
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_param(const Param& a, const Param& b) {
  if (a.name != b.name || a.type != b.type || a.distribution != b.distribution || !same_bits(a.low, b.low) ||
      !same_bits(a.high, b.high) || !same_bits(a.step, b.step) || !same_bits(a.mu, b.mu) ||
      !same_bits(a.sigma, b.sigma) || a.values.size() != b.values.size() || a.choices != b.choices ||
      a.condition.has_value() != b.condition.has_value())
    return false;
  for (std::size_t i = 0; i < a.values.size(); ++i)
    if (!same_bits(a.values[i], b.values[i])) return false;
  return !a.condition || (a.condition->parent == b.condition->parent && a.condition->values == b.condition->values);
}
bool same_space(const SearchSpace& a, const SearchSpace& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_param(a.params()[i], b.params()[i])) return false;
  return true;
}

// Numeric parameters: continuous (in log space for log-scaled ones, padded by half a step when stepped, then
// snapped, as Optuna models log ints) or discrete on the step grid; a single legal value is a one-point grid.
ParamModel numeric_model(const Param& p) {
  ParamModel m;
  const bool stepped = p.type == ParamType::Int || p.step > 0.0;
  const double step = p.type == ParamType::Int ? std::max(p.step, 1.0) : p.step;
  const double hi = stepped ? p.low + step * static_cast<double>(p.cardinality() - 1) : p.high;
  if (p.is_log()) {
    double lo_v = p.low, hi_v = hi;
    if (stepped && p.low - 0.5 * step > 0.0) {
      lo_v = p.low - 0.5 * step;
      hi_v = hi + 0.5 * step;
    }
    m.log = true;
    m.dim = hi_v > lo_v ? ParzenDim::continuous(std::log(lo_v), std::log(hi_v))
                        : ParzenDim::discrete(std::log(lo_v), std::log(lo_v), 1.0);
  } else if (stepped) {
    m.dim = ParzenDim::discrete(p.low, hi, step);
  } else {
    m.dim = p.high > p.low ? ParzenDim::continuous(p.low, p.high) : ParzenDim::discrete(p.low, p.low, 1.0);
  }
  if (p.distribution == Distribution::Normal || p.distribution == Distribution::LogNormal) {
    m.dim.prior_mu = p.mu;  // LogNormal's mu / sigma are already in log space
    m.dim.prior_sigma = p.sigma;
  }
  return m;
}

ParamModel param_model(const Param& p) {
  ParamModel m;
  if (p.type == ParamType::Categorical) {
    m.dim = ParzenDim::categorical(p.choices.size());
    m.index = true;
  } else if (p.type == ParamType::Discrete) {
    // Ordered numeric list: modelled on its index grid (0, 1, ..., k-1), so neighbours share mass.
    m.dim = ParzenDim::discrete(0.0, static_cast<double>(p.values.size()) - 1.0, 1.0);
    m.index = true;
  } else {
    m = numeric_model(p);
  }
  return m;
}

// Parameters always active together share a condition chain (conditions only name categorical parents
// declared earlier, so ordering groups by first member also orders parents before children).
std::vector<std::string> condition_chains(const SearchSpace& s) {
  const std::vector<int> parents = s.parent_indices();
  std::vector<std::string> chain(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Param& p = s.param(i);
    if (!p.condition) continue;
    std::vector<std::string> vals = p.condition->values;
    std::sort(vals.begin(), vals.end());
    std::string key = chain[static_cast<std::size_t>(parents[i])] + "|" + std::to_string(parents[i]) + ":";
    for (const auto& v : vals) key += std::to_string(v.size()) + "#" + v;
    chain[i] = key;
  }
  return chain;
}
}  // namespace

bool SpaceModel::update(const SearchSpace& s, const TPEConfig& cfg) {
  if (built && multivariate == cfg.multivariate && group == cfg.group && same_space(space, s)) return false;
  built = true;
  space = s;
  multivariate = cfg.multivariate;
  group = cfg.group;
  const std::size_t D = s.size();
  pm.assign(D, {});
  cardinality = 1;
  unconditional = true;
  dedupe = true;
  for (std::size_t i = 0; i < D; ++i) {
    const Param& p = s.param(i);
    pm[i] = param_model(p);
    const std::uint64_t c = p.cardinality();
    cardinality = (c == 0 || cardinality == 0 || cardinality > (1ULL << 40) / c) ? 0 : cardinality * c;
    if (p.condition) unconditional = false;
    if (!p.condition && p.type == ParamType::Double && p.step == 0.0 && p.high > p.low) dedupe = false;
  }
  groups.clear();
  const std::vector<std::string> chain = condition_chains(s);
  std::map<std::string, std::size_t> by_chain;
  for (std::size_t i = 0; i < D; ++i) {
    if (multivariate && (group || chain[i].empty())) {
      auto [it, fresh] = by_chain.try_emplace(chain[i], groups.size());
      if (!fresh) {
        groups[it->second].params.push_back(i);
        groups[it->second].dims.push_back(pm[i].dim);
        continue;
      }
    }
    groups.push_back({{i}, {pm[i].dim}});
  }
  return true;
}

double SpaceModel::from_model(std::size_t p, double t) const {
  const ParamModel& m = pm[p];
  if (m.index) return space.snap(p, std::round(t));
  return space.snap(p, m.log ? std::exp(t) : t);
}

}  // namespace kubetune::search::tpe
