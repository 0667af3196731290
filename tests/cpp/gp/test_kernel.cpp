// Kernel values against closed forms and kernel gradients against central finite differences.
#include <cmath>

#include <gtest/gtest.h>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/search/gp/kernel.hpp"

using namespace kubetune::search::gp;

namespace {
Eigen::MatrixXd random_points(Eigen::Index D, Eigen::Index n, std::uint64_t seed) {
  kubetune::Rng rng(seed);
  Eigen::MatrixXd X(D, n);
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index d = 0; d < D; ++d) X(d, j) = rng.uniform();
  return X;
}
}  // namespace

TEST(GPKernel, ClosedFormValues) {
  Eigen::VectorXd ls(2);
  ls << 0.5, 2.0;
  double x[2] = {0.3, 0.1}, y[2] = {0.8, 1.1};
  // r^2 = (0.5/0.5)^2 + (1.0/2.0)^2 = 1.25
  double r = std::sqrt(1.25);
  Kernel m(KernelType::Matern52, ls, 1.7);
  EXPECT_NEAR(m(x, y), 1.7 * (1 + std::sqrt(5.0) * r + 5.0 / 3.0 * 1.25) * std::exp(-std::sqrt(5.0) * r), 1e-14);
  Kernel s(KernelType::RBF, ls, 1.7);
  EXPECT_NEAR(s(x, y), 1.7 * std::exp(-0.625), 1e-14);
  EXPECT_DOUBLE_EQ(m(x, x), 1.7);
  EXPECT_THROW(Kernel(KernelType::RBF, ls, -1.0), kubetune::InvalidArgument);
  EXPECT_EQ(kernel_from_string("Matern52"), KernelType::Matern52);
  EXPECT_THROW(kernel_from_string("linear"), kubetune::InvalidArgument);
}

class KernelGrad : public ::testing::TestWithParam<KernelType> {};

TEST_P(KernelGrad, HyperparameterGradientsMatchFiniteDifferences) {
  const Eigen::Index D = 3, n = 7;
  Eigen::MatrixXd X = random_points(D, n, 3);
  Eigen::VectorXd ls(D);
  ls << 0.3, 0.9, 2.5;
  Kernel k(GetParam(), ls, 1.3);
  auto G = k.gram_gradients(X);
  Eigen::VectorXd theta = k.log_params();
  const double h = 1e-6;
  for (Eigen::Index j = 0; j < theta.size(); ++j) {
    Eigen::VectorXd tp = theta, tm = theta;
    tp[j] += h;
    tm[j] -= h;
    Kernel kp = k, km = k;
    kp.set_log_params(tp);
    km.set_log_params(tm);
    Eigen::MatrixXd fd = (kp.gram(X) - km.gram(X)) / (2 * h);
    EXPECT_LT((fd - G[static_cast<std::size_t>(j)]).cwiseAbs().maxCoeff(), 1e-7) << "param " << j;
  }
  // The contracted form equals sum_ij W_ij dK_ij for a symmetric W.
  Eigen::MatrixXd W = random_points(n, n, 9);
  W = (W + W.transpose()).eval();
  Eigen::VectorXd c = k.contract_gradients(X, W);
  for (Eigen::Index j = 0; j < theta.size(); ++j)
    EXPECT_NEAR(c[j], (W.array() * G[static_cast<std::size_t>(j)].array()).sum(), 1e-10);
}

TEST_P(KernelGrad, InputGradientMatchesFiniteDifferences) {
  const Eigen::Index D = 4;
  Eigen::VectorXd ls(D);
  ls << 0.2, 0.7, 1.5, 0.4;
  Kernel k(GetParam(), ls, 0.8);
  Eigen::MatrixXd P = random_points(D, 2, 5);
  double g[4];
  k.grad_x(P.col(0).data(), P.col(1).data(), g);
  for (Eigen::Index d = 0; d < D; ++d) {
    Eigen::VectorXd xp = P.col(0), xm = P.col(0);
    xp[d] += 1e-6;
    xm[d] -= 1e-6;
    double fd = (k(xp.data(), P.col(1).data()) - k(xm.data(), P.col(1).data())) / 2e-6;
    EXPECT_NEAR(g[d], fd, 1e-7);
  }
  // Zero gradient at coincident points (the kernels are differentiable at r = 0).
  k.grad_x(P.col(0).data(), P.col(0).data(), g);
  for (double v : g) EXPECT_EQ(v, 0.0);
  // The fused value + gradient equals the separate calls exactly (same formulas, one exp).
  Eigen::MatrixXd Q = random_points(D, 20, 6);
  for (Eigen::Index j = 1; j < Q.cols(); ++j) {
    double g1[4], g2[4];
    const double v = k.value_grad_x(Q.col(0).data(), Q.col(j).data(), g1);
    k.grad_x(Q.col(0).data(), Q.col(j).data(), g2);
    EXPECT_EQ(v, k(Q.col(j).data(), Q.col(0).data()));
    for (int d = 0; d < 4; ++d) EXPECT_EQ(g1[d], g2[d]);
  }
}

INSTANTIATE_TEST_SUITE_P(Both, KernelGrad, ::testing::Values(KernelType::Matern52, KernelType::RBF));
