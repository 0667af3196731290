// Trace-driven simulation of KPA, HPA and SLO sizing with pod start-up delay (fluid queue + M/M/c tails).
#include "kubetune/sched/autoscale/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/sched/autoscale/units.hpp"

#include "config_table.hpp"

namespace kubetune::sched::autoscale {

namespace {
void check_dt(double dt) { KT_CHECK(std::isfinite(dt) && dt > 0, InvalidArgument, "dt_s = ", dt, " must be > 0"); }
std::size_t steps_for(double seconds, double dt) {
  KT_CHECK(std::isfinite(seconds) && seconds >= 0, InvalidArgument, "duration = ", seconds, " must be >= 0");
  return static_cast<std::size_t>(std::llround(seconds / dt));
}
}  // namespace

Trace trace_steps(const std::vector<std::pair<double, double>>& steps, double dt) {
  check_dt(dt);
  Trace t;
  t.dt_s = dt;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    KT_CHECK(steps[i].second >= 0 && std::isfinite(steps[i].second), InvalidArgument, "steps[", i, "].rate = ",
             steps[i].second, " must be finite and >= 0");
    t.rate.insert(t.rate.end(), steps_for(steps[i].first, dt), steps[i].second);
  }
  return t;
}

Trace trace_spike(double base, double peak, double start, double length, double total, double dt) {
  KT_CHECK(base >= 0 && peak >= 0, InvalidArgument, "base = ", base, " and peak = ", peak, " must be >= 0");
  KT_CHECK(start >= 0 && length >= 0 && start + length <= total, InvalidArgument, "spike [", start, ", ",
           start + length, ") must lie inside [0, ", total, ")");
  return trace_steps({{start, base}, {length, peak}, {total - start - length, base}}, dt);
}

Trace trace_diurnal(double mean, double amplitude, double period, double total, double dt, double noise,
                    std::uint64_t seed) {
  check_dt(dt);
  KT_CHECK(mean >= 0 && amplitude >= 0, InvalidArgument, "mean = ", mean, " and amplitude = ", amplitude,
           " must be >= 0");
  KT_CHECK(period > 0, InvalidArgument, "period_s = ", period, " must be > 0");
  KT_CHECK(noise >= 0, InvalidArgument, "noise = ", noise, " must be >= 0");
  Trace t;
  t.dt_s = dt;
  kubetune::Rng rng(seed);  // the same noise for a seed on every standard library
  const std::size_t n = steps_for(total, dt);
  t.rate.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) * dt;
    double r = mean + amplitude * std::sin(2.0 * M_PI * x / period - M_PI / 2.0);
    if (noise > 0) r *= 1.0 + noise * rng.normal();
    t.rate[i] = std::max(0.0, r);
  }
  return t;
}

Trace trace_from_csv(const std::string& path) {
  std::ifstream in(path);
  KT_CHECK(in.good(), IoError, "cannot open trace CSV '", path, "'");
  std::vector<double> times, rates;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    try {
      std::size_t pos = 0;
      const double last = std::stod(cells.back(), &pos);
      if (cells.size() >= 2) times.push_back(std::stod(cells[0]));
      rates.push_back(last);
    } catch (const std::exception&) {
      KT_CHECK(lineno == 1, IoError, "trace CSV '", path, "' line ", lineno, ": not a number: '", line, "'");
    }
  }
  KT_CHECK(!rates.empty(), IoError, "trace CSV '", path, "' holds no rates");
  Trace t;
  t.rate = rates;
  if (times.size() >= 2) t.dt_s = times[1] - times[0];
  KT_CHECK(t.dt_s > 0, IoError, "trace CSV '", path, "': times must increase");
  for (std::size_t i = 0; i < rates.size(); ++i)
    KT_CHECK(std::isfinite(rates[i]) && rates[i] >= 0, IoError, "trace CSV '", path, "': rate ", rates[i],
             " at row ", i, " must be >= 0");
  return t;
}

