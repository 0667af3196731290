// Parzen estimator bodies: bandwidth rules (neighbour distances, Scott), truncated-normal maths, batched scoring.
#include "kubetune/search/parzen.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "kubetune/core/error.hpp"
#include "kubetune/core/parallel.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kubetune::search {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaNd = std::numeric_limits<double>::quiet_NaN();
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
constexpr double kSqrt2Pi = 2.50662827463100050242;
// Terms below max - kCut nats contribute < e^-40 ~ 4e-18 each to a log-sum-exp: skipped without effect on
// double-precision results (at most n_kernels * 4e-18 relative).
constexpr double kCut = 40.0;
// Below this much work (candidates x kernels x dims) log_pdf stays on one thread.
constexpr std::size_t kParallelWork = std::size_t{1} << 17;
// Joint estimators with at least this many observations keep their kernels sorted by dimension 0 and
// evaluate only the window of kernels that can matter (see log_pdf_window).
constexpr std::size_t kWindowMin = ParzenEstimator::kWindowRows;
// Optuna's EPS for bandwidths when magic clip is off.
constexpr double kMinSigma = 1e-12;

// exp(y) for y <= 0 (results below 2^-1022 flush to 0), inline so log-sum-exp loops avoid a libm call per
// kernel: y = (64 m + j) ln2/64 + r with |r| <= ln2/128, exp(y) = 2^m * 2^(j/64) * p(r), p the degree-5
// Taylor polynomial (remainder < 4e-17 relative), 2^(j/64) from a table (Tang's method).
struct Exp2Table {
  double v[64];
  Exp2Table() {
    for (int j = 0; j < 64; ++j) v[j] = std::exp2(j / 64.0);
  }
};
const Exp2Table kExp2Table;

inline double exp_nonpositive(double y) noexcept {
  if (!(y > -708.0)) return 0.0;
  const double t = y * (64.0 / 0.69314718055994530942);  // in (-65440, 0]
  const long long k = -static_cast<long long>(-t + 0.5);  // nearest integer (t <= 0)
  const double kf = static_cast<double>(k);
  const double r = (y - kf * (6.93147180369123816490e-01 / 64.0)) - kf * (1.90821492927058770002e-10 / 64.0);
  const double p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0)))));
  const long long j = k & 63;   // two's complement: k = 64 m + j with 0 <= j < 64
  const long long m = (k - j) / 64;
  const std::uint64_t bits = static_cast<std::uint64_t>(m + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * kExp2Table.v[j] * scale;
}

// exp(y) for y in [-kCut, 0] (no range check).
inline double exp_bounded(double y) noexcept {
  const double t = y * (64.0 / 0.69314718055994530942);
  const long long k = -static_cast<long long>(-t + 0.5);
  const double kf = static_cast<double>(k);
  const double r = (y - kf * (6.93147180369123816490e-01 / 64.0)) - kf * (1.90821492927058770002e-10 / 64.0);
  const double p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0)))));
  const long long j = k & 63;
  const std::uint64_t bits = static_cast<std::uint64_t>(((k - j) / 64) + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * kExp2Table.v[j] * scale;
}

// ---- Vectorised window sums (one-dimensional continuous estimators) and the joint bound pass. The bodies
// are compiled for AVX2+FMA (x86-64 only) and for the baseline target (GCC vector extensions) and picked once
// at run time; the same machine always takes the same path, so results stay deterministic. (An AVX-512
// variant measured no faster than AVX2 here.) exp() there is table-free: y = k ln2 + r, |r| <= ln2/2,
// exp(r) by its degree-13 Taylor polynomial (remainder < 5e-18 relative), 2^k assembled in the exponent bits.
// Each variant uses its native width (VD / VL / KW are redefined before each instantiation of the bodies).
typedef double V4d __attribute__((vector_size(32)));
typedef long long V4l __attribute__((vector_size(32)));
typedef double V2d __attribute__((vector_size(16)));
typedef long long V2l __attribute__((vector_size(16)));

struct WindowArgs {
  double x;
  const double *mu, *inv, *lw, *cst, *lz;
  std::size_t w;
  double* t;  // scratch, >= w rounded up to the vector width
};

// Writes the window's log terms into t[0..w) and returns their maximum (-inf when w == 0).
#define KT_WINDOW_BODY                                                                                           \
  const double x = a.x;                                                                                          \
  const std::size_t w = a.w;                                                                                     \
  double* t = a.t;                                                                                               \
  const std::size_t wv = w - w % KW;                                                                             \
  VD vmax = VD{} - kInf;                                                                                         \
  for (std::size_t j = 0; j < wv; j += KW) {                                                                     \
    VD m, iv, lw, cs, lz;                                                                                        \
    std::memcpy(&m, a.mu + j, sizeof m);                                                                         \
    std::memcpy(&iv, a.inv + j, sizeof iv);                                                                      \
    std::memcpy(&lw, a.lw + j, sizeof lw);                                                                       \
    std::memcpy(&cs, a.cst + j, sizeof cs);                                                                      \
    std::memcpy(&lz, a.lz + j, sizeof lz);                                                                       \
    const VD z = (x - m) * iv;                                                                                   \
    const VD tt = lw + cs - 0.5 * z * z - lz;                                                                    \
    std::memcpy(t + j, &tt, sizeof tt);                                                                          \
    vmax = tt > vmax ? tt : vmax;                                                                                \
  }                                                                                                              \
  double M = -kInf;                                                                                              \
  for (int l = 0; l < KW; ++l) M = std::max(M, vmax[l]);                                                         \
  for (std::size_t j = wv; j < w; ++j) {                                                                         \
    const double z = (x - a.mu[j]) * a.inv[j];                                                                   \
    t[j] = a.lw[j] + a.cst[j] - 0.5 * z * z - a.lz[j];                                                           \
    M = std::max(M, t[j]);                                                                                       \
  }                                                                                                              \
  return M;

// Sum of exp(max(t_j - M, -kCut)) over the window (padding lanes masked out).
#define KT_EXPSUM_BODY                                                                                           \
  const std::size_t wp = (w + KW - 1) / KW * KW;                                                                 \
  for (std::size_t j = w; j < wp; ++j) t[j] = 0.0;                                                               \
  VD acc = VD{};                                                                                                 \
  const VD vmagic = VD{} + 6755399441055744.0; /* 1.5 * 2^52 */                                                  \
  const VD vcut = VD{} - kCut;                                                                                   \
  VL lane = VL{};                                                                                                \
  for (int l = 0; l < KW; ++l) lane[l] = l;                                                                      \
  const VL vw = VL{} + static_cast<long long>(w);                                                                \
  for (std::size_t j = 0; j < wp; j += KW) {                                                                     \
    VD y;                                                                                                        \
    std::memcpy(&y, t + j, sizeof y);                                                                            \
    y = y - M;                                                                                                   \
    y = y > vcut ? y : vcut;                                                                                     \
    VD kd = y * 1.4426950408889634074 + vmagic;                                                                  \
    const VL ki = (VL)kd - (VL)vmagic;                                                                           \
    kd = kd - vmagic;                                                                                            \
    const VD r = (y - kd * 6.93147180369123816490e-01) - kd * 1.90821492927058770002e-10;                        \
    VD p = r * (1.0 / 6227020800.0) + (1.0 / 479001600.0);                                                       \
    p = p * r + (1.0 / 39916800.0);                                                                              \
    p = p * r + (1.0 / 3628800.0);                                                                               \
    p = p * r + (1.0 / 362880.0);                                                                                \
    p = p * r + (1.0 / 40320.0);                                                                                 \
    p = p * r + (1.0 / 5040.0);                                                                                  \
    p = p * r + (1.0 / 720.0);                                                                                   \
    p = p * r + (1.0 / 120.0);                                                                                   \
    p = p * r + (1.0 / 24.0);                                                                                    \
    p = p * r + (1.0 / 6.0);                                                                                     \
    p = p * r + 0.5;                                                                                             \
    p = p * r + 1.0;                                                                                             \
    p = p * r + 1.0;                                                                                             \
    const VL bits = (ki + 1023) << 52;                                                                           \
    const VD e = p * (VD)bits;                                                                                   \
    acc += (lane + static_cast<long long>(j)) < vw ? e : VD{};                                                   \
  }                                                                                                              \
  double sum = 0.0;                                                                                              \
  for (int l = 0; l < KW; ++l) sum += acc[l];                                                                    \
  return sum;

// Joint models' bound pass, continuous dimension: acc += cst - z^2 / 2, shi += ub over K kernels.
#define KT_ACC_BODY                                                                                              \
  std::size_t k = 0;                                                                                             \
  for (; k + KW <= K; k += KW) {                                                                                 \
    VD m, iv, cs, u, ac, sh;                                                                                     \
    std::memcpy(&m, mu + k, sizeof m);                                                                           \
    std::memcpy(&iv, inv + k, sizeof iv);                                                                        \
    std::memcpy(&cs, cst + k, sizeof cs);                                                                        \
    std::memcpy(&u, ub + k, sizeof u);                                                                           \
    std::memcpy(&ac, acc + k, sizeof ac);                                                                        \
    std::memcpy(&sh, shi + k, sizeof sh);                                                                        \
    const VD z = (v - m) * iv;                                                                                   \
    ac += cs - 0.5 * z * z;                                                                                      \
    sh += u;                                                                                                     \
    std::memcpy(acc + k, &ac, sizeof ac);                                                                        \
    std::memcpy(shi + k, &sh, sizeof sh);                                                                        \
  }                                                                                                              \
  for (; k < K; ++k) {                                                                                           \
    const double z = (v - mu[k]) * inv[k];                                                                       \
    acc[k] += cst[k] - 0.5 * z * z;                                                                              \
    shi[k] += ub[k];                                                                                             \
  }

