// Bodies of simd.hpp's loops, templated on the xsimd architecture. Included only by the per-instruction-set
// translation units; everything here is a template on Arch, so the copies compiled with different flags have
// different symbol names (no inline function is shared between them).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "simd.hpp"

// The per-point loops run over a compile-time count: unrolled, their accumulators stay in registers.
#define KT_UNROLL _Pragma("GCC unroll 8")

namespace kubetune::search::simd::body {

// The largest lane of a batch (a template, so each instruction set's copy has its own name).
template <class B>
double max_lane(const B& v) {
  alignas(64) double lanes[B::size];
  v.store_aligned(lanes);
  double m = lanes[0];
  for (std::size_t l = 1; l < B::size; ++l) m = lanes[l] > m ? lanes[l] : m;
  return m;
}

// erfc(x), its argument clamped to [-40, 40] (erfc(40) is 0 and erfc(-40) is 2 in double): xsimd's erfc takes
// exp(-x^2) through a float-to-int conversion that is out of range (undefined) once x^2 is beyond about 6e18,
// e.g. a bound 1e12 widths away when the widths are not clipped. NaN stays NaN.
template <class B>
B erfc_of(const B& x) {
  const B lim(40.0);
  return xsimd::erfc(xsimd::select(x > lim, lim, xsimd::select(x < -lim, -lim, x)));
}

// P points at once: each table entry is loaded once for all of them.
template <class Arch, std::size_t P>
void joint_terms_of(const JointArgs& a, std::size_t first) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  static_assert(kPad % W == 0, "kernel tables are padded for the widest batch");
  const B zero(0.0);
  B top[P];
  for (std::size_t p = 0; p < P; ++p) top[p] = B(-std::numeric_limits<double>::infinity());
  for (std::size_t k = 0; k < a.stride; k += W) {
    B acc[P];
    const B base = B::load_unaligned(a.base + k);
    KT_UNROLL
    for (std::size_t p = 0; p < P; ++p) acc[p] = base;
    for (std::size_t d = 0; d < a.n_dims; ++d) {
      if (a.kind[d] == kDiscrete) continue;  // its bin masses weigh the terms afterwards
      const B mu = B::load_unaligned(a.mu + d * a.pitch + k);
      const B coef = B::load_unaligned(a.coef + d * a.pitch + k);
      const double* x = a.x + first * a.n_dims + d;
      if (a.kind[d] == kContinuous) {
        KT_UNROLL
        for (std::size_t p = 0; p < P; ++p) {
          // z = (x - mu) / (sqrt(2) sigma). (Written out, not xsimd::fnma: xsimd 8.1 has no AVX-512 fused ops and
          // its generic fnma negates by subtracting from zero, one instruction more; GCC and Clang contract this.)
          const B z = (B(x[p * a.n_dims]) - mu) * coef;
          acc[p] = acc[p] - z * z;
        }
      } else {
        KT_UNROLL
        for (std::size_t p = 0; p < P; ++p) acc[p] += xsimd::select(mu == B(x[p * a.n_dims]), coef, zero);
      }
    }
    KT_UNROLL
    for (std::size_t p = 0; p < P; ++p) {
      acc[p].store_unaligned(a.out + (first + p) * a.stride + k);
      top[p] = xsimd::max(top[p], acc[p]);
    }
  }
  for (std::size_t p = 0; p < P; ++p) a.top[first + p] = max_lane(top[p]);
}

template <class Arch>
void joint_terms(const JointArgs& a) {
  std::size_t i = 0;
  for (; i + 8 <= a.n_points; i += 8) joint_terms_of<Arch, 8>(a, i);
  for (; i + 4 <= a.n_points; i += 4) joint_terms_of<Arch, 4>(a, i);
  for (; i < a.n_points; ++i) joint_terms_of<Arch, 1>(a, i);
}

// Whether pack_above exists for Arch: xsimd 8.1 (Debian 12's) has no compress, AVX-512 has the instruction.
template <class Arch>
constexpr bool kPacks = std::is_base_of_v<xsimd::avx512f, Arch>;

