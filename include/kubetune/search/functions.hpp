// Built-in benchmark functions (Branin, Hartmann, Rosenbrock, ...) with domains, known optima and batch calls.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "kubetune/core/space.hpp"

namespace kubetune::search::functions {

/// A test function for optimisation research, all to be minimised. Definitions, domains, optima and argmins
/// follow S. Surjanovic and D. Bingham, "Virtual Library of Simulation Experiments: Test Functions and
/// Datasets" (Simon Fraser University, https://www.sfu.ca/~ssurjano/optimization.html); where the library
/// prints rounded optima, the values here are the exact closed forms or the published point refined by a
/// local minimisation (noted in functions.cpp). Parameters are named x0..x{d-1}.
class Function {
 public:
  using Eval = double (*)(const double* x, std::size_t dim);

  Function(std::string name, std::size_t dim, bool variable_dim, std::vector<std::pair<double, double>> bounds,
           double optimum, std::vector<std::vector<double>> argmins, Eval f, std::string reference);

  const std::string& name() const noexcept { return name_; }
  std::size_t dim() const noexcept { return dim_; }
  /// True for the families defined for any dimension (Rosenbrock, Ackley, Levy, Styblinski-Tang, Rastrigin).
  bool variable_dim() const noexcept { return variable_dim_; }
  /// Domain per coordinate: (low, high).
  const std::vector<std::pair<double, double>>& bounds() const noexcept { return bounds_; }
  /// Known global minimum value.
  double optimum() const noexcept { return optimum_; }
  /// One global minimiser (the first of argmins()).
  const std::vector<double>& argmin() const noexcept { return argmins_.front(); }
  /// Every known global minimiser (Branin and the six-hump camel have several).
  const std::vector<std::vector<double>>& argmins() const noexcept { return argmins_; }
  /// Where the definition comes from.
  const std::string& reference() const noexcept { return reference_; }

  /// f(x) for one point of dim() coordinates (no domain check: the formulas extend beyond it).
  double operator()(const double* x) const { return f_(x, dim_); }
  /// f(x); throws InvalidArgument if x.size() != dim().
  double evaluate(const std::vector<double>& x) const;
  /// Batch: out[i] = f(X[i*dim .. i*dim+dim)) for n row-major points; `dim` must equal dim(). OpenMP over
  /// points with `n_threads` (<= 0: all hardware threads) when n is large.
  void evaluate(std::size_t n, std::size_t dim, const double* X, double* out, int n_threads = 1) const;
  /// The domain as a SearchSpace of continuous doubles x0..x{d-1}.
  SearchSpace make_space() const;

 private:
  std::string name_;
  std::size_t dim_;
  bool variable_dim_;
  std::vector<std::pair<double, double>> bounds_;
  double optimum_;
  std::vector<std::vector<double>> argmins_;
  Eval f_;
  std::string reference_;
};

/// Registered names: "branin", "hartmann3", "hartmann6", "rosenbrock", "ackley", "levy", "styblinski_tang",
/// "six_hump_camel", "goldstein_price", "rastrigin" (case, dashes, underscores and spaces are ignored, and
/// "camel" means the six-hump camel).
std::vector<std::string> names();
/// Build a function; dim = 0 picks the natural dimension (2 for the variable-dimension families). A fixed-
/// dimension function rejects any other dim; the families need dim >= 1 (Rosenbrock: >= 2).
/// Throws NotFound naming the registered functions for an unknown name.
Function get(const std::string& name, std::size_t dim = 0);

}  // namespace kubetune::search::functions
