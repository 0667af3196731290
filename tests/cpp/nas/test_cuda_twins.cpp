// Every CUDA op against its CPU twin (1e-4 relative); skipped where no GPU is present.
#include <gtest/gtest.h>

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

/// max |a - b| / max(max |a|, 1e-3) over all entries.
double twin_err(const Tensor& cpu, const Tensor& gpu) {
  auto a = cpu.to_host();
  auto b = gpu.to_host();
  EXPECT_EQ(a.size(), b.size());
  double d = 0, m = 1e-3;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
    m = std::max(m, static_cast<double>(std::abs(a[i])));
  }
  return d / m;
}

Tensor G(const Tensor& t) { return t.to(Device::CUDA); }

}  // namespace

TEST(NasCudaTwins, ConvolutionsAndPointwise) {
  NEED_GPU();
  std::mt19937_64 rng(1);
  Tensor x = randn({4, 3, 9, 10}, rng), w = randn({5, 3, 3, 3}, rng);
  for (int s : {1, 2}) {
    Tensor y = conv2d_forward(x, w, s, 1), yg = conv2d_forward(G(x), G(w), s, 1);
    EXPECT_LT(twin_err(y, yg), kTwinTol);
    Tensor r = randn(y.shape(), rng);
    Tensor dw = Tensor::zeros(w.shape()), dwg = Tensor::zeros(w.shape(), Device::CUDA);
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
        Tensor dw = Tensor::zeros(wd.shape()), dwg = Tensor::zeros(wd.shape(), Device::CUDA);
        EXPECT_LT(twin_err(depthwise_conv2d_backward(xc, wd, r, s, pad, d, &dw),
                           depthwise_conv2d_backward(G(xc), G(wd), G(r), s, pad, d, &dwg)),
                  kTwinTol);
        EXPECT_LT(twin_err(dw, dwg), kTwinTol) << "k " << k << " s " << s << " d " << d;
        // ReLU fused into the reads
        EXPECT_LT(twin_err(depthwise_conv2d_forward(xc, wd, s, pad, d, true),
                           depthwise_conv2d_forward(G(xc), G(wd), s, pad, d, true)),
                  kTwinTol);
        Tensor dwr = Tensor::zeros(wd.shape()), dwrg = Tensor::zeros(wd.shape(), Device::CUDA);
        EXPECT_LT(twin_err(depthwise_conv2d_backward(xc, wd, r, s, pad, d, &dwr, true),
                           depthwise_conv2d_backward(G(xc), G(wd), G(r), s, pad, d, &dwrg, true)),
                  kTwinTol);
        EXPECT_LT(twin_err(dwr, dwrg), kTwinTol) << "relu_input k " << k << " s " << s << " d " << d;
      }
  Tensor wp = randn({7, 6}, rng);
  Tensor y = pointwise_conv_forward(xc, wp);
  EXPECT_LT(twin_err(y, pointwise_conv_forward(G(xc), G(wp))), kTwinTol);
  Tensor r = randn(y.shape(), rng);
  Tensor dw = Tensor::zeros(wp.shape()), dwg = Tensor::zeros(wp.shape(), Device::CUDA);
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
    Tensor rm = Tensor::zeros({5}), rv = Tensor::full({5}, 1.0f);
    Tensor rmg = G(rm), rvg = G(rv);
    Tensor yb = batch_norm_forward(x, affine ? &g : nullptr, affine ? &b : nullptr, true, &c, &rm, &rv);
    Tensor ybg = batch_norm_forward(G(x), affine ? &gg : nullptr, affine ? &bg : nullptr, true, &cg, &rmg, &rvg);
    EXPECT_LT(twin_err(yb, ybg), kTwinTol);
    EXPECT_LT(twin_err(rv, rvg), kTwinTol);
    Tensor dg = Tensor::zeros({5}), db = Tensor::zeros({5});
    Tensor dgg = G(dg), dbg = G(db);
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
    Tensor part = Tensor::zeros({5}), partg = G(part);
    batch_norm_backward(x, r, affine ? &g : nullptr, c, nullptr, nullptr, 0.5f, part.data(), affine ? &b : nullptr);
    batch_norm_backward(G(x), G(r), affine ? &gg : nullptr, cg, nullptr, nullptr, 0.5f, partg.data(),
                        affine ? &bg : nullptr);
    EXPECT_LT(twin_err(part, partg), kTwinTol);
    EXPECT_LT(twin_err(batch_norm_forward(x, nullptr, nullptr, false, nullptr, &rm, &rv),
                       batch_norm_forward(G(x), nullptr, nullptr, false, nullptr, &rmg, &rvg)),
              kTwinTol);
  }
  for (int s : {1, 2}) {
    Tensor ym = max_pool3x3_forward(x, s);
    EXPECT_LT(twin_err(ym, max_pool3x3_forward(G(x), s)), kTwinTol);
    Tensor rp = randn(ym.shape(), rng);
    EXPECT_LT(twin_err(max_pool3x3_backward(x, rp, s), max_pool3x3_backward(G(x), G(rp), s)), kTwinTol);
    EXPECT_LT(twin_err(avg_pool3x3_forward(x, s), avg_pool3x3_forward(G(x), s)), kTwinTol);
    EXPECT_LT(twin_err(avg_pool3x3_backward(x.shape(), rp, s), avg_pool3x3_backward(x.shape(), G(rp), s)), kTwinTol);
  }
  for (int off : {0, 1}) {
    Tensor ys = subsample2_forward(x, off);
    EXPECT_LT(twin_err(ys, subsample2_forward(G(x), off)), kTwinTol);
    EXPECT_LT(twin_err(subsample2_backward(x.shape(), ys, off), subsample2_backward(x.shape(), G(ys), off)), kTwinTol);
  }
  Tensor a = randn({4, 2, 8, 6}, rng);
  Tensor ag = G(a), xg = G(x);
  Tensor cat = concat_channels({&a, &x});
  EXPECT_LT(twin_err(cat, concat_channels({&ag, &xg})), kTwinTol);
  EXPECT_LT(twin_err(split_channels(cat, {2, 5})[1], split_channels(G(cat), {2, 5})[1]), kTwinTol);
  Tensor cd = Tensor::zeros({5}), cdg = G(cd);
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
  Tensor d1 = Tensor::zeros(w1.shape()), d1g = G(d1), d2 = Tensor::zeros(w2.shape()), d2g = G(d2);
  EXPECT_LT(twin_err(factorized_reduce_backward(x, w1, w2, nullptr, r, c, &d1, &d2, nullptr, nullptr),
                     factorized_reduce_backward(G(x), w1g, w2g, nullptr, G(r), cg, &d1g, &d2g, nullptr, nullptr)),
            kTwinTol);
  EXPECT_LT(twin_err(d1, d1g), kTwinTol);

  Tensor f = randn({8, 12}, rng), w = randn({10, 12}, rng), b = randn({10}, rng);
  Tensor l = linear_forward(f, w, b);
  EXPECT_LT(twin_err(l, linear_forward(G(f), G(w), G(b))), kTwinTol);
  Tensor dl = randn(l.shape(), rng);
  Tensor dw = Tensor::zeros(w.shape()), dwg = G(dw), db = Tensor::zeros(b.shape()), dbg = G(db);
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
  Tensor wv = randn({100}, rng), gv = randn({100}, rng), buf = Tensor::zeros({100});
  Tensor wvg = G(wv), gvg = G(gv), bufg = G(buf);
  sgd_momentum_step(wv, gv, buf, 0.1f, 0.9f, 1e-3f);
  sgd_momentum_step(wvg, gvg, bufg, 0.1f, 0.9f, 1e-3f);
  EXPECT_LT(twin_err(wv, wvg), kTwinTol);
  Tensor m = Tensor::zeros({100}), v = Tensor::zeros({100}), mg = G(m), vg = G(v);
  adam_step(wv, gv, m, v, 0.01f, 0.5f, 0.999f, 1e-8f, 1e-3f, 1);
  adam_step(wvg, gvg, mg, vg, 0.01f, 0.5f, 0.999f, 1e-8f, 1e-3f, 1);
  EXPECT_LT(twin_err(wv, wvg), kTwinTol);
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
  EXPECT_LT(twin_err(cpu.weight_grads(), gpu.weight_grads()), 1e-3);  // accumulated over the network
  std::vector<float> ga = cpu.alpha_grads(), gb = gpu.alpha_grads();
  double d = 0, m = 1e-6;
  for (std::size_t i = 0; i < ga.size(); ++i) {
    d = std::max(d, static_cast<double>(std::abs(ga[i] - gb[i])));
    m = std::max(m, static_cast<double>(std::abs(ga[i])));
  }
  EXPECT_LT(d / m, 1e-3);
}
