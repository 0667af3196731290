// C API of the autoscale module: KPA fleet (batch decide) and scaler, activator throttler, HPA controller and fleet,
// queueing, simulation. Every handle wraps one C++ type; the functions here only convert types.
#include <algorithm>
#include <optional>
#include <vector>

#include "c_api_internal.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "kubetune/sched/autoscale/queueing.hpp"
#include "kubetune/sched/autoscale/simulate.hpp"
#include "kubetune/sched/autoscale/throttler.hpp"

namespace as = kubetune::sched::autoscale;

struct kt_kpa_fleet {
  as::KpaFleet fleet;
};

struct kt_kpa_scaler {
  as::KpaScaler scaler;
};

struct kt_hpa {
  as::HpaController controller;
};

struct kt_hpa_fleet {
  as::HpaFleet fleet;
};

static_assert(static_cast<int>(as::PaState::kActivating) == KT_PA_ACTIVATING &&
                  static_cast<int>(as::PaState::kActive) == KT_PA_ACTIVE &&
                  static_cast<int>(as::PaState::kInactive) == KT_PA_INACTIVE,
              "kt_pa_state mirrors PaState");

namespace {
const char* or_empty(const char* s) { return s ? s : "{}"; }

// controller_json of kt_hpa_create / kt_hpa_fleet_create: NULL or any subset of the HpaControllerConfig keys.
as::HpaControllerConfig controller_config(const char* controller_json) {
  return controller_json ? as::HpaControllerConfig::from_json(controller_json) : as::HpaControllerConfig{};
}

// The body of every kt_*_state_json: `json_of(*handle)` copied out for kt_free_string.
template <class Handle, class JsonOf>
int state_json_out(const Handle* handle, const char* handle_name, char** out_json, char** err_out, JsonOf json_of) {
  KT_API_BEGIN(err_out)
  KT_CHECK(handle && out_json, InvalidArgument, handle_name, " and out_json must not be NULL");
  *out_json = kubetune::capi::dup_string(json_of(*handle));
  KT_API_END(err_out)
}

// The body of every kt_*_restore: `restore(*handle, state_json)`, which sets all of the state or none.
template <class Handle, class Restore>
int restore_in(Handle* handle, const char* handle_name, const char* state_json, char** err_out, Restore restore) {
  KT_API_BEGIN(err_out)
  KT_CHECK(handle && state_json, InvalidArgument, handle_name, " and state_json must not be NULL");
  restore(*handle, state_json);
  KT_API_END(err_out)
}

// kt_kpa_fleet and kt_hpa_fleet alike: their size and their state's JSON (the C++ fleet's snapshot_json).
template <class Handle>
int fleet_size_out(const Handle* fleet, size_t* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(fleet && out, InvalidArgument, "fleet and out must not be NULL");
  *out = fleet->fleet.size();
  KT_API_END(err_out)
}
constexpr auto fleet_snapshot = [](const auto& handle) { return handle.fleet.snapshot_json(); };
constexpr auto fleet_restore = [](auto& handle, const char* json) { handle.fleet.restore_json(json); };

// The proposals of kt_hpa_reconcile*: valid[i] == 0 (or valid == NULL: none) marks metric i as failed.
as::HpaDecision hpa_reconcile(kt_hpa* hpa, double now, int32_t current, size_t n, const int32_t* proposals,
                              const uint8_t* valid) {
  KT_CHECK(hpa, InvalidArgument, "hpa must not be NULL");
  KT_CHECK(n == 0 || proposals, InvalidArgument, "proposals must not be NULL");
  std::vector<std::optional<int32_t>> p(n);
  for (size_t i = 0; i < n; ++i)
    if (!valid || valid[i]) p[i] = proposals[i];
  return hpa->controller.reconcile(now, current, p);
}
}  // namespace

extern "C" {

KT_API int kt_kpa_config_normalize(const char* config_json, char** out_json, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out_json, InvalidArgument, "out_json must not be NULL");
  *out_json = kubetune::capi::dup_string(as::KpaConfig::from_json(or_empty(config_json)).to_json());
  KT_API_END(err_out)
}

