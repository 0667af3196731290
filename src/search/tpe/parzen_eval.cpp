// ParzenEstimator::log_pdf and sampling. log_pdf adds every kernel's log term (simd.hpp) and takes the
// log-sum-exp; a discrete dimension's bin masses (one row per distinct value) weigh the terms in that sum.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"
#include "kubetune/search/parzen.hpp"
#include "normal_draws.hpp"
#include "simd.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kubetune::search {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Below this much work (points x kernels x dimensions) log_pdf stays on one thread.
constexpr std::size_t kParallelWork = std::size_t{1} << 18;

// A draw on a Discrete dimension's padded support, snapped to its grid.
double snap_to_grid(const ParzenDim& pd, double t) {
  const double last = std::round((pd.high - pd.low) / pd.step);
  return pd.low + std::clamp(std::round((t - pd.low) / pd.step), 0.0, last) * pd.step;
}
}  // namespace

// ------------------------------------------------------------------------------------------ log_pdf
// For a batch of points: per discrete dimension, one row of bin masses (simd bin_masses) per distinct value the
// points take there, and each point's row (row_of[r * n_discrete + j] for the j-th discrete dimension).
struct ParzenEstimator::DiscreteRows {
  std::size_t n_discrete = 0;
  aligned_vector<double> rows;
  std::vector<std::size_t> row_of;
};

namespace {
// log_pdf's buffers, one set per thread, kept between calls (fresh ones of this size page-fault on every call).
struct Scratch {
  aligned_vector<double> terms, pts, weights, tails, cum_w;
  std::vector<std::pair<double, std::size_t>> values;
};
// A weighted sum this many nats below its largest term may have lost its masses to underflow (products of
// values near the smallest double): such a point is summed in log space instead.
constexpr double kMassRange = 600.0;

// A point's kernel weights: its one discrete dimension's row of masses, or their product (into `scratch`).
const double* bin_weights(const std::size_t* rows, std::size_t n_discrete, const double* table, std::size_t stride,
                          double* scratch) {
  const double* first = table + rows[0] * stride;
  if (n_discrete == 1) return first;
  std::copy(first, first + stride, scratch);
  for (std::size_t j = 1; j < n_discrete; ++j) {
    const double* row = table + rows[j] * stride;
    for (std::size_t k = 0; k < stride; ++k) scratch[k] *= row[k];
  }
  return scratch;
}

// log sum_k exp(t[k]) w[k] computed as log-sum-exp of t[k] + log w[k] (exact where the weights underflow).
double log_space_sum(const double* t, const double* w, std::size_t n) {
  double top = -std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < n; ++k)
    if (w[k] > 0.0) top = std::max(top, t[k] + std::log(w[k]));
  if (!(top > -std::numeric_limits<double>::infinity())) return top;
  double sum = 0.0;
  for (std::size_t k = 0; k < n; ++k)
    if (w[k] > 0.0) sum += std::exp(t[k] + std::log(w[k]) - top);
  return top + std::log(sum);
}
Scratch& scratch() {
  static thread_local Scratch s;
  return s;
}
// grid_rows' tables (one set per thread).
struct GridScratch {
  aligned_vector<double> widths, index, base, dist, sig, tails, masses;
};
GridScratch& grid_scratch() {
  static thread_local GridScratch g;
  return g;
}
}  // namespace

