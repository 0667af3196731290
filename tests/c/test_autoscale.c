/* Plain-C99 test of the autoscale C API: KPA fleet batch decide, HPA reconcile, Erlang C, simulation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(void) {
  char* err = NULL;
  char* json = NULL;
  CHECK(kt_kpa_config_normalize("{}", &json, &err) == KT_OK);
  CHECK(strstr(json, "\"target_burst_capacity\":211.0") != NULL);
  kt_free_string(json);
  CHECK(kt_kpa_config_normalize("{\"stable_window\": 2}", &json, &err) == KT_ERR_INVALID);
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

  kt_hpa* hpa = NULL;
  CHECK(kt_hpa_create("{\"minReplicas\": 1, \"maxReplicas\": 10}", NULL, &hpa, NULL) == KT_OK);
  const int32_t props[2] = {3, 7};
  const uint8_t valid[2] = {1, 1};
  int32_t want = 0;
  int rescale = 0;
  CHECK(kt_hpa_reconcile(hpa, 0.0, 4, 2, props, valid, &want, &rescale, NULL) == KT_OK);
  CHECK(want == 7 && rescale == 1);
  kt_hpa_free(hpa);

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
