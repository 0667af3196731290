// Included first by the GP translation units. Our loops are parallel over candidates; Eigen's own OpenMP GEMM
// threads would oversubscribe (and are slow on shared cores), so these translation units use single-threaded
// Eigen products. Also set project-wide (CMake) so every TU agrees; this guard keeps a TU right on its own.
#pragma once

#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE 1
#endif