// fit()'s per-kernel pass over one continuous dimension (no step): reciprocal width, log-density constant
// (clipped widths share inv_min / cst_min; others go lane by lane through std::log, as the scalar pass),
// truncation flags (|bounds| beyond 8.5 sigma: log Z = 0), the bound ub_obs otherwise. Returns whether some
// kernel is not inner. Same values as the scalar loop.
// Inner kernels get known flag 1 and no log Z entry (it is 0; readers skip flag-1 entries), others flag 0.
struct KernelPassArgs {
  const double *mu, *sg;
  double *inv, *cst, *ub;
  char* kn;
  std::size_t n;
  double minsig, inv_min, cst_min, lo_e, hi_e, ub_obs;
  char* kk;    // per kernel: all dimensions known so far (AND of the inner flags)
  double* wb;  // windowed estimators: per kernel, += cst + ub (null otherwise)
};
#define KT_KPASS_BODY                                                                                            \
  const std::size_t n = a.n;                                                                                     \
  const double* const mu = a.mu;                                                                                 \
  const double* const sg = a.sg;                                                                                 \
  double* const inv = a.inv;                                                                                     \
  double* const cst = a.cst;                                                                                     \
  double* const ubp = a.ub;                                                                                      \
  char* const kn = a.kn;                                                                                         \
  char* const kk = a.kk;                                                                                         \
  double* const wb = a.wb;                                                                                       \
  int unknown = 0;                                                                                               \
  std::size_t k = 0;                                                                                             \
  const VD vmin = VD{} + a.minsig, vinv = VD{} + a.inv_min, vcst = VD{} + a.cst_min;                             \
  const VD vlo = VD{} + a.lo_e, vhi = VD{} + a.hi_e, vub = VD{} + a.ub_obs;                                      \
  const VD lim_lo = VD{} - 8.5, lim_hi = VD{} + 8.5;                                                             \
  constexpr int kFull = (1 << KW) - 1;                                                                           \
  for (; k + KW <= n; k += KW) {                                                                                 \
    VD sk, m;                                                                                                    \
    std::memcpy(&sk, sg + k, sizeof sk);                                                                         \
    std::memcpy(&m, mu + k, sizeof m);                                                                           \
    const VL clipped = sk == vmin;                                                                               \
    VD ik, cs;                                                                                                   \
    if (MOVMSK(clipped) == kFull) {                                                                              \
      ik = vinv;                                                                                                 \
      cs = vcst;                                                                                                 \
    } else {                                                                                                     \
      ik = 1.0 / sk;                                                                                             \
      ik = clipped ? vinv : ik;                                                                                  \
      for (int l = 0; l < KW; ++l) cs[l] = clipped[l] ? a.cst_min : -std::log(sk[l]) - kLogSqrt2Pi;             \
    }                                                                                                            \
    const VD za = (vlo - m) * ik, zb = (vhi - m) * ik;                                                           \
    const VL inner = (za < lim_lo) & (zb > lim_hi);                                                              \
    const VD u = inner ? VD{} : vub;                                                                             \
    std::memcpy(inv + k, &ik, sizeof ik);                                                                        \
    std::memcpy(cst + k, &cs, sizeof cs);                                                                        \
    std::memcpy(ubp + k, &u, sizeof u);                                                                          \
    const int mi = MOVMSK(inner);                                                                                \
    unknown |= mi ^ kFull;                                                                                       \
    if constexpr (std::endian::native == std::endian::little) {                                                  \
      const KBYTES bytes = static_cast<KBYTES>(kInnerBytes.v[mi]);                                               \
      std::memcpy(kn + k, &bytes, sizeof bytes);                                                                 \
      KBYTES kb;                                                                                                 \
      std::memcpy(&kb, kk + k, sizeof kb);                                                                       \
      kb &= bytes;                                                                                               \
      std::memcpy(kk + k, &kb, sizeof kb);                                                                       \
    } else {                                                                                                     \
      for (int l = 0; l < KW; ++l) {                                                                             \
        kn[k + l] = static_cast<char>((mi >> l) & 1);                                                            \
        kk[k + l] &= kn[k + l];                                                                                  \
      }                                                                                                          \
    }                                                                                                            \
    if (wb) {                                                                                                    \
      VD t;                                                                                                      \
      std::memcpy(&t, wb + k, sizeof t);                                                                         \
      t += cs + u;                                                                                               \
      std::memcpy(wb + k, &t, sizeof t);                                                                         \
    }                                                                                                            \
  }                                                                                                              \
  for (; k < n; ++k) {                                                                                           \
    const double sk = sg[k];                                                                                     \
    const bool clipped = sk == a.minsig;                                                                         \
    const double ik = clipped ? a.inv_min : 1.0 / sk;                                                           \
    inv[k] = ik;                                                                                                 \
    cst[k] = clipped ? a.cst_min : -std::log(sk) - kLogSqrt2Pi;                                                  \
    const double za = (a.lo_e - mu[k]) * ik, zb = (a.hi_e - mu[k]) * ik;                                         \
    const bool inner = za < -8.5 && zb > 8.5;                                                                    \
    ubp[k] = inner ? 0.0 : a.ub_obs;                                                                             \
    kn[k] = static_cast<char>(inner);                                                                            \
    kk[k] &= kn[k];                                                                                              \
    if (wb) wb[k] += cst[k] + ubp[k];                                                                            \
    unknown |= !inner;                                                                                           \
  }                                                                                                              \
  return unknown != 0;

// Lane mask (bit l = lane l set) -> one 0/1 byte per lane, for the known flags.
struct InnerBytes {
  std::uint32_t v[16];
  constexpr InnerBytes() : v() {
    for (int m = 0; m < 16; ++m) {
      std::uint32_t b = 0;
      for (int l = 0; l < 4; ++l)
        if (m & (1 << l)) b |= std::uint32_t{1} << (8 * l);  // little-endian: byte l = lane l
      v[m] = b;
    }
  }
};
constexpr InnerBytes kInnerBytes;

// log_pdf_window's pre-filter: indices lo + j of the window kernels whose bound wb - sum over up to three
// dimensions of z^2 / 2 is >= keep, ascending. (A bound with a nat of margin: its rounding does not matter.)
struct PrefilterArgs {
  const double* wb;
  const double* mu[3];
  const double* inv[3];
  double x[3];
  int nd;
  std::size_t w, lo;
  double keep;
  std::size_t* idx;
};
#define KT_PREF_BODY                                                                                             \
  std::size_t ms = 0, j = 0;                                                                                     \
  const VD vkeep = VD{} + a.keep;                                                                                \
  for (; j + KW <= a.w; j += KW) {                                                                               \
    VD b;                                                                                                        \
    std::memcpy(&b, a.wb + j, sizeof b);                                                                         \
    for (int q = 0; q < a.nd; ++q) {                                                                             \
      VD m, iv;                                                                                                  \
      std::memcpy(&m, a.mu[q] + j, sizeof m);                                                                    \
      std::memcpy(&iv, a.inv[q] + j, sizeof iv);                                                                 \
      const VD z = (a.x[q] - m) * iv;                                                                            \
      b -= 0.5 * z * z;                                                                                          \
    }                                                                                                            \
    unsigned mk = static_cast<unsigned>(MOVMSK(b >= vkeep));                                                     \
    while (mk) {                                                                                                 \
      a.idx[ms++] = a.lo + j + static_cast<std::size_t>(__builtin_ctz(mk));                                      \
      mk &= mk - 1;                                                                                              \
    }                                                                                                            \
  }                                                                                                              \
  for (; j < a.w; ++j) {                                                                                         \
    double b = a.wb[j];                                                                                          \
    for (int q = 0; q < a.nd; ++q) {                                                                             \
      const double z = (a.x[q] - a.mu[q][j]) * a.inv[q][j];                                                      \
      b -= 0.5 * z * z;                                                                                          \
    }                                                                                                            \
    if (b >= a.keep) a.idx[ms++] = a.lo + j;                                                                     \
  }                                                                                                              \
  return ms;

// Largest of n indices, for fit()'s range check of a caller's argsort (lanes compare as signed: an index with
// the top bit set, seen through the lanes' OR, gives SIZE_MAX).
#define KT_MAXIDX_BODY                                                                                           \
  VL mx = VL{}, any = VL{};                                                                                      \
  std::size_t j = 0;                                                                                             \
  for (; j + KW <= n; j += KW) {                                                                                 \
    VL o;                                                                                                        \
    std::memcpy(&o, v + j, sizeof o);                                                                            \
    mx = o > mx ? o : mx;                                                                                        \
    any |= o;                                                                                                    \
  }                                                                                                              \
  long long top = 0, bits = 0;                                                                                   \
  for (int l = 0; l < KW; ++l) {                                                                                 \
    top = std::max(top, static_cast<long long>(mx[l]));                                                          \
    bits |= any[l];                                                                                              \
  }                                                                                                              \
  if (bits < 0) return static_cast<std::size_t>(-1);                                                             \
  std::size_t r = static_cast<std::size_t>(top);                                                                 \
  for (; j < n; ++j) r = std::max(r, v[j]);                                                                      \
  return r;

#define KT_ACC_ARGS                                                                                              \
  double v, const double *mu, const double *inv, const double *cst, const double *ub, double *acc, double *shi, \
      std::size_t K

#if defined(__x86_64__) || defined(__i386__)
#define KT_HAVE_AVX2_VARIANT 1
#define VD V4d
#define VL V4l
#define KW 4
#define KBYTES std::uint32_t
#define MOVMSK(v) __builtin_ia32_movmskpd256((V4d)(v))
__attribute__((target("avx2,fma"))) double window_terms_avx2(const WindowArgs& a) { KT_WINDOW_BODY }
__attribute__((target("avx2,fma"))) double window_expsum_avx2(double* t, std::size_t w, double M) {
  KT_EXPSUM_BODY
}
__attribute__((target("avx2,fma"))) void acc_cont_avx2(KT_ACC_ARGS) { KT_ACC_BODY }
__attribute__((target("avx2,fma"))) bool kernel_pass_avx2(const KernelPassArgs& a) { KT_KPASS_BODY }
__attribute__((target("avx2,fma"))) std::size_t prefilter_avx2(const PrefilterArgs& a) { KT_PREF_BODY }
__attribute__((target("avx2,fma"))) std::size_t max_index_avx2(const std::size_t* v, std::size_t n) {
  KT_MAXIDX_BODY
}
#undef VD
#undef VL
#undef KW
#undef KBYTES
#undef MOVMSK
#endif
#define VD V2d
#define VL V2l
#define KW 2
#define KBYTES std::uint16_t
#define MOVMSK(v) (((v)[0] != 0 ? 1 : 0) | ((v)[1] != 0 ? 2 : 0))
double window_terms_base(const WindowArgs& a) { KT_WINDOW_BODY }
double window_expsum_base(double* t, std::size_t w, double M) { KT_EXPSUM_BODY }
void acc_cont_base(KT_ACC_ARGS) { KT_ACC_BODY }
bool kernel_pass_base(const KernelPassArgs& a) { KT_KPASS_BODY }
std::size_t prefilter_base(const PrefilterArgs& a) { KT_PREF_BODY }
std::size_t max_index_base(const std::size_t* v, std::size_t n) { KT_MAXIDX_BODY }
#undef VD
#undef VL
#undef KW
#undef KBYTES
#undef MOVMSK
#undef KT_WINDOW_BODY
#undef KT_EXPSUM_BODY
#undef KT_ACC_BODY
#undef KT_KPASS_BODY
#undef KT_PREF_BODY
#undef KT_MAXIDX_BODY

struct WindowKernels {
  void (*acc_cont)(KT_ACC_ARGS);
  double (*terms)(const WindowArgs&);
  double (*expsum)(double*, std::size_t, double);
  bool (*kernel_pass)(const KernelPassArgs&);
  std::size_t (*prefilter)(const PrefilterArgs&);
  std::size_t (*max_index)(const std::size_t*, std::size_t);
  WindowKernels() {
    max_index = max_index_base;
    kernel_pass = kernel_pass_base;
    prefilter = prefilter_base;
    terms = window_terms_base;
    expsum = window_expsum_base;
    acc_cont = acc_cont_base;
#ifdef KT_HAVE_AVX2_VARIANT
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      terms = window_terms_avx2;
      expsum = window_expsum_avx2;
      acc_cont = acc_cont_avx2;
      kernel_pass = kernel_pass_avx2;
      prefilter = prefilter_avx2;
      max_index = max_index_avx2;
    }
#endif
  }
};
#undef KT_ACC_ARGS
const WindowKernels& window_kernels() {
  static const WindowKernels k;
  return k;
}

// Whether all of v[0..n) are finite: x * 0 is 0 for finite x and NaN for +-inf / NaN, so one NaN-propagating
// sum (element-wise in lanes) decides.
bool all_finite(const double* v, std::size_t n) noexcept {
  V2d z0 = V2d{}, z1 = V2d{};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    V2d a, b;
    std::memcpy(&a, v + i, sizeof a);
    std::memcpy(&b, v + i + 2, sizeof b);
    z0 += a * 0.0;
    z1 += b * 0.0;
  }
  double zs = z0[0] + z0[1] + z1[0] + z1[1];
  for (; i < n; ++i) zs += v[i] * 0.0;
  return zs == 0.0;
}

// Order-preserving unsigned key of a double (-0 == +0; no NaN here).
inline std::uint64_t sort_key(double v) noexcept {
  if (v == 0.0) v = 0.0;
  std::uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return (u >> 63) ? ~u : (u | 0x8000000000000000ULL);
}
}  // namespace

