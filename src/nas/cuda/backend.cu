// CUDA twins of the nas ops (kernels + cuBLAS), raw-pointer entry points declared in ../cuda_backend.hpp.
// Backward passes gather instead of scattering wherever possible, and split reductions add their float partial
// sums in a fixed order, so the float results are reproducible run to run (the per-channel batch-norm and dot
// sums are accumulated in double, whose rounding to float hides the order in all but rare ties); the max-pool
// backward uses the same "first maximum in row-major window order" rule as the CPU.
// Everything runs on the legacy default stream, so launch order is execution order. The scratch buffers and the
// reduction accumulator below are process-wide: the entry points that use them hold one backend mutex for their
// whole body, so two engines on two host threads cannot interleave inside them.
// KT_CUDA_SYNC=1 in the environment synchronises after every launch, so a kernel fault is reported by the
// kernel that caused it (for first runs on a new device, with compute-sanitizer).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "../cuda_backend.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/nas/tensor.hpp"

namespace kubetune::nas::cuda {

namespace {

#define KT_CUDA_OK(expr)                                                                                    \
  do {                                                                                                      \
    cudaError_t err_ = (expr);                                                                              \
    if (err_ != cudaSuccess) KT_THROW(Error, "nas cuda: ", #expr, " failed: ", cudaGetErrorString(err_)); \
  } while (0)
#define KT_CUBLAS_OK(expr)                                                             \
  do {                                                                                 \
    cublasStatus_t st_ = (expr);                                                       \
    if (st_ != CUBLAS_STATUS_SUCCESS) KT_THROW(Error, "nas cublas: ", #expr, " failed: status ", int(st_)); \
  } while (0)

constexpr int kThreads = 256;
inline int blocks_for(std::int64_t n) {
  std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 16 ? (b < 1 ? 1 : b) : 65535 * 16);
}
inline void check_launch() {
  KT_CUDA_OK(cudaGetLastError());
  static const bool sync = [] {
    const char* v = std::getenv("KT_CUDA_SYNC");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  if (sync) KT_CUDA_OK(cudaDeviceSynchronize());
}

/// The one lock of the process-wide scratch state (recursive: entry points call each other).
std::recursive_mutex& backend_mutex() {
  static std::recursive_mutex m;
  return m;
}
#define KT_BACKEND_LOCK const std::lock_guard<std::recursive_mutex> backend_lock_(backend_mutex())

cublasHandle_t blas() {
  static cublasHandle_t h = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { KT_CUBLAS_OK(cublasCreate(&h)); });
  return h;
}

/// Row-major C[M x N] = alpha * op(A) op(B) + beta * C, through column-major cuBLAS (C^T = op(B)^T op(A)^T).
void gemm_rm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
             float beta, float* C, int ldc) {
  KT_CUBLAS_OK(cublasSgemm(blas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B,
                           ldb, A, lda, &beta, C, ldc));
}
void gemm_rm_batched(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, long long sA,
                     const float* B, int ldb, long long sB, float beta, float* C, int ldc, long long sC, int batch) {
  KT_CUBLAS_OK(cublasSgemmStridedBatched(blas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                                         K, &alpha, B, ldb, sB, A, lda, sA, &beta, C, ldc, sC, batch));
}

/// Grows a device buffer to at least `bytes` (contents not kept). The old block is freed first (cudaFree
/// synchronises, so no queued kernel still uses it) and forgotten, so a failed growth never leaves a freed
/// pointer behind; out of memory, the tensor pool's cache is dropped and the allocation retried once.
void* grow(void*& ptr, std::size_t& cap, std::size_t bytes) {
  if (bytes <= cap && ptr) return ptr;
  if (ptr) cudaFree(ptr);
  ptr = nullptr;
  cap = 0;
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    pool_release_cached(Device::CUDA);
    e = cudaMalloc(&p, bytes);
  }
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so that the next launch check does not report it
    KT_THROW(Error, "nas cuda: scratch buffer of ", bytes, " bytes: ", cudaGetErrorString(e));
  }
  ptr = p;
  cap = bytes;
  return p;
}

/// Scratch buffers reused between calls (grown on demand), one per use so that a call can hold several.
/// Callers hold the backend lock.
enum Slot { kColumns, kBatchPartials, kDepthwisePartials, kSmall, kSlots };
void* scratch_bytes(std::size_t bytes, Slot slot) {
  static void* ptr[kSlots] = {};
  static std::size_t cap[kSlots] = {};
  return grow(ptr[slot], cap[slot], bytes);
}
float* scratch(std::size_t floats, Slot slot) { return static_cast<float*>(scratch_bytes(floats * sizeof(float), slot)); }

#define GRID_STRIDE(i, n) for (std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; i < (n); i += (std::int64_t)blockDim.x * gridDim.x)

// ------------------------------------------------------------------ elementwise
__global__ void k_fill(float* p, std::int64_t n, float v) { GRID_STRIDE(i, n) p[i] = v; }
__global__ void k_relu_f(const float* x, float* y, std::int64_t n) { GRID_STRIDE(i, n) y[i] = x[i] > 0.f ? x[i] : 0.f; }
__global__ void k_relu_b(const float* y, const float* dy, float* dx, std::int64_t n) {
  GRID_STRIDE(i, n) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}
__global__ void k_axpy(float* y, const float* x, float a, std::int64_t n) { GRID_STRIDE(i, n) y[i] += a * x[i]; }
__global__ void k_scale(float* y, float a, std::int64_t n) { GRID_STRIDE(i, n) y[i] *= a; }
/// dst[i] += sum_b src[b * n + i]
__global__ void k_sum_batches(const float* src, float* dst, int batches, std::int64_t n) {
  GRID_STRIDE(i, n) {
    float s = 0.f;
    for (int b = 0; b < batches; ++b) s += src[b * n + i];
    dst[i] += s;
  }
}

