// ParzenEstimator::refit: the fit of the last fit's observations after a few were removed and added (TPE's models
// after a tell), done in place where the result is the same: the kernel tables shifted, each dimension's sorted
// order edited, the widths of the edited kernels and of their neighbours recomputed with the constants of their
// blocks; the weights and the per-kernel sums are redone (every weight changes with n).
#include <algorithm>
#include <cmath>

#include "kubetune/core/error.hpp"
#include "kubetune/search/parzen.hpp"
#include "simd.hpp"

namespace kubetune::search {
namespace {
// More edits than this: a full fit (each edit shifts every table).
constexpr std::size_t kMaxEdits = 16;
// The magic clip's bound range / min(100, 1 + kernels) stops moving at this many kernels.
constexpr std::size_t kClipSettled = 99;
}  // namespace

bool ParzenEstimator::refit(const std::vector<std::size_t>& erase, const std::vector<std::size_t>& insert_at,
                            const double* rows, const double* weights) {
  KT_CHECK(k_ > 0, StateError, "parzen: refit() before fit()");
  const std::size_t n = k_ - 1, D = dims_.size();
  for (std::size_t i = 0; i < erase.size(); ++i)
    KT_CHECK(erase[i] < n && (i == 0 || erase[i - 1] < erase[i]), InvalidArgument, "parzen: refit erase[", i,
             "] = ", erase[i], " is not an ascending kernel position below ", n);
  const std::size_t n_new = n - erase.size() + insert_at.size();
  for (std::size_t i = 0; i < insert_at.size(); ++i)
    KT_CHECK(insert_at[i] < n_new && (i == 0 || insert_at[i - 1] < insert_at[i]), InvalidArgument,
             "parzen: refit insert_at[", i, "] = ", insert_at[i], " is not an ascending position below ", n_new);
  KT_CHECK(insert_at.empty() || rows, InvalidArgument, "parzen: refit inserts ", insert_at.size(),
           " rows but none are given");
  for (std::size_t a = 0; a < insert_at.size(); ++a)  // (numbered as observations of the new order)
    for (std::size_t d = 0; d < D; ++d) check_value(d, insert_at[a], rows[a * D + d]);
  check_weights(n_new, weights);
  if (!can_refit(n_new, erase.size() + insert_at.size())) return false;
  moved_.resize(D);
  for (auto it = erase.rbegin(); it != erase.rend(); ++it) edit_erase(*it);
  for (std::size_t i = 0; i < insert_at.size(); ++i) edit_insert(insert_at[i], rows + i * D);
  stride_ = simd::padded(k_);
  for (std::size_t d = 0; d < D; ++d) {
    if (kind_[d] == simd::kCategorical) categorical_constants(d);
    else edit_widths(d);
  }
  fit_weights(n_new, weights, opt_.prior_weight);
  fit_base();
  return true;
}

bool ParzenEstimator::can_refit(std::size_t n_new, std::size_t n_edits) const noexcept {
  if (opt_.bandwidth != ParzenOptions::Bandwidth::Neighbour || n_edits > kMaxEdits) return false;
  if (k_ < 4 || n_new < 3 || simd::padded(n_new + 1) > pitch_) return false;  // (few kernels: a fit is cheap)
  // (the bound depends on the kernel count until it settles)
  return !opt_.magic_clip || k_ == n_new + 1 || (k_ >= kClipSettled && n_new + 1 >= kClipSettled);
}

// Index of kernel p in dimension d's sorted order (ascending centre, ties by position), or where it belongs.
std::size_t ParzenEstimator::sorted_index(std::size_t d, std::size_t p) const {
  const std::vector<std::uint32_t>& sp = sorted_pos_[d];
  const double* mu = mu_.data() + d * pitch_;
  const double v = mu[p];
  return static_cast<std::size_t>(std::lower_bound(sp.begin(), sp.end(), p, [&](std::size_t a, std::size_t) {
                                    return mu[a] < v || (mu[a] == v && a < p);
                                  }) - sp.begin());
}

// Kernel p (an observation) leaves: the tables shift down by one, its sorted neighbours' widths are marked.
void ParzenEstimator::edit_erase(std::size_t p) {
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    if (kind_[d] != simd::kCategorical) {
      std::vector<std::uint32_t>& sp = sorted_pos_[d];
      std::vector<std::size_t>& mv = moved_[d];
      const std::size_t j = sorted_index(d, p);
      sp.erase(sp.begin() + static_cast<std::ptrdiff_t>(j));
      const std::uint32_t p32 = static_cast<std::uint32_t>(p);
      for (std::uint32_t& q : sp) q -= q > p32;
      mv.erase(std::remove(mv.begin(), mv.end(), p), mv.end());
      for (std::size_t& q : mv) q -= q > p;
      if (j > 0) mv.push_back(sp[j - 1]);
      if (j < sp.size()) mv.push_back(sp[j]);
    }
    for (auto [table, pad] : {std::pair{&mu_, 0.0}, {&sigma_, 1.0}, {&coef_, 0.0}, {&term_, 0.0}}) {
      double* row = table->data() + d * pitch_;
      std::copy(row + p + 1, row + k_, row + p);
      row[k_ - 1] = pad;
    }
  }
  --k_;
}

