// Mixed op, supernet and DARTS architecture gradients against finite differences; genotype; a short search.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "fd.hpp"
#include "kubetune/core/device.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/nas/darts.hpp"
#include "kubetune/nas/data.hpp"
#include "kubetune/nas/genotype.hpp"
#include "kubetune/nas/supernet.hpp"

using namespace kubetune::nas;
using kt_test::numeric_grad;
using kt_test::project;
using kt_test::randn;
using kt_test::rel_err;
using kt_test::to_double;

namespace {

std::vector<OpKind> all_ops() {
  std::vector<OpKind> v;
  for (const auto& n : darts_ops()) v.push_back(parse_op(n));
  return v;
}

std::vector<double> numeric_grad_vec(std::vector<float>& v, const std::function<double()>& loss, double h) {
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float o = v[i];
    v[i] = static_cast<float>(o + h);
    const double lp = loss();
    v[i] = static_cast<float>(o - h);
    const double lm = loss();
    v[i] = o;
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

SupernetConfig tiny_net() {
  SupernetConfig c;
  c.in_channels = 1;
  c.num_classes = 3;
  c.channels = 4;
  c.layers = 3;  // normal, reduction, reduction
  c.nodes = 2;
  c.multiplier = 2;
  c.stem_multiplier = 1;
  return c;
}

/// Three classes of 8x8 images: horizontal bar, vertical bar, diagonal, at random positions, plus noise.
Dataset bars(int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<int> pos(1, 6);
  Dataset d;
  d.n = n;
  d.c = 1;
  d.h = d.w = 8;
  d.num_classes = 3;
  for (int i = 0; i < n; ++i) {
    int k = i % 3, p = pos(rng);
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) {
        bool on = (k == 0 && r == p) || (k == 1 && c == p) || (k == 2 && std::abs(r - c) <= 0 && true);
        d.x.push_back((on ? 1.0f : 0.0f) + noise(rng));
      }
    d.y.push_back(k);
  }
  return d;
}

Batch to_batch(const Darts& darts, const Dataset& d, int from, int count) {
  std::vector<int> rows(count);
  for (int i = 0; i < count; ++i) rows[i] = from + i;
  return darts.make_batch(d.x.data(), d.y.data(), rows, d.c, d.h, d.w);
}

}  // namespace

TEST(NasMixedOp, AlphaInputAndWeightGradients) {
  // affine: the alpha gradient's <dy, o_k> comes out of each op's batch-norm backward, gamma and beta included
  for (bool affine : {false, true})
  for (int stride : {1, 2}) {
    ParamStore p, b;
    MixedOp m(p, b, 4, stride, all_ops(), affine);
    p.allocate(Device::CPU, 3);
    b.allocate(Device::CPU, 3);
    PassContext ctx{&p, &b, true, true, true};
    std::mt19937_64 rng(20 + stride);
    if (affine)  // move gamma off 1 and beta off 0
      for (std::int64_t i = 0; i < p.values().numel(); ++i)
        p.values().data()[i] += std::normal_distribution<float>(0.0f, 0.3f)(rng);
    Tensor x = randn({2, 4, 6, 6}, rng);
    std::vector<float> alpha(8);
    for (auto& a : alpha) a = std::normal_distribution<float>(0.0f, 0.5f)(rng);
    Tensor y = m.forward(x, alpha.data(), ctx);
    ASSERT_EQ(y.dim(2), stride == 1 ? 6 : 3);
    Tensor r = randn(y.shape(), rng);
    std::vector<float> dalpha(8, 0.0f);
    p.grads().zero();
    Tensor dx = m.backward(r, dalpha.data(), ctx);
    auto loss = [&] { return project(m.forward(x, alpha.data(), ctx), r); };
    auto fa = numeric_grad_vec(alpha, loss, 1e-2);
    EXPECT_LT(rel_err(std::vector<double>(dalpha.begin(), dalpha.end()), fa), 2e-2)
        << "stride " << stride << " affine " << affine;
    // softmax Jacobian rows sum to zero: so does dalpha
    double s = 0;
    for (float v : dalpha) s += v;
    EXPECT_NEAR(s, 0.0, 1e-4);
    EXPECT_NEAR(dalpha[0], 0.0 - 0.0, std::abs(fa[0]) + 1e-3);  // 'none' only moves through normalisation
  }
}

