// Matérn-5/2 and RBF ARD kernels: values, Gram matrices and analytic hyperparameter / input gradients.
#include "eigen_single_thread.hpp"  // first: before any Eigen header
#include "kubetune/search/gp/kernel.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kubetune/core/error.hpp"
#include "simd_kernels.hpp"

namespace kubetune::search::gp {
namespace {
constexpr double kSqrt5 = 2.23606797749978969640;
}

std::string to_string(KernelType k) { return k == KernelType::Matern52 ? "matern52" : "rbf"; }

KernelType kernel_from_string(const std::string& s) {
  std::string t(s);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "matern52" || t == "matern" || t == "matern5/2") return KernelType::Matern52;
  if (t == "rbf" || t == "se" || t == "squared_exponential") return KernelType::RBF;
  KT_THROW(InvalidArgument, "kernel '", s, "' is not one of matern52, rbf");
}

Kernel::Kernel(KernelType type, Eigen::VectorXd lengthscales, double signal_variance)
    : type_(type), ls_(std::move(lengthscales)), s2_(signal_variance) {
  KT_CHECK(s2_ > 0 && std::isfinite(s2_), InvalidArgument, "kernel signal_variance = ", s2_, " must be > 0");
  for (Eigen::Index d = 0; d < ls_.size(); ++d)
    KT_CHECK(ls_[d] > 0 && std::isfinite(ls_[d]), InvalidArgument, "kernel lengthscale[", d, "] = ", ls_[d],
             " must be > 0");
  inv_ls2_ = ls_.array().square().inverse().matrix();
}

Eigen::VectorXd Kernel::log_params() const {
  Eigen::VectorXd t(ls_.size() + 1);
  t.head(ls_.size()) = ls_.array().log().matrix();
  t[ls_.size()] = std::log(s2_);
  return t;
}

void Kernel::set_log_params(const Eigen::VectorXd& theta) {
  KT_CHECK(theta.size() == ls_.size() + 1, InvalidArgument, "kernel theta has ", theta.size(),
           " entries, expected ", ls_.size() + 1);
  ls_ = theta.head(ls_.size()).array().exp().matrix();
  inv_ls2_ = ls_.array().square().inverse().matrix();
  s2_ = std::exp(theta[ls_.size()]);
}

double Kernel::f_of_r2(double r2) const noexcept {
  if (type_ == KernelType::RBF) return std::exp(-0.5 * r2);
  double r = std::sqrt(r2);
  return (1.0 + kSqrt5 * r + (5.0 / 3.0) * r2) * std::exp(-kSqrt5 * r);
}

// Matérn-5/2: df/dr = -(5/3) r (1 + sqrt5 r) exp(-sqrt5 r), so df/d(r^2) = -(5/6)(1 + sqrt5 r) exp(-sqrt5 r),
// finite at r = 0 (the kernel is twice differentiable).
double Kernel::df_dr2(double r2) const noexcept {
  if (type_ == KernelType::RBF) return -0.5 * std::exp(-0.5 * r2);
  double r = std::sqrt(r2);
  return -(5.0 / 6.0) * (1.0 + kSqrt5 * r) * std::exp(-kSqrt5 * r);
}

double Kernel::operator()(const double* x, const double* y) const noexcept {
  double r2 = 0.0;
  for (Eigen::Index d = 0; d < ls_.size(); ++d) {
    double t = x[d] - y[d];
    r2 += t * t * inv_ls2_[d];
  }
  return s2_ * f_of_r2(r2);
}

// Scaled squared distances r^2_ij between the columns of A and B, by |a|^2 + |b|^2 - 2 a.b (one GEMM, so the
// kernel's exp/sqrt run vectorised over whole matrices); clamped at 0 against rounding.
Eigen::MatrixXd Kernel::sq_dist(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) const {
  const Eigen::VectorXd inv_ls = ls_.cwiseInverse();
  const Eigen::MatrixXd As = inv_ls.asDiagonal() * A, Bs = inv_ls.asDiagonal() * B;
  Eigen::MatrixXd R2 = -2.0 * (As.transpose() * Bs);
  R2.colwise() += As.colwise().squaredNorm().transpose();
  R2.rowwise() += Bs.colwise().squaredNorm();
  return R2.cwiseMax(0.0);
}

