// Stationary ARD covariance kernels (Matérn-5/2, RBF) with analytic gradients for GP regression.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Core>

namespace kubetune::search::gp {

enum class KernelType { Matern52, RBF };

std::string to_string(KernelType k);
/// "matern52" | "matern" | "rbf" | "se" (case-insensitive); InvalidArgument otherwise.
KernelType kernel_from_string(const std::string& s);

/// k(x, y) = s2 * f(r), r^2 = sum_d ((x_d - y_d) / l_d)^2 (automatic relevance determination, one length
/// scale per input dimension). Matérn-5/2: f(r) = (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r); RBF: exp(-r^2 / 2)
/// (Rasmussen & Williams, "Gaussian Processes for Machine Learning", 2006, eqs. 4.9 and 4.17).
/// Hyperparameters are handled in log space: theta = [log l_1 .. log l_D, log s2].
/// Points are the COLUMNS of the matrices passed in (D x n), the cache-friendly layout for Eigen.
class Kernel {
 public:
  Kernel() = default;
  Kernel(KernelType type, Eigen::VectorXd lengthscales, double signal_variance);

  KernelType type() const noexcept { return type_; }
  Eigen::Index dim() const noexcept { return ls_.size(); }
  const Eigen::VectorXd& lengthscales() const noexcept { return ls_; }
  double signal_variance() const noexcept { return s2_; }
  /// Number of kernel hyperparameters (D + 1).
  Eigen::Index n_params() const noexcept { return ls_.size() + 1; }
  /// [log l_1 .. log l_D, log s2].
  Eigen::VectorXd log_params() const;
  void set_log_params(const Eigen::VectorXd& theta);

  /// k(x, y) for two points of length D.
  double operator()(const double* x, const double* y) const noexcept;
  /// Gram matrix K(X, X) (n x n) for X of size D x n.
  Eigen::MatrixXd gram(const Eigen::MatrixXd& X) const;
  /// Cross covariance K(A, B) (nA x nB).
  Eigen::MatrixXd cross(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) const;
  /// dK/dtheta_j for every hyperparameter (D + 1 matrices of n x n); for tests and small n.
  std::vector<Eigen::MatrixXd> gram_gradients(const Eigen::MatrixXd& X) const;
  /// sum_ij W_ij dK_ij/dtheta_j for every j, without forming the derivative matrices (O(n^2 D)).
  /// W must be symmetric n x n. This is what the marginal-likelihood gradient needs.
  Eigen::VectorXd contract_gradients(const Eigen::MatrixXd& X, const Eigen::MatrixXd& W) const;
  /// Lower triangles of the Gram matrix K (entries equal to gram()'s) and of G = -2 s2 df/d(r^2), in one
  /// pass over the distances, into caller-owned buffers reused across likelihood evaluations (R2 and E
  /// are scratch; the upper triangles are not written).
  void gram_parts(const Eigen::MatrixXd& X, Eigen::MatrixXd& R2, Eigen::MatrixXd& E, Eigen::MatrixXd& K,
                  Eigen::MatrixXd& G) const;
  /// contract_gradients() from gram_parts()' K and G, reading the lower triangles of W, K and G only;
  /// V is scratch (n x n).
  Eigen::VectorXd contract_gradients(const Eigen::MatrixXd& X, const Eigen::MatrixXd& W, const Eigen::MatrixXd& K,
                                     const Eigen::MatrixXd& G, Eigen::MatrixXd& V) const;
  /// For each column b_j of B: dot[j] = sum_i k(a_i, b_j) w_i and max2[j] = max_i k(a_i, b_j)^2, in one
  /// fused pass per column. w has A.cols() entries; dot/max2 B.cols(). If kout is non-null the kernel values
  /// are stored there too (column-major A.cols() x B.cols(), i.e. cross(A, B)'s layout).
  void cross_stats(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, const Eigen::VectorXd& w, double* dot,
                   double* max2, double* kout = nullptr) const;
  /// Gradient of k(x, y) with respect to x (length D) written to g.
  void grad_x(const double* x, const double* y, double* g) const noexcept;
  /// k(x, y) returned and its gradient w.r.t. x written to g, sharing one distance and one exp.
  double value_grad_x(const double* x, const double* y, double* g) const noexcept;
  /// k[i] = k(x, y_i) and dK[i D .. i D + D) = d k(x, y_i) / dx for every column y_i of Y (vectorised).
  void values_grads_x(const double* x, const Eigen::MatrixXd& Y, double* k, double* dK) const;

 private:
  // f(r^2) and df/d(r^2) of the unit-variance kernel.
  double f_of_r2(double r2) const noexcept;
  double df_dr2(double r2) const noexcept;
  Eigen::MatrixXd sq_dist(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) const;
  Eigen::MatrixXd f_matrix(const Eigen::MatrixXd& R2) const;  // s2 f(r^2), elementwise

  KernelType type_ = KernelType::Matern52;
  Eigen::VectorXd ls_;
  Eigen::VectorXd inv_ls2_;  // 1 / l_d^2
  double s2_ = 1.0;
};

}  // namespace kubetune::search::gp
