// Every CUDA op against its CPU twin (1e-4 relative); skipped where no GPU is present. Without a GPU the same
// file also runs on the CUDA emulator (tests/cuda_emu, ctest -L cuda_emu).
//
// Gradient accumulators (dw, dgamma, dbeta, db, ...) start from the same random values on both devices, so an
// op that overwrote instead of adding would fail; outputs that are overwritten by design (dot partials,
// channel dots) start from random values too, so an element left unwritten shows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "fd.hpp"
#include "kubetune/core/device.hpp"
#include "kubetune/nas/darts.hpp"
#include "kubetune/nas/ops.hpp"
#include "kubetune/nas/supernet.hpp"

using namespace kubetune::nas;
using kt_test::randn;

namespace {

constexpr double kTwinTol = 1e-4;

#define NEED_GPU() \
  if (!kubetune::device::cuda_available()) GTEST_SKIP() << "no CUDA device (or built without CUDA)"

/// max |a - b| / max(max |a|, 1e-3) over all entries; a NaN on either side makes it NaN (never below a tolerance).
double twin_err(const Tensor& cpu, const Tensor& gpu) {
  auto a = cpu.to_host();
  auto b = gpu.to_host();
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double d = 0, m = 1e-3;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (!(diff <= d)) d = diff;
    m = std::max(m, static_cast<double>(std::abs(a[i])));
  }
  return d / m;
}

Tensor G(const Tensor& t) { return t.to(Device::CUDA); }

/// The same random tensor on the CPU and on the GPU (a gradient accumulator's starting value).
std::pair<Tensor, Tensor> twin_randn(const std::vector<int>& shape, std::mt19937_64& rng) {
  Tensor c = randn(shape, rng);
  return {c, G(c)};
}

/// 3x3 max / average pooling (strides 1 and 2) and the stride-2 subsampling (both offsets that fit) of x,
/// forward and backward, against their CPU twins.
void expect_pool_twins(const Tensor& x, std::mt19937_64& rng) {
  const int H = x.dim(2), W = x.dim(3);
  for (int s : {1, 2}) {
    Tensor ym = max_pool3x3_forward(x, s);
    EXPECT_LT(twin_err(ym, max_pool3x3_forward(G(x), s)), kTwinTol);
    Tensor r = randn(ym.shape(), rng);
    EXPECT_LT(twin_err(max_pool3x3_backward(x, r, s), max_pool3x3_backward(G(x), G(r), s)), kTwinTol);
    EXPECT_LT(twin_err(avg_pool3x3_forward(x, s), avg_pool3x3_forward(G(x), s)), kTwinTol);
    EXPECT_LT(twin_err(avg_pool3x3_backward(x.shape(), r, s), avg_pool3x3_backward(x.shape(), G(r), s)), kTwinTol);
  }
  for (int off : {0, 1}) {
    if (H - off < 1 || W - off < 1) continue;
    Tensor ys = subsample2_forward(x, off);
    EXPECT_LT(twin_err(ys, subsample2_forward(G(x), off)), kTwinTol);
    EXPECT_LT(twin_err(subsample2_backward(x.shape(), ys, off), subsample2_backward(x.shape(), G(ys), off)), kTwinTol);
  }
}

}  // namespace