Eigen::MatrixXd Kernel::f_matrix(const Eigen::MatrixXd& R2) const {
  if (simd::available()) {
    Eigen::MatrixXd K(R2.rows(), R2.cols());
    const auto sz = static_cast<std::size_t>(R2.size());
    if (type_ == KernelType::RBF) simd::rbf(R2.data(), K.data(), sz, s2_);
    else simd::matern52(R2.data(), K.data(), sz, s2_);
    return K;
  }
  if (type_ == KernelType::RBF) return (s2_ * (-0.5 * R2.array()).exp()).matrix();
  const Eigen::ArrayXXd R = R2.array().sqrt();
  return (s2_ * (1.0 + kSqrt5 * R + (5.0 / 3.0) * R2.array()) * (-kSqrt5 * R).exp()).matrix();
}

Eigen::MatrixXd Kernel::gram(const Eigen::MatrixXd& X) const {
  Eigen::MatrixXd R2 = sq_dist(X, X);
  R2 = (0.5 * (R2 + R2.transpose())).eval();  // exactly symmetric
  R2.diagonal().setZero();
  return f_matrix(R2);
}

Eigen::MatrixXd Kernel::cross(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) const {
  return f_matrix(sq_dist(A, B));
}

std::vector<Eigen::MatrixXd> Kernel::gram_gradients(const Eigen::MatrixXd& X) const {
  const Eigen::Index n = X.cols(), D = ls_.size();
  std::vector<Eigen::MatrixXd> G(static_cast<std::size_t>(D + 1), Eigen::MatrixXd::Zero(n, n));
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index i = 0; i < n; ++i) {
      double r2 = 0.0;
      for (Eigen::Index d = 0; d < D; ++d) {
        double t = X(d, i) - X(d, j);
        r2 += t * t * inv_ls2_[d];
      }
      double g = s2_ * df_dr2(r2);
      // d r^2 / d log l_d = -2 q_d with q_d = (x_d - y_d)^2 / l_d^2.
      for (Eigen::Index d = 0; d < D; ++d) {
        double t = X(d, i) - X(d, j);
        G[static_cast<std::size_t>(d)](i, j) = -2.0 * g * t * t * inv_ls2_[d];
      }
      G[static_cast<std::size_t>(D)](i, j) = s2_ * f_of_r2(r2);  // d/d log s2
    }
  return G;
}

// sum_ij W_ij dK_ij/d log l_d = sum_ij V_ij q_d,ij with V = W o (-2 s2 df/dr^2) and q_d,ij = (a_i - a_j)^2 for
// a = x_d / l_d; for symmetric V that is 2 sum_i a_i^2 (V 1)_i - 2 a^T V a: matrix-vector work only.
Eigen::VectorXd Kernel::contract_gradients(const Eigen::MatrixXd& X, const Eigen::MatrixXd& W) const {
  const Eigen::Index D = ls_.size();
  Eigen::MatrixXd R2 = sq_dist(X, X);
  R2 = (0.5 * (R2 + R2.transpose())).eval();
  R2.diagonal().setZero();
  Eigen::VectorXd out(D + 1);
  Eigen::ArrayXXd G, K;  // -2 s2 df/dr^2 and the kernel itself, sharing one exp pass
  if (type_ == KernelType::RBF) {
    K = s2_ * (-0.5 * R2.array()).exp();
    G = K;
  } else {
    const Eigen::ArrayXXd R = R2.array().sqrt();
    const Eigen::ArrayXXd E = s2_ * (-kSqrt5 * R).exp();
    G = (5.0 / 3.0) * (1.0 + kSqrt5 * R) * E;
    K = (1.0 + kSqrt5 * R + (5.0 / 3.0) * R2.array()) * E;
  }
  const Eigen::MatrixXd V = (W.array() * G).matrix();
  const Eigen::VectorXd row = V.rowwise().sum();
  for (Eigen::Index d = 0; d < D; ++d) {
    const Eigen::VectorXd a = X.row(d).transpose() / ls_[d];
    out[d] = 2.0 * a.cwiseAbs2().dot(row) - 2.0 * a.dot(V * a);
  }
  out[D] = (W.array() * K).sum();
  return out;
}

