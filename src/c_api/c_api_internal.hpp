// Shared machinery of the C API: the thread-local last error and the API_BEGIN/API_END catch-all.
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <string>

#include <nlohmann/json.hpp>

#include "kubetune/c_api.h"
#include "kubetune/core/error.hpp"

namespace kubetune::capi {

/// Record an error for kt_last_error() and the optional out-parameter; returns `code`.
int set_error(int code, const char* msg, char** err_out) noexcept;
/// Copy a std::string into a malloc'd C string (freed with kt_free_string).
char* dup_string(const std::string& s);

}  // namespace kubetune::capi

// Every exported function body: `KT_API_BEGIN(err_out) ... KT_API_END(err_out)`; returns KT_OK on success.
#define KT_API_BEGIN(err_out) try {
#define KT_API_END(err_out)                                                                    \
  }                                                                                             \
  catch (const ::kubetune::InvalidArgument& e) {                                                \
    return ::kubetune::capi::set_error(KT_ERR_INVALID, e.what(), err_out);                      \
  }                                                                                             \
  catch (const ::kubetune::NotFound& e) {                                                       \
    return ::kubetune::capi::set_error(KT_ERR_NOT_FOUND, e.what(), err_out);                    \
  }                                                                                             \
  catch (const ::kubetune::StateError& e) {                                                     \
    return ::kubetune::capi::set_error(KT_ERR_STATE, e.what(), err_out);                        \
  }                                                                                             \
  catch (const ::kubetune::IoError& e) {                                                        \
    return ::kubetune::capi::set_error(KT_ERR_IO, e.what(), err_out);                           \
  }                                                                                             \
  catch (const ::kubetune::Unsupported& e) {                                                    \
    return ::kubetune::capi::set_error(KT_ERR_UNSUPPORTED, e.what(), err_out);                  \
  }                                                                                             \
  catch (const ::nlohmann::json::exception& e) { /* a JSON shape no explicit check caught */  \
    return ::kubetune::capi::set_error(                                                         \
        KT_ERR_INVALID, (std::string("malformed JSON input: ") + e.what()).c_str(), err_out);   \
  }                                                                                             \
  catch (const std::exception& e) {                                                             \
    return ::kubetune::capi::set_error(KT_ERR_INTERNAL, e.what(), err_out);                     \
  }                                                                                             \
  catch (...) {                                                                                 \
    return ::kubetune::capi::set_error(KT_ERR_INTERNAL, "unknown error", err_out);              \
  }                                                                                             \
  return KT_OK;
