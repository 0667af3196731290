// TPE searcher: trial split, per-group Parzen models, candidate ranking, constant liar, config parsing.
#include "kubetune/search/tpe.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_set>

#include "kubetune/core/error.hpp"
#include "kubetune/core/settings.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/search/parzen.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kubetune::search {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

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

std::uint64_t hash_point(const std::vector<double>& x) {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL ^ x.size();
  for (double v : x) {
    std::uint64_t b;
    if (std::isnan(v)) {
      b = 0x7FF8DEADBEEF0001ULL;
    } else {
      if (v == 0.0) v = 0.0;  // -0 == +0
      std::memcpy(&b, &v, sizeof b);
    }
    h = mix64(h ^ b);
  }
  return h;
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

// ------------------------------------------------------------------ workspace (reused buffers + space model)
namespace detail {
struct ParamModel {
  ParzenDim dim;
  bool log = false;
  bool index = false;  // Discrete list / Categorical: the model value is the index
};
struct Group {
  std::vector<std::size_t> params;
  std::vector<ParzenDim> dims;
};
struct TPEWorkspace {
  bool have_space = false;
  SearchSpace space;
  bool multivariate = false, group = false;
  std::vector<ParamModel> pm;
  std::vector<Group> groups;
  std::uint64_t cardinality = 0;  // 0 = infinite (or too large to matter)

  std::vector<std::pair<double, std::size_t>> complete;
  std::vector<std::tuple<double, double, std::size_t>> pruned;
  std::vector<std::size_t> below, above;
  std::vector<double> batch;  // in-batch points, row-major (constant liars)
  std::size_t n_batch = 0;
  std::vector<ParzenEstimator> est_below, est_above;
  std::vector<char> below_ok;
  std::vector<std::size_t> above_version;
  // Per-thread gather buffers (one per OpenMP thread in the parallel univariate path).
  struct Scratch {
    std::vector<double> obs, obs_below, wts, wts_above;
    std::vector<std::size_t> order, rowpos, act, perm, trial;
    std::vector<double> wts_sorted;
  };
  std::vector<Scratch> scr;
  std::vector<double> cand, lb, la;
  std::vector<std::size_t> ranked;   // below trials, best first (refinement centres)
  std::vector<double> loc, centre, lb2, la2;  // refinement candidates, their centre, their log l / log g
  // History copies kept across asks (pure memoisation: verified against ctx.trials on every ask, rows from
  // the first differing trial on are rebuilt). hist: row-major bits of each trial's x (NaN row where the
  // trial is malformed); xt: parameter-major copy, column p at xt[p * xt_cap + i] (NaN where inactive).
  std::vector<double> hist, xt;
  std::vector<char> hist_bad;  // per cached trial: malformed (x.size() != D)
  std::size_t hist_n = 0, xt_cap = 0;
  std::unordered_set<std::uint64_t> seen;
  // An always-active continuous parameter makes exact repeats practically impossible: no dedupe set then.
  bool dedupe = true;
  bool unconditional = true;  // no conditional parameter: univariate groups are independent

  // Sort cache: per parameter, (model value, trial index) of every trial where it is active, ascending (ties
  // by index) -- exactly the stable argsort ParzenEstimator would compute. Kept across asks for the trials
  // whose x update_history() found bit-identical (rebuilt otherwise), so it can never change a result.
  // Entries are trial indices (32 bits: the lists are read in full several times per ask); their model values
  // are read from xt when needed.
  std::vector<std::vector<std::uint32_t>> sorted;
  std::vector<std::pair<double, std::uint32_t>> sort_buf;
  std::size_t sorted_count = 0;  // trials covered by the cache
  std::vector<char> member;      // per trial: 1 below, 2 above

  void prepare(const SearchSpace& s, const TPEConfig& cfg);
  void update_history(const std::vector<Trial>& trials);
  void update_sort_cache(const std::vector<Trial>& trials);
};

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
}  // namespace

void TPEWorkspace::prepare(const SearchSpace& s, const TPEConfig& cfg) {
  if (have_space && multivariate == cfg.multivariate && group == cfg.group && same_space(space, s)) return;
  have_space = true;
  space = s;
  multivariate = cfg.multivariate;
  group = cfg.group;
  const std::size_t D = s.size();
  pm.assign(D, {});
  cardinality = 1;
  for (std::size_t i = 0; i < D; ++i) {
    const Param& p = s.param(i);
    ParamModel& m = pm[i];
    std::uint64_t c = p.cardinality();
    if (c == 0 || cardinality == 0 || cardinality > (1ULL << 40) / c)
      cardinality = 0;
    else
      cardinality *= c;
    if (p.type == ParamType::Categorical) {
      m.dim = ParzenDim::categorical(p.choices.size());
      m.index = true;
      continue;
    }
    if (p.type == ParamType::Discrete) {
      // Ordered numeric list: modelled on its index grid (0, 1, ..., k-1), so neighbours share mass.
      m.dim = ParzenDim::discrete(0.0, static_cast<double>(p.values.size()) - 1.0, 1.0);
      m.index = true;
      continue;
    }
    const bool stepped = p.type == ParamType::Int || p.step > 0.0;
    const double step = p.type == ParamType::Int ? std::max(p.step, 1.0) : p.step;
    const double hi = stepped ? p.low + step * static_cast<double>(c - 1) : p.high;
    if (p.is_log()) {
      // Log scale: continuous in log space (padded by half a step when the bound stays > 0), then snapped
      // (Optuna models log ints the same way).
      double lo_v = p.low, hi_v = hi;
      if (stepped && p.low - 0.5 * step > 0.0) {
        lo_v = p.low - 0.5 * step;
        hi_v = hi + 0.5 * step;
      }
      m.log = true;
      if (hi_v > lo_v)
        m.dim = ParzenDim::continuous(std::log(lo_v), std::log(hi_v));
      else
        m.dim = ParzenDim::discrete(std::log(lo_v), std::log(lo_v), 1.0);  // a single legal value
    } else if (stepped) {
      m.dim = ParzenDim::discrete(p.low, hi, step);
    } else if (p.high > p.low) {
      m.dim = ParzenDim::continuous(p.low, p.high);
    } else {
      m.dim = ParzenDim::discrete(p.low, p.low, 1.0);
    }
    if (p.distribution == Distribution::Normal || p.distribution == Distribution::LogNormal) {
      m.dim.prior_mu = p.mu;  // LogNormal's mu / sigma are already in log space
      m.dim.prior_sigma = p.sigma;
    }
  }
  // Groups: parameters always active together share a condition chain (conditions only name categorical
  // parents declared earlier, so ordering groups by first member also orders parents before children).
  groups.clear();
  std::vector<int> parents = s.parent_indices();
  std::vector<std::string> chain(D);
  for (std::size_t i = 0; i < D; ++i) {
    const Param& p = s.param(i);
    if (!p.condition) continue;
    std::vector<std::string> vals = p.condition->values;
    std::sort(vals.begin(), vals.end());
    std::string key = chain[static_cast<std::size_t>(parents[i])] + "|" + std::to_string(parents[i]) + ":";
    for (const auto& v : vals) key += std::to_string(v.size()) + "#" + v;
    chain[i] = key;
  }
  std::map<std::string, std::size_t> by_key;
  for (std::size_t i = 0; i < D; ++i) {
    bool joint = multivariate && (group || chain[i].empty());
    if (joint) {
      auto it = by_key.find(chain[i]);
      if (it != by_key.end()) {
        groups[it->second].params.push_back(i);
        groups[it->second].dims.push_back(pm[i].dim);
        continue;
      }
      by_key[chain[i]] = groups.size();
    }
    groups.push_back({{i}, {pm[i].dim}});
  }
  unconditional = true;
  for (std::size_t i = 0; i < D; ++i)
    if (s.param(i).condition) unconditional = false;
  dedupe = true;
  for (std::size_t i = 0; i < D; ++i) {
    const Param& p = s.param(i);
    if (!p.condition && p.type == ParamType::Double && p.step == 0.0 && p.high > p.low) dedupe = false;
  }
  sorted.assign(D, {});
  sorted_count = 0;
  hist.clear();
  hist_n = 0;
  xt.clear();
  xt_cap = 0;
  est_below.resize(groups.size());
  est_above.resize(groups.size());
  below_ok.assign(groups.size(), 0);
  above_version.assign(groups.size(), 0);
}
namespace {
inline double model_value(const ParamModel& m, double v) {
  double t = m.log ? std::log(v) : v;
  return t == 0.0 ? 0.0 : t;  // -0 sorts as +0 (as ParzenEstimator's argsort)
}
inline bool cacheable(const ParamModel& m) { return m.dim.kind != ParzenDim::Kind::Categorical; }
}  // namespace

void TPEWorkspace::update_history(const std::vector<Trial>& trials) {
  const std::size_t D = pm.size();
  const std::size_t N = trials.size();
  // Longest prefix of trials whose x is bit-identical to the cached rows.
  std::size_t keep = std::min(hist_n, N);
  for (std::size_t i = 0; i < keep; ++i) {
    const std::vector<double>& x = trials[i].x;
    const double* h = hist.data() + i * D;
    const bool same = x.size() == D ? !hist_bad[i] && std::memcmp(x.data(), h, D * sizeof(double)) == 0
                                    : hist_bad[i] != 0;
    if (!same) {
      keep = i;
      break;
    }
  }
  if (keep < sorted_count) {  // the sort cache covers a changed trial: rebuilt below
    sorted_count = 0;
    for (auto& l : sorted) l.clear();
  }
  hist_n = keep;
  if (N > xt_cap || xt.size() != D * xt_cap) {
    std::size_t cap = std::max<std::size_t>(xt_cap, 64);
    while (cap < N) cap *= 2;
    std::vector<double> nx(D * cap, kNaN);
    for (std::size_t p = 0; p < D; ++p)
      for (std::size_t i = 0; i < hist_n; ++i) nx[p * cap + i] = hist[i * D + p];
    xt.swap(nx);
    xt_cap = cap;
  }
  hist.resize(D * N);
  hist_bad.resize(N);
  for (std::size_t i = hist_n; i < N; ++i) {
    const std::vector<double>& x = trials[i].x;
    double* h = hist.data() + i * D;
    hist_bad[i] = x.size() != D;
    if (x.size() == D) {
      std::memcpy(h, x.data(), D * sizeof(double));
    } else {
      for (std::size_t p = 0; p < D; ++p) h[p] = kNaN;
    }
    for (std::size_t p = 0; p < D; ++p) xt[p * xt_cap + i] = h[p];
  }
  hist_n = N;
}

void TPEWorkspace::update_sort_cache(const std::vector<Trial>& trials) {
  // Valid for the first sorted_count trials: update_history() cleared it if any of them changed.
  const std::size_t D = pm.size();
  const std::size_t N = trials.size();
  const bool valid = sorted_count <= N;
  const std::size_t from = valid ? sorted_count : 0;
  const bool rebuild = !valid || N - from > 64;
  KT_CHECK(N <= 0xFFFFFFFFull, InvalidArgument, "tpe: ", N, " trials exceed the 2^32 - 1 the sort cache indexes");
  for (std::size_t p = 0; p < D; ++p) {
    if (!cacheable(pm[p])) continue;
    auto& list = sorted[p];
    if (!valid) list.clear();
    const double* col = xt.data() + p * xt_cap;  // NaN where inactive or malformed (update_history)
    const ParamModel& m = pm[p];
    if (rebuild) {  // (model value, index) pairs sorted once
      sort_buf.clear();
      for (std::uint32_t i : list) sort_buf.emplace_back(model_value(m, col[i]), i);
      for (std::size_t i = from; i < N; ++i)
        if (!std::isnan(col[i])) sort_buf.emplace_back(model_value(m, col[i]), static_cast<std::uint32_t>(i));
      std::sort(sort_buf.begin(), sort_buf.end());
      list.resize(sort_buf.size());
      for (std::size_t j = 0; j < sort_buf.size(); ++j) list[j] = sort_buf[j].second;
      continue;
    }
    for (std::size_t i = from; i < N; ++i) {
      if (std::isnan(col[i])) continue;
      const double v = model_value(m, col[i]);
      // i exceeds every cached index: goes after equal values
      auto it = std::upper_bound(list.begin(), list.end(), v,
                                 [&](double a, std::uint32_t b) { return a < model_value(m, col[b]); });
      list.insert(it, static_cast<std::uint32_t>(i));
    }
  }
  sorted_count = N;
}
}  // namespace detail

