/* kubetune C API: GPU allocator (gpushare / spread / FGD / kubetune policies, MIG, NVLink, gangs, extender JSON).
 * Include <kubetune/c_api.h> rather than this file. All JSON in and out; strings out are freed with
 * kt_free_string. */
#ifndef KUBETUNE_C_API_GPU_H
#define KUBETUNE_C_API_GPU_H
#include "kubetune/c_api.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kt_gpu_allocator kt_gpu_allocator;

/* cluster_json: {"nodes":[{"name","cpu_milli","memory_mib","gpus","gpu_memory_mib","model","mig",
 *                          "nvlink_islands" | "links":[[a,b,"nvlink"],...]}]}
 * options_json (may be NULL): {"policy": "best_fit"|"gpushare"|"spread"|"fgd"|"kubetune", "indexed": true,
 *   "seed": 0, "kube_semantics": false, "gpu_mem_unit_mib": 1024,
 *   "workload": [request, ...]   (typical tasks for fgd / kubetune; required by them)} */
KT_API int kt_gpu_allocator_create(const char* cluster_json, const char* options_json, kt_gpu_allocator** out,
                                   char** err_out);
KT_API void kt_gpu_allocator_free(kt_gpu_allocator* a);

/* request_json: {"name","cpu_milli","memory_mib","gpu_count","gpu_milli","gpu_memory_mib","compute_milli",
 * "models":[...],"mig_profile","gang"}. *placement_json_out receives {"placed":true, "id",...,"node_name"} or
 * {"placed":false}. node >= 0 places on that node only (a bind); -1 lets the policy choose. */
KT_API int kt_gpu_place(kt_gpu_allocator* a, const char* request_json, int node, char** placement_json_out,
                        char** err_out);
/* members_json: [request, ...]; preference: "pack" | "spread" | "none" (NULL = "pack"). All or nothing:
 * {"placed":true,"placements":[...]} or {"placed":false}. */
KT_API int kt_gpu_place_gang(kt_gpu_allocator* a, const char* members_json, const char* preference,
                             char** result_json_out, char** err_out);
/* KT_ERR_NOT_FOUND for an unknown id. */
KT_API int kt_gpu_release(kt_gpu_allocator* a, uint64_t placement_id, char** err_out);
/* {"gpu_milli_capacity","gpu_milli_allocated","cpu_milli_allocated","placements","fully_free_gpus"} */
KT_API int kt_gpu_stats(const kt_gpu_allocator* a, char** stats_json_out, char** err_out);
/* Recomputes usage from the placements; KT_ERR_STATE (with the node/GPU named) on any mismatch. */
KT_API int kt_gpu_check_invariants(const kt_gpu_allocator* a, char** err_out);

/* Kubernetes scheduler-extender verbs over this allocator: body in, response JSON out.
 * verb: "filter" | "prioritize" | "bind" | "release". */
KT_API int kt_gpu_extender(kt_gpu_allocator* a, const char* verb, const char* body_json, char** response_json_out,
                           char** err_out);

#ifdef __cplusplus
}
#endif
#endif
