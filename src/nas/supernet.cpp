// DARTS supernet: op space, candidate-op layers, mixed op, cells, network forward/backward.
#include "kubetune/nas/supernet.hpp"

#include <algorithm>
#include <cmath>

#include "kubetune/core/device.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"

namespace kubetune::nas {

namespace {
// kubetune::Rng streams of one seed (the same numbers with every standard library): weight initialisation,
// alpha initialisation; src/nas/darts.cpp draws the data split and batch order from stream 2.
constexpr std::uint64_t kWeightStream = 0, kAlphaStream = 1;
}  // namespace

// ================================================================= op space
namespace {
struct OpNames {
  OpKind op;
  const char* darts;
  const char* katib;
};
constexpr OpNames kOpNames[] = {
    {OpKind::None, "none", "none"},
    {OpKind::MaxPool3x3, "max_pool_3x3", "max_pooling_3x3"},
    {OpKind::AvgPool3x3, "avg_pool_3x3", "avg_pooling_3x3"},
    {OpKind::SkipConnect, "skip_connect", "skip_connection"},
    {OpKind::SepConv3x3, "sep_conv_3x3", "separable_convolution_3x3"},
    {OpKind::SepConv5x5, "sep_conv_5x5", "separable_convolution_5x5"},
    {OpKind::DilConv3x3, "dil_conv_3x3", "dilated_convolution_3x3"},
    {OpKind::DilConv5x5, "dil_conv_5x5", "dilated_convolution_5x5"},
};
}  // namespace

OpKind parse_op(const std::string& name) {
  for (const auto& o : kOpNames)
    if (name == o.darts || name == o.katib) return o.op;
  if (name == "zero" || name == "identity") return name == "zero" ? OpKind::None : OpKind::SkipConnect;
  KT_THROW(InvalidArgument, "param 'ops': unknown operation '", name,
           "' (DARTS names: none, max_pool_3x3, avg_pool_3x3, skip_connect, sep_conv_3x3, sep_conv_5x5, "
           "dil_conv_3x3, dil_conv_5x5; Katib names such as separable_convolution_3x3 are accepted)");
}
const char* op_name(OpKind op) noexcept { return kOpNames[static_cast<int>(op)].darts; }
const char* katib_op_name(OpKind op) noexcept { return kOpNames[static_cast<int>(op)].katib; }
std::vector<std::string> darts_ops() {
  std::vector<std::string> v;
  for (const auto& o : kOpNames) v.emplace_back(o.darts);
  return v;
}

void SupernetConfig::validate() const {
  KT_CHECK(in_channels >= 1, InvalidArgument, "param 'in_channels' = ", in_channels, " must be >= 1");
  KT_CHECK(num_classes >= 2, InvalidArgument, "param 'num_classes' = ", num_classes, " must be >= 2");
  KT_CHECK(channels >= 2 && channels % 2 == 0, InvalidArgument, "param 'channels' = ", channels,
           " must be an even number >= 2");
  KT_CHECK(layers >= 1, InvalidArgument, "param 'layers' = ", layers, " must be >= 1");
  KT_CHECK(nodes >= 1, InvalidArgument, "param 'nodes' = ", nodes, " must be >= 1");
  KT_CHECK(multiplier >= 1 && multiplier <= nodes, InvalidArgument, "param 'multiplier' = ", multiplier,
           " must be in [1, nodes=", nodes, "]");
  KT_CHECK(stem_multiplier >= 1, InvalidArgument, "param 'stem_multiplier' = ", stem_multiplier, " must be >= 1");
  KT_CHECK(!ops.empty() && ops.size() <= 16, InvalidArgument, "param 'ops' must list 1..16 operations, got ",
           ops.size());
  std::vector<OpKind> seen;
  for (const auto& o : ops) {
    OpKind k = parse_op(o);
    KT_CHECK(std::find(seen.begin(), seen.end(), k) == seen.end(), InvalidArgument, "param 'ops': '", o,
             "' listed twice");
    seen.push_back(k);
  }
}

// ================================================================= parameters
int ParamStore::add(std::vector<int> shape, Init init, int fan_in) {
  KT_CHECK(!values_.defined(), StateError, "ParamStore::add after allocate");
  std::int64_t n = shape_numel(shape);
  specs_.push_back({total_, std::move(shape), init, std::max(fan_in, 1)});
  total_ += (n + 15) / 16 * 16;  // 64-byte aligned views
  return static_cast<int>(specs_.size()) - 1;
}

void ParamStore::allocate(Device device, std::uint64_t seed) {
  std::vector<float> host(static_cast<std::size_t>(std::max<std::int64_t>(total_, 1)), 0.0f);
  Rng rng(seed, kWeightStream);
  for (const auto& s : specs_) {
    std::int64_t n = shape_numel(s.shape);
    float* p = host.data() + s.offset;
    if (s.init == Init::One) {
      std::fill(p, p + n, 1.0f);
    } else if (s.init == Init::KaimingUniform) {
      const float b = 1.0f / std::sqrt(static_cast<float>(s.fan_in));
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng.uniform(-b, b));
    }
  }
  values_ = Tensor::from_host(host.data(), {static_cast<int>(host.size())}, device);
  grads_ = Tensor::zeros({static_cast<int>(host.size())}, device);
}