TEST(NasMixedOp, InputAndWeightGradients) {
  // Ops without inner kinks (sep_conv's inner ReLU after batch norm and max-pool ties make finite
  // differences cross non-differentiable points; those ops are checked one by one in test_ops.cpp).
  std::vector<OpKind> ops{OpKind::None, OpKind::AvgPool3x3, OpKind::SkipConnect, OpKind::DilConv3x3,
                          OpKind::DilConv5x5};
  for (int stride : {1, 2}) {
    ParamStore p, b;
    MixedOp m(p, b, 4, stride, ops, false);
    p.allocate(Device::CPU, 4);
    b.allocate(Device::CPU, 4);
    PassContext ctx{&p, &b, true, true, true};
    std::mt19937_64 rng(30 + stride);
    Tensor x = randn({2, 4, 6, 6}, rng);
    for (std::int64_t i = 0; i < x.numel(); ++i)
      if (std::abs(x.data()[i]) < 0.1f) x.data()[i] = 0.4f;  // shared ReLU away from its kink
    std::vector<float> alpha{0.1f, -0.3f, 0.2f, 0.4f, -0.1f};
    Tensor y = m.forward(x, alpha.data(), ctx);
    Tensor r = randn(y.shape(), rng);
    std::vector<float> dalpha(ops.size(), 0.0f);
    p.grads().zero();
    Tensor dx = m.backward(r, dalpha.data(), ctx);
    Tensor g = p.grads().clone();
    auto loss = [&] { return project(m.forward(x, alpha.data(), ctx), r); };
    EXPECT_LT(kt_test::directional_err(x, dx, loss, 6, 100 + stride, 1e-3), 1e-2) << "stride " << stride;
    EXPECT_LT(kt_test::directional_err(p.values(), g, loss, 6, 200 + stride, 1e-3), 1e-2) << "stride " << stride;
  }
}

TEST(NasSupernet, AlphaGradientMatchesFiniteDifferences) {
  Supernet net(tiny_net(), Device::CPU, 5);
  Dataset d = bars(16, 1);
  Tensor x = Tensor::from_host(d.x.data(), {16, 1, 8, 8});
  std::vector<float> yl(d.y.begin(), d.y.end());
  Tensor y = Tensor::from_host(yl.data(), {16});
  std::mt19937_64 rng(4);
  for (auto& a : net.alphas()) a = std::normal_distribution<float>(0.0f, 0.5f)(rng);
  net.forward_backward(x, y, true, true);
  std::vector<float> ga = net.alpha_grads();
  auto loss = [&] { return softmax_cross_entropy(net.forward(x, true), y, false).loss; };
  auto fa = numeric_grad_vec(net.alphas(), loss, 3e-3);
  EXPECT_LT(rel_err(std::vector<double>(ga.begin(), ga.end()), fa), 2e-2);
  EXPECT_EQ(ga.size(), 2u * 5u * 8u);
}

TEST(NasSupernet, WeightGradientMatchesFiniteDifferences) {
  // Small steps: batch-norm outputs feed ReLUs, so larger steps cross their kinks.
  SupernetConfig c = tiny_net();
  c.layers = 1;
  c.ops = {"none", "avg_pool_3x3", "skip_connect"};
  Supernet net(c, Device::CPU, 6);
  Dataset d = bars(16, 5);
  Tensor x = Tensor::from_host(d.x.data(), {16, 1, 8, 8});
  std::vector<float> yl(d.y.begin(), d.y.end());
  Tensor y = Tensor::from_host(yl.data(), {16});
  net.forward_backward(x, y, true, false);
  Tensor gw = net.weight_grads().clone();
  auto loss = [&] { return softmax_cross_entropy(net.forward(x, true), y, false).loss; };
  EXPECT_LT(kt_test::directional_err(net.weights(), gw, loss, 4, 77, 1e-4), 2e-2);
}

