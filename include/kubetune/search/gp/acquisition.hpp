// Acquisition functions for minimisation: log-EI (stable in the far tail), EI, PI (log), UCB/LCB.
#pragma once

#include <string>

#include "kubetune/core/normal.hpp"

namespace kubetune::search::gp {

enum class AcqType { LogEI, EI, PI, UCB, Hedge };

std::string to_string(AcqType a);
/// "logei" | "ei" | "pi" | "ucb" | "lcb" | "gp_hedge" (case-insensitive; Katib/skopt names accepted).
AcqType acq_from_string(const std::string& s);

/// Deprecated (one release): the standard normal maths live in kubetune/core/normal.hpp.
[[deprecated("use kubetune::normal::pdf")]] inline double norm_pdf(double z) noexcept { return normal::pdf(z); }
[[deprecated("use kubetune::normal::cdf")]] inline double norm_cdf(double z) noexcept { return normal::cdf(z); }
[[deprecated("use kubetune::normal::log_cdf")]] inline double log_norm_cdf(double z) noexcept {
  return normal::log_cdf(z);
}

/// log h(z) with h(z) = phi(z) + z Phi(z), so that EI = sigma h((best - mu - xi) / sigma).
/// For z < -3 uses h(z) = phi(z) c / (|z| + c), c the tail of Laplace's continued fraction for the Mills
/// ratio, which has no cancellation and stays finite for any finite z (cf. Ament et al., "Unexpected
/// Improvements to Expected Improvement for Bayesian Optimization", NeurIPS 2023). Also returns
/// d log h / dz in *dlogh if non-null.
double log_h(double z, double* dlogh = nullptr) noexcept;

/// Expected improvement below `best` (minimisation) and its logarithm. sd > 0.
double expected_improvement(double mu, double sd, double best, double xi = 0.0) noexcept;
double log_expected_improvement(double mu, double sd, double best, double xi = 0.0) noexcept;
/// log P(f < best - xi).
double log_probability_of_improvement(double mu, double sd, double best, double xi = 0.0) noexcept;
/// Negated lower confidence bound -(mu - kappa sd) (larger is better, like the others).
double upper_confidence_bound(double mu, double sd, double kappa) noexcept;

/// Value of acquisition `a` (to be MAXIMISED) from a posterior mean and variance, with its derivatives
/// w.r.t. mu and var in *dmu, *dvar if non-null. Hedge is not a single function (InvalidArgument).
double acquisition(AcqType a, double mu, double var, double best, double xi, double kappa,
                   double* dmu = nullptr, double* dvar = nullptr);

}  // namespace kubetune::search::gp
