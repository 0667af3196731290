/* Plain-C99 test of the gpu C API: gpushare placement, gang all-or-nothing, release, invariants, extender verbs,
 * gpushare node totals, unhealthy GPUs, MIG profiles per model, the device-plugin Allocate decision and checked
 * integer fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(void) {
  const char* cluster =
      "{\"nodes\":[{\"name\":\"a\",\"cpu_milli\":64000,\"memory_mib\":262144,\"gpus\":2,\"gpu_memory_mib\":16384,"
      "\"model\":\"T4\"},{\"name\":\"b\",\"cpu_milli\":64000,\"gpus\":1,\"gpu_memory_mib\":16384,\"model\":\"T4\"}]}";
  kt_gpu_allocator* a = NULL;
  char* err = NULL;
  char* out = NULL;
  CHECK(kt_gpu_allocator_create(cluster, "{\"policy\":\"gpushare\"}", &a, &err) == KT_OK);

  /* gpushare: the tighter node b (1 GPU) wins, GPU 0 */
  CHECK(kt_gpu_place(a, "{\"name\":\"p\",\"gpu_memory_mib\":8192}", -1, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"placed\":true") && strstr(out, "\"node_name\":\"b\"") && strstr(out, "\"gpus\":[0]"));
  kt_free_string(out);

  /* gang of three 1-GPU members on 2 free GPUs + 8 GiB on b: fails, nothing changes */
  CHECK(kt_gpu_place_gang(a, "[{\"gpu_count\":1},{\"gpu_count\":1},{\"gpu_count\":1}]", "pack", &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"placed\":false") != NULL);
  kt_free_string(out);
  CHECK(kt_gpu_stats(a, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"placements\":1") != NULL);
  kt_free_string(out);

  /* errors: unknown request field, unknown placement id */
  CHECK(kt_gpu_place(a, "{\"gpus\":1}", -1, &out, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "gpus") != NULL);
  kt_free_string(err);
  err = NULL;
  CHECK(kt_gpu_place(a, "{\"name\":\"q\",\"gpu_memory_mib\":8192}", -5, &out, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "node = -5") != NULL);
  kt_free_string(err);
  err = NULL;
  /* integer fields take exact integers of their type: no truncation (1.7 -> 1), no undefined conversion (1e30) */
  CHECK(kt_gpu_place(a, "{\"gpu_memory_mib\":1.7}", -1, &out, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "request field 'gpu_memory_mib' = 1.7: must be an integer") != NULL);
  kt_free_string(err);
  err = NULL;
  CHECK(kt_gpu_place(a, "{\"gpu_count\":1e30}", -1, &out, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "request field 'gpu_count'") != NULL && strstr(err, "out of range") != NULL);
  kt_free_string(err);
  err = NULL;
  {
    kt_gpu_allocator* b = NULL;
    CHECK(kt_gpu_allocator_create("{\"nodes\":[{\"name\":\"n\",\"gpus\":1e30}]}", NULL, &b, &err) == KT_ERR_INVALID);
    CHECK(b == NULL && err != NULL && strstr(err, "nodes[0].gpus") != NULL && strstr(err, "out of range") != NULL);
    kt_free_string(err);
    err = NULL;
    CHECK(kt_gpu_allocator_create("{\"nodes\":[{\"name\":\"n\",\"gpus\":2,\"links\":[[0,1.5,\"nvlink\"]]}]}", NULL, &b,
                                  &err) == KT_ERR_INVALID);
    CHECK(err != NULL && strstr(err, "nodes[0].links entry [1] = 1.5: must be an integer") != NULL);
    kt_free_string(err);
    err = NULL;
    CHECK(kt_gpu_allocator_create(cluster, "{\"seed\":-1}", &b, &err) == KT_ERR_INVALID);
    CHECK(err != NULL && strstr(err, "options field 'seed' = -1: must not be negative") != NULL);
    kt_free_string(err);
    err = NULL;
    /* Unknown keys are refused by name (a typo no longer falls back to a default silently), and fgd / kubetune
     * need a non-empty workload whether it is absent or empty. */
    CHECK(kt_gpu_allocator_create(cluster, "{\"polcy\":\"fgd\"}", &b, &err) == KT_ERR_INVALID);
    CHECK(err != NULL && strstr(err, "field 'polcy' is unknown") != NULL);
    kt_free_string(err);
    err = NULL;
    CHECK(kt_gpu_allocator_create(cluster, "{\"policy\":\"fgd\",\"workload\":[]}", &b, &err) == KT_ERR_INVALID);
    CHECK(err != NULL && strstr(err, "needs a non-empty 'workload'") != NULL);
    kt_free_string(err);
    err = NULL;
    CHECK(kt_gpu_allocator_create(cluster, "{\"kube_semantics\":1}", &b, &err) == KT_ERR_INVALID);
    CHECK(err != NULL && strstr(err, "'kube_semantics' must be true or false") != NULL);
    kt_free_string(err);
    err = NULL;
  }
  CHECK(kt_gpu_release(a, 999, NULL) == KT_ERR_NOT_FOUND);
  CHECK(kt_gpu_release(a, 1, NULL) == KT_OK);
  CHECK(kt_gpu_check_invariants(a, NULL) == KT_OK);

  /* extender filter */
  CHECK(kt_gpu_extender(a,
                        "filter",
                        "{\"Pod\":{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"resources\":{\"limits\":"
                        "{\"aliyun.com/gpu-mem\":\"20\"}}}]}},\"NodeNames\":[\"a\",\"b\"]}",
                        &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"NodeNames\":[]") != NULL); /* 20 GiB fits no 16 GiB GPU */
  kt_free_string(out);
  CHECK(kt_gpu_extender(a, "dance", "{}", &out, NULL) == KT_ERR_INVALID);

  kt_gpu_allocator_free(a);

  /* gpushare node total: 31 GiB over 2 GPUs -> 15 GiB each (integer division, as gpushare) */
  CHECK(kt_gpu_allocator_create("{\"nodes\":[{\"name\":\"g\",\"cpu_milli\":8000,\"gpus\":2,"
                                "\"gpu_memory_total_mib\":31744,\"gpu_memory_unit_mib\":1024,\"model\":\"T4\"}]}",
                                "{\"policy\":\"gpushare\"}", &a, NULL) == KT_OK);
  CHECK(kt_gpu_place(a, "{\"gpu_memory_mib\":16384}", -1, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"placed\":false") != NULL);
  kt_free_string(out);
  CHECK(kt_gpu_place(a, "{\"name\":\"x\",\"gpu_memory_mib\":15360}", -1, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"gpus\":[0]") != NULL);
  kt_free_string(out);

  /* unhealthy GPU 0: the placement on it is reported; new work goes to GPU 1; capacity drops to one GPU */
  CHECK(kt_gpu_set_gpu_health(a, "g", 0, 0, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"name\":\"x\"") != NULL && out[0] == '[');
  kt_free_string(out);
  CHECK(kt_gpu_place(a, "{\"gpu_memory_mib\":1024}", -1, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"gpus\":[1]") != NULL);
  kt_free_string(out);
  CHECK(kt_gpu_stats(a, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"gpu_milli_capacity\":1000") && strstr(out, "\"unhealthy_gpus\":1") &&
        strstr(out, "\"placements_on_unhealthy\":1"));
  kt_free_string(out);
  CHECK(kt_gpu_unhealthy(a, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"gpus\":[{\"gpu\":0,\"node\":0,\"node_name\":\"g\"}]") != NULL);
  kt_free_string(out);
  CHECK(kt_gpu_release(a, 1, NULL) == KT_OK); /* still releasable */
  CHECK(kt_gpu_check_invariants(a, NULL) == KT_OK);
  CHECK(kt_gpu_set_gpu_health(a, "g", 7, 0, NULL, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "gpu = 7") != NULL);
  kt_free_string(err);
  err = NULL;
  CHECK(kt_gpu_set_gpu_health(a, "nope", 0, 0, NULL, NULL) == KT_ERR_NOT_FOUND);
  CHECK(kt_gpu_set_gpu_health(a, "g", 0, 1, NULL, NULL) == KT_OK);
  kt_gpu_allocator_free(a);

  /* MIG: a profile that does not exist on the node's model is refused at bind, naming both */
  CHECK(kt_gpu_allocator_create("{\"nodes\":[{\"name\":\"h\",\"gpus\":1,\"model\":\"H100\",\"mig\":true}]}",
                                NULL, &a, NULL) == KT_OK);
  CHECK(kt_gpu_place(a, "{\"mig_profile\":\"1g.5gb\"}", 0, &out, &err) == KT_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "1g.5gb") && strstr(err, "H100"));
  kt_free_string(err);
  err = NULL;
  CHECK(kt_gpu_place(a, "{\"mig_profile\":\"1g.10gb\"}", 0, &out, NULL) == KT_OK);
  CHECK(strstr(out, "\"placed\":true") != NULL);
  kt_free_string(out);
  kt_gpu_allocator_free(a);

  /* device plugin: the older of two assumed 2-unit pods gets its annotated GPU */
  {
    const char* req =
        "{\"container_requests\":[2],\"gpu_memory_per_device\":16,\"now_ns\":9,"
        "\"devices\":[{\"uuid\":\"GPU-a\",\"index\":0},{\"uuid\":\"GPU-b\",\"index\":1}],"
        "\"pods\":[{\"name\":\"new\",\"gpu_mem\":2,\"annotations\":{\"ALIYUN_COM_GPU_MEM_ASSIGNED\":\"false\","
        "\"ALIYUN_COM_GPU_MEM_ASSUME_TIME\":\"20\",\"ALIYUN_COM_GPU_MEM_IDX\":\"0\"}},"
        "{\"name\":\"old\",\"gpu_mem\":2,\"annotations\":{\"ALIYUN_COM_GPU_MEM_ASSIGNED\":\"false\","
        "\"ALIYUN_COM_GPU_MEM_ASSUME_TIME\":\"10\",\"ALIYUN_COM_GPU_MEM_IDX\":\"1\"}}]}";
    CHECK(kt_gpu_device_plugin_allocate(req, &out, NULL) == KT_OK);
    CHECK(strstr(out, "\"ok\":true") && strstr(out, "\"pod_index\":1") && strstr(out, "\"gpu_index\":1"));
    CHECK(strstr(out, "\"NVIDIA_VISIBLE_DEVICES\":\"1\"") && strstr(out, "\"ALIYUN_COM_GPU_MEM_POD\":\"2\""));
    CHECK(strstr(out, "\"ALIYUN_COM_GPU_MEM_ASSIGNED\":\"true\"") != NULL);
    kt_free_string(out);
    CHECK(kt_gpu_device_plugin_allocate("{\"container_requests\":[3],\"devices\":[]}", &out, NULL) == KT_OK);
    CHECK(strstr(out, "\"ok\":false") && strstr(out, "no-gpu-has-3GiB-to-run"));
    kt_free_string(out);
    CHECK(kt_gpu_device_plugin_allocate("{\"container_requests\":[]}", &out, &err) == KT_ERR_INVALID);
    CHECK(err != NULL && strstr(err, "devices") != NULL);
    kt_free_string(err);
    err = NULL;
    CHECK(kt_gpu_device_plugin_allocate(NULL, &out, NULL) == KT_ERR_INVALID);
  }
  printf("gpu C API: ok\n");
  return 0;
}