// Stable argsort of n doubles (ties keep index order): LSD radix sort on 8-bit digits, skipping digits that
// all keys share; std::sort for short inputs. O(n) per pass, no allocation once the buffers have grown.
void ParzenEstimator::argsort(const double* v, std::size_t n) {
  order_.resize(n);
  if (n < 64) {
    pairs_.resize(n);
    for (std::size_t i = 0; i < n; ++i) pairs_[i] = {v[i] == 0.0 ? 0.0 : v[i], i};
    std::sort(pairs_.begin(), pairs_.end());
    for (std::size_t i = 0; i < n; ++i) order_[i] = pairs_[i].second;
    return;
  }
  keys_.resize(2 * n);
  idx_.resize(2 * n);
  std::uint64_t* ka = keys_.data();
  std::uint64_t* kb = keys_.data() + n;
  std::size_t* ia = idx_.data();
  std::size_t* ib = idx_.data() + n;
  std::uint64_t all_and = ~0ULL, all_or = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ka[i] = sort_key(v[i]);
    ia[i] = i;
    all_and &= ka[i];
    all_or |= ka[i];
  }
  const std::uint64_t varying = all_and ^ all_or;  // bits that differ between some keys
  // All eight digit histograms in one pass (the digit counts do not depend on the order).
  std::size_t hist[8][256] = {};
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t key = ka[i];
    for (int b = 0; b < 8; ++b) ++hist[b][(key >> (8 * b)) & 0xFF];
  }
  for (int pass = 0; pass < 8; ++pass) {
    const int shift = 8 * pass;
    if (((varying >> shift) & 0xFF) == 0) continue;
    std::size_t* count = hist[pass];
    std::size_t sum = 0;
    for (std::size_t b = 0; b < 256; ++b) {
      std::size_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t dst = count[(ka[i] >> shift) & 0xFF]++;
      kb[dst] = ka[i];
      ib[dst] = ia[i];
    }
    std::swap(ka, kb);
    std::swap(ia, ib);
  }
  std::copy(ia, ia + n, order_.begin());
}