// A kernel enters at position p (row: its values): the tables shift up by one, it and its sorted neighbours are
// marked for new widths.
void ParzenEstimator::edit_insert(std::size_t p, const double* row) {
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    for (aligned_vector<double>* table : {&mu_, &sigma_, &coef_, &term_}) {
      double* r = table->data() + d * pitch_;
      std::copy_backward(r + p, r + k_, r + k_ + 1);
      r[p] = 0.0;
    }
    const ParzenDim& pd = dims_[d];
    if (kind_[d] == simd::kCategorical) {
      mu_[d * pitch_ + p] = row[d];
      continue;
    }
    mu_[d * pitch_ + p] = std::clamp(row[d], pd.low - half_[d], pd.high + half_[d]);
    sigma_[d * pitch_ + p] = 1.0;
    std::vector<std::uint32_t>& sp = sorted_pos_[d];
    std::vector<std::size_t>& mv = moved_[d];
    const std::uint32_t p32 = static_cast<std::uint32_t>(p);
    for (std::uint32_t& q : sp) q += q >= p32;
    for (std::size_t& q : mv) q += q >= p;
    const std::size_t j = sorted_index(d, p);
    sp.insert(sp.begin() + static_cast<std::ptrdiff_t>(j), p32);
    mv.push_back(p);
    if (j > 0) mv.push_back(sp[j - 1]);
    if (j + 1 < sp.size()) mv.push_back(sp[j + 1]);
  }
  ++k_;
}

// The marked kernels of dimension d get their neighbour widths again, their blocks new constants.
void ParzenEstimator::edit_widths(std::size_t d) {
  std::vector<std::size_t>& mv = moved_[d];
  std::sort(mv.begin(), mv.end());
  mv.erase(std::unique(mv.begin(), mv.end()), mv.end());
  const std::vector<std::uint32_t>& sp = sorted_pos_[d];
  const std::size_t n = sp.size();
  const double minsig = min_width(d, k_);
  const double* mu = mu_.data() + d * pitch_;
  double* sg = sigma_.data() + d * pitch_;
  for (const std::size_t q : mv) {
    const std::size_t j = sorted_index(d, q);
    sg[q] = neighbour_width(d, j > 0 ? mu[sp[j - 1]] : 0.0, mu[q], j + 1 < n ? mu[sp[j + 1]] : 0.0, j, n, minsig);
  }
  std::size_t done = static_cast<std::size_t>(-1);
  for (const std::size_t q : mv) {
    const std::size_t block = q / simd::kPad * simd::kPad;
    if (block != done) fit_constants(d, block, block + simd::kPad, false);
    done = block;
  }
  mv.clear();
}

}  // namespace kubetune::search