Tensor ParamStore::value(int id) const { return values_.view(specs_[id].offset, specs_[id].shape); }
Tensor ParamStore::grad(int id) const { return grads_.view(specs_[id].offset, specs_[id].shape); }

// ================================================================= layers
namespace detail {

/// A candidate-op or helper layer. Memory plan (what a training forward keeps for the backward): a layer
/// never keeps its input (the caller passes it back to backward()), nor its output (the mixed op's alpha
/// gradient comes out of the final batch norm's backward); it keeps only tensors that are expensive to
/// recompute (convolution outputs that feed a batch norm or a GEMM), and recomputes the cheap ones
/// (ReLU masks, pooling, batch-norm outputs) in the backward.
class Layer {
 public:
  virtual ~Layer() = default;
  virtual Tensor forward(const Tensor& x, const PassContext& ctx) = 0;
  /// Backward for the forward input x of the loss whose output gradient is scale * dy. With `dot` (one float
  /// per output channel, on the device) it also writes the per-channel terms of <dy, output>.
  virtual Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                          float* dot = nullptr) = 0;
};

}  // namespace detail

namespace {

using detail::Layer;

/// Gradient view of parameter `id`, or null when weight gradients are off.
struct GradRef {
  Tensor t;
  Tensor* ptr = nullptr;
  GradRef(const PassContext& ctx, int id) {
    if (ctx.param_grads && id >= 0) {
      t = ctx.params->grad(id);
      ptr = &t;
    }
  }
};

/// Batch norm with running statistics; affine optional. forward/backward keep only the per-channel statistics
/// (the owner passes the input back, or recomputes it); the *_kept variants keep the input of a training
/// forward themselves, for owners whose BN input is a convolution output too costly to recompute.
class BatchNorm {
 public:
  BatchNorm(ParamStore& p, ParamStore& b, int C, bool affine) {
    if (affine) {
      gamma_ = p.add({C}, ParamStore::Init::One);
      beta_ = p.add({C}, ParamStore::Init::Zero);
    }
    rm_ = b.add({C}, ParamStore::Init::Zero);
    rv_ = b.add({C}, ParamStore::Init::One);
  }
  Tensor forward(const Tensor& x, const PassContext& ctx) {
    Tensor g, bt, rm = ctx.buffers->value(rm_), rv = ctx.buffers->value(rv_);
    affine(ctx, g, bt);
    return batch_norm_forward(x, gamma_ >= 0 ? &g : nullptr, gamma_ >= 0 ? &bt : nullptr, ctx.training, &cache_, &rm,
                              &rv);
  }
  /// The training forward's output (ReLU'd when `relu`) recomputed from its input x.
  Tensor apply(const Tensor& x, const PassContext& ctx, bool relu) const {
    Tensor g, bt;
    affine(ctx, g, bt);
    return batch_norm_apply(x, gamma_ >= 0 ? &g : nullptr, gamma_ >= 0 ? &bt : nullptr, cache_, relu);
  }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale, float* dot) {
    Tensor g, bt;
    affine(ctx, g, bt);
    GradRef dg(ctx, gamma_), db(ctx, beta_);
    Tensor dx = batch_norm_backward(x, dy, gamma_ >= 0 ? &g : nullptr, cache_, dg.ptr, db.ptr, scale, dot,
                                    gamma_ >= 0 ? &bt : nullptr);
    cache_ = BatchNormCache();
    return dx;
  }
  Tensor forward_kept(const Tensor& x, const PassContext& ctx) {
    if (ctx.training) x_ = x;
    return forward(x, ctx);
  }
  Tensor apply_kept(const PassContext& ctx, bool relu) const { return apply(x_, ctx, relu); }
  Tensor backward_kept(const Tensor& dy, const PassContext& ctx, float scale, float* dot) {
    KT_CHECK(x_.defined(), StateError, "nas: backward without a training-mode forward");
    Tensor dx = backward(x_, dy, ctx, scale, dot);
    x_ = Tensor();
    return dx;
  }

