// Vectorised kernel profiles for x86-64 CPUs with AVX2 and FMA (checked at run time; other CPUs use the
// Eigen code paths): a branch-free exp (fdlibm's Cody-Waite reduction constants, Taylor polynomial of
// degree 13) on 4-wide GCC vector types. Eigen's SSE2 exp costs ~5 ns per element at the project's -O2
// baseline; these loops ~1.5 ns. The same for the GP's dense linear algebra: triangular substitutions, panel
// products and a blocked Cholesky. A given machine always takes the same path, so results are reproducible.
#include "simd_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KT_GP_X86_SIMD 1
#include <immintrin.h>
#pragma GCC diagnostic ignored "-Wpsabi"  // 32-byte vectors passed only between internal inlined functions
#endif

namespace kubetune::search::gp::simd {
namespace {
// The fallbacks of gemv_sub and potrf_lower (unblocked, left-looking).
void gemv_sub_scalar(const double* A, std::size_t ld, std::size_t rows, std::size_t cols, const double* z,
                     double* x) noexcept {
  for (std::size_t j = 0; j < cols; ++j)
    for (std::size_t i = 0; i < rows; ++i) x[i] -= A[j * ld + i] * z[j];
}
bool potrf_lower_scalar(double* A, std::size_t ld, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    double* cj = A + j * ld;
    for (std::size_t p = 0; p < j; ++p)
      for (std::size_t i = j; i < n; ++i) cj[i] -= A[p * ld + i] * A[p * ld + j];
    if (!(cj[j] > 0.0) || !std::isfinite(cj[j])) return false;
    cj[j] = std::sqrt(cj[j]);
    for (std::size_t i = j + 1; i < n; ++i) cj[i] /= cj[j];
  }
  return true;
}
}  // namespace

#ifdef KT_GP_X86_SIMD
namespace {
using v4d = double __attribute__((vector_size(32)));
using v4i = long long __attribute__((vector_size(32)));

constexpr double kLog2e = 1.44269504088896338700e+00;
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // fdlibm: high part of ln 2 (n * kLn2Hi is exact)
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln 2 - kLn2Hi
constexpr double kShift = 6755399441055744.0;          // 1.5 * 2^52: adding it rounds to an integer
constexpr double kSqrt5 = 2.23606797749978969640;
constexpr double kMinArg = -708.0;                     // exp(-708) is still a normal double

// exp on 4 lanes, x in [kMinArg, 709] (smaller x clamped).
__attribute__((target("avx2,fma"), always_inline)) inline v4d exp4(v4d x) {
  const v4d lo = {kMinArg, kMinArg, kMinArg, kMinArg};
  x = x < lo ? lo : x;
  const v4d kd = x * kLog2e + kShift;  // n + shift, n = round(x / ln 2)
  const v4d nd = kd - kShift;
  const v4d r = (x - nd * kLn2Hi) - nd * kLn2Lo;  // |r| <= ln2 / 2 (+ rounding)
  // e^r = sum_k r^k / k!, k <= 13 (truncation < 1e-17 relative on |r| <= 0.347).
  v4d p = r * (1.0 / 6227020800.0) + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n: the low bits of kd hold n + 2^51; move n + 1023 into the exponent field.
  constexpr long long kShiftBits = 0x4338000000000000LL;  // bit pattern of kShift
  const v4i n = __builtin_bit_cast(v4i, kd) - v4i{kShiftBits, kShiftBits, kShiftBits, kShiftBits};
  return p * __builtin_bit_cast(v4d, (n + 1023) << 52);
}

__attribute__((target("avx2,fma"), always_inline)) inline v4d load4(const double* p) {
  v4d v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((target("avx2,fma"), always_inline)) inline void store4(double* p, v4d v) {
  std::memcpy(p, &v, sizeof v);
}
__attribute__((target("avx2,fma"), always_inline)) inline v4d sqrt4(v4d v) {
  return __builtin_bit_cast(v4d, _mm256_sqrt_pd(__builtin_bit_cast(__m256d, v)));
}
// Tails (< 4 elements) are padded into a full vector, so every element takes the same arithmetic.
__attribute__((target("avx2,fma"), always_inline)) inline v4d load_tail(const double* p, std::size_t m) {
  double t[4] = {0.0, 0.0, 0.0, 0.0};
  std::memcpy(t, p, m * sizeof(double));
  return load4(t);
}
__attribute__((target("avx2,fma"), always_inline)) inline void store_tail(double* p, v4d v, std::size_t m) {
  double t[4];
  store4(t, v);
  std::memcpy(p, t, m * sizeof(double));
}

#define KT_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline
KT_AVX2 v4d matern4(v4d q, double s2) {
  const v4d r = sqrt4(q);
  return s2 * ((1.0 + kSqrt5 * r + (5.0 / 3.0) * q) * exp4(-kSqrt5 * r));
}
KT_AVX2 void matern_grad4(v4d q, double s2, v4d& kv, v4d& gv) {
  const v4d r = sqrt4(q);
  const v4d e = s2 * exp4(-kSqrt5 * r);
  kv = (1.0 + kSqrt5 * r + (5.0 / 3.0) * q) * e;
  gv = (5.0 / 3.0) * (1.0 + kSqrt5 * r) * e;
}
KT_AVX2 v4d rbf4(v4d q, double s2) { return s2 * exp4(-0.5 * q); }
#undef KT_AVX2

__attribute__((target("avx2,fma"))) void matern52_avx2(const double* r2, double* out, std::size_t n, double s2) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) store4(out + i, matern4(load4(r2 + i), s2));
  if (i < n) store_tail(out + i, matern4(load_tail(r2 + i, n - i), s2), n - i);
}

