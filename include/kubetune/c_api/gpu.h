/* kubetune C API: gpu functions. Include <kubetune/c_api.h> rather than this file. */
#ifndef KUBETUNE_C_API_GPU_H
#define KUBETUNE_C_API_GPU_H
#include "kubetune/c_api.h"
#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