struct FusedArgs {
  const float* p[kMaxFused];
  float w[kMaxFused];
};
__global__ void k_weighted_sum(FusedArgs a, int K, float* y, std::int64_t n) {
  GRID_STRIDE(i, n) {
    float s = 0.f;
    for (int k = 0; k < K; ++k) s += a.w[k] * a.p[k][i];
    y[i] = s;
  }
}
__global__ void k_batched_dot(FusedArgs a, int K, const float* dy, std::int64_t n, double* out) {
  __shared__ double sh[kMaxFused][32];
  double acc[kMaxFused];
  for (int k = 0; k < K; ++k) acc[k] = 0.0;
  GRID_STRIDE(i, n) {
    const float d = dy[i];
    for (int k = 0; k < K; ++k) acc[k] += static_cast<double>(a.p[k][i]) * d;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int k = 0; k < K; ++k) {
    double v = acc[k];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (lane == 0) sh[k][warp] = v;
  }
  __syncthreads();
  if (threadIdx.x < K) {
    double s = 0.0;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += sh[threadIdx.x][w];
    atomicAdd(out + threadIdx.x, s);
  }
}

// ------------------------------------------------------------------ convolutions
__global__ void k_im2col(const float* x, float* col, int N, int Cin, int H, int W, int k, int stride, int pad, int Ho,
                         int Wo) {
  const std::int64_t total = (std::int64_t)N * Cin * k * k * Ho * Wo;
  GRID_STRIDE(i, total) {
    int ow = i % Wo;
    std::int64_t t = i / Wo;
    int oh = t % Ho;
    t /= Ho;
    int kw = t % k;
    t /= k;
    int kh = t % k;
    t /= k;
    int c = t % Cin;
    int n = (int)(t / Cin);
    int ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
    col[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[(((std::int64_t)n * Cin + c) * H + ih) * W + iw] : 0.f;
  }
}
__global__ void k_col2im(const float* col, float* dx, int N, int Cin, int H, int W, int k, int stride, int pad, int Ho,
                         int Wo) {
  const std::int64_t total = (std::int64_t)N * Cin * H * W;
  GRID_STRIDE(i, total) {
    int iw = i % W;
    std::int64_t t = i / W;
    int ih = t % H;
    t /= H;
    int c = t % Cin;
    int n = (int)(t / Cin);
    float s = 0.f;
    for (int kh = 0; kh < k; ++kh) {
      int a = ih + pad - kh;
      if (a < 0 || a % stride) continue;
      int oh = a / stride;
      if (oh >= Ho) continue;
      for (int kw = 0; kw < k; ++kw) {
        int b = iw + pad - kw;
        if (b < 0 || b % stride) continue;
        int ow = b / stride;
        if (ow >= Wo) continue;
        s += col[((((std::int64_t)n * Cin + c) * k + kh) * k + kw) * Ho * Wo + (std::int64_t)oh * Wo + ow];
      }
    }
    dx[i] = s;
  }
}

__global__ void k_dw_fwd(const float* x, const float* w, float* y, int N, int C, int H, int W, int k, int stride,
                         int pad, int dil, int Ho, int Wo, bool relu_in) {
  const std::int64_t total = (std::int64_t)N * C * Ho * Wo;
  GRID_STRIDE(i, total) {
    int ow = i % Wo;
    std::int64_t t = i / Wo;
    int oh = t % Ho;
    std::int64_t p = t / Ho;
    int c = p % C;
    const float* xs = x + p * H * W;
    const float* wc = w + (std::int64_t)c * k * k;
    float s = 0.f;
    for (int kh = 0; kh < k; ++kh) {
      int ih = oh * stride - pad + kh * dil;
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < k; ++kw) {
        int iw = ow * stride - pad + kw * dil;
        if (iw >= 0 && iw < W) {
          const float v = xs[ih * W + iw];
          s += wc[kh * k + kw] * (relu_in ? fmaxf(v, 0.f) : v);
        }
      }
    }
    y[i] = s;
  }
}
__global__ void k_dw_bwd_x(const float* w, const float* dy, float* dx, int N, int C, int H, int W, int k, int stride,
                           int pad, int dil, int Ho, int Wo) {
  const std::int64_t total = (std::int64_t)N * C * H * W;
  GRID_STRIDE(i, total) {
    int iw = i % W;
    std::int64_t t = i / W;
    int ih = t % H;
    std::int64_t p = t / H;
    int c = p % C;
    const float* dys = dy + p * Ho * Wo;
    const float* wc = w + (std::int64_t)c * k * k;
    float s = 0.f;
    for (int kh = 0; kh < k; ++kh) {
      int a = ih + pad - kh * dil;
      if (a < 0 || a % stride) continue;
      int oh = a / stride;
      if (oh >= Ho) continue;
      for (int kw = 0; kw < k; ++kw) {
        int b = iw + pad - kw * dil;
        if (b < 0 || b % stride) continue;
        int ow = b / stride;
        if (ow < Wo) s += wc[kh * k + kw] * dys[oh * Wo + ow];
      }
    }
    dx[i] = s;
  }
}
/// Blocks (c * k * k + kh * k + kw, slice): the sum over this slice of (n, oh, ow) of dy * x, added to dw when
/// there is one slice, else written to part[idx * slices + slice] for k_dw_sum_slices (a fixed order).
__global__ void k_dw_bwd_w(const float* x, const float* dy, float* dw, float* part, int N, int C, int H, int W, int k,
                           int stride, int pad, int dil, int Ho, int Wo, bool relu_in) {
  const int idx = blockIdx.x;  // c * k * k + kh * k + kw
  const int c = idx / (k * k), kh = (idx / k) % k, kw = idx % k;
  const std::int64_t per = (std::int64_t)Ho * Wo, total = (std::int64_t)N * per;
  const std::int64_t chunk = (total + gridDim.y - 1) / gridDim.y;
  const std::int64_t lo = (std::int64_t)blockIdx.y * chunk, hi = min(total, lo + chunk);
  float s = 0.f;
  for (std::int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    int n = (int)(j / per);
    int r = (int)(j % per);
    int oh = r / Wo, ow = r % Wo;
    int ih = oh * stride - pad + kh * dil, iw = ow * stride - pad + kw * dil;
    if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
      const float v = x[(((std::int64_t)n * C + c) * H + ih) * W + iw];
      s += dy[((std::int64_t)n * C + c) * per + r] * (relu_in ? fmaxf(v, 0.f) : v);
    }
  }
  __shared__ float sh[32];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.f;
    for (int i = 0; i < (int)(blockDim.x >> 5); ++i) t += sh[i];
    if (gridDim.y == 1)
      dw[idx] += t;
    else
      part[(std::int64_t)idx * gridDim.y + blockIdx.y] = t;
  }
}
/// dw[i] += sum over s of part[i * slices + s], in slice order.
__global__ void k_dw_sum_slices(const float* part, float* dw, int slices, int n) {
  GRID_STRIDE(i, n) {
    float s = 0.f;
    for (int j = 0; j < slices; ++j) s += part[i * slices + j];
    dw[i] += s;
  }
}

