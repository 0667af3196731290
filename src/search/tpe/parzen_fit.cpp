// ParzenEstimator::fit: weights, kernel centres, widths (neighbour distances or Scott's rule) and the
// per-kernel constants that log_pdf() adds up. The formulas are Optuna 5.0's `_ParzenEstimator`.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kubetune/core/error.hpp"
#include "kubetune/search/parzen.hpp"
#include "simd.hpp"

namespace kubetune::search {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
constexpr double kMinSigma = 1e-12;  // Optuna's EPS: the smallest width without the magic clip

double step_of(const ParzenDim& pd) { return pd.kind == ParzenDim::Kind::Discrete ? pd.step : 0.0; }

// The same dimensions (a NaN prior centre equals a NaN one).
bool same_dims(const std::vector<ParzenDim>& a, const std::vector<ParzenDim>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const ParzenDim& x, const ParzenDim& y) {
    return x.kind == y.kind && x.low == y.low && x.high == y.high && x.step == y.step && x.n_choices == y.n_choices &&
           x.prior_sigma == y.prior_sigma && (x.prior_mu == y.prior_mu || (std::isnan(x.prior_mu) && std::isnan(y.prior_mu)));
  });
}
}  // namespace

ParzenDim ParzenDim::continuous(double low, double high) {
  ParzenDim d;
  d.kind = Kind::Continuous;
  d.low = low;
  d.high = high;
  return d;
}

ParzenDim ParzenDim::discrete(double low, double high, double step) {
  ParzenDim d;
  d.kind = Kind::Discrete;
  d.low = low;
  d.high = high;
  d.step = step;
  return d;
}

ParzenDim ParzenDim::categorical(std::size_t n_choices) {
  ParzenDim d;
  d.kind = Kind::Categorical;
  d.n_choices = n_choices;
  d.low = 0.0;
  d.high = static_cast<double>(n_choices) - 1.0;
  return d;
}

void ParzenEstimator::check_dims(const std::vector<ParzenDim>& dims) const {
  KT_CHECK(!dims.empty(), InvalidArgument, "parzen: at least one dimension is required");
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const ParzenDim& pd = dims[d];
    switch (pd.kind) {
      case ParzenDim::Kind::Continuous:
        KT_CHECK(std::isfinite(pd.low) && std::isfinite(pd.high) && pd.low < pd.high, InvalidArgument,
                 "parzen: dimension ", d, " has empty range [", pd.low, ", ", pd.high, "]");
        break;
      case ParzenDim::Kind::Discrete:
        KT_CHECK(std::isfinite(pd.low) && std::isfinite(pd.high) && pd.low <= pd.high, InvalidArgument,
                 "parzen: dimension ", d, " has empty range [", pd.low, ", ", pd.high, "]");
        KT_CHECK(pd.step > 0.0 && std::isfinite(pd.step), InvalidArgument, "parzen: dimension ", d,
                 " has step = ", pd.step, " (must be > 0)");
        break;
      case ParzenDim::Kind::Categorical:
        KT_CHECK(pd.n_choices >= 1, InvalidArgument, "parzen: dimension ", d, " has n_choices = 0");
        break;
    }
  }
}

// Observation i of dimension d (of dims_): finite, a category's index for a categorical dimension.
void ParzenEstimator::check_value(std::size_t d, std::size_t i, double v) const {
  const ParzenDim& pd = dims_[d];
  if (pd.kind == ParzenDim::Kind::Categorical)
    KT_CHECK(v >= 0.0 && v < static_cast<double>(pd.n_choices) && v == std::floor(v), InvalidArgument,
             "parzen: observation ", i, " of categorical dimension ", d, " = ", v, " is not an index below ",
             pd.n_choices);
  else
    KT_CHECK(std::isfinite(v), InvalidArgument, "parzen: observation ", i, " of dimension ", d, " = ", v,
             " is not finite");
}

// Observation weights (null: all ones) finite and >= 0, checked before a fit changes anything.
void ParzenEstimator::check_weights(std::size_t n, const double* weights) {
  for (std::size_t i = 0; weights && i < n; ++i)
    KT_CHECK(std::isfinite(weights[i]) && weights[i] >= 0.0, InvalidArgument, "parzen: weight ", i, " = ",
             weights[i], " must be finite and >= 0");
}

void ParzenEstimator::fit(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n,
                          const double* weights, const ParzenOptions& opt, const std::size_t* order) {
  fit_strided(dims, obs, n, dims.size(), 1, weights, opt, order);
}