// The lanes of y above floor, in order, at out[0 .. count) (all of out[0 .. W) is written); returns the count.
template <class Arch>
std::size_t pack_above(double* out, const xsimd::batch<double, Arch>& y, const xsimd::batch<double, Arch>& floor) {
#if defined(__AVX512F__)
  if constexpr (kPacks<Arch>) {
    const __mmask8 keep = _mm512_cmp_pd_mask(y, floor, _CMP_GT_OQ);
    _mm512_storeu_pd(out, _mm512_maskz_compress_pd(keep, y));
    return static_cast<std::size_t>(__builtin_popcount(keep));
  }
#endif
  static_assert(kPacks<Arch>, "pack_above: AVX-512 only");
  return 0;
}

// sum exp(t[k] - m) given the largest term m, leaving out the terms more than kCut below m. With AVX-512 and
// pack the terms that stay are packed at the front of t first (overwriting terms already read: a history
// gathered near the optimum leaves most kernels beyond the cut of any one candidate, but few blocks of 8
// entirely), so exp runs on them alone; otherwise the blocks whose terms all lie below the cut are skipped
// (kernels sorted by centre keep those blocks together).
template <class Arch>
double sum_exp(double* t, std::size_t n, double m, bool pack) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  if (!(m > -std::numeric_limits<double>::infinity())) return m == m ? 0.0 : m;  // no kernel: 0 (NaN stays)
  // exp's argument is clamped at -708 (e^-708 is still a normal double): -inf terms (padding, no mass) would
  // reach an out-of-range float-to-int conversion inside xsimd::exp; their e^-708 changes a sum >= 1 by nothing.
  const B shift(m), floor(-kCut), lowest(-708.0);
  B sum(0.0);
  if constexpr (kPacks<Arch>) {
    if (pack) {
      std::size_t live = 0;
      for (std::size_t k = 0; k < n; k += W) live += pack_above(t + live, B::load_unaligned(t + k) - shift, floor);
      std::fill(t + live, t + padded(live), -708.0);  // (padded(live) <= n: n is a multiple of kPad)
      for (std::size_t k = 0; k < live; k += W) sum += xsimd::exp(B::load_unaligned(t + k));
      return xsimd::hadd(sum);
    }
  }
  for (std::size_t k = 0; k < n; k += W) {
    const B y = B::load_unaligned(t + k) - shift;
    if (xsimd::any(y > floor)) sum += xsimd::exp(xsimd::max(y, lowest));
  }
  return xsimd::hadd(sum);
}

// xsimd 8.1's log reads a subnormal input's exponent before it rescales it (up to 54 ln 2 off; tested): such
// inputs are scaled by 2^54 here and the log corrected.
template <class Arch>
void logs(const double* in, double* out, std::size_t n) {
  using B = xsimd::batch<double, Arch>;
  const B smallest(std::numeric_limits<double>::min()), zero(0.0), up(0x1p54), back(54.0 * 0.69314718055994530942);
  for (std::size_t k = 0; k < n; k += B::size) {
    const B v = B::load_unaligned(in + k);
    const auto sub = (v < smallest) && (v > zero);
    const B r = xsimd::log(xsimd::select(sub, v * up, v));
    xsimd::select(sub, r - back, r).store_unaligned(out + k);
  }
}