// ------------------------------------------------------------------ batch norm (one block per channel)
__device__ float block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float t = 0.f;
  for (int i = 0; i < (int)(blockDim.x >> 5); ++i) t += sh[i];
  return t;
}
/// Evaluation-mode batch norm (running statistics); the training path is k_bn_stats + k_bn_stats_final + k_bn_apply.
__global__ void k_bn_eval(const float* x, float* y, const float* gamma, const float* beta, const float* rmean,
                          const float* rvar, int C, int HW, std::int64_t n, float eps) {
  GRID_STRIDE(i, n) {
    const int c = (int)((i / HW) % C);
    const float a = rsqrtf(rvar[c] + eps) * (gamma ? gamma[c] : 1.f), b = (beta ? beta[c] : 0.f) - rmean[c] * a;
    y[i] = x[i] * a + b;
  }
}
__global__ void k_bn_apply(const float* x, float* y, const float* gamma, const float* beta, const float* mean,
                           const float* invstd, int C, int HW, std::int64_t n, bool relu) {
  GRID_STRIDE(i, n) {
    const int c = (int)((i / HW) % C);
    const float a = invstd[c] * (gamma ? gamma[c] : 1.f), b = (beta ? beta[c] : 0.f) - mean[c] * a;
    const float v = x[i] * a + b;  // the training forward normalises with this kernel too: bit-identical
    y[i] = relu ? (v > 0.f ? v : 0.f) : v;  // as the CPU: NaN and -0 map to 0
  }
}
// Per-channel reductions split over (slice, channel) blocks so that a small channel count still fills the
// GPU (one block per channel left most multiprocessors idle). Partial sums are added in double into a
// per-call accumulator that the finishing kernel reads and zeroes again (all on the one default stream).
__device__ inline std::int64_t nchw_index(std::int64_t j, int c, int C, int HW) {
  return ((j / HW) * C + c) * HW + j % HW;
}
/// acc[c] += sum (x - pivot_c), acc[C + c] += sum (x - pivot_c)^2, pivot_c = x[0, c, 0] (shifted sums keep the
/// single-pass variance accurate when the mean is large against the spread).
__global__ void k_bn_stats(const float* x, double* acc, int N, int C, int HW) {
  __shared__ float sh[32];
  const int c = blockIdx.y;
  const std::int64_t M = (std::int64_t)N * HW, per = (M + gridDim.x - 1) / gridDim.x;
  const std::int64_t lo = (std::int64_t)blockIdx.x * per, hi = min(M, lo + per);
  const float piv = x[(std::int64_t)c * HW];
  float s = 0.f, q = 0.f;
  for (std::int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    const float d = x[nchw_index(j, c, C, HW)] - piv;
    s += d;
    q += d * d;
  }
  s = block_sum(s, sh);
  q = block_sum(q, sh);
  if (threadIdx.x == 0) {
    atomicAdd(acc + c, (double)s);
    atomicAdd(acc + C + c, (double)q);
  }
}
__global__ void k_bn_stats_final(const float* x, double* acc, float* mean, float* invstd, float* rmean, float* rvar,
                                 int C, int HW, std::int64_t M, float momentum, float eps) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const double s = acc[c], q = acc[C + c];
  acc[c] = 0.0;
  acc[C + c] = 0.0;
  const double dm = s / (double)M;
  const double var = fmax(q / (double)M - dm * dm, 0.0);
  const float mu = (float)((double)x[(std::int64_t)c * HW] + dm);
  mean[c] = mu;
  invstd[c] = rsqrtf((float)var + eps);
  if (rmean) rmean[c] = (1.f - momentum) * rmean[c] + momentum * mu;
  if (rvar) rvar[c] = (1.f - momentum) * rvar[c] + momentum * (float)var * (float)M / (float)(M > 1 ? M - 1 : 1);
}
/// acc[c] += sum dy, acc[C + c] += sum dy * (x - mean_c)
__global__ void k_bn_bwd_sums(const float* x, const float* dy, const float* mean, double* acc, int N, int C, int HW) {
  __shared__ float sh[32];
  const int c = blockIdx.y;
  const std::int64_t M = (std::int64_t)N * HW, per = (M + gridDim.x - 1) / gridDim.x;
  const std::int64_t lo = (std::int64_t)blockIdx.x * per, hi = min(M, lo + per);
  const float mu = mean[c];
  float a = 0.f, b = 0.f;
  for (std::int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    const std::int64_t o = nchw_index(j, c, C, HW);
    a += dy[o];
    b += dy[o] * (x[o] - mu);
  }
  a = block_sum(a, sh);
  b = block_sum(b, sh);
  if (threadIdx.x == 0) {
    atomicAdd(acc + c, (double)a);
    atomicAdd(acc + C + c, (double)b);
  }
}
/// Per channel: parameter gradients, the alpha dot term, and the coefficients of dx (coef: k1, mean dy, mean dy*xhat).
__global__ void k_bn_bwd_final(double* acc, const float* gamma, const float* beta, const float* invstd, float* dgamma,
                               float* dbeta, float* dotp, float* coef, int C, std::int64_t M, float scale) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const float sdy = (float)acc[c], sdyx = (float)acc[C + c] * invstd[c];
  acc[c] = 0.0;
  acc[C + c] = 0.0;
  if (dgamma) dgamma[c] += scale * sdyx;
  if (dbeta) dbeta[c] += scale * sdy;
  // <dy, gamma * xhat + beta> for this channel (unscaled dy): the mixed op's alpha gradient term
  if (dotp) dotp[c] = (gamma ? gamma[c] : 1.f) * sdyx + (beta ? beta[c] * sdy : 0.f);
  coef[c] = (gamma ? gamma[c] : 1.f) * invstd[c] * scale;
  coef[C + c] = sdy / (float)M;
  coef[2 * C + c] = sdyx / (float)M;
}
__global__ void k_bn_bwd_dx(const float* x, const float* dy, float* dx, const float* mean, const float* invstd,
                            const float* coef, int C, int HW, std::int64_t n) {
  GRID_STRIDE(i, n) {
    const int c = (int)((i / HW) % C);
    dx[i] = coef[c] * (dy[i] - coef[C + c] - (x[i] - mean[c]) * invstd[c] * coef[2 * C + c]);
  }
}
/// acc[c] += sum x * dy
__global__ void k_channel_dot_sums(const float* x, const float* dy, double* acc, int N, int C, int HW) {
  __shared__ float sh[32];
  const int c = blockIdx.y;
  const std::int64_t M = (std::int64_t)N * HW, per = (M + gridDim.x - 1) / gridDim.x;
  const std::int64_t lo = (std::int64_t)blockIdx.x * per, hi = min(M, lo + per);
  float a = 0.f;
  for (std::int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
    const std::int64_t o = nchw_index(j, c, C, HW);
    a += x[o] * dy[o];
  }
  a = block_sum(a, sh);
  if (threadIdx.x == 0) atomicAdd(acc + c, (double)a);
}
__global__ void k_channel_dot_final(double* acc, float* out, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  out[c] = (float)acc[c];
  acc[c] = 0.0;
}

