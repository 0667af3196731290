/* Plain-C99 test of the autoscale C API: KPA fleet batch decide and scaler, activator throttler, every kt_hpa_*
 * function (valid and invalid input), Erlang C, simulation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define REVISION_MAX 2147483647 /* MaxBreakerCapacity */

/* Expects `rc` to be KT_ERR_INVALID with an err_out message (*err) containing `needle`; frees and resets it. */
static int invalid_with(int rc, char** err, const char* needle) {
  const int ok = rc == KT_ERR_INVALID && *err != NULL && strstr(*err, needle) != NULL;
  if (!ok) fprintf(stderr, "expected KT_ERR_INVALID naming '%s', got %d: %s\n", needle, rc, *err ? *err : "(none)");
  kt_free_string(*err);
  *err = NULL;
  return ok;
}

/* The KPA scaler's actions: per-revision progress deadline (TimedOut), re-enqueue delay, activator probe. */
static int test_kpa_scaler(void) {
  char* err = NULL;
  kt_kpa_scaler* sc = NULL;
  kt_kpa_scaler_step st;
  double timeout = 0;
  CHECK(kt_kpa_scaler_create(NULL, "{\"progress_deadline_s\": 5}", 0.0, 1, &sc, &err) == KT_OK);
  CHECK(kt_kpa_scaler_activation_timeout(sc, &timeout, NULL) == KT_OK && timeout == 35.0);
  CHECK(kt_kpa_scaler_reconcile(sc, 0.0, 1, 0, 0, -1, &st, NULL) == KT_OK);
  CHECK(st.state == KT_PA_ACTIVATING && strcmp(st.reason, "Queued") == 0);
  CHECK(kt_kpa_scaler_reconcile(sc, 20.0, 0, 0, 0, -1, &st, NULL) == KT_OK);
  CHECK(st.want == -1 && !st.applied && st.requeue_after_s == 35.0 && !st.probe_activator);
  CHECK(kt_kpa_scaler_reconcile(sc, 36.0, 0, 0, 0, -1, &st, NULL) == KT_OK); /* 5 s + 30 s buffer passed */
  CHECK(st.applied && st.replicas == 0 && st.state == KT_PA_INACTIVE && strcmp(st.reason, "TimedOut") == 0);
  CHECK(invalid_with(kt_kpa_scaler_reconcile(sc, 40.0, 0, 0, 0, 2, &st, &err), &err, "activator_probe = 2"));
  CHECK(invalid_with(kt_kpa_scaler_reconcile(sc, 40.0, 0, 0, -1, -1, &st, &err), &err, "ready_pods = -1"));
  CHECK(invalid_with(kt_kpa_scaler_reconcile(sc, 40.0, 0, 0, 0, -1, NULL, &err), &err, "must not be NULL"));
  kt_kpa_scaler_free(sc);

  /* Defaults (stable window 60 s, grace 30 s, TBC 211): active, inactive after a stable window, then the probe. */
  CHECK(kt_kpa_scaler_create("{}", "{}", 0.0, 1, &sc, NULL) == KT_OK);
  CHECK(kt_kpa_scaler_activation_timeout(sc, &timeout, NULL) == KT_OK && timeout == 630.0);
  CHECK(kt_kpa_scaler_reconcile(sc, 0.0, 1, 0, 1, -1, &st, NULL) == KT_OK && st.state == KT_PA_ACTIVE);
  CHECK(strcmp(st.reason, "") == 0);
  CHECK(kt_kpa_scaler_reconcile(sc, 30.0, 0, 0, 1, -1, &st, NULL) == KT_OK);
  CHECK(st.want == 1 && st.applied && st.requeue_after_s == 30.0); /* the rest of the stable window */
  CHECK(kt_kpa_scaler_reconcile(sc, 60.0, 0, 0, 1, -1, &st, NULL) == KT_OK);
  CHECK(st.want == 0 && !st.applied && st.state == KT_PA_INACTIVE && strcmp(st.reason, "NoTraffic") == 0);
  CHECK(kt_kpa_scaler_reconcile(sc, 90.0, 0, 0, 1, 0, &st, NULL) == KT_OK); /* probe failed */
  CHECK(!st.applied && st.probe_activator && st.replicas == 1);
  CHECK(kt_kpa_scaler_reconcile(sc, 90.0, 0, 0, 1, 1, &st, NULL) == KT_OK); /* probe succeeded, grace over */
  CHECK(st.applied && st.replicas == 0 && !st.probe_activator && st.proxy_mode);
  kt_kpa_scaler_free(sc);
  kt_kpa_scaler_free(NULL);

  /* Deprecated key (window -> window_s) accepted; bad values and shapes are KT_ERR_INVALID naming the field. */
  CHECK(kt_kpa_scaler_create(NULL, "{\"window\": 30}", 0.0, -1, &sc, NULL) == KT_OK);
  kt_kpa_scaler_free(sc);
  CHECK(invalid_with(kt_kpa_scaler_create(NULL, "{\"progress_deadline_s\": -1}", 0.0, -1, &sc, &err), &err,
                     "progress_deadline_s"));
  CHECK(invalid_with(kt_kpa_scaler_create("{\"stable_window_s\": 2}", NULL, 0.0, -1, &sc, &err), &err,
                     "stable-window"));
  CHECK(invalid_with(kt_kpa_scaler_create(NULL, "{\"window\": 30, \"window_s\": 30}", 0.0, -1, &sc, &err), &err,
                     "'window' (deprecated)"));
  CHECK(invalid_with(kt_kpa_scaler_create(NULL, NULL, 0.0, -1, NULL, &err), &err, "out must not be NULL"));
  CHECK(invalid_with(kt_kpa_scaler_activation_timeout(NULL, &timeout, &err), &err, "must not be NULL"));
  return 0;
}

