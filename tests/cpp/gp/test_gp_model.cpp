// GP posterior vs a direct dense solve, marginal likelihood and its gradient, rank-1 updates, fitting.
#include <cmath>
#include <iterator>
#include <limits>

#include <Eigen/LU>
#include <gtest/gtest.h>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/search/gp/gp.hpp"

using namespace kubetune::search::gp;

namespace {
struct Data {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
};
Data make_data(Eigen::Index D, Eigen::Index n, std::uint64_t seed) {
  kubetune::Rng rng(seed);
  Data d{Eigen::MatrixXd(D, n), Eigen::VectorXd(n)};
  for (Eigen::Index j = 0; j < n; ++j) {
    double s = 0;
    for (Eigen::Index k = 0; k < D; ++k) {
      d.X(k, j) = rng.uniform();
      s += std::sin(3.0 * d.X(k, j) * (k + 1));
    }
    d.y[j] = 10.0 + 4.0 * s + 0.05 * rng.normal();
  }
  return d;
}
GaussianProcess make_gp(KernelType t, const Data& d) {
  GaussianProcess gp(t, d.X.rows());
  Eigen::VectorXd theta(gp.n_params());
  for (Eigen::Index k = 0; k < d.X.rows(); ++k) theta[k] = std::log(0.3 + 0.2 * k);
  theta[d.X.rows()] = std::log(1.4);       // signal variance
  theta[d.X.rows() + 1] = std::log(0.02);  // noise
  theta[d.X.rows() + 2] = 0.3;             // constant mean
  gp.set_params(theta);
  gp.set_data(d.X, d.y);
  return gp;
}
}  // namespace

class GPModel : public ::testing::TestWithParam<KernelType> {};

TEST_P(GPModel, PosteriorMatchesDenseSolve) {
  Data d = make_data(2, 12, 1);
  GaussianProcess gp = make_gp(GetParam(), d);
  Data q = make_data(2, 300, 2);
  Eigen::VectorXd mu, var;
  gp.predict(q.X, mu, var, 2);
  // Direct computation on the standardised scale with a dense LU inverse.
  double ym = d.y.mean(), ys = std::sqrt((d.y.array() - ym).square().mean());
  Eigen::VectorXd z = (d.y.array() - ym) / ys;
  const Kernel& k = gp.kernel();
  Eigen::MatrixXd K = k.gram(d.X);
  K.diagonal().array() += gp.noise();
  Eigen::MatrixXd Kinv = K.fullPivLu().inverse();
  Eigen::MatrixXd Ks = k.cross(d.X, q.X);
  Eigen::VectorXd mu_ref = ((Ks.transpose() * Kinv * (z.array() - 0.3).matrix()).array() + 0.3) * ys + ym;
  Eigen::VectorXd var_ref =
      (k.signal_variance() - (Ks.transpose() * Kinv * Ks).diagonal().array()) * ys * ys;
  EXPECT_LT((mu - mu_ref).cwiseAbs().maxCoeff(), 1e-8);
  EXPECT_LT((var - var_ref).cwiseAbs().maxCoeff(), 1e-8);
  // predict_one agrees with the batch, and its input gradients with finite differences.
  for (int c = 0; c < 5; ++c) {
    double m1, v1, dm[2], dv[2];
    gp.predict_one(q.X.col(c).data(), m1, v1, dm, dv);
    EXPECT_NEAR(m1, mu[c], 1e-9);
    EXPECT_NEAR(v1, var[c], 1e-9);
    for (int a = 0; a < 2; ++a) {
      Eigen::Vector2d xp = q.X.col(c), xm = q.X.col(c);
      xp[a] += 1e-6;
      xm[a] -= 1e-6;
      double mp, vp, mm, vm;
      gp.predict_one(xp.data(), mp, vp);
      gp.predict_one(xm.data(), mm, vm);
      EXPECT_NEAR(dm[a], (mp - mm) / 2e-6, 1e-5 * (1 + std::abs(dm[a])));
      EXPECT_NEAR(dv[a], (vp - vm) / 2e-6, 1e-5 * (1 + std::abs(dv[a])));
    }
  }
}