void Kernel::gram_parts(const Eigen::MatrixXd& X, Eigen::MatrixXd& R2, Eigen::MatrixXd& E, Eigen::MatrixXd& K,
                        Eigen::MatrixXd& G) const {
  const Eigen::Index n = X.cols();
  R2 = sq_dist(X, X);
  for (Eigen::Matrix<double, -1, -1>* M : {&E, &K, &G})
    if (M->rows() != n || M->cols() != n) M->setZero(n, n);  // upper triangles stay finite (never read)
  // Lower triangles only, column segment by column segment (vectorised); entries equal gram()'s.
  for (Eigen::Index j = 0; j < n; ++j) {
    const Eigen::Index m = n - j;
    auto r2 = R2.col(j).segment(j, m).array();
    r2 = 0.5 * (r2 + R2.row(j).segment(j, m).transpose().array());  // exactly symmetric, as in gram()
    r2[0] = 0.0;
    auto k = K.col(j).segment(j, m).array();
    auto g = G.col(j).segment(j, m).array();
    if (simd::available()) {
      const auto mm = static_cast<std::size_t>(m);
      if (type_ == KernelType::RBF) {
        simd::rbf(r2.data(), k.data(), mm, s2_);
        g = k;
      } else {
        simd::matern52_grad(r2.data(), k.data(), g.data(), mm, s2_);
      }
      continue;
    }
    if (type_ == KernelType::RBF) {
      k = s2_ * (-0.5 * r2).exp();
      g = k;
      continue;
    }
    auto e = E.col(j).segment(j, m).array();
    g = r2.sqrt();  // R
    e = (-kSqrt5 * g).exp();
    k = s2_ * (1.0 + kSqrt5 * g + (5.0 / 3.0) * r2) * e;
    g = (5.0 / 3.0) * (1.0 + kSqrt5 * g) * (s2_ * e);
  }
}

Eigen::VectorXd Kernel::contract_gradients(const Eigen::MatrixXd& X, const Eigen::MatrixXd& W, const Eigen::MatrixXd& K,
                                           const Eigen::MatrixXd& G, Eigen::MatrixXd& V) const {
  const Eigen::Index D = ls_.size(), n = W.rows();
  Eigen::VectorXd out(D + 1);
  if (V.rows() != n || V.cols() != n) V.setZero(n, n);
  double wk = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const Eigen::Index m = n - j;
    V.col(j).segment(j, m).array() = W.col(j).segment(j, m).array() * G.col(j).segment(j, m).array();
    wk += 2.0 * (W.col(j).segment(j, m).array() * K.col(j).segment(j, m).array()).sum() - W(j, j) * K(j, j);
  }
  const auto Vs = V.selfadjointView<Eigen::Lower>();
  const Eigen::VectorXd row = Vs * Eigen::VectorXd::Ones(n);
  for (Eigen::Index d = 0; d < D; ++d) {
    const Eigen::VectorXd a = X.row(d).transpose() / ls_[d];
    const Eigen::VectorXd Va = Vs * a;
    out[d] = 2.0 * a.cwiseAbs2().dot(row) - 2.0 * a.dot(Va);
  }
  out[D] = wk;
  return out;
}

