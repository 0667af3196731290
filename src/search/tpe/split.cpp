// The trial split of TPE (Optuna 4.x `_split_trials`): the best n_below(n) finished trials form l(x), the
// rest g(x); running and enqueued trials join g(x) as constant liars.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model.hpp"

namespace kubetune::search {
namespace tpe {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// Puts the nbc smallest keys of `complete` first (in any order). When at least nbc keys are at or below the last
// split's cut (the history grew: its nbc-th key), the nbc smallest are among those few, and only they are
// selected from; otherwise all are.
void Split::select_best(std::size_t nbc) {
  auto first = complete.begin(), last = complete.end();
  if (has_cut) {
    last = std::partition(complete.begin(), complete.end(), [&](const auto& k) { return !(cut < k); });
    if (static_cast<std::size_t>(last - first) < nbc) last = complete.end();
  }
  std::nth_element(first, first + static_cast<std::ptrdiff_t>(nbc), last);
  has_cut = nbc > 0;
  if (has_cut) cut = *std::max_element(first, first + static_cast<std::ptrdiff_t>(nbc));
}

Split::Outcome Split::read(const SearchContext& ctx, const Trial& t) {
  Outcome o;
  o.finished = t.is_finished();
  if (t.x.size() != ctx.space.size()) return o;
  if (t.state == TrialState::Complete) {
    o.a = ctx.loss(t);
    if (!std::isnan(o.a)) o.kind = Outcome::Complete;
  } else if (t.state == TrialState::Pruned) {
    o.kind = Outcome::Pruned;
    if (t.intermediate.empty()) {
      o.a = 1.0;
    } else {
      const double v = ctx.signed_value(t.intermediate.back().second);
      o.a = -static_cast<double>(t.intermediate.back().first);
      o.b = std::isnan(v) ? kInf : v;
    }
  } else if (t.state == TrialState::Running || t.state == TrialState::Pending) {
    o.kind = Outcome::Live;
  }
  return o;
}

// The outcomes brought up to ctx.trials: all read again unless the study's epoch is the last one's, then only
// the trials open at the last read and the new ones (finished trials of a study never change).
void Split::refresh(const SearchContext& ctx) {
  const auto& trials = ctx.trials;
  if (!(ctx.trials_epoch != 0 && ctx.trials_epoch == epoch_ && trials.size() >= outcomes_.size())) {
    outcomes_.clear();
    open_.clear();
  }
  epoch_ = ctx.trials_epoch;
  still_open_.clear();
  for (const std::size_t i : open_) {
    outcomes_[i] = read(ctx, trials[i]);
    if (!outcomes_[i].finished) still_open_.push_back(i);
  }
  for (std::size_t i = outcomes_.size(); i < trials.size(); ++i) {
    outcomes_.push_back(read(ctx, trials[i]));
    if (!outcomes_.back().finished) still_open_.push_back(i);
  }
  open_.swap(still_open_);
}

// Trials are in id order. Complete trials rank by loss; pruned ones after them, deepest step first, then best
// last intermediate value (NaN last; none reported: after all).
void Split::run(const SearchContext& ctx, const TPEConfig& cfg, bool want_ranked) {
  refresh(ctx);
  complete.clear();
  pruned.clear();
  below.clear();
  above.clear();
  const std::size_t N = outcomes_.size();
  mark.assign(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    const Outcome& o = outcomes_[i];
    if (o.kind == Outcome::Complete) complete.emplace_back(o.a, i);
    else if (o.kind == Outcome::Pruned) pruned.emplace_back(o.a, o.b, i);
    else if (o.kind == Outcome::Live && cfg.constant_liar) mark[i] = 2;
  }
  n_finished = complete.size() + pruned.size();
  // Only the best nb matter, as a set (both lists end in id order): a selection replaces the full sort. Keys
  // are unique (ties broken by trial index), so the set is the one a full sort would give.
  const std::size_t nb = cfg.n_below(n_finished);
  const std::size_t nbc = std::min(nb, complete.size());
  const std::size_t nbp = std::min(nb - nbc, pruned.size());
  select_best(nbc);
  std::nth_element(pruned.begin(), pruned.begin() + static_cast<std::ptrdiff_t>(nbp), pruned.end());
  for (std::size_t k = 0; k < complete.size(); ++k) mark[complete[k].second] = k < nbc ? 1 : 2;
  for (std::size_t k = 0; k < pruned.size(); ++k) mark[std::get<2>(pruned[k])] = k < nbp ? 1 : 2;
  for (std::size_t i = 0; i < N; ++i) {
    if (mark[i] == 1) below.push_back(i);
    if (mark[i] == 2) above.push_back(i);
  }
  if (!want_ranked) return;
  std::sort(complete.begin(), complete.begin() + static_cast<std::ptrdiff_t>(nbc));
  std::sort(pruned.begin(), pruned.begin() + static_cast<std::ptrdiff_t>(nbp));
  ranked.clear();
  for (std::size_t k = 0; k < nbc; ++k) ranked.push_back(complete[k].second);
  for (std::size_t k = 0; k < nbp; ++k) ranked.push_back(std::get<2>(pruned[k]));
}
}  // namespace tpe

std::size_t tpe_split(const SearchContext& ctx, const TPEConfig& cfg, std::vector<std::size_t>& below,
                      std::vector<std::size_t>& above) {
  tpe::Split s;
  s.run(ctx, cfg, false);
  below = std::move(s.below);
  above = std::move(s.above);
  return s.n_finished;
}

}  // namespace kubetune::search