namespace {
double to_model(const detail::ParamModel& m, double v) { return m.log ? std::log(v) : v; }

double from_model(const SearchSpace& s, const detail::ParamModel& m, std::size_t i, double t) {
  if (m.index) return s.snap(i, std::round(t));
  return s.snap(i, m.log ? std::exp(t) : t);
}
}  // namespace

namespace {
// Classify the history (trials are in id order) and split it as Optuna 4.x's _split_trials does.
std::size_t split_history(const SearchContext& ctx, const TPEConfig& cfg,
                          std::vector<std::pair<double, std::size_t>>& complete,
                          std::vector<std::tuple<double, double, std::size_t>>& pruned,
                          std::vector<std::size_t>& below, std::vector<std::size_t>& above,
                          std::unordered_set<std::uint64_t>* seen, std::vector<char>& mark,
                          std::vector<std::size_t>* ranked = nullptr) {
  complete.clear();
  pruned.clear();
  below.clear();
  above.clear();
  const std::size_t D = ctx.space.size();
  const auto& trials = ctx.trials;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const Trial& t = trials[i];
    if (t.x.size() != D) continue;
    if (seen) seen->insert(hash_point(t.x));
    switch (t.state) {
      case TrialState::Complete: {
        double l = ctx.loss(t);
        if (!std::isnan(l)) complete.emplace_back(l, i);
        break;
      }
      case TrialState::Pruned: {
        // Deepest step first, then best last intermediate value (NaN last); none reported => after all.
        if (t.intermediate.empty()) {
          pruned.emplace_back(1.0, 0.0, i);
        } else {
          double v = ctx.signed_value(t.intermediate.back().second);
          pruned.emplace_back(-static_cast<double>(t.intermediate.back().first), std::isnan(v) ? kInf : v, i);
        }
        break;
      }
      case TrialState::Running:
      case TrialState::Pending:
        if (cfg.constant_liar) above.push_back(i);  // constant liar: a pending point counts as bad
        break;
      case TrialState::Failed:
        break;
    }
  }
  const std::size_t n_fin = complete.size() + pruned.size();
  const std::size_t nb = cfg.n_below(n_fin);
  // Only the best nb matter (as a set: both lists end in id order), so a selection replaces the full sort;
  // keys are unique (ties broken by trial index), so the set is the one a full sort would give.
  const std::size_t nbc = std::min(nb, complete.size());
  if (nbc < complete.size())
    std::nth_element(complete.begin(), complete.begin() + static_cast<std::ptrdiff_t>(nbc), complete.end());
  const std::size_t nbp = std::min(nb - nbc, pruned.size());
  if (nbp < pruned.size())
    std::nth_element(pruned.begin(), pruned.begin() + static_cast<std::ptrdiff_t>(nbp), pruned.end());
  // Id order by marking (O(n) instead of sorting both lists).
  mark.assign(trials.size(), 0);
  for (std::size_t i : above) mark[i] = 2;
  for (std::size_t k = 0; k < complete.size(); ++k) mark[complete[k].second] = k < nbc ? 1 : 2;
  for (std::size_t k = 0; k < pruned.size(); ++k) mark[std::get<2>(pruned[k])] = k < nbp ? 1 : 2;
  above.clear();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (mark[i] == 1) below.push_back(i);
    else if (mark[i] == 2) above.push_back(i);
  }
  if (ranked) {  // the below set best first: completed trials by loss, then pruned ones by their key
    std::sort(complete.begin(), complete.begin() + static_cast<std::ptrdiff_t>(nbc));
    std::sort(pruned.begin(), pruned.begin() + static_cast<std::ptrdiff_t>(nbp));
    ranked->clear();
    for (std::size_t k = 0; k < nbc; ++k) ranked->push_back(complete[k].second);
    for (std::size_t k = 0; k < nbp; ++k) ranked->push_back(std::get<2>(pruned[k]));
  }
  return n_fin;
}
}  // namespace

