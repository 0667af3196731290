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
 * arrays of n entries (any output pointer may be NULL). `threads` <= 0: all hardware threads. */
KT_API int kt_kpa_fleet_decide(kt_kpa_fleet* fleet, double now, size_t n, const int32_t* ready_pods,
                               const double* observed_stable, const double* observed_panic, int32_t* desired_out,
                               int32_t* excess_burst_capacity_out, int32_t* num_activators_out,
                               uint8_t* panicking_out, int threads, char** err_out);
/* Pods the scraper samples out of `population` ready pods. */
KT_API int kt_kpa_scrape_sample_size(int32_t population, int32_t* out, char** err_out);

/* ---- Kubernetes HPA ---------------------------------------------------------------------------------- */

typedef struct kt_hpa kt_hpa;
/* spec_json: {"minReplicas", "maxReplicas", "behavior": {"scaleUp": {...}, "scaleDown": {...}}} as in
 * autoscaling/v2; controller_json: {"downscale_stabilization_window", "tolerance", "sync_period"} or NULL. */
KT_API int kt_hpa_create(const char* spec_json, const char* controller_json, kt_hpa** out, char** err_out);
KT_API void kt_hpa_free(kt_hpa* hpa);
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

/* Batch form: n HPAs with one spec and controller config, reconciled in one call (one metric each). */
typedef struct kt_hpa_fleet kt_hpa_fleet;
KT_API int kt_hpa_fleet_create(const char* spec_json, const char* controller_json, size_t n, kt_hpa_fleet** out,
                               char** err_out);
KT_API void kt_hpa_fleet_free(kt_hpa_fleet* fleet);
/* proposals[i] < 0 marks HPA i's metric as failed; desired_out / rescale_out are caller-allocated arrays of n
 * entries (either may be NULL). `threads` <= 0: all hardware threads. */
KT_API int kt_hpa_fleet_reconcile(kt_hpa_fleet* fleet, double now, size_t n, const int32_t* current_replicas,
                                  const int32_t* proposals, int32_t* desired_out, uint8_t* rescale_out, int threads,
                                  char** err_out);

/* ---- Queueing ---------------------------------------------------------------------------------------- */

KT_API int kt_erlang_b(int64_t servers, double load, double* out, char** err_out);
KT_API int kt_erlang_c(int64_t servers, double load, double* out, char** err_out);
/* P(wait > t) for mean service time `service_time`. */
KT_API int kt_prob_wait_exceeds(int64_t servers, double load, double service_time, double t, double* out,
                                char** err_out);
/* Smallest replica count with P(latency <= latency_s) >= quantile (on response time if on_response_time != 0,
 * else on the wait), each pod serving `concurrency` requests at once. */
KT_API int kt_min_replicas_for_slo(double arrival_rate, double service_time, int32_t concurrency, double latency_s,
                                   double quantile, int on_response_time, int64_t* out, char** err_out);

/* ---- Simulation -------------------------------------------------------------------------------------- */

/* Runs n rates (req/s, one per dt seconds) through the autoscaler described by config_json (SimConfig JSON,
 * "{}" = KPA defaults) and returns the result JSON (series + pod_seconds, slo_violation_fraction, ...). */
KT_API int kt_autoscale_simulate(const char* config_json, const double* rates, size_t n, double dt,
                                 char** result_json, char** err_out);

#ifdef __cplusplus
}
#endif
#endif
