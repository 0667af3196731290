// The CUDA emulator's own tests: launch forms, indices, barriers and shuffles, poisoning, the strict
// divergence and pointer checks, error reporting and the reference cuBLAS. Built only for the emulator.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess)

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DeviceBuffer(std::size_t count) : n(count) { EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess); }
  DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(p, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> host() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

float poison_float() {
  float f;
  std::memset(&f, 0x7f, sizeof f);
  return f;
}

// ------------------------------------------------------------------------------------------------ kernels
__global__ void k_indices(int* out, int* hits) {
  const unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned id = bx * (blockDim.x * blockDim.y * blockDim.z) + tx;
  out[id] = (int)(blockIdx.x * 1000000 + blockIdx.y * 100000 + blockIdx.z * 10000 + threadIdx.x * 100 +
                  threadIdx.y * 10 + threadIdx.z);
  atomicAdd(hits + id, 1);
}

template <class T>
__global__ void k_scale(T* x, T a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) x[i] *= a;
}

namespace inner {
__global__ void k_iota(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}
}  // namespace inner

/// Reverses each block's slice through dynamic shared memory.
__global__ void k_reverse_blocks(const float* in, float* out) {
  extern __shared__ float tile[];
  const int base = blockIdx.x * blockDim.x;
  tile[threadIdx.x] = in[base + threadIdx.x];
  __syncthreads();
  out[base + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

/// Block sums with warp shuffles and a shared-memory pass; also the barrier reductions.
__global__ void k_block_sum(const float* x, float* sums, int* counts) {
  __shared__ float warp_sums[32];
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) s += warp_sums[w];
    sums[blockIdx.x] = s;
  }
  const int odd = threadIdx.x & 1;
  const int c = __syncthreads_count(odd), all = __syncthreads_and(threadIdx.x < 100000), any = __syncthreads_or(0);
  if (threadIdx.x == 0) {
    counts[3 * blockIdx.x] = c;
    counts[3 * blockIdx.x + 1] = all;
    counts[3 * blockIdx.x + 2] = any;
  }
}

/// out[4 * t + j]: idx / up / down / xor shuffles of the lane number, with `width`.
__global__ void k_shuffles(int* out, int width) {
  const int t = threadIdx.x, lane = t & 31;
  out[4 * t] = __shfl_sync(0xffffffffu, lane, 5, width);
  out[4 * t + 1] = __shfl_up_sync(0xffffffffu, lane, 3, width);
  out[4 * t + 2] = __shfl_down_sync(0xffffffffu, lane, 3, width);
  out[4 * t + 3] = __shfl_xor_sync(0xffffffffu, lane, 6, width);
}

/// Warps other than the first return at once (legal: the condition is uniform per warp); a partial mask is
/// legal too when only the named lanes take part.
__global__ void k_first_warp_only(int* out) {
  const int lane = threadIdx.x & 31;
  if (threadIdx.x >= 32) return;
  int v = lane;
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  if (lane < 16) v += __shfl_xor_sync(0x0000ffffu, v, 2);
  __syncwarp();
  out[threadIdx.x] = v;
}

__global__ void k_read_shared(float* out, int write_first) {
  __shared__ float s[4];
  if (write_first && threadIdx.x == 0) s[0] = 1.5f;
  out[blockIdx.x] = s[0];
}