TEST_P(GPModel, ScreenGivesExactMeanAndVarianceUpperBound) {
  Data d = make_data(3, 40, 5);
  GaussianProcess gp = make_gp(GetParam(), d);
  Data q = make_data(3, 300, 6);
  q.X.col(7) = d.X.col(3);  // a training input: the bound is then tight up to the noise
  Eigen::VectorXd mu, var, mu_s, var_ub;
  gp.predict(q.X, mu, var, 1);
  gp.predict_screen(q.X, mu_s, var_ub, 2);
  EXPECT_LT((mu - mu_s).cwiseAbs().maxCoeff(), 1e-12 * (1 + mu.cwiseAbs().maxCoeff()));
  const double ys2 = var.maxCoeff() * 1e-12;
  int strict = 0;
  for (Eigen::Index c = 0; c < q.X.cols(); ++c) {
    EXPECT_GE(var_ub[c], var[c] - ys2) << c;
    // Closed form of the single-point bound, on the original scale.
    const Kernel& k = gp.kernel();
    double kmax2 = 0;
    for (Eigen::Index i = 0; i < d.X.cols(); ++i)
      kmax2 = std::max(kmax2, std::pow(k(d.X.col(i).data(), q.X.col(c).data()), 2));
    double ub_std = k.signal_variance() - kmax2 / (k.signal_variance() + gp.noise() + gp.jitter());
    double scale2 = std::pow(gp.y_std(), 2);
    EXPECT_NEAR(var_ub[c], ub_std * scale2, 1e-9 * scale2) << c;
    strict += var_ub[c] > var[c] * (1 + 1e-6);
  }
  EXPECT_GT(strict, 100);  // a real bound, not the exact variance
}

// predict_screen's cross covariances solved in steps: the variance given the first j points is that of a model
// of those j points alone (same hyperparameters), it only shrinks with j, and the last step is predict()'s.
TEST_P(GPModel, PrefixSolvesGiveTheVarianceOfEachPrefixModel) {
  Data d = make_data(3, 150, 15);  // > two Cholesky panels
  GaussianProcess gp = make_gp(GetParam(), d);
  ASSERT_EQ(gp.jitter(), 0.0);
  Data q = make_data(3, 200, 16);  // > one block of 128 candidates
  Eigen::VectorXd mu, var, mu_s, var_ub;
  gp.predict(q.X, mu, var, 1);
  Eigen::MatrixXd cross(d.X.cols(), q.X.cols());
  gp.predict_screen(q.X, mu_s, var_ub, 2, cross.data());
  Eigen::MatrixXd Kref = gp.kernel().cross(d.X, q.X);
  EXPECT_LT((cross - Kref).cwiseAbs().maxCoeff(), 1e-12);
  const Eigen::Index steps[] = {0, 7, 40, 64, 101, 150};
  Eigen::VectorXd prev = Eigen::VectorXd::Constant(q.X.cols(), std::numeric_limits<double>::infinity());
  for (std::size_t s = 1; s < std::size(steps); ++s) {
    Data head{d.X.leftCols(steps[s]), d.y.head(steps[s])};
    GaussianProcess sub = make_gp(GetParam(), head);
    Eigen::VectorXd mu_h, var_h;
    sub.predict(q.X, mu_h, var_h, 1);
    // Variances are on the original scale: each model's own output standardisation.
    const double rescale = std::pow(gp.y_std() / sub.y_std(), 2);
    for (Eigen::Index c = 0; c < q.X.cols(); ++c) {
      const double v = gp.solve_cross_prefix(cross.col(c).data(), steps[s - 1], steps[s]);
      EXPECT_NEAR(v, var_h[c] * rescale, 1e-9 * (1 + var_h[c] * rescale)) << "step " << steps[s] << " c " << c;
      EXPECT_LE(v, prev[c] * (1 + 1e-12)) << "step " << steps[s] << " c " << c;
      prev[c] = v;
    }
  }
  EXPECT_LT((prev - var).cwiseAbs().maxCoeff(), 1e-10 * (1 + var.maxCoeff()));
  EXPECT_THROW(gp.solve_cross_prefix(cross.col(0).data(), 5, 151), kubetune::InvalidArgument);
}

