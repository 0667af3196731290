// ParzenEstimator::refit: after random edits, the estimator equals a fit on the edited observations bit for bit
// (kernels, weights, densities); edits it cannot make in place and bad ones leave it untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/search/parzen.hpp"

using kubetune::Rng;
using namespace kubetune::search;

namespace {
// Mixed dimensions: continuous, discrete with many ties, categorical, a continuous one with a prior outside.
std::vector<ParzenDim> mixed_dims() {
  ParzenDim wide = ParzenDim::continuous(0.0, 1.0);
  wide.prior_mu = 2.0;  // the prior's centre outside the support: its log Z takes the scalar path
  return {ParzenDim::continuous(-5.0, 5.0), ParzenDim::discrete(1.0, 16.0, 1.0), ParzenDim::categorical(4), wide};
}

double draw(Rng& rng, const ParzenDim& d) {
  switch (d.kind) {
    case ParzenDim::Kind::Continuous: return rng.uniform(d.low, d.high);
    case ParzenDim::Kind::Discrete: return d.low + d.step * static_cast<double>(rng.below(16));
    default: return static_cast<double>(rng.below(d.n_choices));
  }
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const ParzenEstimator& a, const ParzenEstimator& b, Rng& rng, const char* what) {
  ASSERT_EQ(a.n_kernels(), b.n_kernels()) << what;
  for (std::size_t d = 0; d < a.n_dims(); ++d)
    for (std::size_t k = 0; k < a.n_kernels(); ++k) {
      ASSERT_TRUE(same_bits(a.mus(d)[k], b.mus(d)[k])) << what << ": mu " << d << "," << k;
      ASSERT_TRUE(same_bits(a.sigmas(d)[k], b.sigmas(d)[k])) << what << ": sigma " << d << "," << k;
    }
  for (std::size_t k = 0; k < a.n_kernels(); ++k) ASSERT_TRUE(same_bits(a.weights()[k], b.weights()[k])) << what;
  std::vector<double> x(40 * a.n_dims());
  for (std::size_t r = 0; r < 40; ++r)
    for (std::size_t d = 0; d < a.n_dims(); ++d) x[r * a.n_dims() + d] = draw(rng, a.dims()[d]);
  std::vector<double> la(40), lb(40);
  a.log_pdf(x.data(), 40, la.data());
  b.log_pdf(x.data(), 40, lb.data());
  for (std::size_t r = 0; r < 40; ++r) ASSERT_TRUE(same_bits(la[r], lb[r])) << what << ": log_pdf " << r;
}

// Rounds of random erasures and insertions (row-major observations kept alongside), each checked against a fit;
// where refit() declines, the estimator must be unchanged and is fitted anew. Returns the rounds done in place.
std::size_t run_edits(const std::vector<ParzenDim>& dims, const ParzenOptions& opt, std::size_t n0,
                      std::size_t rounds, std::size_t max_edits, std::uint64_t seed, bool grow = false) {
  std::size_t in_place = 0;
  Rng rng(seed);
  const std::size_t D = dims.size();
  std::vector<double> obs;
  for (std::size_t i = 0; i < n0 * D; ++i) obs.push_back(draw(rng, dims[i % D]));
  ParzenEstimator inc, ref;
  inc.fit(dims, obs.data(), n0, nullptr, opt);
  for (std::size_t round = 0; round < rounds; ++round) {
    const std::size_t n = obs.size() / D;
    std::vector<std::size_t> erase;
    for (std::size_t e = grow ? 0 : rng.below(max_edits + 1); e > 0; --e) erase.push_back(rng.below(n));
    std::sort(erase.begin(), erase.end());
    erase.erase(std::unique(erase.begin(), erase.end()), erase.end());
    std::vector<double> kept;
    for (std::size_t i = 0, e = 0; i < n; ++i) {
      if (e < erase.size() && erase[e] == i) ++e;
      else kept.insert(kept.end(), obs.begin() + static_cast<std::ptrdiff_t>(i * D), obs.begin() + static_cast<std::ptrdiff_t>((i + 1) * D));
    }
    const std::size_t n_add = rng.below(max_edits + 1), n_new = kept.size() / D + n_add;
    std::vector<std::size_t> at;  // n_add distinct positions of the new order
    while (at.size() < n_add) {
      const std::size_t p = rng.below(n_new);
      if (std::find(at.begin(), at.end(), p) == at.end()) at.push_back(p);
    }
    std::sort(at.begin(), at.end());
    std::vector<double> rows, next;
    for (std::size_t j = 0, a = 0, k = 0; j < kept.size() / D + at.size(); ++j) {
      if (a < at.size() && at[a] == j) {
        for (std::size_t d = 0; d < D; ++d) rows.push_back(draw(rng, dims[d]));
        // a repeated centre now and then (ties in the sorted orders)
        if (rng.uniform() < 0.3 && !next.empty()) std::copy(next.end() - static_cast<std::ptrdiff_t>(D), next.end(), rows.end() - static_cast<std::ptrdiff_t>(D));
        next.insert(next.end(), rows.end() - static_cast<std::ptrdiff_t>(D), rows.end());
        ++a;
      } else {
        next.insert(next.end(), kept.begin() + static_cast<std::ptrdiff_t>(k * D), kept.begin() + static_cast<std::ptrdiff_t>((k + 1) * D));
        ++k;
      }
    }
    obs = next;
    std::vector<double> w(obs.size() / D);
    for (double& v : w) v = rng.uniform(0.1, 1.0);
    const ParzenEstimator before = inc;
    const bool done = inc.refit(erase, at, rows.data(), w.data());
    EXPECT_EQ(done, before.can_refit(obs.size() / D, erase.size() + at.size()));
    if (!done) {
      expect_same(inc, before, rng, "a declined edit");
      inc.fit(dims, obs.data(), obs.size() / D, w.data(), opt);
    }
    in_place += done;
    ref.fit(dims, obs.data(), obs.size() / D, w.data(), opt);
    expect_same(inc, ref, rng, "after an edit");
  }
  return in_place;
}
}  // namespace

