// GP Bayesian-optimisation searcher: encoding, hyperparameter fit, acquisition maximisation, fantasies.
#include "eigen_single_thread.hpp"  // first: single-threaded Eigen products
#include "kubetune/search/gp/bayesopt.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <numeric>
#include <queue>
#include <stdexcept>

#include <LBFGSB.h>

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/core/point_set.hpp"

namespace kubetune::search::gp {
namespace {

constexpr double kInactive = -1.0;  // feature value of an inactive (conditional) numeric parameter
// L-BFGS-B iterations of a warm-started refit: refits are amortised (refit_due), and each continues from the
// previous optimum, so a few iterations per refit track the slowly moving optimum of a growing history.
constexpr int kWarmIterations = 5;
constexpr Eigen::Index kParallelRefine = 2048;  // training points from which refinements run in parallel
constexpr int kHedgeSize = 3;       // gp_hedge portfolio: EI, PI, LCB (as scikit-optimize)
const AcqType kHedge[kHedgeSize] = {AcqType::LogEI, AcqType::PI, AcqType::UCB};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Internal point <-> GP features: numeric parameters one column (to_unit: log parameters in log space,
// integer/step cells centred), categoricals one-hot; inactive parameters a constant outside [0, 1].
struct Encoder {
  const SearchSpace& space;
  std::vector<Eigen::Index> col, width;
  Eigen::Index D = 0;
  std::vector<std::size_t> categorical;  // parameter indices

  explicit Encoder(const SearchSpace& s) : space(s) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      col.push_back(D);
      bool cat = s.param(i).type == ParamType::Categorical;
      Eigen::Index w = cat ? static_cast<Eigen::Index>(s.param(i).choices.size()) : 1;
      width.push_back(w);
      D += w;
      if (cat) categorical.push_back(i);
    }
  }
  bool is_cat(std::size_t i) const { return space.param(i).type == ParamType::Categorical; }
  void encode(const std::vector<double>& x, double* f) const {
    for (std::size_t i = 0; i < space.size(); ++i) {
      if (is_cat(i)) {
        for (Eigen::Index c = 0; c < width[i]; ++c) f[col[i] + c] = 0.0;
        if (!std::isnan(x[i])) f[col[i] + static_cast<Eigen::Index>(x[i])] = 1.0;
      } else {
        f[col[i]] = std::isnan(x[i]) ? kInactive : space.to_unit(i, x[i]);
      }
    }
  }
  Eigen::VectorXd encode(const std::vector<double>& x) const {
    Eigen::VectorXd f(D);
    encode(x, f.data());
    return f;
  }
};

struct Candidate {
  std::vector<double> full;  // every parameter set (conditions not applied)
  std::vector<double> x;     // effective point (inactive = NaN)
  double score = -std::numeric_limits<double>::infinity();
};

std::vector<double> effective(const SearchSpace& space, std::vector<double> full) {
  space.apply_conditions(full);
  return full;
}

// A full vector drawn uniformly in the unit cube (every parameter set).
std::vector<double> uniform_full(const SearchSpace& space, Rng& rng) {
  std::vector<double> f(space.size());
  for (std::size_t i = 0; i < space.size(); ++i) f[i] = space.from_unit(i, rng.uniform());
  return f;
}

double acq_value(AcqType a, const GPConfig& cfg, double mu, double var, double best, double* dmu = nullptr,
                 double* dvar = nullptr) {
  return acquisition(a, mu, var, best, cfg.xi, cfg.kappa, dmu, dvar);
}

// Best-first branch and bound over candidates' exact acquisition values. A candidate's bound is the value at
// an upper bound of its variance: first the screen's single-point bound, then the variance given the first
// j training points for a fixed schedule of j (GaussianProcess::solve_cross_prefix), each step tighter, the
// last exact. next() extends the candidate with the best bound by one step until the best is exact: no other
// candidate can then beat it. Ties go to the lower index, so the order is a function of the inputs.
class PrefixSearch {
 public:
  using Value = std::function<double(std::size_t, double)>;     // (candidate, variance) -> acquisition
  using Bounded = std::function<bool(std::size_t)>;             // value grows with the variance there
  PrefixSearch(const GaussianProcess& gp, double* cross, const Eigen::VectorXd& var_ub, Value value, Bounded bounded)
      : gp_(gp), cross_(cross), value_(std::move(value)), bounded_(std::move(bounded)) {
    const Eigen::Index n = gp.size();
    for (Eigen::Index j = std::min<Eigen::Index>(kFirstStep, n); steps_.empty() || steps_.back() < n;
         j = std::min(n, j + std::max<Eigen::Index>(1, j / 2)))
      steps_.push_back(j);
    const std::size_t nc = static_cast<std::size_t>(var_ub.size());
    var_.assign(var_ub.data(), var_ub.data() + nc);
    step_.assign(nc, -1);
    score_.resize(nc);
    for (std::size_t c = 0; c < nc; ++c) push(c);
  }

