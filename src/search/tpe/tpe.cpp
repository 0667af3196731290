// TPE::ask in named steps: split the history, fit l(x) and g(x) per group, draw candidates from l(x) (and
// around the incumbent), score them by log l(x) - log g(x), keep the best, add it to g(x) as a constant liar.
#include "kubetune/search/tpe.hpp"

#include <cmath>
#include <exception>
#include <limits>

#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "workspace.hpp"

#ifdef _OPENMP
#include <omp.h>

#include <nlohmann/json.hpp>
#endif

namespace kubetune::search {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

ParzenOptions parzen_options(const TPEConfig& cfg) {
  ParzenOptions popt;
  popt.prior_weight = cfg.prior_weight;
  popt.magic_clip = cfg.consider_magic_clip;
  popt.consider_endpoints = cfg.consider_endpoints;
  // Univariate models always use neighbour widths; Scott's rule applies to joint (multivariate) models.
  popt.bandwidth = cfg.multivariate ? cfg.bandwidth : ParzenBandwidth::Neighbour;
  return popt;
}

// Runs fn(i) for i in [0, count) on nt threads; the exception of the lowest failing i is rethrown.
template <class F>
void parallel_for(std::size_t count, int nt, F&& fn) {
  if (nt <= 1 || count <= 1) {  // no OpenMP team (its start-up costs more than a small group's fit)
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::exception_ptr error;
  std::size_t error_at = count;
  const long long n = static_cast<long long>(count);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
#endif
  for (long long i = 0; i < n; ++i) {
    try {
      fn(static_cast<std::size_t>(i));
    } catch (...) {
#ifdef _OPENMP
#pragma omp critical(kt_tpe_error)
#endif
      if (static_cast<std::size_t>(i) < error_at) {
        error = std::current_exception();
        error_at = static_cast<std::size_t>(i);
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// Index of the largest log l(x) - log g(x) among cnt candidates (first on ties); its score in `score`.
std::size_t best_ratio(const double* lb, const double* la, std::size_t cnt, double& score) {
  std::size_t best = 0;
  score = -kInf;
  for (std::size_t c = 0; c < cnt; ++c) {
    double s = lb[c] - la[c];
    if (std::isnan(s)) s = la[c] == -kInf ? kInf : -kInf;
    if (s > score) {
      score = s;
      best = c;
    }
  }
  return best;
}

using detail::Gather;
using detail::kNone;
using detail::GroupState;
using detail::TPEWorkspace;
using detail::fit_group;

// l(x)'s kernel of the group's incumbent (the best trial of the below set where the group is active; its
// centre into ws.centre), or kNone.
std::size_t incumbent_kernel(TPEWorkspace& ws, std::size_t gi) {
  const tpe::Group& grp = ws.model.groups[gi];
  const ParzenEstimator& below = ws.groups[gi].below;
  const std::size_t dg = grp.params.size();
  for (const std::size_t t : ws.split.ranked) {
    if (std::isnan(ws.history.value(grp.params[0], t))) continue;
    ws.centre.resize(dg);
    for (std::size_t q = 0; q < dg; ++q) ws.centre[q] = ws.history.value(grp.params[q], t);
    for (std::size_t k = 0; k + 1 < below.n_kernels(); ++k) {  // the prior kernel is last
      std::size_t q = 0;
      while (q < dg && below.mus(q)[k] == ws.centre[q]) ++q;
      if (q == dg) return k;
    }
    break;
  }
  return kNone;
}

// n_ei_candidates from l(x); with refinement, n_refine_candidates more around the incumbent (own stream).
void draw_candidates(TPEWorkspace& ws, const TPEConfig& cfg, std::size_t gi, Rng& rng, Rng& ref_rng) {
  GroupState& st = ws.groups[gi];
  const std::size_t dg = ws.model.groups[gi].params.size();
  const std::size_t m = cfg.n_ei_candidates, R = cfg.multivariate ? cfg.n_refine_candidates : 0;
  const std::size_t kinc = R > 0 ? incumbent_kernel(ws, gi) : kNone;
  st.n_main = m;
  st.n_cand = m + (kinc == kNone ? 0 : R);
  st.cand.resize(st.n_cand * dg);
  st.below.sample(rng, m, st.cand.data());
  if (kinc != kNone) st.below.sample_near(ref_rng, ws.centre.data(), kinc, cfg.refine_scale, R, st.cand.data() + m * dg);
}

void score_candidates(GroupState& st, int threads) {
  st.lb.resize(st.n_cand);
  st.la.resize(st.n_cand);
  st.below.log_pdf(st.cand.data(), st.n_cand, st.lb.data(), threads);
  st.above.log_pdf(st.cand.data(), st.n_cand, st.la.data(), threads);
}

// The best of the l(x) draws, unless a refinement draw scores higher; written into x (parameter values).
void choose(const TPEWorkspace& ws, std::size_t gi, std::vector<double>& x) {
  const GroupState& st = ws.groups[gi];
  const tpe::Group& grp = ws.model.groups[gi];
  double score, s2;
  std::size_t best = best_ratio(st.lb.data(), st.la.data(), st.n_main, score);
  if (st.n_cand > st.n_main) {
    const std::size_t b2 = st.n_main + best_ratio(st.lb.data() + st.n_main, st.la.data() + st.n_main,
                                                  st.n_cand - st.n_main, s2);
    if (s2 > score) best = b2;
  }
  const double* win = st.cand.data() + best * grp.params.size();
  for (std::size_t q = 0; q < grp.params.size(); ++q) x[grp.params[q]] = ws.model.from_model(grp.params[q], win[q]);
}
}  // namespace

std::vector<TPEGroupModel> tpe_models(const SearchContext& ctx, const TPEConfig& cfg) {
  cfg.validate();
  TPEWorkspace ws;
  ws.model.update(ctx.space, cfg);
  ws.history.reset(ctx.space.size());
  ws.history.update(ctx.trials, ws.model);
  ws.split.run(ctx, cfg, false);
  std::vector<TPEGroupModel> out;
  if (ws.split.n_finished < cfg.n_startup_trials || ctx.space.size() == 0) return out;
  const ParzenOptions popt = parzen_options(cfg);
  ws.groups.resize(ws.model.groups.size());
  Gather g;
  for (std::size_t gi = 0; gi < ws.model.groups.size(); ++gi) {
    fit_group(ws, cfg, popt, g, gi);
    out.push_back({ws.model.groups[gi].params, std::move(ws.groups[gi].below), std::move(ws.groups[gi].above)});
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

namespace {
// Points already tried (and proposed in this ask), when exact repeats are possible.
bool exhausted(const TPEWorkspace& ws) { return ws.model.cardinality != 0 && ws.seen.size() >= ws.model.cardinality; }

// A random draw from the priors, avoiding points already tried while unseen ones remain.
bool draw_random(TPEWorkspace& ws, const SearchSpace& space, Rng& rng, std::vector<double>& x) {
  UnseenDraw d = draw_unseen(ws.seen, ws.model.dedupe ? 64 : 1, [&] { return space.sample(rng); });
  x = std::move(d.x);
  return d.fresh || !exhausted(ws);
}

void keep(TPEWorkspace& ws, const TPEConfig& cfg, std::vector<double>&& x, std::vector<Suggestion>& out) {
  if (ws.model.dedupe) ws.seen.insert(x);
  if (cfg.constant_liar) {
    ws.batch.insert(ws.batch.end(), x.begin(), x.end());
    ++ws.n_batch;
  }
  out.push_back({std::move(x), {}});
}

// Fit, draw, score and choose for the groups in `wave` (fits and scores on nt threads, draws in group order:
// the same stream whatever the thread count).
void propose_wave(TPEWorkspace& ws, const TPEConfig& cfg, const ParzenOptions& popt, const std::vector<std::size_t>& wave,
                  int nt, std::vector<double>& x, Rng& rng, Rng& ref_rng) {
  parallel_for(wave.size(), nt, [&](std::size_t w) {
    std::size_t tid = 0;
#ifdef _OPENMP
    if (nt > 1) tid = static_cast<std::size_t>(omp_get_thread_num());
#endif
    fit_group(ws, cfg, popt, ws.gathers[tid], wave[w]);
  });
  for (std::size_t gi : wave) draw_candidates(ws, cfg, gi, rng, ref_rng);
  const int inner = nt > 1 ? 1 : cfg.n_threads;  // one group: its scoring may use the threads
  parallel_for(wave.size(), nt, [&](std::size_t w) { score_candidates(ws.groups[wave[w]], inner); });
  for (std::size_t gi : wave) choose(ws, gi, x);
}

// One point. Unconditional spaces: every group is active, so all are proposed together (on several threads);
// conditional ones group by group, each once its parents are chosen.
void propose_point(TPEWorkspace& ws, const TPEConfig& cfg, const ParzenOptions& popt, const SearchSpace& space,
                   std::vector<double>& x, Rng& rng) {
  Rng ref_rng(cfg.multivariate && cfg.n_refine_candidates > 0 ? rng.next_u64() : 0);
  const std::size_t G = ws.model.groups.size();
  std::vector<std::size_t> wave;
  if (ws.model.unconditional) {
    for (std::size_t gi = 0; gi < G; ++gi) wave.push_back(gi);
    const int nt = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(core::resolve_threads(cfg.n_threads)), G));
    propose_wave(ws, cfg, popt, wave, nt, x, rng, ref_rng);
  } else {
    for (std::size_t gi = 0; gi < G; ++gi) {
      if (!space.is_active(ws.model.groups[gi].params[0], x)) continue;
      wave.assign(1, gi);
      propose_wave(ws, cfg, popt, wave, 1, x, rng, ref_rng);
    }
  }
  space.apply_conditions(x);
}
}  // namespace

std::vector<Suggestion> TPE::ask(const SearchContext& ctx, std::size_t n) {
  TPEWorkspace& ws = *ws_;
  const SearchSpace& space = ctx.space;
  const std::size_t D = space.size();
  std::vector<Suggestion> out;
  if (n == 0 || D == 0) return out;
  if (ws.model.update(space, cfg_)) ws.history.reset(D);
  Rng local = cfg_.seed ? Rng(mix64(*cfg_.seed), ctx.rng.next_u64()) : Rng(0);
  Rng& rng = cfg_.seed ? local : ctx.rng;
  ws.history.update(ctx.trials, ws.model, ctx.trials_epoch);
  ws.split.run(ctx, cfg_, cfg_.multivariate && cfg_.n_refine_candidates > 0);
  ws.seen.clear();
  if (ws.model.dedupe)
    for (const Trial& t : ctx.trials)
      if (t.x.size() == D) ws.seen.insert(t.x);
  ws.batch.clear();
  ws.n_batch = 0;
  ++ws.ask_id;
  const bool startup = ws.split.n_finished < cfg_.n_startup_trials;
  const ParzenOptions popt = parzen_options(cfg_);
  ws.groups.resize(ws.model.groups.size());
  for (GroupState& st : ws.groups) {
    st.below_fresh = false;
    st.above_version = kNone;
  }
  ws.gathers.resize(static_cast<std::size_t>(core::resolve_threads(cfg_.n_threads)));
  out.reserve(n);
  for (std::size_t j = 0; j < n && !exhausted(ws); ++j) {
    std::vector<double> x;
    if (startup) {
      if (!draw_random(ws, space, rng, x)) break;
    } else {
      x.assign(D, kNaN);
      propose_point(ws, cfg_, popt, space, x, rng);
      // The model proposed a point already tried (small discrete spaces): take an unseen random one.
      if (ws.model.dedupe && ws.seen.contains(x) && !draw_random(ws, space, rng, x)) break;
    }
    keep(ws, cfg_, std::move(x), out);
  }
  return out;
}

}  // namespace kubetune::search
