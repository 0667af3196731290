// Every nas op's backward against central finite differences (float32, small tensors, double accumulation).
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "fd.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/nas/ops.hpp"

using namespace kubetune::nas;
using kt_test::numeric_grad;
using kt_test::project;
using kt_test::randn;
using kt_test::rel_err;
using kt_test::to_double;

namespace {
constexpr double kTol = 2e-2;  // float32 forward, h = 1e-2 central differences
}

TEST(NasOps, Conv2dGradients) {
  std::mt19937_64 rng(1);
  Tensor x = randn({2, 3, 5, 6}, rng), w = randn({4, 3, 3, 3}, rng, 0.5f);
  for (int stride : {1, 2}) {
    Tensor y = conv2d_forward(x, w, stride, 1);
    ASSERT_EQ(y.dim(2), conv_out_size(5, 3, stride, 1));
    Tensor r = randn(y.shape(), rng);
    Tensor dw = Tensor::zeros(w.shape());
    Tensor dx = conv2d_backward(x, w, r, stride, 1, &dw);
    auto loss = [&] { return project(conv2d_forward(x, w, stride, 1), r); };
    EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, loss)), kTol) << "stride " << stride;
    EXPECT_LT(rel_err(to_double(dw), numeric_grad(w, loss)), kTol) << "stride " << stride;
  }
}

TEST(NasOps, Conv2dMatchesDirectSum) {
  std::mt19937_64 rng(2);
  Tensor x = randn({1, 2, 4, 4}, rng), w = randn({1, 2, 3, 3}, rng);
  Tensor y = conv2d_forward(x, w, 1, 1);
  // hand computation of output (0, 0, 1, 2)
  double s = 0;
  for (int c = 0; c < 2; ++c)
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw) {
        int ih = 1 - 1 + kh, iw = 2 - 1 + kw;
        if (ih < 0 || ih >= 4 || iw < 0 || iw >= 4) continue;
        s += x.data()[(c * 4 + ih) * 4 + iw] * w.data()[(c * 3 + kh) * 3 + kw];
      }
  EXPECT_NEAR(y.data()[1 * 4 + 2], s, 1e-5);
}

class DepthwiseGrad : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(DepthwiseGrad, MatchesFiniteDifferences) {
  auto [k, stride, dil] = GetParam();
  std::mt19937_64 rng(10 + k * 7 + stride * 3 + dil);
  const int pad = dil * (k - 1) / 2;
  Tensor x = randn({2, 3, 7, 8}, rng), w = randn({3, 1, k, k}, rng, 0.5f);
  Tensor y = depthwise_conv2d_forward(x, w, stride, pad, dil);
  EXPECT_EQ(y.dim(2), conv_out_size(7, k, stride, pad, dil));
  EXPECT_EQ(y.dim(3), conv_out_size(8, k, stride, pad, dil));
  Tensor r = randn(y.shape(), rng);
  Tensor dw = Tensor::zeros(w.shape());
  Tensor dx = depthwise_conv2d_backward(x, w, r, stride, pad, dil, &dw);
  // Init-captures: clang 14 does not implement C++20's capture of structured bindings.
  auto loss = [&, stride = stride, dil = dil] { return project(depthwise_conv2d_forward(x, w, stride, pad, dil), r); };
  EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, loss)), kTol);
  EXPECT_LT(rel_err(to_double(dw), numeric_grad(w, loss)), kTol);
}

