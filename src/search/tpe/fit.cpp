// Fitting a group's l(x) and g(x): the rows of a trial set gathered from the history (with the argsorts the
// history keeps), or the estimator refitted in place when only a few rows moved in or out of the set since its
// last fit (ParzenEstimator::refit).
#include <algorithm>
#include <cmath>

#include "workspace.hpp"

namespace kubetune::search::detail {
namespace {
// Liar b (the b-th in-batch point where the group is active) has key kLiarKey + b: after every trial.
constexpr std::uint64_t kLiarKey = std::uint64_t{1} << 62;
// A model is fitted anew when more rows than this changed.
constexpr std::size_t kMaxRowEdits = 16;

// Trials of idx where the group's first parameter is active.
void active_rows(const TPEWorkspace& ws, const tpe::Group& grp, const std::vector<std::size_t>& idx,
                 std::vector<std::size_t>& act) {
  const double* colf = ws.history.column(grp.params[0]);
  act.clear();
  for (std::size_t i : idx)
    if (!std::isnan(colf[i])) act.push_back(i);
}

// The in-batch points where the group is active (constant liars), as batch indices.
std::size_t active_liars(const TPEWorkspace& ws, const tpe::Group& grp, std::vector<std::size_t>* which = nullptr) {
  const std::size_t D = ws.model.pm.size(), first = grp.params[0];
  std::size_t count = 0;
  if (which) which->clear();
  for (std::size_t b = 0; b < ws.n_batch; ++b) {
    if (std::isnan(ws.batch[b * D + first])) continue;
    ++count;
    if (which) which->push_back(b);
  }
  return count;
}

// Recency weights of `total` rows (oldest first), kept while the count is the same.
void recency_weights(const TPEConfig& cfg, std::size_t total, std::vector<double>& w) {
  if (w.size() == total) return;
  w.resize(total);
  tpe_recency_weights(total, cfg.n_flat_weights, w.data());
}

// The argsorts of gather(): rows of the history in its sorted order, then each liar after equal values (its
// row is the largest). False when a numeric dimension of an active row is NaN (the estimator reports it).
bool history_orders(const TPEWorkspace& ws, Gather& g, const tpe::Group& grp, std::size_t rows, std::size_t total) {
  if (g.rowpos.size() < ws.split.mark.size()) g.rowpos.resize(ws.split.mark.size(), kNone);
  for (std::size_t r = 0; r < rows; ++r) g.rowpos[g.act[r]] = r;
  bool valid = true;
  for (std::size_t q = 0; q < grp.params.size() && valid; ++q) {
    if (grp.dims[q].kind == ParzenDim::Kind::Categorical) continue;
    std::size_t* o = g.order.data() + q * total;
    const double* v = g.obs.data() + q * total;
    std::size_t cnt = 0;
    for (const std::uint32_t t : ws.history.sorted(grp.params[q]))
      if (g.rowpos[t] != kNone && cnt < rows) o[cnt++] = g.rowpos[t];
    valid = cnt == rows;
    for (std::size_t r = rows; valid && r < total; ++r) {
      const double key = v[r] == 0.0 ? 0.0 : v[r];
      std::size_t* it = std::upper_bound(o, o + r, key, [&](double a, std::size_t s) { return a < v[s]; });
      std::copy_backward(it, o + r, o + r + 1);
      *it = r;
    }
  }
  for (std::size_t r = 0; r < rows; ++r) g.rowpos[g.act[r]] = kNone;
  return valid;
}

// Rows of group g, column-major, from trials `idx` (where its first parameter is active) plus, with_batch, the
// in-batch liars; recency weights into w; with want_order, every numeric dimension's stable argsort over those
// rows, read off the history's sorted lists (the estimator then does not sort). Returns the row count.
std::size_t gather(const TPEWorkspace& ws, const TPEConfig& cfg, Gather& g, const tpe::Group& grp,
                   const std::vector<std::size_t>& idx, bool with_batch, bool want_order, std::vector<double>& w) {
  const std::size_t dg = grp.params.size(), first = grp.params[0], D = ws.model.pm.size();
  active_rows(ws, grp, idx, g.act);
  const std::size_t rows = g.act.size();
  const std::size_t total = rows + (with_batch ? active_liars(ws, grp) : 0);
  g.obs.resize(dg * total);
  for (std::size_t q = 0; q < dg; ++q) {
    const tpe::ParamModel& pm = ws.model.pm[grp.params[q]];
    const double* col = ws.history.column(grp.params[q]);
    double* o = g.obs.data() + q * total;
    for (std::size_t r = 0; r < rows; ++r) o[r] = col[g.act[r]];
    for (std::size_t b = 0, r = rows; r < total; ++b) {
      const double* x = ws.batch.data() + b * D;
      if (!std::isnan(x[first])) o[r++] = pm.to_model(x[grp.params[q]]);
    }
  }
  recency_weights(cfg, total, w);
  g.order.clear();
  if (want_order) {
    g.order.resize(dg * total);
    if (!history_orders(ws, g, grp, rows, total)) g.order.clear();
  }
  return total;
}

// A one-parameter g(x) gets its kernels in sorted order: sum_exp then skips the blocks of kernels far from a
// candidate (the mixture is the same; only the order of the sum's terms changes). obs, w and order are pointed
// at the sorted copies (order: the identity, the stable argsort of sorted rows). Sorting a joint model by one of
// its parameters was measured slower (the permutation costs more than the skipped blocks save).
void sort_rows(Gather& g, std::size_t rows, const double*& obs, const double*& w, const std::size_t*& order) {
  g.sorted_obs.resize(rows);
  g.sorted_w.resize(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    g.sorted_obs[i] = obs[order[i]];
    g.sorted_w[i] = w[order[i]];
  }
  for (std::size_t i = g.identity.size(); i < rows; ++i) g.identity.push_back(i);
  obs = g.sorted_obs.data();
  w = g.sorted_w.data();
  order = g.identity.data();
}

// A one-parameter numeric g(x) keeps its kernels sorted (sort_rows); a joint one in row order.
bool sorted_model(const tpe::Group& grp) {
  return grp.params.size() == 1 && grp.dims[0].kind != ParzenDim::Kind::Categorical;
}

// One of a group's two estimators with what it is fitted on: l(x) on the below set, g(x) on the above set plus
// (constant_liar) the in-batch liars, its kernels sorted when sorted_model.
struct Model {
  ParzenEstimator& est;
  ModelRows& mr;
  const std::vector<std::size_t>& set;
  bool liars, sorted;
  bool orders;             // the history's argsorts for the fit (saves its sorts)
  std::vector<double>& w;  // the gather's recency weights of this set
};

// After a full fit on the gathered rows (g.act, then `total - rows` liars; kernel i is row order[i] when sorted):
// each kernel's order key, for refit_model.
void remember(const TPEWorkspace& ws, const Gather& g, ModelRows& mr, std::size_t rows, std::size_t total,
              const std::size_t* order) {
  mr.generation = ws.history.generation();
  mr.liar_ask = ws.ask_id;
  mr.n_liars = total - rows;
  mr.rows.assign(g.act.begin(), g.act.begin() + static_cast<std::ptrdiff_t>(rows));
  mr.keys.resize(total);
  for (std::size_t i = 0; i < total; ++i) {
    const std::size_t r = order ? order[i] : i;
    mr.keys[i] = {order ? g.obs[r] : 0.0, r < rows ? g.act[r] : kLiarKey + (r - rows)};
  }
  mr.valid = true;
}

// The edits that take the model from mr's rows to the current ones: history rows out and in (both lists
// ascending), the liars of an earlier ask out, this ask's new liars in (its earlier ones stay: a batch only grows).
// Their keys into `out` (erased) and g.added (ascending); false when there are too many.
bool row_edits(const TPEWorkspace& ws, const tpe::Group& grp, Gather& g, const Model& m,
               std::vector<std::pair<double, std::uint64_t>>& out) {
  const ModelRows& mr = m.mr;
  const std::size_t first = grp.params[0], D = ws.model.pm.size();
  auto key = [&](std::size_t t) { return std::pair<double, std::uint64_t>{m.sorted ? ws.history.value(first, t) : 0.0, t}; };
  out.clear();
  g.added.clear();
  const std::vector<std::size_t>& now = g.act;
  for (std::size_t i = 0, j = 0;;) {  // runs of rows in both lists skipped at once
    const auto [a, b] = std::mismatch(mr.rows.begin() + static_cast<std::ptrdiff_t>(i), mr.rows.end(),
                                      now.begin() + static_cast<std::ptrdiff_t>(j), now.end());
    i = static_cast<std::size_t>(a - mr.rows.begin());
    j = static_cast<std::size_t>(b - now.begin());
    if (i == mr.rows.size() && j == now.size()) break;
    if (out.size() + g.added.size() >= kMaxRowEdits) return false;
    if (j == now.size() || (i < mr.rows.size() && mr.rows[i] < now[j])) out.push_back(key(mr.rows[i++]));
    else g.added.push_back(key(now[j++]));
  }
  const std::size_t kept = mr.liar_ask == ws.ask_id ? mr.n_liars : 0;
  if (g.liars.size() < kept) return false;
  if (kept < mr.n_liars)
    for (const auto& k : mr.keys)
      if (k.second >= kLiarKey + kept) out.push_back(k);
  for (std::size_t b = kept; b < g.liars.size(); ++b)
    g.added.emplace_back(m.sorted ? ws.model.pm[first].to_model(ws.batch[g.liars[b] * D + first]) : 0.0, kLiarKey + b);
  std::sort(g.added.begin(), g.added.end());
  return out.size() + g.added.size() <= kMaxRowEdits;
}

// The model refitted in place (ParzenEstimator::refit) from the rows it was last fitted on; false when it must be
// fitted anew (nothing fitted on this history yet, or too many rows changed).
bool refit_model(TPEWorkspace& ws, const TPEConfig& cfg, Gather& g, const tpe::Group& grp, const Model& m) {
  ModelRows& mr = m.mr;
  if (!mr.valid || mr.generation != ws.history.generation()) return false;
  const std::size_t dg = grp.params.size(), D = ws.model.pm.size();
  active_rows(ws, grp, m.set, g.act);
  if (m.liars) active_liars(ws, grp, &g.liars);
  else g.liars.clear();
  if (!m.est.can_refit(g.act.size() + g.liars.size(), 0)) return false;
  std::vector<std::pair<double, std::uint64_t>>& erased = g.erased;
  if (!row_edits(ws, grp, g, m, erased)) return false;
  // Kernel positions: the erased ones in the old order, the added ones in the new.
  g.erase.clear();
  for (const auto& k : erased) {
    const auto it = std::lower_bound(mr.keys.begin(), mr.keys.end(), k);
    if (it == mr.keys.end() || *it != k) return false;  // (cannot happen: the keys mirror the rows)
    g.erase.push_back(static_cast<std::size_t>(it - mr.keys.begin()));
  }
  std::sort(g.erase.begin(), g.erase.end());
  // The key list edited in place (erased, then the added ones in ascending order at their final positions).
  for (auto e = g.erase.rbegin(); e != g.erase.rend(); ++e) mr.keys.erase(mr.keys.begin() + static_cast<std::ptrdiff_t>(*e));
  g.insert_at.clear();
  g.rows.resize(g.added.size() * dg);
  for (std::size_t a = 0; a < g.added.size(); ++a) {
    const auto at = std::lower_bound(mr.keys.begin(), mr.keys.end(), g.added[a]);
    g.insert_at.push_back(static_cast<std::size_t>(at - mr.keys.begin()));
    mr.keys.insert(at, g.added[a]);
    const std::uint64_t t = g.added[a].second;
    for (std::size_t q = 0; q < dg; ++q)
      g.rows[a * dg + q] = t < kLiarKey ? ws.history.value(grp.params[q], t)
                                        : ws.model.pm[grp.params[q]].to_model(ws.batch[g.liars[t - kLiarKey] * D + grp.params[q]]);
  }
  // Each kernel's recency weight, by its row's rank.
  const std::size_t rows = g.act.size(), total = mr.keys.size();
  recency_weights(cfg, total, m.w);
  const double* w = m.w.data();
  if (m.sorted) {
    if (g.rank.size() < ws.split.mark.size()) g.rank.resize(ws.split.mark.size());
    for (std::size_t r = 0; r < rows; ++r) g.rank[g.act[r]] = r;
    g.weights.resize(total);
    for (std::size_t i = 0; i < total; ++i) {
      const std::uint64_t t = mr.keys[i].second;
      g.weights[i] = m.w[t < kLiarKey ? g.rank[t] : rows + (t - kLiarKey)];
    }
    w = g.weights.data();
  }
  if (!m.est.refit(g.erase, g.insert_at, g.rows.data(), w)) return false;  // (fit_model fits anew)
  mr.rows.assign(g.act.begin(), g.act.end());
  mr.n_liars = g.liars.size();
  mr.liar_ask = ws.ask_id;
  return true;
}

// A model refitted in place or fitted anew. Neighbour widths only (Scott's rule changes every width with n).
void fit_model(TPEWorkspace& ws, const TPEConfig& cfg, const ParzenOptions& popt, Gather& g, const tpe::Group& grp,
               const Model& m) {
  const bool neighbour = popt.bandwidth == ParzenBandwidth::Neighbour;
  if (neighbour && refit_model(ws, cfg, g, grp, m)) return;
  m.mr.valid = false;
  const std::size_t total = gather(ws, cfg, g, grp, m.set, m.liars, neighbour && m.orders, m.w);
  const std::size_t rows = g.act.size();
  const double* obs = g.obs.data();
  const double* w = m.w.data();
  const std::size_t* order = g.order.empty() ? nullptr : g.order.data();
  // (a categorical parameter has no order: history_orders leaves its part of g.order unset)
  const bool sorted = order && m.sorted;
  if (sorted) sort_rows(g, total, obs, w, order);
  m.est.fit_columns(grp.dims, obs, total, w, popt, order);
  if (neighbour) remember(ws, g, m.mr, rows, total, sorted ? g.order.data() : nullptr);
}
}  // namespace

void fit_group(TPEWorkspace& ws, const TPEConfig& cfg, const ParzenOptions& popt, Gather& g, std::size_t gi) {
  const tpe::Group& grp = ws.model.groups[gi];
  GroupState& st = ws.groups[gi];
  if (!st.below_fresh) {
    fit_model(ws, cfg, popt, g, grp, {st.below, st.below_rows, ws.split.below, false, false, false, g.w_below});
    st.below_fresh = true;
  }
  if (st.above_version != ws.n_batch) {
    fit_model(ws, cfg, popt, g, grp, {st.above, st.above_rows, ws.split.above, cfg.constant_liar, sorted_model(grp), true, g.w_above});
    st.above_version = ws.n_batch;
  }
}

}  // namespace kubetune::search::detail