__attribute__((target("avx2,fma"))) void matern52_grad_avx2(const double* r2, double* k, double* g, std::size_t n,
                                                         double s2) {
  std::size_t i = 0;
  v4d kv, gv;
  for (; i + 4 <= n; i += 4) {
    matern_grad4(load4(r2 + i), s2, kv, gv);
    store4(k + i, kv);
    store4(g + i, gv);
  }
  if (i < n) {
    matern_grad4(load_tail(r2 + i, n - i), s2, kv, gv);
    store_tail(k + i, kv, n - i);
    store_tail(g + i, gv, n - i);
  }
}

__attribute__((target("avx2,fma"))) void rbf_avx2(const double* r2, double* out, std::size_t n, double s2) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) store4(out + i, rbf4(load4(r2 + i), s2));
  if (i < n) store_tail(out + i, rbf4(load_tail(r2 + i, n - i), s2), n - i);
}

__attribute__((target("avx2,fma"))) void exp_avx2(const double* x, double* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) store4(out + i, exp4(load4(x + i)));
  if (i < n) store_tail(out + i, exp4(load_tail(x + i, n - i)), n - i);
}

// Forward substitution L x = b in place (L lower triangular, column-major, leading dimension ld), four
// columns at a time: the 4 x 4 diagonal block by scalars, then x[j+4:] -= L[j+4:, j:j+4] x[j:j+4].
__attribute__((target("avx2,fma"))) void trsv_lower_avx2(const double* L, std::size_t ld, double* x,
                                                         std::size_t n) {
  std::size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const double* c0 = L + j * ld;
    const double* c1 = c0 + ld;
    const double* c2 = c1 + ld;
    const double* c3 = c2 + ld;
    const double x0 = x[j] / c0[j];
    const double x1 = (x[j + 1] - c0[j + 1] * x0) / c1[j + 1];
    const double x2 = (x[j + 2] - c0[j + 2] * x0 - c1[j + 2] * x1) / c2[j + 2];
    const double x3 = (x[j + 3] - c0[j + 3] * x0 - c1[j + 3] * x1 - c2[j + 3] * x2) / c3[j + 3];
    x[j] = x0;
    x[j + 1] = x1;
    x[j + 2] = x2;
    x[j + 3] = x3;
    std::size_t i = j + 4;
    for (; i + 4 <= n; i += 4) {
      v4d acc = load4(x + i);
      acc -= load4(c0 + i) * x0;
      acc -= load4(c1 + i) * x1;
      acc -= load4(c2 + i) * x2;
      acc -= load4(c3 + i) * x3;
      store4(x + i, acc);
    }
    for (; i < n; ++i) x[i] -= c0[i] * x0 + c1[i] * x1 + c2[i] * x2 + c3[i] * x3;
  }
  for (; j < n; ++j) {
    const double* c = L + j * ld;
    const double xj = x[j] / c[j];
    x[j] = xj;
    for (std::size_t i = j + 1; i < n; ++i) x[i] -= c[i] * xj;
  }
}