TEST_P(DepthwiseGrad, ReluInputEqualsConvOfRelu) {
  // relu_input reads relu(x) on the fly: the same output, weight gradient and (unmasked) input gradient as the
  // convolution of an explicit relu(x)
  auto [k, stride, dil] = GetParam();
  std::mt19937_64 rng(90 + k * 7 + stride * 3 + dil);
  const int pad = dil * (k - 1) / 2;
  Tensor x = randn({2, 3, 7, 8}, rng), w = randn({3, 1, k, k}, rng, 0.5f);
  Tensor rx = relu_forward(x);
  Tensor y1 = depthwise_conv2d_forward(x, w, stride, pad, dil, true), y2 = depthwise_conv2d_forward(rx, w, stride, pad, dil);
  Tensor r = randn(y1.shape(), rng);
  Tensor dw1 = Tensor::zeros(w.shape()), dw2 = Tensor::zeros(w.shape());
  Tensor dx1 = depthwise_conv2d_backward(x, w, r, stride, pad, dil, &dw1, true);
  Tensor dx2 = depthwise_conv2d_backward(rx, w, r, stride, pad, dil, &dw2);
  for (std::int64_t i = 0; i < y1.numel(); ++i) ASSERT_EQ(y1.data()[i], y2.data()[i]);
  for (std::int64_t i = 0; i < dx1.numel(); ++i) ASSERT_EQ(dx1.data()[i], dx2.data()[i]);
  for (std::int64_t i = 0; i < dw1.numel(); ++i) ASSERT_EQ(dw1.data()[i], dw2.data()[i]);
}

TEST_P(DepthwiseGrad, MatchesDirectSums) {
  // Output, input gradient and weight gradient against the defining sums, on planes larger and smaller than
  // the kernel's reach (where every tap of a row or a whole plane falls in the padding).
  auto [k, stride, dil] = GetParam();
  const int pad = dil * (k - 1) / 2;
  // Even planes take the polyphase path at stride 2; the ReLU-input variant is checked on every other plane.
  for (auto [H, W] : {std::pair{7, 8}, std::pair{2, 3}, std::pair{1, 1}, std::pair{8, 6}, std::pair{4, 10},
                      std::pair{2, 2}}) {
    std::mt19937_64 rng(300 + H * 11 + W * 5 + k * 7 + stride * 3 + dil);
    const int N = 2, C = 3;
    const bool relu = (H + W) % 2 == 0;
    Tensor x = randn({N, C, H, W}, rng), w = randn({C, 1, k, k}, rng, 0.5f);
    Tensor y = depthwise_conv2d_forward(x, w, stride, pad, dil, relu);
    const int Ho = y.dim(2), Wo = y.dim(3);
    Tensor r = randn(y.shape(), rng);
    Tensor dw = Tensor::zeros(w.shape());
    Tensor dx = depthwise_conv2d_backward(x, w, r, stride, pad, dil, &dw, relu);
    Tensor dx_only = depthwise_conv2d_backward(x, w, r, stride, pad, dil, nullptr, relu);
    std::vector<double> ey(y.numel(), 0.0), edx(x.numel(), 0.0), edw(w.numel(), 0.0);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int oh = 0; oh < Ho; ++oh)
          for (int ow = 0; ow < Wo; ++ow)
            for (int kh = 0; kh < k; ++kh)
              for (int kw = 0; kw < k; ++kw) {
                const int ih = oh * stride + kh * dil - pad, iw = ow * stride + kw * dil - pad;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const std::int64_t xi = ((static_cast<std::int64_t>(n) * C + c) * H + ih) * W + iw;
                const std::int64_t yi = ((static_cast<std::int64_t>(n) * C + c) * Ho + oh) * Wo + ow;
                const std::int64_t wi = (static_cast<std::int64_t>(c) * k + kh) * k + kw;
                const double xv = relu ? std::max(x.data()[xi], 0.0f) : x.data()[xi];
                ey[yi] += double(w.data()[wi]) * xv;
                edx[xi] += double(w.data()[wi]) * r.data()[yi];  // the gradient with respect to relu(x)
                edw[wi] += double(r.data()[yi]) * xv;
              }
    for (std::int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.data()[i], ey[i], 1e-5) << H << "x" << W << " y " << i;
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      ASSERT_NEAR(dx.data()[i], edx[i], 1e-5) << H << "x" << W << " dx " << i;
      ASSERT_EQ(dx_only.data()[i], dx.data()[i]) << H << "x" << W << " dx without dw " << i;
    }
    for (std::int64_t i = 0; i < w.numel(); ++i) ASSERT_NEAR(dw.data()[i], edw[i], 1e-4) << H << "x" << W << " dw " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, DepthwiseGrad,
                         ::testing::Combine(::testing::Values(3, 5), ::testing::Values(1, 2), ::testing::Values(1, 2)));

