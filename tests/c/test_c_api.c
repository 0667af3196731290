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

/* Returns a malloc'd "<prefix><n times '['><n times ']'><suffix>" (the 75k-level document of issue #18). */
static char* nested(const char* prefix, size_t n, const char* suffix) {
  size_t lp = strlen(prefix), ls = strlen(suffix);
  char* s = (char*)malloc(lp + 2 * n + ls + 1);
  if (!s) return NULL;
  memcpy(s, prefix, lp);
  memset(s + lp, '[', n);
  memset(s + lp + n, ']', n);
  memcpy(s + lp + 2 * n, suffix, ls + 1);
  return s;
}

/* Expects `rc` == KT_ERR_INVALID and an error message *err (freed and reset here) that contains `part`. A
 * pointer, since the call that sets *err is an argument of this one (unsequenced with reading it). */
static void expect_invalid(int rc, char** err, const char* part, const char* what) {
  CHECK(rc == KT_ERR_INVALID, what);
  CHECK(*err != NULL && strstr(*err, part) != NULL, what);
  kt_free_string(*err);
  *err = NULL;
}

/* Hostile input (issue #18): deep JSON, malformed shapes, oversized batches; and the multi-objective tell. */
static void hardening_checks(void) {
  const char* space =
      "{\"space\": {\"parameters\": [{\"name\": \"x\", \"type\": \"double\", \"low\": 0, \"high\": 1}]}";
  char cfg[512];
  kt_study* st = NULL;
  char* err = NULL;

  char* deep = nested("", 75000, "");
  expect_invalid(kt_study_create(deep, &st, &err), &err, "nests 75000 levels deep (limit 64)", "deep config");
  CHECK(st == NULL, "no study from a deep config");
  free(deep);
  deep = nested("{\"space\": {\"parameters\": [{\"name\": \"x\", \"type\": \"double\", \"low\": ", 75000,
                ", \"high\": 1}]}}");
  expect_invalid(kt_study_create(deep, &st, &err), &err, "nests", "deep 'low' in config");
  free(deep);

  /* Malformed shapes: KT_ERR_INVALID naming the field, not KT_ERR_INTERNAL with the JSON library's text. */
  snprintf(cfg, sizeof cfg, "%s, \"directions\": \"minimize\"}", space);
  expect_invalid(kt_study_create(cfg, &st, &err), &err, "'directions' must be a list", "directions not a list");
  snprintf(cfg, sizeof cfg, "%s, \"directions\": [1]}", space);
  expect_invalid(kt_study_create(cfg, &st, &err), &err, "'directions' entries must be strings", "direction type");
  snprintf(cfg, sizeof cfg, "%s, \"searcher\": 5}", space);
  expect_invalid(kt_study_create(cfg, &st, &err), &err, "'searcher' must be a type name or an object", "searcher");
  snprintf(cfg, sizeof cfg, "%s, \"sed\": 1}", space);
  expect_invalid(kt_study_create(cfg, &st, &err), &err, "unknown key 'sed'", "unknown study key");
  snprintf(cfg, sizeof cfg, "%s, \"direction\": [\"minimize\", \"maximize\"], \"searcher\": \"{\\\"type\\\": \\\"random\\\"}\"}",
           space);
  CHECK(kt_study_create(cfg, &st, NULL) == KT_OK, "Python's forms: a direction list and a searcher as JSON text");
  kt_study_free(st);
  st = NULL;
  snprintf(cfg, sizeof cfg, "%s, \"seed\": -1}", space);
  expect_invalid(kt_study_create(cfg, &st, &err), &err, "'seed' = -1", "negative seed");
  snprintf(cfg, sizeof cfg, "%s, \"seed\": 1e300}", space);
  expect_invalid(kt_study_create(cfg, &st, &err), &err, "'seed' = 1e+300", "huge seed");
  expect_invalid(kt_study_create("{\"space\": {\"parameters\": [{\"type\": \"double\"}]}}", &st, &err), &err,
                 "'name' is missing", "parameter without a name");
  const char* no_low = "{\"space\": {\"parameters\": [{\"name\": \"x\", \"type\": \"double\", \"high\": 1}]}}";
  expect_invalid(kt_study_create(no_low, &st, &err), &err, "parameter 'x': 'low' is missing", "parameter without low");
  CHECK(st == NULL, "no study from a malformed config");

  /* Two objectives: tell_values completes a trial; a wrong count is refused and leaves it running. */
  snprintf(cfg, sizeof cfg, "%s, \"directions\": [\"minimize\", \"maximize\"], \"seed\": 3}", space);
  CHECK(kt_study_create(cfg, &st, NULL) == KT_OK, "multi-objective create");
  char* trials = NULL;
  CHECK(kt_study_ask(st, 2, &trials, NULL) == KT_OK, "ask two");
  kt_free_string(trials);
  const double two[2] = {0.5, 2.0};
  expect_invalid(kt_study_tell(st, 0, 1.0, &err), &err, "got 1", "single tell on two objectives");
  expect_invalid(kt_study_tell_values(st, 0, two, 3, &err), &err, "n_values = 3 but the study has 2 directions",
                 "wrong value count");
  expect_invalid(kt_study_tell_values(st, 0, NULL, 2, &err), &err, "values must not be NULL", "NULL values");
  CHECK(kt_study_tell_values(st, 0, two, 2, NULL) == KT_OK, "tell two values");
  CHECK(kt_study_tell_values(st, 0, two, 2, NULL) == KT_ERR_STATE, "second tell on a finished trial");
  const double bad[2] = {NAN, 1.0};
  CHECK(kt_study_tell_values(st, 1, bad, 2, NULL) == KT_OK, "NaN among values fails the trial");
  char* doc = NULL;
  CHECK(kt_study_to_json(st, &doc, NULL) == KT_OK, "to_json");
  CHECK(doc && strstr(doc, "\"state\":\"complete\"") && strstr(doc, "\"values\":[0.5,2.0]"), "values recorded");
  CHECK(doc && strstr(doc, "\"state\":\"failed\""), "the NaN trial is failed");
  kt_free_string(doc);

  /* Sizes and enqueue shapes. */
  expect_invalid(kt_study_ask(st, 2147483647, &trials, &err), &err, "limit of 100000", "ask(INT_MAX)");
  int64_t n = 0;
  CHECK(kt_study_n_trials(st, &n, NULL) == KT_OK && n == 2, "a refused ask adds no trials");
  deep = nested("{\"x\": ", 75000, "}");
  expect_invalid(kt_study_enqueue(st, deep, NULL, &err), &err, "nests", "deep enqueue");
  free(deep);
  expect_invalid(kt_study_enqueue(st, "[0.5]", NULL, &err), &err, "params must be a JSON object", "enqueue list");
  expect_invalid(kt_study_enqueue(st, "{\"x\": 18446744073709551615}", NULL, &err), &err,
                 "parameter 'x' = 18446744073709551615: out of range", "2^64-1 is not wrapped to -1");
  expect_invalid(kt_study_enqueue(st, "{\"x\": [1, 2]}", NULL, &err), &err, "parameter 'x': unsupported JSON value",
                 "enqueue value list");
  kt_study_free(st);
  CHECK(kt_study_load("/dev/zero", &st, &err) == KT_ERR_IO && st == NULL, "load /dev/zero is refused");
  CHECK(err != NULL && strstr(err, "not a regular file") != NULL, "and says why");
  kt_free_string(err);
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
  err = NULL;
  CHECK(kt_study_report(st, 40, 1, NAN, &err) == KT_ERR_INVALID, "NaN report rejected");
  CHECK(err != NULL && strstr(err, "must be finite") != NULL, "message says why");
  kt_free_string(err);
  CHECK(kt_study_report(st, 40, 1, INFINITY, NULL) == KT_ERR_INVALID, "infinite report rejected");
  CHECK(kt_study_report(st, 40, 1, 0.5, NULL) == KT_OK, "finite report accepted");
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

  hardening_checks();
  printf("C API: %d checks, %d failed\n", checks, failures);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
