/* kubetune C API: autoscale functions. Include <kubetune/c_api.h> rather than this file. */
#ifndef KUBETUNE_C_API_AUTOSCALE_H
#define KUBETUNE_C_API_AUTOSCALE_H
#include "kubetune/c_api.h"
#ifdef __cplusplus
extern "C" {
#endif

/* ---- Knative KPA ------------------------------------------------------------------------------------- */

/* Validates a KPA config (JSON object, snake_case keys, "{}" for upstream defaults) and returns it with every
 * default filled in (free with kt_free_string). */
KT_API int kt_kpa_config_normalize(const char* config_json, char** out_json, char** err_out);

/* A fleet of KPA deciders, one per revision, all with the spec resolved from config + revision JSON. */
typedef struct kt_kpa_fleet kt_kpa_fleet;
/* ready_pods_at_start may be NULL (all 0); a decider created with more than one ready pod starts in panic. */
KT_API int kt_kpa_fleet_create(const char* config_json, const char* revision_json, size_t n,
                               const int32_t* ready_pods_at_start, double now, kt_kpa_fleet** out, char** err_out);
KT_API void kt_kpa_fleet_free(kt_kpa_fleet* fleet);
KT_API int kt_kpa_fleet_size(const kt_kpa_fleet* fleet, size_t* out, char** err_out);
/* One tick for all n revisions at time `now` (seconds): inputs are per revision; outputs are caller-allocated
 * arrays of n entries (any output pointer may be NULL). `n_threads` <= 0: all hardware threads. */
KT_API int kt_kpa_fleet_decide(kt_kpa_fleet* fleet, double now, size_t n, const int32_t* ready_pods,
                               const double* observed_stable, const double* observed_panic, int32_t* desired_out,
                               int32_t* excess_burst_capacity_out, int32_t* num_activators_out,
                               uint8_t* panicking_out, int n_threads, char** err_out);
/* The fleet's state, to persist across restarts: a JSON array with one object per decider (panicking,
 * panic_time_s, max_panic_pods, delay_window: [{time_s, pods}], docs/autoscale.md); free with kt_free_string.
 * kt_kpa_fleet_restore sets it back into a fleet of the same size and spec, all deciders or none; a bad state
 * is KT_ERR_INVALID with the entry, key and value in err_out. */
KT_API int kt_kpa_fleet_state_json(const kt_kpa_fleet* fleet, char** out_json, char** err_out);
KT_API int kt_kpa_fleet_restore(kt_kpa_fleet* fleet, const char* state_json, char** err_out);
/* Pods the scraper samples out of `population` ready pods. */
KT_API int kt_kpa_scrape_sample_size(int32_t population, int32_t* out, char** err_out);

/* ---- KPA scaler: scale bounds, scale-to-zero gating, PA Active condition, re-enqueue and probe actions ---- */

/* The PodAutoscaler's Active condition: Unknown (activating), True (active), False (inactive). */
typedef enum kt_pa_state { KT_PA_ACTIVATING = 0, KT_PA_ACTIVE = 1, KT_PA_INACTIVE = 2 } kt_pa_state;

/* One reconcile's outcome (KpaScaler::reconcile, knative pkg/reconciler/autoscaling/kpa scaler.go + kpa.go). */
typedef struct kt_kpa_scaler_step {
  int32_t want;           /* scale the scaler wants, -1 = unknown */
  int applied;            /* 1: the deployment's replicas were set to `want` */
  int32_t replicas;       /* deployment replicas after this step */
  int proxy_mode;         /* 1: activator in the request path (SKS proxy mode) */
  kt_pa_state state;      /* Active condition after this step */
  const char* reason;     /* its reason: "Queued", "NoTraffic", "TimedOut" or "" (a static string: do not free) */
  double requeue_after_s; /* reconcile this PA again after this many seconds; -1 = not asked */
  int probe_activator;    /* 1: start the asynchronous activator probe before scaling to zero */
} kt_kpa_scaler_step;

typedef struct kt_kpa_scaler kt_kpa_scaler;
/* config_json / revision_json as kt_kpa_fleet_create (NULL or "{}" = defaults; a revision's "progress_deadline_s"
 * sets its activation timeout to that + 30 s). initial_replicas < 0: the deployment starts at the initial scale. */
KT_API int kt_kpa_scaler_create(const char* config_json, const char* revision_json, double now,
                                int32_t initial_replicas, kt_kpa_scaler** out, char** err_out);
KT_API void kt_kpa_scaler_free(kt_kpa_scaler* scaler);
/* One reconcile at `now` with the decider's result (desired < 0: no data; excess_burst_capacity as decided) and
 * the ready pod count. activator_probe: -1 = not probed (modelled as "SKS in proxy mode"), 0 = the synchronous
 * probe failed, 1 = it succeeded. */
KT_API int kt_kpa_scaler_reconcile(kt_kpa_scaler* scaler, double now, int32_t desired, int32_t excess_burst_capacity,
                                   int32_t ready_pods, int activator_probe, kt_kpa_scaler_step* out, char** err_out);
/* The activation timeout in force, in seconds (the revision's progress deadline + 30 s, else the config's). */
KT_API int kt_kpa_scaler_activation_timeout(const kt_kpa_scaler* scaler, double* out_s, char** err_out);
/* The scaler's state as a JSON object (pa_state "activating"/"active"/"inactive", reason, since_s,
 * scale_target_initialized, proxy_mode, proxy_since_s, replicas); free with kt_free_string. kt_kpa_scaler_restore
 * sets any such state (e.g. inactive while min-scale > 0, as read back from the PodAutoscaler's status); a bad
 * state is KT_ERR_INVALID naming the key and value, and leaves the scaler unchanged. */
KT_API int kt_kpa_scaler_state_json(const kt_kpa_scaler* scaler, char** out_json, char** err_out);
KT_API int kt_kpa_scaler_restore(kt_kpa_scaler* scaler, const char* state_json, char** err_out);

/* ---- Knative activator throttler (pkg/activator/net/throttler.go) ---------------------------------------- */

typedef struct kt_throttler_input {
  int64_t backends;              /* ready endpoints of the revision */
  int64_t pod_trackers;          /* pod trackers held, -1 = one per ready backend */
  int64_t container_concurrency; /* 0 = unlimited (infinite breaker) */
  int32_t activator_count;       /* activators in the revision's endpoints, 0 = not known yet */
  int32_t activator_index;       /* this activator among the sorted addresses, -1 = not in the endpoints yet */
  int via_cluster_ip;            /* 1: requests go through the revision's ClusterIP service */
} kt_throttler_input;

/* kt_throttler_share's result. The owned trackers are [slice_begin, slice_end) plus `remnant` when it is >= 0
 * (-1: none); `assigned` counts them. */
typedef struct kt_throttler_result {
  int64_t capacity;         /* what the throttler passes to its breaker's UpdateConcurrency */
  int infinite_breaker;     /* 1 when container_concurrency is 0 */
  int64_t breaker_capacity; /* the breaker's Capacity(): capacity, or 0 / 1 for an infinite breaker */
  int64_t tracker_capacity; /* capacity of each assigned pod tracker */
  int64_t slice_begin;
  int64_t slice_end;
  int64_t remnant;
  int64_t assigned;
} kt_throttler_result;

/* This activator's breaker capacity and tracker assignment (updateCapacity with assignSlice/calculateCapacity). */
KT_API int kt_throttler_share(const kt_throttler_input* in, kt_throttler_result* out, char** err_out);
/* pickIndices: slice [begin, end) of `trackers` for activator `self_index` of `activators`, and the remnant count. */
KT_API int kt_throttler_pick_indices(int64_t trackers, int64_t self_index, int64_t activators, int64_t* begin_out,
                                     int64_t* end_out, int64_t* remnants_out, char** err_out);

/* ---- Kubernetes HPA ---------------------------------------------------------------------------------- */

typedef struct kt_hpa kt_hpa;
/* spec_json: {"minReplicas", "maxReplicas", "behavior": {"scaleUp": {...}, "scaleDown": {...}}} as in
 * autoscaling/v2; controller_json: {"downscale_stabilization_window_s", "tolerance", "sync_period_s"} or NULL
 * (the deprecated keys without "_s" are accepted for one release; unknown keys are KT_ERR_INVALID). */
KT_API int kt_hpa_create(const char* spec_json, const char* controller_json, kt_hpa** out, char** err_out);
KT_API void kt_hpa_free(kt_hpa* hpa);
/* The HPA's state (recommendation history and scale events: {"history_started", "recommendations": [{"replicas",
 * "time_s"}], "scale_up_events" / "scale_down_events": [{"change", "time_s", "outdated"}]}) as JSON, to persist
 * across restarts (free with kt_free_string); kt_hpa_restore injects it (KT_ERR_INVALID naming the key and value
 * for a bad state, which leaves the HPA unchanged). */
KT_API int kt_hpa_state_json(const kt_hpa* hpa, char** out_json, char** err_out);
KT_API int kt_hpa_restore(kt_hpa* hpa, const char* state_json, char** err_out);
/* One reconcile: proposals[i] is metric i's replica count, valid[i] == 0 marks a failed metric (valid may be
 * NULL: all valid). Writes the replica count to set and whether it changes. */
KT_API int kt_hpa_reconcile(kt_hpa* hpa, double now, int32_t current_replicas, size_t n_metrics,
                            const int32_t* proposals, const uint8_t* valid, int32_t* desired_out, int* rescale_out,
                            char** err_out);
/* As kt_hpa_reconcile, returning the whole decision as JSON (free with kt_free_string):
 * {"desired_replicas", "rescale", "metric_desired_replicas", "reason", "conditions": [{"type": "AbleToScale" |
 * "ScalingActive" | "ScalingLimited", "status": "True" | "False", "reason", "message"}]} with the status
 * conditions (and upstream's reasons, e.g. ScaleUpLimit, TooManyReplicas) this reconcile set. */
KT_API int kt_hpa_reconcile_json(kt_hpa* hpa, double now, int32_t current_replicas, size_t n_metrics,
                                 const int32_t* proposals, const uint8_t* valid, char** decision_json,
                                 char** err_out);

/* Batch form: n HPAs with one spec and controller config (spec_json / controller_json as kt_hpa_create),
 * reconciled in one call (one metric each). */
typedef struct kt_hpa_fleet kt_hpa_fleet;
KT_API int kt_hpa_fleet_create(const char* spec_json, const char* controller_json, size_t n, kt_hpa_fleet** out,
                               char** err_out);
KT_API void kt_hpa_fleet_free(kt_hpa_fleet* fleet);
KT_API int kt_hpa_fleet_size(const kt_hpa_fleet* fleet, size_t* out, char** err_out);
/* proposals[i] < 0 marks HPA i's metric as failed; desired_out / rescale_out are caller-allocated arrays of n
 * entries (either may be NULL). `n_threads` <= 0: all hardware threads. A bad input (n other than the fleet size,
 * a negative current_replicas[i], a non-finite now) is KT_ERR_INVALID and leaves every HPA unchanged. */
KT_API int kt_hpa_fleet_reconcile(kt_hpa_fleet* fleet, double now, size_t n, const int32_t* current_replicas,
                                  const int32_t* proposals, int32_t* desired_out, uint8_t* rescale_out, int n_threads,
                                  char** err_out);
/* The fleet's state, to persist across restarts: a JSON array with one kt_hpa_state_json object per HPA, in fleet
 * order (free with kt_free_string). kt_hpa_fleet_restore sets it back into a fleet of the same size and spec, all
 * HPAs or none; restored, the fleet reconciles exactly as the original. A bad state is KT_ERR_INVALID with the
 * entry, key and value in err_out ("HpaFleet state[1]: HpaController state.recommendations[0].replicas = -1 ..."). */
KT_API int kt_hpa_fleet_state_json(const kt_hpa_fleet* fleet, char** out_json, char** err_out);
KT_API int kt_hpa_fleet_restore(kt_hpa_fleet* fleet, const char* state_json, char** err_out);

/* ---- Queueing ---------------------------------------------------------------------------------------- */

KT_API int kt_erlang_b(int64_t servers, double load, double* out, char** err_out);
KT_API int kt_erlang_c(int64_t servers, double load, double* out, char** err_out);
/* P(wait > t_s) for mean service time `service_time_s`. */
KT_API int kt_prob_wait_exceeds(int64_t servers, double load, double service_time_s, double t_s, double* out,
                                char** err_out);
/* Smallest replica count with P(latency <= latency_s) >= quantile (on response time if on_response_time != 0,
 * else on the wait), each pod serving `concurrency` requests at once. */
KT_API int kt_min_replicas_for_slo(double arrival_rate, double service_time_s, int32_t concurrency, double latency_s,
                                   double quantile, int on_response_time, int64_t* out, char** err_out);

/* ---- Simulation -------------------------------------------------------------------------------------- */

/* Runs n rates (req/s, one per dt_s seconds) through the autoscaler described by config_json (SimConfig JSON,
 * "{}" = KPA defaults) and returns the result JSON (series + pod_seconds, slo_violation_fraction, ...). */
KT_API int kt_autoscale_simulate(const char* config_json, const double* rates, size_t n, double dt_s,
                                 char** result_json, char** err_out);

#ifdef __cplusplus
}
#endif
#endif