// ------------------------------------------------------------------ pooling and reshaping
__device__ int window_argmax(const float* xs, int H, int W, int oh, int ow, int stride) {
  float m = 0.f;
  int arg = -1;
  for (int ih = max(oh * stride - 1, 0); ih <= min(oh * stride + 1, H - 1); ++ih)
    for (int iw = max(ow * stride - 1, 0); iw <= min(ow * stride + 1, W - 1); ++iw)
      if (arg < 0 || xs[ih * W + iw] > m) {
        m = xs[ih * W + iw];
        arg = ih * W + iw;
      }
  return arg;
}
__global__ void k_maxpool_f(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  const std::int64_t total = (std::int64_t)N * C * Ho * Wo;
  GRID_STRIDE(i, total) {
    int ow = i % Wo, oh = (i / Wo) % Ho;
    std::int64_t p = i / ((std::int64_t)Ho * Wo);
    const float* xs = x + p * H * W;
    y[i] = xs[window_argmax(xs, H, W, oh, ow, stride)];
  }
}
/// The outputs o in [lo, hi] whose 3x3 window (o * stride - 1 .. o * stride + 1) covers input position i.
__device__ inline void covering(int i, int stride, int n_out, int& lo, int& hi) {
  lo = i <= 1 ? 0 : (i - 1 + stride - 1) / stride;
  hi = min(n_out - 1, (i + 1) / stride);
}
__global__ void k_maxpool_b(const float* x, const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho,
                            int Wo) {
  const std::int64_t total = (std::int64_t)N * C * H * W;
  GRID_STRIDE(i, total) {
    int iw = i % W, ih = (i / W) % H;
    std::int64_t p = i / ((std::int64_t)H * W);
    const float* xs = x + p * H * W;
    int oh0, oh1, ow0, ow1;
    covering(ih, stride, Ho, oh0, oh1);
    covering(iw, stride, Wo, ow0, ow1);
    float s = 0.f;
    for (int oh = oh0; oh <= oh1; ++oh)
      for (int ow = ow0; ow <= ow1; ++ow)
        if (window_argmax(xs, H, W, oh, ow, stride) == ih * W + iw) s += dy[p * Ho * Wo + oh * Wo + ow];
    dx[i] = s;
  }
}
__global__ void k_avgpool_f(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  const std::int64_t total = (std::int64_t)N * C * Ho * Wo;
  GRID_STRIDE(i, total) {
    int ow = i % Wo, oh = (i / Wo) % Ho;
    std::int64_t p = i / ((std::int64_t)Ho * Wo);
    const float* xs = x + p * H * W;
    int h0 = max(oh * stride - 1, 0), h1 = min(oh * stride + 1, H - 1);
    int w0 = max(ow * stride - 1, 0), w1 = min(ow * stride + 1, W - 1);
    float s = 0.f;
    for (int ih = h0; ih <= h1; ++ih)
      for (int iw = w0; iw <= w1; ++iw) s += xs[ih * W + iw];
    y[i] = s / (float)((h1 - h0 + 1) * (w1 - w0 + 1));
  }
}
__global__ void k_avgpool_b(const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  const std::int64_t total = (std::int64_t)N * C * H * W;
  GRID_STRIDE(i, total) {
    int iw = i % W, ih = (i / W) % H;
    std::int64_t p = i / ((std::int64_t)H * W);
    int oh0, oh1, ow0, ow1;
    covering(ih, stride, Ho, oh0, oh1);
    covering(iw, stride, Wo, ow0, ow1);
    float s = 0.f;
    for (int oh = oh0; oh <= oh1; ++oh) {
      int h0 = max(oh * stride - 1, 0), h1 = min(oh * stride + 1, H - 1);
      for (int ow = ow0; ow <= ow1; ++ow) {
        int w0 = max(ow * stride - 1, 0), w1 = min(ow * stride + 1, W - 1);
        s += dy[p * Ho * Wo + oh * Wo + ow] / (float)((h1 - h0 + 1) * (w1 - w0 + 1));
      }
    }
    dx[i] = s;
  }
}
__global__ void k_sub_f(const float* x, float* y, int N, int C, int H, int W, int off, int Ho, int Wo) {
  const std::int64_t total = (std::int64_t)N * C * Ho * Wo;
  GRID_STRIDE(i, total) {
    int ow = i % Wo, oh = (i / Wo) % Ho;
    std::int64_t p = i / ((std::int64_t)Ho * Wo);
    y[i] = x[(p * H + 2 * oh + off) * W + 2 * ow + off];
  }
}
__global__ void k_sub_b(const float* dy, float* dx, int N, int C, int H, int W, int off, int Ho, int Wo) {
  const std::int64_t total = (std::int64_t)N * C * Ho * Wo;
  GRID_STRIDE(i, total) {
    int ow = i % Wo, oh = (i / Wo) % Ho;
    std::int64_t p = i / ((std::int64_t)Ho * Wo);
    dx[(p * H + 2 * oh + off) * W + 2 * ow + off] = dy[i];
  }
}
__global__ void k_copy_channels(const float* src, int Cs, int so, float* dst, int Cd, int doff, int Cn, int N, int HW) {
  const std::int64_t total = (std::int64_t)N * Cn * HW;
  GRID_STRIDE(i, total) {
    int r = i % HW;
    std::int64_t t = i / HW;
    int c = t % Cn;
    int n = (int)(t / Cn);
    dst[((std::int64_t)n * Cd + doff + c) * HW + r] = src[((std::int64_t)n * Cs + so + c) * HW + r];
  }
}
__global__ void k_gap_f(const float* x, float* y, int NC, int HW) {
  GRID_STRIDE(p, (std::int64_t)NC) {
    float s = 0.f;
    for (int i = 0; i < HW; ++i) s += x[p * HW + i];
    y[p] = s / (float)HW;
  }
}
__global__ void k_gap_b(const float* dy, float* dx, int NC, int HW) {
  GRID_STRIDE(i, (std::int64_t)NC * HW) dx[i] = dy[i / HW] / (float)HW;
}
__global__ void k_add_bias(float* y, const float* b, int N, int K) { GRID_STRIDE(i, (std::int64_t)N * K) y[i] += b[i % K]; }
__global__ void k_colsum_add(const float* dy, float* db, int N, int K) {
  GRID_STRIDE(k, (std::int64_t)K) {
    float s = 0.f;
    for (int n = 0; n < N; ++n) s += dy[(std::int64_t)n * K + k];
    db[k] += s;
  }
}
__global__ void k_softmax_ce(const float* logits, const float* labels, int N, int K, float* dlogits, double* loss,
                             int* correct) {
  GRID_STRIDE(n, (std::int64_t)N) {
    const float* row = logits + n * K;
    const int y = (int)labels[n];
    int arg = 0;
    for (int k = 1; k < K; ++k)
      if (row[k] > row[arg]) arg = k;
    double z = 0.0;
    for (int k = 0; k < K; ++k) z += exp((double)row[k] - row[arg]);
    const double lse = row[arg] + log(z);
    loss[n] = lse - row[y];
    correct[n] = (arg == y);
    if (dlogits)
      for (int k = 0; k < K; ++k) dlogits[n * K + k] = (float)((exp(row[k] - lse) - (k == y ? 1.0 : 0.0)) / N);
  }
}
__global__ void k_sgd(float* w, const float* g, float* buf, float lr, float mom, float wd, std::int64_t n) {
  GRID_STRIDE(i, n) {
    float d = g[i] + wd * w[i];
    buf[i] = mom * buf[i] + d;
    w[i] -= lr * buf[i];
  }
}
__global__ void k_adam(float* p, const float* g, float* m, float* v, float lr, float b1, float b2, float eps, float wd,
                       float bc1, float bc2, std::int64_t n) {
  GRID_STRIDE(i, n) {
    float gi = g[i] + wd * p[i];
    m[i] = b1 * m[i] + (1.f - b1) * gi;
    v[i] = b2 * v[i] + (1.f - b2) * gi * gi;
    p[i] -= lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
  }
}