KT_API int kt_kpa_fleet_create(const char* config_json, const char* revision_json, size_t n,
                               const int32_t* ready_pods_at_start, double now, kt_kpa_fleet** out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  const as::DeciderSpec spec = as::make_decider_spec(as::KpaConfig::from_json(or_empty(config_json)),
                                                     as::KpaRevision::from_json(or_empty(revision_json)));
  std::vector<int32_t> ready;
  if (ready_pods_at_start) ready.assign(ready_pods_at_start, ready_pods_at_start + n);
  *out = new kt_kpa_fleet{as::KpaFleet(spec, n, ready, now)};
  KT_API_END(err_out)
}

KT_API void kt_kpa_fleet_free(kt_kpa_fleet* fleet) { delete fleet; }

KT_API int kt_kpa_fleet_size(const kt_kpa_fleet* fleet, size_t* out, char** err_out) {
  return fleet_size_out(fleet, out, err_out);
}

KT_API int kt_kpa_fleet_decide(kt_kpa_fleet* fleet, double now, size_t n, const int32_t* ready_pods,
                               const double* observed_stable, const double* observed_panic, int32_t* desired_out,
                               int32_t* excess_burst_capacity_out, int32_t* num_activators_out,
                               uint8_t* panicking_out, int n_threads, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(fleet, InvalidArgument, "fleet must not be NULL");
  KT_CHECK(n == fleet->fleet.size(), InvalidArgument, "n = ", n, " must equal the fleet size ", fleet->fleet.size());
  const auto& res = fleet->fleet.decide(now, ready_pods, observed_stable, observed_panic, n_threads);
  for (size_t i = 0; i < n; ++i) {
    const as::ScaleResult& r = res[i];
    if (desired_out) desired_out[i] = r.desired_pod_count;
    if (excess_burst_capacity_out) excess_burst_capacity_out[i] = r.excess_burst_capacity;
    if (num_activators_out) num_activators_out[i] = r.num_activators;
    if (panicking_out) panicking_out[i] = r.panicking ? 1 : 0;
  }
  KT_API_END(err_out)
}

KT_API int kt_kpa_fleet_state_json(const kt_kpa_fleet* fleet, char** out_json, char** err_out) {
  return state_json_out(fleet, "fleet", out_json, err_out, fleet_snapshot);
}

KT_API int kt_kpa_fleet_restore(kt_kpa_fleet* fleet, const char* state_json, char** err_out) {
  return restore_in(fleet, "fleet", state_json, err_out, fleet_restore);
}

KT_API int kt_kpa_scrape_sample_size(int32_t population, int32_t* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  *out = as::scrape_sample_size(population);
  KT_API_END(err_out)
}

KT_API int kt_kpa_scaler_create(const char* config_json, const char* revision_json, double now,
                                int32_t initial_replicas, kt_kpa_scaler** out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  *out = new kt_kpa_scaler{as::KpaScaler(as::KpaConfig::from_json(or_empty(config_json)),
                                         as::KpaRevision::from_json(or_empty(revision_json)), now, initial_replicas)};
  KT_API_END(err_out)
}

KT_API void kt_kpa_scaler_free(kt_kpa_scaler* scaler) { delete scaler; }

KT_API int kt_kpa_scaler_reconcile(kt_kpa_scaler* scaler, double now, int32_t desired, int32_t excess_burst_capacity,
                                   int32_t ready_pods, int activator_probe, kt_kpa_scaler_step* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(scaler && out, InvalidArgument, "scaler and out must not be NULL");
  KT_CHECK(activator_probe >= -1 && activator_probe <= 1, InvalidArgument, "activator_probe = ", activator_probe,
           " must be -1 (not probed), 0 (failed) or 1 (succeeded)");
  as::ScaleResult d;
  d.scale_valid = desired >= 0;
  d.desired_pod_count = desired;
  d.excess_burst_capacity = excess_burst_capacity;
  const std::optional<bool> probe = activator_probe < 0 ? std::nullopt : std::optional<bool>(activator_probe == 1);
  const as::ScalerStep st = scaler->scaler.reconcile(now, d, ready_pods, probe);
  *out = kt_kpa_scaler_step{st.want,
                            st.applied ? 1 : 0,
                            st.replicas,
                            st.proxy_mode ? 1 : 0,
                            static_cast<kt_pa_state>(st.state),
                            st.reason,
                            st.requeue_after_s,
                            st.probe_activator ? 1 : 0};
  KT_API_END(err_out)
}