__global__ void k_early_return_then_barrier(int* out, int cut) {
  if ((int)threadIdx.x >= cut) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void k_first_threads_return(int* out) {
  if (threadIdx.x < 3) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void k_half_warp_shuffle(float* out) {
  float v = (float)threadIdx.x;
  if ((threadIdx.x & 31) < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}
__global__ void k_reads_lane_outside_mask(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_down_sync(0x0000ffffu, v, 1);
  out[threadIdx.x] = v;
}
__global__ void k_barrier_and_shuffle_mixed(int* out) {
  int v = threadIdx.x;
  if ((threadIdx.x & 31) < 16)
    v = __shfl_down_sync(0xffffffffu, v, 1);
  else
    __syncthreads();
  out[threadIdx.x] = v;
}
__global__ void k_shuffle_vs_syncwarp(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16)
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  else
    __syncwarp();
  out[threadIdx.x] = v;
}
__global__ void k_touch(float* x) { x[threadIdx.x] += 1.f; }
/// Races on purpose: the last block, and the last thread of each block, to write wins.
__global__ void k_last_writer(int* out) {
  out[0] = blockIdx.x;
  out[1 + blockIdx.x] = threadIdx.x;
}

// ------------------------------------------------------------------------------------------------ launches
// (The rewrite leaves launch-like text that is not a launch alone: <<<grid, block>>> here, or a lone <<<.)
TEST(CudaEmulator, EveryBlockAndThreadRunsOnceWithItsIndices) {
  const dim3 grid(3, 2, 2), block(4, 2, 3);
  const int total = 3 * 2 * 2 * 4 * 2 * 3;
  DeviceBuffer<int> out(total), hits(total);
  CUDA_OK(cudaMemset(hits.p, 0, total * sizeof(int)));
  k_indices<<<grid, block>>>(out.p, hits.p);
  CUDA_OK(cudaGetLastError());
  const auto o = out.host(), h = hits.host();
  int id = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 3; ++tz)
          for (unsigned ty = 0; ty < 2; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, ++id) {
              EXPECT_EQ(h[id], 1) << id;
              EXPECT_EQ(o[id], (int)(bx * 1000000 + by * 100000 + bz * 10000 + tx * 100 + ty * 10 + tz)) << id;
            }
}

TEST(CudaEmulator, LaunchFormsTemplateNamespaceSharedMemoryAndStream) {
  std::vector<float> h(1000);
  std::iota(h.begin(), h.end(), 0.f);
  DeviceBuffer<float> x(h);
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreate(&s));
  k_scale<float><<<dim3(std::max<int>(2, 1), 1),
                   128, 0, s>>>(x.p, 2.f, 1000);
  CUDA_OK(cudaGetLastError());
  const auto y = x.host();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(y[i], 2.f * i);

  DeviceBuffer<int> iota(300);
  inner::k_iota<<<(300 + 127) / 128, 128>>>(iota.p, 300);
  const auto io = iota.host();
  for (int i = 0; i < 300; ++i) ASSERT_EQ(io[i], i);

  DeviceBuffer<float> rev(1000);
  k_reverse_blocks<<<10, 100, 100 * sizeof(float), s>>>(x.p, rev.p);
  CUDA_OK(cudaGetLastError());
  const auto r = rev.host();
  for (int b = 0; b < 10; ++b)
    for (int t = 0; t < 100; ++t) ASSERT_EQ(r[b * 100 + t], y[b * 100 + 99 - t]);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
}

