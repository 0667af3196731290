// Test hooks and counters of the CUDA emulator (not part of CUDA); cuda_runtime.h includes this header, and
// tests that only need the hooks can include it alone.
#pragma once

#include <cstddef>

namespace kt_emu {

/// Counters since the process started.
struct Stats {
  long long launches = 0;         ///< kernel launches that ran
  long long parallel_blocks = 0;  ///< blocks that needed one fiber per thread (they synchronised)
  long long blas_calls = 0;       ///< cuBLAS GEMM calls
  long long mallocs = 0, frees = 0;
  long long host_syncs = 0;  ///< calls that would block the host on a GPU (D2H copies, cudaFree, synchronise)
  std::size_t bytes_in_use = 0;  ///< device bytes allocated now (cudaMalloc minus cudaFree)
};
Stats stats();
/// Runs the blocks of every launch, and the threads of every block, last to first (default: first to last, or
/// last to first when the environment variable KT_EMU_REVERSE_ORDER is set to anything but 0). A kernel whose
/// result depends on that order has a race (between blocks, or between threads without a barrier).
void set_reverse_order(bool reverse);
bool reverse_order();
/// cudaMalloc fails with cudaErrorMemoryAllocation once `bytes` would be exceeded (SIZE_MAX: no limit).
void set_memory_limit(std::size_t bytes);
/// True when [ptr, ptr + bytes) lies inside one live cudaMalloc allocation.
bool is_device_range(const void* ptr, std::size_t bytes);
/// Counts a cuBLAS call (used by the fake cuBLAS).
void note_blas_call();
/// Prints "kt_emu: " and the message to stderr and aborts (a misuse the emulator cannot continue past).
[[noreturn]] __attribute__((format(printf, 1, 2))) void fatal(const char* fmt, ...);

}  // namespace kt_emu