// The two-part factorisation (blocked Cholesky of a prefix + bordered rows) gives the same posterior as a
// full refit up to rounding, and extending a cached factor is bit-identical to computing it from scratch.
TEST_P(GPModel, BorderedRefitMatchesFullRefitAndCacheIsExact) {
  Data d = make_data(3, 70, 21);
  Data q = make_data(3, 50, 22);
  GaussianProcess full = make_gp(GetParam(), d);  // refit(): blocked Cholesky of all 70
  Eigen::VectorXd mu_full, var_full;
  full.predict(q.X, mu_full, var_full, 1);

  BorderedFactor cache;
  GaussianProcess a = make_gp(GetParam(), Data{d.X.leftCols(55), d.y.head(55)});
  a.refit_bordered(40, &cache);  // cache: rows 0..54 (blocked 0..39 + bordered 40..54)
  EXPECT_EQ(cache.X.cols(), 55);
  EXPECT_EQ(cache.m, 40);
  GaussianProcess b = make_gp(GetParam(), d), c = make_gp(GetParam(), d);
  b.refit_bordered(40, &cache);    // extends the cached 55 rows by 15
  c.refit_bordered(40, nullptr);   // from scratch
  EXPECT_EQ(cache.X.cols(), 70);
  Eigen::VectorXd mu_b, var_b, mu_c, var_c;
  b.predict(q.X, mu_b, var_b, 1);
  c.predict(q.X, mu_c, var_c, 1);
  for (Eigen::Index j = 0; j < q.X.cols(); ++j) {
    EXPECT_EQ(mu_b[j], mu_c[j]) << j;  // bit for bit
    EXPECT_EQ(var_b[j], var_c[j]) << j;
  }
  EXPECT_EQ(b.log_marginal_likelihood(), c.log_marginal_likelihood());
  EXPECT_LT((mu_c - mu_full).cwiseAbs().maxCoeff(), 1e-8 * (1 + mu_full.cwiseAbs().maxCoeff()));
  EXPECT_LT((var_c - var_full).cwiseAbs().maxCoeff(), 1e-8 * (1 + var_full.maxCoeff()));
  EXPECT_NEAR(c.log_marginal_likelihood(), full.log_marginal_likelihood(), 1e-8);
  // m = n is exactly refit().
  GaussianProcess e = make_gp(GetParam(), d);
  e.refit_bordered(70, nullptr);
  Eigen::VectorXd mu_e, var_e;
  e.predict(q.X, mu_e, var_e, 1);
  EXPECT_EQ(mu_e, mu_full);
  EXPECT_EQ(var_e, var_full);
  // A cache for other hyperparameters, another m or other inputs is not used (same result as scratch).
  BorderedFactor other = cache;
  other.theta[0] += 1e-3;
  GaussianProcess f = make_gp(GetParam(), d);
  f.refit_bordered(40, &other);
  Eigen::VectorXd mu_f, var_f;
  f.predict(q.X, mu_f, var_f, 1);
  EXPECT_EQ(mu_f, mu_c);
  BorderedFactor moved = cache;
  moved.X(0, 3) += 0.25;
  moved.L.setZero();
  GaussianProcess g = make_gp(GetParam(), d);
  g.refit_bordered(40, &moved);
  Eigen::VectorXd mu_g, var_g;
  g.predict(q.X, mu_g, var_g, 1);
  EXPECT_EQ(mu_g, mu_c);
  EXPECT_EQ(var_g, var_c);
  EXPECT_THROW(g.refit_bordered(71, nullptr), kubetune::InvalidArgument);
}

TEST_P(GPModel, LogMarginalLikelihoodValueAndGradient) {
  Data d = make_data(3, 15, 4);
  GaussianProcess gp = make_gp(GetParam(), d);
  // Value vs the textbook formula with a dense determinant.
  Eigen::MatrixXd K = gp.kernel().gram(d.X);
  K.diagonal().array() += gp.noise();
  Eigen::VectorXd r = gp.y_standardised().array() - gp.mean();
  double ref = -0.5 * r.dot(K.fullPivLu().solve(r)) - 0.5 * std::log(K.determinant()) -
               0.5 * 15 * std::log(2 * M_PI);
  EXPECT_NEAR(gp.log_marginal_likelihood(), ref, 1e-9);
  for (HyperPrior prior : {HyperPrior::None, HyperPrior::Optuna}) {
    Eigen::VectorXd g;
    gp.log_marginal_likelihood(&g, prior);
    Eigen::VectorXd theta = gp.params();
    for (Eigen::Index j = 0; j < theta.size(); ++j) {
      const double h = 1e-5;
      GaussianProcess a = gp, b = gp;
      Eigen::VectorXd tp = theta, tm = theta;
      tp[j] += h;
      tm[j] -= h;
      a.set_params(tp);
      a.refit();
      b.set_params(tm);
      b.refit();
      double fd = (a.log_marginal_likelihood(nullptr, prior) - b.log_marginal_likelihood(nullptr, prior)) / (2 * h);
      EXPECT_NEAR(g[j], fd, 1e-5 * (1 + std::abs(fd))) << "param " << j << " prior " << to_string(prior);
    }
  }
}