TEST(NasOps, PointwiseGradients) {
  std::mt19937_64 rng(3);
  Tensor x = randn({2, 5, 3, 4}, rng), w = randn({6, 5}, rng);
  Tensor y = pointwise_conv_forward(x, w);
  // y[n, o, p] = sum_c W[o, c] x[n, c, p]
  double s = 0;
  for (int c = 0; c < 5; ++c) s += w.data()[2 * 5 + c] * x.data()[(1 * 5 + c) * 12 + 7];
  EXPECT_NEAR(y.data()[(1 * 6 + 2) * 12 + 7], s, 1e-5);
  Tensor r = randn(y.shape(), rng);
  Tensor dw = Tensor::zeros(w.shape());
  Tensor dx = pointwise_conv_backward(x, w, r, &dw);
  auto loss = [&] { return project(pointwise_conv_forward(x, w), r); };
  EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, loss)), kTol);
  EXPECT_LT(rel_err(to_double(dw), numeric_grad(w, loss)), kTol);
}

TEST(NasOps, ReluGradient) {
  std::mt19937_64 rng(4);
  Tensor x = randn({2, 2, 3, 3}, rng);
  for (std::int64_t i = 0; i < x.numel(); ++i)  // keep away from the kink
    if (std::abs(x.data()[i]) < 0.1f) x.data()[i] = 0.5f;
  Tensor y = relu_forward(x);
  Tensor r = randn(y.shape(), rng);
  Tensor dx = relu_backward(y, r);
  auto loss = [&] { return project(relu_forward(x), r); };
  EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, loss)), 1e-3);
}

TEST(NasOps, BatchNormTrainingGradients) {
  for (bool affine : {false, true}) {
    std::mt19937_64 rng(5 + affine);
    Tensor x = randn({3, 2, 3, 3}, rng, 2.0f), g = randn({2}, rng), b = randn({2}, rng);
    Tensor* gp = affine ? &g : nullptr;
    Tensor* bp = affine ? &b : nullptr;
    BatchNormCache cache;
    Tensor y = batch_norm_forward(x, gp, bp, true, &cache, nullptr, nullptr);
    // normalised output: per-channel mean 0 and (biased) variance 1 without affine
    if (!affine) {
      for (int c = 0; c < 2; ++c) {
        double s = 0, s2 = 0;
        for (int n = 0; n < 3; ++n)
          for (int i = 0; i < 9; ++i) {
            double v = y.data()[(n * 2 + c) * 9 + i];
            s += v;
            s2 += v * v;
          }
        EXPECT_NEAR(s / 27, 0.0, 1e-5);
        EXPECT_NEAR(s2 / 27, 1.0, 1e-3);
      }
    }
    Tensor r = randn(y.shape(), rng);
    Tensor dg = Tensor::zeros({2}), db = Tensor::zeros({2});
    Tensor dx = batch_norm_backward(x, r, gp, cache, affine ? &dg : nullptr, affine ? &db : nullptr);
    auto loss = [&] { return project(batch_norm_forward(x, gp, bp, true, nullptr, nullptr, nullptr), r); };
    EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, loss, 5e-3)), kTol) << "affine " << affine;
    if (affine) {
      EXPECT_LT(rel_err(to_double(dg), numeric_grad(g, loss)), kTol);
      EXPECT_LT(rel_err(to_double(db), numeric_grad(b, loss)), kTol);
    }
  }
}