TEST(NasCudaTwins, ConvolutionsAndPointwise) {
  NEED_GPU();
  std::mt19937_64 rng(1);
  Tensor x = randn({4, 3, 9, 10}, rng), w = randn({5, 3, 3, 3}, rng);
  for (int s : {1, 2}) {
    Tensor y = conv2d_forward(x, w, s, 1), yg = conv2d_forward(G(x), G(w), s, 1);
    EXPECT_LT(twin_err(y, yg), kTwinTol);
    Tensor r = randn(y.shape(), rng);
    auto [dw, dwg] = twin_randn(w.shape(), rng);
    EXPECT_LT(twin_err(conv2d_backward(x, w, r, s, 1, &dw), conv2d_backward(G(x), G(w), G(r), s, 1, &dwg)), kTwinTol);
    EXPECT_LT(twin_err(dw, dwg), kTwinTol);
  }
  Tensor xc = randn({4, 6, 9, 10}, rng);
  for (int k : {3, 5})
    for (int s : {1, 2})
      for (int d : {1, 2}) {
        Tensor wd = randn({6, 1, k, k}, rng);
        const int pad = d * (k - 1) / 2;
        Tensor y = depthwise_conv2d_forward(xc, wd, s, pad, d);
        EXPECT_LT(twin_err(y, depthwise_conv2d_forward(G(xc), G(wd), s, pad, d)), kTwinTol);
        Tensor r = randn(y.shape(), rng);
        auto [dw, dwg] = twin_randn(wd.shape(), rng);
        EXPECT_LT(twin_err(depthwise_conv2d_backward(xc, wd, r, s, pad, d, &dw),
                           depthwise_conv2d_backward(G(xc), G(wd), G(r), s, pad, d, &dwg)),
                  kTwinTol);
        EXPECT_LT(twin_err(dw, dwg), kTwinTol) << "k " << k << " s " << s << " d " << d;
        // ReLU fused into the reads
        EXPECT_LT(twin_err(depthwise_conv2d_forward(xc, wd, s, pad, d, true),
                           depthwise_conv2d_forward(G(xc), G(wd), s, pad, d, true)),
                  kTwinTol);
        auto [dwr, dwrg] = twin_randn(wd.shape(), rng);
        EXPECT_LT(twin_err(depthwise_conv2d_backward(xc, wd, r, s, pad, d, &dwr, true),
                           depthwise_conv2d_backward(G(xc), G(wd), G(r), s, pad, d, &dwrg, true)),
                  kTwinTol);
        EXPECT_LT(twin_err(dwr, dwrg), kTwinTol) << "relu_input k " << k << " s " << s << " d " << d;
      }
  Tensor wp = randn({7, 6}, rng);
  Tensor y = pointwise_conv_forward(xc, wp);
  EXPECT_LT(twin_err(y, pointwise_conv_forward(G(xc), G(wp))), kTwinTol);
  Tensor r = randn(y.shape(), rng);
  auto [dw, dwg] = twin_randn(wp.shape(), rng);
  EXPECT_LT(twin_err(pointwise_conv_backward(xc, wp, r, &dw), pointwise_conv_backward(G(xc), G(wp), G(r), &dwg)),
            kTwinTol);
  EXPECT_LT(twin_err(dw, dwg), kTwinTol);
}