std::size_t tpe_split(const SearchContext& ctx, const TPEConfig& cfg, std::vector<std::size_t>& below,
                      std::vector<std::size_t>& above) {
  std::vector<std::pair<double, std::size_t>> complete;
  std::vector<std::tuple<double, double, std::size_t>> pruned;
  std::vector<char> mark;
  return split_history(ctx, cfg, complete, pruned, below, above, nullptr, mark);
}

namespace {
ParzenOptions parzen_options(const TPEConfig& cfg) {
  ParzenOptions popt;
  popt.prior_weight = cfg.prior_weight;
  popt.magic_clip = cfg.consider_magic_clip;
  popt.consider_endpoints = cfg.consider_endpoints;
  // Univariate models always use neighbour widths; Scott's rule applies to joint (multivariate) models.
  popt.bandwidth = cfg.multivariate ? cfg.bandwidth : ParzenBandwidth::Neighbour;
  return popt;
}
}  // namespace

std::vector<TPEGroupModel> tpe_models(const SearchContext& ctx, const TPEConfig& cfg) {
  cfg.validate();
  detail::TPEWorkspace ws;
  ws.prepare(ctx.space, cfg);
  const std::size_t n_fin =
      split_history(ctx, cfg, ws.complete, ws.pruned, ws.below, ws.above, nullptr, ws.member);
  std::vector<TPEGroupModel> out;
  if (n_fin < cfg.n_startup_trials || ctx.space.size() == 0) return out;
  const ParzenOptions popt = parzen_options(cfg);
  std::vector<double> obs, wts;
  // The plain gather of ask() (no sort cache): rows of the trials where the group's first parameter is active.
  auto fit = [&](const detail::Group& g, const std::vector<std::size_t>& idx, ParzenEstimator& est) {
    obs.clear();
    std::size_t rows = 0;
    for (std::size_t i : idx) {
      const std::vector<double>& x = ctx.trials[i].x;
      if (std::isnan(x[g.params[0]])) continue;
      for (std::size_t p : g.params) obs.push_back(to_model(ws.pm[p], x[p]));
      ++rows;
    }
    wts.resize(rows);
    tpe_recency_weights(rows, cfg.n_flat_weights, wts.data());
    est.fit(g.dims, obs.data(), rows, wts.data(), popt);
  };
  for (const detail::Group& g : ws.groups) {
    TPEGroupModel gm;
    gm.params = g.params;
    fit(g, ws.below, gm.below);
    fit(g, ws.above, gm.above);
    out.push_back(std::move(gm));
  }
  return out;
}

