// Erlang B/C recursions, M/M/c waiting/response tails, latency-SLO sizing and square-root staffing.
#include "kubetune/sched/autoscale/queueing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kubetune/core/error.hpp"
#include "kubetune/core/normal.hpp"

namespace kubetune::sched::autoscale {

namespace {
void check(std::int64_t c, double a) {
  KT_CHECK(c >= 0 && c <= kMaxServers, InvalidArgument, "servers = ", c, " must be in [0, ", kMaxServers, "]");
  KT_CHECK(std::isfinite(a) && a >= 0 && a <= static_cast<double>(kMaxServers), InvalidArgument, "load = ", a,
           " must be finite and in [0, ", kMaxServers, "] Erlangs");
}
void check_s(double s) {
  KT_CHECK(std::isfinite(s) && s > 0, InvalidArgument, "service_time = ", s, " must be > 0");
}
// Erlang C from Erlang B at c servers.
double c_from_b(std::int64_t c, double a, double b) {
  if (a >= static_cast<double>(c)) return 1.0;
  const double cd = static_cast<double>(c);
  return cd * b / (cd - a * (1.0 - b));
}
bool meets(std::int64_t c, double a, double s, const LatencySlo& slo, double b) {
  const double cd = static_cast<double>(c);
  if (a >= cd || a / cd > slo.max_utilization) return false;
  const double cc = c_from_b(c, a, b);
  double tail;
  if (slo.on_response_time) {
    const double mu = 1.0 / s, theta = (cd - a) / s, t = slo.latency_s;
    double hypo;
    if (std::abs(theta - mu) < 1e-12 * mu) hypo = (1.0 + mu * t) * std::exp(-mu * t);
    else hypo = (theta * std::exp(-mu * t) - mu * std::exp(-theta * t)) / (theta - mu);
    tail = (1.0 - cc) * std::exp(-mu * t) + cc * hypo;
  } else {
    tail = cc * std::exp(-(cd - a) * slo.latency_s / s);
  }
  return tail <= 1.0 - slo.quantile + 1e-15;
}
}  // namespace

double erlang_b(std::int64_t servers, double load) {
  check(servers, load);
  double b = 1.0;
  for (std::int64_t k = 1; k <= servers && b > 0; ++k) b = load * b / (static_cast<double>(k) + load * b);
  return b;  // once B underflows to 0 it stays 0
}

double erlang_c(std::int64_t servers, double load) {
  check(servers, load);
  if (servers == 0) return 1.0;
  return c_from_b(servers, load, erlang_b(servers, load));
}

double prob_wait_exceeds(std::int64_t servers, double load, double service_time, double t) {
  check_s(service_time);
  KT_CHECK(t >= 0, InvalidArgument, "t = ", t, " must be >= 0");
  const double c = erlang_c(servers, load);
  if (load >= static_cast<double>(servers)) return 1.0;
  return c * std::exp(-(static_cast<double>(servers) - load) * t / service_time);
}

double mean_wait(std::int64_t servers, double load, double service_time) {
  check_s(service_time);
  if (load >= static_cast<double>(servers)) return std::numeric_limits<double>::infinity();
  return erlang_c(servers, load) * service_time / (static_cast<double>(servers) - load);
}

double mean_queue_length(std::int64_t servers, double load) {
  if (load >= static_cast<double>(servers)) return std::numeric_limits<double>::infinity();
  return erlang_c(servers, load) * load / (static_cast<double>(servers) - load);
}

double prob_response_exceeds(std::int64_t servers, double load, double service_time, double t) {
  check_s(service_time);
  KT_CHECK(t >= 0, InvalidArgument, "t = ", t, " must be >= 0");
  check(servers, load);
  const double cd = static_cast<double>(servers);
  if (load >= cd) return 1.0;
  const double cc = erlang_c(servers, load);
  const double mu = 1.0 / service_time, theta = (cd - load) / service_time;
  double hypo;
  if (std::abs(theta - mu) < 1e-12 * mu) hypo = (1.0 + mu * t) * std::exp(-mu * t);
  else hypo = (theta * std::exp(-mu * t) - mu * std::exp(-theta * t)) / (theta - mu);
  return (1.0 - cc) * std::exp(-mu * t) + cc * hypo;
}

void LatencySlo::validate() const {
  KT_CHECK(std::isfinite(latency_s) && latency_s > 0, InvalidArgument, "slo.latency_s = ", latency_s, " must be > 0");
  KT_CHECK(quantile > 0 && quantile < 1, InvalidArgument, "slo.quantile = ", quantile, " must be in (0, 1)");
  KT_CHECK(max_utilization > 0 && max_utilization <= 1, InvalidArgument, "slo.max_utilization = ", max_utilization,
           " must be in (0, 1]");
}

std::int64_t min_servers_for_slo(double load, double service_time, const LatencySlo& slo, std::int64_t max_servers) {
  check(0, load);
  check_s(service_time);
  slo.validate();
  KT_CHECK(max_servers >= 1 && max_servers <= kMaxServers, InvalidArgument, "max_servers = ", max_servers,
           " must be in [1, ", kMaxServers, "]");
  if (load == 0) return 0;
  if (slo.on_response_time) {
    // Even with no wait, P(service > latency) = exp(-latency / s) must be below 1 - quantile.
    KT_CHECK(std::exp(-slo.latency_s / service_time) <= 1.0 - slo.quantile, StateError, "slo.latency_s = ",
             slo.latency_s,
             "s cannot be met at quantile ", slo.quantile, " with mean service time ", service_time, "s");
  }
  double b = 1.0;
  for (std::int64_t c = 1; c <= max_servers; ++c) {
    b = load * b / (static_cast<double>(c) + load * b);
    if (meets(c, load, service_time, slo, b)) return c;
  }
  KT_THROW(StateError, "no server count up to ", max_servers, " meets the SLO for load ", load);
}

std::int64_t min_replicas_for_slo(double arrival_rate, double service_time, std::int32_t concurrency,
                                  const LatencySlo& slo, std::int64_t max_replicas) {
  KT_CHECK(std::isfinite(arrival_rate) && arrival_rate >= 0, InvalidArgument, "arrival_rate = ", arrival_rate,
           " must be >= 0");
  KT_CHECK(concurrency >= 1, InvalidArgument, "concurrency = ", concurrency, " must be >= 1");
  check_s(service_time);
  slo.validate();
  if (arrival_rate == 0) return 0;
  const double load = arrival_rate * service_time;
  // The SLO metrics improve monotonically with c, so the smallest multiple of `concurrency` at or above the
  // smallest feasible c is the answer.
  KT_CHECK(max_replicas >= 1, InvalidArgument, "max_replicas = ", max_replicas, " must be >= 1");
  const std::int64_t replicas = std::min<std::int64_t>(max_replicas, kMaxServers / concurrency);
  const std::int64_t c = min_servers_for_slo(load, service_time, slo, std::max<std::int64_t>(1, replicas * concurrency));
  return (c + concurrency - 1) / concurrency;
}

std::int64_t sqrt_staffing(double load, double beta) {
  check(0, load);
  KT_CHECK(std::isfinite(beta), InvalidArgument, "beta = ", beta, " must be finite");
  return static_cast<std::int64_t>(std::ceil(load + beta * std::sqrt(load)));
}

double halfin_whitt_delay_probability(double beta) {
  KT_CHECK(std::isfinite(beta) && beta > 0, InvalidArgument, "beta = ", beta, " must be > 0");
  return 1.0 / (1.0 + beta * normal::cdf(beta) / normal::pdf(beta));
}

double halfin_whitt_beta(double p_wait) {
  KT_CHECK(p_wait > 0 && p_wait < 1, InvalidArgument, "p_wait = ", p_wait, " must be in (0, 1)");
  double lo = 1e-9, hi = 1.0;
  while (halfin_whitt_delay_probability(hi) > p_wait) hi *= 2.0;  // alpha decreases in beta
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (halfin_whitt_delay_probability(mid) > p_wait) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace kubetune::sched::autoscale
