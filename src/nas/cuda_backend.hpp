// Internal: raw-pointer CUDA twins of the nas ops (src/nas/cuda/*.cu; stubs in backend_nocuda.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kubetune::nas::cuda {

void* raw_alloc(std::size_t bytes);
void raw_free(void* p) noexcept;
enum class Copy { HostToDevice, DeviceToHost, DeviceToDevice };
void memcpy(void* dst, const void* src, std::size_t bytes, Copy kind);
void fill(float* p, std::int64_t n, float v);
void synchronize();

void conv2d_fwd(const float* x, const float* w, float* y, int N, int Cin, int H, int W, int Cout, int k,
                int stride, int pad, int Ho, int Wo);
void conv2d_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int Cin, int H,
                int W, int Cout, int k, int stride, int pad, int Ho, int Wo);
void dwconv_fwd(const float* x, const float* w, float* y, int N, int C, int H, int W, int k, int stride, int pad,
                int dil, int Ho, int Wo, bool relu_in);
void dwconv_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int C, int H, int W,
                int k, int stride, int pad, int dil, int Ho, int Wo, bool relu_in);
void pw_fwd(const float* x, const float* w, float* y, int N, int Cin, int Cout, int HW);
void pw_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int Cin, int Cout, int HW);
void relu_fwd(const float* x, float* y, std::int64_t n);
void relu_bwd(const float* y, const float* dy, float* dx, std::int64_t n);
void bn_fwd(const float* x, float* y, const float* gamma, const float* beta, float* mean, float* invstd,
            float* rmean, float* rvar, int N, int C, int HW, bool training, float momentum, float eps);
void bn_bwd(const float* x, const float* dy, float* dx, const float* gamma, const float* mean, const float* invstd,
            float* dgamma, float* dbeta, int N, int C, int HW, float scale, float* dotp, const float* beta);
void bn_apply(const float* x, float* y, const float* gamma, const float* beta, const float* mean, const float* invstd,
              int N, int C, int HW, bool relu);
void channel_dots(const float* x, const float* dy, float* out, int N, int C, int HW);
void maxpool_fwd(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo);
void maxpool_bwd(const float* x, const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho,
                 int Wo);
void avgpool_fwd(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo);
void avgpool_bwd(const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho, int Wo);
void subsample_fwd(const float* x, float* y, int N, int C, int H, int W, int offset, int Ho, int Wo);
void subsample_bwd(const float* dy, float* dx, int N, int C, int H, int W, int offset, int Ho, int Wo);
void copy_channels(const float* src, int Csrc, int src_off, float* dst, int Cdst, int dst_off, int Cn, int N,
                   int HW);
void gap_fwd(const float* x, float* y, int NC, int HW);
void gap_bwd(const float* dy, float* dx, int NC, int HW);
void linear_fwd(const float* x, const float* w, const float* b, float* y, int N, int F, int K);
void linear_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int N, int F,
                int K);
void softmax_ce(const float* logits, const float* labels, int N, int K, float* dlogits, double* loss,
                int* correct);
void axpy(float* y, const float* x, float a, std::int64_t n);
void scale(float* y, float a, std::int64_t n);
constexpr int kMaxFused = 16;
void weighted_sum(const float* const* xs, const float* w, int K, float* y, std::int64_t n);
void batched_dot(const float* const* xs, const float* dy, int K, std::int64_t n, double* out);
double dot(const float* a, const float* b, std::int64_t n);
void sgd_step(float* w, const float* g, float* buf, float lr, float momentum, float wd, std::int64_t n);
void adam_step(float* p, const float* g, float* m, float* v, float lr, float b1, float b2, float eps, float wd,
               float bc1, float bc2, std::int64_t n);

}  // namespace kubetune::nas::cuda
