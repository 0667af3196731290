// Queueing maths for latency-SLO sizing: Erlang B/C (M/M/c), waiting and response-time tails, sqrt staffing.
#pragma once

#include <cstdint>

namespace kubetune::sched::autoscale {

/// Largest server count (and offered load in Erlangs) the recursions accept: they take one step per server, and
/// 10^8 steps are about a second. InvalidArgument beyond.
inline constexpr std::int64_t kMaxServers = 100'000'000;

/// Erlang B blocking probability of `servers` servers offered `load` Erlangs (A = arrival rate x mean
/// service time), by the stable recursion B(0) = 1, B(k) = A B(k-1) / (k + A B(k-1)) (Erlang 1917).
double erlang_b(std::int64_t servers, double load);
/// Erlang C probability that an arrival waits in M/M/c: C = c B / (c - A (1 - B)); 1 when A >= c.
double erlang_c(std::int64_t servers, double load);
/// P(wait > t) = C exp(-(c - A) t / s) for mean service time s (1 when A >= c).
double prob_wait_exceeds(std::int64_t servers, double load, double service_time_s, double t_s);
/// Mean wait C s / (c - A) (+inf when A >= c).
double mean_wait(std::int64_t servers, double load, double service_time_s);
/// Mean number waiting C A / (c - A) (+inf when A >= c).
double mean_queue_length(std::int64_t servers, double load);
/// P(response time > t), response = wait + exponential service: (1 - C) e^{-mu t} + C P(Exp(theta) + Exp(mu) > t)
/// with mu = 1/s, theta = (c - A)/s (hypoexponential tail; (1 + mu t) e^{-mu t} when theta = mu).
double prob_response_exceeds(std::int64_t servers, double load, double service_time_s, double t_s);

/// A latency objective: P(latency <= `latency_s`) >= `quantile`, on the response time (wait + service) or on
/// the wait alone; optional cap on server utilisation A / c.
struct LatencySlo {
  double latency_s = 0.5;
  double quantile = 0.95;
  bool on_response_time = true;
  double max_utilization = 1.0;
  void validate() const;
};

/// Smallest c with A < c meeting the SLO (M/M/c); the search walks the Erlang B recursion once.
std::int64_t min_servers_for_slo(double load, double service_time_s, const LatencySlo& slo,
                                 std::int64_t max_servers = 1000000);
/// Smallest replica count for `arrival_rate` req/s, mean `service_time_s` s and `concurrency` requests per pod
/// (each pod = `concurrency` parallel servers): ceil(min_servers / concurrency) rounded to meet the SLO
/// with whole pods. Returns 0 for a zero arrival rate. Throws StateError when no count up to
/// `max_replicas` meets the SLO (e.g. service time alone above the latency).
std::int64_t min_replicas_for_slo(double arrival_rate, double service_time_s, std::int32_t concurrency,
                                  const LatencySlo& slo, std::int64_t max_replicas = 100000);

/// Square-root staffing c = ceil(A + beta sqrt(A)) (Halfin & Whitt 1981).
std::int64_t sqrt_staffing(double load, double beta);
/// Halfin-Whitt delay probability alpha(beta) = [1 + beta Phi(beta) / phi(beta)]^{-1}.
double halfin_whitt_delay_probability(double beta);
/// The beta whose Halfin-Whitt delay probability equals `p_wait` in (0, 1) (bisection).
double halfin_whitt_beta(double p_wait);

}  // namespace kubetune::sched::autoscale