 private:
  void affine(const PassContext& ctx, Tensor& g, Tensor& bt) const {
    if (gamma_ >= 0) {
      g = ctx.params->value(gamma_);
      bt = ctx.params->value(beta_);
    }
  }
  int gamma_ = -1, beta_ = -1, rm_ = -1, rv_ = -1;
  BatchNormCache cache_;
  Tensor x_;  // only through forward_kept
};

/// ReLU -> depthwise conv (k, stride, dilation) -> pointwise conv -> BN. The ReLU is fused into the
/// depthwise convolution's reads (no ReLU tensor); the backward returns dL/d relu(x), i.e. WITHOUT the
/// ReLU mask, which the caller applies once for all consumers of the same input.
/// Keeps the depthwise output (the GEMM's input) and the pointwise output (the BN's input).
class ReluDwPwBn {
 public:
  ReluDwPwBn(ParamStore& p, ParamStore& b, int Cin, int Cout, int k, int stride, int dilation, bool affine)
      : k_(k), stride_(stride), dil_(dilation), pad_(dilation * (k - 1) / 2), bn_(p, b, Cout, affine) {
    dw_ = p.add({Cin, 1, k, k}, ParamStore::Init::KaimingUniform, k * k);
    pw_ = p.add({Cout, Cin}, ParamStore::Init::KaimingUniform, Cin);
  }
  Tensor forward(const Tensor& x, const PassContext& ctx) {
    Tensor mid = depthwise_conv2d_forward(x, ctx.params->value(dw_), stride_, pad_, dil_, true);
    if (ctx.training) mid_ = mid;
    return bn_.forward_kept(pointwise_conv_forward(mid, ctx.params->value(pw_)), ctx);
  }
  /// The training forward's output, recomputed.
  Tensor output(const PassContext& ctx) const { return bn_.apply_kept(ctx, false); }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) {
    Tensor d = bn_.backward_kept(dy, ctx, scale, dot);
    GradRef gpw(ctx, pw_), gdw(ctx, dw_);
    d = pointwise_conv_backward(mid_, ctx.params->value(pw_), d, gpw.ptr);
    mid_ = Tensor();
    return depthwise_conv2d_backward(x, ctx.params->value(dw_), d, stride_, pad_, dil_, gdw.ptr, true);
  }

 private:
  int k_, stride_, dil_, pad_;
  int dw_ = -1, pw_ = -1;
  BatchNorm bn_;
  Tensor mid_;
};

/// DARTS SepConv: [ReLU dw(stride) pw BN] [ReLU dw pw BN]. The first half's output is recomputed in the
/// backward from its BN's input. Like ReluDwPwBn, the backward returns the gradient without the outer ReLU mask.
class SepConv : public Layer {
 public:
  SepConv(ParamStore& p, ParamStore& b, int C, int k, int stride, bool affine)
      : a_(p, b, C, C, k, stride, 1, affine), b_(p, b, C, C, k, 1, 1, affine) {}
  Tensor forward(const Tensor& x, const PassContext& ctx) override { return b_.forward(a_.forward(x, ctx), ctx); }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) override {
    Tensor t = a_.output(ctx);
    Tensor d = relu_backward(t, b_.backward(t, dy, ctx, scale, dot));
    t = Tensor();
    return a_.backward(x, d, ctx);
  }

 private:
  ReluDwPwBn a_, b_;
};

/// DARTS DilConv: ReLU dw(k, stride, dilation 2) pw BN (backward without the ReLU mask, as ReluDwPwBn).
class DilConv : public Layer {
 public:
  DilConv(ParamStore& p, ParamStore& b, int C, int k, int stride, bool affine) : a_(p, b, C, C, k, stride, 2, affine) {}
  Tensor forward(const Tensor& x, const PassContext& ctx) override { return a_.forward(x, ctx); }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) override {
    return a_.backward(x, dy, ctx, scale, dot);
  }

 private:
  ReluDwPwBn a_;
};