void SimConfig::validate() const {
  KT_CHECK(std::isfinite(service_time_s) && service_time_s > 0, InvalidArgument, "service_time_s = ", service_time_s,
           " must be > 0");
  KT_CHECK(container_concurrency >= 1, InvalidArgument, "container_concurrency = ", container_concurrency,
           " must be >= 1");
  KT_CHECK(pod_startup_delay_s >= 0, InvalidArgument, "pod_startup_delay_s = ", pod_startup_delay_s, " must be >= 0");
  slo.validate();
  KT_CHECK(initial_replicas >= 0, InvalidArgument, "initial_replicas = ", initial_replicas, " must be >= 0");
  KT_CHECK(max_replicas >= 1, InvalidArgument, "max_replicas = ", max_replicas, " must be >= 1");
  KT_CHECK(hpa_target_utilization > 0, InvalidArgument, "hpa_target_utilization = ", hpa_target_utilization,
           " must be > 0");
  KT_CHECK(hpa_metric_window_s > 0, InvalidArgument, "hpa_metric_window_s = ", hpa_metric_window_s, " must be > 0");
  KT_CHECK(slo_interval_s > 0 && slo_lookback_s > 0 && slo_headroom > 0, InvalidArgument,
           "slo_interval_s, slo_lookback_s and slo_headroom must be > 0");
  KT_CHECK(slo_min_replicas >= 0, InvalidArgument, "slo_min_replicas = ", slo_min_replicas, " must be >= 0");
  kpa.validate();
  kpa_revision.validate();
  hpa.validate();
  hpa_controller.validate();
}

