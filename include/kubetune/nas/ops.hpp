// DARTS building blocks, forward and backward, on CPU (OpenMP + Eigen GEMM) and CUDA (kernels + cuBLAS).
//
// Every op dispatches on its input's device; inputs of one call must share a device. Backward functions
// return dL/dx and ADD parameter gradients into the given tensors (so callers zero them once per step).
// Shapes are NCHW. Conventions follow PyTorch (the reference DARTS implementation is PyTorch):
// weights [Cout, Cin, k, k] for dense conv, [C, 1, k, k] for depthwise, [Cout, Cin] for pointwise and linear.
#pragma once

#include <vector>

#include "kubetune/nas/tensor.hpp"

namespace kubetune::nas {

/// Threads of the CPU ops called on the CALLING thread (<= 0: all hardware threads; default: all). The setting
/// belongs to the calling thread, not to the process: other threads, and OpenMP's own default
/// (omp_get_max_threads), are unchanged. A Darts object applies its `DartsConfig::n_threads` the same way,
/// through a ThreadsScope around each call, so engines with different thread counts do not disturb each other.
void set_n_threads(int n) noexcept;
/// The calling thread's resolved op thread count (>= 1).
int n_threads() noexcept;
/// Deprecated aliases of set_n_threads / n_threads (kept for one release).
inline void set_num_threads(int n) noexcept { set_n_threads(n); }
inline int num_threads() noexcept { return n_threads(); }

/// Sets the calling thread's op thread count to `n` (n <= 0: leaves it as it is) for the scope's lifetime and
/// restores the previous value afterwards.
class ThreadsScope {
 public:
  explicit ThreadsScope(int n) noexcept;
  ~ThreadsScope();
  ThreadsScope(const ThreadsScope&) = delete;
  ThreadsScope& operator=(const ThreadsScope&) = delete;

 private:
  int previous_;
};

/// Output extent of a 2-D window op.
int conv_out_size(int in, int k, int stride, int pad, int dilation = 1) noexcept;

// ----------------------------------------------------------------- convolutions
/// Dense convolution (used for the 3x3 stem), no bias.
Tensor conv2d_forward(const Tensor& x, const Tensor& w, int stride, int pad);
Tensor conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy, int stride, int pad, Tensor* dw);
/// Depthwise convolution, one k x k filter per channel, with stride and dilation. With `relu_input` the
/// convolution reads relu(x) on the fly (x is the pre-activation; no ReLU tensor is made) and the backward
/// returns dL/d relu(x): the caller applies the ReLU mask (relu_backward(x, .)), once for all consumers.
Tensor depthwise_conv2d_forward(const Tensor& x, const Tensor& w, int stride, int pad, int dilation,
                                bool relu_input = false);
Tensor depthwise_conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy, int stride, int pad,
                                 int dilation, Tensor* dw, bool relu_input = false);
/// 1x1 convolution as a GEMM per image: y[n] = W x[n] with W [Cout, Cin].
Tensor pointwise_conv_forward(const Tensor& x, const Tensor& w);
Tensor pointwise_conv_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dw);

// ----------------------------------------------------------------- activations / normalisation
Tensor relu_forward(const Tensor& x);
/// Uses the forward OUTPUT y as the mask (y > 0); the input x works as well (x > 0 exactly where y > 0).
Tensor relu_backward(const Tensor& y, const Tensor& dy);

/// Per-channel statistics saved by batch_norm_forward in training mode.
struct BatchNormCache {
  Tensor mean;    ///< [C]
  Tensor invstd;  ///< [C], 1/sqrt(var + eps) with the biased variance
};
/// Batch norm (Ioffe & Szegedy 2015). training: batch statistics (saved in `cache`), running stats
/// updated with `momentum` as PyTorch does (unbiased variance); otherwise running stats are used.
/// gamma/beta may be null (affine = false). running_mean/var may be null in training mode.
Tensor batch_norm_forward(const Tensor& x, const Tensor* gamma, const Tensor* beta, bool training,
                          BatchNormCache* cache, Tensor* running_mean, Tensor* running_var,
                          float momentum = 0.1f, float eps = 1e-5f);
/// Training-mode backward of the loss whose output gradient is dy_scale * dy (the scale is fused into the
/// pass; the mixed op uses it for its softmax weights). With `dot_partials` (C floats on x's device) it also
/// writes, per channel c, the c-th term of <dy, y> for the forward output y = gamma * xhat + beta (unscaled dy;
/// beta may be null): the mixed op's architecture gradient without keeping y.
Tensor batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor* gamma, const BatchNormCache& cache,
                           Tensor* dgamma, Tensor* dbeta, float dy_scale = 1.0f, float* dot_partials = nullptr,
                           const Tensor* beta = nullptr);