TEST(NasOps, BatchNormBackwardFusesOutputScale) {
  std::mt19937_64 rng(15);
  Tensor x = randn({3, 2, 3, 3}, rng), g = randn({2}, rng), b = randn({2}, rng), r = randn({3, 2, 3, 3}, rng);
  BatchNormCache cache;
  batch_norm_forward(x, &g, &b, true, &cache, nullptr, nullptr);
  Tensor dg1 = Tensor::zeros({2}), db1 = Tensor::zeros({2}), dg2 = Tensor::zeros({2}), db2 = Tensor::zeros({2});
  Tensor dx1 = batch_norm_backward(x, r, &g, cache, &dg1, &db1);
  Tensor dx2 = batch_norm_backward(x, r, &g, cache, &dg2, &db2, 0.25f);
  for (std::int64_t i = 0; i < dx1.numel(); ++i) EXPECT_NEAR(dx2.data()[i], 0.25f * dx1.data()[i], 1e-6);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(dg2.data()[c], 0.25f * dg1.data()[c], 1e-6);
    EXPECT_NEAR(db2.data()[c], 0.25f * db1.data()[c], 1e-6);
  }
}

TEST(NasOps, BatchNormApplyAndAlphaDotPartials) {
  // batch_norm_apply recomputes the training forward's output bit for bit (ReLU optional), and the backward's
  // dot partials sum to <dy, y> (gamma and beta included) without keeping y.
  std::mt19937_64 rng(41);
  Tensor x = randn({3, 4, 5, 6}, rng), r = randn({3, 4, 5, 6}, rng);
  Tensor g = randn({4}, rng), b = randn({4}, rng);
  for (bool affine : {false, true}) {
    const Tensor* gp = affine ? &g : nullptr;
    const Tensor* bp = affine ? &b : nullptr;
    BatchNormCache cache;
    Tensor y = batch_norm_forward(x, gp, bp, true, &cache, nullptr, nullptr);
    Tensor y2 = batch_norm_apply(x, gp, bp, cache, false);
    Tensor yr = batch_norm_apply(x, gp, bp, cache, true);
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_EQ(y.data()[i], y2.data()[i]) << i;
      ASSERT_EQ(std::max(y.data()[i], 0.0f), yr.data()[i]) << i;
    }
    std::vector<float> part(4, -1.0f);
    Tensor dx_plain = batch_norm_backward(x, r, gp, cache, nullptr, nullptr, 0.5f);
    Tensor dx = batch_norm_backward(x, r, gp, cache, nullptr, nullptr, 0.5f, part.data(), bp);
    for (std::int64_t i = 0; i < dx.numel(); ++i) ASSERT_EQ(dx.data()[i], dx_plain.data()[i]);
    double want = 0, got = 0;
    for (int c = 0; c < 4; ++c) {
      double per = 0;
      for (int n = 0; n < 3; ++n)
        for (int i = 0; i < 30; ++i) {
          const std::int64_t o = (n * 4 + c) * 30 + i;
          per += static_cast<double>(r.data()[o]) * y.data()[o];
        }
      EXPECT_NEAR(part[c], per, 1e-4 * (1 + std::abs(per))) << "channel " << c << " affine " << affine;
      want += per;
      got += part[c];
    }
    EXPECT_NEAR(got, want, 1e-4 * (1 + std::abs(want)));
  }
  std::vector<float> cd(4);
  channel_dots(x, r, cd.data());
  for (int c = 0; c < 4; ++c) {
    double per = 0;
    for (int n = 0; n < 3; ++n)
      for (int i = 0; i < 30; ++i) per += static_cast<double>(x.data()[(n * 4 + c) * 30 + i]) * r.data()[(n * 4 + c) * 30 + i];
    EXPECT_NEAR(cd[c], per, 1e-4 * (1 + std::abs(per)));
  }
  BatchNormCache empty;
  EXPECT_THROW(batch_norm_apply(x, nullptr, nullptr, empty, false), kubetune::StateError);
}