FusedArgs fused(const float* const* xs, const float* w, int K) {
  FusedArgs a{};
  for (int k = 0; k < K; ++k) {
    a.p[k] = xs[k];
    a.w[k] = w ? w[k] : 0.f;
  }
  return a;
}

}  // namespace

// ================================================================== entry points
void* raw_alloc(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaSuccess) return p;
  cudaGetLastError();  // clear the error
  if (e == cudaErrorMemoryAllocation) return nullptr;  // the pool drops its cache and retries
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError ||
      e == cudaErrorDevicesUnavailable || e == cudaErrorNoKernelImageForDevice || e == cudaErrorSystemNotReady ||
      e == cudaErrorCompatNotSupportedOnDevice)
    KT_THROW(Unsupported, "nas: no usable CUDA device: ", cudaGetErrorString(e));
  // anything else is an earlier failure surfacing here (a kernel fault is sticky): KT_CUDA_SYNC=1 pins it down
  KT_THROW(Error, "nas cuda: allocating ", bytes, " bytes: ", cudaGetErrorString(e),
           " (an earlier kernel may have failed; rerun with KT_CUDA_SYNC=1)");
}
void raw_free(void* p) noexcept { cudaFree(p); }
void memcpy(void* dst, const void* src, std::size_t bytes, Copy kind) {
  cudaMemcpyKind k = kind == Copy::HostToDevice ? cudaMemcpyHostToDevice
                     : kind == Copy::DeviceToHost ? cudaMemcpyDeviceToHost
                                                  : cudaMemcpyDeviceToDevice;
  KT_CUDA_OK(cudaMemcpy(dst, src, bytes, k));
}
void fill(float* p, std::int64_t n, float v) {
  k_fill<<<blocks_for(n), kThreads>>>(p, n, v);
  check_launch();
}
void synchronize() { KT_CUDA_OK(cudaDeviceSynchronize()); }

