/* kubetune C API: studies (ask / tell / report / prune / save / load). Include <kubetune/c_api.h>. */
#ifndef KUBETUNE_C_API_STUDY_H
#define KUBETUNE_C_API_STUDY_H
#include "kubetune/c_api.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kt_study kt_study; /* opaque; thread-safe; free with kt_study_free */

/* Every JSON text given to these functions may nest at most 64 levels deep (KT_ERR_INVALID beyond).
 * Create a study from JSON (read by kubetune::Study::from_config, as Python's kt.Study is):
 *   {"space": {"parameters": [...]}            kubetune format (or "katib_parameters": [Katib list], not both),
 *    "searcher": {"type": "random", ...},      or a type name string, or that object as JSON text; default random,
 *    "direction": "minimize" | "maximize",     or a list of them; or "directions": [...] (not both),
 *    "seed": 0, "pruner": {"type": ...}}       seed: an integer in [0, 2^64); pruner: object or type name
 * Malformed shapes and unknown keys return KT_ERR_INVALID with a message naming the field.    */
KT_API int kt_study_create(const char* config_json, kt_study** out, char** err_out);
KT_API void kt_study_free(kt_study* study);
/* Ask up to n trials, 1 <= n <= 100000; *trials_json = [{"id": 0, "params": {"x": 1.5, ...}}, ...]
 * (fewer => exhausted). */
KT_API int kt_study_ask(kt_study* study, int n, char** trials_json, char** err_out);
/* Record an objective value (NaN/inf records the trial as failed). */
KT_API int kt_study_tell(kt_study* study, int64_t trial_id, double value, char** err_out);
/* Multi-objective tell: values[0..n_values) in the order of the study's "directions"; n_values must equal
 * their number (KT_ERR_INVALID otherwise, the trial left running). Any NaN/inf records the trial as failed. */
KT_API int kt_study_tell_values(kt_study* study, int64_t trial_id, const double* values, size_t n_values,
                                char** err_out);
/* Finish a trial as "failed" or "pruned". */
KT_API int kt_study_tell_state(kt_study* study, int64_t trial_id, const char* state, char** err_out);
/* An intermediate value of a running trial; NaN and infinities are KT_ERR_INVALID. */
KT_API int kt_study_report(kt_study* study, int64_t trial_id, int64_t step, double value, char** err_out);
KT_API int kt_study_should_prune(kt_study* study, int64_t trial_id, int* prune_out, char** err_out);
/* Warm start: the next ask returns this assignment ({"x": 1.0, "c": "a"}). */
KT_API int kt_study_enqueue(kt_study* study, const char* params_json, int64_t* trial_id_out, char** err_out);
/* *best_json = {"id":..,"params":{..},"value":..} or "null" when no trial is complete. */
KT_API int kt_study_best(kt_study* study, char** best_json, char** err_out);
/* *json = the whole study (same document as the saved file). */
KT_API int kt_study_to_json(kt_study* study, char** json, char** err_out);
KT_API int kt_study_n_trials(kt_study* study, int64_t* n_out, char** err_out);
/* Atomic save under an advisory lock on "<path>.lock". KT_ERR_STATE (the file left as it is) when the file
 * holds a study this handle did not load or save, or changed since this handle loaded or last saved it
 * (another process saved there): load it again, or remove the file to replace it. One process per file. */
KT_API int kt_study_save(kt_study* study, const char* path, char** err_out);
/* KT_ERR_IO for a missing file, KT_ERR_INVALID for a truncated or corrupt one (never modified). */
KT_API int kt_study_load(const char* path, kt_study** out, char** err_out);

#ifdef __cplusplus
}
#endif
#endif
