// DARTS supernet (Liu, Simonyan & Yang, "DARTS: Differentiable Architecture Search", ICLR 2019):
// operation space, mixed op, cells and the whole over-parameterised network with forward/backward.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kubetune/nas/ops.hpp"
#include "kubetune/nas/tensor.hpp"

namespace kubetune::nas {

/// The 8 candidate operations of DARTS' CNN space.
enum class OpKind { None, MaxPool3x3, AvgPool3x3, SkipConnect, SepConv3x3, SepConv5x5, DilConv3x3, DilConv5x5 };

/// Accepts DARTS names (sep_conv_3x3, ...) and Katib's (separable_convolution_3x3, max_pooling_3x3,
/// skip_connection, ...); throws InvalidArgument naming the value otherwise.
OpKind parse_op(const std::string& name);
/// DARTS name of an op ("sep_conv_3x3").
const char* op_name(OpKind op) noexcept;
/// Katib name of an op ("separable_convolution_3x3").
const char* katib_op_name(OpKind op) noexcept;
/// DARTS' PRIMITIVES in their order: none, max_pool_3x3, avg_pool_3x3, skip_connect, sep_conv_3x3,
/// sep_conv_5x5, dil_conv_3x3, dil_conv_5x5.
std::vector<std::string> darts_ops();

/// Shape of the supernet. Defaults are DARTS' CIFAR-10 search settings (train_search.py).
struct SupernetConfig {
  int in_channels = 3;
  int num_classes = 10;
  int channels = 16;         ///< C of the first cell
  int layers = 8;            ///< cells; reduction cells at layers/3 and 2*layers/3
  int nodes = 4;             ///< intermediate nodes per cell (DARTS "steps")
  int multiplier = 4;        ///< how many last nodes are concatenated into the cell output
  int stem_multiplier = 3;
  std::vector<std::string> ops = darts_ops();
  bool affine = false;       ///< affine batch norm inside the candidate ops (DARTS search: false)
  void validate() const;     ///< throws InvalidArgument naming the field
  int edges_per_cell() const noexcept { return nodes * (nodes + 3) / 2; }
};

/// Flat parameter storage: every parameter is a view into one weight buffer and one gradient buffer,
/// so optimisers, clipping and the second-order perturbations are single vector operations.
class ParamStore {
 public:
  enum class Init { Zero, One, KaimingUniform };
  /// Registers a parameter; returns its id. fan_in is used by KaimingUniform (PyTorch's default init:
  /// U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
  int add(std::vector<int> shape, Init init, int fan_in = 1);
  /// Allocates and initialises (deterministically from `seed`).
  void allocate(Device device, std::uint64_t seed);
  Tensor value(int id) const;
  Tensor grad(int id) const;
  Tensor& values() { return values_; }
  Tensor& grads() { return grads_; }
  const Tensor& values() const { return values_; }
  std::int64_t size() const noexcept { return total_; }
  int count() const noexcept { return static_cast<int>(specs_.size()); }

 private:
  struct Spec {
    std::int64_t offset;
    std::vector<int> shape;
    Init init;
    int fan_in;
  };
  std::vector<Spec> specs_;
  std::int64_t total_ = 0;
  Tensor values_, grads_;
};

/// The architecture-gradient terms of the mixed ops of one backward pass, read back from the device together
/// at the end of the pass: a read per mixed op would drain a GPU's queue once per edge.
class AlphaGradQueue {
 public:
  /// Queues dalpha[k] += w[k] (g_k - sum_j w[j] g_j), g_k = the sum of row k of `partials` [K, C] (0 where the
  /// op is 'none'); `dalpha` must stay valid until flush().
  void push(Tensor partials, std::vector<float> w, std::vector<OpKind> ops, float* dalpha);
  /// Applies and clears everything queued (one device read per entry, after the pass's last launch).
  void flush();
  /// The update of one mixed op from its partial sums on the host (also MixedOp's path without a queue).
  static void apply(const float* partials, int C, const std::vector<float>& w, const std::vector<OpKind>& ops,
                    float* dalpha);