TEST(NasCudaTwins, ActivationNormPoolAndReshape) {
  NEED_GPU();
  std::mt19937_64 rng(2);
  Tensor x = randn({4, 5, 8, 6}, rng), r = randn({4, 5, 8, 6}, rng);
  Tensor y = relu_forward(x);
  EXPECT_LT(twin_err(y, relu_forward(G(x))), kTwinTol);
  EXPECT_LT(twin_err(relu_backward(y, r), relu_backward(G(y), G(r))), kTwinTol);
  Tensor g = randn({5}, rng), b = randn({5}, rng);
  for (bool affine : {false, true}) {
    Tensor gg = G(g), bg = G(b);
    BatchNormCache c, cg;
    auto [rm, rmg] = twin_randn({5}, rng);
    Tensor rv = Tensor::full({5}, 1.0f);
    for (int c = 0; c < 5; ++c) rv.data()[c] += std::abs(randn({1}, rng).data()[0]);
    Tensor rvg = G(rv);
    Tensor yb = batch_norm_forward(x, affine ? &g : nullptr, affine ? &b : nullptr, true, &c, &rm, &rv);
    Tensor ybg = batch_norm_forward(G(x), affine ? &gg : nullptr, affine ? &bg : nullptr, true, &cg, &rmg, &rvg);
    EXPECT_LT(twin_err(yb, ybg), kTwinTol);
    EXPECT_LT(twin_err(rm, rmg), kTwinTol);
    EXPECT_LT(twin_err(rv, rvg), kTwinTol);
    auto [dg, dgg] = twin_randn({5}, rng);
    auto [db, dbg] = twin_randn({5}, rng);
    EXPECT_LT(twin_err(batch_norm_backward(x, r, affine ? &g : nullptr, c, &dg, &db),
                       batch_norm_backward(G(x), G(r), affine ? &gg : nullptr, cg, &dgg, &dbg)),
              kTwinTol);
    EXPECT_LT(twin_err(dg, dgg), kTwinTol);
    EXPECT_LT(twin_err(db, dbg), kTwinTol);
    // recomputed output (plain and ReLU'd) and the alpha-gradient dot partials
    for (bool relu : {false, true})
      EXPECT_LT(twin_err(batch_norm_apply(x, affine ? &g : nullptr, affine ? &b : nullptr, c, relu),
                         batch_norm_apply(G(x), affine ? &gg : nullptr, affine ? &bg : nullptr, cg, relu)),
                kTwinTol);
    auto [part, partg] = twin_randn({5}, rng);
    batch_norm_backward(x, r, affine ? &g : nullptr, c, nullptr, nullptr, 0.5f, part.data(), affine ? &b : nullptr);
    batch_norm_backward(G(x), G(r), affine ? &gg : nullptr, cg, nullptr, nullptr, 0.5f, partg.data(),
                        affine ? &bg : nullptr);
    EXPECT_LT(twin_err(part, partg), kTwinTol);
    EXPECT_LT(twin_err(batch_norm_forward(x, nullptr, nullptr, false, nullptr, &rm, &rv),
                       batch_norm_forward(G(x), nullptr, nullptr, false, nullptr, &rmg, &rvg)),
              kTwinTol);
  }
  expect_pool_twins(x, rng);
  Tensor a = randn({4, 2, 8, 6}, rng);
  Tensor ag = G(a), xg = G(x);
  Tensor cat = concat_channels({&a, &x});
  EXPECT_LT(twin_err(cat, concat_channels({&ag, &xg})), kTwinTol);
  EXPECT_LT(twin_err(split_channels(cat, {2, 5})[1], split_channels(G(cat), {2, 5})[1]), kTwinTol);
  auto [cd, cdg] = twin_randn({5}, rng);
  channel_dots(x, r, cd.data());
  channel_dots(G(x), G(r), cdg.data());
  EXPECT_LT(twin_err(cd, cdg), kTwinTol);
  Tensor p = global_avg_pool_forward(x);
  EXPECT_LT(twin_err(p, global_avg_pool_forward(G(x))), kTwinTol);
  EXPECT_LT(twin_err(global_avg_pool_backward(x.shape(), p), global_avg_pool_backward(x.shape(), G(p))), kTwinTol);
}

