/* kubetune C API (C99): opaque handles, 0 / negative return codes, messages via kt_last_error() or an
 * optional out-parameter (safe for cgo callers whose goroutine may change OS threads). Configuration and
 * results travel as JSON strings; strings returned to the caller are freed with kt_free_string(). */
#ifndef KUBETUNE_C_API_H
#define KUBETUNE_C_API_H

#include <stddef.h>
#include <stdint.h>

#if defined(KUBETUNE_C_BUILD)
#define KT_API __attribute__((visibility("default")))
#else
#define KT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define KT_OK 0
#define KT_ERR_INVALID -1     /* bad argument or configuration */
#define KT_ERR_NOT_FOUND -2   /* unknown id or name */
#define KT_ERR_STATE -3       /* not allowed in the current state */
#define KT_ERR_IO -4          /* file could not be read or written */
#define KT_ERR_UNSUPPORTED -5 /* feature not built in (e.g. CUDA) */
#define KT_ERR_INTERNAL -9    /* any other failure */

/* Message of the last failed call on this thread ("" if none). Valid until the next failing call. */
KT_API const char* kt_last_error(void);
/* Frees a string that a kt_* function returned through a char** out-parameter. */
KT_API void kt_free_string(char* s);
/* Library version, e.g. "0.1.0". */
KT_API const char* kt_version(void);

#ifdef __cplusplus
}
#endif

/* Module APIs. */
#include "kubetune/c_api/study.h"
#include "kubetune/c_api/autoscale.h"
#include "kubetune/c_api/gpu.h"

#endif /* KUBETUNE_C_API_H */