TEST(CudaEmulator, BadConfigurationRunsNothingAndIsReportedOnce) {
  DeviceBuffer<float> x(std::vector<float>(4, 1.f));
  k_touch<<<1, 2048>>>(x.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  k_touch<<<dim3(1, 70000), 4>>>(x.p);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  k_touch<<<0, 4>>>(x.p);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  k_reverse_blocks<<<1, 4, 64 * 1024>>>(x.p, x.p);  // more shared memory than a block may have
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(x.host(), std::vector<float>(4, 1.f));
  k_touch<<<1, 4, 0, reinterpret_cast<cudaStream_t>(&x)>>>(x.p);  // not a stream
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

TEST(CudaEmulator, ReverseOrderChangesWhoWinsARace) {
  const bool initial = kt_emu::reverse_order();
  DeviceBuffer<int> out(5);
  for (bool reverse : {false, true}) {
    kt_emu::set_reverse_order(reverse);
    k_last_writer<<<4, 8>>>(out.p);
    const auto o = out.host();
    EXPECT_EQ(o[0], reverse ? 0 : 3);
    for (int b = 0; b < 4; ++b) EXPECT_EQ(o[1 + b], reverse ? 0 : 7);
  }
  // a reduction with barriers and shuffles gives the same (exact) sums either way
  std::vector<float> h(2 * 64);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = (float)(i % 5);
  DeviceBuffer<float> x(h), sums(2);
  DeviceBuffer<int> counts(6);
  k_block_sum<<<2, 64>>>(x.p, sums.p, counts.p);
  const auto reversed = sums.host();
  kt_emu::set_reverse_order(false);
  k_block_sum<<<2, 64>>>(x.p, sums.p, counts.p);
  EXPECT_EQ(sums.host(), reversed);
  kt_emu::set_reverse_order(initial);
}

// ------------------------------------------------------------------------------------------------ synchronisation
TEST(CudaEmulator, BlockReductionWithShufflesAndBarriers) {
  for (unsigned threads : {32u, 96u, 256u, 1024u}) {
    const int blocks = 3;
    std::vector<float> h(blocks * threads);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = (float)(i % 17) - 8.f;  // exact in float
    DeviceBuffer<float> x(h), sums(blocks);
    DeviceBuffer<int> counts(3 * blocks);
    const auto before = kt_emu::stats();
    k_block_sum<<<blocks, threads>>>(x.p, sums.p, counts.p);
    CUDA_OK(cudaGetLastError());
    EXPECT_EQ(kt_emu::stats().parallel_blocks - before.parallel_blocks, blocks);
    const auto s = sums.host();
    const auto c = counts.host();
    for (int b = 0; b < blocks; ++b) {
      float ref = 0.f;
      for (unsigned t = 0; t < threads; ++t) ref += h[b * threads + t];
      EXPECT_EQ(s[b], ref) << threads << " threads, block " << b;
      EXPECT_EQ(c[3 * b], (int)threads / 2);
      EXPECT_EQ(c[3 * b + 1], 1);
      EXPECT_EQ(c[3 * b + 2], 0);
    }
  }
}

TEST(CudaEmulator, KernelsWithoutSynchronisationRunSequentially) {
  DeviceBuffer<float> x(std::vector<float>(256, 0.f));
  const auto before = kt_emu::stats();
  k_touch<<<1, 256>>>(x.p);
  k_scale<float><<<4, 64>>>(x.p, 3.f, 256);
  const auto after = kt_emu::stats();
  EXPECT_EQ(after.launches - before.launches, 2);
  EXPECT_EQ(after.parallel_blocks, before.parallel_blocks);
  EXPECT_EQ(x.host(), std::vector<float>(256, 3.f));
}

TEST(CudaEmulator, ShufflesFollowTheCudaLaneRules) {
  DeviceBuffer<int> out(4 * 64);
  // width 32: idx 5 reads lane 5; up 3 keeps lanes 0-2; down 3 keeps lanes 29-31; xor 6 pairs 0<->6, 1<->7, ...
  k_shuffles<<<1, 64>>>(out.p, 32);
  auto o = out.host();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(o[4 * t], 5);
    EXPECT_EQ(o[4 * t + 1], lane >= 3 ? lane - 3 : lane);
    EXPECT_EQ(o[4 * t + 2], lane <= 28 ? lane + 3 : lane);
    EXPECT_EQ(o[4 * t + 3], lane ^ 6);
  }
  // width 8: segments of 8 lanes; idx 5 reads lane 5 of the own segment; xor 6 stays in the segment
  k_shuffles<<<1, 64>>>(out.p, 8);
  o = out.host();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, seg = lane / 8 * 8, in = lane % 8;
    EXPECT_EQ(o[4 * t], seg + 5);
    EXPECT_EQ(o[4 * t + 1], in >= 3 ? lane - 3 : lane);
    EXPECT_EQ(o[4 * t + 2], in + 3 < 8 ? lane + 3 : lane);
    EXPECT_EQ(o[4 * t + 3], lane ^ 6);
  }
  // explicit values: lane 13 gets lane 10 (up), lane 16 (down), lane 11 (xor) at width 32
  k_shuffles<<<1, 32>>>(out.p, 32);
  o = out.host();
  EXPECT_EQ(o[4 * 13 + 1], 10);
  EXPECT_EQ(o[4 * 13 + 2], 16);
  EXPECT_EQ(o[4 * 13 + 3], 11);
}

TEST(CudaEmulator, WarpUniformExitsAndPartialMasksAreLegal) {
  DeviceBuffer<int> out(std::vector<int>(64, -1));
  k_first_warp_only<<<1, 64>>>(out.p);
  CUDA_OK(cudaGetLastError());
  const auto o = out.host();
  for (int lane = 0; lane < 32; ++lane) {
    int v = lane + (lane ^ 1);
    if (lane < 16) {
      const int partner = lane ^ 2;
      v += partner + (partner ^ 1);
    }
    EXPECT_EQ(o[lane], v) << lane;
  }
  for (int t = 32; t < 64; ++t) EXPECT_EQ(o[t], -1);
}