SimResult simulate(const Trace& trace, const SimConfig& cfg) {
  cfg.validate();
  check_dt(trace.dt_s);
  const double dt = trace.dt_s, s = cfg.service_time_s;
  const std::int32_t k = cfg.container_concurrency;
  const std::size_t n = trace.rate.size();
  SimResult res;
  for (auto* v : {&res.time, &res.rate, &res.desired, &res.ready, &res.provisioned, &res.in_flight,
                  &res.violation_probability})
    v->reserve(n);

  std::int32_t ready = cfg.initial_replicas, target = cfg.initial_replicas;
  std::deque<double> starting;  // ready times of pods being started, ascending
  double backlog = 0.0;
  bool cold = false;

  std::unique_ptr<KpaAutoscaler> kpa;
  std::unique_ptr<HpaController> hpa;
  if (cfg.policy == SimPolicy::kKpa) kpa = std::make_unique<KpaAutoscaler>(cfg.kpa, cfg.kpa_revision, 0.0, target);
  if (cfg.policy == SimPolicy::kHpa) {
    KT_CHECK(cfg.hpa.min_replicas >= 1, InvalidArgument, "hpa.min_replicas = ", cfg.hpa.min_replicas,
             " must be >= 1 in the simulator (the HPA cannot scale from zero on a pods metric)");
    hpa = std::make_unique<HpaController>(cfg.hpa, cfg.hpa_controller);
  }
  const auto target_milli = static_cast<std::int64_t>(std::llround(cfg.hpa_target_utilization * k * 1000.0));
  const auto hpa_window = static_cast<std::size_t>(std::max(1.0, std::round(cfg.hpa_metric_window_s / dt)));
  const auto slo_window = static_cast<std::size_t>(std::max(1.0, std::round(cfg.slo_lookback_s / dt)));
  std::deque<double> inflight_hist, rate_hist;
  double next_kpa = 0.0, next_hpa = 0.0, next_slo = 0.0;
  std::int64_t ready_sum = 0;

  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) * dt;
    while (!starting.empty() && starting.front() <= t + 1e-9) {
      starting.pop_front();
      ++ready;
    }
    const double lambda = trace.rate[i];
    const double arrivals = lambda * dt;
    const std::int64_t servers = static_cast<std::int64_t>(ready) * k;
    const double capacity = static_cast<double>(servers) / s;  // requests per second at full use
    double served = 0.0;
    if (ready == 0) {
      backlog += arrivals;
    } else {
      const double total = backlog + arrivals;
      served = std::min(total, capacity * dt);
      backlog = total - served;
    }
    const double load = lambda * s;
    const double busy = std::min(served / dt * s, static_cast<double>(servers));
    const bool stable = ready > 0 && load < static_cast<double>(servers);
    const double lq = stable && backlog <= 1e-9 ? mean_queue_length(servers, load) : 0.0;
    const double in_flight = busy + backlog + lq;

    // Probability that a request arriving in this step misses the latency objective.
    double p = 1.0;
    if (ready > 0) {
      if (backlog > 1e-9) {
        const double wait = backlog / capacity;
        p = wait >= cfg.slo.latency_s ? 1.0
                                      : (cfg.slo.on_response_time ? std::exp(-(cfg.slo.latency_s - wait) / s) : 1.0);
      } else if (stable) {
        p = cfg.slo.on_response_time ? prob_response_exceeds(servers, load, s, cfg.slo.latency_s)
                                     : prob_wait_exceeds(servers, load, s, cfg.slo.latency_s);
      }
    }
    if (arrivals <= 0) p = 0.0;
    res.requests += arrivals;
    res.violating_requests += arrivals * p;
    if (ready == 0 && arrivals > 0) {
      res.cold_start_requests += arrivals;
      if (!cold) ++res.cold_starts;
      cold = true;
    } else if (ready > 0) {
      cold = false;
    }

    // The autoscaler under test.
    std::int32_t next_target = target;
    if (kpa) {
      Stat st;
      st.time = t;
      st.concurrency = in_flight;
      st.request_count = lambda;
      kpa->record(st);
      if (t + 1e-9 >= next_kpa) {
        const ScalerStep step = kpa->tick(t, ready);
        if (step.applied) next_target = step.replicas;
        next_kpa += kTickIntervalSeconds;
      }
    } else if (hpa) {
      inflight_hist.push_back(in_flight);
      if (inflight_hist.size() > hpa_window) inflight_hist.pop_front();
      if (t + 1e-9 >= next_hpa) {
        double avg = 0.0;
        for (double x : inflight_hist) avg += x;
        avg /= static_cast<double>(inflight_hist.size());
        std::vector<HpaPod> pods;
        pods.reserve(static_cast<std::size_t>(ready) + starting.size());
        for (std::int32_t j = 0; j < ready; ++j) {
          HpaPod pod;
          pod.metric = static_cast<std::int64_t>(std::llround(avg / ready * 1000.0));
          pods.push_back(pod);
        }
        for (std::size_t j = 0; j < starting.size(); ++j) {
          HpaPod pod;
          pod.phase = PodPhase::kPending;
          pod.has_metric = false;
          pods.push_back(pod);
        }
        const ReplicaResult r = pods_metric_replicas(t, target, target_milli, pods, hpa->tolerances());
        const HpaDecision d = hpa->reconcile(t, target, std::vector<ReplicaResult>{r});
        if (d.rescale) next_target = d.desired_replicas;
        next_hpa += cfg.hpa_controller.sync_period_s;
      }
    } else {
      rate_hist.push_back(lambda);
      if (rate_hist.size() > slo_window) rate_hist.pop_front();
      if (t + 1e-9 >= next_slo) {
        // Peak of the recent rate with headroom, plus the rate that drains the current backlog over the lookback.
        const double peak = *std::max_element(rate_hist.begin(), rate_hist.end()) * cfg.slo_headroom +
                            backlog / cfg.slo_lookback_s;
        const auto need = min_replicas_for_slo(peak, s, k, cfg.slo, cfg.max_replicas);
        next_target = static_cast<std::int32_t>(std::max<std::int64_t>(need, cfg.slo_min_replicas));
        next_slo += cfg.slo_interval_s;
      }
    }
    next_target = std::min(next_target, cfg.max_replicas);
    if (next_target != target) ++res.scale_events;
    target = next_target;

    // The deployment controller: start or stop pods (starting ones are stopped first).
    const auto provisioned = static_cast<std::int32_t>(ready + static_cast<std::int32_t>(starting.size()));
    if (target > provisioned) {
      for (std::int32_t j = provisioned; j < target; ++j) starting.push_back(t + cfg.pod_startup_delay_s);
    } else if (target < provisioned) {
      std::int32_t remove = provisioned - target;
      while (remove > 0 && !starting.empty()) {
        starting.pop_back();
        --remove;
      }
      ready -= remove;
    }
    const double prov = static_cast<double>(ready) + static_cast<double>(starting.size());
    res.time.push_back(t);
    res.rate.push_back(lambda);
    res.desired.push_back(target);
    res.ready.push_back(ready);
    res.provisioned.push_back(prov);
    res.in_flight.push_back(in_flight);
    res.violation_probability.push_back(p);
    res.pod_seconds += prov * dt;
    ready_sum += ready;
  }
  res.slo_violation_fraction = res.requests > 0 ? res.violating_requests / res.requests : 0.0;
  res.mean_ready = n ? static_cast<double>(ready_sum) / static_cast<double>(n) : 0.0;
  return res;
}

