// Trace-driven autoscaling simulator: request-rate trace -> KPA, HPA or SLO sizing -> replicas, cost, SLO.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "kubetune/sched/autoscale/queueing.hpp"

namespace kubetune::sched::autoscale {

/// Request rate (requests / second) at steps of `dt_s` seconds.
struct Trace {
  double dt_s = 1.0;
  std::vector<double> rate;
  double duration_s() const { return dt_s * static_cast<double>(rate.size()); }
};

/// Piecewise-constant trace from (duration seconds, rate) steps.
Trace trace_steps(const std::vector<std::pair<double, double>>& steps, double dt_s = 1.0);
/// `base` rate with one rectangular spike to `peak` from time `start` for `length_s` seconds, `total_s` long.
Trace trace_spike(double base, double peak, double start, double length_s, double total_s, double dt_s = 1.0);
/// mean + amplitude * sin(2 pi t / period_s - pi/2) (a day-like cycle starting at its low), clipped at 0,
/// with optional multiplicative Gaussian noise of relative size `noise` (seeded, deterministic).
Trace trace_diurnal(double mean, double amplitude, double period_s, double total_s, double dt_s = 1.0,
                    double noise = 0.0, std::uint64_t seed = 0);
/// Reads a CSV: one numeric column of rates, or `time,rate` rows (header line optional; dt from the times).
Trace trace_from_csv(const std::string& path);

enum class SimPolicy { kKpa, kHpa, kSlo };

/// Simulator settings. Each pod serves `container_concurrency` requests in parallel with exponential service
/// of mean `service_time_s` (M/M/c per pod set); new pods become ready after `pod_startup_delay_s` seconds.
struct SimConfig {
  SimPolicy policy = SimPolicy::kKpa;
  double service_time_s = 0.1;
  std::int32_t container_concurrency = 10;
  double pod_startup_delay_s = 10.0;
  LatencySlo slo{0.5, 0.95, true, 1.0};  // used for violation counting and for SLO sizing
  std::int32_t initial_replicas = 1;
  // KPA
  KpaConfig kpa;
  KpaRevision kpa_revision;
  // HPA: pods metric "in-flight requests per pod", averageValue target = utilisation x concurrency.
  HpaSpec hpa{1, 100, std::nullopt};
  HpaControllerConfig hpa_controller;
  double hpa_target_utilization = 0.7;
  double hpa_metric_window_s = 30.0;  // metrics averaged over this window (metrics-server resolution)
  // SLO sizing: every interval, size (Erlang C) for the max rate seen over the lookback times headroom, plus
  // backlog / lookback (the rate that drains queued requests within one lookback).
  double slo_interval_s = 5.0;
  double slo_lookback_s = 30.0;
  double slo_headroom = 1.0;
  std::int32_t slo_min_replicas = 1;
  std::int32_t max_replicas = 1000;
  void validate() const;
};

struct SimResult {
  std::vector<double> time, rate, desired, ready, provisioned, in_flight, violation_probability;
  std::int64_t cold_starts = 0;         // episodes of requests arriving with no ready pod
  double cold_start_requests = 0.0;     // requests that arrived while no pod was ready
  double requests = 0.0;
  double violating_requests = 0.0;      // expected requests over the latency objective
  double slo_violation_fraction = 0.0;  // violating / requests
  double pod_seconds = 0.0;             // billed: ready + starting pods
  double mean_ready = 0.0;
  std::int64_t scale_events = 0;
};

/// JSON forms (snake_case keys as the struct fields; "policy": "kpa" | "hpa" | "slo"; "kpa", "kpa_revision" and
/// "hpa" take the JSON of KpaConfig, KpaRevision and HpaSpec). Unknown keys are an error.
std::string sim_config_to_json(const SimConfig& config);
SimConfig sim_config_from_json(const std::string& json);
/// Summary and series of a run as JSON.
std::string sim_result_to_json(const SimResult& result);

/// Runs `trace` through the chosen autoscaler with explicit simulated time (no wall clock, deterministic).
SimResult simulate(const Trace& trace, const SimConfig& config);

}  // namespace kubetune::sched::autoscale