/// Re-applies a training-mode forward from its input and cache: gamma * (x - mean) * invstd + beta, then
/// ReLU when `relu` (recomputation instead of keeping the output).
Tensor batch_norm_apply(const Tensor& x, const Tensor* gamma, const Tensor* beta, const BatchNormCache& cache,
                        bool relu);
/// Per-channel <x, dy>: out[c] = sum over n, h, w of x * dy (C floats on x's device).
void channel_dots(const Tensor& x, const Tensor& dy, float* out);

// ----------------------------------------------------------------- pooling / reshaping
/// 3x3 max pool, padding 1.
Tensor max_pool3x3_forward(const Tensor& x, int stride);
Tensor max_pool3x3_backward(const Tensor& x, const Tensor& dy, int stride);
/// 3x3 average pool, padding 1, padding excluded from the count (count_include_pad = False).
Tensor avg_pool3x3_forward(const Tensor& x, int stride);
Tensor avg_pool3x3_backward(const std::vector<int>& x_shape, const Tensor& dy, int stride);
/// x[:, :, offset::2, offset::2] with ceil((H - offset) / 2) rows.
Tensor subsample2_forward(const Tensor& x, int offset);
Tensor subsample2_backward(const std::vector<int>& x_shape, const Tensor& dy, int offset);
/// Concatenate along channels; backward splits dy into the parts' shapes.
Tensor concat_channels(const std::vector<const Tensor*>& parts);
std::vector<Tensor> split_channels(const Tensor& dy, const std::vector<int>& channels);
/// [N, C, H, W] -> [N, C].
Tensor global_avg_pool_forward(const Tensor& x);
Tensor global_avg_pool_backward(const std::vector<int>& x_shape, const Tensor& dy);
/// y = x W^T + b with x [N, F], W [K, F], b [K] (b may be undefined).
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b);
Tensor linear_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor* dw, Tensor* db);

/// Factorized reduce (DARTS): ReLU, two 1x1 stride-2 convolutions (the second on x shifted by one pixel),
/// channel concat, batch norm. w1, w2: [Cout/2, Cin]. Needs even H and W.
struct FactorizedReduceCache {
  Tensor relu;  ///< relu(x) during the forward only (released; the backward takes the mask from x)
  Tensor sub0, sub1;  ///< subsampled (ReLU'd) inputs
  Tensor cat;  ///< pre-BN output
  BatchNormCache bn;
};
Tensor factorized_reduce_forward(const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor* gamma,
                                 const Tensor* beta, bool training, FactorizedReduceCache* cache,
                                 Tensor* running_mean, Tensor* running_var);
Tensor factorized_reduce_backward(const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor* gamma,
                                  const Tensor& dy, const FactorizedReduceCache& cache, Tensor* dw1,
                                  Tensor* dw2, Tensor* dgamma, Tensor* dbeta, float dy_scale = 1.0f,
                                  float* dot_partials = nullptr, const Tensor* beta = nullptr);

// ----------------------------------------------------------------- loss
struct CrossEntropyResult {
  double loss = 0;   ///< mean over the batch
  int correct = 0;   ///< argmax hits
  Tensor dlogits;    ///< d(mean loss)/d logits (only when requested)
};
/// Softmax cross-entropy of logits [N, K] against labels (float class ids, [N], same device).
CrossEntropyResult softmax_cross_entropy(const Tensor& logits, const Tensor& labels, bool want_grad);

// ----------------------------------------------------------------- elementwise / fused / optimisers
/// y += a * x
void axpy(Tensor& y, const Tensor& x, float a);
/// y *= a
void scale_inplace(Tensor& y, float a);
/// Fused mixed-op combine: sum_k w[k] * xs[k] in one pass (up to 16 inputs, same shape).
Tensor weighted_sum(const std::vector<const Tensor*>& xs, const std::vector<float>& w);
/// Fused mixed-op alpha reduction: out[k] = <xs[k], dy> for all k in one pass.
std::vector<double> batched_dot(const std::vector<const Tensor*>& xs, const Tensor& dy);
double dot(const Tensor& a, const Tensor& b);
double squared_norm(const Tensor& a);
/// PyTorch SGD: d = g + wd * w; buf = momentum * buf + d; w -= lr * buf.
void sgd_momentum_step(Tensor& w, const Tensor& g, Tensor& buf, float lr, float momentum, float weight_decay);
/// Adam (Kingma & Ba 2015) with L2 weight decay added to the gradient (PyTorch's Adam); step >= 1.
void adam_step(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1, float beta2, float eps,
               float weight_decay, int step);

}  // namespace kubetune::nas