__attribute__((target("avx2,fma"), always_inline)) inline double hsum(v4d v) { return (v[0] + v[2]) + (v[1] + v[3]); }

// Back substitution L^T x = b in place: x_j = (b_j - L[j+1:, j] . x[j+1:]) / L_jj, four columns at a time
// (dots of the four columns with the solved tail, then the 4 x 4 block).
__attribute__((target("avx2,fma"))) void trsv_lower_t_avx2(const double* L, std::size_t ld, double* x,
                                                           std::size_t n) {
  std::size_t end = n;  // x[end:] solved
  while (end % 4 != 0) {
    const std::size_t j = end - 1;
    const double* c = L + j * ld;
    double s = x[j];
    for (std::size_t i = end; i < n; ++i) s -= c[i] * x[i];
    x[j] = s / c[j];
    end = j;
  }
  while (end > 0) {
    const std::size_t j = end - 4;
    const double* c0 = L + j * ld;
    const double* c1 = c0 + ld;
    const double* c2 = c1 + ld;
    const double* c3 = c2 + ld;
    v4d a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
    std::size_t i = end;
    for (; i + 4 <= n; i += 4) {
      const v4d xv = load4(x + i);
      a0 += load4(c0 + i) * xv;
      a1 += load4(c1 + i) * xv;
      a2 += load4(c2 + i) * xv;
      a3 += load4(c3 + i) * xv;
    }
    double d0 = hsum(a0), d1 = hsum(a1), d2 = hsum(a2), d3 = hsum(a3);
    for (; i < n; ++i) {
      d0 += c0[i] * x[i];
      d1 += c1[i] * x[i];
      d2 += c2[i] * x[i];
      d3 += c3[i] * x[i];
    }
    const double x3 = (x[j + 3] - d3) / c3[j + 3];
    const double x2 = (x[j + 2] - d2 - c2[j + 3] * x3) / c2[j + 2];
    const double x1 = (x[j + 1] - d1 - c1[j + 2] * x2 - c1[j + 3] * x3) / c1[j + 1];
    const double x0 = (x[j] - d0 - c0[j + 1] * x1 - c0[j + 2] * x2 - c0[j + 3] * x3) / c0[j];
    x[j] = x0;
    x[j + 1] = x1;
    x[j + 2] = x2;
    x[j + 3] = x3;
    end = j;
  }
}

// x[0:rows] -= A[0:rows, 0:cols] z, four columns per pass over x.
__attribute__((target("avx2,fma"))) void gemv_sub_avx2(const double* A, std::size_t ld, std::size_t rows,
                                                       std::size_t cols, const double* z, double* x) {
  std::size_t j = 0;
  for (; j + 4 <= cols; j += 4) {
    const double *c0 = A + j * ld, *c1 = c0 + ld, *c2 = c1 + ld, *c3 = c2 + ld;
    const double z0 = z[j], z1 = z[j + 1], z2 = z[j + 2], z3 = z[j + 3];
    std::size_t i = 0;
    for (; i + 4 <= rows; i += 4)
      store4(x + i, load4(x + i) - load4(c0 + i) * z0 - load4(c1 + i) * z1 - load4(c2 + i) * z2 - load4(c3 + i) * z3);
    for (; i < rows; ++i) x[i] = x[i] - c0[i] * z0 - c1[i] * z1 - c2[i] * z2 - c3[i] * z3;
  }
  for (; j < cols; ++j)
    for (std::size_t i = 0; i < rows; ++i) x[i] -= A[j * ld + i] * z[j];
}

