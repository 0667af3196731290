// simd.hpp's loops for AVX-512 (F, CD, DQ, BW, VL; compiled with those flags; CMakeLists.txt).
#include "simd_body.hpp"

namespace kubetune::search::simd {
#if defined(__x86_64__) || defined(_M_X64)
const Kernels& kernels_avx512() {
  static const Kernels k = body::table<xsimd::avx512bw>("avx512bw");
  return k;
}
#endif
}  // namespace kubetune::search::simd