TEST(ParzenRefit, EditsInPlaceEqualAFit) {
  EXPECT_EQ(run_edits(mixed_dims(), ParzenOptions{}, 150, 60, 3, 1), 60u);
}

TEST(ParzenRefit, EndpointsAndNoMagicClip) {
  ParzenOptions opt;
  opt.consider_endpoints = true;
  EXPECT_EQ(run_edits(mixed_dims(), opt, 120, 40, 4, 2), 40u);
  opt.magic_clip = false;
  opt.consider_endpoints = false;
  EXPECT_GT(run_edits(mixed_dims(), opt, 5, 40, 2, 3), 20u);  // without the clip small estimators are edited too
}

TEST(ParzenRefit, DeclinedEditsLeaveTheEstimator) {
  // The clip's bound still moves (< 99 kernels): in place only when the count stays (as many added as removed).
  const std::size_t small = run_edits(mixed_dims(), ParzenOptions{}, 20, 60, 3, 4);
  EXPECT_GT(small, 0u);
  EXPECT_LT(small, 60u);
  EXPECT_LT(run_edits(mixed_dims(), ParzenOptions{}, 300, 10, 40, 5), 10u);  // many edits
  ParzenOptions scott;
  scott.bandwidth = ParzenOptions::Bandwidth::Scott;
  EXPECT_EQ(run_edits(mixed_dims(), scott, 150, 10, 3, 6), 0u);
  // Growth past the tables' room is declined now and then.
  const std::size_t grown = run_edits({ParzenDim::continuous(0.0, 1.0)}, ParzenOptions{}, 100, 200, 2, 7, true);
  EXPECT_GT(grown, 150u);
  EXPECT_LT(grown, 200u);
}

TEST(ParzenRefit, BadEditsAreRefusedAndLeaveTheEstimator) {
  Rng rng(8);
  const std::vector<ParzenDim> dims = mixed_dims();
  std::vector<double> obs;
  for (std::size_t i = 0; i < 120 * dims.size(); ++i) obs.push_back(draw(rng, dims[i % dims.size()]));
  ParzenEstimator e, ref;
  EXPECT_THROW(e.refit({}, {}, nullptr, nullptr), kubetune::StateError);
  EXPECT_FALSE(e.can_refit(10, 0));
  e.fit(dims, obs.data(), 120, nullptr, ParzenOptions{});
  ref.fit(dims, obs.data(), 120, nullptr, ParzenOptions{});
  const std::vector<double> row{0.0, 3.0, 1.0, 0.5}, bad_choice{0.0, 3.0, 4.0, 0.5};
  EXPECT_THROW(e.refit({120}, {}, nullptr, nullptr), kubetune::InvalidArgument);     // no such kernel
  EXPECT_THROW(e.refit({3, 3}, {}, nullptr, nullptr), kubetune::InvalidArgument);    // not ascending
  EXPECT_THROW(e.refit({}, {121}, row.data(), nullptr), kubetune::InvalidArgument);  // past the end
  EXPECT_THROW(e.refit({}, {0}, nullptr, nullptr), kubetune::InvalidArgument);       // no rows
  std::vector<double> w(121, 1.0);
  w[7] = -1.0;
  EXPECT_THROW(e.refit({}, {0}, row.data(), w.data()), kubetune::InvalidArgument);  // a negative weight
  EXPECT_THROW(e.refit({}, {0}, bad_choice.data(), nullptr), kubetune::InvalidArgument);  // choice 4 of 4
  const std::vector<double> nan_row{std::nan(""), 3.0, 1.0, 0.5};
  EXPECT_THROW(e.refit({}, {0}, nan_row.data(), nullptr), kubetune::InvalidArgument);
  expect_same(e, ref, rng, "after refused edits");
}