/// 3x3 max/avg pool followed by BN without affine (as in DARTS' search MixedOp). The pooled tensor is
/// recomputed in the backward (a 3x3 window pass) instead of being kept.
class PoolBn : public Layer {
 public:
  PoolBn(ParamStore& p, ParamStore& b, int C, int stride, bool max) : stride_(stride), max_(max), bn_(p, b, C, false) {}
  Tensor forward(const Tensor& x, const PassContext& ctx) override { return bn_.forward(pool(x), ctx); }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) override {
    Tensor d = bn_.backward(pool(x), dy, ctx, scale, dot);
    return max_ ? max_pool3x3_backward(x, d, stride_) : avg_pool3x3_backward(x.shape(), d, stride_);
  }

 private:
  Tensor pool(const Tensor& x) const { return max_ ? max_pool3x3_forward(x, stride_) : avg_pool3x3_forward(x, stride_); }
  int stride_;
  bool max_;
  BatchNorm bn_;
};

/// DARTS FactorizedReduce (Cin -> Cout, halves H and W).
class FactorizedReduce : public Layer {
 public:
  FactorizedReduce(ParamStore& p, ParamStore& b, int Cin, int Cout, bool affine) {
    KT_CHECK(Cout % 2 == 0, InvalidArgument, "FactorizedReduce: output channels ", Cout, " must be even");
    w1_ = p.add({Cout / 2, Cin}, ParamStore::Init::KaimingUniform, Cin);
    w2_ = p.add({Cout / 2, Cin}, ParamStore::Init::KaimingUniform, Cin);
    if (affine) {
      g_ = p.add({Cout}, ParamStore::Init::One);
      b_ = p.add({Cout}, ParamStore::Init::Zero);
    }
    rm_ = b.add({Cout}, ParamStore::Init::Zero);
    rv_ = b.add({Cout}, ParamStore::Init::One);
  }
  Tensor forward(const Tensor& x, const PassContext& ctx) override {
    Tensor g, bt, rm = ctx.buffers->value(rm_), rv = ctx.buffers->value(rv_);
    if (g_ >= 0) {
      g = ctx.params->value(g_);
      bt = ctx.params->value(b_);
    }
    FactorizedReduceCache local;
    Tensor y = factorized_reduce_forward(x, ctx.params->value(w1_), ctx.params->value(w2_), g_ >= 0 ? &g : nullptr,
                                         g_ >= 0 ? &bt : nullptr, ctx.training, ctx.training ? &cache_ : &local,
                                         &rm, &rv);
    return y;
  }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) override {
    Tensor g, bt;
    if (g_ >= 0) {
      g = ctx.params->value(g_);
      bt = ctx.params->value(b_);
    }
    GradRef d1(ctx, w1_), d2(ctx, w2_), dg(ctx, g_), db(ctx, b_);
    Tensor dx = factorized_reduce_backward(x, ctx.params->value(w1_), ctx.params->value(w2_), g_ >= 0 ? &g : nullptr,
                                           dy, cache_, d1.ptr, d2.ptr, dg.ptr, db.ptr, scale, dot,
                                           g_ >= 0 ? &bt : nullptr);
    cache_ = FactorizedReduceCache();
    return dx;
  }

 private:
  int w1_ = -1, w2_ = -1, g_ = -1, b_ = -1, rm_ = -1, rv_ = -1;
  FactorizedReduceCache cache_;
};

/// ReLU -> 1x1 conv -> BN (cell preprocessing). Keeps the conv output (the BN's input); the ReLU of the
/// input is recomputed in the backward.
class ReluConvBn : public Layer {
 public:
  ReluConvBn(ParamStore& p, ParamStore& b, int Cin, int Cout, bool affine) : bn_(p, b, Cout, affine) {
    w_ = p.add({Cout, Cin}, ParamStore::Init::KaimingUniform, Cin);
  }
  Tensor forward(const Tensor& x, const PassContext& ctx) override {
    return bn_.forward_kept(pointwise_conv_forward(relu_forward(x), ctx.params->value(w_)), ctx);
  }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) override {
    GradRef gw(ctx, w_);
    Tensor d = bn_.backward_kept(dy, ctx, scale, dot);
    Tensor r = relu_forward(x);
    d = pointwise_conv_backward(r, ctx.params->value(w_), d, gw.ptr);
    return relu_backward(r, d);
  }

 private:
  int w_ = -1;
  BatchNorm bn_;
};

