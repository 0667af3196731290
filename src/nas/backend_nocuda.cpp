// CPU-only build: every CUDA entry point of the nas module throws Unsupported("built without CUDA").
#include "kubetune/core/error.hpp"
#include "cuda_backend.hpp"

namespace kubetune::nas::cuda {

namespace {
[[noreturn]] void no_cuda() { KT_THROW(Unsupported, "nas: device 'cuda' requested but kubetune was built without CUDA"); }
}  // namespace

void* raw_alloc(std::size_t bytes) { no_cuda(); }
void raw_free(void* p) noexcept {}
void memcpy(void* dst, const void* src, std::size_t bytes, Copy kind) { no_cuda(); }
void fill(float* p, std::int64_t n, float v) { no_cuda(); }
void synchronize() { no_cuda(); }
void conv2d_fwd(const float* x, const float* w, float* y, int N, int Cin, int H, int W, int Cout, int k, int stride, int pad, int Ho, int Wo) { no_cuda(); }
void conv2d_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int Cin, int H, int W, int Cout, int k, int stride, int pad, int Ho, int Wo) { no_cuda(); }
void dwconv_fwd(const float* x, const float* w, float* y, int N, int C, int H, int W, int k, int stride, int pad, int dil, int Ho, int Wo, bool relu_in) { no_cuda(); }
void dwconv_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int C, int H, int W, int k, int stride, int pad, int dil, int Ho, int Wo, bool relu_in) { no_cuda(); }
void pw_fwd(const float* x, const float* w, float* y, int N, int Cin, int Cout, int HW) { no_cuda(); }
void pw_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, int N, int Cin, int Cout, int HW) { no_cuda(); }
void relu_fwd(const float* x, float* y, std::int64_t n) { no_cuda(); }
void relu_bwd(const float* y, const float* dy, float* dx, std::int64_t n) { no_cuda(); }
void bn_fwd(const float* x, float* y, const float* gamma, const float* beta, float* mean, float* invstd, float* rmean, float* rvar, int N, int C, int HW, bool training, float momentum, float eps) { no_cuda(); }
void bn_bwd(const float* x, const float* dy, float* dx, const float* gamma, const float* mean, const float* invstd, float* dgamma, float* dbeta, int N, int C, int HW, float scale, float* dotp, const float* beta) { no_cuda(); }
void bn_apply(const float* x, float* y, const float* gamma, const float* beta, const float* mean, const float* invstd, int N, int C, int HW, bool relu) { no_cuda(); }
void channel_dots(const float* x, const float* dy, float* out, int N, int C, int HW) { no_cuda(); }
void maxpool_fwd(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo) { no_cuda(); }
void maxpool_bwd(const float* x, const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho, int Wo) { no_cuda(); }
void avgpool_fwd(const float* x, float* y, int N, int C, int H, int W, int stride, int Ho, int Wo) { no_cuda(); }
void avgpool_bwd(const float* dy, float* dx, int N, int C, int H, int W, int stride, int Ho, int Wo) { no_cuda(); }
void subsample_fwd(const float* x, float* y, int N, int C, int H, int W, int offset, int Ho, int Wo) { no_cuda(); }
void subsample_bwd(const float* dy, float* dx, int N, int C, int H, int W, int offset, int Ho, int Wo) { no_cuda(); }
void copy_channels(const float* src, int Csrc, int src_off, float* dst, int Cdst, int dst_off, int Cn, int N, int HW) { no_cuda(); }
void gap_fwd(const float* x, float* y, int NC, int HW) { no_cuda(); }
void gap_bwd(const float* dy, float* dx, int NC, int HW) { no_cuda(); }
void linear_fwd(const float* x, const float* w, const float* b, float* y, int N, int F, int K) { no_cuda(); }
void linear_bwd(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, int N, int F, int K) { no_cuda(); }
void softmax_ce(const float* logits, const float* labels, int N, int K, float* dlogits, double* loss, int* correct) { no_cuda(); }
void axpy(float* y, const float* x, float a, std::int64_t n) { no_cuda(); }
void scale(float* y, float a, std::int64_t n) { no_cuda(); }
void weighted_sum(const float* const* xs, const float* w, int K, float* y, std::int64_t n) { no_cuda(); }
void batched_dot(const float* const* xs, const float* dy, int K, std::int64_t n, double* out) { no_cuda(); }
double dot(const float* a, const float* b, std::int64_t n) { no_cuda(); }
void sgd_step(float* w, const float* g, float* buf, float lr, float momentum, float wd, std::int64_t n) { no_cuda(); }
void adam_step(float* p, const float* g, float* m, float* v, float lr, float b1, float b2, float eps, float wd, float bc1, float bc2, std::int64_t n) { no_cuda(); }

}  // namespace kubetune::nas::cuda
