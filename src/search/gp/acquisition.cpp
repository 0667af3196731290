// Acquisition functions with stable logarithms (log-EI, log-PI) and their derivatives.
#include "kubetune/search/gp/acquisition.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "kubetune/core/error.hpp"
#include "kubetune/core/normal.hpp"

namespace kubetune::search::gp {

std::string to_string(AcqType a) {
  switch (a) {
    case AcqType::LogEI: return "logei";
    case AcqType::EI: return "ei";
    case AcqType::PI: return "pi";
    case AcqType::UCB: return "ucb";
    case AcqType::Hedge: return "gp_hedge";
  }
  return "logei";
}

AcqType acq_from_string(const std::string& s) {
  std::string t(s);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "logei" || t == "log_ei" || t == "log-ei") return AcqType::LogEI;
  if (t == "ei") return AcqType::EI;
  if (t == "pi" || t == "logpi") return AcqType::PI;
  if (t == "ucb" || t == "lcb") return AcqType::UCB;
  if (t == "gp_hedge" || t == "hedge") return AcqType::Hedge;
  KT_THROW(InvalidArgument, "acq_func '", s, "' is not one of logei, ei, pi, ucb/lcb, gp_hedge");
}

double log_h(double z, double* dlogh) noexcept {
  if (z > -3.0) {
    double cdf = normal::cdf(z);
    double h = normal::pdf(z) + z * cdf;
    if (dlogh) *dlogh = cdf / h;  // h'(z) = Phi(z)
    return std::log(h);
  }
  double t = -z;
  double c = normal::mills_tail(t);  // Q(t) / phi(t) = 1 / (t + c)
  // h(-t) = phi(t) - t Q(t) = phi(t) (1 - t / (t + c)) = phi(t) c / (t + c); Phi(-t) / h(-t) = 1 / c.
  if (dlogh) *dlogh = 1.0 / c;
  return -0.5 * t * t - normal::kLogSqrt2Pi + std::log(c) - std::log(t + c);
}

double expected_improvement(double mu, double sd, double best, double xi) noexcept {
  double z = (best - xi - mu) / sd;
  return sd * (normal::pdf(z) + z * normal::cdf(z));
}

double log_expected_improvement(double mu, double sd, double best, double xi) noexcept {
  return std::log(sd) + log_h((best - xi - mu) / sd);
}

double log_probability_of_improvement(double mu, double sd, double best, double xi) noexcept {
  return normal::log_cdf((best - xi - mu) / sd);
}

double upper_confidence_bound(double mu, double sd, double kappa) noexcept { return -(mu - kappa * sd); }

double acquisition(AcqType a, double mu, double var, double best, double xi, double kappa, double* dmu,
                   double* dvar) {
  const double sd = std::sqrt(var);
  const double z = (best - xi - mu) / sd;
  double val = 0.0, dv_dmu = 0.0, dv_dsd = 0.0;
  switch (a) {
    case AcqType::LogEI: {
      double dl = 0.0;
      val = std::log(sd) + log_h(z, &dl);
      dv_dmu = -dl / sd;
      dv_dsd = 1.0 / sd - dl * z / sd;
      break;
    }
    case AcqType::EI: {
      double pdf = normal::pdf(z), cdf = normal::cdf(z);
      val = sd * (pdf + z * cdf);
      dv_dmu = -cdf;
      dv_dsd = pdf;
      break;
    }
    case AcqType::PI: {
      val = normal::log_cdf(z);
      double ratio = z > -5.0 ? normal::pdf(z) / normal::cdf(z) : -z + normal::mills_tail(-z);  // phi / Phi
      dv_dmu = -ratio / sd;
      dv_dsd = -ratio * z / sd;
      break;
    }
    case AcqType::UCB:
      val = -(mu - kappa * sd);
      dv_dmu = -1.0;
      dv_dsd = kappa;
      break;
    case AcqType::Hedge: KT_THROW(InvalidArgument, "acquisition: gp_hedge is a portfolio, not one function");
  }
  if (dmu) *dmu = dv_dmu;
  if (dvar) *dvar = dv_dsd * 0.5 / sd;
  return val;
}

}  // namespace kubetune::search::gp