TEST_P(GPModel, RankOneUpdateEqualsFullRefit) {
  Data d = make_data(2, 20, 7);
  GaussianProcess inc = make_gp(GetParam(), Data{d.X.leftCols(10), d.y.head(10)});
  for (Eigen::Index j = 10; j < 20; ++j) inc.add_observation(d.X.col(j), d.y[j]);
  // Full refit with the same standardisation (that of the first 10 points) and hyperparameters.
  GaussianProcess full = inc;
  full.refit();
  Data q = make_data(2, 50, 8);
  Eigen::VectorXd m1, v1, m2, v2;
  inc.predict(q.X, m1, v1);
  full.predict(q.X, m2, v2);
  EXPECT_LT((m1 - m2).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_LT((v1 - v2).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_NEAR(inc.log_marginal_likelihood(), full.log_marginal_likelihood(), 1e-8);
}

INSTANTIATE_TEST_SUITE_P(Both, GPModel, ::testing::Values(KernelType::Matern52, KernelType::RBF));

TEST(GPModelMisc, JitterEscalatesOnDuplicatePoints) {
  GaussianProcess gp(KernelType::RBF, 1);
  Eigen::VectorXd theta(4);
  theta << std::log(0.5), 0.0, std::log(1e-300), 0.0;  // effectively no noise
  gp.set_params(theta);
  Eigen::MatrixXd X(1, 3);
  X << 0.2, 0.2, 0.7;
  Eigen::VectorXd y(3);
  y << 1.0, 1.0, 2.0;
  gp.set_data(X, y);
  EXPECT_GT(gp.jitter(), 0.0);
  Eigen::VectorXd mu, var;
  gp.predict(X, mu, var);
  EXPECT_TRUE(mu.allFinite());
  EXPECT_NEAR(mu[2], 2.0, 1e-3);
  EXPECT_TRUE((var.array() >= 0).all());
  // Adding a duplicate by the rank-1 update stays finite too.
  gp.add_observation(X.col(2), 2.0);
  gp.predict(X, mu, var);
  EXPECT_TRUE(mu.allFinite() && var.allFinite());
}

TEST(GPModelMisc, FitImprovesLikelihoodAndFindsIrrelevantDimension) {
  // y depends on x0 only: ML-II must give x1 a much longer length scale.
  kubetune::Rng rng(11);
  const Eigen::Index n = 40;
  Eigen::MatrixXd X(2, n);
  Eigen::VectorXd y(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    X(0, j) = rng.uniform();
    X(1, j) = rng.uniform();
    y[j] = std::sin(6.0 * X(0, j));
  }
  GaussianProcess gp(KernelType::Matern52, 2);
  gp.set_data(X, y);
  double before = gp.log_marginal_likelihood(nullptr, HyperPrior::Optuna);
  FitOptions fo;
  kubetune::Rng r2(1);
  double after = gp.fit_hyperparameters(fo, r2);
  EXPECT_GT(after, before);
  EXPECT_NEAR(after, gp.log_marginal_likelihood(nullptr, HyperPrior::Optuna), 1e-9);
  EXPECT_GT(gp.kernel().lengthscales()[1], 3.0 * gp.kernel().lengthscales()[0]);
  // The fitted model interpolates: small error at held-out points.
  Eigen::MatrixXd Q(2, 20);
  for (Eigen::Index j = 0; j < 20; ++j) Q.col(j) << rng.uniform(), rng.uniform();
  Eigen::VectorXd mu, var;
  gp.predict(Q, mu, var);
  for (Eigen::Index j = 0; j < 20; ++j) EXPECT_NEAR(mu[j], std::sin(6.0 * Q(0, j)), 0.05);
  // Same data + same rng seed => same hyperparameters (deterministic fit).
  GaussianProcess gp2(KernelType::Matern52, 2);
  gp2.set_data(X, y);
  kubetune::Rng r3(1);
  gp2.fit_hyperparameters(fo, r3);
  EXPECT_EQ(gp.params(), gp2.params());
}

TEST(GPModelMisc, BadInputsThrow) {
  GaussianProcess gp(KernelType::Matern52, 2);
  EXPECT_THROW(gp.set_data(Eigen::MatrixXd::Zero(3, 2), Eigen::VectorXd::Zero(2)), kubetune::InvalidArgument);
  EXPECT_THROW(gp.set_data(Eigen::MatrixXd::Zero(2, 2), Eigen::VectorXd::Zero(3)), kubetune::InvalidArgument);
  Eigen::VectorXd y(2);
  y << 1.0, NAN;
  EXPECT_THROW(gp.set_data(Eigen::MatrixXd::Zero(2, 2), y), kubetune::InvalidArgument);
  EXPECT_THROW(GaussianProcess(KernelType::RBF, 0), kubetune::InvalidArgument);
  EXPECT_THROW(hyper_prior_from_string("gamma"), kubetune::InvalidArgument);
}
