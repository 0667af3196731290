/* Plain-C99 test of the autoscale C API: KPA fleet batch decide and scaler (and their persisted state), activator
 * throttler, every kt_hpa_* function (valid and invalid input) including the HPA fleet's persisted state, Erlang C,
 * simulation. */
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

/* Two scalers step alike: every field of one reconcile's outcome. */
static int same_step(const kt_kpa_scaler_step* a, const kt_kpa_scaler_step* b) {
  return a->want == b->want && a->applied == b->applied && a->replicas == b->replicas &&
         a->proxy_mode == b->proxy_mode && a->state == b->state && strcmp(a->reason, b->reason) == 0 &&
         a->requeue_after_s == b->requeue_after_s && a->probe_activator == b->probe_activator;
}

/* Scaler and fleet state: set directly, read back, restored into a fresh object that then decides alike. */
static int test_kpa_state(void) {
  char* err = NULL;
  char* json = NULL;
  char* again = NULL;
  kt_kpa_scaler* sc = NULL;
  kt_kpa_scaler* copy = NULL;
  kt_kpa_scaler_step a, b;
  /* knative kpa_test.go:TestReconcile/want=1, underscaled, PA inactive: min-scale 11, 10 pods, PA inactive. */
  CHECK(kt_kpa_scaler_create(NULL, "{\"min_scale\": 11}", 0.0, 10, &sc, NULL) == KT_OK);
  CHECK(kt_kpa_scaler_restore(sc,
                              "{\"pa_state\": \"inactive\", \"reason\": \"NoTraffic\", \"since_s\": 0, "
                              "\"scale_target_initialized\": true, \"proxy_mode\": true, \"proxy_since_s\": 0, "
                              "\"replicas\": 10}",
                              &err) == KT_OK);
  CHECK(kt_kpa_scaler_state_json(sc, &json, NULL) == KT_OK && strstr(json, "\"pa_state\":\"inactive\"") != NULL);
  CHECK(kt_kpa_scaler_create(NULL, "{\"min_scale\": 11}", 0.0, 3, &copy, NULL) == KT_OK);
  CHECK(kt_kpa_scaler_restore(copy, json, NULL) == KT_OK);
  CHECK(kt_kpa_scaler_reconcile(sc, 10.0, 1, 0, 10, -1, &a, NULL) == KT_OK);
  CHECK(a.replicas == 11 && a.applied == 1 && a.state == KT_PA_ACTIVATING && a.proxy_mode == 0);
  CHECK(kt_kpa_scaler_reconcile(copy, 10.0, 1, 0, 10, -1, &b, NULL) == KT_OK && same_step(&a, &b));
  CHECK(kt_kpa_scaler_reconcile(sc, 20.0, 0, 0, 12, -1, &a, NULL) == KT_OK);
  CHECK(kt_kpa_scaler_reconcile(copy, 20.0, 0, 0, 12, -1, &b, NULL) == KT_OK && same_step(&a, &b));
  CHECK(a.replicas == 11 && a.state == KT_PA_ACTIVE);
  kt_free_string(json);
  /* A bad state names the key and value and changes nothing. */
  CHECK(kt_kpa_scaler_state_json(sc, &json, NULL) == KT_OK);
  CHECK(invalid_with(kt_kpa_scaler_restore(sc,
                                           "{\"pa_state\": \"active\", \"reason\": \"TimedOut\", \"since_s\": 0, "
                                           "\"scale_target_initialized\": true, \"proxy_mode\": true, "
                                           "\"proxy_since_s\": 0, \"replicas\": 10}",
                                           &err),
                     &err, "reason = 'TimedOut' is not a reason of pa_state = 'active'"));
  CHECK(invalid_with(kt_kpa_scaler_restore(sc, "{\"pa_state\": \"active\"}", &err), &err, "missing key 'reason'"));
  CHECK(invalid_with(kt_kpa_scaler_restore(sc, NULL, &err), &err, "must not be NULL"));
  CHECK(invalid_with(kt_kpa_scaler_state_json(NULL, &again, &err), &err, "must not be NULL"));
  CHECK(kt_kpa_scaler_state_json(sc, &again, NULL) == KT_OK && strcmp(json, again) == 0);
  kt_free_string(json);
  kt_free_string(again);
  kt_kpa_scaler_free(sc);
  kt_kpa_scaler_free(copy);

  /* A fleet in panic with a scale-down delay window, persisted and restored into a fresh fleet. */
  kt_kpa_fleet* f1 = NULL;
  kt_kpa_fleet* f2 = NULL;
  const char* cfg = "{\"scale_down_delay_s\": 10}";
  CHECK(kt_kpa_fleet_create(cfg, "{\"container_concurrency\": 10}", 2, NULL, 0.0, &f1, NULL) == KT_OK);
  CHECK(kt_kpa_fleet_create(cfg, "{\"container_concurrency\": 10}", 2, NULL, 0.0, &f2, NULL) == KT_OK);
  const int32_t ready[2] = {1, 5};
  const double stable[2] = {7.0, 35.0};
  const double panic[2] = {70.0, 35.0};
  const double calm[2] = {0.0, 0.0};
  int32_t d1[2], d2[2];
  uint8_t p1[2], p2[2];
  CHECK(kt_kpa_fleet_decide(f1, 0.0, 2, ready, stable, panic, d1, NULL, NULL, p1, 1, NULL) == KT_OK);
  CHECK(d1[0] == 10 && p1[0] == 1);
  CHECK(kt_kpa_fleet_state_json(f1, &json, NULL) == KT_OK);
  CHECK(strstr(json, "\"panicking\":true") != NULL && strstr(json, "\"delay_window\":[{\"pods\":10") != NULL);
  CHECK(kt_kpa_fleet_restore(f2, json, NULL) == KT_OK);
  for (int k = 1; k <= 40; ++k) { /* calm ticks: panic holds for the stable window, then the delay window */
    CHECK(kt_kpa_fleet_decide(f1, 2.0 * k, 2, ready, calm, calm, d1, NULL, NULL, p1, 1, NULL) == KT_OK);
    CHECK(kt_kpa_fleet_decide(f2, 2.0 * k, 2, ready, calm, calm, d2, NULL, NULL, p2, 1, NULL) == KT_OK);
    CHECK(d1[0] == d2[0] && d1[1] == d2[1] && p1[0] == p2[0] && p1[1] == p2[1]);
    if (k == 33) CHECK(d1[0] == 10 && p1[0] == 0); /* t = 66: panic over (0 + 60 < 62), the delay holds 10 */
  }
  CHECK(d1[0] == 0); /* t = 80: the 10 of t = 60 has left the 10 s delay window */
  kt_free_string(json);
  CHECK(invalid_with(kt_kpa_fleet_restore(f2, "[]", &err), &err, "array of 2 decider states, got 0 entries"));
  CHECK(invalid_with(kt_kpa_fleet_restore(f2,
                                          "[{\"panicking\": false, \"panic_time_s\": 0, \"max_panic_pods\": 0, "
                                          "\"delay_window\": []}, {\"panicking\": false, \"panic_time_s\": 0, "
                                          "\"max_panic_pods\": -3, \"delay_window\": []}]",
                                          &err),
                     &err, "KpaFleet state[1]: KpaDecider state.max_panic_pods = -3"));
  CHECK(invalid_with(kt_kpa_fleet_state_json(f2, NULL, &err), &err, "must not be NULL"));
  kt_kpa_fleet_free(f1);
  kt_kpa_fleet_free(f2);
  return 0;
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
  /* Its recommendation history, persisted and injected into a fresh HPA: both hold 7 at t = 200 and agree. */
  kt_hpa* copy = NULL;
  int32_t want2 = 0;
  int rescale2 = 0;
  CHECK(kt_hpa_state_json(hpa, &json, NULL) == KT_OK && strstr(json, "\"recommendations\":[{\"replicas\":4") != NULL);
  CHECK(kt_hpa_create("{\"minReplicas\": 1, \"maxReplicas\": 10}", NULL, &copy, NULL) == KT_OK);
  CHECK(kt_hpa_restore(copy, json, NULL) == KT_OK);
  kt_free_string(json);
  CHECK(kt_hpa_reconcile(hpa, 200.0, 7, 2, low, NULL, &want, &rescale, NULL) == KT_OK);
  CHECK(kt_hpa_reconcile(copy, 200.0, 7, 2, low, NULL, &want2, &rescale2, NULL) == KT_OK);
  CHECK(want == 7 && want2 == 7 && rescale == rescale2);
  CHECK(invalid_with(kt_hpa_restore(copy, "{\"history_started\": true}", &err), &err, "missing key 'recommendations'"));
  CHECK(invalid_with(kt_hpa_restore(NULL, "{}", &err), &err, "must not be NULL"));
  kt_hpa_free(copy);
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

/* kt_hpa_fleet_size / kt_hpa_fleet_state_json / kt_hpa_fleet_restore: a fleet's recommendation history persisted
 * and restored into a fresh fleet, which then reconciles as the original (and not as a fleet without history). */
static int test_hpa_fleet_state(void) {
  char* err = NULL;
  char* json = NULL;
  char* again = NULL;
  const char* spec = "{\"minReplicas\": 1, \"maxReplicas\": 10}";
  kt_hpa_fleet* f1 = NULL;
  kt_hpa_fleet* f2 = NULL;
  kt_hpa_fleet* fresh = NULL;
  size_t size = 0;
  CHECK(kt_hpa_fleet_create(spec, NULL, 2, &f1, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_create(spec, NULL, 2, &f2, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_create(spec, NULL, 2, &fresh, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_size(f1, &size, NULL) == KT_OK && size == 2);
  const int32_t current0[2] = {10, 3};
  int32_t d1[2], d2[2], d3[2];
  uint8_t r1[2], r2[2], r3[2];
  CHECK(kt_hpa_fleet_reconcile(f1, 0.0, 2, current0, current0, d1, r1, 1, NULL) == KT_OK);
  CHECK(d1[0] == 10 && r1[0] == 0 && d1[1] == 3 && r1[1] == 0);
  CHECK(kt_hpa_fleet_state_json(f1, &json, NULL) == KT_OK);
  CHECK(strstr(json, "\"recommendations\":[{\"replicas\":10,\"time_s\":0.0},") != NULL);
  CHECK(kt_hpa_fleet_restore(f2, json, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_state_json(f2, &again, NULL) == KT_OK && strcmp(json, again) == 0);
  kt_free_string(again);
  again = NULL;
  /* 15 s later HPA 0 was scaled down to 4 behind the controller's back and its metric says 4: the 300 s downscale
   * stabilisation window still holds the 10 of t = 0, in the original and the restored fleet alike, so it scales
   * back up, to the legacy limit max(2 x 4, 4) = 8. HPA 1 scales up from 3 to its limit max(2 x 3, 4) = 6. */
  const int32_t current1[2] = {4, 3};
  const int32_t proposals1[2] = {4, 9};
  CHECK(kt_hpa_fleet_reconcile(f1, 15.0, 2, current1, proposals1, d1, r1, 1, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_reconcile(f2, 15.0, 2, current1, proposals1, d2, r2, 2, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_reconcile(fresh, 15.0, 2, current1, proposals1, d3, r3, 1, NULL) == KT_OK);
  CHECK(d1[0] == 8 && r1[0] == 1 && d1[1] == 6 && r1[1] == 1);
  CHECK(d2[0] == d1[0] && r2[0] == r1[0] && d2[1] == d1[1] && r2[1] == r1[1]);
  CHECK(d3[0] == 4 && r3[0] == 0); /* without the history there is nothing to stabilise to */
  kt_free_string(json);
  json = NULL;
  CHECK(kt_hpa_fleet_state_json(f1, &json, NULL) == KT_OK);
  CHECK(kt_hpa_fleet_state_json(f2, &again, NULL) == KT_OK && strcmp(json, again) == 0);
  kt_free_string(again);
  again = NULL;

  /* Bad states name the entry, key and value and change nothing; so does a bad reconcile. */
  CHECK(invalid_with(kt_hpa_fleet_restore(f2, "[]", &err), &err, "array of 2 controller states, got 0 entries"));
  CHECK(invalid_with(kt_hpa_fleet_restore(f2, "{}", &err), &err, "HpaFleet state must be an array of 2"));
  CHECK(invalid_with(kt_hpa_fleet_restore(f2,
                                          "[{\"history_started\": false, \"recommendations\": [], "
                                          "\"scale_up_events\": [], \"scale_down_events\": []}, "
                                          "{\"history_started\": true, \"recommendations\": [{\"replicas\": -1, "
                                          "\"time_s\": 0}], \"scale_up_events\": [], \"scale_down_events\": []}]",
                                          &err),
                     &err, "HpaFleet state[1]: HpaController state.recommendations[0].replicas = -1"));
  CHECK(invalid_with(kt_hpa_fleet_restore(f2, "[{}, {}]", &err), &err, "HpaFleet state[0]: HpaController state"));
  CHECK(invalid_with(kt_hpa_fleet_restore(f2, "[1,", &err), &err, "HpaFleet state JSON"));
  const int32_t negative[2] = {4, -1};
  CHECK(invalid_with(kt_hpa_fleet_reconcile(f2, 30.0, 2, negative, proposals1, d2, r2, 1, &err), &err,
                     "current_replicas[1] = -1 must be >= 0"));
  CHECK(invalid_with(kt_hpa_fleet_reconcile(f2, NAN, 2, current1, proposals1, d2, r2, 1, &err), &err,
                     "now = nan must be finite"));
  CHECK(kt_hpa_fleet_state_json(f2, &again, NULL) == KT_OK && strcmp(json, again) == 0);
  kt_free_string(again);
  again = NULL;
  CHECK(invalid_with(kt_hpa_fleet_restore(f2, NULL, &err), &err, "fleet and state_json must not be NULL"));
  CHECK(invalid_with(kt_hpa_fleet_restore(NULL, json, &err), &err, "fleet and state_json must not be NULL"));
  CHECK(invalid_with(kt_hpa_fleet_state_json(f2, NULL, &err), &err, "fleet and out_json must not be NULL"));
  CHECK(invalid_with(kt_hpa_fleet_state_json(NULL, &again, &err), &err, "fleet and out_json must not be NULL"));
  CHECK(invalid_with(kt_hpa_fleet_size(NULL, &size, &err), &err, "fleet and out must not be NULL"));
  CHECK(invalid_with(kt_hpa_fleet_size(f2, NULL, &err), &err, "fleet and out must not be NULL"));
  kt_free_string(json);
  kt_hpa_fleet_free(f1);
  kt_hpa_fleet_free(f2);
  kt_hpa_fleet_free(fresh);
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

  if (test_kpa_scaler() || test_kpa_state() || test_throttler() || test_hpa() || test_hpa_fleet() ||
      test_hpa_fleet_state())
    return 1;

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