KT_API int kt_kpa_scaler_activation_timeout(const kt_kpa_scaler* scaler, double* out_s, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(scaler && out_s, InvalidArgument, "scaler and out_s must not be NULL");
  *out_s = scaler->scaler.activation_timeout_s();
  KT_API_END(err_out)
}

KT_API int kt_kpa_scaler_state_json(const kt_kpa_scaler* scaler, char** out_json, char** err_out) {
  return state_json_out(scaler, "scaler", out_json, err_out,
                        [](const kt_kpa_scaler& s) { return s.scaler.snapshot().to_json(); });
}

KT_API int kt_kpa_scaler_restore(kt_kpa_scaler* scaler, const char* state_json, char** err_out) {
  return restore_in(scaler, "scaler", state_json, err_out, [](kt_kpa_scaler& s, const char* json) {
    s.scaler.restore(as::KpaScaler::State::from_json(json));
  });
}

KT_API int kt_throttler_share(const kt_throttler_input* in, kt_throttler_result* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(in && out, InvalidArgument, "in and out must not be NULL");
  const as::ThrottlerShare s = as::throttler_share(as::ThrottlerInput{in->backends, in->pod_trackers,
                                                                      in->container_concurrency, in->activator_count,
                                                                      in->activator_index, in->via_cluster_ip != 0});
  *out = kt_throttler_result{s.capacity,    s.infinite_breaker ? 1 : 0, s.breaker_capacity, s.tracker_capacity,
                             s.slice_begin, s.slice_end,                s.remnant,          s.assigned()};
  KT_API_END(err_out)
}

KT_API int kt_throttler_pick_indices(int64_t trackers, int64_t self_index, int64_t activators, int64_t* begin_out,
                                     int64_t* end_out, int64_t* remnants_out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(begin_out && end_out && remnants_out, InvalidArgument,
           "begin_out, end_out and remnants_out must not be NULL");
  const as::TrackerSlice t = as::pick_tracker_indices(trackers, self_index, activators);
  *begin_out = t.begin;
  *end_out = t.end;
  *remnants_out = t.remnants;
  KT_API_END(err_out)
}

KT_API int kt_hpa_create(const char* spec_json, const char* controller_json, kt_hpa** out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  const as::HpaSpec spec = as::HpaSpec::from_json(or_empty(spec_json));
  const as::HpaControllerConfig cc = controller_config(controller_json);
  *out = new kt_hpa{as::HpaController(spec, cc)};
  KT_API_END(err_out)
}

KT_API void kt_hpa_free(kt_hpa* hpa) { delete hpa; }

KT_API int kt_hpa_state_json(const kt_hpa* hpa, char** out_json, char** err_out) {
  return state_json_out(hpa, "hpa", out_json, err_out,
                        [](const kt_hpa& h) { return h.controller.snapshot().to_json(); });
}

KT_API int kt_hpa_restore(kt_hpa* hpa, const char* state_json, char** err_out) {
  return restore_in(hpa, "hpa", state_json, err_out, [](kt_hpa& h, const char* json) {
    h.controller.restore(as::HpaController::State::from_json(json));
  });
}

KT_API int kt_hpa_reconcile(kt_hpa* hpa, double now, int32_t current_replicas, size_t n_metrics,
                            const int32_t* proposals, const uint8_t* valid, int32_t* desired_out, int* rescale_out,
                            char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(desired_out, InvalidArgument, "desired_out must not be NULL");
  const as::HpaDecision d = hpa_reconcile(hpa, now, current_replicas, n_metrics, proposals, valid);
  *desired_out = d.desired_replicas;
  if (rescale_out) *rescale_out = d.rescale ? 1 : 0;
  KT_API_END(err_out)
}