void conv2d_fwd(const float* x, const float* w, float* y, int N, int Cin, int H, int W, int Cout, int k, int stride,
                int pad, int Ho, int Wo) {
  KT_BACKEND_LOCK;
  const int K = Cin * k * k, P = Ho * Wo;
  float* col = scratch((std::size_t)N * K * P, kColumns);
  k_im2col<<<blocks_for((std::int64_t)N * K * P), kThreads>>>(x, col, N, Cin, H, W, k, stride, pad, Ho, Wo);
  check_launch();
  gemm_rm_batched(false, false, Cout, P, K, 1.f, w, K, 0, col, P, (long long)K * P, 0.f, y, P, (long long)Cout * P, N);
}
void conv2d_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int Cin, int H, int W,
                int Cout, int k, int stride, int pad, int Ho, int Wo) {
  KT_BACKEND_LOCK;
  const int K = Cin * k * k, P = Ho * Wo;
  float* col = scratch((std::size_t)N * K * P, kColumns);
  if (dw) {
    k_im2col<<<blocks_for((std::int64_t)N * K * P), kThreads>>>(x, col, N, Cin, H, W, k, stride, pad, Ho, Wo);
    check_launch();
    float* part = scratch((std::size_t)N * Cout * K, kBatchPartials);
    gemm_rm_batched(false, true, Cout, K, P, 1.f, dy, P, (long long)Cout * P, col, P, (long long)K * P, 0.f, part, K,
                    (long long)Cout * K, N);
    k_sum_batches<<<blocks_for((std::int64_t)Cout * K), kThreads>>>(part, dw, N, (std::int64_t)Cout * K);
    check_launch();
  }
  gemm_rm_batched(true, false, K, P, Cout, 1.f, w, K, 0, dy, P, (long long)Cout * P, 0.f, col, P, (long long)K * P, N);
  k_col2im<<<blocks_for((std::int64_t)N * Cin * H * W), kThreads>>>(col, dx, N, Cin, H, W, k, stride, pad, Ho, Wo);
  check_launch();
}
void dwconv_fwd(const float* x, const float* w, float* y, int N, int C, int H, int W, int k, int stride, int pad,
                int dil, int Ho, int Wo, bool relu_in) {
  k_dw_fwd<<<blocks_for((std::int64_t)N * C * Ho * Wo), kThreads>>>(x, w, y, N, C, H, W, k, stride, pad, dil, Ho, Wo,
                                                                     relu_in);
  check_launch();
}
void dwconv_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int C, int H, int W,
                int k, int stride, int pad, int dil, int Ho, int Wo, bool relu_in) {
  KT_BACKEND_LOCK;
  k_dw_bwd_x<<<blocks_for((std::int64_t)N * C * H * W), kThreads>>>(w, dy, dx, N, C, H, W, k, stride, pad, dil, Ho,
                                                                     Wo);
  check_launch();
  if (dw) {
    const std::int64_t total = (std::int64_t)N * Ho * Wo;
    std::int64_t slices = (total + 8191) / 8192;  // about 8k products per block
    slices = slices < 1 ? 1 : (slices > 64 ? 64 : slices);
    const int taps = C * k * k;
    float* part = slices > 1 ? scratch((std::size_t)taps * slices, kDepthwisePartials) : nullptr;
    k_dw_bwd_w<<<dim3(taps, (unsigned)slices), kThreads>>>(x, dy, dw, part, N, C, H, W, k, stride, pad, dil, Ho, Wo,
                                                             relu_in);
    check_launch();
    if (slices > 1) {
      k_dw_sum_slices<<<blocks_for(taps), kThreads>>>(part, dw, (int)slices, taps);
      check_launch();
    }
  }
}
void pw_fwd(const float* x, const float* w, float* y, int N, int Cin, int Cout, int HW) {
  gemm_rm_batched(false, false, Cout, HW, Cin, 1.f, w, Cin, 0, x, HW, (long long)Cin * HW, 0.f, y, HW,
                  (long long)Cout * HW, N);
}
void pw_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int Cin, int Cout, int HW) {
  gemm_rm_batched(true, false, Cin, HW, Cout, 1.f, w, Cin, 0, dy, HW, (long long)Cout * HW, 0.f, dx, HW,
                  (long long)Cin * HW, N);
  if (dw) {
    KT_BACKEND_LOCK;
    float* part = scratch((std::size_t)N * Cout * Cin, kBatchPartials);
    gemm_rm_batched(false, true, Cout, Cin, HW, 1.f, dy, HW, (long long)Cout * HW, x, HW, (long long)Cin * HW, 0.f,
                    part, Cin, (long long)Cout * Cin, N);
    k_sum_batches<<<blocks_for((std::int64_t)Cout * Cin), kThreads>>>(part, dw, N, (std::int64_t)Cout * Cin);
    check_launch();
  }
}
void relu_fwd(const float* x, float* y, std::int64_t n) {
  k_relu_f<<<blocks_for(n), kThreads>>>(x, y, n);
  check_launch();
}
void relu_bwd(const float* y, const float* dy, float* dx, std::int64_t n) {
  k_relu_b<<<blocks_for(n), kThreads>>>(y, dy, dx, n);
  check_launch();
}
namespace {
/// Zero-initialised accumulator of the split per-channel reductions (2C doubles) plus 3C floats of
/// coefficients; the finishing kernels zero the accumulator again after reading it.
struct ReduceScratch {
  double* acc;
  float* coef;
};
/// Callers hold the backend lock.
ReduceScratch reduce_scratch(int C) {
  static void* ptr = nullptr;
  static std::size_t bytes_cap = 0;
  static int cap = 0;
  if (C > cap || !ptr) {
    cap = 0;
    const std::size_t bytes = (std::size_t)C * (2 * sizeof(double) + 3 * sizeof(float));
    grow(ptr, bytes_cap, bytes);
    KT_CUDA_OK(cudaMemset(ptr, 0, bytes));
    cap = C;
  }
  return {static_cast<double*>(ptr), reinterpret_cast<float*>(static_cast<double*>(ptr) + 2 * (std::size_t)cap)};
}
/// Slices per channel: about 4,096 elements each, at most 256.
int reduce_slices(std::int64_t M) {
  const std::int64_t s = (M + 4095) / 4096;
  return static_cast<int>(s < 1 ? 1 : (s > 256 ? 256 : s));
}
}  // namespace

