// History: a parameter-major copy of the trials' x in model coordinates and, per parameter, the trials sorted by model value. Both
// are extended by the trials added since the last ask, so an ask after one tell inserts one row instead of
// re-reading and re-sorting the history.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kubetune/core/error.hpp"
#include "model.hpp"

namespace kubetune::search::tpe {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// More new trials than this: re-sort the lists instead of inserting one by one.
constexpr std::size_t kInsertMax = 64;

double sort_value(double t) { return t == 0.0 ? 0.0 : t; }  // -0 sorts as +0 (as the estimator's argsort)

// Bit-identical rows (a short loop the compiler keeps inline: a memcmp call per trial cost more).
bool same_bits(const double* a, const double* b, std::size_t n) {
  std::uint64_t diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t u, v;
    std::memcpy(&u, a + i, sizeof u);
    std::memcpy(&v, b + i, sizeof v);
    diff |= u ^ v;
  }
  return diff == 0;
}
}  // namespace

void History::reset(std::size_t n_params) {
  D_ = n_params;
  n_ = cap_ = 0;
  epoch_ = 0;
  ++generation_;
  rows_.clear();
  malformed_.clear();
  cols_.clear();
  sorted_.assign(n_params, {});
}

// Longest prefix of trials whose x is bit-identical to the copy.
std::size_t History::unchanged_prefix(const std::vector<Trial>& trials) const {
  const std::size_t keep = std::min(n_, trials.size());
  for (std::size_t i = 0; i < keep; ++i) {
    const std::vector<double>& x = trials[i].x;
    const bool same = x.size() == D_ ? !malformed_[i] && same_bits(x.data(), rows_.data() + i * D_, D_)
                                     : malformed_[i] != 0;
    if (!same) return i;
  }
  return keep;
}

void History::grow(std::size_t n_trials) {
  if (n_trials <= cap_) return;
  std::size_t cap = std::max<std::size_t>(cap_, 64);
  while (cap < n_trials) cap *= 2;
  std::vector<double> cols(D_ * cap, kNaN);
  for (std::size_t p = 0; p < D_; ++p) std::copy(column(p), column(p) + n_, cols.data() + p * cap);
  cols_.swap(cols);
  cap_ = cap;
}

void History::update(const std::vector<Trial>& trials, const SpaceModel& model, std::uint64_t epoch) {
  KT_CHECK(trials.size() <= 0xFFFFFFFFull, InvalidArgument, "tpe: ", trials.size(),
           " trials exceed the 2^32 - 1 the history indexes");
  // (a study promises that x of kept trials did not change while its epoch stays the same)
  const bool trusted = epoch != 0 && epoch == epoch_ && trials.size() >= n_;
  epoch_ = epoch;
  const std::size_t keep = trusted ? n_ : unchanged_prefix(trials);
  if (keep < n_) {  // a cached trial changed: its sorted entries are rebuilt with everything after it
    for (auto& list : sorted_) list.clear();
    n_ = 0;
    ++generation_;
  }
  const std::size_t from = n_, N = trials.size();
  grow(N);
  rows_.resize(D_ * N);
  malformed_.resize(N);
  for (std::size_t i = from; i < N; ++i) {
    const std::vector<double>& x = trials[i].x;
    malformed_[i] = x.size() != D_;
    double* row = rows_.data() + i * D_;
    for (std::size_t p = 0; p < D_; ++p) {
      row[p] = malformed_[i] ? kNaN : x[p];
      cols_[p * cap_ + i] = model.pm[p].to_model(row[p]);
    }
  }
  extend_sorted(model, from, N);
  n_ = N;
}

// Adds trials [from, to) to every numeric parameter's sorted list: inserted after equal values (their index
// exceeds every listed one), or all re-sorted when there are many.
void History::extend_sorted(const SpaceModel& model, std::size_t from, std::size_t to) {
  for (std::size_t p = 0; p < D_; ++p) {
    const ParamModel& m = model.pm[p];
    if (m.dim.kind == ParzenDim::Kind::Categorical) continue;
    std::vector<std::uint32_t>& list = sorted_[p];
    const double* col = column(p);
    if (to - from > kInsertMax) {
      sort_buf_.clear();
      for (std::uint32_t i : list) sort_buf_.emplace_back(sort_value(col[i]), i);
      for (std::size_t i = from; i < to; ++i)
        if (!std::isnan(col[i])) sort_buf_.emplace_back(sort_value(col[i]), static_cast<std::uint32_t>(i));
      std::sort(sort_buf_.begin(), sort_buf_.end());
      list.resize(sort_buf_.size());
      for (std::size_t j = 0; j < sort_buf_.size(); ++j) list[j] = sort_buf_[j].second;
      continue;
    }
    for (std::size_t i = from; i < to; ++i) {
      if (std::isnan(col[i])) continue;
      const double v = sort_value(col[i]);
      auto it = std::upper_bound(list.begin(), list.end(), v,
                                 [&](double a, std::uint32_t b) { return a < sort_value(col[b]); });
      list.insert(it, static_cast<std::uint32_t>(i));
    }
  }
}

}  // namespace kubetune::search::tpe