TEST(NasCudaTwins, FactorizedReduceLinearLossFusedOptimisers) {
  NEED_GPU();
  std::mt19937_64 rng(3);
  Tensor x = randn({4, 6, 8, 8}, rng), w1 = randn({4, 6}, rng), w2 = randn({4, 6}, rng);
  FactorizedReduceCache c, cg;
  Tensor y = factorized_reduce_forward(x, w1, w2, nullptr, nullptr, true, &c, nullptr, nullptr);
  Tensor w1g = G(w1), w2g = G(w2);
  Tensor yg = factorized_reduce_forward(G(x), w1g, w2g, nullptr, nullptr, true, &cg, nullptr, nullptr);
  EXPECT_LT(twin_err(y, yg), kTwinTol);
  Tensor r = randn(y.shape(), rng);
  auto [d1, d1g] = twin_randn(w1.shape(), rng);
  auto [d2, d2g] = twin_randn(w2.shape(), rng);
  EXPECT_LT(twin_err(factorized_reduce_backward(x, w1, w2, nullptr, r, c, &d1, &d2, nullptr, nullptr),
                     factorized_reduce_backward(G(x), w1g, w2g, nullptr, G(r), cg, &d1g, &d2g, nullptr, nullptr)),
            kTwinTol);
  EXPECT_LT(twin_err(d1, d1g), kTwinTol);
  EXPECT_LT(twin_err(d2, d2g), kTwinTol);

  Tensor f = randn({8, 12}, rng), w = randn({10, 12}, rng), b = randn({10}, rng);
  Tensor l = linear_forward(f, w, b);
  EXPECT_LT(twin_err(l, linear_forward(G(f), G(w), G(b))), kTwinTol);
  Tensor dl = randn(l.shape(), rng);
  auto [dw, dwg] = twin_randn(w.shape(), rng);
  auto [db, dbg] = twin_randn(b.shape(), rng);
  EXPECT_LT(twin_err(linear_backward(f, w, dl, &dw, &db), linear_backward(G(f), G(w), G(dl), &dwg, &dbg)), kTwinTol);
  EXPECT_LT(twin_err(dw, dwg), kTwinTol);
  EXPECT_LT(twin_err(db, dbg), kTwinTol);
  Tensor labels({8});
  for (int i = 0; i < 8; ++i) labels.data()[i] = static_cast<float>(i % 10);
  auto ce = softmax_cross_entropy(l, labels, true), ceg = softmax_cross_entropy(G(l), G(labels), true);
  EXPECT_NEAR(ce.loss, ceg.loss, 1e-5 * std::abs(ce.loss));
  EXPECT_EQ(ce.correct, ceg.correct);
  EXPECT_LT(twin_err(ce.dlogits, ceg.dlogits), kTwinTol);

  Tensor a = randn({3, 4, 5, 5}, rng), bb = randn({3, 4, 5, 5}, rng);
  Tensor ag = G(a), bg = G(bb);
  EXPECT_LT(twin_err(weighted_sum({&a, &bb}, {0.3f, 0.7f}), weighted_sum({&ag, &bg}, {0.3f, 0.7f})), kTwinTol);
  auto dots = batched_dot({&a, &bb}, a), dotsg = batched_dot({&ag, &bg}, ag);
  EXPECT_NEAR(dots[0], dotsg[0], 1e-4 * std::abs(dots[0]));
  EXPECT_NEAR(dots[1], dotsg[1], 1e-4 * std::abs(dots[0]));
  Tensor wv = randn({100}, rng), gv = randn({100}, rng);
  Tensor wvg = G(wv), gvg = G(gv);
  auto [buf, bufg] = twin_randn({100}, rng);  // a momentum buffer from earlier steps
  sgd_momentum_step(wv, gv, buf, 0.1f, 0.9f, 1e-3f);
  sgd_momentum_step(wvg, gvg, bufg, 0.1f, 0.9f, 1e-3f);
  EXPECT_LT(twin_err(wv, wvg), kTwinTol);
  EXPECT_LT(twin_err(buf, bufg), kTwinTol);
  // moments from earlier steps (v >= 0), at step 3
  auto [m, mg] = twin_randn({100}, rng);
  Tensor v = randn({100}, rng);
  for (int i = 0; i < 100; ++i) v.data()[i] *= v.data()[i];
  Tensor vg = G(v);
  adam_step(wv, gv, m, v, 0.01f, 0.5f, 0.999f, 1e-8f, 1e-3f, 3);
  adam_step(wvg, gvg, mg, vg, 0.01f, 0.5f, 0.999f, 1e-8f, 1e-3f, 3);
  EXPECT_LT(twin_err(wv, wvg), kTwinTol);
  EXPECT_LT(twin_err(m, mg), kTwinTol);
  EXPECT_LT(twin_err(v, vg), kTwinTol);
}

