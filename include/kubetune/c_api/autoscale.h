/* kubetune C API: autoscale functions. Include <kubetune/c_api.h> rather than this file. */
#ifndef KUBETUNE_C_API_AUTOSCALE_H
#define KUBETUNE_C_API_AUTOSCALE_H
#include "kubetune/c_api.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