  /// The candidate with the best exact value among those not returned yet; nullopt when none is left.
  std::optional<std::size_t> next() {
    while (!heap_.empty()) {
      const std::size_t c = heap_.top().second;
      heap_.pop();
      if (exact(c)) return c;
      extend(c);
      push(c);
    }
    return std::nullopt;
  }
  /// Exact acquisition value of a candidate returned by next().
  double score(std::size_t c) const { return score_[c]; }

 private:
  static constexpr Eigen::Index kFirstStep = 32;
  using Entry = std::pair<double, std::size_t>;
  struct Worse {  // max-heap on the bound, lower index first among equals
    bool operator()(const Entry& p, const Entry& q) const {
      return p.first < q.first || (p.first == q.first && p.second > q.second);
    }
  };

  bool exact(std::size_t c) const { return step_[c] + 1 == static_cast<int>(steps_.size()); }
  void extend(std::size_t c) {
    const Eigen::Index from = step_[c] < 0 ? 0 : steps_[static_cast<std::size_t>(step_[c])];
    const Eigen::Index to = steps_[static_cast<std::size_t>(++step_[c])];
    const double v = gp_.solve_cross_prefix(cross_ + static_cast<std::size_t>(gp_.size()) * c, from, to);
    var_[c] = exact(c) ? v : std::min(v, var_[c]);
  }
  void push(std::size_t c) {
    const double kInf = std::numeric_limits<double>::infinity();
    double key = kInf;
    if (exact(c)) {
      score_[c] = value_(c, var_[c]);
      key = std::isnan(score_[c]) ? -kInf : score_[c];
    } else if (bounded_(c)) {
      const double u = value_(c, var_[c]);
      key = std::isnan(u) ? kInf : u;
    }
    heap_.emplace(key, c);
  }

  const GaussianProcess& gp_;
  double* cross_;  // n x nc, column c solved in place up to steps_[step_[c]]
  Value value_;
  Bounded bounded_;
  std::vector<Eigen::Index> steps_;  // prefix sizes, increasing, the last = gp.size()
  std::vector<int> step_;            // per candidate: index into steps_ reached (-1: screen bound only)
  std::vector<double> var_, score_;
  std::priority_queue<Entry, std::vector<Entry>, Worse> heap_;
};

// Context of one proposal: model, incumbent, points to avoid.
struct Proposer {
  const SearchSpace& space;
  const Encoder& enc;
  const GPConfig& cfg;
  const GaussianProcess& gp;
  const std::vector<std::vector<double>>& elite;  // best observed points (local search centres)
  int threads;

  void score(std::vector<Candidate>& cands, AcqType a, double best) const {
    if (cands.empty()) return;
    Eigen::MatrixXd F(enc.D, static_cast<Eigen::Index>(cands.size()));
    for (std::size_t c = 0; c < cands.size(); ++c) enc.encode(cands[c].x, F.col(static_cast<Eigen::Index>(c)).data());
    Eigen::VectorXd mu, var;
    gp.predict(F, mu, var, threads);
    for (std::size_t c = 0; c < cands.size(); ++c)
      cands[c].score = acq_value(a, cfg, mu[static_cast<Eigen::Index>(c)], var[static_cast<Eigen::Index>(c)], best);
  }