namespace {
/// The prior kernel k (its centre may lie outside the support) is exact at fit time: inverse width, discrete
/// half-bin, log-density constant and truncation mass (none beyond 8.5 sigma on both sides), log Z stored.
void fit_prior_kernel(std::size_t k, const double* mu, const double* sg, bool disc, double s, double minsig,
                      double log_minsig, double log_s, double lo_e, double hi_e, double* inv, double* half,
                      double* cst, double* lzs, double* ub, char* kn) {
  inv[k] = 1.0 / sg[k];
  half[k] = disc ? 0.5 * s / sg[k] : 0.0;
  cst[k] = (sg[k] == minsig ? -log_minsig : -std::log(sg[k])) - kLogSqrt2Pi + log_s;
  const double za = (lo_e - mu[k]) * inv[k], zb = (hi_e - mu[k]) * inv[k];
  if (za < -8.5 && zb > 8.5) {
    lzs[k] = 0.0;
    ub[k] = 0.0;
  } else {
    lzs[k] = log_normal_cdf_diff(za, zb);
    ub[k] = -lzs[k];
  }
  kn[k] = 2;  // log Z stored
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

// ------------------------------------------------------------------------------------------ normal maths
double normal_cdf(double x) noexcept { return 0.5 * std::erfc(-x * kSqrt1_2); }

double log_normal_cdf(double x) noexcept {
  if (x > 0.0) return std::log1p(-0.5 * std::erfc(x * kSqrt1_2));
  if (x > -30.0) return std::log(0.5 * std::erfc(-x * kSqrt1_2));
  if (x == -kInf) return -kInf;
  // Asymptotic (Mills ratio) series: Phi(x) ~ phi(x)/(-x) * (1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8).
  double r = 1.0 / (x * x);
  double s = 1.0 - r * (1.0 - r * (3.0 - r * (15.0 - r * 105.0)));
  return -0.5 * x * x - std::log(-x) - kLogSqrt2Pi + std::log(s);
}

double log_normal_cdf_diff(double a, double b) noexcept {
  if (!(a < b)) return -kInf;
  if (a >= 0.0) return log_normal_cdf_diff(-b, -a);  // Phi(b) - Phi(a) = Phi(-a) - Phi(-b)
  if (b <= 0.0) {
    double lb = log_normal_cdf(b), la = log_normal_cdf(a);
    if (lb == -kInf) return -kInf;
    return lb + std::log1p(-std::exp(la - lb));
  }
  return std::log1p(-(normal_cdf(a) + normal_cdf(-b)));
}

double normal_quantile(double p) noexcept {
  if (!(p > 0.0)) return -kInf;
  if (!(p < 1.0)) return kInf;
  // P. J. Acklam's rational approximation (relative error 1.15e-9), then one Halley step.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  constexpr double plow = 0.02425;
  double x;
  if (p < plow) {
    double q = std::sqrt(-2.0 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  } else if (p <= 1.0 - plow) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
  } else {
    double q = std::sqrt(-2.0 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  // Halley refinement; in the upper half use the complementary form so precision is kept.
  double e = x <= 0.0 ? normal_cdf(x) - p : (1.0 - p) - normal_cdf(-x);
  double u = e * kSqrt2Pi * std::exp(0.5 * x * x);
  return x - u / (1.0 + 0.5 * x * u);
}

double sample_truncated_normal(Rng& rng, double mu, double sigma, double low, double high) noexcept {
  double a = (low - mu) / sigma, b = (high - mu) / sigma;
  if (a < -8.5 && b > 8.5) {
    // Both bounds beyond 8.5 sigma (the truncation removes < 2e-17 of the mass): the exact truncated normal by
    // rejection -- a standard normal by inversion, redrawn when outside [a, b] (probability < 2e-17) -- which
    // saves the two bound CDFs. (Inversion below draws from the same distribution; the values agree with it
    // except when u is within ~1e-16 relative of the excluded tail mass.)
    for (;;) {
      const double z = normal_quantile(rng.uniform());
      if (z >= a && z <= b) return std::clamp(mu + sigma * z, low, high);
    }
  }
  bool flip = a > 0.0;  // both bounds in the upper tail: mirror so the CDF values stay accurate
  if (flip) {
    double t = a;
    a = -b;
    b = -t;
  }
  double pa = normal_cdf(a), pb = normal_cdf(b);
  double u = rng.uniform();
  double z;
  if (pb > pa) {
    z = normal_quantile(pa + (pb - pa) * u);
    if (!(z >= a)) z = a;
    if (!(z <= b)) z = b;
  } else {
    z = a + (b - a) * u;  // mass underflows (prior far outside the bounds): uniform on the support
  }
  if (flip) z = -z;
  return std::clamp(mu + sigma * z, low, high);
}

namespace {
// Ziggurat tables (G. Marsaglia & W. W. Tsang, "The Ziggurat Method for Generating Random Variables", J. Stat.
// Softw. 5(8), 2000): 128 layers of area v under f(x) = exp(-x^2 / 2); x[0] = v / f(r) is the base layer's
// width (rectangle plus tail), x[1] = r, x[128] = 0.
struct Ziggurat {
  static constexpr int kN = 128;
  static constexpr double kR = 3.442619855899, kV = 9.91256303526217e-3;
  double x[kN + 1], f[kN + 1];
  Ziggurat() {
    x[0] = kV / std::exp(-0.5 * kR * kR);
    x[1] = kR;
    for (int i = 2; i < kN; ++i)
      x[i] = std::sqrt(-2.0 * std::log(kV / x[i - 1] + std::exp(-0.5 * x[i - 1] * x[i - 1])));
    x[kN] = 0.0;
    for (int i = 0; i <= kN; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
};
const Ziggurat kZig;
}  // namespace

double standard_normal(Rng& rng) noexcept {
  for (;;) {
    const std::uint64_t u = rng.next_u64();
    const int i = static_cast<int>(u & 127u);                        // layer
    const bool neg = (u >> 7) & 1u;                                  // sign
    const double z = static_cast<double>(u >> 11) * 0x1.0p-53 * kZig.x[i];  // bits 11..63: position
    if (z < kZig.x[i + 1]) return neg ? -z : z;  // inside the rectangle under the curve (~99 % of draws)
    if (i == 0) {                                // the tail beyond r (Marsaglia 1964)
      double a, b;
      do {
        a = -std::log1p(-rng.uniform()) / Ziggurat::kR;
        b = -std::log1p(-rng.uniform());
      } while (b + b < a * a);
      return neg ? -(Ziggurat::kR + a) : Ziggurat::kR + a;
    }
    if (kZig.f[i] + rng.uniform() * (kZig.f[i + 1] - kZig.f[i]) < std::exp(-0.5 * z * z)) return neg ? -z : z;
  }
}

double sample_truncated_normal_near(Rng& rng, double mu, double sigma, double low, double high) noexcept {
  if (mu >= low && mu <= high) {
    // Redraw a normal until it falls inside: with the centre in [low, high] at least about half the draws
    // are accepted (a ziggurat normal each; no bound CDFs or quantile).
    for (int t = 0; t < 32; ++t) {
      const double z = mu + sigma * standard_normal(rng);
      if (z >= low && z <= high) return z;
    }
  }
  return sample_truncated_normal(rng, mu, sigma, low, high);
}

// ------------------------------------------------------------------------------------------ fit
void ParzenEstimator::fit_presorted(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n,
                                    const double* weights, const ParzenOptions& opt, const std::size_t* order,
                                    const std::size_t* perm) {
  const std::size_t D = dims.size();
  // perm must be a permutation (checked: the fallback scatters through it).
  seen_.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    KT_CHECK(perm[j] < n && !seen_[perm[j]], InvalidArgument, "parzen: fit_presorted: perm[", j, "] = ", perm[j],
             " is out of range or repeated (n = ", n, ")");
    seen_[perm[j]] = 1;
  }
  bool ok = !window_input_ && D > 1 && n >= kWindowMin && dims[0].kind != ParzenDim::Kind::Categorical &&
            all_finite(obs, n * D);
  if (ok) {
    // Dimension 0 ascending after the clamp fit() applies, ties in input-row order.
    const ParzenDim& p0 = dims[0];
    const double s0 = p0.kind == ParzenDim::Kind::Discrete ? p0.step : 0.0;
    const double lo0 = p0.low - 0.5 * s0, hi0 = p0.high + 0.5 * s0;
    double prev = std::clamp(obs[0], lo0, hi0);
    for (std::size_t j = 1; ok && j < n; ++j) {
      const double c = std::clamp(obs[j], lo0, hi0);  // column-major: dimension 0 comes first
      ok = prev < c || (prev == c && perm[j - 1] < perm[j]);
      prev = c;
    }
  }
  if (!ok) {  // back to input order; the caller's argsorts do not apply there
    std::vector<double> in(n * D), win(weights ? n : 0);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t d = 0; d < D; ++d) in[perm[j] * D + d] = obs[d * n + j];
      if (weights) win[perm[j]] = weights[j];
    }
    fit(dims, in.data(), n, weights ? win.data() : nullptr, opt, nullptr);
    return;
  }
  win_perm_.assign(perm, perm + n);
  sample_pos_.resize(n);
  for (std::size_t j = 0; j < n; ++j) sample_pos_[perm[j]] = j;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{window_input_}, reset_cm{colmajor_input_};
  window_input_ = true;
  colmajor_input_ = true;
  fit(dims, obs, n, weights, opt, order);
}

void ParzenEstimator::fit(const std::vector<ParzenDim>& dims, const double* obs, std::size_t n,
                          const double* weights, const ParzenOptions& opt, const std::size_t* order) {
  KT_CHECK(std::isfinite(opt.prior_weight) && opt.prior_weight > 0.0, InvalidArgument,
           "parzen: prior_weight = ", opt.prior_weight, " must be > 0");
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
  if (!window_input_ && dims.size() > 1 && n >= kWindowMin && dims[0].kind != ParzenDim::Kind::Categorical) {
    // Windowed joint estimator: fit on the rows reordered by their dimension-0 value (stable, ties by row), so
    // the kernels come out sorted; win_perm_ keeps each kernel's input row, sample_pos_ the inverse.
    const std::size_t D = dims.size();
    {
      bool finite = all_finite(obs, n * D);
      for (std::size_t i = 0; !finite && i < n; ++i)
        for (std::size_t d = 0; d < D; ++d)
          KT_CHECK(std::isfinite(obs[i * D + d]), InvalidArgument, "parzen: observation ", i, " of dimension ", d,
                   " = ", obs[i * D + d], " is not finite");
    }
    for (std::size_t i = 0; weights && i < n; ++i)
      KT_CHECK(std::isfinite(weights[i]) && weights[i] >= 0.0, InvalidArgument, "parzen: weight ", i, " = ",
               weights[i], " must be finite and >= 0");
    const ParzenDim& p0 = dims[0];
    const double s0 = p0.kind == ParzenDim::Kind::Discrete ? p0.step : 0.0;
    const double lo0 = p0.low - 0.5 * s0, hi0 = p0.high + 0.5 * s0;
    std::vector<double>& col = win_col_;  // scratch: clamped values of one dimension (as fit's centres)
    col.resize(n);
    for (std::size_t i = 0; i < n; ++i) col[i] = std::clamp(obs[i * D], lo0, hi0);
    const std::size_t* src = order;
    if (src) {  // caller's argsort of dimension 0: use it if it is the stable one
      seen_.assign(n, 0);
      double prev = -kInf;
      std::size_t prev_o = 0;
      for (std::size_t j = 0; j < n && src; ++j) {
        const std::size_t o = src[j];
        if (!(o < n && !seen_[o]) || !(prev < col[o] || (prev == col[o] && o > prev_o))) {
          src = nullptr;
          break;
        }
        seen_[o] = 1;
        prev = col[o];
        prev_o = o;
      }
    }
    if (!src) {
      argsort(col.data(), n);
      src = order_.data();
    }
    win_perm_.assign(src, src + n);
    sample_pos_.resize(n);
    for (std::size_t j = 0; j < n; ++j) sample_pos_[win_perm_[j]] = j;
    win_obs_.resize(n * D);
    for (std::size_t j = 0; j < n; ++j)
      std::copy(obs + win_perm_[j] * D, obs + (win_perm_[j] + 1) * D, win_obs_.data() + j * D);
    if (weights) {
      win_w_.resize(n);
      for (std::size_t j = 0; j < n; ++j) win_w_[j] = weights[win_perm_[j]];
    }
    // Every dimension's argsort in the new rows, ties in input-row order (the caller's, or sorted here on the
    // input rows; a stable sort of the new rows would break ties by dimension 0 instead).
    win_order_.resize(D * n);
    for (std::size_t j = 0; j < n; ++j) win_order_[j] = j;
    for (std::size_t d = 1; d < D; ++d) {
      std::size_t* wo = win_order_.data() + d * n;
      if (dims[d].kind == ParzenDim::Kind::Categorical) {
        for (std::size_t j = 0; j < n; ++j) wo[j] = j;  // unused
        continue;
      }
      const std::size_t* od = order ? order + d * n : nullptr;
      if (!od) {
        const ParzenDim& pd = dims[d];
        const double sd = pd.kind == ParzenDim::Kind::Discrete ? pd.step : 0.0;
        for (std::size_t i = 0; i < n; ++i) col[i] = std::clamp(obs[i * D + d], pd.low - 0.5 * sd, pd.high + 0.5 * sd);
        argsort(col.data(), n);
        od = order_.data();
      }
      for (std::size_t j = 0; j < n; ++j) wo[j] = od[j] < n ? sample_pos_[od[j]] : n;  // invalid stays invalid
    }
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{window_input_};
    window_input_ = true;
    fit(dims, win_obs_.data(), n, weights ? win_w_.data() : nullptr, opt, win_order_.data());
    return;
  }
  dims_ = dims;
  prior_weight_ = opt.prior_weight;
  const std::size_t D = dims.size();
  k_ = n + 1;
  // Mixture weights in input order: observations' (default 1) then the prior's, normalised. Their logs
  // are memoised per thread: TPE fits every parameter of an ask with the same weights.
  w_.resize(k_);
  lw_.resize(k_);
  cum_w_.resize(k_);
  {
    // Two slots: TPE alternates between the "below" and "above" weights of each parameter.
    struct Memo {
      std::vector<double> in, w, lw;
    };
    thread_local Memo memo[2];
    thread_local int memo_next = 0;
    double total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      double wi = weights ? weights[i] : 1.0;
      KT_CHECK(std::isfinite(wi) && wi >= 0.0, InvalidArgument, "parzen: weight ", i, " = ", wi,
               " must be finite and >= 0");
      w_[i] = wi;
      total += wi;
    }
    w_[n] = n == 0 ? 1.0 : opt.prior_weight;
    total += w_[n];
    Memo* hit = nullptr;
    for (Memo& mm : memo)
      if (mm.in.size() == k_ && std::equal(w_.begin(), w_.end(), mm.in.begin())) hit = &mm;
    if (hit) {
      std::copy(hit->w.begin(), hit->w.end(), w_.begin());
      std::copy(hit->lw.begin(), hit->lw.end(), lw_.begin());
    } else {
      Memo& mm = memo[memo_next];
      memo_next ^= 1;
      mm.in.assign(w_.begin(), w_.end());
      for (std::size_t k = 0; k < k_; ++k) {
        w_[k] /= total;
        lw_[k] = std::log(w_[k]);
      }
      mm.w.assign(w_.begin(), w_.end());
      mm.lw.assign(lw_.begin(), lw_.end());
    }
  }
  // One-dimensional neighbour-bandwidth estimators keep their kernels sorted by centre, which makes the
  // bandwidths a linear scan and lets log_pdf visit only the kernels near each point.
  sorted1d_ = D == 1 && opt.bandwidth == ParzenOptions::Bandwidth::Neighbour &&
              dims[0].kind != ParzenDim::Kind::Categorical;
  if (sorted1d_ && n > 1) {
    fit_sorted1d(obs, n, opt, order);
    return;
  }
  prev1d_ok_ = false;
  win_ = window_input_;
  build_cum_weights();

  mu_.resize(D * k_);
  sigma_.resize(D * k_);
  inv_sigma_.resize(D * k_);
  cst_.resize(D * k_);
  half_.resize(D * k_);
  lz_.resize(D * k_);
  ub_.resize(D * k_);
  known_.resize(D * k_);
  any_unknown_ = false;
  cat_hit_.assign(D, 0.0);
  cat_miss_.assign(D, 0.0);
  cat_prior_.assign(D, 0.0);
  has_discrete_ = false;
  // Per kernel: all truncation masses known (AND over dimensions) and, for windowed estimators, the bound of
  // its log term with every distance dropped (wb_: lw + sum of cst + ub, + the categorical bound at the end);
  // both accumulated by the per-kernel passes below. Masses computed outright (exact_now) redo the flags and
  // sums in one pass at the end.
  kernel_known_.assign(k_, 1);
  lzsum_.assign(k_, 0.0);
  if (win_) wb_.assign(lw_.begin(), lw_.begin() + static_cast<std::ptrdiff_t>(n));
  bool recount = false;
  const double n_obs = static_cast<double>(std::max<std::size_t>(n, 1));
  for (std::size_t d = 0; d < D; ++d) {
    const ParzenDim& pd = dims[d];
    double* mu = mu_.data() + d * k_;
    double* sg = sigma_.data() + d * k_;
    double* inv = inv_sigma_.data() + d * k_;
    double* cst = cst_.data() + d * k_;
    double* half = half_.data() + d * k_;
    double* lzs = lz_.data() + d * k_;
    double* ub = ub_.data() + d * k_;
    char* kn = known_.data() + d * k_;
    if (pd.kind == ParzenDim::Kind::Categorical) {
      const double C = static_cast<double>(pd.n_choices);
      for (std::size_t i = 0; i < n; ++i) {
        double c = colmajor_input_ ? obs[d * n + i] : obs[i * D + d];
        KT_CHECK(c >= 0.0 && c < C && c == std::floor(c), InvalidArgument, "parzen: observation ", i,
                 " of categorical dimension ", d, " = ", c, " is not an index below ", pd.n_choices);
        mu[i] = c;
      }
      mu[n] = -1.0;
      std::fill(sg, sg + k_, 0.0);
      std::fill(inv, inv + k_, 0.0);
      std::fill(cst, cst + k_, 0.0);
      std::fill(half, half + k_, 0.0);
      std::fill(lzs, lzs + k_, 0.0);
      std::fill(ub, ub + k_, 0.0);
      std::fill(kn, kn + k_, char{1});
      // Smoothing as Optuna 4.x: prior_weight / n_kernels on every choice, +1 on the observed one.
      double a = opt.prior_weight / static_cast<double>(k_);
      double norm = a * C + 1.0;
      cat_hit_[d] = std::log((a + 1.0) / norm);
      cat_miss_[d] = std::log(a / norm);
      cat_prior_[d] = -std::log(C);
      continue;
    }
    const bool disc = pd.kind == ParzenDim::Kind::Discrete;
    has_discrete_ = has_discrete_ || disc;
    const double s = disc ? pd.step : 0.0;
    const double width = pd.high - pd.low + s;
    const double lo_e = pd.low - 0.5 * s, hi_e = pd.high + 0.5 * s;
    const double pmu = std::isnan(pd.prior_mu) ? 0.5 * (pd.low + pd.high) : pd.prior_mu;
    const double psig = pd.prior_sigma > 0.0 ? pd.prior_sigma : width;
    if (window_input_) {  // rows checked by the windowed pre-pass
      if (colmajor_input_) {
        const double* oc = obs + d * n;
        std::size_t i = 0;
        const V2d vlo = V2d{} + lo_e, vhi = V2d{} + hi_e;
        for (; i + 2 <= n; i += 2) {  // = std::clamp lane by lane
          V2d v;
          std::memcpy(&v, oc + i, sizeof v);
          v = v < vlo ? vlo : v;
          v = vhi < v ? vhi : v;
          std::memcpy(mu + i, &v, sizeof v);
        }
        for (; i < n; ++i) mu[i] = std::clamp(oc[i], lo_e, hi_e);
      } else {
        for (std::size_t i = 0; i < n; ++i) mu[i] = std::clamp(obs[i * D + d], lo_e, hi_e);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        double v = obs[i * D + d];
        KT_CHECK(std::isfinite(v), InvalidArgument, "parzen: observation ", i, " of dimension ", d, " = ", v,
                 " is not finite");
        mu[i] = std::clamp(v, lo_e, hi_e);
      }
    }
    const double maxsig = width;
    const double minsig =
        opt.magic_clip ? width / std::min(100.0, 1.0 + static_cast<double>(k_)) : kMinSigma;
    double sig_max = 0.0;
    if (opt.bandwidth == ParzenOptions::Bandwidth::Scott) {
      // Scott-type rule of Optuna 4.x's multivariate TPE: 0.2 * n^(-1/(d+4)) * range.
      double sig = 0.2 * std::pow(n_obs, -1.0 / (static_cast<double>(D) + 4.0)) * width;
      sig = std::min(std::max(sig, minsig), maxsig);  // = std::clamp
      std::fill(sg, sg + n, sig);
      sig_max = n > 0 ? sig : 0.0;
    } else if (n > 0) {
      // Distances to the neighbouring centres in sorted order, the bounds acting as outer neighbours
      // (Bergstra et al. 2011; hyperopt's adaptive_parzen_normal; Optuna 5.x, which no longer counts the
      // prior's centre as a neighbour). Ties keep input order.
      // Widths: one pass over the sorted centres, the bounds at both ends (outermost kernels: their inner gap
      // unless consider_endpoints, once there are two or more). With the caller's argsort, the same pass
      // checks it is the stable sorted permutation (ties in input-row order; win_perm_ maps a windowed
      // estimator's rows back to the caller's); anything else (e.g. out-of-range values tied by the clamp)
      // falls back to sorting here and a second pass. A windowed estimator's dimension 0 is already sorted.
      const bool inner_only = !opt.consider_endpoints && n >= 2;
      // (n indices < n, strictly increasing in (value, input row) -- the row map is injective -- contain no
      // repeat, so they are a permutation: no separate check needed.)
      // Three branch-light passes: gather the centres in sorted order (after a bounds check of the indices),
      // verify the order (only equal neighbours need the row test), widths from the contiguous sorted values
      // written back through the order. Same arithmetic as one kernel at a time.
      auto widths = [&](const std::size_t* ord, bool verify) -> bool {
        const double* sv = mu;
        if (ord) {
          sorted_w_.resize(n);
          double* g = sorted_w_.data();
          // Every index in range before the gather.
          if (verify && window_kernels().max_index(ord, n) >= n) return false;
          for (std::size_t j = 0; j < n; ++j) g[j] = mu[ord[j]];
          if (verify) {
            std::size_t nonincr = 0;
            std::size_t j = 0;
            V2l cnt = V2l{};
            for (; j + 3 <= n; j += 2) {  // lanes j, j + 1 against j + 1, j + 2
              V2d a, b;
              std::memcpy(&a, g + j, sizeof a);
              std::memcpy(&b, g + j + 1, sizeof b);
              cnt += (a < b) + 1;  // comparison lanes are -1 (true) or 0: +1 counts the false ones
            }
            nonincr = static_cast<std::size_t>(cnt[0] + cnt[1]);
            for (; j + 1 < n; ++j) nonincr += static_cast<std::size_t>(!(g[j] < g[j + 1]));
            for (std::size_t j = 0; nonincr && j + 1 < n; ++j) {
              if (g[j] < g[j + 1]) continue;
              const std::size_t oc = ord[j], on = ord[j + 1];
              if (!(g[j] == g[j + 1] && (win_ ? win_perm_[on] > win_perm_[oc] : on > oc))) return false;
              --nonincr;
            }
          }
          sv = g;
        }
        double smax = 0.0;
        auto put = [&](std::size_t j, double sig) {
          sig = std::min(std::max(sig, minsig), maxsig);  // = std::clamp
          sg[ord ? ord[j] : j] = sig;
          smax = std::max(smax, sig);
        };
        if (n == 1) {
          put(0, std::max(sv[0] - lo_e, hi_e - sv[0]));
        } else {
          put(0, inner_only ? sv[1] - sv[0] : std::max(sv[0] - lo_e, sv[1] - sv[0]));
          // Interior kernels: widths in lanes (same operations as std::max / std::clamp), then written back.
          sig_tmp_.resize(n);
          double* st = sig_tmp_.data();
          const V2d vmin = V2d{} + minsig, vmaxs = V2d{} + maxsig;
          V2d vsm = V2d{};
          std::size_t j = 1;
          for (; j + 2 < n; j += 2) {
            V2d c, l, r;
            std::memcpy(&c, sv + j, sizeof c);
            std::memcpy(&l, sv + j - 1, sizeof l);
            std::memcpy(&r, sv + j + 1, sizeof r);
            const V2d left = c - l, right = r - c;
            V2d sig = left < right ? right : left;  // = std::max(left, right)
            sig = sig < vmin ? vmin : sig;          // = std::max(sig, minsig)
            sig = vmaxs < sig ? vmaxs : sig;        // = std::min(sig, maxsig)
            std::memcpy(st + j, &sig, sizeof sig);
            vsm = vsm < sig ? sig : vsm;
          }
          smax = std::max(smax, std::max(vsm[0], vsm[1]));
          for (; j + 1 < n; ++j) {
            const double left = sv[j] - sv[j - 1], right = sv[j + 1] - sv[j];
            double sig = left < right ? right : left;
            sig = std::min(std::max(sig, minsig), maxsig);
            st[j] = sig;
            smax = smax < sig ? sig : smax;
          }
          if (ord) {
            for (std::size_t i = 1; i + 1 < n; ++i) sg[ord[i]] = st[i];
          } else {
            std::copy(st + 1, st + n - 1, sg + 1);
          }
          put(n - 1, inner_only ? sv[n - 1] - sv[n - 2] : std::max(sv[n - 1] - sv[n - 2], hi_e - sv[n - 1]));
        }
        sig_max = smax;
        return true;
      };
      if (sorted1d_ || (win_ && d == 0)) {
        widths(nullptr, false);
      } else if (!(order && widths(order + d * n, true))) {
        if (win_) {  // rows reordered by dimension 0: sort in input-row order so ties keep it, then map back
          win_col_.resize(n);
          for (std::size_t j = 0; j < n; ++j) win_col_[win_perm_[j]] = mu[j];
          argsort(win_col_.data(), n);
          for (std::size_t j = 0; j < n; ++j) order_[j] = sample_pos_[order_[j]];
        } else {
          argsort(mu, n);
        }
        widths(order_.data(), false);
      }
    }
    const double log_minsig = std::log(minsig);  // most widths sit at the clip once n is large
    const double log_s = disc ? std::log(s) : 0.0;
    mu[n] = pmu;
    sg[n] = psig;
    // log Z (truncation mass) is needed only for kernels that matter to some evaluated point, so it is
    // computed lazily in log_pdf(); until then the kernel carries the bound 0 <= -log Z <= ub (mu lies in the
    // padded support and sigma <= sig_max, so Z >= Phi(w / sig_max) - 1/2). Kernels whose bounds are both
    // beyond 8.5 sigma have Z = 1 - O(1e-17), i.e. log Z = 0 in double precision.
    const double w_e = hi_e - lo_e;
    const double ub_obs = n > 0 ? -std::log(normal_cdf(w_e / sig_max) - 0.5) : 0.0;
    // Observation kernels in simple passes (clipped widths, the common case once n is large, reuse one
    // reciprocal and one log); the same values as computing each kernel from scratch.
    const double inv_min = 1.0 / minsig;
    const double cst_min = -log_minsig - kLogSqrt2Pi + log_s;
    const bool exact_now = !(ub_obs < 50.0);
    char unknown = 0;
    if (!disc) {
      unknown = window_kernels().kernel_pass({mu, sg, inv, cst, ub, kn, n, minsig, inv_min, cst_min, lo_e, hi_e,
                                              ub_obs, kernel_known_.data(), win_ ? wb_.data() : nullptr});
      // half (bin half-width / sigma) is read for discrete dimensions only: left as it is here.
    }
    for (std::size_t k = 0; disc && k < n; ++k) {
      const double sk = sg[k];
      const bool clipped = sk == minsig;
      const double ik = clipped ? inv_min : 1.0 / sk;
      inv[k] = ik;
      cst[k] = clipped ? cst_min : -std::log(sk) - kLogSqrt2Pi + log_s;
      half[k] = disc ? 0.5 * s / sk : 0.0;
      const double za = (lo_e - mu[k]) * ik, zb = (hi_e - mu[k]) * ik;
      const char inner = za < -8.5 && zb > 8.5;
      ub[k] = inner ? 0.0 : ub_obs;
      kn[k] = inner;  // 1: log Z = 0 (not stored)
      kernel_known_[k] &= inner;
      if (win_) wb_[k] += cst[k] + ub[k];
      unknown |= static_cast<char>(!inner);
    }
    if (unknown && exact_now) {  // bound useless (extremely narrow kernels): exact masses now
      recount = true;  // (wb_ keeps the larger bound ub_obs: still a bound)
      for (std::size_t k = 0; k < n; ++k) {
        if (kn[k]) continue;
        lzs[k] = log_normal_cdf_diff((lo_e - mu[k]) * inv[k], (hi_e - mu[k]) * inv[k]);
        ub[k] = -lzs[k];
        kn[k] = 2;  // log Z stored
      }
      unknown = 0;
    }
    if (unknown) any_unknown_ = true;
    fit_prior_kernel(n, mu, sg, disc, s, minsig, log_minsig, log_s, lo_e, hi_e, inv, half, cst, lzs, ub, kn);
    if (sorted1d_) {
      // Bounds for the windowed evaluation: largest possible log term (weight, width, truncation) and width.
      tmax_ = -kInf;
      for (std::size_t k = 0; k < n; ++k) tmax_ = std::max(tmax_, lw_[k] + cst[k] + ub[k]);
      sig_max_ = sig_max;
    }
  }
  if (win_) window_bounds();
  // Per kernel: all truncation masses known? Their sum over dimensions (in dimension order, as
  // update_lzsum; only read for known kernels). Observation kernels' masses are 0 unless computed outright,
  // so without that only the prior's sum remains (the flags were ANDed above).
  for (std::size_t d = 0; !recount && d < D; ++d) lzsum_[n] += lz_[d * k_ + n];
  if (recount) {
    kernel_known_.assign(k_, 1);
    lzsum_.assign(k_, 0.0);
  }
  for (std::size_t d = 0; recount && d < D; ++d) {  // flag 1: log Z = 0, not stored
    const char* kn = known_.data() + d * k_;
    const double* lz = lz_.data() + d * k_;
    for (std::size_t k = 0; k < k_; ++k) {
      lzsum_[k] += kn[k] == 1 ? 0.0 : lz[k];
      kernel_known_[k] &= static_cast<char>(kn[k] != 0);
    }
  }
  // One categorical dimension: the mixture's mass of each choice in closed form, summed in linear space
  // (the kernel-by-kernel log-sum-exp gives the same value up to rounding).
  cat1d_ = D == 1 && dims[0].kind == ParzenDim::Kind::Categorical;
  if (cat1d_) {
    const std::size_t C = dims[0].n_choices;
    cat1d_lp_.assign(C, 0.0);  // first: weight of kernels observed at each choice
    for (std::size_t k = 0; k < n; ++k) cat1d_lp_[static_cast<std::size_t>(mu_[k])] += w_[k];
    const double e_hit = std::exp(cat_hit_[0]), e_miss = std::exp(cat_miss_[0]);
    const double prior = w_[n] * std::exp(cat_prior_[0]);
    std::vector<double>& other = sorted_w_;  // scratch: weight of kernels observed elsewhere
    other.assign(C, 0.0);
    for (std::size_t c = 0; c < C; ++c)
      for (std::size_t c2 = 0; c2 < C; ++c2)
        if (c2 != c) other[c] += cat1d_lp_[c2];
    for (std::size_t c = 0; c < C; ++c) cat1d_lp_[c] = std::log(cat1d_lp_[c] * e_hit + other[c] * e_miss + prior);
  }
}

// fit() for one-dimensional neighbour-width estimators with n >= 2 observations: the same values as the
// general path (same formulas, same operation order), in a few fused passes over sorted centres.
void ParzenEstimator::fit_sorted1d(const double* obs, std::size_t n, const ParzenOptions& opt,
                                   const std::size_t* order) {
  const ParzenDim& pd = dims_[0];
  const bool disc = pd.kind == ParzenDim::Kind::Discrete;
  const double s = disc ? pd.step : 0.0;
  const double width = pd.high - pd.low + s;
  const double lo_e = pd.low - 0.5 * s, hi_e = pd.high + 0.5 * s;
  const double pmu = std::isnan(pd.prior_mu) ? 0.5 * (pd.low + pd.high) : pd.prior_mu;
  const double psig = pd.prior_sigma > 0.0 ? pd.prior_sigma : width;
  // Truncation masses are a pure function of (bounds, centre, width): those resolved for the previous
  // one-dimensional fit are reused for identical kernels (TPE refits g(x) on nearly the same history every
  // ask). The window bounds (ub_, tmax_) stay those of an unresolved kernel, so no result depends on it.
  std::size_t prev_n = 0;
  if (prev1d_ok_ && prev1d_lo_ == lo_e && prev1d_hi_ == hi_e) {
    mu_.swap(prev_mu_);
    sigma_.swap(prev_sg_);
    lz_.swap(prev_lz_);
    known_.swap(prev_kn_);
    prev_n = prev1d_n_;
  }
  prev1d_ok_ = false;
  mu_.resize(k_);
  sigma_.resize(k_);
  inv_sigma_.resize(k_);
  cst_.resize(k_);
  half_.resize(k_);
  lz_.resize(k_);
  ub_.resize(k_);
  known_.resize(k_);
  sorted_w_.resize(2 * k_);
  double* mu = mu_.data();
  double* sw = sorted_w_.data();
  double* slw = sorted_w_.data() + k_;
  // Sorted centres (clamped to the padded support), weights and log weights, checking the input.
  if (!order) {
    for (std::size_t i = 0; i < n; ++i)
      KT_CHECK(std::isfinite(obs[i]), InvalidArgument, "parzen: observation ", i, " of dimension 0 = ", obs[i],
               " is not finite");
    argsort(obs, n);
    order = order_.data();
  } else {
    // Caller's argsort (e.g. maintained incrementally by TPE): check it is a sorted permutation.
    seen_.assign(n, 0);
  }
  const bool check = order != order_.data();
  double prev = -kInf;
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t o = order[j];
    if (check) {
      KT_CHECK(o < n && !seen_[o], InvalidArgument, "parzen: order is not a permutation");
      seen_[o] = 1;
    }
    const double v = obs[o];
    if (check) {
      KT_CHECK(std::isfinite(v), InvalidArgument, "parzen: observation ", o, " of dimension 0 = ", v,
               " is not finite");
      KT_CHECK(prev <= v, InvalidArgument, "parzen: order does not sort the observations");
      prev = v;
    }
    mu[j] = std::clamp(v, lo_e, hi_e);
    sw[j] = w_[o];
    slw[j] = lw_[o];
  }
  sw[n] = w_[n];
  slw[n] = lw_[n];
  std::copy(sw, sw + k_, w_.begin());
  std::copy(slw, slw + k_, lw_.begin());
  cum_valid_ = false;  // cumulative weights: built by the first sample() (g(x) models are never sampled)
  any_unknown_ = false;
  cat_hit_.assign(1, 0.0);
  cat_miss_.assign(1, 0.0);
  cat_prior_.assign(1, 0.0);
  has_discrete_ = disc;
  cat1d_ = false;
  win_ = false;

  double* sg = sigma_.data();
  double* inv = inv_sigma_.data();
  double* cst = cst_.data();
  double* half = half_.data();
  double* lzs = lz_.data();
  double* ub = ub_.data();
  char* kn = known_.data();
  const double maxsig = width;
  const double minsig = opt.magic_clip ? width / std::min(100.0, 1.0 + static_cast<double>(k_)) : kMinSigma;
  const double log_minsig = std::log(minsig);
  const double log_s = disc ? std::log(s) : 0.0;
  // Widths: the farther sorted neighbour, the bounds as outer neighbours (outermost kernels: their inner gap
  // unless consider_endpoints), clipped.
  {
    double left = mu[0] - lo_e, right = mu[1] - mu[0];
    sg[0] = std::clamp(opt.consider_endpoints ? std::max(left, right) : right, minsig, maxsig);
    for (std::size_t j = 1; j + 1 < n; ++j)
      sg[j] = std::clamp(std::max(mu[j] - mu[j - 1], mu[j + 1] - mu[j]), minsig, maxsig);
    left = mu[n - 1] - mu[n - 2];
    right = hi_e - mu[n - 1];
    sg[n - 1] = std::clamp(opt.consider_endpoints ? std::max(left, right) : left, minsig, maxsig);
  }
  double sig_max = 0.0;
  {
    double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;  // max is exact: any grouping gives the same value
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      m0 = std::max(m0, sg[i]);
      m1 = std::max(m1, sg[i + 1]);
      m2 = std::max(m2, sg[i + 2]);
      m3 = std::max(m3, sg[i + 3]);
    }
    for (; i < n; ++i) m0 = std::max(m0, sg[i]);
    sig_max = std::max(std::max(m0, m1), std::max(m2, m3));
  }
  mu[n] = pmu;
  sg[n] = psig;
  const double ub_obs = -std::log(normal_cdf((hi_e - lo_e) / sig_max) - 0.5);
  double tmax = -kInf;
  std::size_t pp = 0;  // merge pointer into the previous fit's sorted kernels
  for (std::size_t k = 0; k < n; ++k) {
    const double sk = sg[k];
    const double ik = 1.0 / sk;
    inv[k] = ik;
    half[k] = disc ? 0.5 * s / sk : 0.0;
    const double c = (sk == minsig ? -log_minsig : -std::log(sk)) - kLogSqrt2Pi + log_s;
    cst[k] = c;
    const double za = (lo_e - mu[k]) * ik, zb = (hi_e - mu[k]) * ik;
    double u;
    if (za < -8.5 && zb > 8.5) {
      lzs[k] = 0.0;
      u = 0.0;
      kn[k] = 1;
    } else if (!(ub_obs < 50.0)) {
      lzs[k] = log_normal_cdf_diff(za, zb);
      u = -lzs[k];
      kn[k] = 2;
    } else {
      lzs[k] = 0.0;
      u = ub_obs;
      kn[k] = 0;
      while (pp < prev_n && prev_mu_[pp] < mu[k]) ++pp;
      for (std::size_t q = pp; q < prev_n && prev_mu_[q] == mu[k]; ++q) {
        if (prev_kn_[q] && prev_sg_[q] == sk) {
          lzs[k] = prev_lz_[q];
          kn[k] = 2;
          break;
        }
      }
      if (!kn[k]) any_unknown_ = true;
    }
    ub[k] = u;
    tmax = std::max(tmax, slw[k] + c + u);
  }
  fit_prior_kernel(n, mu, sg, disc, s, minsig, log_minsig, log_s, lo_e, hi_e, inv, half, cst, lzs, ub, kn);
  tmax_ = tmax;
  sig_max_ = sig_max;
  // kernel_known_ / lzsum_ serve the multi-dimensional path only; sized for resolve_log_z's writes.
  kernel_known_.resize(k_);
  lzsum_.resize(k_);
  prev1d_ok_ = true;
  prev1d_n_ = n;
  prev1d_lo_ = lo_e;
  prev1d_hi_ = hi_e;
}

