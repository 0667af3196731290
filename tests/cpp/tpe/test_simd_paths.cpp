// The Parzen estimator's vectorised loops on every instruction set this CPU runs (baseline, AVX2+FMA, AVX-512)
// against direct scalar sums: a machine uses only its widest set, so the others are exercised here. Covers
// AVX-512's packed sum (the terms within the cut compressed before exp) against the block skip elsewhere.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kubetune/core/rng.hpp"
#include "../../../src/search/tpe/simd.hpp"

namespace simd = kubetune::search::simd;
using kubetune::Rng;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<const simd::Kernels*> instruction_sets() {
  std::vector<const simd::Kernels*> out{&simd::kernels_base()};
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(&simd::kernels_avx2());
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    out.push_back(&simd::kernels_avx512());
#endif
  return out;
}

// Terms as a clustered history gives them: the largest 0, most far below the cut but scattered among the near
// ones (few blocks of eight entirely below), a few -inf (no mass).
std::vector<double> scattered_terms(Rng& rng, std::size_t n) {
  std::vector<double> t(n);
  for (double& v : t) {
    const double u = rng.uniform();
    v = u < 0.2 ? -39.0 * rng.uniform() : -40.5 - 300.0 * rng.uniform();
  }
  t[13] = 0.0;
  t[n - 3] = t[n - 2] = t[n - 1] = -kInf;
  return t;
}
}  // namespace

TEST(TPESimd, SumsOfExpAgreeOnEveryInstructionSet) {
  Rng rng(41);
  const std::size_t n = 1000;  // a multiple of kPad
  const std::vector<double> t = scattered_terms(rng, n);
  std::vector<double> w(n);
  for (double& v : w) v = rng.uniform();
  long double kept = 0.0L, weighted = 0.0L;
  for (std::size_t k = 0; k < n; ++k) {
    if (t[k] > -simd::kCut) kept += std::exp(static_cast<long double>(t[k]));
    weighted += std::exp(static_cast<long double>(t[k])) * w[k];
  }
  // Terms below the cut add at most n e^-40 ~ 4e-15 of the sum (the block skip keeps some, packing none).
  for (const simd::Kernels* ks : instruction_sets()) {
    for (const bool pack : {false, true}) {
      std::vector<double> scratch = t;  // (the packed sum overwrites its terms)
      EXPECT_NEAR(ks->sum_exp(scratch.data(), n, 0.0, pack), static_cast<double>(kept), 1e-14 * kept)
          << ks->name << " pack=" << pack;
    }
    EXPECT_NEAR(ks->weighted_sum_exp(t.data(), w.data(), n, 0.0), static_cast<double>(weighted), 1e-14 * weighted)
        << ks->name;
    std::vector<double> none(16, -kInf);
    EXPECT_EQ(ks->sum_exp(none.data(), none.size(), -kInf, true), 0.0) << ks->name;  // no kernel: an empty sum
    EXPECT_TRUE(std::isnan(ks->sum_exp(none.data(), none.size(), std::nan(""), true))) << ks->name;
    EXPECT_EQ(ks->weighted_sum_exp(none.data(), w.data(), none.size(), -kInf), 0.0) << ks->name;
  }
}

TEST(TPESimd, JointTermsAndLogsAgreeOnEveryInstructionSet) {
  // Two continuous dimensions and a categorical one, 37 kernels (stride 40), 11 points (blocks of 8 and 1).
  Rng rng(42);
  const std::size_t K = 37, stride = simd::padded(K), pitch = stride + simd::kPad, D = 3, m = 11;
  const char kind[D] = {simd::kContinuous, simd::kCategorical, simd::kContinuous};
  std::vector<double> mu(D * pitch, 0.0), coef(D * pitch, 0.0), base(stride, -kInf), x(m * D);
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t d = 0; d < D; ++d) {
      mu[d * pitch + k] = kind[d] == simd::kCategorical ? static_cast<double>(k % 3) : rng.uniform();
      coef[d * pitch + k] = kind[d] == simd::kCategorical ? 1.5 : 1.0 / (std::sqrt(2.0) * (0.02 + 0.3 * rng.uniform()));
    }
    base[k] = -5.0 * rng.uniform();
  }
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t d = 0; d < D; ++d) x[r * D + d] = kind[d] == simd::kCategorical ? static_cast<double>(r % 3) : rng.uniform();
  for (const simd::Kernels* ks : instruction_sets()) {
    std::vector<double> out(m * stride), top(m);
    ks->joint_terms({x.data(), m, D, kind, mu.data(), coef.data(), base.data(), stride, pitch, out.data(), top.data()});
    for (std::size_t r = 0; r < m; ++r) {
      double best = -kInf;
      for (std::size_t k = 0; k < K; ++k) {
        double ref = base[k];
        for (std::size_t d = 0; d < D; ++d) {
          const double v = x[r * D + d], c = mu[d * pitch + k], s = coef[d * pitch + k];
          ref += kind[d] == simd::kCategorical ? (v == c ? s : 0.0) : -((v - c) * s) * ((v - c) * s);
        }
        EXPECT_NEAR(out[r * stride + k], ref, 1e-12 * (1.0 + std::abs(ref))) << ks->name << " r=" << r << " k=" << k;
        best = std::max(best, ref);
      }
      EXPECT_NEAR(top[r], best, 1e-12 * (1.0 + std::abs(best))) << ks->name;
      for (std::size_t k = K; k < stride; ++k) EXPECT_EQ(out[r * stride + k], -kInf) << ks->name;  // padding
    }
    std::vector<double> in{1.0, 2.5, 1e-310, 0.0, 1e300, 0.125, 3.0, 7.0}, logs(8);
    ks->logs(in.data(), logs.data(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i] == 0.0) {
        EXPECT_EQ(logs[i], -kInf) << ks->name;
      } else {
        EXPECT_NEAR(logs[i], std::log(in[i]), 4e-16 * std::max(1.0, std::abs(std::log(in[i])))) << ks->name;
      }
    }
  }
}