  // Categorical choices of one candidate: exact enumeration of every combination when there are at most
  // cfg.max_enumeration, otherwise one greedy coordinate sweep.
  void improve_categoricals(Candidate& c, AcqType a, double best) const {
    const auto& cats = enc.categorical;
    if (cats.empty()) return;
    std::uint64_t combos = 1;
    for (std::size_t i : cats) {
      combos *= space.param(i).choices.size();
      if (combos > static_cast<std::uint64_t>(std::max(cfg.max_enumeration, 1))) break;
    }
    std::vector<Candidate> trial;
    if (combos <= static_cast<std::uint64_t>(std::max(cfg.max_enumeration, 1))) {
      for (std::uint64_t m = 0; m < combos; ++m) {
        Candidate t{c.full, {}, 0.0};
        std::uint64_t r = m;
        for (std::size_t i : cats) {
          std::uint64_t k = space.param(i).choices.size();
          t.full[i] = static_cast<double>(r % k);
          r /= k;
        }
        t.x = effective(space, t.full);
        trial.push_back(std::move(t));
      }
      score(trial, a, best);
      for (auto& t : trial)
        if (t.score > c.score) c = t;
      return;
    }
    for (std::size_t i : cats) {
      trial.clear();
      for (std::size_t k = 0; k < space.param(i).choices.size(); ++k) {
        Candidate t{c.full, {}, 0.0};
        t.full[i] = static_cast<double>(k);
        t.x = effective(space, t.full);
        trial.push_back(std::move(t));
      }
      score(trial, a, best);
      for (auto& t : trial)
        if (t.score > c.score) c = t;
    }
  }

  // L-BFGS-B on the continuous relaxation of the active numeric parameters, then rounding (from_unit snaps
  // integers, steps and discrete values) and exact re-scoring; keeps the better of before / after.
  void refine(Candidate& c, AcqType a, double best) const {
    std::vector<std::size_t> free;
    for (std::size_t i = 0; i < space.size(); ++i)
      if (!enc.is_cat(i) && !std::isnan(c.x[i])) free.push_back(i);
    if (free.empty()) return;
    Eigen::VectorXd base = enc.encode(c.x);
    const Eigen::Index nf = static_cast<Eigen::Index>(free.size());
    Eigen::VectorXd z(nf), lb = Eigen::VectorXd::Zero(nf), ub = Eigen::VectorXd::Ones(nf);
    for (Eigen::Index j = 0; j < nf; ++j) z[j] = base[enc.col[free[static_cast<std::size_t>(j)]]];
    Eigen::VectorXd f = base, dmu(enc.D), dvar(enc.D);
    auto obj = [&](const Eigen::VectorXd& zz, Eigen::VectorXd& g) -> double {
      for (Eigen::Index j = 0; j < nf; ++j) f[enc.col[free[static_cast<std::size_t>(j)]]] = zz[j];
      double mu = 0, var = 0, da_dmu = 0, da_dvar = 0;
      gp.predict_one(f.data(), mu, var, dmu.data(), dvar.data());
      double v = acq_value(a, cfg, mu, var, best, &da_dmu, &da_dvar);
      g.resize(nf);
      for (Eigen::Index j = 0; j < nf; ++j) {
        Eigen::Index cj = enc.col[free[static_cast<std::size_t>(j)]];
        g[j] = -(da_dmu * dmu[cj] + da_dvar * dvar[cj]);
      }
      if (!std::isfinite(v) || !g.allFinite()) {
        g.setZero();
        return 1e300;
      }
      return -v;
    };
    LBFGSpp::LBFGSBParam<double> param;
    param.m = 6;
    param.max_iterations = 40;
    // Gradient 1e-5, or an iteration improving the acquisition by < 1e-6 relative: finer optima of the
    // relaxation change nothing once rounded onto legal values and re-scored.
    param.epsilon = 1e-5;
    param.epsilon_rel = 1e-5;
    param.past = 1;
    param.delta = 1e-6;
    param.max_linesearch = 20;
    LBFGSpp::LBFGSBSolver<double> solver(param);
    double fz = 0.0;
    try {
      solver.minimize(obj, z, fz, lb, ub);
    } catch (const std::exception&) {
      // keep z as left by the solver (always within bounds)
    }
    Candidate r = c;
    for (Eigen::Index j = 0; j < nf; ++j) {
      std::size_t i = free[static_cast<std::size_t>(j)];
      r.full[i] = space.from_unit(i, std::clamp(z[j], 0.0, 1.0));
    }
    r.x = effective(space, r.full);
    std::vector<Candidate> one{r};
    score(one, a, best);
    if (one[0].score > c.score) c = one[0];
  }