// m points; terms: m x stride_ scratch, pts: m x n_dims() scratch (a copy of the points when a categorical
// coordinate must be replaced by the choice it lies in, its floor; outside [0, n_choices) the point has no mass).
// row_of: the points' rows in dr (m x dr.n_discrete).
void ParzenEstimator::points_log_pdf(const double* x, std::size_t m, const std::size_t* row_of,
                                     const DiscreteRows& dr, double* terms, double* pts, double* weights,
                                     double* out) const {
  const std::size_t D = dims_.size();
  bool outside[kBlock] = {};
  if (std::find(kind_.begin(), kind_.end(), simd::kCategorical) != kind_.end()) {
    std::copy(x, x + m * D, pts);
    x = pts;
  }
  for (std::size_t d = 0; d < D; ++d) {
    if (kind_[d] != simd::kCategorical) continue;
    const double C = static_cast<double>(dims_[d].n_choices);
    for (std::size_t r = 0; r < m; ++r) {
      double& v = pts[r * D + d];
      v = std::floor(v);
      outside[r] = outside[r] || !(v >= 0.0 && v < C);
    }
  }
  const simd::Kernels& kern = simd::kernels();
  double top[kBlock];
  kern.joint_terms({x, m, D, kind_.data(), mu_.data(), coef_.data(), base_.data(), stride_, pitch_, terms, top});
  // Each point's sum of exp(term - top), then top + log(sum) for the block at once.
  double sums[kBlock] = {};
  for (std::size_t r = 0; r < m; ++r) {
    double* t = terms + r * stride_;
    if (outside[r]) continue;
    if (dr.n_discrete == 0) {
      sums[r] = kern.sum_exp(t, stride_, top[r], D > 1);  // (a one-parameter g(x) has its kernels sorted)
    } else {
      // The kernels' bin masses on the point's values (their product over the discrete dimensions) weigh the
      // terms; each mass is at most 1, so top bounds every weighted term.
      const double* w = bin_weights(row_of + r * dr.n_discrete, dr.n_discrete, dr.rows.data(), stride_, weights);
      sums[r] = kern.weighted_sum_exp(t, w, stride_, top[r]);
    }
  }
  kern.logs(sums, sums, kBlock);
  for (std::size_t r = 0; r < m; ++r) {
    out[r] = outside[r] ? -kInf : top[r] + sums[r];
    if (dr.n_discrete > 0 && !outside[r] && !(out[r] > top[r] - kMassRange)) {  // tiny masses: no underflow
      const double* w = bin_weights(row_of + r * dr.n_discrete, dr.n_discrete, dr.rows.data(), stride_, weights);
      out[r] = log_space_sum(terms + r * stride_, w, stride_);
    }
  }
}

// A discrete dimension's bin masses depend on the point only through its value there, and a batch of candidates
// takes few values on a grid: one row of masses per distinct value (simd.hpp, bin_masses).
void ParzenEstimator::discrete_rows(const double* x, std::size_t m, DiscreteRows& dr) const {
  const std::size_t D = dims_.size();
  dr.n_discrete = static_cast<std::size_t>(std::count(kind_.begin(), kind_.end(), simd::kDiscrete));
  dr.row_of.assign(m * dr.n_discrete, 0);
  std::vector<std::pair<double, std::size_t>>& values = scratch().values;
  values.resize(m);
  // NaN sorts last and is never equal to the previous value (its own row, whose terms come out NaN).
  auto before = [](const auto& a, const auto& b) { return a.first < b.first || (std::isnan(b.first) && !std::isnan(a.first)); };
  aligned_vector<double>& tails = scratch().tails;  // the current bin's two edges, kernel by kernel
  tails.resize(2 * stride_);
  double* tail_lo = tails.data();
  double* tail_hi = tails.data() + stride_;
  const simd::Kernels& kern = simd::kernels();
  std::size_t n_rows = 0;
  for (std::size_t d = 0, j = 0; d < D; ++d) {
    if (kind_[d] != simd::kDiscrete) continue;
    const std::size_t at = d * pitch_;
    const double h = half_[d];
    for (std::size_t r = 0; r < m; ++r) values[r] = {x[r * D + d], r};
    std::sort(values.begin(), values.end(), before);
    if (grid_rows(d, values, j, dr, n_rows)) {
      ++j;
      continue;
    }
    double last_hi = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; i < m; ++i) {
      const double v = values[i].first;
      if (i == 0 || !(v == values[i - 1].first)) {
        const double lo = v - h, hi = v + h;
        // Neighbouring grid values share an edge (equal up to the rounding of the two sums).
        if (std::fabs(lo - last_hi) <= 1e-12 * std::max(1.0, std::fabs(lo))) std::swap(tail_lo, tail_hi);
        else kern.edge_tails({lo, mu_.data() + at, sigma_.data() + at, stride_, tail_lo});
        kern.edge_tails({hi, mu_.data() + at, sigma_.data() + at, stride_, tail_hi});
        last_hi = hi;
        dr.rows.resize((n_rows + 1) * stride_);
        kern.bin_masses({lo, hi, mu_.data() + at, tail_lo, tail_hi, stride_, dr.rows.data() + n_rows * stride_});
        ++n_rows;
      }
      dr.row_of[values[i].second * dr.n_discrete + j] = n_rows - 1;
    }
    ++j;
  }
}

