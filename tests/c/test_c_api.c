/* The kubetune C API used from plain C99: a study runs end to end, errors come back as codes + messages. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kubetune/c_api.h"

static int failures = 0;
static int checks = 0;
#define CHECK(cond, msg)                                              \
  do {                                                                \
    ++checks;                                                         \
    if (!(cond)) {                                                    \
      ++failures;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, msg, kt_last_error()); \
    }                                                                 \
  } while (0)

/* Reads "x": <number> out of a flat JSON object (enough for this test). */
static double json_number(const char* json, const char* key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char* p = strstr(json, pat);
  return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static double branin(double x, double y) {
  const double pi = 3.14159265358979323846;
  double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
  double a = y - b * x * x + c * x - 6;
  return a * a + 10 * (1 - t) * cos(x) + 10;
}

int main(void) {
  const char* cfg =
      "{\"space\": {\"parameters\": ["
      "{\"name\": \"x\", \"type\": \"double\", \"low\": -5, \"high\": 10},"
      "{\"name\": \"y\", \"type\": \"double\", \"low\": 0, \"high\": 15}]},"
      " \"searcher\": \"random\", \"direction\": \"minimize\", \"seed\": 7}";
  kt_study* st = NULL;
  char* err = NULL;
  CHECK(kt_study_create(cfg, &st, &err) == KT_OK && st != NULL, "create");

  double best = INFINITY;
  for (int i = 0; i < 40; ++i) {
    char* trials = NULL;
    CHECK(kt_study_ask(st, 1, &trials, NULL) == KT_OK, "ask");
    const char* p = strstr(trials, "\"id\":");
    long long id = p ? strtoll(p + 5, NULL, 10) : -1;
    double v = branin(json_number(trials, "x"), json_number(trials, "y"));
    if (v < best) best = v;
    CHECK(kt_study_tell(st, id, v, NULL) == KT_OK, "tell");
    kt_free_string(trials);
  }
  char* bj = NULL;
  CHECK(kt_study_best(st, &bj, NULL) == KT_OK, "best");
  CHECK(fabs(json_number(bj, "value") - best) < 1e-9, "best value matches the minimum told");
  kt_free_string(bj);

  /* Errors: codes and messages, through kt_last_error() and the out-parameter. */
  CHECK(kt_study_tell(st, 12345, 1.0, &err) == KT_ERR_NOT_FOUND, "unknown trial id");
  CHECK(err != NULL && strstr(err, "12345") != NULL, "message names the id");
  kt_free_string(err);
  err = NULL;
  CHECK(strstr(kt_last_error(), "12345") != NULL, "kt_last_error names the id");
  CHECK(kt_study_tell(st, 0, 1.0, NULL) == KT_ERR_STATE, "tell on a finished trial");
  kt_study* bad = NULL;
  CHECK(kt_study_create("{\"space\": {\"parameters\": [{\"name\": \"lr\", \"type\": \"double\", \"low\": 0, "
                        "\"high\": 1, \"distribution\": \"log_uniform\"}]}}",
                        &bad, &err) == KT_ERR_INVALID && bad == NULL,
        "log bound <= 0 rejected");
  CHECK(err != NULL && strstr(err, "lr") != NULL, "message names the parameter");
  kt_free_string(err);
  CHECK(kt_study_create("{not json", &bad, NULL) == KT_ERR_INVALID, "invalid JSON rejected");

  /* NaN objective => failed, never the best. */
  char* trials = NULL;
  CHECK(kt_study_ask(st, 2, &trials, NULL) == KT_OK, "batch ask");
  kt_free_string(trials);
  CHECK(kt_study_tell(st, 40, NAN, NULL) == KT_OK, "NaN accepted as failure");
  CHECK(kt_study_tell_state(st, 41, "pruned", NULL) == KT_OK, "pruned");

  /* Save / load round trip: both continue with the same asks. */
  const char* path = "kt_c_api_test_study.json";
  remove(path); /* a file left by an earlier, interrupted run would (rightly) be refused below */
  CHECK(kt_study_save(st, path, NULL) == KT_OK, "save");
  kt_study* st2 = NULL;
  CHECK(kt_study_load(path, &st2, NULL) == KT_OK, "load");
  int64_t n1 = 0, n2 = 0;
  kt_study_n_trials(st, &n1, NULL);
  kt_study_n_trials(st2, &n2, NULL);
  CHECK(n1 == 42 && n2 == 42, "trial count survives");
  char *a1 = NULL, *a2 = NULL;
  kt_study_ask(st, 3, &a1, NULL);
  kt_study_ask(st2, 3, &a2, NULL);
  CHECK(a1 && a2 && strcmp(a1, a2) == 0, "loaded study asks identically");
  kt_free_string(a1);
  kt_free_string(a2);
  /* Both continued the same file: the first save wins, the second is refused (the file changed since its
   * load) and the file keeps the first writer's trials. */
  CHECK(kt_study_save(st, path, NULL) == KT_OK, "the first writer saves again");
  err = NULL;
  CHECK(kt_study_save(st2, path, &err) == KT_ERR_STATE, "a stale save is refused with KT_ERR_STATE");
  CHECK(err != NULL && strstr(err, path) != NULL && strstr(err, "changed by someone else") != NULL,
        "message names the file and the reason");
  kt_free_string(err);
  kt_study* st3 = NULL;
  CHECK(kt_study_load(path, &st3, NULL) == KT_OK, "reload");
  int64_t n3 = 0;
  kt_study_n_trials(st3, &n3, NULL);
  CHECK(n3 == 45, "the file holds the first writer's trials");
  kt_study_free(st3);
  CHECK(kt_study_load("does-not-exist.json", &st2 == NULL ? NULL : &bad, NULL) == KT_ERR_IO, "missing file");
  kt_study_free(st);
  kt_study_free(st2);
  remove(path);
  { /* the advisory lock file next to the study */
    char lock[64];
    snprintf(lock, sizeof lock, "%s.lock", path);
    remove(lock);
  }

  printf("C API: %d checks, %d failed\n", checks, failures);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
