// simd.hpp's loops for AVX2 + FMA (compiled with -mavx2 -mfma; CMakeLists.txt).
#include "simd_body.hpp"

namespace kubetune::search::simd {
#if defined(__x86_64__) || defined(_M_X64)
const Kernels& kernels_avx2() {
  static const Kernels k = body::table<xsimd::fma3<xsimd::avx2>>("avx2+fma");
  return k;
}
#endif
}  // namespace kubetune::search::simd
