/* Fail-fast check for the plain-C99 C API tests: on failure prints the condition and kt_last_error(), returns 1. */
#ifndef KT_TESTS_C_CHECK_H
#define KT_TESTS_C_CHECK_H

#include <stdio.h>

#include "kubetune/c_api.h"

#define CHECK(cond)                                                                                  \
  do {                                                                                               \
    if (!(cond)) {                                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, kt_last_error()); \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

#endif