 private:
  struct Entry {
    Tensor partials;
    std::vector<float> w;
    std::vector<OpKind> ops;
    float* dalpha;
  };
  std::vector<Entry> entries_;
};

/// What a forward/backward pass may touch.
struct PassContext {
  ParamStore* params = nullptr;
  ParamStore* buffers = nullptr;  ///< batch-norm running statistics
  bool training = true;
  bool param_grads = true;         ///< accumulate weight gradients
  bool alpha_grads = true;         ///< compute architecture gradients
  AlphaGradQueue* alpha_queue = nullptr;  ///< where mixed ops leave their alpha terms; none: applied at once
};

namespace detail {
class Layer;
class Cell;
}  // namespace detail

/// Mixed operation: y = sum_k softmax(alpha)_k op_k(x). The combine is one fused pass over the K op
/// outputs; the backward returns dL/dx and adds dL/dalpha (through the softmax Jacobian) into `dalpha`.
/// The leading ReLU of the convolutional ops is fused into their depthwise convolutions (no ReLU tensor), and
/// its mask is applied once to their summed input gradient. The op outputs are not kept: <dL/dy, o_k> comes
/// out of each op's final batch-norm backward.
class MixedOp {
 public:
  MixedOp(ParamStore& params, ParamStore& buffers, int channels, int stride, const std::vector<OpKind>& ops,
          bool affine);
  ~MixedOp();
  MixedOp(MixedOp&&) noexcept;
  Tensor forward(const Tensor& x, const float* alpha, const PassContext& ctx);
  Tensor backward(const Tensor& dy, float* dalpha, const PassContext& ctx);
  int num_ops() const noexcept { return static_cast<int>(ops_.size()); }

 private:
  std::vector<OpKind> ops_;
  std::vector<std::unique_ptr<detail::Layer>> layers_;  // null for none / skip (stride 1)
  Tensor x_;  // the edge input (a node state: shared, not a copy); ReLU and op outputs are recomputed / not kept
  std::vector<float> w_;
};

/// Result of one forward/backward pass.
struct PassResult {
  double loss = 0;
  int correct = 0;
  int count = 0;
};

/// The DARTS search network: stem (3x3 conv + BN), `layers` cells (normal / reduction), global average
/// pooling and a linear classifier. Architecture parameters alpha are kept on the host:
/// [normal edges x ops] followed by [reduce edges x ops].
class Supernet {
 public:
  Supernet(const SupernetConfig& config, Device device, std::uint64_t seed);
  ~Supernet();
  Supernet(const Supernet&) = delete;
  Supernet& operator=(const Supernet&) = delete;

  const SupernetConfig& config() const noexcept { return config_; }
  Device device() const noexcept { return device_; }
  const std::vector<OpKind>& ops() const noexcept { return ops_; }

  /// Logits [N, classes].
  Tensor forward(const Tensor& x, bool training);
  /// Forward then backward of the mean cross-entropy. Zeroes and fills weight gradients when
  /// `grad_weights`, architecture gradients when `grad_alpha`.
  PassResult forward_backward(const Tensor& x, const Tensor& labels, bool grad_weights, bool grad_alpha);

  Tensor& weights() { return params_.values(); }
  Tensor& weight_grads() { return params_.grads(); }
  std::vector<float>& alphas() noexcept { return alpha_; }
  const std::vector<float>& alphas() const noexcept { return alpha_; }
  std::vector<float>& alpha_grads() noexcept { return alpha_grad_; }
  int num_edges() const noexcept { return config_.edges_per_cell(); }
  int num_ops() const noexcept { return static_cast<int>(ops_.size()); }
  std::int64_t num_weights() const noexcept { return params_.size(); }
  /// softmax over ops of each edge; reduce = false: normal cell.
  std::vector<float> alpha_softmax(bool reduce) const;
  /// Copies of the batch-norm running statistics (to snapshot / restore around probe passes).
  Tensor buffers() const { return buffers_.values().clone(); }
  void set_buffers(const Tensor& b) { buffers_.values().copy_from(b); }

 private:
  SupernetConfig config_;
  Device device_;
  std::vector<OpKind> ops_;
  ParamStore params_, buffers_;
  std::vector<float> alpha_, alpha_grad_;
  std::unique_ptr<detail::Layer> stem_;
  std::vector<std::unique_ptr<detail::Cell>> cells_;
  int fc_w_ = -1, fc_b_ = -1;
  std::vector<Tensor> states_;
  Tensor pooled_;
};

}  // namespace kubetune::nas
