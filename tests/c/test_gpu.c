/* Plain-C99 test of the gpu C API: gpushare placement, gang all-or-nothing, release, invariants, extender verbs. */
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
  printf("gpu C API: ok\n");
  return 0;
}