/* throttler_test.go:TestThrottlerUpdateCapacity rows through the C API, and pickIndices. */
static int test_throttler(void) {
  char* err = NULL;
  kt_throttler_result s;
  /* "numActivators: 2, index: 0, pods: 5, cc: 1. Capacity is expected to 3 (2 + 1)" */
  kt_throttler_input in = {5, 5, 1, 2, 0, 0};
  CHECK(kt_throttler_share(&in, &s, &err) == KT_OK);
  CHECK(s.capacity == 3 && s.breaker_capacity == 3 && !s.infinite_breaker && s.tracker_capacity == 1);
  CHECK(s.slice_begin == 0 && s.slice_end == 2 && s.remnant == 4 && s.assigned == 3);
  in.activator_index = 1; /* "... index: 1 ... Capacity is expected to 2" */
  CHECK(kt_throttler_share(&in, &s, NULL) == KT_OK && s.capacity == 2 && s.remnant == -1 && s.assigned == 2);
  /* "Infinite capacity with podIP trackers.": cc 0, every tracker, breaker open */
  const kt_throttler_input inf = {1, 3, 0, 2, 1, 0};
  CHECK(kt_throttler_share(&inf, &s, NULL) == KT_OK);
  CHECK(s.infinite_breaker && s.breaker_capacity == 1 && s.assigned == 3 && s.capacity == REVISION_MAX);
  /* "numActivators: 5, capacity: 10, cc: 10" through the ClusterIP: 10 x 10 / 5 */
  const kt_throttler_input cip = {10, 0, 10, 5, 0, 1};
  CHECK(kt_throttler_share(&cip, &s, NULL) == KT_OK && s.capacity == 20 && s.assigned == 0);
  int64_t b = 0, e = 0, r = 0;
  CHECK(kt_throttler_pick_indices(5, 1, 2, &b, &e, &r, NULL) == KT_OK && b == 2 && e == 4 && r == 1);
  in.activator_index = 2; /* past the activator count with sliced trackers */
  CHECK(invalid_with(kt_throttler_share(&in, &s, &err), &err, "activator_index"));
  in.activator_index = 0;
  in.backends = -1;
  CHECK(invalid_with(kt_throttler_share(&in, &s, &err), &err, "backends"));
  CHECK(invalid_with(kt_throttler_share(NULL, &s, &err), &err, "must not be NULL"));
  CHECK(invalid_with(kt_throttler_pick_indices(5, 0, 0, &b, &e, &r, &err), &err, "activators"));
  CHECK(invalid_with(kt_throttler_pick_indices(5, 0, 2, NULL, &e, &r, &err), &err, "must not be NULL"));
  return 0;
}