  // Best new point for acquisition a, avoiding `seen`; nullopt when every candidate is a repeat.
  std::optional<Candidate> propose(AcqType a, double best, const PointSet& seen,
                                   Rng& rng) const {
    const int n_cand = std::max(cfg.n_candidates, 16);
    const int n_local = elite.empty() ? 0 : n_cand / 4;
    std::vector<Candidate> cands;
    cands.reserve(static_cast<std::size_t>(n_cand));
    for (int c = 0; c < n_cand - n_local; ++c) {
      Candidate k;
      k.full = uniform_full(space, rng);
      k.x = effective(space, k.full);
      cands.push_back(std::move(k));
    }
    static const double kScales[3] = {0.01, 0.05, 0.2};
    for (int c = 0; c < n_local; ++c) {
      const std::vector<double>& centre = elite[static_cast<std::size_t>(c) % elite.size()];
      double s = kScales[rng.below(3)];
      Candidate k;
      k.full.resize(space.size());
      for (std::size_t i = 0; i < space.size(); ++i) {
        if (std::isnan(centre[i])) {
          k.full[i] = space.from_unit(i, rng.uniform());
        } else if (enc.is_cat(i)) {
          k.full[i] = rng.uniform() < 0.2 ? space.from_unit(i, rng.uniform()) : centre[i];
        } else {
          double u = space.to_unit(i, centre[i]) + s * rng.normal();
          k.full[i] = space.from_unit(i, std::clamp(u, 0.0, 1.0));
        }
      }
      k.x = effective(space, k.full);
      cands.push_back(std::move(k));
    }
    // Exact means and variance bounds for all candidates (O(n) each), then best-first branch and bound on
    // the exact variances (PrefixSearch): the same candidates as scoring all of them exactly, at a
    // fraction of the O(n^2) solves.
    const std::size_t nc = cands.size();
    Eigen::MatrixXd F(enc.D, static_cast<Eigen::Index>(nc));
    for (std::size_t c = 0; c < nc; ++c) enc.encode(cands[c].x, F.col(static_cast<Eigen::Index>(c)).data());
    Eigen::VectorXd mu_all, var_ub;
    // k(X, candidates), solved in place by the search; the buffer persists per thread (contents never carry
    // over: predict_screen overwrites all n x nc entries) so that it is not re-faulted in on every ask.
    thread_local std::vector<double> cross_buf;
    cross_buf.resize(static_cast<std::size_t>(gp.size()) * nc);
    gp.predict_screen(F, mu_all, var_ub, threads, cross_buf.data());
    auto value = [&](std::size_t c, double var) { return acq_value(a, cfg, mu_all[static_cast<Eigen::Index>(c)], var, best); };
    // log-EI, EI and UCB grow with the variance at a fixed mean; PI only where mu + xi >= best.
    auto bounded = [&](std::size_t c) { return a != AcqType::PI || mu_all[static_cast<Eigen::Index>(c)] + cfg.xi >= best; };
    PrefixSearch search(gp, cross_buf.data(), var_ub, value, bounded);
    // The best few distinct, unseen candidates, refined below.
    std::vector<Candidate> top;
    PointSet picked;
    const std::size_t want = static_cast<std::size_t>(std::max(cfg.n_refine, 1));
    while (top.size() < want) {
      const std::optional<std::size_t> c = search.next();
      if (!c) break;
      if (seen.contains(cands[*c].x) || !picked.insert(cands[*c].x)) continue;
      cands[*c].score = search.score(*c);
      top.push_back(cands[*c]);
    }
    if (top.empty()) return std::nullopt;  // every candidate repeats a known point
    const Candidate raw_best = top.front();
    // Refine them in parallel; each start is independent, so the result does not depend on the thread count.
    if (cfg.n_refine > 0) {
      // One start costs ~25 predictions of two O(n^2) solves, ~10 ms at n = 2048: below that a thread's share
      // is too short for a shared machine (see for_each_block in gp.cpp).
      const int nt = gp.size() >= kParallelRefine ? std::min<int>(threads, static_cast<int>(top.size())) : 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(std::max(nt, 1))
      for (std::size_t t = 0; t < top.size(); ++t) {
        improve_categoricals(top[t], a, best);
        refine(top[t], a, best);
      }
    }
    std::optional<Candidate> out;
    for (auto& t : top)
      if (!seen.contains(t.x) && (!out || t.score > out->score)) out = t;
    return out ? out : raw_best;  // every refined point was a repeat: the best unseen raw candidate
  }
};

// Random draws from the priors (sample_unseen) before the space counts as exhausted.
constexpr int kUnseenTries = 200;

}  // namespace

bool refit_due(std::size_t n, std::size_t n_fit, int refit_scale) {
  if (refit_scale <= 0 || n < n_fit) return true;
  const std::size_t step = std::max<std::size_t>(1, n_fit / static_cast<std::size_t>(refit_scale));
  return n >= n_fit + step;
}

std::string to_string(Fantasy f) {
  switch (f) {
    case Fantasy::Believer: return "believer";
    case Fantasy::LiarMin: return "liar_min";
    case Fantasy::LiarMean: return "liar_mean";
    case Fantasy::LiarMax: return "liar_max";
  }
  return "believer";
}