// Window bounds of a joint estimator fitted on rows sorted by dimension 0: tmax_ bounds every observation
// kernel's log term without its dimension-0 distance, sig_max_ is the widest dimension-0 kernel.
void ParzenEstimator::window_bounds() {
  const std::size_t n = k_ - 1;
  const std::size_t D = dims_.size();
  // wb_ holds lw + sum_d (cst + ub) per kernel (fit's passes); categorical dimensions add their larger
  // smoothed mass. (Any upper bound serves: kernels outside the window or dropped by the pre-filter lie kCut
  // nats below the largest term, so they never enter the sum.)
  double cat_bound = 0.0;
  for (std::size_t d = 0; d < D; ++d)
    if (dims_[d].kind == ParzenDim::Kind::Categorical) cat_bound += std::max(cat_hit_[d], cat_miss_[d]);
  double* t = wb_.data();
  if (cat_bound != 0.0)
    for (std::size_t k = 0; k < n; ++k) t[k] += cat_bound;
  V2d vt = V2d{} - kInf, vs = V2d{};
  std::size_t k = 0;
  for (; k + 2 <= n; k += 2) {  // maxima (order-free)
    V2d a, b;
    std::memcpy(&a, t + k, sizeof a);
    std::memcpy(&b, sigma_.data() + k, sizeof b);
    vt = a > vt ? a : vt;
    vs = b > vs ? b : vs;
  }
  double tmax = std::max(vt[0], vt[1]);
  double sig_max = std::max(vs[0], vs[1]);
  for (; k < n; ++k) {
    tmax = std::max(tmax, t[k]);
    sig_max = std::max(sig_max, sigma_[k]);
  }
  tmax_ = tmax;
  sig_max_ = sig_max;
  // Pre-filter dimensions of log_pdf_window: up to three continuous ones, dimension 0 first.
  pre_dims_.clear();
  for (std::size_t d = 0; d < D && pre_dims_.size() < 3; ++d)
    if (dims_[d].kind == ParzenDim::Kind::Continuous) pre_dims_.push_back(d);
}

