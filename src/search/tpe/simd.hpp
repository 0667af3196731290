// The Parzen estimator's vectorised loops (internal). Written once against xsimd (simd_body.hpp), compiled
// once per instruction set (simd_avx512.cpp, simd_avx2.cpp, simd_base.cpp) and picked at run time by
// kernels(): a given machine always takes the same path, so results are reproducible.
#pragma once

#include <cstddef>

namespace kubetune::search::simd {

/// Kernel tables are padded to a multiple of this many entries (the widest batch: 8 doubles).
constexpr std::size_t kPad = 8;
inline std::size_t padded(std::size_t n) { return (n + kPad - 1) / kPad * kPad; }

/// Both bounds farther than this many widths from a kernel's centre: the truncation removes < 2e-17 of its
/// mass, log Z = 0.
constexpr double kInnerZ = 8.5;

/// One continuous or discrete dimension's kernels (n, a multiple of kPad), for fit(). Each kernel's constants
/// depend on its own centre and width only (not on the other kernels of its batch). A block of kernels whose
/// centres and widths equal the previous fit's at the same indices (the first n_prev) takes its constants from
/// there.
struct ConstantArgs {
  const double* sigma;
  const double* mu;
  std::size_t n;
  double shift;     ///< - log sqrt(2 pi)
  double lo, hi;    ///< the (padded) support
  bool discrete;    ///< the term leaves out shift - log sigma (a discrete dimension's bin masses replace it)
  double* coef;     ///< out: 1 / (sqrt(2) sigma) (a point x adds -((x - mu) coef)^2 to a kernel's term)
  double* term;     ///< out: shift - log sigma - log Z (discrete: - log Z); NaN where log Z needs the scalar
                    ///< path (a centre outside the support)
  const double *prev_sigma, *prev_mu, *prev_coef, *prev_term;
  std::size_t n_prev;  ///< 0: no previous fit
};

/// One bin edge e of a discrete dimension against every kernel (n, a multiple of kPad).
struct EdgeArgs {
  double e;
  const double* mu;
  const double* sigma;
  std::size_t n;
  double* out;  ///< per kernel: the normal tail beyond e away from the centre, Phi(-|e - mu| / sigma)
};

/// A bin [lo, hi] of a discrete dimension: every kernel's mass on it from the two edges' tails (EdgeArgs).
struct BinArgs {
  double lo, hi;
  const double* mu;
  const double* tail_lo;
  const double* tail_hi;
  std::size_t n;
  double* out;  ///< per kernel: Phi(hi) - Phi(lo), as a difference of the smaller tails (no cancellation)
};

/// A discrete dimension on an integer grid: each kernel's mass on the bin of grid index `value`, read off a table
/// of masses by width and distance in steps (masses[base[k] + |value - index[k]|]).
struct GridArgs {
  double value;          ///< the bin's grid index
  const double* index;   ///< per kernel: its centre's grid index (an integer, as a double)
  const double* base;    ///< per kernel: the offset of its width's row in masses (an integer, as a double)
  const double* masses;
  std::size_t n;         ///< kernels (a multiple of kPad)
  double* out;
};

/// Kind of a dimension in JointArgs::kind.
enum : char { kContinuous = 0, kDiscrete = 1, kCategorical = 2 };
/// Terms more than this many nats below the largest add < e^-40 ~ 4e-18 each to a log-sum-exp.
constexpr double kCut = 40.0;

/// Points against every kernel of a product-kernel mixture. Tables are dimension-major with row pitch `pitch`;
/// `stride` kernels (a multiple of kPad; padding kernels carry base = -inf) are scored.
struct JointArgs {
  const double* x;          ///< the points, row-major (n_points x n_dims)
  std::size_t n_points;
  std::size_t n_dims;
  const char* kind;         ///< per dimension: kContinuous, kDiscrete (left out: see bin_masses) or kCategorical
  const double* mu;         ///< centres (categorical: observed index)
  const double* coef;       ///< 1 / (sqrt(2) sigma) (categorical: log hit - log miss)
  const double* base;       ///< per kernel
  std::size_t stride;
  std::size_t pitch;        ///< row length of the mu and coef tables (>= stride)
  double* out;              ///< per point, stride terms (n_points x stride)
  double* top;              ///< per point, its largest term
};

struct Kernels {
  const char* name;  ///< instruction set, e.g. "avx512bw"
  /// out[k] = base[k] + sum over dimensions of: continuous -((x - mu) coef)^2, categorical coef where x == mu
  /// (discrete dimensions add nothing here: their bin masses multiply the terms, weighted_sum_exp); each
  /// point's largest term in top.
  void (*joint_terms)(const JointArgs&);
  /// sum_k exp(t[k] - m) over n terms (n a multiple of kPad) whose largest is m, leaving out terms more than
  /// kCut below m; 0 when every term is -inf. t is scratch: the terms may be overwritten. pack: the terms that
  /// stay are packed first where the instruction set can (kernels in no useful order); otherwise whole blocks
  /// below the cut are skipped (kernels sorted by centre). (The caller takes m + log(sum), a block at once.)
  double (*sum_exp)(double* t, std::size_t n, double m, bool pack);
  /// sum_k exp(t[k] - m) w[k] (0 <= w <= 1, no term left out), given m >= every t[k].
  double (*weighted_sum_exp)(const double* t, const double* w, std::size_t n, double m);
  /// out[k] = log(in[k]) for n values (a multiple of kPad).
  void (*logs)(const double* in, double* out, std::size_t n);
  void (*kernel_constants)(const ConstantArgs&);
  /// A discrete dimension's kernels at one bin edge, then on one bin (neighbouring bins share their edge).
  void (*edge_tails)(const EdgeArgs&);
  void (*bin_masses)(const BinArgs&);
  void (*grid_masses)(const GridArgs&);
};

/// The widest instruction set this CPU runs.
const Kernels& kernels();

const Kernels& kernels_base();
#if defined(__x86_64__) || defined(_M_X64)
const Kernels& kernels_avx2();
const Kernels& kernels_avx512();
#endif

}  // namespace kubetune::search::simd