Fantasy fantasy_from_string(const std::string& s) {
  std::string t = lower(s);
  if (t == "believer" || t == "kriging_believer") return Fantasy::Believer;
  if (t == "liar_min" || t == "cl_min") return Fantasy::LiarMin;
  if (t == "liar_mean" || t == "cl_mean") return Fantasy::LiarMean;
  if (t == "liar_max" || t == "cl_max") return Fantasy::LiarMax;
  KT_THROW(InvalidArgument, "fantasy '", s, "' is not one of believer, liar_min, liar_mean, liar_max");
}

struct GPSearcher::Cache {
  std::mutex mu;
  BorderedFactor factor;
};

GPSearcher::GPSearcher() : cache_(std::make_shared<Cache>()) {}

namespace {
// Every GP setting, once: JSON (kubetune and Katib/skopt names), validation, Python keywords, stubs.
const settings::Fields<GPConfig>& table() {
  static const settings::Fields<GPConfig> t =
      settings::Fields<GPConfig>("gp")
          .choice<&GPConfig::kernel, &kernel_from_string>(
              "kernel", {to_string(KernelType::Matern52), to_string(KernelType::RBF)}, "Covariance kernel (ARD).")
          .choice<&GPConfig::acq, &acq_from_string>(
              "acq_func",
              {to_string(AcqType::LogEI), to_string(AcqType::EI), to_string(AcqType::PI), to_string(AcqType::UCB),
               to_string(AcqType::Hedge)},
              "Acquisition function (Katib/skopt spellings EI, PI, LCB, gp_hedge accepted).")
          .alias("acquisition")
          .field<&GPConfig::n_initial_points>("n_initial_points", "Random points before the model is used.")
          .alias("n_startup_trials")
          .at_least(0)
          .field<&GPConfig::xi>("xi", "EI / PI improvement margin.")
          .at_least(0)
          .field<&GPConfig::kappa>("kappa", "LCB width.")
          .at_least(0)
          .field<&GPConfig::n_candidates>("n_candidates", "Random + local candidates scored per proposal.")
          .at_least(1)
          .field<&GPConfig::n_refine>("n_refine", "Best candidates refined by L-BFGS-B (0 = sampling only).")
          .at_least(0)
          .choice<&GPConfig::prior, &hyper_prior_from_string>(
              "prior", {to_string(HyperPrior::None), to_string(HyperPrior::Optuna)}, "Prior on the hyperparameters.")
          .field<&GPConfig::n_hyper_restarts>("n_hyper_restarts", "Random restarts of the likelihood fit.")
          .at_least(0)
          .field<&GPConfig::warm_start>("warm_start", "Start the fit from the hyperparameters of the last GP trial.")
          .field<&GPConfig::deterministic>("deterministic", "Noise-free objective: noise fixed to a 1e-6 nugget.")
          .alias("deterministic_objective")
          .choice<&GPConfig::fantasy, &fantasy_from_string>(
              "fantasy",
              {to_string(Fantasy::Believer), to_string(Fantasy::LiarMin), to_string(Fantasy::LiarMean),
               to_string(Fantasy::LiarMax)},
              "How running trials and earlier batch members are fantasised.")
          .field<&GPConfig::max_enumeration>("max_enumeration", "Categorical combinations enumerated exactly up to this count.")
          .at_least(1)
          .field<&GPConfig::max_fit_points>("max_fit_points", "Hyperparameters fitted on at most this many points (0 = no cap).")
          .at_least(0)
          .field<&GPConfig::refit_scale>("refit_scale", "Refit when the history grew by n_fit / refit_scale (0 = every ask).")
          .at_least(0)
          .field<&GPConfig::n_threads>("n_threads", "Threads over candidates (<= 0: all).")
          .deprecated("threads")
          .field<&GPConfig::seed>("seed", "Extra seed mixed into the study's stream (None: the study's alone).")
          .alias("random_state")
          .extra("algorithm_name")
          .extra("base_estimator")
          .extra("acq_optimizer");
  return t;
}
}  // namespace

GPSearcher::GPSearcher(GPConfig c) : cfg_(c), cache_(std::make_shared<Cache>()) { table().check(cfg_); }

nlohmann::json GPSearcher::settings_schema() { return table().schema(); }