TEST(NasOps, BatchNormRunningStatsAndEval) {
  Tensor x({2, 1, 1, 2});
  float v[] = {1, 2, 3, 6};
  std::copy(v, v + 4, x.data());
  Tensor rm = Tensor::zeros({1}), rv = Tensor::full({1}, 1.0f);
  batch_norm_forward(x, nullptr, nullptr, true, nullptr, &rm, &rv, 0.1f);
  // mean 3, unbiased variance ((4 + 1 + 0 + 9) / 3)
  EXPECT_NEAR(rm.data()[0], 0.3, 1e-6);
  EXPECT_NEAR(rv.data()[0], 0.9 + 0.1 * 14.0 / 3.0, 1e-5);
  Tensor y = batch_norm_forward(x, nullptr, nullptr, false, nullptr, &rm, &rv);
  EXPECT_NEAR(y.data()[0], (1 - 0.3) / std::sqrt(rv.data()[0] + 1e-5), 1e-5);
  EXPECT_THROW(batch_norm_forward(x, nullptr, nullptr, false, nullptr, nullptr, nullptr), kubetune::InvalidArgument);
}

TEST(NasOps, PoolsMatchDirectWindowsOnAllShapes) {
  // the separable CPU pools against a direct 3x3 window loop (padding excluded), tiny and odd shapes included
  std::mt19937_64 rng(52);
  for (auto [H, W] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 3}, {3, 3}, {5, 7}, {6, 8}, {7, 4}})
    for (int s : {1, 2}) {
      Tensor x = randn({2, 3, H, W}, rng);
      Tensor ym = max_pool3x3_forward(x, s), ya = avg_pool3x3_forward(x, s);
      const int Ho = conv_out_size(H, 3, s, 1), Wo = conv_out_size(W, 3, s, 1);
      ASSERT_EQ(ym.dim(2), Ho);
      ASSERT_EQ(ym.dim(3), Wo);
      for (int p = 0; p < 6; ++p)
        for (int oh = 0; oh < Ho; ++oh)
          for (int ow = 0; ow < Wo; ++ow) {
            float m = -1e30f;
            double sum = 0;
            int cnt = 0;
            for (int ih = oh * s - 1; ih <= oh * s + 1; ++ih)
              for (int iw = ow * s - 1; iw <= ow * s + 1; ++iw)
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                  const float v = x.data()[(p * H + ih) * W + iw];
                  m = std::max(m, v);
                  sum += v;
                  ++cnt;
                }
            const std::int64_t o = (static_cast<std::int64_t>(p) * Ho + oh) * Wo + ow;
            ASSERT_EQ(ym.data()[o], m) << H << "x" << W << " s" << s;
            ASSERT_NEAR(ya.data()[o], sum / cnt, 1e-6) << H << "x" << W << " s" << s;
          }
    }
}

TEST(NasOps, MaxPoolBackwardRoutesToTheFirstMaximum) {
  // Each output's gradient goes to the first maximum of its window in row-major order (ties are common here:
  // values on a coarse grid), summed per input in output order: exact equality with a direct loop.
  std::mt19937_64 rng(53);
  for (auto [H, W] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 3}, {3, 3}, {5, 7}, {6, 8}, {28, 28}})
    for (int s : {1, 2}) {
      Tensor x = randn({2, 3, H, W}, rng);
      for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::round(x.data()[i] * 2.0f) / 2.0f;
      const int Ho = conv_out_size(H, 3, s, 1), Wo = conv_out_size(W, 3, s, 1);
      Tensor dy = randn({2, 3, Ho, Wo}, rng);
      Tensor dx = max_pool3x3_backward(x, dy, s);
      std::vector<float> e(static_cast<std::size_t>(x.numel()), 0.0f);
      for (int p = 0; p < 6; ++p)
        for (int oh = 0; oh < Ho; ++oh)
          for (int ow = 0; ow < Wo; ++ow) {
            int arg = -1;
            for (int ih = oh * s - 1; ih <= oh * s + 1; ++ih)
              for (int iw = ow * s - 1; iw <= ow * s + 1; ++iw)
                if (ih >= 0 && ih < H && iw >= 0 && iw < W &&
                    (arg < 0 || x.data()[p * H * W + ih * W + iw] > x.data()[p * H * W + arg]))
                  arg = ih * W + iw;
            e[static_cast<std::size_t>(p * H * W + arg)] += dy.data()[(p * Ho + oh) * Wo + ow];
          }
      for (std::int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(dx.data()[i], e[i]) << H << "x" << W << " s" << s << " i " << i;
    }
}