// ------------------------------------------------------------------ searcher
TPE::TPE() : TPE(TPEConfig{}) {}
TPE::TPE(TPEConfig c) : cfg_(std::move(c)), ws_(std::make_unique<detail::TPEWorkspace>()) { cfg_.validate(); }
TPE::~TPE() = default;

std::unique_ptr<Searcher> TPE::from_json(const nlohmann::json& j) {
  return std::make_unique<TPE>(TPEConfig::from_json(j));
}

nlohmann::json TPE::config() const { return cfg_.to_json(); }

std::vector<Suggestion> TPE::ask(const SearchContext& ctx, std::size_t n) {
  detail::TPEWorkspace& ws = *ws_;
  const SearchSpace& space = ctx.space;
  const std::size_t D = space.size();
  std::vector<Suggestion> out;
  if (n == 0 || D == 0) return out;
  ws.prepare(space, cfg_);
  Rng local = cfg_.random_state ? Rng(mix64(*cfg_.random_state), ctx.rng.next_u64()) : Rng(0);
  Rng& rng = cfg_.random_state ? local : ctx.rng;

  const auto& trials = ctx.trials;
  ws.seen.clear();
  const std::size_t n_fin =
      split_history(ctx, cfg_, ws.complete, ws.pruned, ws.below, ws.above, ws.dedupe ? &ws.seen : nullptr,
                    ws.member, cfg_.multivariate && cfg_.n_refine_candidates > 0 ? &ws.ranked : nullptr);
  const std::uint64_t card = ws.cardinality;

  // Random draws from the priors, avoiding points already tried while unseen ones remain.
  auto draw_random = [&](std::vector<double>& x) -> bool {
    if (!ws.dedupe) {
      x = space.sample(rng);
      return true;
    }
    for (int tries = 0; tries < 64; ++tries) {
      x = space.sample(rng);
      if (!ws.seen.count(hash_point(x))) return true;
    }
    return card == 0 || ws.seen.size() < card;
  };

  out.reserve(n);
  if (n_fin < cfg_.n_startup_trials) {
    for (std::size_t j = 0; j < n; ++j) {
      if (card != 0 && ws.seen.size() >= card) break;
      std::vector<double> x;
      if (!draw_random(x)) break;
      if (ws.dedupe) ws.seen.insert(hash_point(x));
      out.push_back({std::move(x), {}});
    }
    return out;
  }

  std::fill(ws.below_ok.begin(), ws.below_ok.end(), 0);
  std::fill(ws.above_version.begin(), ws.above_version.end(), std::size_t(-1));
  ws.n_batch = 0;
  ws.batch.clear();
  const ParzenOptions popt = parzen_options(cfg_);

  // Univariate models reuse the incrementally sorted history (see TPEWorkspace::sorted).
  const bool use_sort_cache = true;
  const std::size_t m = cfg_.n_ei_candidates;
  constexpr std::size_t kNoRow = std::size_t(-1);
  const std::size_t N = trials.size();
  if (use_sort_cache) {
    // Parameter-major copy of the history (NaN where inactive or malformed), extended incrementally.
    ws.update_history(trials);
    ws.update_sort_cache(trials);
  }
  const std::size_t XS = ws.xt_cap;  // column stride of ws.xt
  // Parallel univariate path: groups are independent when no parameter is conditional; fits and scoring
  // run on several threads, the random draws stay in group order, so results do not depend on nt.
  int nt = 1;
#ifdef _OPENMP
  if (!cfg_.multivariate && ws.unconditional && ws.groups.size() > 1)
    nt = std::min(core::resolve_threads(cfg_.n_threads), static_cast<int>(ws.groups.size()));
#endif
  if (ws.scr.size() < static_cast<std::size_t>(nt)) ws.scr.resize(static_cast<std::size_t>(nt));
  for (int t = 0; t < nt; ++t)  // row of an above trial in the current gather; kNoRow for the others
    if (use_sort_cache) ws.scr[static_cast<std::size_t>(t)].rowpos.assign(N, kNoRow);

  // Observations of group g (rows where it is active) from trials `idx` (+ in-batch liars). With
  // want_order (above set), also their argsort(s) in sc.order from the sort cache (want_order is cleared
  // when the cache cannot give them). Recency
  // weights go to `wts` (recomputed only when the row count changes).
  auto gather = [&](detail::TPEWorkspace::Scratch& sc, const detail::Group& g, const std::vector<std::size_t>& idx,
                    bool with_batch, bool& want_order, std::vector<double>& wts) -> std::size_t {
    const std::size_t first = g.params[0];
    std::size_t rows = 0;  // sc.obs is resized below (no clear: growing a buffer value-initialises its tail)
    if (use_sort_cache && g.params.size() == 1) {
      const detail::ParamModel& pmf = ws.pm[first];
      const double* col = ws.xt.data() + first * XS;
      sc.obs.resize(idx.size());
      double* o = sc.obs.data();
      for (std::size_t i : idx) {
        const double v = col[i];
        if (std::isnan(v)) continue;
        o[rows] = to_model(pmf, v);
        if (want_order) sc.rowpos[i] = rows;
        ++rows;
      }
      sc.obs.resize(rows);
    } else {
      // Row-major rows of the group from the parameter-major copy (contiguous reads; log only for log-scaled
      // parameters): first the active trials, then one column at a time.
      const std::size_t dg = g.params.size();
      const double* colf = ws.xt.data() + first * XS;
      sc.act.clear();
      for (std::size_t i : idx)
        if (!std::isnan(colf[i])) sc.act.push_back(i);
      rows = sc.act.size();
      sc.obs.resize(rows * dg);
      double* o = sc.obs.data();
      for (std::size_t q = 0; q < dg; ++q) {
        const detail::ParamModel& pq = ws.pm[g.params[q]];
        const double* col = ws.xt.data() + g.params[q] * XS;
        if (pq.log) {
          for (std::size_t r = 0; r < rows; ++r) o[r * dg + q] = std::log(col[sc.act[r]]);
        } else {
          for (std::size_t r = 0; r < rows; ++r) o[r * dg + q] = col[sc.act[r]];
        }
      }
      if (want_order)
        for (std::size_t r = 0; r < rows; ++r) sc.rowpos[sc.act[r]] = r;
    }
    if (want_order && g.params.size() > 1) {
      // Joint group: one argsort per dimension from the sort cache (dimension-major, rows incl. in-batch
      // liars, ties by row -- the stable argsort fit() would compute). Categorical dimensions need none.
      const std::size_t dg = g.params.size();
      std::size_t total = rows;
      if (with_batch)
        for (std::size_t b = 0; b < ws.n_batch; ++b)
          if (!std::isnan(ws.batch[b * D + first])) ++total;
      sc.order.resize(dg * total);
      for (std::size_t q = 0; q < dg && want_order; ++q) {
        const detail::ParamModel& pq = ws.pm[g.params[q]];
        if (!detail::cacheable(pq)) continue;
        std::size_t* o = sc.order.data() + q * total;
        std::size_t cnt = 0;
        for (const std::uint32_t e : ws.sorted[g.params[q]]) {
          const std::size_t r = sc.rowpos[e];
          if (r != kNoRow && cnt < rows) o[cnt++] = r;
        }
        if (cnt != rows) want_order = false;  // malformed history (NaN inside an active group): plain sort
      }
    }
    if (want_order && g.params.size() == 1) {
      // Above trials active in `first`, in sorted order (below trials keep kNoRow; inactive above trials
      // are not in the sorted list).
      sc.order.resize(rows);
      std::size_t q = 0;
      for (const std::uint32_t e : ws.sorted[first]) {
        const std::size_t r = sc.rowpos[e];
        if (r != kNoRow) sc.order[q++] = r;
      }
      sc.order.resize(q);
    }
    if (with_batch) {
      const std::size_t dg = g.params.size();
      const std::size_t total = sc.order.size() / dg;
      for (std::size_t b = 0; b < ws.n_batch; ++b) {
        const double* x = ws.batch.data() + b * D;
        if (std::isnan(x[first])) continue;
        for (std::size_t p : g.params) sc.obs.push_back(to_model(ws.pm[p], x[p]));
        if (want_order && dg > 1) {  // per dimension, after equal values (its row is the largest so far)
          for (std::size_t q = 0; q < dg; ++q) {
            if (!detail::cacheable(ws.pm[g.params[q]])) continue;
            std::size_t* o = sc.order.data() + q * total;
            const double v = detail::model_value(ws.pm[g.params[q]], x[g.params[q]]);
            std::size_t* it = std::upper_bound(o, o + rows, v, [&](double a, std::size_t r) {
              double c = sc.obs[r * dg + q];
              return a < (c == 0.0 ? 0.0 : c);
            });
            std::copy_backward(it, o + rows, o + rows + 1);
            *it = rows;
          }
        } else if (want_order) {  // after equal values: its row is the largest so far
          const double v = detail::model_value(ws.pm[first], x[first]);
          auto it = std::upper_bound(sc.order.begin(), sc.order.end(), v, [&](double a, std::size_t r) {
            double b = sc.obs[r];
            return a < (b == 0.0 ? 0.0 : b);
          });
          sc.order.insert(it, rows);
        }
        ++rows;
      }
    }
    if (wts.size() != rows) {
      wts.resize(rows);
      tpe_recency_weights(rows, cfg_.n_flat_weights, wts.data());
    }
    return rows;
  };

  // g(x) of a joint group with many rows and no in-batch liar: the rows gathered straight in the order the
  // windowed estimator keeps them (by the first parameter's model value, ties by trial), with every
  // dimension's argsort over those rows, from the sort cache (ParzenEstimator::fit_presorted; the same model
  // as fit() on the rows in trial order). Returns the row count, 0 when this path does not apply.
  auto gather_presorted = [&](detail::TPEWorkspace::Scratch& sc, const detail::Group& g) -> std::size_t {
    const std::size_t dg = g.params.size();
    const std::size_t first = g.params[0];
    if (!use_sort_cache || popt.bandwidth != ParzenBandwidth::Neighbour || dg < 2 ||
        !detail::cacheable(ws.pm[first]))
      return 0;
    if (cfg_.constant_liar)
      for (std::size_t b = 0; b < ws.n_batch; ++b)
        if (!std::isnan(ws.batch[b * D + first])) return 0;
    const double* colf = ws.xt.data() + first * XS;
    sc.act.clear();
    for (std::size_t i : ws.above)
      if (!std::isnan(colf[i])) sc.act.push_back(i);
    const std::size_t rows = sc.act.size();
    if (rows < ParzenEstimator::kWindowRows) return 0;
    for (std::size_t r = 0; r < rows; ++r) sc.rowpos[sc.act[r]] = r;
    // perm[j]: trial-order row of the j-th row in sorted order.
    sc.perm.resize(rows);
    std::size_t cnt = 0;
    for (const std::uint32_t e : ws.sorted[first]) {
      const std::size_t r = sc.rowpos[e];
      if (r != kNoRow && cnt < rows) sc.perm[cnt++] = r;
    }
    if (cnt != rows) return 0;  // malformed history (NaN inside an active group): plain path
    // Trial of each sorted row; the rows in sorted order, column-major.
    for (std::size_t j = 0; j < rows; ++j) sc.rowpos[sc.act[sc.perm[j]]] = j;
    sc.obs.resize(rows * dg);
    double* o = sc.obs.data();
    {
      std::vector<std::size_t>& trial = sc.trial;  // trial index of each sorted row
      trial.resize(rows);
      for (std::size_t j = 0; j < rows; ++j) trial[j] = sc.act[sc.perm[j]];
      for (std::size_t q = 0; q < dg; ++q) {
        const detail::ParamModel& pq = ws.pm[g.params[q]];
        const double* col = ws.xt.data() + g.params[q] * XS;
        double* oq = o + q * rows;  // column-major (fit_presorted)
        if (pq.log) {
          for (std::size_t j = 0; j < rows; ++j) oq[j] = std::log(col[trial[j]]);
        } else {
          for (std::size_t j = 0; j < rows; ++j) oq[j] = col[trial[j]];
        }
      }
    }
    // Argsorts over the sorted rows (dimension 0: the identity; categorical ones unused). A dimension whose
    // cache does not cover every row gets an invalid order, which the estimator replaces by its own sort.
    sc.order.resize(dg * rows);
    for (std::size_t j = 0; j < rows; ++j) sc.order[j] = j;
    for (std::size_t q = 1; q < dg; ++q) {
      std::size_t* od = sc.order.data() + q * rows;
      if (!detail::cacheable(ws.pm[g.params[q]])) {
        for (std::size_t j = 0; j < rows; ++j) od[j] = j;
        continue;
      }
      std::size_t c = 0;
      for (const std::uint32_t e : ws.sorted[g.params[q]]) {
        const std::size_t r = sc.rowpos[e];
        if (r != kNoRow && c < rows) od[c++] = r;
      }
      for (; c < rows; ++c) od[c] = rows;
    }
    if (sc.wts_above.size() != rows) {
      sc.wts_above.resize(rows);
      tpe_recency_weights(rows, cfg_.n_flat_weights, sc.wts_above.data());
    }
    sc.wts_sorted.resize(rows);
    for (std::size_t j = 0; j < rows; ++j) sc.wts_sorted[j] = sc.wts_above[sc.perm[j]];
    return rows;
  };

  // Refit group gi's estimators where stale (l(x) once per ask; g(x) after each constant liar).
  auto fit_group = [&](detail::TPEWorkspace::Scratch& sc, std::size_t gi) {
    const detail::Group& g = ws.groups[gi];
    if (!ws.below_ok[gi]) {
      bool no_order = false;
      std::swap(sc.obs, sc.obs_below);  // l(x) and g(x) keep their own row buffers (no regrowth per ask)
      std::size_t rows = gather(sc, g, ws.below, false, no_order, sc.wts);
      std::swap(sc.obs, sc.obs_below);
      ws.est_below[gi].fit(g.dims, sc.obs_below.data(), rows, sc.wts.data(), popt);
      ws.below_ok[gi] = 1;
    }
    if (ws.above_version[gi] != ws.n_batch) {
      if (const std::size_t rows = gather_presorted(sc, g)) {
        ws.est_above[gi].fit_presorted(g.dims, sc.obs.data(), rows, sc.wts_sorted.data(), popt, sc.order.data(),
                                       sc.perm.data());
        ws.above_version[gi] = ws.n_batch;
        return;
      }
      bool want_order = use_sort_cache && popt.bandwidth == ParzenBandwidth::Neighbour &&
                        (g.params.size() > 1 || detail::cacheable(ws.pm[g.params[0]]));
      std::size_t rows = gather(sc, g, ws.above, cfg_.constant_liar, want_order, sc.wts_above);
      ws.est_above[gi].fit(g.dims, sc.obs.data(), rows, sc.wts_above.data(), popt,
                           want_order ? sc.order.data() : nullptr);
      ws.above_version[gi] = ws.n_batch;
    }
  };
  // Index of the candidate with the largest log l(x) - log g(x) among cnt (first on ties); its score in `score`.
  auto best_of = [](const double* lb, const double* la, std::size_t cnt, double& score) {
    std::size_t best = 0;
    score = -kInf;
    for (std::size_t c = 0; c < cnt; ++c) {
      double sc = lb[c] - la[c];
      if (std::isnan(sc)) sc = la[c] == -kInf ? kInf : -kInf;
      if (sc > score) {
        score = sc;
        best = c;
      }
    }
    return best;
  };
  // Refinement of joint models (multivariate; univariate asks measured worse with it): R more candidates drawn
  // around the incumbent (the best trial of the below set where the group is active), with refine_scale
  // times the widths of its l(x) kernel, scored by the same ratio; the best of all m + R is proposed.
  const std::size_t R = cfg_.multivariate ? cfg_.n_refine_candidates : 0;
  // Group gi's incumbent in model coordinates (into ws.centre) and the l(x) kernel centred there (estimators
  // may keep their kernels sorted, so it is found by its centre); kNoRow when no below trial has g active.
  auto incumbent_kernel = [&](std::size_t gi) {
    const detail::Group& g = ws.groups[gi];
    const ParzenEstimator& eb = ws.est_below[gi];
    const std::size_t dg = g.params.size();
    for (const std::size_t t : ws.ranked) {
      if (std::isnan(ws.xt[g.params[0] * XS + t])) continue;
      ws.centre.resize(dg);
      for (std::size_t q = 0; q < dg; ++q)
        ws.centre[q] = to_model(ws.pm[g.params[q]], ws.xt[g.params[q] * XS + t]);
      for (std::size_t k = 0; k + 1 < eb.n_kernels(); ++k) {  // the prior kernel is last
        std::size_t q = 0;
        while (q < dg && eb.mus(q)[k] == ws.centre[q]) ++q;
        if (q == dg) return k;
      }
      break;
    }
    return kNoRow;
  };
  // Writes group gi's chosen point (model coordinates) into x.
  auto put = [&](std::size_t gi, const double* win, std::vector<double>& x) {
    const detail::Group& g = ws.groups[gi];
    for (std::size_t q = 0; q < g.params.size(); ++q) {
      std::size_t p = g.params[q];
      x[p] = from_model(space, ws.pm[p], p, win[q]);
    }
  };

  for (std::size_t j = 0; j < n; ++j) {
    if (card != 0 && ws.seen.size() >= card) break;
    std::vector<double> x(D, kNaN);
    // Refinement draws come from their own stream, seeded from the main one once per point.
    Rng ref_rng(R > 0 ? rng.next_u64() : 0);
    if (nt > 1) {
      // Univariate, unconditional: every group is active and one-dimensional. Fit in parallel, draw in
      // group order (the same stream as the sequential loop), score in parallel, then choose.
      const std::size_t G = ws.groups.size();
      const long long Gl = static_cast<long long>(G);
      ws.cand.resize(m * G);
      ws.lb.resize(m * G);
      ws.la.resize(m * G);
      std::exception_ptr error;
      long long error_group = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
      for (long long gi = 0; gi < Gl; ++gi) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        try {  // exceptions must not leave an OpenMP region: keep the first (lowest group) and rethrow
          fit_group(ws.scr[static_cast<std::size_t>(tid)], static_cast<std::size_t>(gi));
        } catch (...) {
#ifdef _OPENMP
#pragma omp critical(kt_tpe_error)
#endif
          if (!error || gi < error_group) {
            error = std::current_exception();
            error_group = gi;
          }
        }
      }
      if (error) std::rethrow_exception(error);
      for (std::size_t gi = 0; gi < G; ++gi) ws.est_below[gi].sample(rng, m, ws.cand.data() + gi * m);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
      for (long long gi = 0; gi < Gl; ++gi) {
        const std::size_t o = static_cast<std::size_t>(gi) * m;
        ws.est_below[static_cast<std::size_t>(gi)].log_pdf(ws.cand.data() + o, m, ws.lb.data() + o, 1);
        ws.est_above[static_cast<std::size_t>(gi)].log_pdf(ws.cand.data() + o, m, ws.la.data() + o, 1);
      }
      for (std::size_t gi = 0; gi < G; ++gi) {
        double score;
        const std::size_t o = gi * m;
        put(gi, ws.cand.data() + o + best_of(ws.lb.data() + o, ws.la.data() + o, m, score), x);
      }
    }
    for (std::size_t gi = 0; nt == 1 && gi < ws.groups.size(); ++gi) {
      const detail::Group& g = ws.groups[gi];
      if (!space.is_active(g.params[0], x)) continue;
      const std::size_t dg = g.params.size();
      fit_group(ws.scr[0], gi);
      ws.cand.resize(m * dg);
      ws.lb.resize(m);
      ws.la.resize(m);
      ws.est_below[gi].sample(rng, m, ws.cand.data());
      ws.est_below[gi].log_pdf(ws.cand.data(), m, ws.lb.data(), cfg_.n_threads);
      ws.est_above[gi].log_pdf(ws.cand.data(), m, ws.la.data(), cfg_.n_threads);
      double score;
      const std::size_t best = best_of(ws.lb.data(), ws.la.data(), m, score);
      const double* win = ws.cand.data() + best * dg;
      const std::size_t kinc = R > 0 ? incumbent_kernel(gi) : kNoRow;
      if (kinc != kNoRow) {
        const ParzenEstimator& eb = ws.est_below[gi];
        ws.loc.resize(R * dg);
        ws.lb2.resize(R);
        ws.la2.resize(R);
        eb.sample_near(ref_rng, ws.centre.data(), kinc, cfg_.refine_scale, R, ws.loc.data());
        ws.est_below[gi].log_pdf(ws.loc.data(), R, ws.lb2.data(), cfg_.n_threads);
        ws.est_above[gi].log_pdf(ws.loc.data(), R, ws.la2.data(), cfg_.n_threads);
        double s2;
        const std::size_t b2 = best_of(ws.lb2.data(), ws.la2.data(), R, s2);
        if (s2 > score) win = ws.loc.data() + b2 * dg;
      }
      put(gi, win, x);
    }
    space.apply_conditions(x);
    if (ws.dedupe) {
      std::uint64_t h = hash_point(x);
      if (ws.seen.count(h)) {
        // The model proposed a point already tried (small discrete spaces): take an unseen random one.
        if (!draw_random(x)) break;
        h = hash_point(x);
      }
      ws.seen.insert(h);
    }
    if (cfg_.constant_liar) {
      ws.batch.insert(ws.batch.end(), x.begin(), x.end());
      ++ws.n_batch;
    }
    out.push_back({std::move(x), {}});
  }
  return out;
}

}  // namespace kubetune::search