template <class Arch>
void kernel_constants(const ConstantArgs& a) {
  using B = xsimd::batch<double, Arch>;
  constexpr double kSqrt1_2 = 0.70710678118654752440;
  const B shift(a.shift), lo(a.lo), hi(a.hi), zero(0.0), half(0.5), rs2(kSqrt1_2), inner(kInnerZ);
  const B nan(std::numeric_limits<double>::quiet_NaN());
  for (std::size_t k = 0; k < a.n; k += B::size) {
    const B sig = B::load_unaligned(a.sigma + k), mu = B::load_unaligned(a.mu + k);
    if (k + B::size <= a.n_prev && xsimd::all(sig == B::load_unaligned(a.prev_sigma + k)) &&
        xsimd::all(mu == B::load_unaligned(a.prev_mu + k))) {
      B::load_unaligned(a.prev_coef + k).store_unaligned(a.coef + k);
      B::load_unaligned(a.prev_term + k).store_unaligned(a.term + k);
      continue;
    }
    const B inv = B(1.0) / sig;
    (inv * rs2).store_unaligned(a.coef + k);
    // log Z = log(Phi(b) - Phi(a)) = log1p(-(Phi(a) + Phi(-b))): with the centre inside the support (a <= 0 <= b)
    // both tails are at most 1/2, so nothing cancels; a centre outside is left to the scalar path (NaN). A kernel
    // with both bounds beyond kInnerZ widths has tails < 2e-17: log Z = 0 (no erfc for a block of such kernels).
    const B za = (lo - mu) * inv, zb = (hi - mu) * inv;
    const auto inside = (za <= zero) && (zb >= zero);
    const auto near = (za > -inner) || (zb < inner);
    B lz = zero;
    if (xsimd::any(near))
      lz = xsimd::select(near, xsimd::log1p(-(half * (erfc_of(-za * rs2) + erfc_of(zb * rs2)))), zero);
    const B edge = a.discrete ? zero : shift - xsimd::log(sig);
    xsimd::select(inside, edge - lz, nan).store_unaligned(a.term + k);
  }
}

template <class Arch>
double weighted_sum_exp(const double* t, const double* w, std::size_t n, double m) {
  using B = xsimd::batch<double, Arch>;
  if (!(m > -std::numeric_limits<double>::infinity())) return m == m ? 0.0 : m;  // no kernel: 0 (NaN stays)
  const B shift(m), lowest(-708.0);  // (the clamp as in sum_exp)
  B sum(0.0);
  for (std::size_t k = 0; k < n; k += B::size)
    sum = xsimd::fma(xsimd::exp(xsimd::max(B::load_unaligned(t + k) - shift, lowest)), B::load_unaligned(w + k), sum);
  return xsimd::hadd(sum);
}

template <class Arch>
void edge_tails(const EdgeArgs& a) {
  using B = xsimd::batch<double, Arch>;
  constexpr double kSqrt1_2 = 0.70710678118654752440;
  const B e(a.e), scale(kSqrt1_2), half(0.5);
  for (std::size_t k = 0; k < a.n; k += B::size) {
    const B z = xsimd::abs(e - B::load_unaligned(a.mu + k)) / B::load_unaligned(a.sigma + k);
    (half * erfc_of(z * scale)).store_unaligned(a.out + k);
  }
}

template <class Arch>
void bin_masses(const BinArgs& a) {
  using B = xsimd::batch<double, Arch>;
  const B lo(a.lo), hi(a.hi), one(1.0);
  for (std::size_t k = 0; k < a.n; k += B::size) {
    const B mu = B::load_unaligned(a.mu + k);
    const B tl = B::load_unaligned(a.tail_lo + k), th = B::load_unaligned(a.tail_hi + k);
    // Both edges above the centre: Q(lo) - Q(hi); both below: Phi(hi) - Phi(lo); around it: 1 - the two tails.
    const B mass = xsimd::select(lo > mu, tl - th, xsimd::select(hi < mu, th - tl, one - tl - th));
    mass.store_unaligned(a.out + k);
  }
}

template <class Arch>
void grid_masses(const GridArgs& a) {
  using B = xsimd::batch<double, Arch>;
  const B v(a.value);
  for (std::size_t k = 0; k < a.n; k += B::size) {
    const B at = B::load_unaligned(a.base + k) + xsimd::abs(v - B::load_unaligned(a.index + k));  // exact integers
    B::gather(a.masses, xsimd::to_int(at)).store_unaligned(a.out + k);
  }
}

template <class Arch>
Kernels table(const char* name) {
  return {name,          &joint_terms<Arch>,      &sum_exp<Arch>,     &weighted_sum_exp<Arch>,
          &logs<Arch>,   &kernel_constants<Arch>, &edge_tails<Arch>,  &bin_masses<Arch>,
          &grid_masses<Arch>};
}

}  // namespace kubetune::search::simd::body
