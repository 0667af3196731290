// Registers every built module's searchers and pruners with the core registry (used by Study::load and
// make_searcher). The calls are the REGISTER functions of the kubetune_module() declarations in this build,
// written by CMake into kt_registry_modules.inc (cmake/modules.cmake).
#include <mutex>

#include "kubetune/core/searcher.hpp"

#ifdef KT_GENERATED_REGISTRY
#include "kt_registry_modules.inc"
#else
// Compiled without CMake's list (scripts/fuzz.sh builds core and the basic searchers by hand, -DKT_HAVE_SEARCH=1).
#include "kubetune/search/registration.hpp"
namespace kubetune::detail {
inline void register_modules() {
#ifdef KT_HAVE_SEARCH
  search::register_basic_searchers();
#endif
}
}  // namespace kubetune::detail
#endif

namespace kubetune {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { detail::register_modules(); });
}

}  // namespace kubetune