TEST(NasDarts, SecondOrderGradientMatchesUnrolledObjective) {
  // The unrolled objective contains grad_w L_train, which jumps wherever a ReLU or max-pool argmax
  // flips. Alpha moves such points only inside and after the cells, so the check uses one cell and the
  // ops without inner kinks; then both the finite differences of J and DARTS' finite-difference
  // Hessian-vector product (eps = 0.01 / ||grad||) are accurate.
  DartsConfig cfg;
  cfg.net = tiny_net();
  cfg.net.layers = 1;
  cfg.net.ops = {"none", "avg_pool_3x3", "skip_connect"};
  cfg.seed = 7;
  Darts darts(cfg, Device::CPU);
  Dataset d = bars(16, 2);
  Batch train = to_batch(darts, d, 0, 8), val = to_batch(darts, d, 8, 8);
  std::mt19937_64 rng(9);
  for (auto& a : darts.net().alphas()) a = std::normal_distribution<float>(0.0f, 0.5f)(rng);
  const double xi = 0.5;  // large virtual step so the second-order term matters
  auto g2 = darts.architecture_gradient(train, val, xi, true);
  auto g1 = darts.architecture_gradient(train, val, xi, false);
  auto fd = numeric_grad_vec(darts.net().alphas(), [&] { return darts.unrolled_val_loss(train, val, xi); }, 1e-3);
  std::vector<double> v2(g2.begin(), g2.end()), v1(g1.begin(), g1.end());
  const double e2 = rel_err(v2, fd), e1 = rel_err(v1, fd);
  EXPECT_LT(e2, 0.03) << "second-order error " << e2 << ", first-order error " << e1;
  EXPECT_GT(e1, 0.3) << "xi is large enough that the first-order gradient is visibly different";
}

TEST(NasGenotype, DerivationByHand) {
  // 2 nodes -> 5 edges; ops: none, max_pool_3x3, sep_conv_3x3
  std::vector<std::string> ops{"none", "max_pool_3x3", "sep_conv_3x3"};
  std::vector<float> w = {
      0.9f, 0.05f, 0.05f,  // node 0 <- 0 : 'none' dominates but is ignored; best non-none 0.05
      0.1f, 0.2f, 0.7f,    // node 0 <- 1 : sep 0.7
      0.1f, 0.6f, 0.3f,    // node 0 ... no: node 1 <- 0 starts at edge 2
      0.2f, 0.5f, 0.3f,    // node 1 <- 1
      0.1f, 0.1f, 0.8f,    // node 1 <- 2
  };
  // node 0 has edges 0,1; node 1 has edges 2,3,4
  auto cell = derive_cell(w, 2, ops, 2);
  ASSERT_EQ(cell.size(), 4u);
  EXPECT_EQ(cell[0], (GenotypeEdge{"sep_conv_3x3", 1}));
  EXPECT_EQ(cell[1], (GenotypeEdge{"max_pool_3x3", 0}));
  EXPECT_EQ(cell[2], (GenotypeEdge{"sep_conv_3x3", 2}));
  EXPECT_EQ(cell[3], (GenotypeEdge{"max_pool_3x3", 0}));
  Genotype g = derive_genotype(w, w, 2, 2, ops);
  g.validate();
  EXPECT_EQ(g.to_darts_string(),
            "Genotype(normal=[('sep_conv_3x3', 1), ('max_pool_3x3', 0), ('sep_conv_3x3', 2), ('max_pool_3x3', 0)], "
            "normal_concat=range(2, 4), reduce=[('sep_conv_3x3', 1), ('max_pool_3x3', 0), ('sep_conv_3x3', 2), "
            "('max_pool_3x3', 0)], reduce_concat=range(2, 4))");
  EXPECT_EQ(g.to_katib_string().rfind(
            "Genotype(normal=[[('separable_convolution_3x3', 1), ('max_pooling_3x3', 0)], "
            "[('separable_convolution_3x3', 2), ", 0), 0u);
  EXPECT_NE(g.to_json().find("\"normal_concat\":[2,3]"), std::string::npos);
  Genotype bad = g;
  bad.normal[0].second = 5;
  EXPECT_THROW(bad.validate(), kubetune::InvalidArgument);
  bad = g;
  bad.normal[1].first = "none";
  EXPECT_THROW(bad.validate(), kubetune::InvalidArgument);
}