GPConfig GPSearcher::config_from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "gp config must be a JSON object, got ", j.dump());
  GPConfig c;
  // Katib's skopt settings that are no GPConfig field ("algorithm_name" is ignored).
  if (auto it = j.find("base_estimator"); it != j.end()) {
    KT_CHECK(it->is_string(), InvalidArgument, "gp: setting 'base_estimator' = ", it->dump(), " must be a string");
    const std::string b = it->get<std::string>();
    KT_CHECK(lower(b) == "gp", InvalidArgument, "gp: setting 'base_estimator' = '", b,
             "' is not supported (only \"GP\"; use \"tpe\" for tree-structured models)");
  }
  if (auto it = j.find("acq_optimizer"); it != j.end()) {
    KT_CHECK(it->is_string(), InvalidArgument, "gp: setting 'acq_optimizer' = ", it->dump(), " must be a string");
    const std::string o = lower(it->get<std::string>());
    KT_CHECK(o == "sampling" || o == "lbfgs" || o == "auto", InvalidArgument, "gp: setting 'acq_optimizer' = '", o,
             "' is not one of auto, sampling, lbfgs");
    if (o == "sampling") c.n_refine = 0;  // an explicit n_refine still wins
  }
  return table().from_json(j, c);
}

std::unique_ptr<Searcher> GPSearcher::from_json(const nlohmann::json& j) {
  return std::make_unique<GPSearcher>(config_from_json(j));
}

nlohmann::json GPSearcher::config() const {
  nlohmann::json j = table().to_json(cfg_);
  j["type"] = "gp";
  return j;
}

void GPSearcher::check_space(const SearchSpace& space) const {
  KT_CHECK(!space.empty(), InvalidArgument, "gp searcher needs a non-empty search space");
}