/// 3x3 conv -> BN (affine), the network stem.
class Stem : public Layer {
 public:
  Stem(ParamStore& p, ParamStore& b, int Cin, int Cout) : bn_(p, b, Cout, true) {
    w_ = p.add({Cout, Cin, 3, 3}, ParamStore::Init::KaimingUniform, Cin * 9);
  }
  Tensor forward(const Tensor& x, const PassContext& ctx) override {
    return bn_.forward_kept(conv2d_forward(x, ctx.params->value(w_), 1, 1), ctx);
  }
  Tensor backward(const Tensor& x, const Tensor& dy, const PassContext& ctx, float scale = 1.0f,
                  float* dot = nullptr) override {
    GradRef gw(ctx, w_);
    Tensor d = bn_.backward_kept(dy, ctx, scale, dot);
    if (gw.ptr) conv2d_backward(x, ctx.params->value(w_), d, 1, 1, gw.ptr);  // dx of the input is not needed
    return Tensor();
  }

 private:
  int w_ = -1;
  BatchNorm bn_;
};

bool takes_relu(OpKind k) {
  return k == OpKind::SepConv3x3 || k == OpKind::SepConv5x5 || k == OpKind::DilConv3x3 || k == OpKind::DilConv5x5;
}

void accumulate(Tensor& acc, const Tensor& d) {
  if (!acc.defined())
    acc = d;
  else
    axpy(acc, d, 1.0f);
}

}  // namespace

// ================================================================= mixed op
MixedOp::MixedOp(ParamStore& p, ParamStore& b, int C, int stride, const std::vector<OpKind>& ops, bool affine)
    : ops_(ops) {
  for (OpKind k : ops_) {
    std::unique_ptr<Layer> l;
    switch (k) {
      case OpKind::None: break;
      case OpKind::MaxPool3x3: l = std::make_unique<PoolBn>(p, b, C, stride, true); break;
      case OpKind::AvgPool3x3: l = std::make_unique<PoolBn>(p, b, C, stride, false); break;
      case OpKind::SkipConnect:
        if (stride != 1) l = std::make_unique<FactorizedReduce>(p, b, C, C, affine);
        break;
      case OpKind::SepConv3x3: l = std::make_unique<SepConv>(p, b, C, 3, stride, affine); break;
      case OpKind::SepConv5x5: l = std::make_unique<SepConv>(p, b, C, 5, stride, affine); break;
      case OpKind::DilConv3x3: l = std::make_unique<DilConv>(p, b, C, 3, stride, affine); break;
      case OpKind::DilConv5x5: l = std::make_unique<DilConv>(p, b, C, 5, stride, affine); break;
    }
    layers_.push_back(std::move(l));
  }
}
MixedOp::~MixedOp() = default;
MixedOp::MixedOp(MixedOp&&) noexcept = default;

Tensor MixedOp::forward(const Tensor& x, const float* alpha, const PassContext& ctx) {
  const int K = num_ops();
  // softmax over the op logits
  w_.assign(K, 0.0f);
  float m = *std::max_element(alpha, alpha + K);
  double z = 0.0;
  for (int k = 0; k < K; ++k) z += std::exp(static_cast<double>(alpha[k] - m));
  for (int k = 0; k < K; ++k) w_[k] = static_cast<float>(std::exp(static_cast<double>(alpha[k] - m)) / z);

  if (ctx.training) x_ = x;
  std::vector<Tensor> outs(K);  // released on return: the backward needs none of them
  std::vector<const Tensor*> parts;
  std::vector<float> ws;
  for (int k = 0; k < K; ++k) {
    if (ops_[k] == OpKind::None) continue;
    if (layers_[k])
      outs[k] = layers_[k]->forward(x, ctx);  // the conv ops apply their ReLU inside
    else
      outs[k] = x;  // identity
    parts.push_back(&outs[k]);
    ws.push_back(w_[k]);
  }
  if (parts.empty()) {  // only 'none': the zero op of the right (possibly strided) shape
    KT_THROW(InvalidArgument, "param 'ops': a search space of only 'none' has nothing to learn");
  }
  return weighted_sum(parts, ws);
}