TEST(NasGenotype, KatibNamesAccepted) {
  EXPECT_EQ(parse_op("separable_convolution_5x5"), OpKind::SepConv5x5);
  EXPECT_EQ(parse_op("dilated_convolution_3x3"), OpKind::DilConv3x3);
  EXPECT_EQ(parse_op("max_pooling_3x3"), OpKind::MaxPool3x3);
  EXPECT_EQ(parse_op("avg_pooling_3x3"), OpKind::AvgPool3x3);
  EXPECT_EQ(parse_op("skip_connection"), OpKind::SkipConnect);
  EXPECT_THROW(parse_op("conv_7x7"), kubetune::InvalidArgument);
  SupernetConfig c = tiny_net();
  c.ops = {"separable_convolution_3x3", "skip_connection", "max_pooling_3x3"};
  Supernet net(c, Device::CPU, 1);
  EXPECT_EQ(net.num_ops(), 3);
  c.ops = {"sep_conv_3x3", "separable_convolution_3x3"};
  EXPECT_THROW(c.validate(), kubetune::InvalidArgument);
}

TEST(NasDarts, ConfigValidation) {
  DartsConfig c;
  c.batch_size = 1;
  EXPECT_THROW(c.validate(), kubetune::InvalidArgument);
  c = DartsConfig();
  c.train_portion = 1.0;
  EXPECT_THROW(c.validate(), kubetune::InvalidArgument);
  c = DartsConfig();
  c.net.channels = 3;
  try {
    c.validate();
    FAIL();
  } catch (const kubetune::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos);
  }
}

TEST(NasDarts, CudaRequestWithoutGpuIsAClearError) {
  if (kubetune::device::cuda_available()) GTEST_SKIP() << "a GPU is present";
  DartsConfig c;
  c.net = tiny_net();
  EXPECT_THROW(Darts(c, Device::CUDA), kubetune::Error);
  if (!kubetune::device::built_with_cuda()) {
    try {
      Tensor t({4}, Device::CUDA);
      FAIL();
    } catch (const kubetune::Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("built without CUDA"), std::string::npos);
    }
  }
}

TEST(NasDarts, ShortSearchLearnsAndYieldsValidGenotype) {
  for (bool second : {false, true}) {
    DartsConfig cfg;
    cfg.net = tiny_net();
    cfg.batch_size = 24;
    cfg.w_lr = 0.05;
    cfg.alpha_lr = 3e-3;
    cfg.second_order = second;
    cfg.seed = 11;
    Darts darts(cfg, Device::CPU);
    Dataset d = bars(240, 3);
    auto alpha0 = darts.net().alphas();
    int steps_seen = 0;
    auto res = darts.search(d.x.data(), d.y.data(), d.n, 1, 8, 8, second ? 3 : 5, {},
                            [&](int s, int) { steps_seen = s; });
    ASSERT_EQ(res.history.size(), second ? 3u : 5u);
    EXPECT_EQ(steps_seen, (second ? 3 : 5) * 5);
    EXPECT_GE(res.history.back().val_acc, 0.9) << "second_order " << second;
    EXPECT_LT(res.history.back().train_loss, res.history.front().train_loss);
    EXPECT_NE(darts.net().alphas(), alpha0);
    res.genotype.validate();
    EXPECT_EQ(res.genotype.normal.size(), 4u);
    // learning rate follows the cosine schedule
    EXPECT_NEAR(res.history[0].lr, cfg.w_lr, 1e-12);
    EXPECT_NEAR(darts.lr_at(1, 2), cfg.w_lr_min + 0.5 * (cfg.w_lr - cfg.w_lr_min), 1e-12);
  }
}

TEST(NasData, MissingFashionMnistIsNotFound) {
  EXPECT_FALSE(fashion_mnist_available("/nonexistent/dir"));
  EXPECT_THROW(load_fashion_mnist("/nonexistent/dir"), kubetune::NotFound);
  if (!fashion_mnist_available(kFashionMnistDir, false)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  if (!gzip_supported() && fashion_mnist_file(kFashionMnistDir, false, "images-idx3-ubyte").ends_with(".gz"))
    GTEST_SKIP() << "kubetune built without zlib and the installed files are gzip-compressed";
  Dataset d = load_fashion_mnist(kFashionMnistDir, false, 100);
  EXPECT_EQ(d.n, 100);
  EXPECT_EQ(d.h, 28);
}