// Cholesky, right-looking in panels of kPanel columns: each panel's columns left-looking over every row
// below the diagonal (vectorised down the rows), then the trailing lower triangle less P P^T (P: the panel's
// rows below it) in 8 x 4 register tiles read from a packed copy of P (LAPACK potrf's blocking, by hand:
// Eigen's blocked LLT runs on 2-wide SSE2 at the project's baseline flags).
constexpr std::size_t kPanel = 64;

__attribute__((target("avx2,fma"), always_inline)) inline v4d bcast(double x) { return v4d{x, x, x, x}; }

// Columns [j0, j1) of the factor, given that earlier panels were already subtracted from them.
__attribute__((target("avx2,fma"))) bool potrf_panel_avx2(double* A, std::size_t ld, std::size_t n,
                                                          std::size_t j0, std::size_t j1) {
  for (std::size_t j = j0; j < j1; ++j) {
    double* cj = A + j * ld;
    std::size_t p = j0;
    for (; p + 4 <= j; p += 4) {  // cj[j:n] -= A[j:n, p:p+4] A[j, p:p+4]^T
      const double *c0 = A + p * ld, *c1 = c0 + ld, *c2 = c1 + ld, *c3 = c2 + ld;
      const v4d f0 = bcast(c0[j]), f1 = bcast(c1[j]), f2 = bcast(c2[j]), f3 = bcast(c3[j]);
      std::size_t i = j;
      for (; i + 4 <= n; i += 4)
        store4(cj + i, load4(cj + i) - load4(c0 + i) * f0 - load4(c1 + i) * f1 - load4(c2 + i) * f2 -
                           load4(c3 + i) * f3);
      for (; i < n; ++i) cj[i] = cj[i] - c0[i] * c0[j] - c1[i] * c1[j] - c2[i] * c2[j] - c3[i] * c3[j];
    }
    for (; p < j; ++p) {
      const double* c0 = A + p * ld;
      const double f = c0[j];
      for (std::size_t i = j; i < n; ++i) cj[i] -= c0[i] * f;
    }
    const double d = cj[j];
    if (!(d > 0.0) || !std::isfinite(d)) return false;
    const double l = std::sqrt(d);
    cj[j] = l;
    const v4d lv = bcast(l);
    std::size_t i = j + 1;
    for (; i + 4 <= n; i += 4) store4(cj + i, load4(cj + i) / lv);
    for (; i < n; ++i) cj[i] /= l;
  }
  return true;
}