Tensor MixedOp::backward(const Tensor& dy, float* dalpha, const PassContext& ctx) {
  KT_CHECK(x_.defined(), StateError, "nas: mixed-op backward without a training-mode forward");
  const int K = num_ops();
  const bool want_alpha = ctx.alpha_grads && dalpha;
  const int C = dy.dim(1);
  // per op and output channel: the terms of g_k = <dy, o_k>, written by each op's final batch norm (or by
  // channel_dots for the identity), then read back in one copy
  Tensor partials = want_alpha ? Tensor({K, C}, dy.device()) : Tensor();
  Tensor dx, drelu;  // drelu: the conv ops' gradients w.r.t. relu(x), masked once below
  for (int k = 0; k < K; ++k) {
    if (ops_[k] == OpKind::None) continue;
    float* row = want_alpha ? partials.data() + static_cast<std::ptrdiff_t>(k) * C : nullptr;
    if (!layers_[k]) {  // identity: d/dx = w_k dy
      if (row) channel_dots(x_, dy, row);
      if (!dx.defined()) {
        dx = Tensor(dy.shape(), dy.device());
        dx.zero();
      }
      axpy(dx, dy, w_[k]);
      continue;
    }
    const bool r = takes_relu(ops_[k]);
    Tensor di = layers_[k]->backward(x_, dy, ctx, w_[k], row);  // every op ends in BN, which fuses w_k
    accumulate(r ? drelu : dx, di);
  }
  if (drelu.defined()) accumulate(dx, relu_backward(x_, drelu));
  if (!dx.defined()) dx = Tensor::zeros(x_.shape(), x_.device());
  if (want_alpha) {
    if (ctx.alpha_queue)
      ctx.alpha_queue->push(std::move(partials), w_, ops_, dalpha);
    else
      AlphaGradQueue::apply(partials.to_host().data(), C, w_, ops_, dalpha);
  }
  x_ = Tensor();
  return dx;
}

void AlphaGradQueue::apply(const float* partials, int C, const std::vector<float>& w, const std::vector<OpKind>& ops,
                           float* dalpha) {
  const int K = static_cast<int>(ops.size());
  std::vector<double> g(K, 0.0);  // g_k = <dy, o_k>, zero for 'none'
  for (int k = 0; k < K; ++k) {
    if (ops[k] == OpKind::None) continue;
    for (int c = 0; c < C; ++c) g[k] += partials[static_cast<std::size_t>(k) * C + c];
  }
  double wg = 0.0;
  for (int k = 0; k < K; ++k) wg += w[k] * g[k];
  for (int k = 0; k < K; ++k) dalpha[k] += static_cast<float>(w[k] * (g[k] - wg));
}

void AlphaGradQueue::push(Tensor partials, std::vector<float> w, std::vector<OpKind> ops, float* dalpha) {
  KT_CHECK(partials.defined() && partials.ndim() == 2 && partials.dim(0) == static_cast<int>(ops.size()) &&
               w.size() == ops.size() && dalpha != nullptr,
           InvalidArgument, "nas: alpha-gradient terms must be [ops, channels] with one weight per op");
  entries_.push_back(Entry{std::move(partials), std::move(w), std::move(ops), dalpha});
}

void AlphaGradQueue::flush() {
  std::vector<Entry> entries;
  entries.swap(entries_);  // cleared even if a read throws
  for (const Entry& e : entries) apply(e.partials.to_host().data(), e.partials.dim(1), e.w, e.ops, e.dalpha);
}

// ================================================================= cell
namespace detail {

class Cell {
 public:
  Cell(ParamStore& p, ParamStore& b, const SupernetConfig& cfg, const std::vector<OpKind>& ops, int Cpp, int Cp, int C,
       bool reduction, bool reduction_prev)
      : nodes_(cfg.nodes), mult_(cfg.multiplier), C_(C), reduction_(reduction) {
    if (reduction_prev)
      pre0_ = std::make_unique<FactorizedReduce>(p, b, Cpp, C, false);
    else
      pre0_ = std::make_unique<ReluConvBn>(p, b, Cpp, C, false);
    pre1_ = std::make_unique<ReluConvBn>(p, b, Cp, C, false);
    for (int i = 0; i < nodes_; ++i)
      for (int j = 0; j < 2 + i; ++j) edges_.emplace_back(p, b, C, (reduction && j < 2) ? 2 : 1, ops, cfg.affine);
  }
  bool reduction() const { return reduction_; }

