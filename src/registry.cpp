// Registers every built module's searchers and pruners with the core registry (used by Study::load and
// make_searcher). The calls are the REGISTER functions of the kubetune_module() declarations in this build,
// written by CMake into kt_registry_modules.inc (cmake/modules.cmake).
#include <mutex>

#include "kubetune/core/searcher.hpp"

#include "kt_registry_modules.inc"

namespace kubetune {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { detail::register_modules(); });
}

}  // namespace kubetune