void ParzenEstimator::fit_columns(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n,
                                  const double* weights, const ParzenOptions& opt, const std::size_t* order) {
  fit_strided(dims, obs, n, 1, n, weights, opt, order);
}

// Observation i of dimension d at obs[i * row_step + d * dim_step].
void ParzenEstimator::fit_strided(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n,
                                  std::size_t row_step, std::size_t dim_step, const double* weights,
                                  const ParzenOptions& opt, const std::size_t* order) {
  KT_CHECK(std::isfinite(opt.prior_weight) && opt.prior_weight > 0.0, InvalidArgument,
           "parzen: prior_weight = ", opt.prior_weight, " must be > 0");
  check_dims(dims);
  KT_CHECK(n < 0xFFFFFFFFull, InvalidArgument, "parzen: ", n, " observations exceed the 2^32 - 1 it indexes");
  check_weights(n, weights);
  // The previous fit's tables (same dimensions) let unchanged kernels keep their constants (fit_constants).
  prev_.valid = k_ > 0 && same_dims(dims_, dims);
  prev_.pitch = pitch_;
  prev_.stride = stride_;
  std::swap(prev_.mu, mu_);
  std::swap(prev_.sigma, sigma_);
  std::swap(prev_.coef, coef_);
  std::swap(prev_.term, term_);
  dims_ = dims;
  opt_ = opt;
  const std::size_t D = dims.size();
  k_ = n + 1;
  stride_ = simd::padded(k_);
  pitch_ = simd::padded(k_ + k_ / 8 + simd::kPad);  // room for refit() to add kernels in place
  // Every entry below k_ is written by the steps below; padding kernels get finite constants (base -inf).
  for (auto [table, pad] : {std::pair{&mu_, 0.0}, {&sigma_, 1.0}, {&coef_, 0.0}, {&term_, 0.0}}) {
    table->resize(D * pitch_);
    for (std::size_t d = 0; d < D; ++d)
      std::fill(table->begin() + static_cast<std::ptrdiff_t>(d * pitch_ + k_),
                table->begin() + static_cast<std::ptrdiff_t>((d + 1) * pitch_), pad);
  }
  half_.assign(D, 0.0);
  kind_.assign(D, simd::kContinuous);
  sorted_pos_.resize(D);
  has_discrete_ = false;
  for (std::size_t d = 0; d < D; ++d) {
    if (dims[d].kind == ParzenDim::Kind::Categorical) {
      fit_categorical(d, obs + d * dim_step, row_step, n);
      continue;
    }
    if (dims[d].kind == ParzenDim::Kind::Discrete) {
      has_discrete_ = true;
      kind_[d] = simd::kDiscrete;
      half_[d] = 0.5 * dims[d].step;
    }
    fit_centres(d, obs + d * dim_step, row_step, n);
    fit_widths(d, n, order ? order + d * n : nullptr);
    fit_constants(d, 0, stride_, prev_.valid);
  }
  fit_weights(n, weights, opt.prior_weight);
  fit_base();
}

// Observation weights (default 1; checked by check_weights) and the prior's, normalised (the prior alone weighs
// 1); base_ starts as their logs (padding kernels -inf).
void ParzenEstimator::fit_weights(std::size_t n, const double* weights, double prior_weight) {
  w_.resize(k_);
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double wi = weights ? weights[i] : 1.0;
    w_[i] = wi;
    total += wi;
  }
  w_[n] = n == 0 ? 1.0 : prior_weight;
  total += w_[n];
  const double inv = 1.0 / total;  // (Optuna divides; the product differs by at most one unit in the last place)
  for (std::size_t k = 0; k < k_; ++k) w_[k] *= inv;
  base_.assign(stride_, 1.0);
  std::copy(w_.begin(), w_.end(), base_.begin());
  simd::kernels().logs(base_.data(), base_.data(), stride_);
  std::fill(base_.begin() + static_cast<std::ptrdiff_t>(k_), base_.end(), -kInf);  // padding kernels
}

// base_ (the log weights) plus every dimension's term, dimension by dimension.
void ParzenEstimator::fit_base() {
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    const double* term = term_.data() + d * pitch_;
    for (std::size_t k = 0; k < stride_; ++k) base_[k] += term[k];
  }
}