// ------------------------------------------------------------------------------------------------ poisoning
TEST(CudaEmulator, FreshDeviceMemoryAndSharedMemoryArePoisoned) {
  DeviceBuffer<float> fresh(100);
  for (float v : fresh.host()) ASSERT_EQ(std::memcmp(&v, "\x7f\x7f\x7f\x7f", 4), 0);
  EXPECT_GT(poison_float(), 3e38f);
  // every block starts with poisoned shared memory, whatever the previous block left there
  DeviceBuffer<float> out(3);
  k_read_shared<<<3, 1>>>(out.p, 1);
  EXPECT_EQ(out.host(), std::vector<float>(3, 1.5f));
  k_read_shared<<<3, 1>>>(out.p, 0);
  EXPECT_EQ(out.host(), std::vector<float>(3, poison_float()));
}

// ------------------------------------------------------------------------------------------------ strictness
class CudaEmulatorDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(CudaEmulatorDeathTest, DivergentSyncthreadsAborts) {
  DeviceBuffer<int> out(64);
  EXPECT_DEATH(k_early_return_then_barrier<<<2, 64>>>(out.p, 40),
               "divergent __syncthreads in kernel 'k_early_return_then_barrier'.*block \\(0,0,0\\).*thread 40 has "
               "returned");
  EXPECT_DEATH(k_first_threads_return<<<1, 64>>>(out.p), "divergent __syncthreads.*thread 3 waits.*thread 0 has");
}

TEST_F(CudaEmulatorDeathTest, DivergentShufflesAbort) {
  DeviceBuffer<float> f(64);
  DeviceBuffer<int> i(64);
  EXPECT_DEATH(k_half_warp_shuffle<<<1, 64>>>(f.p), "divergent __shfl_down_sync in kernel 'k_half_warp_shuffle'");
  EXPECT_DEATH(k_reads_lane_outside_mask<<<1, 32>>>(i.p), "thread 15 \\(lane 15\\) reads lane 16, which is not in "
                                                          "the mask");
  EXPECT_DEATH(k_barrier_and_shuffle_mixed<<<1, 64>>>(i.p), "divergent __shfl_down_sync.*waits at __syncthreads");
  DeviceBuffer<int> wide(4 * 48);
  EXPECT_DEATH(k_shuffles<<<1, 48>>>(wide.p, 32), "reads lane .*which does not exist");
  EXPECT_DEATH(k_shuffle_vs_syncwarp<<<1, 32>>>(i.p),
               "divergent warp operations .*thread 0 calls __shfl_xor_sync .*thread 16, named in its mask, calls "
               "__syncwarp");
}

TEST_F(CudaEmulatorDeathTest, HostAndFreedPointersAreRejectedAtLaunch) {
  std::vector<float> host(32, 0.f);
  EXPECT_DEATH(k_touch<<<1, 32>>>(host.data()),
               "kernel 'k_touch' \\(launched at .*test_emulator.cu:[0-9]+\\): argument 0 = .* is not in any live "
               "device allocation");
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 32 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_DEATH(k_touch<<<1, 32>>>(d), "argument 0 .*not in any live device allocation \\(it points into memory "
                                      "already released with cudaFree\\)");
  EXPECT_DEATH(__syncthreads(), "__syncthreads called outside a kernel");
}