/* kt_hpa_create / kt_hpa_reconcile / kt_hpa_reconcile_json / kt_hpa_free. */
static int test_hpa(void) {
  char* err = NULL;
  char* json = NULL;
  kt_hpa* hpa = NULL;
  CHECK(kt_hpa_create("{\"minReplicas\": 1, \"maxReplicas\": 10}", NULL, &hpa, NULL) == KT_OK);
  const int32_t props[2] = {3, 7};
  const uint8_t valid[2] = {1, 1};
  int32_t want = 0;
  int rescale = 0;
  CHECK(kt_hpa_reconcile(hpa, 0.0, 4, 2, props, valid, &want, &rescale, NULL) == KT_OK);
  CHECK(want == 7 && rescale == 1); /* max over metrics */
  CHECK(kt_hpa_reconcile(hpa, 15.0, 7, 2, props, NULL, &want, NULL, NULL) == KT_OK);
  CHECK(want == 7); /* valid NULL = all valid; a lower recommendation is held for 300 s */
  const uint8_t first_failed[2] = {0, 1};
  const int32_t low[2] = {1, 2};
  CHECK(kt_hpa_reconcile(hpa, 400.0, 7, 2, low, first_failed, &want, &rescale, NULL) == KT_OK);
  CHECK(want == 7 && rescale == 0); /* a failed metric blocks scale-down */
  CHECK(invalid_with(kt_hpa_reconcile(hpa, 0.0, 4, 2, props, valid, NULL, &rescale, &err), &err, "desired_out"));
  CHECK(invalid_with(kt_hpa_reconcile(NULL, 0.0, 4, 2, props, valid, &want, &rescale, &err), &err, "hpa"));
  CHECK(invalid_with(kt_hpa_reconcile(hpa, 0.0, 4, 2, NULL, valid, &want, &rescale, &err), &err, "proposals"));
  kt_hpa_free(hpa);

  /* Above maxReplicas: ScalingLimited True with TooManyReplicas. */
  CHECK(kt_hpa_create("{\"minReplicas\": 1, \"maxReplicas\": 5}", "{\"sync_period_s\": 30}", &hpa, NULL) == KT_OK);
  const int32_t high = 20;
  CHECK(kt_hpa_reconcile_json(hpa, 0.0, 5, 1, &high, NULL, &json, &err) == KT_OK);
  CHECK(strstr(json, "\"desired_replicas\":5") != NULL && strstr(json, "\"rescale\":false") != NULL);
  CHECK(strstr(json, "\"ScalingLimited\"") != NULL && strstr(json, "\"TooManyReplicas\"") != NULL);
  kt_free_string(json);
  CHECK(invalid_with(kt_hpa_reconcile_json(hpa, 0.0, 5, 1, &high, NULL, NULL, &err), &err, "decision_json"));
  CHECK(invalid_with(kt_hpa_reconcile_json(NULL, 0.0, 5, 1, &high, NULL, &json, &err), &err, "hpa"));
  kt_hpa_free(hpa);
  kt_hpa_free(NULL);

  /* Deprecated controller key accepted; bad spec, bad or unknown controller keys, NULL out refused. */
  CHECK(kt_hpa_create("{}", "{\"downscale_stabilization_window\": 60}", &hpa, NULL) == KT_OK);
  kt_hpa_free(hpa);
  CHECK(invalid_with(kt_hpa_create("{\"minReplicas\": 3, \"maxReplicas\": 2}", NULL, &hpa, &err), &err,
                     "maxReplicas = 2"));
  CHECK(invalid_with(kt_hpa_create("{}", "{\"sync\": 1}", &hpa, &err), &err, "unknown key 'sync'"));
  CHECK(invalid_with(kt_hpa_create("{}", "{\"tolerance\": -1}", &hpa, &err), &err, "tolerance"));
  CHECK(invalid_with(kt_hpa_create("{}", "[1", &hpa, &err), &err, "HpaControllerConfig JSON"));
  CHECK(invalid_with(kt_hpa_create("{}", NULL, NULL, &err), &err, "out must not be NULL"));
  return 0;
}

