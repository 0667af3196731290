// Tests of the queueing maths: Erlang B/C recursions against closed forms and the published Erlang C example.
#include <gtest/gtest.h>

#include <limits>

#include <cmath>
#include <random>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/queueing.hpp"

using namespace kubetune::sched::autoscale;

namespace {
// Direct textbook forms for small c (independent of the recursion).
double erlang_b_direct(int c, double a) {
  double term = 1, sum = 1;
  for (int k = 1; k <= c; ++k) {
    term *= a / k;
    sum += term;
  }
  return term / sum;
}
double erlang_c_direct(int c, double a) {
  double term = 1, sum = 1;
  for (int k = 1; k < c; ++k) {
    term *= a / k;
    sum += term;
  }
  const double top = term * a / c * c / (c - a);
  return top / (sum + top);
}
}  // namespace

TEST(Queueing, PublishedErlangCExample) {
  // Offered load 10 Erlangs, 14 agents, average handling time 180 s (the standard call-centre example).
  EXPECT_NEAR(erlang_c(14, 10.0), 0.17413, 5e-6);
  EXPECT_NEAR(1.0 - prob_wait_exceeds(14, 10.0, 180.0, 20.0), 0.88835, 5e-6);
  EXPECT_NEAR(mean_wait(14, 10.0, 180.0), 7.8359, 5e-5);
}

TEST(Queueing, RecursionMatchesClosedForms) {
  for (int c = 1; c <= 30; ++c)
    for (double a : {0.1, 1.0, 5.5, 12.0, 25.0}) {
      EXPECT_NEAR(erlang_b(c, a), erlang_b_direct(c, a), 1e-12) << c << " " << a;
      if (a < c) EXPECT_NEAR(erlang_c(c, a), erlang_c_direct(c, a), 1e-12) << c << " " << a;
      else EXPECT_EQ(erlang_c(c, a), 1.0);
    }
  EXPECT_EQ(erlang_b(0, 3.0), 1.0);
  // Stable for very large systems where factorials overflow.
  const double b = erlang_b(20000, 19500.0);
  EXPECT_TRUE(std::isfinite(b));
  EXPECT_GT(b, 0.0);
  EXPECT_LT(b, 0.05);
  EXPECT_THROW(erlang_b(-1, 1.0), kubetune::InvalidArgument);
  EXPECT_THROW(erlang_c(3, -1.0), kubetune::InvalidArgument);
}

TEST(Queueing, TailsAndMeans) {
  EXPECT_TRUE(std::isinf(mean_wait(5, 5.0, 1.0)));
  EXPECT_EQ(prob_wait_exceeds(5, 6.0, 1.0, 3.0), 1.0);
  EXPECT_NEAR(mean_queue_length(14, 10.0), 0.17413 * 10 / 4, 1e-5);
  // Response-time tail against a Monte Carlo of wait + service in M/M/c.
  const int c = 4;
  const double a = 3.0, s = 0.5, t = 1.2;
  std::mt19937_64 rng(3);
  std::exponential_distribution<double> serv(1.0 / s), wait((c - a) / s);
  std::uniform_real_distribution<double> u(0, 1);
  const double pc = erlang_c(c, a);
  int over = 0;
  const int n = 400000;
  for (int i = 0; i < n; ++i) {
    const double w = u(rng) < pc ? wait(rng) : 0.0;
    over += (w + serv(rng) > t) ? 1 : 0;
  }
  EXPECT_NEAR(prob_response_exceeds(c, a, s, t), static_cast<double>(over) / n, 4e-3);
  // theta == mu (c - A = 1): continuous with its neighbours.
  const double mid = prob_response_exceeds(4, 3.0, 1.0, 2.0);
  EXPECT_NEAR(mid, 0.5 * (prob_response_exceeds(4, 3.0 - 1e-6, 1.0, 2.0) + prob_response_exceeds(4, 3.0 + 1e-6, 1.0, 2.0)), 1e-6);
  EXPECT_NEAR(prob_response_exceeds(10, 0.0, 1.0, 2.0), std::exp(-2.0), 1e-12);
}