// ------------------------------------------------------------------------------------------------ runtime API
TEST(CudaEmulator, CopiesAreCheckedAgainstAllocationsAndKinds) {
  DeviceBuffer<float> d(8);
  std::vector<float> h(8, 2.f);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 8 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 8 * sizeof(float), cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), d.p, 8 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d.p + 1, h.data(), 8 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(d.p + 4, 0, 5 * sizeof(float)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(d.p + 4, 0, 4 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), d.p, 8 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(h, (std::vector<float>{2, 2, 2, 2, 0, 0, 0, 0}));
  EXPECT_EQ(cudaFree(h.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(CudaEmulator, MemoryLimitMakesCudaMallocFail) {
  const std::size_t used = kt_emu::stats().bytes_in_use;
  kt_emu::set_memory_limit(used + 1000);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 2000), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaMalloc(&p, 1000), cudaSuccess);
  kt_emu::set_memory_limit(SIZE_MAX);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(kt_emu::stats().bytes_in_use, used);
}

TEST(CudaEmulator, DeviceQueries) {
  int n = 0;
  CUDA_OK(cudaGetDeviceCount(&n));
  EXPECT_EQ(n, 1);
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  EXPECT_STRNE(prop.name, "");
  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(cudaGetDeviceProperties(&prop, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

// ------------------------------------------------------------------------------------------------ cuBLAS
/// Row-major reference of the column-major C = alpha op(A) op(B) + beta C (written independently of the
/// emulator: element (i, j) of a column-major matrix with leading dimension ld is at i + j * ld).
void host_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& A, int lda,
               const std::vector<float>& B, int ldb, float beta, std::vector<float>& C, int ldc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        const float a = ta ? A[p + i * lda] : A[i + p * lda];
        const float b = tb ? B[j + p * ldb] : B[p + j * ldb];
        s += static_cast<double>(a) * b;
      }
      C[i + j * ldc] = static_cast<float>(alpha * s + beta * C[i + j * ldc]);
    }
}

TEST(CudaEmulator, ReferenceSgemmMatchesAHostGemmForEveryTransposeAndBatch) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-4, 4);  // integer data: every sum is exact
  const int m = 5, n = 4, k = 3, batches = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.f, 0.5f}) {
        const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 1, ldc = m + 3;
        const int sa = lda * (ta ? m : k), sb = ldb * (tb ? k : n), sc = ldc * n;
        std::vector<float> A(sa * batches), B(sb * batches), C(sc * batches);
        for (auto* v : {&A, &B, &C})
          for (float& x : *v) x = (float)small(rng);
        DeviceBuffer<float> dA(A), dB(B), dC(C);
        const float alpha = 2.f;
        ASSERT_EQ(cublasSgemmStridedBatched(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                                            &alpha, dA.p, lda, sa, dB.p, ldb, sb, &beta, dC.p, ldc, sc, batches),
                  CUBLAS_STATUS_SUCCESS);
        for (int b = 0; b < batches; ++b) {
          std::vector<float> a(A.begin() + b * sa, A.begin() + (b + 1) * sa);
          std::vector<float> bb(B.begin() + b * sb, B.begin() + (b + 1) * sb);
          std::vector<float> c(C.begin() + b * sc, C.begin() + (b + 1) * sc);
          host_gemm(ta, tb, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc);
          std::copy(c.begin(), c.end(), C.begin() + b * sc);
        }
        EXPECT_EQ(dC.host(), C) << "ta " << ta << " tb " << tb << " beta " << beta;
      }
  // beta = 0 never reads C (it may be uninitialised)
  DeviceBuffer<float> A(std::vector<float>{1, 2}), B(std::vector<float>{3}), C(2);
  const float one = 1.f, zero = 0.f;
  ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 1, &one, A.p, 2, B.p, 1, &zero, C.p, 2),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(C.host(), (std::vector<float>{3, 6}));
  // cuBLAS's own argument checks
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 1, &one, A.p, 1, B.p, 1, &zero, C.p, 2),
            CUBLAS_STATUS_INVALID_VALUE);  // lda < m
  EXPECT_EQ(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 1, 1, &one, A.p, 2, B.p, 1, &zero, C.p, 2),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 1, &one, A.p, 2, B.p, 1, &zero, C.p, 2),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasDestroy(h), CUBLAS_STATUS_SUCCESS);
}

TEST_F(CudaEmulatorDeathTest, SgemmOutsideTheAllocationAborts) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  DeviceBuffer<float> A(6), B(6), C(6);
  const float one = 1.f, zero = 0.f;
  // 3 x 3 needs 9 floats per operand
  EXPECT_DEATH(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 3, 3, &one, A.p, 3, B.p, 3, &zero, C.p, 3),
               "cublasSgemm: matrix C of batch 0 \\(3 x 3 stored, ld 3.*not inside one device allocation");
  float* dev_alpha = nullptr;
  ASSERT_EQ(cudaMalloc(&dev_alpha, sizeof(float)), cudaSuccess);
  EXPECT_DEATH(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, dev_alpha, A.p, 2, B.p, 2, &zero, C.p, 2),
               "alpha .* is device memory but the handle's pointer mode is HOST");
  cudaFree(dev_alpha);
  cublasDestroy(h);
}

}  // namespace