// On an integer grid (integer low and step, every observation's centre a grid value, every point's value one
// too) a kernel's mass on a bin depends only on its width and on the bin's distance from its centre in steps:
// the tails at the distances 1/2, 3/2, ... steps for each distinct width (edge_tails, the same numbers as at the
// bins' edges) give a table of masses (bin_masses' formula), and each row is read off it kernel by kernel, the
// last block (the prior, padding) computed as before. False (nothing written) when the grid or the widths do not
// allow it, or the table would cost more erfc than the edges (a wide grid, many widths).
bool ParzenEstimator::grid_rows(std::size_t d, const std::vector<std::pair<double, std::size_t>>& values,
                                std::size_t j, DiscreteRows& dr, std::size_t& n_rows) const {
  constexpr std::size_t kMaxWidths = 16, kMaxGrid = 4096;
  constexpr double kExact = 0x1p50;  // integers below this stay exact through the sums below
  const ParzenDim& pd = dims_[d];
  const std::size_t n = k_ - 1, at = d * pitch_, regular = n / simd::kPad * simd::kPad;
  if (regular == 0 || pd.step != std::floor(pd.step) || pd.low != std::floor(pd.low) ||
      !(std::fabs(pd.low) < kExact && std::fabs(pd.high) < kExact))
    return false;
  const double* mu = mu_.data() + at;
  const double* sg = sigma_.data() + at;
  for (const auto& v : values) {
    const double c = (v.first - pd.low) / pd.step;
    if (!(v.first >= pd.low && v.first <= pd.high && c == std::floor(c) && v.first == pd.low + c * pd.step)) return false;
  }
  GridScratch& g = grid_scratch();
  const std::size_t G = static_cast<std::size_t>((pd.high - pd.low) / pd.step) + 1, row = simd::padded(G + 1);
  g.widths.clear();
  g.index.resize(regular);
  g.base.resize(regular);
  for (std::size_t k = 0; k < regular; ++k) {
    const double c = (mu[k] - pd.low) / pd.step;
    if (!(c == std::floor(c) && mu[k] == pd.low + c * pd.step)) return false;  // a centre off the grid
    std::size_t w = 0;
    while (w < g.widths.size() && !(g.widths[w] == sg[k])) ++w;
    if (w == g.widths.size()) {
      if (w == kMaxWidths) return false;
      g.widths.push_back(sg[k]);
    }
    g.index[k] = c;
    g.base[k] = static_cast<double>(w * row);
  }
  // The table's erfc count against the edge tails' (one row per point at most): a wide grid keeps the edges.
  if (G > kMaxGrid || g.widths.size() * (G + 1) > values.size() * stride_) return false;
  // Tails at (i + 1/2) steps, i = 0 .. G, for each width; then masses by distance in steps.
  g.dist.assign(row, 0.0);
  for (std::size_t i = 0; i <= G; ++i) g.dist[i] = -(static_cast<double>(i) + 0.5) * pd.step;  // 0 - (-dist)
  g.sig.resize(row);
  g.tails.resize(g.widths.size() * row);
  g.masses.resize(g.widths.size() * row);
  const simd::Kernels& kern = simd::kernels();
  for (std::size_t w = 0; w < g.widths.size(); ++w) {
    std::fill(g.sig.begin(), g.sig.end(), g.widths[w]);
    double* t = g.tails.data() + w * row;
    kern.edge_tails({0.0, g.dist.data(), g.sig.data(), row, t});
    double* mass = g.masses.data() + w * row;
    mass[0] = 1.0 - t[0] - t[0];
    for (std::size_t i = 1; i <= G; ++i) mass[i] = t[i - 1] - t[i];
  }
  aligned_vector<double>& tails = scratch().tails;  // the last block's two edges
  const double h = half_[d];
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = values[i].first;
    if (i == 0 || !(v == values[i - 1].first)) {
      dr.rows.resize((n_rows + 1) * stride_);
      double* out = dr.rows.data() + n_rows * stride_;
      kern.grid_masses({(v - pd.low) / pd.step, g.index.data(), g.base.data(), g.masses.data(), regular, out});
      const std::size_t tail = stride_ - regular;
      kern.edge_tails({v - h, mu + regular, sg + regular, tail, tails.data()});
      kern.edge_tails({v + h, mu + regular, sg + regular, tail, tails.data() + tail});
      kern.bin_masses({v - h, v + h, mu + regular, tails.data(), tails.data() + tail, tail, out + regular});
      ++n_rows;
    }
    dr.row_of[values[i].second * dr.n_discrete + j] = n_rows - 1;
  }
  return true;
}

