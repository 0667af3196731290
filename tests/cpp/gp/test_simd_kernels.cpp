// Vectorised kernel profiles (AVX2/FMA where available, scalar otherwise) vs std::exp and the closed forms.
#include <cmath>

#include <Eigen/Cholesky>
#include <vector>

#include <gtest/gtest.h>

#include "kubetune/core/rng.hpp"
#include "kubetune/search/gp/gp.hpp"
#include "../../../src/search/gp/simd_kernels.hpp"

namespace simd = kubetune::search::gp::simd;

TEST(GPSimdKernels, ExpMatchesStdExpToAFewUlp) {
  kubetune::Rng rng(3);
  std::vector<double> x(1003), y(1003);  // not a multiple of 4: the tail takes the same path
  for (double& v : x) v = -60.0 * rng.uniform();
  x[0] = 0.0;
  x[1] = -1e-300;
  x[2] = -0.5 * std::log(2.0);
  x[3] = -700.25;
  x[4] = -708.0;
  x[1002] = -3.75;
  simd::exp_neg(x.data(), y.data(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::exp(x[i]);
    EXPECT_LE(std::abs(y[i] - e), 4e-16 * e) << "x = " << x[i];
  }
  EXPECT_EQ(y[0], 1.0);
  // Below -708 the result is clamped to exp(-708) (~3e-308), never NaN or negative.
  std::vector<double> far{-745.0, -1e6}, out(2);
  simd::exp_neg(far.data(), out.data(), 2);
  for (double v : out) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 4e-308);
  }
}

TEST(GPSimdKernels, ProfilesMatchClosedForms) {
  kubetune::Rng rng(4);
  for (std::size_t n : {1u, 3u, 4u, 7u, 64u, 201u}) {
    std::vector<double> r2(n), k(n), g(n), kr(n), e(n);
    for (double& v : r2) v = 40.0 * rng.uniform() * rng.uniform();
    r2[0] = 0.0;
    const double s2 = 1.7, s5 = std::sqrt(5.0);
    simd::matern52(r2.data(), kr.data(), n, s2);
    simd::matern52_grad(r2.data(), k.data(), g.data(), n, s2);
    simd::rbf(r2.data(), e.data(), n, s2);
    for (std::size_t i = 0; i < n; ++i) {
      const double r = std::sqrt(r2[i]), ex = std::exp(-s5 * r);
      const double k_ref = s2 * (1 + s5 * r + 5.0 / 3.0 * r2[i]) * ex;
      const double g_ref = s2 * 5.0 / 3.0 * (1 + s5 * r) * ex;  // -2 s2 df/d(r^2)
      EXPECT_NEAR(kr[i], k_ref, 1e-15 * s2) << i;
      EXPECT_NEAR(k[i], k_ref, 1e-15 * s2) << i;
      EXPECT_NEAR(g[i], g_ref, 1e-15 * s2) << i;
      EXPECT_NEAR(e[i], s2 * std::exp(-0.5 * r2[i]), 1e-15 * s2) << i;
    }
    EXPECT_EQ(kr[0], s2);
  }
  // In place (out aliases r2) gives the same values.
  std::vector<double> a{0.1, 0.5, 2.0, 9.0, 0.0}, b(a.size());
  simd::matern52(a.data(), b.data(), a.size(), 1.0);
  simd::matern52(a.data(), a.data(), a.size(), 1.0);
  EXPECT_EQ(a, b);
}