TEST(Queueing, MinServersIsMinimal) {
  LatencySlo slo;
  slo.latency_s = 20.0;
  slo.quantile = 0.8;
  slo.on_response_time = false;  // wait <= 20 s for 80 %: the call-centre service level
  const auto c = min_servers_for_slo(10.0, 180.0, slo);
  EXPECT_LE(prob_wait_exceeds(c, 10.0, 180.0, 20.0), 0.2);
  EXPECT_GT(prob_wait_exceeds(c - 1, 10.0, 180.0, 20.0), 0.2);
  EXPECT_EQ(c, 14);  // 14 agents: 88.8 % answered within 20 s; 13 agents: 79.6 %
  slo.max_utilization = 0.7;
  EXPECT_EQ(min_servers_for_slo(10.0, 180.0, slo), 15);  // 10 / 15 <= 0.7 < 10 / 14
  EXPECT_EQ(min_servers_for_slo(0.0, 1.0, slo), 0);
}

TEST(Queueing, MinReplicasForLatencySlo) {
  LatencySlo slo{0.5, 0.95, true, 1.0};
  // 200 req/s, 100 ms each, 10 concurrent per pod.
  const auto r = min_replicas_for_slo(200.0, 0.1, 10, slo);
  const auto c = r * 10;
  EXPECT_LE(prob_response_exceeds(c, 20.0, 0.1, 0.5), 0.05);
  EXPECT_GT(prob_response_exceeds((r - 1) * 10, 20.0, 0.1, 0.5), 0.05);
  EXPECT_EQ(min_replicas_for_slo(0.0, 0.1, 10, slo), 0);
  // Impossible objective: service alone too slow.
  slo.latency_s = 0.05;
  EXPECT_THROW(min_replicas_for_slo(10.0, 0.1, 10, slo), kubetune::StateError);
  EXPECT_THROW(min_replicas_for_slo(10.0, 0.1, 0, slo), kubetune::InvalidArgument);
  LatencySlo bad{0.5, 1.5, true, 1.0};
  EXPECT_THROW(min_replicas_for_slo(10.0, 0.1, 1, bad), kubetune::InvalidArgument);
}

TEST(Queueing, SquareRootStaffing) {
  EXPECT_EQ(sqrt_staffing(100.0, 1.0), 110);
  EXPECT_EQ(sqrt_staffing(10.0, 0.5), 12);  // ceil(10 + 1.58)
  const double beta = halfin_whitt_beta(0.2);
  EXPECT_NEAR(halfin_whitt_delay_probability(beta), 0.2, 1e-10);
  // Halfin-Whitt approximates Erlang C in heavy traffic.
  const double alpha = halfin_whitt_delay_probability(1.0);
  EXPECT_NEAR(alpha, 1.0 / (1.0 + 0.8413447460685429 / 0.24197072451914337), 1e-12);
  EXPECT_NEAR(erlang_c(sqrt_staffing(400.0, 1.0), 400.0), alpha, 0.02);
  EXPECT_THROW(halfin_whitt_beta(1.0), kubetune::InvalidArgument);
}

TEST(Queueing, HugeInputsAreRefusedOrAnsweredAtOnce) {
  // These once ran the recursion 10^18 times.
  EXPECT_THROW(erlang_b(1'000'000'000'000'000'000LL, 5.0), kubetune::InvalidArgument);
  EXPECT_THROW(erlang_c(10, 1e300), kubetune::InvalidArgument);
  EXPECT_THROW(min_servers_for_slo(10.0, 0.1, LatencySlo{}, 1'000'000'000'000LL), kubetune::InvalidArgument);
  // Far more servers than load: B underflows to 0 within a few thousand steps and the answer is immediate.
  EXPECT_EQ(erlang_b(kMaxServers, 5.0), 0.0);
  // A replica cap beyond the server cap is clamped, not an overflow.
  EXPECT_EQ(min_replicas_for_slo(100.0, 0.1, 1, LatencySlo{}, std::numeric_limits<std::int64_t>::max()),
            min_replicas_for_slo(100.0, 0.1, 1, LatencySlo{}, 1000));
}