TEST(NasCudaTwins, OneByOneAndTwoByThreePlanes) {
  NEED_GPU();
  std::mt19937_64 rng(5);
  for (auto [H, W] : {std::pair{1, 1}, std::pair{2, 3}}) {
    SCOPED_TRACE(std::to_string(H) + "x" + std::to_string(W));
    Tensor x = randn({3, 4, H, W}, rng);
    for (auto [k, s, pad] : {std::tuple{3, 1, 1}, std::tuple{3, 2, 1}, std::tuple{1, 1, 0}, std::tuple{1, 2, 0}}) {
      Tensor w = randn({5, 4, k, k}, rng);
      Tensor y = conv2d_forward(x, w, s, pad);
      EXPECT_LT(twin_err(y, conv2d_forward(G(x), G(w), s, pad)), kTwinTol) << "k " << k << " s " << s;
      Tensor r = randn(y.shape(), rng);
      auto [dw, dwg] = twin_randn(w.shape(), rng);
      EXPECT_LT(twin_err(conv2d_backward(x, w, r, s, pad, &dw), conv2d_backward(G(x), G(w), G(r), s, pad, &dwg)),
                kTwinTol)
          << "k " << k << " s " << s;
      EXPECT_LT(twin_err(dw, dwg), kTwinTol) << "k " << k << " s " << s;
    }
    // depthwise: most taps fall outside such small planes
    for (int k : {3, 5})
      for (int s : {1, 2})
        for (int d : {1, 2})
          for (bool relu : {false, true}) {
            const int pad = d * (k - 1) / 2;
            Tensor w = randn({4, 1, k, k}, rng);
            Tensor y = depthwise_conv2d_forward(x, w, s, pad, d, relu);
            EXPECT_LT(twin_err(y, depthwise_conv2d_forward(G(x), G(w), s, pad, d, relu)), kTwinTol);
            Tensor r = randn(y.shape(), rng);
            auto [dw, dwg] = twin_randn(w.shape(), rng);
            EXPECT_LT(twin_err(depthwise_conv2d_backward(x, w, r, s, pad, d, &dw, relu),
                               depthwise_conv2d_backward(G(x), G(w), G(r), s, pad, d, &dwg, relu)),
                      kTwinTol)
                << "k " << k << " s " << s << " d " << d << " relu " << relu;
            EXPECT_LT(twin_err(dw, dwg), kTwinTol) << "k " << k << " s " << s << " d " << d << " relu " << relu;
          }
    Tensor wp = randn({2, 4}, rng);
    Tensor yp = pointwise_conv_forward(x, wp);
    EXPECT_LT(twin_err(yp, pointwise_conv_forward(G(x), G(wp))), kTwinTol);
    Tensor rp = randn(yp.shape(), rng);
    auto [dwp, dwpg] = twin_randn(wp.shape(), rng);
    EXPECT_LT(twin_err(pointwise_conv_backward(x, wp, rp, &dwp), pointwise_conv_backward(G(x), G(wp), G(rp), &dwpg)),
              kTwinTol);
    EXPECT_LT(twin_err(dwp, dwpg), kTwinTol);
    expect_pool_twins(x, rng);
    Tensor p = global_avg_pool_forward(x);
    EXPECT_LT(twin_err(p, global_avg_pool_forward(G(x))), kTwinTol);
    EXPECT_LT(twin_err(global_avg_pool_backward(x.shape(), p), global_avg_pool_backward(x.shape(), G(p))), kTwinTol);
    // batch norm over N * H * W = 16 or 48 values per channel (far fewer is ill-conditioned on both devices)
    Tensor xb = randn({H * W == 1 ? 16 : 8, 4, H, W}, rng), rb = randn(xb.shape(), rng);
    Tensor g = randn({4}, rng), b = randn({4}, rng), gg = G(g), bg = G(b);
    BatchNormCache c, cg;
    Tensor yb = batch_norm_forward(xb, &g, &b, true, &c, nullptr, nullptr);
    EXPECT_LT(twin_err(yb, batch_norm_forward(G(xb), &gg, &bg, true, &cg, nullptr, nullptr)), kTwinTol);
    auto [dg, dgg] = twin_randn({4}, rng);
    auto [db, dbg] = twin_randn({4}, rng);
    EXPECT_LT(twin_err(batch_norm_backward(xb, rb, &g, c, &dg, &db), batch_norm_backward(G(xb), G(rb), &gg, cg, &dgg, &dbg)),
              kTwinTol);
    EXPECT_LT(twin_err(dg, dgg), kTwinTol);
    EXPECT_LT(twin_err(db, dbg), kTwinTol);
  }
}