// Joint estimator, kernels sorted by dimension 0: the exact prior term gives a lower bound L of the largest
// term; kernels farther than sig_max * sqrt(2 (tmax - L + kCut)) from the point in dimension 0 (plus half
// a step for a discrete one) are kCut nats below it and skipped; the rest as in log_pdf's three passes.
double ParzenEstimator::log_pdf_window(const double* x) const {
  const std::size_t n = k_ - 1;
  double* acc = acc_.data();
  double* slo = slo_.data();
  double* shi = shi_.data();
  if (!approx_range(x, n, k_, acc, slo, shi)) return -kInf;
  const double t_prior = exact_term(x, n, acc[0]);  // the prior's log Z is always known
  const ParzenDim& p0 = dims_[0];
  const bool disc0 = p0.kind == ParzenDim::Kind::Discrete;
  const double x0 = disc0 ? std::round((x[0] - p0.low) / p0.step) * p0.step + p0.low : x[0];
  const double gap = tmax_ - t_prior + kCut;
  if (!(gap > 0.0)) return t_prior;
  const double R = sig_max_ * std::sqrt(2.0 * gap) + (disc0 ? 0.5 * p0.step : 0.0);
  const double* mu0 = mu_.data();
  const std::size_t lo = static_cast<std::size_t>(std::lower_bound(mu0, mu0 + n, x0 - R) - mu0);
  const std::size_t hi = static_cast<std::size_t>(std::upper_bound(mu0 + lo, mu0 + n, x0 + R) - mu0);
  const std::size_t w = hi - lo;
  if (w == 0) return t_prior;
  if (!pre_dims_.empty() && w >= 16) return log_pdf_prefiltered(x, lo, hi, t_prior);
  approx_range(x, lo, hi, acc, slo, shi);
  return window_sum(x, nullptr, lo, w, acc, slo, shi, t_prior);
}

