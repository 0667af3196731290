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

/* cluster_json: {"nodes":[{"name","cpu_milli","memory_mib","gpus","gpu_memory_mib","gpu_memory_total_mib",
 *                          "gpu_memory_unit_mib","model","mig",
 *                          "nvlink_islands" | "links":[[a,b,"nvlink"],...]}]}
 * options_json (may be NULL): kubetune::sched::gpu::AllocatorConfig's keys, read by
 *   allocator_and_extender_from_json: {"policy": "best_fit"|"gpushare"|"spread"|"fgd"|"kubetune", "indexed": true,
 *   "seed": 0, "kube_semantics": false, "popularity": 0.95, "gpu_weighted_typical": true,
 *   "workload": [request, ...]   (typical tasks for fgd / kubetune; required non-empty by them, ignored by others),
 *   and the extender's "gpu_mem_unit_mib": 1024, "pending_ttl_s": 300, "max_pending": 100000,
 *   "assume_grace_s": 60, "max_body_bytes": 67108864}. An unknown key or a wrong type is KT_ERR_INVALID naming it.
 * gpu_memory_total_mib: gpushare's node total (aliyun.com/gpu-mem); with gpu_memory_mib 0 the per-GPU memory is
 * floor(total / unit / gpus) * unit (unit = gpu_memory_unit_mib, 1024 for GiB), as gpushare divides it.
 * A MIG node's model must have a MIG table (A100-40GB, A100-80GB, H100-80GB, H100-94GB and aliases). */
KT_API int kt_gpu_allocator_create(const char* cluster_json, const char* options_json, kt_gpu_allocator** out,
                                   char** err_out);
KT_API void kt_gpu_allocator_free(kt_gpu_allocator* a);

/* request_json: {"name","cpu_milli","memory_mib","gpu_count","gpu_milli","gpu_memory_mib","compute_milli",
 * "models":[...],"mig_profile","gang"}. *placement_json_out receives {"placed":true, "id",...,"node_name"} or
 * {"placed":false}. node >= 0 places on that node only (a bind); -1 lets the policy choose; any other negative
 * value is KT_ERR_INVALID. */
KT_API int kt_gpu_place(kt_gpu_allocator* a, const char* request_json, int node, char** placement_json_out,
                        char** err_out);
/* members_json: [request, ...]; preference: "pack" | "spread" | "none" (NULL = "pack"). All or nothing:
 * {"placed":true,"placements":[...]} or {"placed":false}. */
KT_API int kt_gpu_place_gang(kt_gpu_allocator* a, const char* members_json, const char* preference,
                             char** result_json_out, char** err_out);
/* KT_ERR_NOT_FOUND for an unknown id. */
KT_API int kt_gpu_release(kt_gpu_allocator* a, uint64_t placement_id, char** err_out);
/* {"gpu_milli_capacity","gpu_milli_allocated","cpu_milli_allocated","placements","fully_free_gpus",
 *  "unhealthy_gpus","placements_on_unhealthy"} (capacity and allocation count healthy GPUs only) */
KT_API int kt_gpu_stats(const kt_gpu_allocator* a, char** stats_json_out, char** err_out);
/* Recomputes usage from the placements; KT_ERR_STATE (with the node/GPU named) on any mismatch. */
KT_API int kt_gpu_check_invariants(const kt_gpu_allocator* a, char** err_out);

/* Marks GPU `gpu` of node `node_name` healthy (healthy != 0) or unhealthy. *placements_json_out (may be NULL)
 * receives the placements using that GPU, [{"id",...,"node_name"}, ...], so a controller can evict them. An
 * unhealthy GPU takes no new placement and leaves the capacity measures; placements on it stay releasable.
 * KT_ERR_NOT_FOUND for an unknown node, KT_ERR_INVALID for a GPU index out of range. */
KT_API int kt_gpu_set_gpu_health(kt_gpu_allocator* a, const char* node_name, int gpu, int healthy,
                                 char** placements_json_out, char** err_out);
/* {"gpus":[{"node","node_name","gpu"}, ...], "placements":[placements using an unhealthy GPU]} */
KT_API int kt_gpu_unhealthy(const kt_gpu_allocator* a, char** json_out, char** err_out);

/* gpushare device plugin's Allocate decision (no allocator needed). request_json:
 * {"container_requests": [units | [fake device IDs], ...], "pods": [v1.Pod | {"name","namespace","uid",
 *  "annotations":{...},"gpu_mem"}], "devices": [{"uuid","index"}], "gpu_memory_per_device": units,
 *  "memory_unit": "GiB"|"MiB", "disable_cgpu_isolation": false, "now_ns": 0}
 * -> {"ok","path":"assumed_pod"|"single_device"|"error","error","pod_index","pod","gpu_index","device_uuid",
 *     "pod_request","container_envs":[{NVIDIA_VISIBLE_DEVICES, ALIYUN_COM_GPU_MEM_IDX, _POD, _CONTAINER, _DEV}],
 *     "pod_patch":{ALIYUN_COM_GPU_MEM_ASSIGNED, ALIYUN_COM_GPU_MEM_ASSUME_TIME}}
 * A gpushare refusal is a result ("ok": false, with gpushare's error environment); KT_ERR_INVALID is for
 * malformed input. */
KT_API int kt_gpu_device_plugin_allocate(const char* request_json, char** response_json_out, char** err_out);

/* kube-scheduler's extender v1 verbs over this allocator: body in, response JSON out.
 * verb: "filter" | "prioritize" | "bind" | "preempt" | "release". A body the verb cannot read (not JSON, wrong
 * types, too deep, too large) is KT_ERR_INVALID with the reason; a refusal (no fit, conflict) is the response's
 * "Error" field, as kube-scheduler reads it. */
KT_API int kt_gpu_extender(kt_gpu_allocator* a, const char* verb, const char* body_json, char** response_json_out,
                           char** err_out);

#ifdef __cplusplus
}
#endif
#endif