/* kt_hpa_fleet_create / kt_hpa_fleet_reconcile / kt_hpa_fleet_free. */
static int test_hpa_fleet(void) {
  char* err = NULL;
  kt_hpa_fleet* fleet = NULL;
  CHECK(kt_hpa_fleet_create("{\"minReplicas\": 1, \"maxReplicas\": 10}", NULL, 3, &fleet, NULL) == KT_OK);
  const int32_t current[3] = {4, 4, 4};
  const int32_t proposals[3] = {5, -1, 20};
  int32_t desired[3] = {0, 0, 0};
  uint8_t rescale[3] = {9, 9, 9};
  CHECK(kt_hpa_fleet_reconcile(fleet, 0.0, 3, current, proposals, desired, rescale, 1, NULL) == KT_OK);
  CHECK(desired[0] == 5 && rescale[0] == 1);
  CHECK(desired[1] == 4 && rescale[1] == 0); /* failed metric: no action */
  CHECK(desired[2] == 8 && rescale[2] == 1); /* legacy scale-up limit max(2 x 4, 4) */
  CHECK(kt_hpa_fleet_reconcile(fleet, 15.0, 3, current, proposals, NULL, NULL, 1, NULL) == KT_OK);
  CHECK(invalid_with(kt_hpa_fleet_reconcile(fleet, 0.0, 2, current, proposals, desired, rescale, 1, &err), &err,
                     "fleet size 3"));
  CHECK(invalid_with(kt_hpa_fleet_reconcile(NULL, 0.0, 3, current, proposals, desired, rescale, 1, &err), &err,
                     "fleet"));
  kt_hpa_fleet_free(fleet);
  kt_hpa_fleet_free(NULL);
  CHECK(invalid_with(kt_hpa_fleet_create("{\"maxReplicas\": 0}", NULL, 2, &fleet, &err), &err, "maxReplicas"));
  CHECK(invalid_with(kt_hpa_fleet_create("{}", "{\"sync_period_s\": 0}", 2, &fleet, &err), &err, "sync_period_s"));
  CHECK(invalid_with(kt_hpa_fleet_create("{}", NULL, 2, NULL, &err), &err, "out must not be NULL"));
  return 0;
}

int main(void) {
  char* err = NULL;
  char* json = NULL;
  CHECK(kt_kpa_config_normalize("{}", &json, &err) == KT_OK);
  CHECK(strstr(json, "\"target_burst_capacity\":211.0") != NULL);
  kt_free_string(json);
  CHECK(kt_kpa_config_normalize("{\"stable_window_s\": 2}", &json, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "stable-window") != NULL);
  kt_free_string(err);
  err = NULL;

  kt_kpa_fleet* fleet = NULL;
  CHECK(kt_kpa_fleet_create("{}", "{\"container_concurrency\": 10}", 3, NULL, 0.0, &fleet, NULL) == KT_OK);
  size_t size = 0;
  CHECK(kt_kpa_fleet_size(fleet, &size, NULL) == KT_OK && size == 3);
  const int32_t ready[3] = {1, 4, 10};
  const double stable[3] = {7.0, 28.0, 0.0};
  const double panic[3] = {70.0, 28.0, 0.0};
  int32_t desired[3], ebc[3], act[3];
  uint8_t pan[3];
  CHECK(kt_kpa_fleet_decide(fleet, 0.0, 3, ready, stable, panic, desired, ebc, act, pan, 1, NULL) == KT_OK);
  CHECK(desired[0] == 10 && pan[0] == 1); /* ceil(70/7) = 10, 10/1 >= 2: panic */
  CHECK(desired[1] == 4 && pan[1] == 0);
  CHECK(desired[2] == 5);                 /* scale-down bounded by floor(10/2) */
  CHECK(ebc[1] == (int32_t)floor(4 * 10 - 211 - 28.0));
  CHECK(kt_kpa_fleet_decide(fleet, 0.0, 2, ready, stable, panic, desired, NULL, NULL, NULL, 1, NULL) ==
        KT_ERR_INVALID);
  kt_kpa_fleet_free(fleet);

  if (test_kpa_scaler() || test_throttler() || test_hpa() || test_hpa_fleet()) return 1;

  double c = 0;
  CHECK(kt_erlang_c(14, 10.0, &c, NULL) == KT_OK && fabs(c - 0.17413) < 1e-5);
  int64_t replicas = 0;
  CHECK(kt_min_replicas_for_slo(200.0, 0.1, 10, 0.5, 0.95, 1, &replicas, NULL) == KT_OK && replicas >= 3);
  CHECK(kt_erlang_c(-1, 1.0, &c, NULL) == KT_ERR_INVALID);

  double rates[60];
  for (int i = 0; i < 60; ++i) rates[i] = 50.0;
  CHECK(kt_autoscale_simulate("{\"policy\": \"slo\"}", rates, 60, 1.0, &json, NULL) == KT_OK);
  CHECK(strstr(json, "\"pod_seconds\"") != NULL);
  kt_free_string(json);
  printf("autoscale C API: ok\n");
  return 0;
}