KT_API int kt_hpa_reconcile_json(kt_hpa* hpa, double now, int32_t current_replicas, size_t n_metrics,
                                 const int32_t* proposals, const uint8_t* valid, char** decision_json,
                                 char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(decision_json, InvalidArgument, "decision_json must not be NULL");
  *decision_json =
      kubetune::capi::dup_string(hpa_reconcile(hpa, now, current_replicas, n_metrics, proposals, valid).to_json());
  KT_API_END(err_out)
}

KT_API int kt_hpa_fleet_create(const char* spec_json, const char* controller_json, size_t n, kt_hpa_fleet** out,
                               char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  const as::HpaSpec spec = as::HpaSpec::from_json(or_empty(spec_json));
  *out = new kt_hpa_fleet{as::HpaFleet(spec, n, controller_config(controller_json))};
  KT_API_END(err_out)
}

KT_API void kt_hpa_fleet_free(kt_hpa_fleet* fleet) { delete fleet; }

KT_API int kt_hpa_fleet_size(const kt_hpa_fleet* fleet, size_t* out, char** err_out) {
  return fleet_size_out(fleet, out, err_out);
}

KT_API int kt_hpa_fleet_reconcile(kt_hpa_fleet* fleet, double now, size_t n, const int32_t* current_replicas,
                                  const int32_t* proposals, int32_t* desired_out, uint8_t* rescale_out, int n_threads,
                                  char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(fleet, InvalidArgument, "fleet must not be NULL");
  KT_CHECK(n == fleet->fleet.size(), InvalidArgument, "n = ", n, " must equal the fleet size ", fleet->fleet.size());
  const as::HpaFleet::Results& res = fleet->fleet.reconcile(now, current_replicas, n, proposals, n, n_threads);
  if (desired_out) std::copy(res.desired_replicas.begin(), res.desired_replicas.end(), desired_out);
  if (rescale_out) std::copy(res.rescale.begin(), res.rescale.end(), rescale_out);
  KT_API_END(err_out)
}

KT_API int kt_hpa_fleet_state_json(const kt_hpa_fleet* fleet, char** out_json, char** err_out) {
  return state_json_out(fleet, "fleet", out_json, err_out, fleet_snapshot);
}

KT_API int kt_hpa_fleet_restore(kt_hpa_fleet* fleet, const char* state_json, char** err_out) {
  return restore_in(fleet, "fleet", state_json, err_out, fleet_restore);
}

KT_API int kt_erlang_b(int64_t servers, double load, double* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  *out = as::erlang_b(servers, load);
  KT_API_END(err_out)
}

KT_API int kt_erlang_c(int64_t servers, double load, double* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  *out = as::erlang_c(servers, load);
  KT_API_END(err_out)
}

KT_API int kt_prob_wait_exceeds(int64_t servers, double load, double service_time_s, double t_s, double* out,
                                char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  *out = as::prob_wait_exceeds(servers, load, service_time_s, t_s);
  KT_API_END(err_out)
}

KT_API int kt_min_replicas_for_slo(double arrival_rate, double service_time_s, int32_t concurrency, double latency_s,
                                   double quantile, int on_response_time, int64_t* out, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(out, InvalidArgument, "out must not be NULL");
  as::LatencySlo slo;
  slo.latency_s = latency_s;
  slo.quantile = quantile;
  slo.on_response_time = on_response_time != 0;
  *out = as::min_replicas_for_slo(arrival_rate, service_time_s, concurrency, slo);
  KT_API_END(err_out)
}

KT_API int kt_autoscale_simulate(const char* config_json, const double* rates, size_t n, double dt_s,
                                 char** result_json, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(result_json, InvalidArgument, "result_json must not be NULL");
  KT_CHECK(n == 0 || rates, InvalidArgument, "rates must not be NULL");
  as::Trace t;
  t.dt_s = dt_s;
  t.rate.assign(rates, rates + n);
  *result_json = kubetune::capi::dup_string(as::sim_result_to_json(as::simulate(t, as::sim_config_from_json(or_empty(config_json)))));
  KT_API_END(err_out)
}

}  // extern "C"