void ParzenEstimator::log_pdf(const double* x, std::size_t m, double* out, int n_threads) const {
  KT_CHECK(k_ > 0, StateError, "parzen: log_pdf() before fit()");
  const std::size_t D = dims_.size();
  // Without a continuous dimension, points repeat (each coordinate one of a few choices or grid values).
  if (m > 1 && std::find(kind_.begin(), kind_.end(), simd::kContinuous) == kind_.end() &&
      std::all_of(x, x + m * D, [](double v) { return std::isfinite(v); })) {
    std::vector<std::size_t> order(m);
    for (std::size_t r = 0; r < m; ++r) order[r] = r;
    auto row = [&](std::size_t r) { return x + r * D; };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::lexicographical_compare(row(a), row(a) + D, row(b), row(b) + D);
    });
    std::vector<double> distinct;
    std::vector<std::size_t> of(m);
    for (std::size_t i = 0; i < m; ++i) {
      if (i == 0 || !std::equal(row(order[i]), row(order[i]) + D, row(order[i - 1])))
        distinct.insert(distinct.end(), row(order[i]), row(order[i]) + D);
      of[order[i]] = distinct.size() / std::max<std::size_t>(D, 1) - 1;
    }
    const std::size_t n_distinct = D ? distinct.size() / D : 1;
    if (n_distinct < m) {
      std::vector<double> values(n_distinct);
      distinct_log_pdf(distinct.data(), n_distinct, values.data(), n_threads);
      for (std::size_t r = 0; r < m; ++r) out[r] = values[of[r]];
      return;
    }
  }
  distinct_log_pdf(x, m, out, n_threads);
}

void ParzenEstimator::distinct_log_pdf(const double* x, std::size_t m, double* out, int n_threads) const {
  const std::size_t D = dims_.size();
  static thread_local DiscreteRows dr;  // its rows keep their capacity between calls (as Scratch)
  dr.n_discrete = 0;
  if (has_discrete_) discrete_rows(x, m, dr);
  // Blocks of points (the vectorised loop takes up to eight at a time), split over the threads.
  const std::size_t blocks = (m + kBlock - 1) / kBlock;
  auto run = [&](std::size_t b, Scratch& s) {
    const std::size_t r0 = b * kBlock;
    points_log_pdf(x + r0 * D, std::min(kBlock, m - r0), dr.row_of.data() + r0 * dr.n_discrete, dr, s.terms.data(),
                   s.pts.data(), s.weights.data(), out + r0);
  };
  int nt = 1;
  (void)n_threads;
#ifdef _OPENMP
  if (blocks > 1 && m * k_ * D >= kParallelWork)
    nt = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(core::resolve_threads(n_threads)), blocks));