TEST(NasOps, AvgPoolBackwardMatchesDirectScatter) {
  // dy / (in-bounds count) scattered over each window, against the separable stride-1 path and the stride-2 loop
  std::mt19937_64 rng(54);
  for (auto [H, W] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 3}, {3, 3}, {5, 7}, {28, 28}})
    for (int s : {1, 2}) {
      const int Ho = conv_out_size(H, 3, s, 1), Wo = conv_out_size(W, 3, s, 1);
      Tensor dy = randn({2, 3, Ho, Wo}, rng);
      Tensor dx = avg_pool3x3_backward({2, 3, H, W}, dy, s);
      std::vector<double> e(static_cast<std::size_t>(6 * H * W), 0.0);
      for (int p = 0; p < 6; ++p)
        for (int oh = 0; oh < Ho; ++oh)
          for (int ow = 0; ow < Wo; ++ow) {
            const int h0 = std::max(oh * s - 1, 0), h1 = std::min(oh * s + 1, H - 1);
            const int w0 = std::max(ow * s - 1, 0), w1 = std::min(ow * s + 1, W - 1);
            const double g = dy.data()[(p * Ho + oh) * Wo + ow] / double((h1 - h0 + 1) * (w1 - w0 + 1));
            for (int ih = h0; ih <= h1; ++ih)
              for (int iw = w0; iw <= w1; ++iw) e[static_cast<std::size_t>(p * H * W + ih * W + iw)] += g;
          }
      for (std::int64_t i = 0; i < dx.numel(); ++i) ASSERT_NEAR(dx.data()[i], e[i], 1e-5) << H << "x" << W << " s" << s;
    }
}

TEST(NasOps, PoolGradients) {
  std::mt19937_64 rng(6);
  for (int stride : {1, 2}) {
    // distinct, well separated values so the max is stable under +-h
    Tensor x({2, 2, 5, 6});
    std::vector<int> perm(x.numel());
    for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int>(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 0.1f * perm[i];
    Tensor ym = max_pool3x3_forward(x, stride);
    Tensor r = randn(ym.shape(), rng);
    Tensor dx = max_pool3x3_backward(x, r, stride);
    auto lm = [&] { return project(max_pool3x3_forward(x, stride), r); };
    EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, lm, 1e-2)), 1e-3) << "max stride " << stride;

    Tensor ya = avg_pool3x3_forward(x, stride);
    Tensor dxa = avg_pool3x3_backward(x.shape(), r, stride);
    auto la = [&] { return project(avg_pool3x3_forward(x, stride), r); };
    EXPECT_LT(rel_err(to_double(dxa), numeric_grad(x, la)), kTol) << "avg stride " << stride;
  }
  // average excludes padding: a corner output averages 4 inputs
  Tensor x = Tensor::full({1, 1, 3, 3}, 1.0f);
  x.data()[0] = 5.0f;
  Tensor y = avg_pool3x3_forward(x, 1);
  EXPECT_NEAR(y.data()[0], (5 + 1 + 1 + 1) / 4.0, 1e-6);
  EXPECT_NEAR(y.data()[4], (5 + 8) / 9.0, 1e-6);
  EXPECT_FLOAT_EQ(max_pool3x3_forward(x, 1).data()[8], 1.0f);
}