// The last two passes over m approximated kernel terms (kernel idx[j], or lo + j without idx): a lower bound L
// of the largest term drops the kernels whose upper bound is kCut nats below it, the rest are made exact, and
// the log-sum-exp keeps the terms within kCut of the largest (the prior's term t_prior always counts).
double ParzenEstimator::window_sum(const double* x, const std::size_t* idx, std::size_t lo, std::size_t m,
                                   double* acc, const double* slo, const double* shi, double t_prior) const {
  double L = t_prior;
  if (has_discrete_) {
    for (std::size_t j = 0; j < m; ++j) L = std::max(L, acc[j] - slo[j]);
  } else {
    for (std::size_t j = 0; j < m; ++j) L = std::max(L, acc[j]);
  }
  const double thr = L - kCut;
  double M = t_prior;
  for (std::size_t j = 0; j < m; ++j) {
    const std::size_t k = idx ? idx[j] : lo + j;
    if (acc[j] + shi[j] < thr) {
      acc[j] = -kInf;
      continue;
    }
    if (!kernel_known_[k]) resolve_log_z(k);
    acc[j] = exact_term(x, k, acc[j]);
    M = std::max(M, acc[j]);
  }
  const double cut = M - kCut;
  double sum = exp_nonpositive(t_prior - M);
  for (std::size_t j = 0; j < m; ++j)
    if (acc[j] >= cut) sum += exp_nonpositive(acc[j] - M);
  return M + std::log(sum);
}

// log_pdf_window's evaluation of the window [lo, hi) through a cheap pre-filter: wb_ bounds each kernel's log
// term with every distance dropped (lw + the largest categorical mass + sum of cst + ub, ub >= -log Z; for a
// discrete dimension the bin mass <= step * peak density = exp(cst)); subtracting the squared distances of
// up to three continuous dimensions keeps it an upper bound. Kernels whose bound lies a nat more than kCut
// below the prior's exact term (a lower bound of the largest term) can neither be the largest term nor pass
// the final cut, so dropping them changes nothing; the survivors go through the same steps as the full
// window (approximate terms with the same kernels, lower / upper bounds, exact terms, log-sum-exp in window
// order), so the result is the one log_pdf_window computes without the filter.
double ParzenEstimator::log_pdf_prefiltered(const double* x, std::size_t lo, std::size_t hi, double t_prior) const {
  const std::size_t w = hi - lo;
  const std::size_t K = k_;
  const std::size_t D = dims_.size();
  if (pre_idx_.size() < w) pre_idx_.resize(w);
  PrefilterArgs pa{};
  pa.wb = wb_.data() + lo;
  pa.nd = static_cast<int>(pre_dims_.size());
  for (int q = 0; q < pa.nd; ++q) {
    const std::size_t d = pre_dims_[static_cast<std::size_t>(q)];
    pa.mu[q] = mu_.data() + d * K + lo;
    pa.inv[q] = inv_sigma_.data() + d * K + lo;
    pa.x[q] = x[d];
  }
  pa.w = w;
  pa.lo = lo;
  pa.keep = t_prior - kCut - 1.0;
  pa.idx = pre_idx_.data();
  const std::size_t* idx = pre_idx_.data();
  const std::size_t ms = window_kernels().prefilter(pa);
  if (ms == 0) return t_prior;  // = t_prior + log(exp(0)), as the full evaluation gives
  // Approximate terms of the survivors: the same per-kernel arithmetic as approx_range (continuous dimensions
  // through the same kernel on gathered copies).
  if (pre_g_.size() < 7 * ms) pre_g_.resize(7 * ms);
  double* acc = pre_g_.data();
  double* slo = acc + ms;
  double* shi = slo + ms;
  double* gm = shi + ms;
  double* gi = gm + ms;
  double* gc = gi + ms;
  for (std::size_t j = 0; j < ms; ++j) {
    acc[j] = lw_[idx[j]];
    slo[j] = 0.0;
    shi[j] = 0.0;
  }
  for (std::size_t d = 0; d < D; ++d) {
    const ParzenDim& pd = dims_[d];
    const double v = x[d];
    const double* mu = mu_.data() + d * K;
    if (pd.kind == ParzenDim::Kind::Categorical) {
      const double hit = cat_hit_[d], miss = cat_miss_[d];
      const double c = std::floor(v);
      for (std::size_t j = 0; j < ms; ++j) acc[j] += mu[idx[j]] == c ? hit : miss;
      continue;
    }
    const double* inv = inv_sigma_.data() + d * K;
    const double* cst = cst_.data() + d * K;
    const double* ub = ub_.data() + d * K;
    if (pd.kind == ParzenDim::Kind::Continuous) {
      double* gu = gc + ms;
      for (std::size_t j = 0; j < ms; ++j) {
        const std::size_t k = idx[j];
        gm[j] = mu[k];
        gi[j] = inv[k];
        gc[j] = cst[k];
        gu[j] = ub[k];
      }
      window_kernels().acc_cont(v, gm, gi, gc, gu, acc, shi, ms);
    } else {
      const double* half = half_.data() + d * K;
      const double g = std::round((v - pd.low) / pd.step) * pd.step + pd.low;  // v's bin
      for (std::size_t j = 0; j < ms; ++j) {
        const std::size_t k = idx[j];
        const double z = (g - mu[k]) * inv[k];
        const double e = std::abs(z) * half[k] + 0.5 * half[k] * half[k];
        acc[j] += cst[k] - 0.5 * z * z;
        slo[j] += e;
        shi[j] += e + ub[k];
      }
    }
  }
  return window_sum(x, idx, 0, ms, acc, slo, shi, t_prior);
}

// Cumulative mixture weights for sampling, in input order (a windowed estimator's kernels are sorted, so
// sample() maps the drawn input row to its kernel through sample_pos_; the prior is last either way).
void ParzenEstimator::build_cum_weights() const {
  const std::size_t n = k_ - 1;
  cum_w_.resize(k_);
  double run = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    run += w_[win_ ? sample_pos_[i] : i];
    cum_w_[i] = run;
  }
  cum_w_[k_ - 1] = 1.0;
  cum_valid_ = true;
}

void ParzenEstimator::update_lzsum(std::size_t k) const {
  double sum = 0.0;  // known flag 1: log Z = 0 (inner kernel, not stored); 2: stored
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    const std::size_t i = d * k_ + k;
    sum += known_[i] == 1 ? 0.0 : lz_[i];
  }
  lzsum_[k] = sum;
}

void ParzenEstimator::resolve_log_z(std::size_t k) const {
  const std::size_t D = dims_.size();
  for (std::size_t d = 0; d < D; ++d) {
    const std::size_t i = d * k_ + k;
    if (known_[i]) continue;
    const ParzenDim& pd = dims_[d];
    const double s = pd.kind == ParzenDim::Kind::Discrete ? pd.step : 0.0;
    const double lo_e = pd.low - 0.5 * s, hi_e = pd.high + 0.5 * s;
    const double lz = log_normal_cdf_diff((lo_e - mu_[i]) * inv_sigma_[i], (hi_e - mu_[i]) * inv_sigma_[i]);
    lz_[i] = lz;
    ub_[i] = -lz;
    known_[i] = 2;  // stored
  }
  kernel_known_[k] = 1;
  update_lzsum(k);
}

// ------------------------------------------------------------------------------------------ sample
namespace {
// A draw on a Discrete dimension's padded support, snapped to its grid.
double snap_to_grid(const ParzenDim& pd, double t) {
  const double last = std::round((pd.high - pd.low) / pd.step);
  return pd.low + std::clamp(std::round((t - pd.low) / pd.step), 0.0, last) * pd.step;
}
}  // namespace

void ParzenEstimator::sample(Rng& rng, std::size_t m, double* out, std::size_t* kernels) const {
  KT_CHECK(k_ > 0, StateError, "parzen: sample() before fit()");
  if (!cum_valid_) build_cum_weights();
  const std::size_t D = dims_.size();
  const std::size_t n = k_ - 1;
  for (std::size_t r = 0; r < m; ++r) {
    double u = rng.uniform();
    std::size_t k = static_cast<std::size_t>(std::upper_bound(cum_w_.begin(), cum_w_.end(), u) - cum_w_.begin());
    if (k >= k_) k = k_ - 1;
    if (win_ && k < n) k = sample_pos_[k];  // cum_w_ is in input order
    if (kernels) kernels[r] = k;
    for (std::size_t d = 0; d < D; ++d) {
      const ParzenDim& pd = dims_[d];
      double mu = mu_[d * k_ + k], sg = sigma_[d * k_ + k];
      double v;
      switch (pd.kind) {
        case ParzenDim::Kind::Continuous:
          v = sample_truncated_normal_near(rng, mu, sg, pd.low, pd.high);
          break;
        case ParzenDim::Kind::Discrete:
          v = snap_to_grid(pd, sample_truncated_normal_near(rng, mu, sg, pd.low - 0.5 * pd.step,
                                                            pd.high + 0.5 * pd.step));
          break;
        default: {
          const double C = static_cast<double>(pd.n_choices);
          if (k == n) {
            v = static_cast<double>(rng.below(pd.n_choices));
          } else {
            double a = prior_weight_ / static_cast<double>(k_);
            double t = rng.uniform() * (a * C + 1.0);
            v = t < 1.0 ? mu : std::min(std::floor((t - 1.0) / a), C - 1.0);
          }
          break;
        }
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
      const double c = centre[d], sg = scale * sigma_[d * k_ + kernel];
      double v = c;
      if (pd.kind == ParzenDim::Kind::Continuous) {
        v = sample_truncated_normal_near(rng, c, sg, pd.low, pd.high);
      } else if (pd.kind == ParzenDim::Kind::Discrete) {
        v = snap_to_grid(pd, sample_truncated_normal_near(rng, c, sg, pd.low - 0.5 * pd.step, pd.high + 0.5 * pd.step));
      }
      out[r * D + d] = v;
    }
  }
}

// ------------------------------------------------------------------------------------------ log_pdf
bool ParzenEstimator::approx_range(const double* x, std::size_t k0, std::size_t k1, double* acc, double* slo,
                                   double* shi) const {
  const std::size_t D = dims_.size();
  const std::size_t K = k_;
  const std::size_t n = K - 1;
  const std::size_t w = k1 - k0;
  for (std::size_t d = 0; d < D; ++d) {
    const ParzenDim& pd = dims_[d];
    double v = x[d];
    if (pd.kind == ParzenDim::Kind::Continuous) {
      if (!(v >= pd.low && v <= pd.high)) return false;
    } else if (pd.kind == ParzenDim::Kind::Discrete) {
      if (!(v >= pd.low - 0.5 * pd.step && v <= pd.high + 0.5 * pd.step)) return false;
    } else if (!(v >= 0.0 && v < static_cast<double>(pd.n_choices))) {
      return false;
    }
  }
  std::copy(lw_.data() + k0, lw_.data() + k1, acc);
  if (has_discrete_) std::fill(slo, slo + w, 0.0);  // only discrete dimensions have a lower slack
  std::fill(shi, shi + w, 0.0);
  for (std::size_t d = 0; d < D; ++d) {
    const ParzenDim& pd = dims_[d];
    const double v = x[d];
    const double* mu = mu_.data() + d * K + k0;
    if (pd.kind == ParzenDim::Kind::Categorical) {
      const double hit = cat_hit_[d], miss = cat_miss_[d];
      const double c = std::floor(v);
      const std::size_t wo = std::min(k1, n) > k0 ? std::min(k1, n) - k0 : 0;  // observation kernels
      for (std::size_t j = 0; j < wo; ++j) acc[j] += mu[j] == c ? hit : miss;
      if (k1 > n) acc[n - k0] += cat_prior_[d];
      continue;
    }
    const double* inv = inv_sigma_.data() + d * K + k0;
    const double* cst = cst_.data() + d * K + k0;
    const double* ub = ub_.data() + d * K + k0;
    if (pd.kind == ParzenDim::Kind::Continuous) {
      window_kernels().acc_cont(v, mu, inv, cst, ub, acc, shi, w);
    } else {
      // Midpoint approximation of the bin's log mass; its error is within |z| h + h^2 / 2 either way.
      const double* half = half_.data() + d * K + k0;
      const double g = std::round((v - pd.low) / pd.step) * pd.step + pd.low;  // v's bin
      for (std::size_t j = 0; j < w; ++j) {
        const double z = (g - mu[j]) * inv[j];
        const double e = std::abs(z) * half[j] + 0.5 * half[j] * half[j];
        acc[j] += cst[j] - 0.5 * z * z;
        slo[j] += e;
        shi[j] += e + ub[j];
      }
    }
  }
  return true;
}

// Exact log term of kernel k from its approximation: minus the truncation masses, and for Discrete
// dimensions the bin's log mass in place of the midpoint value. One formula whatever was cached before,
// so results never depend on the call history.
double ParzenEstimator::exact_term(const double* x, std::size_t k, double approx) const {
  double e = approx - lzsum_[k];
  if (!has_discrete_) return e;
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    const ParzenDim& pd = dims_[d];
    if (pd.kind != ParzenDim::Kind::Discrete) continue;
    const std::size_t i = d * k_ + k;
    const double inv = inv_sigma_[i];
    const double g = std::round((x[d] - pd.low) / pd.step) * pd.step + pd.low;
    const double z = (g - mu_[i]) * inv;
    e += log_normal_cdf_diff((g - 0.5 * pd.step - mu_[i]) * inv, (g + 0.5 * pd.step - mu_[i]) * inv) -
         (cst_[i] - 0.5 * z * z);
  }
  return e;
}