  Tensor forward(const Tensor& s0, const Tensor& s1, const float* alpha, int K, const PassContext& ctx) {
    std::vector<Tensor> states(2 + nodes_);
    states[0] = pre0_->forward(s0, ctx);
    states[1] = pre1_->forward(s1, ctx);
    int e = 0;
    for (int i = 0; i < nodes_; ++i) {
      Tensor acc;
      for (int j = 0; j < 2 + i; ++j, ++e) {
        Tensor o = edges_[e].forward(states[j], alpha + static_cast<std::ptrdiff_t>(e) * K, ctx);
        accumulate(acc, o);
      }
      states[2 + i] = acc;
    }
    std::vector<const Tensor*> parts;
    for (int i = 2 + nodes_ - mult_; i < 2 + nodes_; ++i) parts.push_back(&states[i]);
    return concat_channels(parts);  // the node states live on as the mixed ops' inputs
  }

  /// Backward for the forward inputs s0, s1. Returns {ds0, ds1}; adds architecture gradients into dalpha.
  std::pair<Tensor, Tensor> backward(const Tensor& s0, const Tensor& s1, const Tensor& dout, float* dalpha, int K,
                                     const PassContext& ctx) {
    std::vector<Tensor> ds(2 + nodes_);
    auto parts = split_channels(dout, std::vector<int>(mult_, C_));
    for (int i = 0; i < mult_; ++i) ds[2 + nodes_ - mult_ + i] = parts[i];
    for (int i = nodes_ - 1; i >= 0; --i) {
      const int e0 = i * (i + 3) / 2;  // first edge of node i
      if (!ds[2 + i].defined()) continue;  // node not used by the output (multiplier < nodes)
      for (int j = 1 + i; j >= 0; --j) {
        const int e = e0 + j;
        accumulate(ds[j], edges_[e].backward(ds[2 + i], dalpha + static_cast<std::ptrdiff_t>(e) * K, ctx));
      }
    }
    for (int j = 0; j < 2; ++j)  // both preprocessed inputs are [N, C, H, W] at s1's resolution
      if (!ds[j].defined()) ds[j] = Tensor::zeros({s1.dim(0), C_, s1.dim(2), s1.dim(3)}, dout.device());
    Tensor d0 = pre0_->backward(s0, ds[0], ctx);
    Tensor d1 = pre1_->backward(s1, ds[1], ctx);
    return {d0, d1};
  }

 private:
  int nodes_, mult_, C_;
  bool reduction_;
  std::unique_ptr<Layer> pre0_, pre1_;
  std::vector<MixedOp> edges_;
};

}  // namespace detail

// ================================================================= network
Supernet::Supernet(const SupernetConfig& config, Device device, std::uint64_t seed)
    : config_(config), device_(device) {
  config_.validate();
  if (device == Device::CUDA && !kubetune::device::cuda_available())
    KT_THROW(Unsupported, "nas: device 'cuda' requested but ",
             kubetune::device::built_with_cuda() ? "no usable CUDA device was found"
                                                 : "kubetune was built without CUDA");
  for (const auto& o : config_.ops) ops_.push_back(parse_op(o));
  const int L = config_.layers, C = config_.channels;
  int Cstem = config_.stem_multiplier * C;
  stem_ = std::make_unique<Stem>(params_, buffers_, config_.in_channels, Cstem);
  int Cpp = Cstem, Cp = Cstem, Ccur = C;
  bool reduction_prev = false;
  for (int i = 0; i < L; ++i) {
    bool reduction = (i == L / 3 || i == 2 * L / 3);
    if (reduction) Ccur *= 2;
    cells_.push_back(
        std::make_unique<detail::Cell>(params_, buffers_, config_, ops_, Cpp, Cp, Ccur, reduction, reduction_prev));
    reduction_prev = reduction;
    Cpp = Cp;
    Cp = config_.multiplier * Ccur;
  }
  fc_w_ = params_.add({config_.num_classes, Cp}, ParamStore::Init::KaimingUniform, Cp);
  fc_b_ = params_.add({config_.num_classes}, ParamStore::Init::KaimingUniform, Cp);
  params_.allocate(device, seed);
  buffers_.allocate(device, seed);
  // alpha ~ 1e-3 * N(0, 1) as in DARTS' model_search.py
  const std::size_t n = 2 * static_cast<std::size_t>(num_edges()) * ops_.size();
  alpha_.resize(n);
  alpha_grad_.assign(n, 0.0f);
  Rng rng(seed, kAlphaStream);
  for (auto& a : alpha_) a = static_cast<float>(1e-3 * rng.normal());
}