TEST(NasOps, FactorizedReduceGradients) {
  for (bool affine : {false, true}) {
    std::mt19937_64 rng(7);
    Tensor x = randn({2, 3, 4, 6}, rng);
    for (std::int64_t i = 0; i < x.numel(); ++i)
      if (std::abs(x.data()[i]) < 0.1f) x.data()[i] = -0.5f;
    Tensor w1 = randn({2, 3}, rng), w2 = randn({2, 3}, rng), g = randn({4}, rng), b = randn({4}, rng);
    Tensor* gp = affine ? &g : nullptr;
    Tensor* bp = affine ? &b : nullptr;
    FactorizedReduceCache cache;
    Tensor y = factorized_reduce_forward(x, w1, w2, gp, bp, true, &cache, nullptr, nullptr);
    ASSERT_EQ(y.shape(), (std::vector<int>{2, 4, 2, 3}));
    Tensor r = randn(y.shape(), rng);
    Tensor d1 = Tensor::zeros(w1.shape()), d2 = Tensor::zeros(w2.shape()), dg = Tensor::zeros({4}),
           db = Tensor::zeros({4});
    Tensor dx = factorized_reduce_backward(x, w1, w2, gp, r, cache, &d1, &d2, affine ? &dg : nullptr,
                                           affine ? &db : nullptr);
    auto loss = [&] { return project(factorized_reduce_forward(x, w1, w2, gp, bp, true, nullptr, nullptr, nullptr), r); };
    EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, loss, 5e-3)), kTol);
    EXPECT_LT(rel_err(to_double(d1), numeric_grad(w1, loss, 5e-3)), kTol);
    EXPECT_LT(rel_err(to_double(d2), numeric_grad(w2, loss, 5e-3)), kTol);
    if (affine) {
      EXPECT_LT(rel_err(to_double(dg), numeric_grad(g, loss)), kTol);
    }
  }
  std::mt19937_64 rng(8);
  Tensor odd = randn({1, 2, 5, 4}, rng), w = randn({1, 2}, rng);
  EXPECT_THROW(factorized_reduce_forward(odd, w, w, nullptr, nullptr, true, nullptr, nullptr, nullptr),
               kubetune::InvalidArgument);
}

TEST(NasOps, GlobalPoolLinearAndLossGradients) {
  std::mt19937_64 rng(9);
  Tensor x = randn({3, 4, 2, 3}, rng);
  Tensor p = global_avg_pool_forward(x);
  Tensor r = randn(p.shape(), rng);
  Tensor dx = global_avg_pool_backward(x.shape(), r);
  auto lp = [&] { return project(global_avg_pool_forward(x), r); };
  EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, lp)), 1e-3);

  Tensor f = randn({3, 5}, rng), w = randn({4, 5}, rng), b = randn({4}, rng);
  Tensor ry = randn({3, 4}, rng);
  Tensor dw = Tensor::zeros(w.shape()), db = Tensor::zeros(b.shape());
  Tensor df = linear_backward(f, w, ry, &dw, &db);
  auto ll = [&] { return project(linear_forward(f, w, b), ry); };
  EXPECT_LT(rel_err(to_double(df), numeric_grad(f, ll)), 1e-3);
  EXPECT_LT(rel_err(to_double(dw), numeric_grad(w, ll)), 1e-3);
  EXPECT_LT(rel_err(to_double(db), numeric_grad(b, ll)), 1e-3);

  Tensor logits = randn({4, 5}, rng);
  Tensor labels({4});
  float lab[] = {0, 3, 4, 1};
  std::copy(lab, lab + 4, labels.data());
  auto ce = softmax_cross_entropy(logits, labels, true);
  // closed form for row 0
  double m = 0, z = 0, loss = 0;
  for (int n = 0; n < 4; ++n) {
    const float* row = logits.data() + n * 5;
    m = *std::max_element(row, row + 5);
    z = 0;
    for (int k = 0; k < 5; ++k) z += std::exp(row[k] - m);
    loss += m + std::log(z) - row[static_cast<int>(lab[n])];
  }
  EXPECT_NEAR(ce.loss, loss / 4, 1e-6);
  auto lce = [&] { return softmax_cross_entropy(logits, labels, false).loss; };
  EXPECT_LT(rel_err(to_double(ce.dlogits), numeric_grad(logits, lce, 1e-3)), 1e-2);
  labels.data()[2] = 7;
  EXPECT_THROW(softmax_cross_entropy(logits, labels, false), kubetune::InvalidArgument);
}

