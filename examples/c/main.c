/* Minimal C use of kubetune through libkubetune.so: create a study, ask, tell, print the best. */
#include <stdio.h>

#include <kubetune/c_api.h>

int main(void) {
  kt_study* st = NULL;
  char* err = NULL;
  if (kt_study_create("{\"space\": {\"parameters\": [{\"name\": \"lr\", \"type\": \"double\", \"low\": 1e-5,"
                      " \"high\": 1, \"distribution\": \"log_uniform\"}]}, \"seed\": 1}",
                      &st, &err) != KT_OK) {
    fprintf(stderr, "error: %s\n", err);
    kt_free_string(err);
    return 1;
  }
  for (int i = 0; i < 5; ++i) {
    char* trials = NULL;
    kt_study_ask(st, 1, &trials, NULL);
    printf("asked %s\n", trials);
    kt_free_string(trials);
    kt_study_tell(st, i, (double)i, NULL);
  }
  char* best = NULL;
  kt_study_best(st, &best, NULL);
  printf("best %s\n", best);
  kt_free_string(best);
  kt_study_free(st);
  return 0;
}