Supernet::~Supernet() = default;

Tensor Supernet::forward(const Tensor& x, bool training) {
  KT_CHECK(x.defined() && x.ndim() == 4 && x.dim(1) == config_.in_channels, InvalidArgument,
           "param 'x' must be [N, ", config_.in_channels, ", H, W], got ",
           x.defined() ? x.shape_str() : std::string("undefined"));
  KT_CHECK(x.device() == device_, InvalidArgument, "param 'x' is on ", device_name(x.device()),
           " but the supernet is on ", device_name(device_));
  PassContext ctx{&params_, &buffers_, training, false, false};
  const int K = num_ops(), E = num_edges();
  states_.assign(cells_.size() + 1, Tensor());
  states_[0] = stem_->forward(x, ctx);
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    const Tensor& s0 = states_[i == 0 ? 0 : i - 1];
    const Tensor& s1 = states_[i];
    const float* a = alpha_.data() + (cells_[i]->reduction() ? static_cast<std::ptrdiff_t>(E) * K : 0);
    states_[i + 1] = cells_[i]->forward(s0, s1, a, K, ctx);
  }
  pooled_ = global_avg_pool_forward(states_.back());
  return linear_forward(pooled_, params_.value(fc_w_), params_.value(fc_b_));
}

PassResult Supernet::forward_backward(const Tensor& x, const Tensor& labels, bool grad_weights, bool grad_alpha) {
  Tensor logits = forward(x, true);
  auto ce = softmax_cross_entropy(logits, labels, true);
  PassResult r{ce.loss, ce.correct, x.dim(0)};
  AlphaGradQueue alpha_terms;
  PassContext ctx{&params_, &buffers_, true, grad_weights, grad_alpha, &alpha_terms};
  if (grad_weights) params_.grads().zero();
  std::fill(alpha_grad_.begin(), alpha_grad_.end(), 0.0f);
  const int K = num_ops(), E = num_edges();
  Tensor dw = params_.grad(fc_w_), db = params_.grad(fc_b_);
  Tensor dp = linear_backward(pooled_, params_.value(fc_w_), ce.dlogits, grad_weights ? &dw : nullptr,
                              grad_weights ? &db : nullptr);
  std::vector<Tensor> ds(states_.size());
  ds.back() = global_avg_pool_backward(states_.back().shape(), dp);
  for (int i = static_cast<int>(cells_.size()) - 1; i >= 0; --i) {
    float* da = alpha_grad_.data() + (cells_[i]->reduction() ? static_cast<std::ptrdiff_t>(E) * K : 0);
    const Tensor& s0 = states_[i == 0 ? 0 : i - 1];
    const Tensor& s1 = states_[i];
    auto [d0, d1] = cells_[i]->backward(s0, s1, ds[i + 1], da, K, ctx);
    accumulate(ds[i == 0 ? 0 : i - 1], d0);
    accumulate(ds[i], d1);
    ds[i + 1] = Tensor();
  }
  if (grad_weights) stem_->backward(x, ds[0], ctx);
  alpha_terms.flush();
  states_.clear();
  pooled_ = Tensor();
  return r;
}

std::vector<float> Supernet::alpha_softmax(bool reduce) const {
  const int K = num_ops(), E = num_edges();
  std::vector<float> out(static_cast<std::size_t>(E) * K);
  const float* a = alpha_.data() + (reduce ? static_cast<std::ptrdiff_t>(E) * K : 0);
  for (int e = 0; e < E; ++e) {
    const float* r = a + static_cast<std::ptrdiff_t>(e) * K;
    float m = *std::max_element(r, r + K);
    double z = 0;
    for (int k = 0; k < K; ++k) z += std::exp(static_cast<double>(r[k] - m));
    for (int k = 0; k < K; ++k) out[static_cast<std::size_t>(e) * K + k] = static_cast<float>(std::exp(r[k] - m) / z);
  }
  return out;
}

}  // namespace kubetune::nas