// One dimension, kernels sorted by centre: visit kernels outward from the point, nearest first, and stop
// once even the best-placed remaining kernel (largest weight and height, widest) is kCut nats below the
// largest term found so far. Terms are exact (log Z resolved on first use).
double ParzenEstimator::log_pdf_1d(double x) const {
  const ParzenDim& pd = dims_[0];
  const std::size_t n = k_ - 1;
  const bool disc = pd.kind == ParzenDim::Kind::Discrete;
  const double s = disc ? pd.step : 0.0;
  if (disc) {
    if (!(x >= pd.low - 0.5 * s && x <= pd.high + 0.5 * s)) return -kInf;
    x = std::round((x - pd.low) / s) * s + pd.low;
  } else if (!(x >= pd.low && x <= pd.high)) {
    return -kInf;
  }
  auto term = [&](std::size_t k) -> double {
    if (!known_[k]) resolve_log_z(k);
    if (!disc) {
      const double z = (x - mu_[k]) * inv_sigma_[k];
      return lw_[k] + cst_[k] - 0.5 * z * z - lz_[k];
    }
    const double inv = inv_sigma_[k];
    return lw_[k] + log_normal_cdf_diff((x - 0.5 * s - mu_[k]) * inv, (x + 0.5 * s - mu_[k]) * inv) - lz_[k];
  };
  const double t_prior = term(n);
  if (n == 0) return t_prior;
  // Lower bound of the largest term from the prior and the two nearest kernels, then the window outside of
  // which even the best-placed kernel (largest weight and height, widest) lies kCut nats below it.
  const double* mu = mu_.data();
  const std::size_t p = static_cast<std::size_t>(std::lower_bound(mu, mu + n, x) - mu);
  double L = t_prior;
  if (p < n) L = std::max(L, term(p));
  if (p > 0) L = std::max(L, term(p - 1));
  const double gap = tmax_ - (L - kCut);
  const double R = gap > 0.0 ? sig_max_ * std::sqrt(2.0 * gap) + 0.5 * s : 0.0;
  const std::size_t lo = static_cast<std::size_t>(std::lower_bound(mu, mu + p, x - R) - mu);
  const std::size_t hi = static_cast<std::size_t>(std::upper_bound(mu + p, mu + n, x + R) - mu);
  const std::size_t w = hi - lo;
  if (terms_.size() < w) terms_.resize(w);
  double* t = terms_.data();
  if (any_unknown_) {
    // Unknown truncation masses in the window, found with memchr (most kernels are known).
    const char* kn = known_.data();
    for (const void* hit = std::memchr(kn + lo, 0, w); hit != nullptr;
         hit = std::memchr(kn + (static_cast<const char*>(hit) - kn) + 1, 0,
                           hi - static_cast<std::size_t>(static_cast<const char*>(hit) - kn) - 1)) {
      const std::size_t k = static_cast<std::size_t>(static_cast<const char*>(hit) - kn);
      if (k > lo && known_[k - 1] && mu[k] == mu[k - 1] && sigma_[k] == sigma_[k - 1]) {
        // Same centre and width as its sorted neighbour (repeated values of discrete parameters): the same
        // truncation mass, computed from the same inputs.
        lz_[k] = lz_[k - 1];
        ub_[k] = -lz_[k];
        known_[k] = 2;
        kernel_known_[k] = 1;
        lzsum_[k] = lz_[k];
      } else {
        resolve_log_z(k);
      }
    }
  }
  if (!disc) {
    // Vectorised: terms and their maximum, then the clamped exp-sum (see WindowKernels).
    if (terms_.size() < w + 8) terms_.resize(w + 8);
    double* tv = terms_.data();
    const WindowKernels& wk = window_kernels();
    const WindowArgs args{x, mu + lo, inv_sigma_.data() + lo, lw_.data() + lo, cst_.data() + lo, lz_.data() + lo,
                          w, tv};
    const double M = std::max(t_prior, wk.terms(args));
    const double sum = exp_nonpositive(t_prior - M) + wk.expsum(tv, w, M);
    return M + std::log(sum);
  }
  double M = t_prior;
  {
    // Bin masses depend on (centre, width) only: reuse the last one along runs of equal kernels.
    double last_mu = kNaNd, last_sg = kNaNd, last_mass = 0.0;
    for (std::size_t j = 0; j < w; ++j) {
      const std::size_t k = lo + j;
      if (!(mu[k] == last_mu && sigma_[k] == last_sg)) {
        const double inv = inv_sigma_[k];
        last_mass = log_normal_cdf_diff((x - 0.5 * s - mu[k]) * inv, (x + 0.5 * s - mu[k]) * inv) - lz_[k];
        last_mu = mu[k];
        last_sg = sigma_[k];
      }
      t[j] = lw_[k] + last_mass;
    }
  }
  for (std::size_t j = 0; j < w; ++j) M = std::max(M, t[j]);
  // Terms below M - kCut are < 4e-18 of the largest; clamping them there instead of dropping them keeps the
  // loop branch-free and changes the sum by less than w * 4e-18 relative.
  const double cut = -kCut;
  double s0 = exp_nonpositive(t_prior - M), s1 = 0.0, s2 = 0.0, s3 = 0.0;
  std::size_t j = 0;
  for (; j + 4 <= w; j += 4) {
    s0 += exp_bounded(std::max(t[j] - M, cut));
    s1 += exp_bounded(std::max(t[j + 1] - M, cut));
    s2 += exp_bounded(std::max(t[j + 2] - M, cut));
    s3 += exp_bounded(std::max(t[j + 3] - M, cut));
  }
  for (; j < w; ++j) s0 += exp_bounded(std::max(t[j] - M, cut));
  return M + std::log((s0 + s1) + (s2 + s3));
}

// Three passes: (1) cheap bounds of every kernel's log term for every point (vectorisable); (2) log Z of
// the kernels that may matter somewhere; (3) exact terms for those kernels, log-sum-exp. Kernels whose
// upper bound is kCut nats below the largest lower bound are provably negligible and skipped.
void ParzenEstimator::log_pdf(const double* x, std::size_t m, double* out, int n_threads) const {
  KT_CHECK(k_ > 0, StateError, "parzen: log_pdf() before fit()");
  if (m == 0) return;
  if (sorted1d_) {
    for (std::size_t r = 0; r < m; ++r) out[r] = log_pdf_1d(x[r]);
    return;
  }
  if (cat1d_) {
    const double C = static_cast<double>(dims_[0].n_choices);
    for (std::size_t r = 0; r < m; ++r)
      out[r] = x[r] >= 0.0 && x[r] < C ? cat1d_lp_[static_cast<std::size_t>(x[r])] : -kInf;
    return;
  }
  const std::size_t D = dims_.size();
  const std::size_t K = k_;
  if (win_) {
    // Windowed joint evaluation: few kernels per point, one thread (results do not depend on n_threads).
    if (acc_.size() < K) {
      acc_.resize(K);
      slo_.resize(K);
      shi_.resize(K);
    }
    for (std::size_t r = 0; r < m; ++r) out[r] = log_pdf_window(x + r * D);
    return;
  }
  int nt = core::resolve_threads(n_threads);
  if (m * K * D < kParallelWork) nt = 1;
  nt = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(nt), m));
  if (acc_.size() < m * K) {
    acc_.resize(m * K);
    slo_.resize(m * K);
    shi_.resize(m * K);
  }
  thr_.resize(m);
  const long long mm = static_cast<long long>(m);
  // (One thread: plain loops -- an OpenMP region costs a team start even when its if() clause is false.)
  // pass(r) for every row: on nt threads, or without an OpenMP region for one (a team costs even if unused).
  auto for_rows = [&](auto&& pass) {
    if (nt > 1) {
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
      for (long long r = 0; r < mm; ++r) pass(r);
    } else {
      for (long long r = 0; r < mm; ++r) pass(r);
    }
  };
  auto bound_pass = [&](long long r) {
    const std::size_t o = static_cast<std::size_t>(r) * K;
    bool in = approx_range(x + static_cast<std::size_t>(r) * D, 0, K, acc_.data() + o, slo_.data() + o,
                           shi_.data() + o);
    double L = -kInf;
    if (in)
      for (std::size_t k = 0; k < K; ++k) L = std::max(L, has_discrete_ ? acc_[o + k] - slo_[o + k] : acc_[o + k]);
    thr_[static_cast<std::size_t>(r)] = in ? L - kCut : kInf;
  };
  for_rows(bound_pass);
  if (any_unknown_) {
    for (std::size_t r = 0; r < m; ++r) {
      const double thr = thr_[r];
      if (thr == kInf) continue;
      const std::size_t o = r * K;
      for (std::size_t k = 0; k < K; ++k)
        if (!kernel_known_[k] && acc_[o + k] + shi_[o + k] >= thr) resolve_log_z(k);
    }
  }
  auto exact_pass = [&](long long r) {
    const std::size_t ru = static_cast<std::size_t>(r);
    const double thr = thr_[ru];
    if (thr == kInf) {
      out[ru] = -kInf;
      return;
    }
    const std::size_t o = ru * K;
    double* acc = acc_.data() + o;
    const double* shi = shi_.data() + o;
    const double* xr = x + ru * D;
    double M = -kInf;
    for (std::size_t k = 0; k < K; ++k) {
      if (acc[k] + shi[k] < thr) {
        acc[k] = -kInf;
        continue;
      }
      acc[k] = exact_term(xr, k, acc[k]);
      M = std::max(M, acc[k]);
    }
    if (M == -kInf) {
      out[ru] = -kInf;
      return;
    }
    const double cut = M - kCut;
    double sum = 0.0;
    for (std::size_t k = 0; k < K; ++k)
      if (acc[k] >= cut) sum += exp_nonpositive(acc[k] - M);
    out[ru] = M + std::log(sum);
  };
  for_rows(exact_pass);
}

double ParzenEstimator::log_pdf(const double* x) const {
  double out = 0.0;
  log_pdf(x, 1, &out, 1);
  return out;
}

}  // namespace kubetune::search