#endif
  auto buffers = [&]() -> Scratch& {
    Scratch& s = scratch();
    s.terms.resize(kBlock * stride_);
    s.pts.resize(kBlock * D);
    s.weights.resize(stride_);
    return s;
  };
  if (nt <= 1) {  // no OpenMP team for small work
    Scratch& s = buffers();
    for (std::size_t b = 0; b < blocks; ++b) run(b, s);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
  {
    Scratch& s = buffers();
#pragma omp for schedule(static)
    for (long long b = 0; b < static_cast<long long>(blocks); ++b) run(static_cast<std::size_t>(b), s);
  }
#endif
}

double ParzenEstimator::log_pdf(const double* x) const {
  double out;
  log_pdf(x, 1, &out, 1);
  return out;
}

// ------------------------------------------------------------------------------------------ sample
void ParzenEstimator::sample(Rng& rng, std::size_t m, double* out, std::size_t* kernels) const {
  KT_CHECK(k_ > 0, StateError, "parzen: sample() before fit()");
  const std::size_t D = dims_.size();
  const std::size_t n = k_ - 1;
  aligned_vector<double>& cum_w = scratch().cum_w;  // running sums of the weights (only l(x) is sampled: here, not per fit)
  cum_w.resize(k_);
  double run = 0.0;
  for (std::size_t k = 0; k < k_; ++k) cum_w[k] = run += w_[k];
  for (std::size_t r = 0; r < m; ++r) {
    const double u = rng.uniform();
    std::size_t k = static_cast<std::size_t>(std::upper_bound(cum_w.begin(), cum_w.end(), u) - cum_w.begin());
    k = std::min(k, k_ - 1);
    if (kernels) kernels[r] = k;
    for (std::size_t d = 0; d < D; ++d) {
      const ParzenDim& pd = dims_[d];
      const double mu = mu_[d * pitch_ + k], sg = sigma_[d * pitch_ + k];
      double v;
      if (pd.kind == ParzenDim::Kind::Continuous) {
        v = draws::truncated_normal_near(rng, mu, sg, pd.low, pd.high);
      } else if (pd.kind == ParzenDim::Kind::Discrete) {
        v = snap_to_grid(pd, draws::truncated_normal_near(rng, mu, sg, pd.low - 0.5 * pd.step,
                                                          pd.high + 0.5 * pd.step));
      } else if (k == n) {
        v = static_cast<double>(rng.below(pd.n_choices));
      } else {  // the smoothed indicator: 1 on the observed choice, a = prior_weight / n_kernels on each
        const double C = static_cast<double>(pd.n_choices);
        const double a = opt_.prior_weight / static_cast<double>(k_);
        const double t = rng.uniform() * (a * C + 1.0);
        v = t < 1.0 ? mu : std::min(std::floor((t - 1.0) / a), C - 1.0);
      }
      out[r * D + d] = v;
    }
  }
}

void ParzenEstimator::sample_near(Rng& rng, const double* centre, std::size_t kernel, double scale, std::size_t m,
                                  double* out) const {
  KT_CHECK(k_ > 0, StateError, "parzen: sample_near() before fit()");
  KT_CHECK(kernel < k_, InvalidArgument, "parzen: kernel ", kernel, " out of range (", k_, " kernels)");
  KT_CHECK(std::isfinite(scale) && scale > 0.0, InvalidArgument, "parzen: scale = ", scale, " must be > 0");
  const std::size_t D = dims_.size();
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t d = 0; d < D; ++d) {
      const ParzenDim& pd = dims_[d];
      const double c = centre[d], sg = scale * sigma_[d * pitch_ + kernel];
      double v = c;
      if (pd.kind == ParzenDim::Kind::Continuous) {
        v = draws::truncated_normal_near(rng, c, sg, pd.low, pd.high);
      } else if (pd.kind == ParzenDim::Kind::Discrete) {
        v = snap_to_grid(pd, draws::truncated_normal_near(rng, c, sg, pd.low - 0.5 * pd.step, pd.high + 0.5 * pd.step));
      }
      out[r * D + d] = v;
    }
  }
}

}  // namespace kubetune::search
