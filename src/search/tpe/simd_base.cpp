// simd.hpp's loops for the baseline instruction set (SSE2 on x86-64, NEON on arm64, scalar elsewhere), and
// the run-time choice between the builds.
#include "simd_body.hpp"

namespace kubetune::search::simd {

const Kernels& kernels_base() {
  static const Kernels k = body::table<xsimd::default_arch>("baseline");
  return k;
}

const Kernels& kernels() {
  static const Kernels& k = []() -> const Kernels& {
#if defined(__x86_64__) || defined(_M_X64)
    // The compiler's CPU model (it also checks that the OS saves the wider registers).
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
      return kernels_avx512();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return kernels_avx2();
#endif
    return kernels_base();
  }();
  return k;
}

}  // namespace kubetune::search::simd