TEST(NasCudaTwins, MaxPoolTies) {
  NEED_GPU();
  std::mt19937_64 rng(6);
  // ties go to the first maximum in row-major window order on both devices (forward value and backward route)
  for (auto [H, W] : {std::pair{1, 1}, std::pair{2, 3}, std::pair{5, 7}, std::pair{8, 8}})
    for (int s : {1, 2})
      for (bool constant : {true, false}) {
        Tensor x = randn({2, 3, H, W}, rng);
        if (constant)
          x.fill(0.5f);
        else
          for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::round(1.5f * x.data()[i]);  // few values
        Tensor y = max_pool3x3_forward(x, s);
        EXPECT_LT(twin_err(y, max_pool3x3_forward(G(x), s)), kTwinTol);
        Tensor r = randn(y.shape(), rng);
        EXPECT_LT(twin_err(max_pool3x3_backward(x, r, s), max_pool3x3_backward(G(x), G(r), s)), kTwinTol)
            << H << "x" << W << " s " << s << (constant ? " constant" : " integers");
      }
}

TEST(NasCudaTwins, DepthwiseWeightGradientOverSeveralSlices) {
  NEED_GPU();
  std::mt19937_64 rng(7);
  // The CUDA weight gradient splits the N * Ho * Wo products of each tap into slices of about 8192:
  // 9 * 31 * 33 = 9207 gives 2 slices, 17 * 32 * 32 = 17408 gives 3, neither a multiple of the block size.
  struct Case {
    int N, C, H, W, k, s, d;
    bool relu;
  };
  for (Case c : {Case{9, 3, 31, 33, 3, 1, 1, false}, Case{17, 2, 64, 63, 5, 2, 2, true}}) {
    const int pad = c.d * (c.k - 1) / 2;
    Tensor x = randn({c.N, c.C, c.H, c.W}, rng), w = randn({c.C, 1, c.k, c.k}, rng);
    Tensor y = depthwise_conv2d_forward(x, w, c.s, pad, c.d, c.relu);
    EXPECT_LT(twin_err(y, depthwise_conv2d_forward(G(x), G(w), c.s, pad, c.d, c.relu)), kTwinTol);
    Tensor r = randn(y.shape(), rng);
    auto [dw, dwg] = twin_randn(w.shape(), rng);
    EXPECT_LT(twin_err(depthwise_conv2d_backward(x, w, r, c.s, pad, c.d, &dw, c.relu),
                       depthwise_conv2d_backward(G(x), G(w), G(r), c.s, pad, c.d, &dwg, c.relu)),
              kTwinTol);
    EXPECT_LT(twin_err(dw, dwg), kTwinTol) << "N " << c.N << " k " << c.k;
  }
}

TEST(NasCudaTwins, SupernetPassAndSearchStep) {
  NEED_GPU();
  SupernetConfig c;
  c.in_channels = 1;
  c.num_classes = 4;
  c.channels = 8;
  c.layers = 3;
  c.nodes = 3;
  c.multiplier = 3;
  Supernet cpu(c, Device::CPU, 9), gpu(c, Device::CUDA, 9);
  std::mt19937_64 rng(4);
  Tensor x = randn({8, 1, 12, 12}, rng), y({8});
  for (int i = 0; i < 8; ++i) y.data()[i] = static_cast<float>(i % 4);
  auto a = cpu.forward_backward(x, y, true, true);
  auto b = gpu.forward_backward(G(x), G(y), true, true);
  EXPECT_NEAR(a.loss, b.loss, 1e-4 * std::abs(a.loss));
  EXPECT_EQ(a.correct, b.correct);
  EXPECT_LT(twin_err(cpu.buffers(), gpu.buffers()), kTwinTol);  // batch-norm running statistics
  EXPECT_LT(twin_err(cpu.weight_grads(), gpu.weight_grads()), 1e-3);  // accumulated over the network
  std::vector<float> ga = cpu.alpha_grads(), gb = gpu.alpha_grads();
  double d = 0, m = 1e-6;
  for (std::size_t i = 0; i < ga.size(); ++i) {
    d = std::max(d, static_cast<double>(std::abs(ga[i] - gb[i])));
    m = std::max(m, static_cast<double>(std::abs(ga[i])));
  }
  EXPECT_LT(d / m, 1e-3);
}
