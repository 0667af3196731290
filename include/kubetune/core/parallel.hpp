// Thread-count helpers shared by OpenMP loops (every `#pragma omp` carries num_threads(...)).
#pragma once

namespace kubetune::core {

/// Number of hardware threads (>= 1).
int hardware_threads() noexcept;
/// Resolve a user thread count: <= 0 means "all hardware threads"; always >= 1.
int resolve_threads(int requested) noexcept;
/// True when this build uses OpenMP.
bool openmp_enabled() noexcept;

}  // namespace kubetune::core