// A[r0:n, r0:n] (lower triangle) -= P P^T, P = A[r0:n, j0:r0], from `pack`: P in tiles of 8 rows, each
// tile kb x 8 row-major (rows past n zero).
__attribute__((target("avx2,fma"))) void potrf_update_avx2(double* A, std::size_t ld, std::size_t n, std::size_t j0,
                                                           std::size_t r0, double* pack) {
  const std::size_t kb = r0 - j0, m = n - r0, tiles = (m + 7) / 8;
  std::memset(pack, 0, tiles * kb * 8 * sizeof(double));
  for (std::size_t p = 0; p < kb; ++p) {
    const double* cp = A + (j0 + p) * ld + r0;
    for (std::size_t t = 0; t * 8 < m; ++t)
      for (std::size_t r = 0; r < 8 && t * 8 + r < m; ++r) pack[t * kb * 8 + p * 8 + r] = cp[t * 8 + r];
  }
  for (std::size_t jc = 0; jc < m; jc += 4) {
    const double* B = pack + (jc / 8) * kb * 8 + jc % 8;  // rows jc..jc+3 of P: the tile's columns
    for (std::size_t it = jc / 8; it < tiles; ++it) {
      const double* P = pack + it * kb * 8;
      v4d c00 = {}, c01 = {}, c02 = {}, c03 = {}, c10 = {}, c11 = {}, c12 = {}, c13 = {};
      for (std::size_t q = 0; q < kb; ++q) {
        const v4d a0 = load4(P + q * 8), a1 = load4(P + q * 8 + 4);
        const double* b = B + q * 8;
        const v4d b0 = bcast(b[0]), b1 = bcast(b[1]), b2 = bcast(b[2]), b3 = bcast(b[3]);
        c00 += a0 * b0;
        c10 += a1 * b0;
        c01 += a0 * b1;
        c11 += a1 * b1;
        c02 += a0 * b2;
        c12 += a1 * b2;
        c03 += a0 * b3;
        c13 += a1 * b3;
      }
      const v4d c[2][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}};
      const std::size_t i0 = it * 8;
      if (i0 >= jc + 3 && i0 + 8 <= m && jc + 4 <= m) {  // wholly below the diagonal and inside
        for (int k = 0; k < 4; ++k) {
          double* col = A + (r0 + jc + static_cast<std::size_t>(k)) * ld + r0 + i0;
          store4(col, load4(col) - c[0][k]);
          store4(col + 4, load4(col + 4) - c[1][k]);
        }
        continue;
      }
      double t[4][8];
      for (int k = 0; k < 4; ++k) {
        store4(t[k], c[0][k]);
        store4(t[k] + 4, c[1][k]);
      }
      for (std::size_t k = 0; k < 4 && jc + k < m; ++k)
        for (std::size_t r = 0; r < 8; ++r)
          if (i0 + r >= jc + k && i0 + r < m) A[(r0 + jc + k) * ld + r0 + i0 + r] -= t[k][r];
    }
  }
}

bool potrf_lower_avx2(double* A, std::size_t ld, std::size_t n) {
  std::vector<double> pack(((n + 7) / 8) * 8 * kPanel);
  for (std::size_t j0 = 0; j0 < n; j0 += kPanel) {
    const std::size_t j1 = std::min(n, j0 + kPanel);
    if (!potrf_panel_avx2(A, ld, n, j0, j1)) return false;
    if (j1 < n) potrf_update_avx2(A, ld, n, j0, j1, pack.data());
  }
  return true;
}

bool detect() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
}  // namespace

std::atomic<bool> g_scalar_only{false};

bool available() noexcept {
  static const bool ok = detect();
  return ok && !g_scalar_only.load(std::memory_order_relaxed);
}

void set_scalar_only(bool on) noexcept { g_scalar_only.store(on, std::memory_order_relaxed); }