// Centres: the observations clamped to the (padded) support, then the prior's centre.
void ParzenEstimator::fit_centres(std::size_t d, const double* obs, std::size_t step, std::size_t n) {
  const ParzenDim& pd = dims_[d];
  const double s = step_of(pd);
  const double lo = pd.low - 0.5 * s, hi = pd.high + 0.5 * s;
  double* mu = mu_.data() + d * pitch_;
  bool bad = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = obs[i * step];
    bad |= !(v - v == 0.0);  // NaN or infinite (a branch-free test, so the loop vectorises)
    mu[i] = std::clamp(v, lo, hi);
  }
  for (std::size_t i = 0; bad && i < n; ++i) check_value(d, i, obs[i * step]);
  mu[n] = std::isnan(pd.prior_mu) ? 0.5 * (pd.low + pd.high) : pd.prior_mu;
}

// The lower bound of the widths: range / min(100, 1 + n_kernels) (hyperopt's "magic clip") or EPS.
double ParzenEstimator::min_width(std::size_t d, std::size_t n_kernels) const {
  const double width = dims_[d].high - dims_[d].low + step_of(dims_[d]);
  return opt_.magic_clip ? width / std::min(100.0, 1.0 + static_cast<double>(n_kernels)) : kMinSigma;
}

// The neighbour width of the j-th of n centres in sorted order (v; vm and vp its neighbours where they exist),
// clipped to [minsig, range]: the distance to the farther neighbour, the padded bounds acting as outer neighbours;
// without consider_endpoints the outermost kernels take their inner gap (Bergstra et al. 2011; Optuna 5.x, which
// no longer counts the prior's centre as a neighbour).
double ParzenEstimator::neighbour_width(std::size_t d, double vm, double v, double vp, std::size_t j, std::size_t n,
                                        double minsig) const {
  const ParzenDim& pd = dims_[d];
  const double s = step_of(pd);
  const double width = pd.high - pd.low + s, lo = pd.low - 0.5 * s, hi = pd.high + 0.5 * s;
  const bool inner = !opt_.consider_endpoints;
  double g;
  if (n == 1) g = std::max(v - lo, hi - v);
  else if (j == 0) g = inner ? vp - v : std::max(v - lo, vp - v);
  else if (j + 1 == n) g = inner ? v - vm : std::max(v - vm, hi - v);
  else g = std::max(v - vm, vp - v);
  return std::min(std::max(g, minsig), width);
}

// Widths clipped to [min_width, range]: neighbour distances (neighbour_width) or Scott's 0.2 n^(-1/(d+4)) range for
// every kernel (Optuna 4.x multivariate). The prior kernel is as wide as the range (or the space's prior). Keeps
// the centres' sorted order in sorted_pos_ (refit() edits it).
void ParzenEstimator::fit_widths(std::size_t d, std::size_t n, const std::size_t* order) {
  const ParzenDim& pd = dims_[d];
  const double width = pd.high - pd.low + step_of(pd);
  const double minsig = min_width(d, k_);
  const double* mu = mu_.data() + d * pitch_;
  double* sg = sigma_.data() + d * pitch_;
  sg[n] = pd.prior_sigma > 0.0 ? pd.prior_sigma : width;
  std::vector<std::uint32_t>& sorted = sorted_pos_[d];
  sorted.resize(n);
  if (n == 0) return;
  if (opt_.bandwidth == ParzenOptions::Bandwidth::Scott) {
    const double dims = static_cast<double>(dims_.size());
    std::fill(sg, sg + n, std::min(std::max(0.2 * std::pow(static_cast<double>(n), -1.0 / (dims + 4.0)) * width, minsig), width));
    return;
  }
  sorted_.resize(n);
  // sorted_: the centres in sorted order, through the caller's order if it is the stable argsort.
  if (order && is_stable_argsort(mu, n, order)) {
    for (std::size_t j = 0; j < n; ++j) sorted[j] = static_cast<std::uint32_t>(order[j]);
  } else {
    pairs_.resize(n);
    for (std::size_t i = 0; i < n; ++i) pairs_[i] = {mu[i], i};
    std::sort(pairs_.begin(), pairs_.end());
    for (std::size_t j = 0; j < n; ++j) {
      sorted[j] = static_cast<std::uint32_t>(pairs_[j].second);
      sorted_[j] = pairs_[j].first;
    }
  }
  const double* v = sorted_.data();
  // Interior widths in a branch-free pass (it vectorises; the same arithmetic as neighbour_width), written back
  // through the order.
  widths_.resize(n);
  double* w = widths_.data();
  for (std::size_t j = 1; j + 1 < n; ++j) w[j] = std::min(std::max(std::max(v[j] - v[j - 1], v[j + 1] - v[j]), minsig), width);
  w[0] = neighbour_width(d, 0.0, v[0], n > 1 ? v[1] : 0.0, 0, n, minsig);
  if (n > 1) w[n - 1] = neighbour_width(d, v[n - 2], v[n - 1], 0.0, n - 1, n, minsig);
  for (std::size_t j = 0; j < n; ++j) sg[sorted[j]] = w[j];
}