void Kernel::cross_stats(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, const Eigen::VectorXd& w, double* dot,
                         double* max2, double* kout) const {
  const Eigen::VectorXd inv_ls = ls_.cwiseInverse();
  const Eigen::MatrixXd As = inv_ls.asDiagonal() * A, Bs = inv_ls.asDiagonal() * B;
  const Eigen::ArrayXd a2 = As.colwise().squaredNorm().transpose().array();
  const Eigen::ArrayXd b2 = Bs.colwise().squaredNorm().transpose().array();
  const Eigen::MatrixXd AB = As.transpose() * Bs;
  Eigen::ArrayXd r2(A.cols()), k(A.cols());
  for (Eigen::Index j = 0; j < B.cols(); ++j) {
    r2 = (a2 + b2[j] - 2.0 * AB.col(j).array()).max(0.0);
    if (simd::available()) {
      if (type_ == KernelType::RBF) simd::rbf(r2.data(), k.data(), static_cast<std::size_t>(k.size()), s2_);
      else simd::matern52(r2.data(), k.data(), static_cast<std::size_t>(k.size()), s2_);
    } else if (type_ == KernelType::RBF) {
      k = s2_ * (-0.5 * r2).exp();
    } else {
      k = r2.sqrt();
      k = s2_ * (1.0 + kSqrt5 * k + (5.0 / 3.0) * r2) * (-kSqrt5 * k).exp();
    }
    dot[j] = (k * w.array()).sum();
    max2[j] = k.square().maxCoeff();
    if (kout) Eigen::Map<Eigen::ArrayXd>(kout + j * A.cols(), A.cols()) = k;
  }
}

double Kernel::value_grad_x(const double* x, const double* y, double* g) const noexcept {
  double r2 = 0.0;
  for (Eigen::Index d = 0; d < ls_.size(); ++d) {
    double t = x[d] - y[d];
    r2 += t * t * inv_ls2_[d];
  }
  double k, c;  // one exp shared by the value and the derivative (same formulas as f_of_r2 / df_dr2)
  if (type_ == KernelType::RBF) {
    const double e = std::exp(-0.5 * r2);
    k = s2_ * e;
    c = 2.0 * s2_ * (-0.5 * e);
  } else {
    const double r = std::sqrt(r2), e = std::exp(-kSqrt5 * r);
    k = s2_ * ((1.0 + kSqrt5 * r + (5.0 / 3.0) * r2) * e);
    c = 2.0 * s2_ * (-(5.0 / 6.0) * (1.0 + kSqrt5 * r) * e);
  }
  for (Eigen::Index d = 0; d < ls_.size(); ++d) g[d] = c * (x[d] - y[d]) * inv_ls2_[d];
  return k;
}

void Kernel::values_grads_x(const double* x, const Eigen::MatrixXd& Y, double* k, double* dK) const {
  const Eigen::Index n = Y.cols(), D = ls_.size();
  if (!simd::available()) {
    for (Eigen::Index i = 0; i < n; ++i) k[i] = value_grad_x(x, Y.col(i).data(), dK + i * D);
    return;
  }
  thread_local Eigen::VectorXd r2, g;
  r2.resize(n);
  g.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* y = Y.col(i).data();
    double s = 0.0;
    for (Eigen::Index d = 0; d < D; ++d) {
      const double t = x[d] - y[d];
      s += t * t * inv_ls2_[d];
    }
    r2[i] = s;
  }
  if (type_ == KernelType::RBF) {
    simd::rbf(r2.data(), k, static_cast<std::size_t>(n), s2_);
    g = Eigen::Map<const Eigen::VectorXd>(k, n);
  } else {
    simd::matern52_grad(r2.data(), k, g.data(), static_cast<std::size_t>(n), s2_);
  }
  // d k / d x_d = 2 s2 df/d(r^2) (x_d - y_d) / l_d^2 = -g (x_d - y_d) / l_d^2.
  for (Eigen::Index i = 0; i < n; ++i) {
    const double* y = Y.col(i).data();
    for (Eigen::Index d = 0; d < D; ++d) dK[i * D + d] = -g[i] * (x[d] - y[d]) * inv_ls2_[d];
  }
}

void Kernel::grad_x(const double* x, const double* y, double* g) const noexcept {
  double r2 = 0.0;
  for (Eigen::Index d = 0; d < ls_.size(); ++d) {
    double t = x[d] - y[d];
    r2 += t * t * inv_ls2_[d];
  }
  double c = 2.0 * s2_ * df_dr2(r2);
  for (Eigen::Index d = 0; d < ls_.size(); ++d) g[d] = c * (x[d] - y[d]) * inv_ls2_[d];
}

}  // namespace kubetune::search::gp
