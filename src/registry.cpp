// Registers every built-in searcher and pruner with the core registry (used by Study::load and make_searcher).
#include <mutex>

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/registration.hpp"

namespace kubetune {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef KT_HAVE_SEARCH
    search::register_basic_searchers();
#endif
#ifdef KT_HAVE_TPE
    search::register_tpe();
#endif
#ifdef KT_HAVE_GP
    search::register_gp();
#endif
#ifdef KT_HAVE_MULTIFIDELITY
    search::register_multifidelity();
#endif
  });
}

}  // namespace kubetune