namespace {
// The JSON form of LatencySlo (SimConfig's "slo" object).
const settings::Fields<LatencySlo>& latency_slo_table() {
  static const settings::Fields<LatencySlo> t = [] {
    using L = LatencySlo;
    settings::Fields<L> f("LatencySlo JSON");
    f.field<&L::latency_s>("latency_s", "latency objective, seconds")
        .field<&L::quantile>("quantile", "fraction of requests that must meet it")
        .field<&L::on_response_time>("on_response_time", "objective on response time (else on queueing wait)")
        .field<&L::max_utilization>("max_utilization", "cap on server utilisation A / c");
    return config_table::with_renamed(f, "LatencySlo");
  }();
  return t;
}
std::string slo_to_json(const LatencySlo& s) { return latency_slo_table().to_json(s).dump(); }
LatencySlo slo_from_json(const std::string& text) { return config_table::read(latency_slo_table(), "LatencySlo", text); }

// The JSON form of SimConfig, declared once; "kpa", "kpa_revision", "hpa" and "hpa_controller" hold the JSON of
// their own types (read by their from_json, which validates them). Ranges stay in validate().
const settings::Fields<SimConfig>& sim_config_table() {
  static const settings::Fields<SimConfig> t = [] {
    using S = SimConfig;
    settings::Fields<S> f("SimConfig JSON");
    f.choice<&S::policy>("policy", {"kpa", "hpa", "slo"}, "the autoscaler under test")
        .field<&S::service_time_s>("service_time_s", "mean service time of one request, seconds")
        .field<&S::container_concurrency>("container_concurrency", "requests one pod serves in parallel")
        .field<&S::pod_startup_delay_s>("pod_startup_delay_s", "time until a new pod is ready, seconds")
        .object<&S::slo, &slo_to_json, &slo_from_json>("slo", "latency objective (LatencySlo)")
        .field<&S::initial_replicas>("initial_replicas", "ready pods at time 0")
        .object<&S::kpa>("kpa", "KPA settings (KpaConfig)")
        .object<&S::kpa_revision>("kpa_revision", "KPA revision settings (KpaRevision)")
        .object<&S::hpa>("hpa", "HPA spec (HpaSpec)")
        .object<&S::hpa_controller>("hpa_controller", "HPA controller flags (HpaControllerConfig)")
        .field<&S::hpa_target_utilization>("hpa_target_utilization", "HPA target: in-flight per pod / concurrency")
        .field<&S::hpa_metric_window_s>("hpa_metric_window_s", "HPA metric averaging window, seconds")
        .field<&S::slo_interval_s>("slo_interval_s", "SLO sizing period, seconds")
        .field<&S::slo_lookback_s>("slo_lookback_s", "SLO sizing look-back for the peak rate, seconds")
        .field<&S::slo_headroom>("slo_headroom", "factor on the peak rate for SLO sizing")
        .field<&S::slo_min_replicas>("slo_min_replicas", "fewest replicas SLO sizing asks for")
        .field<&S::max_replicas>("max_replicas", "most replicas any policy gets");
    return config_table::with_renamed(f, "SimConfig");
  }();
  return t;
}
}  // namespace

std::string sim_config_to_json(const SimConfig& c) { return sim_config_table().to_json(c).dump(); }

SimConfig sim_config_from_json(const std::string& text) {
  SimConfig c = config_table::read(sim_config_table(), "SimConfig", text);
  c.validate();
  return c;
}

std::string sim_result_to_json(const SimResult& r) {
  nlohmann::json j{{"time", r.time},
                   {"rate", r.rate},
                   {"desired", r.desired},
                   {"ready", r.ready},
                   {"provisioned", r.provisioned},
                   {"in_flight", r.in_flight},
                   {"violation_probability", r.violation_probability},
                   {"cold_starts", r.cold_starts},
                   {"cold_start_requests", r.cold_start_requests},
                   {"requests", r.requests},
                   {"violating_requests", r.violating_requests},
                   {"slo_violation_fraction", r.slo_violation_fraction},
                   {"pod_seconds", r.pod_seconds},
                   {"mean_ready", r.mean_ready},
                   {"scale_events", r.scale_events}};
  return j.dump();
}

}  // namespace kubetune::sched::autoscale