void exp_neg(const double* x, double* out, std::size_t n) noexcept {
  if (available()) return exp_avx2(x, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

void matern52(const double* r2, double* out, std::size_t n, double s2) noexcept {
  if (available()) return matern52_avx2(r2, out, n, s2);
  for (std::size_t i = 0; i < n; ++i) {
    const double q = r2[i], r = std::sqrt(q);
    out[i] = s2 * ((1.0 + std::sqrt(5.0) * r + (5.0 / 3.0) * q) * std::exp(-std::sqrt(5.0) * r));
  }
}

void matern52_grad(const double* r2, double* k, double* g, std::size_t n, double s2) noexcept {
  if (available()) return matern52_grad_avx2(r2, k, g, n, s2);
  for (std::size_t i = 0; i < n; ++i) {
    const double q = r2[i], r = std::sqrt(q), e = s2 * std::exp(-std::sqrt(5.0) * r);
    k[i] = (1.0 + std::sqrt(5.0) * r + (5.0 / 3.0) * q) * e;
    g[i] = (5.0 / 3.0) * (1.0 + std::sqrt(5.0) * r) * e;
  }
}

void rbf(const double* r2, double* out, std::size_t n, double s2) noexcept {
  if (available()) return rbf_avx2(r2, out, n, s2);
  for (std::size_t i = 0; i < n; ++i) out[i] = s2 * std::exp(-0.5 * r2[i]);
}

void trsv_lower(const double* L, std::size_t ld, double* x, std::size_t n) noexcept {
  if (available()) return trsv_lower_avx2(L, ld, x, n);
  for (std::size_t j = 0; j < n; ++j) {
    x[j] /= L[j * ld + j];
    for (std::size_t i = j + 1; i < n; ++i) x[i] -= L[j * ld + i] * x[j];
  }
}

void gemv_sub(const double* A, std::size_t ld, std::size_t rows, std::size_t cols, const double* z,
              double* x) noexcept {
  if (available()) return gemv_sub_avx2(A, ld, rows, cols, z, x);
  gemv_sub_scalar(A, ld, rows, cols, z, x);
}

bool potrf_lower(double* A, std::size_t ld, std::size_t n) {
  if (available()) return potrf_lower_avx2(A, ld, n);
  return potrf_lower_scalar(A, ld, n);
}

void trsv_lower_t(const double* L, std::size_t ld, double* x, std::size_t n) noexcept {
  if (available()) return trsv_lower_t_avx2(L, ld, x, n);
  for (std::size_t j = n; j-- > 0;) {
    double s = x[j];
    for (std::size_t i = j + 1; i < n; ++i) s -= L[j * ld + i] * x[i];
    x[j] = s / L[j * ld + j];
  }
}

#else  // not x86-64 GCC: scalar loops

bool available() noexcept { return false; }
void set_scalar_only(bool) noexcept {}
void exp_neg(const double* x, double* out, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}
void matern52(const double* r2, double* out, std::size_t n, double s2) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const double q = r2[i], r = std::sqrt(q);
    out[i] = s2 * ((1.0 + std::sqrt(5.0) * r + (5.0 / 3.0) * q) * std::exp(-std::sqrt(5.0) * r));
  }
}
void matern52_grad(const double* r2, double* k, double* g, std::size_t n, double s2) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const double q = r2[i], r = std::sqrt(q), e = s2 * std::exp(-std::sqrt(5.0) * r);
    k[i] = (1.0 + std::sqrt(5.0) * r + (5.0 / 3.0) * q) * e;
    g[i] = (5.0 / 3.0) * (1.0 + std::sqrt(5.0) * r) * e;
  }
}
void rbf(const double* r2, double* out, std::size_t n, double s2) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = s2 * std::exp(-0.5 * r2[i]);
}
void trsv_lower(const double* L, std::size_t ld, double* x, std::size_t n) noexcept {
  for (std::size_t j = 0; j < n; ++j) {
    x[j] /= L[j * ld + j];
    for (std::size_t i = j + 1; i < n; ++i) x[i] -= L[j * ld + i] * x[j];
  }
}
bool potrf_lower(double* A, std::size_t ld, std::size_t n) { return potrf_lower_scalar(A, ld, n); }
void gemv_sub(const double* A, std::size_t ld, std::size_t rows, std::size_t cols, const double* z,
              double* x) noexcept {
  gemv_sub_scalar(A, ld, rows, cols, z, x);
}
void trsv_lower_t(const double* L, std::size_t ld, double* x, std::size_t n) noexcept {
  for (std::size_t j = n; j-- > 0;) {
    double s = x[j];
    for (std::size_t i = j + 1; i < n; ++i) s -= L[j * ld + i] * x[i];
    x[j] = s / L[j * ld + j];
  }
}

#endif

}  // namespace kubetune::search::gp::simd
