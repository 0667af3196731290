// C API basics: last-error storage, string ownership, version.
#include <cstdlib>

#include "c_api_internal.hpp"

namespace {
thread_local std::string g_last_error;
}

namespace kubetune::capi {

int set_error(int code, const char* msg, char** err_out) noexcept {
  try {
    g_last_error = msg ? msg : "";
    if (err_out) *err_out = dup_string(g_last_error);
  } catch (...) {
  }
  return code;
}

char* dup_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace kubetune::capi

extern "C" {
KT_API const char* kt_last_error(void) { return g_last_error.c_str(); }
KT_API void kt_free_string(char* s) { std::free(s); }
KT_API const char* kt_version(void) { return "0.1.0"; }
}