std::vector<Suggestion> GPSearcher::ask(const SearchContext& ctx, std::size_t n) {
  const SearchSpace& space = ctx.space;
  check_space(space);
  // random_state's stream predates derive_seed (core/rng.hpp); saved studies pin it, so it stays as it is.
  Rng local(cfg_.seed ? hash_combine(ctx.rng.next_u64(), mix64(*cfg_.seed + kGoldenGamma)) : 0);
  Rng& rng = cfg_.seed ? local : ctx.rng;
  const int threads = core::resolve_threads(cfg_.n_threads);
  Encoder enc(space);

  // History: complete trials with a finite loss are data; running/pending ones are fantasised.
  std::vector<const Trial*> done, pending;
  std::vector<double> losses;
  PointSet seen;
  const Trial* last_fit = nullptr;
  for (const Trial& t : ctx.trials) {
    if (t.x.size() != space.size()) continue;
    if (t.state != TrialState::Failed) seen.insert(t.x);
    if (t.state == TrialState::Complete) {
      double l = ctx.loss(t);
      if (std::isfinite(l)) {
        done.push_back(&t);
        losses.push_back(l);
      }
    } else if (t.state == TrialState::Running || t.state == TrialState::Pending) {
      pending.push_back(&t);
    }
    auto it = t.system_attrs.find("gp_dim");
    if (it != t.system_attrs.end() && it->second == static_cast<double>(enc.D) &&
        (!last_fit || t.id > last_fit->id))
      last_fit = &t;
  }

  std::vector<Suggestion> out;
  std::vector<bool> is_random;
  // Initial design: random points from the priors.
  const std::size_t n_used = done.size() + pending.size();
  while (out.size() < n && (n_used + out.size() < static_cast<std::size_t>(cfg_.n_initial_points) || done.size() < 2)) {
    auto x = sample_unseen(space, seen, rng, kUnseenTries);
    if (!x) return out;
    seen.insert(*x);
    out.push_back({std::move(*x), {}});
  }
  if (out.size() >= n) return out;

  // Fit the model on the complete trials.
  const Eigen::Index N = static_cast<Eigen::Index>(done.size());
  Eigen::MatrixXd X(enc.D, N);
  Eigen::VectorXd y(N);
  for (Eigen::Index i = 0; i < N; ++i) {
    enc.encode(done[static_cast<std::size_t>(i)]->x, X.col(i).data());
    y[i] = losses[static_cast<std::size_t>(i)];
  }
  GaussianProcess gp(cfg_.kernel, enc.D);
  FitOptions fo;
  fo.prior = cfg_.prior;
  fo.n_restarts = cfg_.n_hyper_restarts;
  if (cfg_.deterministic) fo.min_noise = fo.max_noise = 1e-6;
  fo.use_warm_start = false;
  fo.factorize_result = false;  // refit_bordered below factorises all points
  const Eigen::Index np = gp.n_params();
  bool refit = true;
  Eigen::VectorXd warm_theta;  // hyperparameters read from the last GP trial
  std::size_t fit_n = 0;  // history size at which the hyperparameters in use were fitted
  if (cfg_.warm_start && last_fit) {
    Eigen::VectorXd theta(np);
    bool ok = true;
    for (Eigen::Index j = 0; j < np && ok; ++j) {
      auto it = last_fit->system_attrs.find("gp_theta_" + std::to_string(j));
      ok = it != last_fit->system_attrs.end() && std::isfinite(it->second);
      if (ok) theta[j] = it->second;
    }
    if (ok) {
      warm_theta = theta;
      gp.set_params(theta);
      fo.use_warm_start = true;
      // Warm start alone; a refit that crosses a power of two of the history size also tries the default
      // start, so a poor local optimum is not kept forever. Random restarts only when cold. The history
      // size of the last fit is stored with the hyperparameters, so the schedule is a function of history.
      fo.n_restarts = 0;
      fo.warm_max_iterations = kWarmIterations;
      auto it = last_fit->system_attrs.find("gp_fit_n");
      if (it != last_fit->system_attrs.end() && std::isfinite(it->second) && it->second >= 0) {
        fit_n = static_cast<std::size_t>(it->second);
        refit = refit_due(done.size(), fit_n, cfg_.refit_scale);
        fo.use_default_start = refit && std::bit_width(done.size()) > std::bit_width(fit_n);
      } else {
        fo.use_default_start = false;
      }
    }
  }
  if (refit) fit_n = done.size();
  const std::size_t cap = static_cast<std::size_t>(cfg_.max_fit_points);
  // The factorisation of all points is always "blocked Cholesky of the first fit_n points + one bordered
  // row per later point", a function of the history; the previous ask's factor (cache_) only saves
  // recomputing rows it already has (see refit_bordered), so results never depend on the cache.
  std::unique_lock<std::mutex> cache_lock(cache_->mu, std::try_to_lock);
  BorderedFactor* cache = cache_lock.owns_lock() ? &cache_->factor : nullptr;
  const Eigen::Index fit_m = static_cast<Eigen::Index>(fit_n);
  if (!refit) {
    // Hyperparameters reused from the last GP trial; standardisation and factorisation on all points.
    gp.set_data(X, y, false);
  } else if (cap > 0 && done.size() > cap) {
    // Hyperparameters from a subset (the best half and the most recent others), posterior from all points.
    std::vector<std::size_t> by_loss(done.size());
    std::iota(by_loss.begin(), by_loss.end(), std::size_t{0});
    std::stable_sort(by_loss.begin(), by_loss.end(), [&](std::size_t a, std::size_t b) { return losses[a] < losses[b]; });
    std::vector<bool> take(done.size(), false);
    for (std::size_t k = 0; k < cap / 2; ++k) take[by_loss[k]] = true;
    std::size_t count = cap / 2;
    for (std::size_t k = done.size(); k-- > 0 && count < cap;)
      if (!take[k]) take[k] = true, ++count;
    Eigen::MatrixXd Xs(enc.D, static_cast<Eigen::Index>(cap));
    Eigen::VectorXd ys(static_cast<Eigen::Index>(cap));
    Eigen::Index c = 0;
    for (std::size_t k = 0; k < done.size(); ++k)
      if (take[k]) {
        Xs.col(c) = X.col(static_cast<Eigen::Index>(k));
        ys[c++] = y[static_cast<Eigen::Index>(k)];
      }
    gp.set_data(Xs, ys);
    gp.fit_hyperparameters(fo, rng);
    // The mean is in standardised units of the subset; carry it over in original units.
    const double mean_orig = gp.mean() * gp.y_std() + gp.y_mean();
    gp.set_data(X, y, false);
    gp.set_mean((mean_orig - gp.y_mean()) / gp.y_std());
  } else {
    gp.set_data(X, y, false);  // fit_hyperparameters factorises at every evaluation
    gp.fit_hyperparameters(fo, rng);
  }
  // The hyperparameters passed on are exactly those set here, as the next asks will read and set them
  // (params() round-trips through exp/log, so a fresh fit is re-set from its own params() once).
  Eigen::VectorXd theta = warm_theta;
  if (refit) {
    theta = gp.params();
    gp.set_params(theta);
  }
  gp.refit_bordered(fit_m, cache);

  // Local-search centres: the best few observed points.
  std::vector<std::size_t> order(done.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return losses[a] < losses[b]; });
  std::vector<std::vector<double>> elite;
  for (std::size_t k = 0; k < std::min<std::size_t>(5, order.size()); ++k) elite.push_back(done[order[k]]->x);

  double best = *std::min_element(losses.begin(), losses.end());
  const double loss_mean = std::accumulate(losses.begin(), losses.end(), 0.0) / static_cast<double>(losses.size());
  const double loss_max = *std::max_element(losses.begin(), losses.end());
  const double loss_min = best;
  auto fantasise = [&](const std::vector<double>& x) {
    Eigen::VectorXd f = enc.encode(x);
    double v = loss_mean;
    switch (cfg_.fantasy) {
      case Fantasy::Believer: {
        double var = 0.0;
        gp.predict_one(f.data(), v, var);
        break;
      }
      case Fantasy::LiarMin: v = loss_min; break;
      case Fantasy::LiarMean: v = loss_mean; break;
      case Fantasy::LiarMax: v = loss_max; break;
    }
    gp.add_observation(f, v);
  };
  for (const Trial* p : pending) fantasise(p->x);
  for (const auto& s : out) fantasise(s.x);

  // gp_hedge gains (Hoffman, Brochu & de Freitas, "Portfolio Allocation for Bayesian Optimization", UAI
  // 2011; eta = 1 as scikit-optimize): read from the last GP trial, so they live in the history.
  double gains[kHedgeSize] = {0.0, 0.0, 0.0};
  if (last_fit)
    for (int a = 0; a < kHedgeSize; ++a) {
      auto it = last_fit->system_attrs.find("gp_hedge_gain_" + std::to_string(a));
      if (it != last_fit->system_attrs.end() && std::isfinite(it->second)) gains[a] = it->second;
    }

  Proposer prop{space, enc, cfg_, gp, elite, threads};
  while (out.size() < n) {
    std::optional<Candidate> pick;
    int acq_index = -1;
    if (cfg_.acq == AcqType::Hedge) {
      std::optional<Candidate> props[kHedgeSize];
      double mus[kHedgeSize] = {0, 0, 0};
      for (int a = 0; a < kHedgeSize; ++a) {
        props[a] = prop.propose(kHedge[a], best, seen, rng);
        if (props[a]) {
          double var = 0.0;
          gp.predict_one(enc.encode(props[a]->x).data(), mus[a], var);
          mus[a] = (mus[a] - gp.y_mean()) / gp.y_std();
        }
      }
      double gmax = *std::max_element(gains, gains + kHedgeSize);
      double w[kHedgeSize], total = 0.0;
      for (int a = 0; a < kHedgeSize; ++a) total += (w[a] = props[a] ? std::exp(gains[a] - gmax) : 0.0);
      if (total > 0) {
        double u = rng.uniform() * total;
        acq_index = kHedgeSize - 1;
        for (int a = 0; a < kHedgeSize; ++a) {
          if (u < w[a]) {
            acq_index = a;
            break;
          }
          u -= w[a];
        }
        while (!props[acq_index]) acq_index = (acq_index + 1) % kHedgeSize;
        pick = props[acq_index];
      }
      for (int a = 0; a < kHedgeSize; ++a)
        if (props[a]) gains[a] -= mus[a];
    } else {
      pick = prop.propose(cfg_.acq, best, seen, rng);
    }
    Suggestion s;
    if (pick) {
      s.x = pick->x;
      s.attrs["gp_acq_value"] = std::isfinite(pick->score) ? pick->score : -1e300;
    } else {
      auto x = sample_unseen(space, seen, rng, kUnseenTries);
      if (!x) break;
      s.x = std::move(*x);
    }
    s.attrs["gp_dim"] = static_cast<double>(enc.D);
    for (Eigen::Index j = 0; j < np; ++j) s.attrs["gp_theta_" + std::to_string(j)] = theta[j];
    s.attrs["gp_fit_n"] = static_cast<double>(fit_n);
    if (cfg_.acq == AcqType::Hedge) {
      s.attrs["gp_acq"] = acq_index;
      for (int a = 0; a < kHedgeSize; ++a) s.attrs["gp_hedge_gain_" + std::to_string(a)] = gains[a];
    }
    seen.insert(s.x);
    if (out.size() + 1 < n) fantasise(s.x);  // the last point of the batch conditions nothing
    if (cfg_.fantasy == Fantasy::LiarMin) best = std::min(best, loss_min);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace kubetune::search::gp
