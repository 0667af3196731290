// Registers every built-in searcher and pruner with the core registry (used by Study::load and make_searcher).
#include <mutex>

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/registration.hpp"

namespace kubetune {

void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    search::register_basic_searchers();
    search::register_tpe();
    search::register_gp();
    search::register_multifidelity();
  });
}

}  // namespace kubetune
