// Thread-count helpers.
#include "kubetune/core/parallel.hpp"

#include <thread>

namespace kubetune::core {

int hardware_threads() noexcept {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int resolve_threads(int requested) noexcept { return requested <= 0 ? hardware_threads() : requested; }

bool openmp_enabled() noexcept {
#ifdef KUBETUNE_HAVE_OPENMP
  return true;
#else
  return false;
#endif
}

}  // namespace kubetune::core