// The GP with and without the vectorised paths: the same posterior up to rounding.
TEST(GPSimdKernels, VectorisedAndScalarPathsAgree) {
  using namespace kubetune::search::gp;
  kubetune::Rng rng(5);
  Eigen::MatrixXd X(3, 90), Q(3, 70);
  Eigen::VectorXd y(90);
  for (Eigen::Index j = 0; j < 90; ++j) {
    for (int d = 0; d < 3; ++d) X(d, j) = rng.uniform();
    y[j] = std::sin(5 * X(0, j)) + X(1, j) * X(2, j);
  }
  for (Eigen::Index j = 0; j < 70; ++j)
    for (int d = 0; d < 3; ++d) Q(d, j) = rng.uniform();
  for (KernelType t : {KernelType::Matern52, KernelType::RBF}) {
    Eigen::VectorXd mu[2], var[2], ms[2], vs[2], grad[2];
    double lml[2], pm[2], pv[2], dm[2][3], dv[2][3];
    for (int scalar = 0; scalar < 2; ++scalar) {
      simd::set_scalar_only(scalar == 1);
      GaussianProcess gp(t, 3);
      Eigen::VectorXd theta(6);
      theta << std::log(0.3), std::log(0.5), std::log(0.8), std::log(1.2), std::log(1e-3), 0.1;
      gp.set_params(theta);
      gp.set_data(X, y);
      gp.predict(Q, mu[scalar], var[scalar], 1);
      gp.predict_screen(Q, ms[scalar], vs[scalar], 1);
      lml[scalar] = gp.log_marginal_likelihood(&grad[scalar]);
      gp.predict_one(Q.col(3).data(), pm[scalar], pv[scalar], dm[scalar], dv[scalar]);
    }
    simd::set_scalar_only(false);
    EXPECT_LT((mu[0] - mu[1]).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((var[0] - var[1]).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((ms[0] - ms[1]).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_LT((vs[0] - vs[1]).cwiseAbs().maxCoeff(), 1e-10);
    EXPECT_NEAR(lml[0], lml[1], 1e-8);
    EXPECT_LT((grad[0] - grad[1]).cwiseAbs().maxCoeff(), 1e-7);
    EXPECT_NEAR(pm[0], pm[1], 1e-10);
    EXPECT_NEAR(pv[0], pv[1], 1e-10);
    for (int d = 0; d < 3; ++d) {
      EXPECT_NEAR(dm[0][d], dm[1][d], 1e-8);
      EXPECT_NEAR(dv[0][d], dv[1][d], 1e-8);
    }
  }
}

TEST(GPSimdKernels, TriangularSolvesMatchEigen) {
  kubetune::Rng rng(6);
  for (int n : {1, 3, 4, 5, 8, 13, 130}) {
    Eigen::MatrixXd A(n, n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) A(i, j) = rng.uniform() - 0.5;
    A = (A * A.transpose()).eval();
    A.diagonal().array() += n;
    // A factor stored with a leading dimension larger than n (as a block of a bigger matrix).
    Eigen::MatrixXd big = Eigen::MatrixXd::Constant(n + 3, n, 1e300);
    big.topRows(n) = A.llt().matrixL();
    big.topRows(n).triangularView<Eigen::StrictlyUpper>().setConstant(1e300);  // never read
    const Eigen::MatrixXd L = A.llt().matrixL();
    Eigen::VectorXd b(n);
    for (int i = 0; i < n; ++i) b[i] = rng.uniform() - 0.5;
    for (bool scalar : {false, true}) {
      simd::set_scalar_only(scalar);
      Eigen::VectorXd x = b, y = b;
      simd::trsv_lower(big.data(), static_cast<std::size_t>(n + 3), x.data(), static_cast<std::size_t>(n));
      simd::trsv_lower_t(big.data(), static_cast<std::size_t>(n + 3), y.data(), static_cast<std::size_t>(n));
      const Eigen::VectorXd xr = L.triangularView<Eigen::Lower>().solve(b);
      const Eigen::VectorXd yr = L.transpose().triangularView<Eigen::Upper>().solve(b);
      EXPECT_LT((x - xr).cwiseAbs().maxCoeff(), 1e-13) << n << " scalar " << scalar;
      EXPECT_LT((y - yr).cwiseAbs().maxCoeff(), 1e-13) << n << " scalar " << scalar;
    }
    simd::set_scalar_only(false);
  }
}

// The blocked Cholesky (panels of 64, 8 x 4 tiles) against Eigen's LLT, on sizes around the tile and panel
// edges, stored with a leading dimension > n; only the lower triangle is read or written.
TEST(GPSimdKernels, CholeskyMatchesEigenAndLeavesTheRestAlone) {
  kubetune::Rng rng(8);
  for (int n : {1, 3, 8, 9, 63, 64, 65, 133, 200}) {
    Eigen::MatrixXd R(n, n + 4);
    for (int j = 0; j < n + 4; ++j)
      for (int i = 0; i < n; ++i) R(i, j) = rng.uniform() - 0.5;
    const Eigen::MatrixXd A = R * R.transpose() + 1e-3 * Eigen::MatrixXd::Identity(n, n);
    const Eigen::MatrixXd L = A.llt().matrixL();
    for (bool scalar : {false, true}) {
      simd::set_scalar_only(scalar);
      Eigen::MatrixXd big = Eigen::MatrixXd::Constant(n + 3, n, 7.0);
      big.topRows(n).triangularView<Eigen::Lower>() = A;
      ASSERT_TRUE(simd::potrf_lower(big.data(), static_cast<std::size_t>(n + 3), static_cast<std::size_t>(n)));
      const Eigen::MatrixXd got = big.topRows(n).triangularView<Eigen::Lower>();
      EXPECT_LT((got - L).cwiseAbs().maxCoeff(), 1e-12 * L.cwiseAbs().maxCoeff()) << n << " scalar " << scalar;
      EXPECT_TRUE((big.topRows(n).triangularView<Eigen::StrictlyUpper>().toDenseMatrix().array() ==
                   Eigen::MatrixXd(Eigen::MatrixXd::Constant(n, n, 7.0).triangularView<Eigen::StrictlyUpper>()).array())
                      .all());
      EXPECT_TRUE((big.bottomRows(3).array() == 7.0).all());
    }
    simd::set_scalar_only(false);
  }
  for (bool scalar : {false, true}) {  // not positive definite: refused at the first bad pivot
    simd::set_scalar_only(scalar);
    Eigen::MatrixXd A = Eigen::MatrixXd::Identity(70, 70);
    A(68, 68) = -1.0;
    EXPECT_FALSE(simd::potrf_lower(A.data(), 70, 70));
  }
  simd::set_scalar_only(false);
}

TEST(GPSimdKernels, PanelProductMatchesEigen) {
  kubetune::Rng rng(9);
  for (int rows : {1, 5, 37}) {
    for (int cols : {0, 3, 9}) {
      Eigen::MatrixXd A(rows + 2, cols);
      for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows + 2; ++i) A(i, j) = rng.uniform() - 0.5;
      Eigen::VectorXd z(cols), x(rows);
      for (int j = 0; j < cols; ++j) z[j] = rng.uniform();
      for (int i = 0; i < rows; ++i) x[i] = rng.uniform();
      const Eigen::VectorXd ref = x - A.topRows(rows) * z;
      for (bool scalar : {false, true}) {
        simd::set_scalar_only(scalar);
        Eigen::VectorXd y = x;
        simd::gemv_sub(A.data(), static_cast<std::size_t>(rows + 2), static_cast<std::size_t>(rows),
                       static_cast<std::size_t>(cols), z.data(), y.data());
        EXPECT_LT((y - ref).cwiseAbs().maxCoeff(), 1e-14) << rows << " x " << cols << " scalar " << scalar;
      }
      simd::set_scalar_only(false);
    }
  }
}
