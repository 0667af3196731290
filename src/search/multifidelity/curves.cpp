// Synthetic learning-curve benchmark family (closed-form final values, crossing curves, seeded noise).
#include "kubetune/search/multifidelity/curves.hpp"

#include <cmath>
#include <cstring>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"

namespace kubetune::search {
namespace {
constexpr double kPi = 3.14159265358979323846;
std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
}  // namespace

LearningCurves::LearningCurves() : LearningCurves(Config{}) {}

LearningCurves::LearningCurves(Config c) : cfg_(c) {
  KT_CHECK(cfg_.dim >= 1 && cfg_.dim <= 1000, InvalidArgument, "learning curves: 'dim' = ", cfg_.dim,
           " must be in [1, 1000]");
  KT_CHECK(std::isfinite(cfg_.max_budget) && cfg_.max_budget > 1, InvalidArgument, "learning curves: 'max_budget' = ",
           cfg_.max_budget, " must be > 1");
  KT_CHECK(std::isfinite(cfg_.noise) && cfg_.noise >= 0, InvalidArgument, "learning curves: 'noise' = ", cfg_.noise,
           " must be >= 0");
  KT_CHECK(std::isfinite(cfg_.crossing) && cfg_.crossing >= 0, InvalidArgument, "learning curves: 'crossing' = ",
           cfg_.crossing, " must be >= 0");
  Rng rng(cfg_.seed, 0x6c63);  // "lc"
  for (int j = 0; j < cfg_.dim; ++j) {
    weights_.push_back(rng.uniform(1.0, 4.0));
    centre_.push_back(rng.uniform(0.2, 0.8));
  }
  phase_ = rng.uniform(0.0, 2 * kPi);
}

void LearningCurves::check(const std::vector<double>& u) const {
  KT_CHECK(u.size() == static_cast<std::size_t>(cfg_.dim), InvalidArgument, "learning curves: got ", u.size(),
           " coordinates for dim = ", cfg_.dim);
  for (double v : u) KT_CHECK(std::isfinite(v), InvalidArgument, "learning curves: coordinate ", v, " is not finite");
}

double LearningCurves::final_value(const std::vector<double>& u) const {
  check(u);
  double s = 0;
  for (int j = 0; j < cfg_.dim; ++j) {
    const double z = u[static_cast<std::size_t>(j)] - centre_[static_cast<std::size_t>(j)];
    s += weights_[static_cast<std::size_t>(j)] * z * z + 0.05 * (1 - std::cos(6 * kPi * z));
  }
  return s / cfg_.dim;
}

double LearningCurves::rate(const std::vector<double>& u) const {
  double s = 0;
  for (double v : u) s += v;
  return 0.4 + 1.2 * (0.5 + 0.5 * std::sin(7.0 * s / std::sqrt(static_cast<double>(cfg_.dim)) + phase_));
}

double LearningCurves::amplitude(double f) const { return 0.3 + 0.5 * cfg_.crossing * std::exp(-f / 0.1); }

double LearningCurves::mean_value(const std::vector<double>& u, double budget) const {
  const double f = final_value(u);
  const double R = cfg_.max_budget;
  const double b = std::fmin(std::fmax(budget, 1.0), R);
  const double k = rate(u);
  const double h = (std::pow(b, -k) - std::pow(R, -k)) / (1 - std::pow(R, -k));
  return f + amplitude(f) * h;
}

double LearningCurves::value(const std::vector<double>& u, double budget) const {
  KT_CHECK(std::isfinite(budget), InvalidArgument, "learning curves: budget ", budget, " is not finite");
  const double m = mean_value(u, budget);
  if (cfg_.noise == 0) return m;
  const double R = cfg_.max_budget;
  const double b = std::fmin(std::fmax(budget, 1.0), R);
  const double k = rate(u);
  const double h = (std::pow(b, -k) - std::pow(R, -k)) / (1 - std::pow(R, -k));
  std::uint64_t key = hash_combine(kGoldenGamma, cfg_.seed);
  for (double v : u) key = hash_combine(key, bits(v));
  key = hash_combine(key, bits(b));
  Rng rng(key, 1);
  return m + cfg_.noise * (0.5 + h) * rng.normal();
}

std::vector<double> LearningCurves::curve(const std::vector<double>& u, const std::vector<double>& budgets) const {
  std::vector<double> out;
  out.reserve(budgets.size());
  for (double b : budgets) out.push_back(value(u, b));
  return out;
}

SearchSpace LearningCurves::space(const std::string& resource_name) const {
  SearchSpace s;
  for (int j = 0; j < cfg_.dim; ++j) s.add_float("x" + std::to_string(j), 0.0, 1.0);
  s.add_int(resource_name, 1, static_cast<std::int64_t>(std::floor(cfg_.max_budget)));
  return s;
}

}  // namespace kubetune::search