TEST(NasOps, SubsampleConcatSplit) {
  std::mt19937_64 rng(11);
  Tensor x = randn({2, 3, 4, 4}, rng);
  Tensor s1 = subsample2_forward(x, 1);
  EXPECT_FLOAT_EQ(s1.data()[0], x.data()[1 * 4 + 1]);
  Tensor r = randn(s1.shape(), rng);
  Tensor dx = subsample2_backward(x.shape(), r, 1);
  auto l = [&] { return project(subsample2_forward(x, 1), r); };
  EXPECT_LT(rel_err(to_double(dx), numeric_grad(x, l)), 1e-3);
  Tensor a = randn({2, 1, 2, 2}, rng), b = randn({2, 2, 2, 2}, rng);
  Tensor c = concat_channels({&a, &b});
  ASSERT_EQ(c.dim(1), 3);
  EXPECT_FLOAT_EQ(c.data()[3 * 4 + 4 + 1], b.data()[4 * 2 + 1 - 4 + 4]);  // n=1, channel 1 = b[1, 0]
  auto parts = split_channels(c, {1, 2});
  EXPECT_EQ(kt_test::to_double(parts[1]), kt_test::to_double(b));
}

TEST(NasOps, FusedCombineAndDots) {
  std::mt19937_64 rng(12);
  Tensor a = randn({3, 2, 5, 5}, rng), b = randn({3, 2, 5, 5}, rng), c = randn({3, 2, 5, 5}, rng);
  Tensor y = weighted_sum({&a, &b, &c}, {0.2f, 0.5f, 0.3f});
  for (std::int64_t i = 0; i < y.numel(); i += 17)
    EXPECT_NEAR(y.data()[i], 0.2 * a.data()[i] + 0.5 * b.data()[i] + 0.3 * c.data()[i], 1e-5);
  auto d = batched_dot({&a, &b}, c);
  EXPECT_NEAR(d[0], project(a, c), 1e-4);
  EXPECT_NEAR(d[1], project(b, c), 1e-4);
  EXPECT_THROW(weighted_sum({&a, &b}, {1.0f}), kubetune::InvalidArgument);
}

TEST(NasOps, OptimiserSteps) {
  Tensor w = Tensor::full({2}, 1.0f), g = Tensor::full({2}, 0.5f), buf = Tensor::zeros({2});
  sgd_momentum_step(w, g, buf, 0.1f, 0.9f, 0.01f);
  EXPECT_NEAR(w.data()[0], 1.0 - 0.1 * 0.51, 1e-6);
  sgd_momentum_step(w, g, buf, 0.1f, 0.9f, 0.0f);
  EXPECT_NEAR(buf.data()[0], 0.9 * 0.51 + 0.5, 1e-6);
  Tensor p = Tensor::full({1}, 1.0f), m = Tensor::zeros({1}), v = Tensor::zeros({1}), gg = Tensor::full({1}, 2.0f);
  adam_step(p, gg, m, v, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
  EXPECT_NEAR(p.data()[0], 0.9, 1e-5);  // first Adam step moves by lr * sign(g)
}

TEST(NasOps, ErrorsNameTheProblem) {
  Tensor x({1, 2, 4, 4}), w({3, 1, 3, 3});
  try {
    depthwise_conv2d_forward(x, w, 1, 1, 1);
    FAIL();
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 1, k, k]"), std::string::npos);
  }
  EXPECT_THROW(parse_device("tpu"), kubetune::InvalidArgument);
  EXPECT_EQ(parse_device("CUDA"), Device::CUDA);
}