void bn_fwd(const float* x, float* y, const float* gamma, const float* beta, float* mean, float* invstd, float* rmean,
            float* rvar, int N, int C, int HW, bool training, float momentum, float eps) {
  if (!training) {  // running statistics
    const std::int64_t n = (std::int64_t)N * C * HW;
    k_bn_eval<<<blocks_for(n), kThreads>>>(x, y, gamma, beta, rmean, rvar, C, HW, n, eps);
    check_launch();
    return;
  }
  KT_BACKEND_LOCK;
  const std::int64_t M = (std::int64_t)N * HW;
  ReduceScratch r = reduce_scratch(C);
  k_bn_stats<<<dim3(reduce_slices(M), C), kThreads>>>(x, r.acc, N, C, HW);
  check_launch();
  k_bn_stats_final<<<(C + 127) / 128, 128>>>(x, r.acc, mean, invstd, rmean, rvar, C, HW, M, momentum, eps);
  check_launch();
  bn_apply(x, y, gamma, beta, mean, invstd, N, C, HW, false);
}
void bn_bwd(const float* x, const float* dy, float* dx, const float* gamma, const float* mean, const float* invstd,
            float* dgamma, float* dbeta, int N, int C, int HW, float scale, float* dotp, const float* beta) {
  KT_BACKEND_LOCK;
  const std::int64_t M = (std::int64_t)N * HW;
  ReduceScratch r = reduce_scratch(C);
  k_bn_bwd_sums<<<dim3(reduce_slices(M), C), kThreads>>>(x, dy, mean, r.acc, N, C, HW);
  check_launch();
  k_bn_bwd_final<<<(C + 127) / 128, 128>>>(r.acc, gamma, beta, invstd, dgamma, dbeta, dotp, r.coef, C, M, scale);
  check_launch();
  const std::int64_t n = M * C;
  k_bn_bwd_dx<<<blocks_for(n), kThreads>>>(x, dy, dx, mean, invstd, r.coef, C, HW, n);
  check_launch();
}
void bn_apply(const float* x, float* y, const float* gamma, const float* beta, const float* mean, const float* invstd,
              int N, int C, int HW, bool relu) {
  const std::int64_t n = (std::int64_t)N * C * HW;
  k_bn_apply<<<blocks_for(n), kThreads>>>(x, y, gamma, beta, mean, invstd, C, HW, n, relu);
  check_launch();
}
void channel_dots(const float* x, const float* dy, float* out, int N, int C, int HW) {
  KT_BACKEND_LOCK;
  ReduceScratch r = reduce_scratch(C);
  k_channel_dot_sums<<<dim3(reduce_slices((std::int64_t)N * HW), C), kThreads>>>(x, dy, r.acc, N, C, HW);
  check_launch();
  k_channel_dot_final<<<(C + 127) / 128, 128>>>(r.acc, out, C);
  check_launch();
}
void maxpool_fwd(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  k_maxpool_f<<<blocks_for((std::int64_t)N * C * Ho * Wo), kThreads>>>(x, y, N, C, H, W, stride, Ho, Wo);
  check_launch();
}
void maxpool_bwd(const float* x, const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  k_maxpool_b<<<blocks_for((std::int64_t)N * C * H * W), kThreads>>>(x, dy, dx, N, C, H, W, stride, Ho, Wo);
  check_launch();
}
void avgpool_fwd(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  k_avgpool_f<<<blocks_for((std::int64_t)N * C * Ho * Wo), kThreads>>>(x, y, N, C, H, W, stride, Ho, Wo);
  check_launch();
}
void avgpool_bwd(const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho, int Wo) {
  k_avgpool_b<<<blocks_for((std::int64_t)N * C * H * W), kThreads>>>(dy, dx, N, C, H, W, stride, Ho, Wo);
  check_launch();
}
void subsample_fwd(const float* x, float* y, int N, int C, int H, int W, int offset, int Ho, int Wo) {
  k_sub_f<<<blocks_for((std::int64_t)N * C * Ho * Wo), kThreads>>>(x, y, N, C, H, W, offset, Ho, Wo);
  check_launch();
}
void subsample_bwd(const float* dy, float* dx, int N, int C, int H, int W, int offset, int Ho, int Wo) {
  k_sub_b<<<blocks_for((std::int64_t)N * C * Ho * Wo), kThreads>>>(dy, dx, N, C, H, W, offset, Ho, Wo);
  check_launch();
}
void copy_channels(const float* src, int Csrc, int src_off, float* dst, int Cdst, int dst_off, int Cn, int N, int HW) {
  k_copy_channels<<<blocks_for((std::int64_t)N * Cn * HW), kThreads>>>(src, Csrc, src_off, dst, Cdst, dst_off, Cn, N,
                                                                       HW);
  check_launch();
}
void gap_fwd(const float* x, float* y, int NC, int HW) {
  k_gap_f<<<blocks_for(NC), kThreads>>>(x, y, NC, HW);
  check_launch();
}
void gap_bwd(const float* dy, float* dx, int NC, int HW) {
  k_gap_b<<<blocks_for((std::int64_t)NC * HW), kThreads>>>(dy, dx, NC, HW);
  check_launch();
}
void linear_fwd(const float* x, const float* w, const float* b, float* y, int N, int F, int K) {
  gemm_rm(false, true, N, K, F, 1.f, x, F, w, F, 0.f, y, K);
  if (b) {
    k_add_bias<<<blocks_for((std::int64_t)N * K), kThreads>>>(y, b, N, K);
    check_launch();
  }
}
void linear_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int N, int F, int K) {
  gemm_rm(false, false, N, F, K, 1.f, dy, K, w, F, 0.f, dx, F);
  if (dw) gemm_rm(true, false, K, F, N, 1.f, dy, K, x, F, 1.f, dw, F);
  if (db) {
    k_colsum_add<<<blocks_for(K), kThreads>>>(dy, db, N, K);
    check_launch();
  }
}
void softmax_ce(const float* logits, const float* labels, int N, int K, float* dlogits, double* loss, int* correct) {
  // validate labels on the host (cheap: N floats) so errors name the row like the CPU path
  std::vector<float> lab(N);
  memcpy(lab.data(), labels, N * sizeof(float), Copy::DeviceToHost);
  for (int n = 0; n < N; ++n)
    KT_CHECK(lab[n] >= 0 && lab[n] < K, InvalidArgument, "softmax_cross_entropy: label ", lab[n], " at row ", n,
             " outside [0, ", K, ")");
  KT_BACKEND_LOCK;
  double* dl = static_cast<double*>(scratch_bytes((std::size_t)N * (sizeof(double) + sizeof(int)), kSmall));
  int* dc = reinterpret_cast<int*>(dl + N);
  k_softmax_ce<<<blocks_for(N), kThreads>>>(logits, labels, N, K, dlogits, dl, dc);
  check_launch();
  std::vector<double> hl(N);
  std::vector<int> hc(N);
  KT_CUDA_OK(cudaMemcpy(hl.data(), dl, N * sizeof(double), cudaMemcpyDeviceToHost));
  KT_CUDA_OK(cudaMemcpy(hc.data(), dc, N * sizeof(int), cudaMemcpyDeviceToHost));
  double s = 0;
  int c = 0;
  for (int n = 0; n < N; ++n) {
    s += hl[n];
    c += hc[n];
  }
  *loss = s / N;
  *correct = c;
}
void axpy(float* y, const float* x, float a, std::int64_t n) {
  k_axpy<<<blocks_for(n), kThreads>>>(y, x, a, n);
  check_launch();
}
void scale(float* y, float a, std::int64_t n) {
  k_scale<<<blocks_for(n), kThreads>>>(y, a, n);
  check_launch();
}
void weighted_sum(const float* const* xs, const float* w, int K, float* y, std::int64_t n) {
  k_weighted_sum<<<blocks_for(n), kThreads>>>(fused(xs, w, K), K, y, n);
  check_launch();
}
void batched_dot(const float* const* xs, const float* dy, int K, std::int64_t n, double* out) {
  KT_BACKEND_LOCK;
  double* d = static_cast<double*>(scratch_bytes(kMaxFused * sizeof(double), kSmall));
  KT_CUDA_OK(cudaMemset(d, 0, kMaxFused * sizeof(double)));
  const int blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
  k_batched_dot<<<blocks, kThreads>>>(fused(xs, nullptr, K), K, dy, n, d);
  check_launch();
  KT_CUDA_OK(cudaMemcpy(out, d, K * sizeof(double), cudaMemcpyDeviceToHost));
}
double dot(const float* a, const float* b, std::int64_t n) {
  double r = 0;
  const float* xs[1] = {a};
  batched_dot(xs, b, 1, n, &r);
  return r;
}
void sgd_step(float* w, const float* g, float* buf, float lr, float momentum, float wd, std::int64_t n) {
  k_sgd<<<blocks_for(n), kThreads>>>(w, g, buf, lr, momentum, wd, n);
  check_launch();
}
void adam_step(float* p, const float* g, float* m, float* v, float lr, float b1, float b2, float eps, float wd,
               float bc1, float bc2, std::int64_t n) {
  k_adam<<<blocks_for(n), kThreads>>>(p, g, m, v, lr, b1, b2, eps, wd, bc1, bc2, n);
  check_launch();
}

}  // namespace kubetune::nas::cuda