// Whether order is the stable argsort of v[0..n) (ascending, ties by index: which also makes it a permutation),
// in one pass; leaves v in that order in sorted_.
bool ParzenEstimator::is_stable_argsort(const double* v, std::size_t n, const std::size_t* order) {
  double* s = sorted_.data();
  bool bad = false;
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t o = order[j];
    bad |= o >= n;
    s[j] = v[o < n ? o : 0];
    if (j > 0) bad |= !(s[j - 1] < s[j] || (s[j - 1] == s[j] && order[j - 1] < o));
  }
  return !bad;
}

// Kernels [from, to) of dimension d (a multiple of kPad): coef = 1 / (sqrt(2) sigma) and term = - log sigma - log
// sqrt(2 pi) - log Z (a discrete dimension: - log Z only, its bin masses come at scoring), log Z = log(Phi(b) -
// Phi(a)) over the support: vectorised for centres inside it (all observations are clamped there), the scalar
// log_normal_cdf_diff for a prior centre outside. With use_prev, blocks of kernels with the previous fit's centres
// and widths at the same indices copy its constants (the same numbers).
void ParzenEstimator::fit_constants(std::size_t d, std::size_t from, std::size_t to, bool use_prev) {
  const ParzenDim& pd = dims_[d];
  const double s = step_of(pd);
  const double lo = pd.low - 0.5 * s, hi = pd.high + 0.5 * s;
  const bool discrete = kind_[d] == simd::kDiscrete;
  const std::size_t at = d * pitch_ + from, prev_at = d * prev_.pitch + from;
  const std::size_t n_prev = use_prev && prev_.stride > from ? prev_.stride - from : 0;
  auto prev = [&](const aligned_vector<double>& t) { return n_prev ? t.data() + prev_at : nullptr; };
  const double* mu = mu_.data() + d * pitch_;
  const double* sg = sigma_.data() + d * pitch_;
  double* term = term_.data() + d * pitch_;
  simd::kernels().kernel_constants({sg + from, mu + from, to - from, -kLogSqrt2Pi, lo, hi, discrete,
                                    coef_.data() + at, term + from, prev(prev_.sigma), prev(prev_.mu),
                                    prev(prev_.coef), prev(prev_.term), n_prev});
  for (std::size_t k = from; k < to; ++k) {
    if (!std::isnan(term[k])) continue;
    const double edge = discrete ? 0.0 : -kLogSqrt2Pi - std::log(sg[k]);
    term[k] = k < k_ ? edge - log_normal_cdf_diff((lo - mu[k]) / sg[k], (hi - mu[k]) / sg[k]) : 0.0;
  }
}

// Categorical centres: the observed indices, then -1 for the prior (categorical_constants gives the rest).
void ParzenEstimator::fit_categorical(std::size_t d, const double* obs, std::size_t step, std::size_t n) {
  kind_[d] = simd::kCategorical;
  double* mu = mu_.data() + d * pitch_;
  for (std::size_t i = 0; i < n; ++i) {
    check_value(d, i, obs[i * step]);
    mu[i] = obs[i * step];
  }
  mu[n] = -1.0;
  categorical_constants(d);
}

// Smoothed indicators (Optuna 4.x): prior_weight / n_kernels on every choice, +1 on the observed one, each row
// normalised; the prior kernel is uniform. term is the log mass of an unobserved choice, coef what observing it
// adds; widths are 0.
void ParzenEstimator::categorical_constants(std::size_t d) {
  const double C = static_cast<double>(dims_[d].n_choices);
  const std::size_t n = k_ - 1, at = d * pitch_;
  const double a = opt_.prior_weight / static_cast<double>(k_);
  const double hit = std::log((a + 1.0) / (a * C + 1.0)), miss = std::log(a / (a * C + 1.0));
  std::fill_n(coef_.data() + at, n, hit - miss);
  std::fill_n(term_.data() + at, n, miss);
  coef_[at + n] = 0.0;
  term_[at + n] = -std::log(C);
  std::fill_n(sigma_.data() + at, k_, 0.0);
}

}  // namespace kubetune::search
