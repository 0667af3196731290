// Acquisition functions: log-EI vs log(EI), finiteness in the far tail, derivatives vs finite differences.
#include <cmath>

#include <gtest/gtest.h>

#include "kubetune/core/error.hpp"
#include "kubetune/search/gp/acquisition.hpp"

using namespace kubetune::search::gp;

TEST(GPAcquisition, LogEIEqualsLogOfEIWhereRepresentable) {
  for (double z = -37.0; z <= 8.0; z += 0.05) {
    double mu = 1.0 - 0.7 * z, sd = 0.7, best = 1.0;  // (best - mu) / sd = z
    double ei = expected_improvement(mu, sd, best);
    if (!(ei > 1e-300)) continue;
    // Direct formula loses digits to cancellation for z << 0; compare with a tolerance that reflects that.
    double tol = 1e-12 * (1 + z * z);
    EXPECT_NEAR(log_expected_improvement(mu, sd, best), std::log(ei), tol) << "z=" << z;
  }
  EXPECT_NEAR(expected_improvement(0.0, 2.0, 0.0), 2.0 / std::sqrt(2 * M_PI), 1e-15);  // sd * phi(0)
  // Known value: h(-10) = phi(10) - 10 Q(10) = 7.4734e-25 (erfc-based reference to ~1e-8).
  double q10 = 0.5 * std::erfc(10.0 / std::sqrt(2.0));
  double h10 = std::exp(-50.0) / std::sqrt(2 * M_PI) - 10.0 * q10;
  EXPECT_NEAR(std::exp(log_h(-10.0)) / h10, 1.0, 1e-6);
}

TEST(GPAcquisition, LogEIFiniteAndMonotoneWhereEIUnderflows) {
  double prev = 0.0;
  bool first = true;
  for (double z : {-40.0, -100.0, -1e3, -1e5, -1e8, -1e150}) {
    EXPECT_EQ(expected_improvement(-z, 1.0, 0.0), 0.0);  // EI itself underflows to 0
    double l = log_expected_improvement(-z, 1.0, 0.0);
    EXPECT_TRUE(std::isfinite(l)) << z;
    // Asymptotically log h(z) ~ -z^2/2 - log(2 pi)/2 - 2 log|z|.
    double asym = -0.5 * z * z - 0.5 * std::log(2 * M_PI) - 2 * std::log(-z);
    if (std::abs(z) < 1e100) {
      EXPECT_NEAR(l / asym, 1.0, 1e-3);
    }
    if (!first) {
      EXPECT_LT(l, prev);
    }
    prev = l;
    first = false;
  }
  double lp = log_probability_of_improvement(1e4, 1.0, 0.0);
  EXPECT_TRUE(std::isfinite(lp));
  EXPECT_NEAR(log_probability_of_improvement(0.3, 1.0, 1.0), std::log(0.5 * std::erfc(-0.7 / std::sqrt(2.0))), 1e-14);
  EXPECT_NEAR(kubetune::normal::log_cdf(-20.0), std::log(0.5 * std::erfc(20.0 / std::sqrt(2.0))), 1e-10);
}

TEST(GPAcquisition, DerivativesMatchFiniteDifferences) {
  for (AcqType a : {AcqType::LogEI, AcqType::EI, AcqType::PI, AcqType::UCB}) {
    for (double mu : {-0.5, 0.2, 1.5, 4.0, 12.0}) {
      for (double var : {0.01, 0.3, 2.0}) {
        double dmu, dvar;
        double v = acquisition(a, mu, var, 0.4, 0.01, 1.96, &dmu, &dvar);
        ASSERT_TRUE(std::isfinite(v));
        const double h = 1e-6;
        double fm = (acquisition(a, mu + h, var, 0.4, 0.01, 1.96) - acquisition(a, mu - h, var, 0.4, 0.01, 1.96)) / (2 * h);
        double fv = (acquisition(a, mu, var + h * var, 0.4, 0.01, 1.96) -
                     acquisition(a, mu, var - h * var, 0.4, 0.01, 1.96)) / (2 * h * var);
        EXPECT_NEAR(dmu, fm, 1e-5 * (1 + std::abs(fm))) << to_string(a) << " mu=" << mu << " var=" << var;
        EXPECT_NEAR(dvar, fv, 1e-5 * (1 + std::abs(fv))) << to_string(a) << " mu=" << mu << " var=" << var;
      }
    }
  }
  EXPECT_THROW(acquisition(AcqType::Hedge, 0, 1, 0, 0, 1), kubetune::InvalidArgument);
  EXPECT_EQ(acq_from_string("LCB"), AcqType::UCB);
  EXPECT_EQ(acq_from_string("gp_hedge"), AcqType::Hedge);
  EXPECT_THROW(acq_from_string("foo"), kubetune::InvalidArgument);
}
