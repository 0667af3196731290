// Host emulation of the CUDA runtime API and device built-ins used by kubetune's .cu sources (a test tool).
//
// The .cu files are compiled as ordinary C++ against this header; a build-time text pass
// (tests/cuda_emu/rewrite_launches.cmake) turns every `kernel<<<grid, block[, shared[, stream]]>>>(args)` into
// `kernel * ::kt_emu::launch("kernel", __FILE__, __LINE__, grid, block[, shared[, stream]])(args)`, which runs the
// kernel on the calling host thread (tests/cuda_emu/emu_runtime.cpp).
//
// What it models:
//  * Every block and every thread of a launch, with gridDim/blockDim/blockIdx/threadIdx (1-, 2- or 3-D), and the
//    launch-configuration limits (grid y/z <= 65535, <= 1024 threads per block, <= 48 KiB shared memory):
//    a bad configuration runs nothing and is reported by cudaGetLastError as cudaErrorInvalidConfiguration.
//  * Blocks run one after another. Inside a block the threads run one after another on one fiber until a thread
//    calls __syncthreads, __syncwarp or a warp shuffle; from then on every thread of that block gets its own
//    fiber and the block runs barrier to barrier. A kernel that never synchronises therefore costs one plain
//    call per thread, and no per-kernel marking is needed. kt_emu::set_reverse_order (or the environment
//    variable KT_EMU_REVERSE_ORDER=1) runs blocks and threads last to first, so that a result which depends
//    on the order (a race) changes between the two runs.
//  * Barriers are strict: __syncthreads must be reached by every thread of the block, and a shuffle or
//    __syncwarp by every existing lane named in its mask (same intrinsic, same mask, same width); a shuffle
//    must read a lane that takes part. Anything else (a thread that returned early, lanes at different
//    intrinsics, a deadlock) aborts the process with a message naming the kernel, block and threads.
//  * __shared__ memory is per block and is filled with 0x7f bytes when each block starts; cudaMalloc'd memory
//    is filled with 0x7f bytes (about 3.4e38 as float, so uninitialised reads show up in comparisons), and so
//    is memory released by cudaFree, which stays reserved (up to 64 MiB, oldest first) so that a stale pointer
//    does not land in a new allocation.
//  * Device allocations are tracked: a non-null pointer kernel argument must point into a live allocation
//    (catches host pointers and use after cudaFree), and cudaMemcpy/cudaMemset ranges must lie inside one
//    allocation on the side their kind names (cudaErrorInvalidValue otherwise). kt_emu::set_memory_limit
//    makes cudaMalloc fail with cudaErrorMemoryAllocation past a budget.
//  * atomics, shuffles (idx/up/down/xor with width), __syncthreads_count/and/or, the common float intrinsics.
//
// What it does NOT model:
//  * real scheduling and the memory model: threads of a block run in a fixed order and blocks never overlap,
//    so a missing __syncthreads between a write and another thread's read, a race between blocks, or a
//    non-atomic read-modify-write across blocks usually gives the "right" answer here (the reversed order
//    catches some of these, not all);
//  * floating-point differences of the device: no FMA contraction as nvcc does it, host libm instead of the
//    device math library (rsqrtf, expf, ... are exact-ish host versions), double-precision reference GEMM
//    instead of cuBLAS's algorithms (tiling, split-K order, tensor-core modes);
//  * asynchrony: every call completes before it returns; streams and events are accepted but everything is
//    ordered, errors are reported at the call that caused them (a fault inside a kernel is a host crash at that
//    spot, not a sticky error at a later call), and launch overhead or timing means nothing;
//  * out-of-bounds accesses inside kernels other than through freed or host pointers: build the test with
//    -fsanitize=address for that (the emulator then marks each allocation's rounding tail and freed blocks
//    unaddressable; fibers switch with ucontext, which ASan supports);
//  * device-side compile restrictions (nvcc still has to compile the .cu files: scripts/check_cuda_compile.sh),
//    texture/surface memory, cooperative groups, dynamic parallelism, half precision, and kernels with
//    default arguments (the launch calls the kernel through a function pointer: pass every argument).
#pragma once

#include <math.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kt_cuda_emu.hpp"

// ------------------------------------------------------------------------------------------------ types
// The runtime's error codes that host code tests for (values as in the CUDA runtime), with their messages.
#define KT_EMU_CUDA_ERRORS(X)                                                            \
  X(cudaSuccess, 0, "no error")                                                          \
  X(cudaErrorInvalidValue, 1, "invalid argument")                                        \
  X(cudaErrorMemoryAllocation, 2, "out of memory")                                       \
  X(cudaErrorInitializationError, 3, "initialization error")                             \
  X(cudaErrorCudartUnloading, 4, "driver shutting down")                                 \
  X(cudaErrorInvalidConfiguration, 9, "invalid configuration argument")                  \
  X(cudaErrorInvalidSymbol, 13, "invalid device symbol")                                 \
  X(cudaErrorInvalidHostPointer, 16, "invalid host pointer")                             \
  X(cudaErrorInvalidDevicePointer, 17, "invalid device pointer")                         \
  X(cudaErrorInvalidMemcpyDirection, 21, "invalid copy direction for memcpy")            \
  X(cudaErrorStubLibrary, 34, "CUDA driver is a stub library")                           \
  X(cudaErrorInsufficientDriver, 35, "CUDA driver version is insufficient")              \
  X(cudaErrorCallRequiresNewerDriver, 36, "API call requires a newer CUDA driver")       \
  X(cudaErrorDevicesUnavailable, 46, "CUDA-capable device(s) busy or unavailable")       \
  X(cudaErrorMissingConfiguration, 52, "missing configuration")                          \
  X(cudaErrorPriorLaunchFailure, 53, "a prior launch failed")                            \
  X(cudaErrorInvalidDeviceFunction, 98, "invalid device function")                       \
  X(cudaErrorNoDevice, 100, "no CUDA-capable device is detected")                        \
  X(cudaErrorInvalidDevice, 101, "invalid device ordinal")                               \
  X(cudaErrorDeviceNotLicensed, 102, "device not licensed")                              \
  X(cudaErrorStartupFailure, 127, "startup failure")                                     \
  X(cudaErrorInvalidKernelImage, 200, "device kernel image is invalid")                  \
  X(cudaErrorDeviceUninitialized, 201, "invalid device context")                         \
  X(cudaErrorNoKernelImageForDevice, 209, "no kernel image is available for the device") \
  X(cudaErrorECCUncorrectable, 214, "uncorrectable ECC error")                           \
  X(cudaErrorInvalidPtx, 218, "invalid PTX")                                             \
  X(cudaErrorUnsupportedPtxVersion, 222, "unsupported PTX version")                      \
  X(cudaErrorInvalidResourceHandle, 400, "invalid resource handle")                      \
  X(cudaErrorNotReady, 600, "device not ready")                                          \
  X(cudaErrorIllegalAddress, 700, "an illegal memory access was encountered")            \
  X(cudaErrorLaunchOutOfResources, 701, "too many resources requested for launch")       \
  X(cudaErrorLaunchTimeout, 702, "the launch timed out")                                 \
  X(cudaErrorAssert, 710, "device-side assert triggered")                                \
  X(cudaErrorHardwareStackError, 714, "hardware stack error")                            \
  X(cudaErrorIllegalInstruction, 715, "an illegal instruction was encountered")          \
  X(cudaErrorMisalignedAddress, 716, "misaligned address")                               \
  X(cudaErrorInvalidAddressSpace, 717, "operation not supported on global/shared space") \
  X(cudaErrorInvalidPc, 718, "invalid program counter")                                  \
  X(cudaErrorLaunchFailure, 719, "unspecified launch failure")                           \
  X(cudaErrorNotPermitted, 800, "operation not permitted")                               \
  X(cudaErrorNotSupported, 801, "operation not supported")                               \
  X(cudaErrorSystemNotReady, 802, "system not yet initialized")                          \
  X(cudaErrorSystemDriverMismatch, 803, "system has an unsupported display driver / CUDA driver combination") \
  X(cudaErrorCompatNotSupportedOnDevice, 804, "forward compatibility not supported on this device") \
  X(cudaErrorUnknown, 999, "unknown error")

enum cudaError_t {
#define KT_EMU_ENUM(name, value, text) name = value,
  KT_EMU_CUDA_ERRORS(KT_EMU_ENUM)
#undef KT_EMU_ENUM
};
using cudaError = cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;

struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }

/// The fields of the real struct that host code commonly reads; the emulated device reports sm_90-like limits.
struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int clockRate;
  int multiProcessorCount;
  int major;
  int minor;
};

// ------------------------------------------------------------------------------------------------ runtime API
cudaError_t cudaMalloc(void** ptr, std::size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** ptr, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, std::size_t bytes);
template <class T>
cudaError_t cudaMallocHost(T** ptr, std::size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes);

cudaError_t cudaDeviceSynchronize();
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);

// ------------------------------------------------------------------------------------------------ device side
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
// Static storage in one ELF section, so the runtime can poison all shared memory when a block starts.
#define __shared__ static __attribute__((section("kt_emu_shared")))

extern dim3 gridDim;
extern dim3 blockDim;
extern uint3 blockIdx;
extern uint3 threadIdx;
constexpr int warpSize = 32;

namespace kt_emu {

struct LaunchConfig {
  dim3 grid;
  dim3 block;
  std::size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
  const char* kernel = "kernel";
  const char* file = "";
  int line = 0;
};

namespace detail {
enum class WarpOp { Idx, Up, Down, Xor, Sync };
/// Blocks the calling CUDA thread until every lane in `mask` reaches the same warp operation; for shuffles
/// copies `size` bytes of the source lane's `in` to `out`.
void warp_op(WarpOp op, unsigned mask, const void* in, void* out, int size, int arg, int width);
/// Block barrier; returns the number of threads whose `predicate` was non-zero.
int block_barrier(int predicate);
void* dynamic_shared();
void run_grid(const LaunchConfig& cfg, void (*body)(void*), void* ctx);
void check_kernel_pointer(const LaunchConfig& cfg, std::size_t index, const void* ptr);

template <class T>
T shuffle(WarpOp op, unsigned mask, T value, int arg, int width) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "kt_emu: shuffles move at most 8 bytes");
  T out;
  warp_op(op, mask, &value, &out, static_cast<int>(sizeof(T)), arg, width);
  return out;
}
template <class T>
void check_argument(const LaunchConfig& cfg, std::size_t index, const T& value) {
  if constexpr (std::is_pointer_v<T> && !std::is_function_v<std::remove_pointer_t<T>>)
    check_kernel_pointer(cfg, index, (const void*)value);
}
}  // namespace detail

/// What `extern __shared__ T name[];` is rewritten to: converts to T* and indexes the launch's dynamic shared
/// memory (its size is the launch's third configuration argument).
template <class T>
struct DynamicShared {
  operator T*() const { return static_cast<T*>(detail::dynamic_shared()); }
  T& operator[](std::ptrdiff_t i) const { return static_cast<T*>(detail::dynamic_shared())[i]; }
};

template <class... A>
struct PendingLaunch {
  LaunchConfig cfg;
  std::tuple<A...> args;
};
struct Launcher {
  LaunchConfig cfg;
  template <class... A>
  PendingLaunch<std::decay_t<A>...> operator()(A&&... args) const {
    return {cfg, std::tuple<std::decay_t<A>...>(std::forward<A>(args)...)};
  }
};
/// The rewritten `<<<grid, block, shared, stream>>>`.
inline Launcher launch(const char* kernel, const char* file, int line, dim3 grid, dim3 block,
                       std::size_t shared_bytes = 0, cudaStream_t stream = nullptr) {
  return Launcher{LaunchConfig{grid, block, shared_bytes, stream, kernel, file, line}};
}
/// `kernel * launch(...)(args...)`: copies the arguments once (as a launch does), converts them to the
/// kernel's parameter types for every thread, and runs the grid.
template <class... P, class... A>
void operator*(void (*kernel)(P...), PendingLaunch<A...>&& pending) {
  static_assert(sizeof...(P) == sizeof...(A), "kt_emu: kernel launched with the wrong number of arguments");
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (detail::check_argument(pending.cfg, I, std::get<I>(pending.args)), ...);
  }(std::index_sequence_for<A...>{});
  struct Ctx {
    void (*kernel)(P...);
    std::tuple<A...>* args;
  } ctx{kernel, &pending.args};
  detail::run_grid(
      pending.cfg, [](void* c) { std::apply(static_cast<Ctx*>(c)->kernel, *static_cast<Ctx*>(c)->args); }, &ctx);
}

}  // namespace kt_emu

inline void __syncthreads() { kt_emu::detail::block_barrier(0); }
inline int __syncthreads_count(int predicate) { return kt_emu::detail::block_barrier(predicate != 0); }
inline int __syncthreads_and(int predicate) {
  return kt_emu::detail::block_barrier(predicate != 0) ==
         static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int predicate) { return kt_emu::detail::block_barrier(predicate != 0) > 0; }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  kt_emu::detail::warp_op(kt_emu::detail::WarpOp::Sync, mask, nullptr, nullptr, 0, 0, warpSize);
}
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return kt_emu::detail::shuffle(kt_emu::detail::WarpOp::Idx, mask, var, src_lane, width);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return kt_emu::detail::shuffle(kt_emu::detail::WarpOp::Up, mask, var, static_cast<int>(delta), width);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return kt_emu::detail::shuffle(kt_emu::detail::WarpOp::Down, mask, var, static_cast<int>(delta), width);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return kt_emu::detail::shuffle(kt_emu::detail::WarpOp::Xor, mask, var, lane_mask, width);
}

// Atomics: the emulator runs one CUDA thread at a time, so plain read-modify-writes are atomic.
#define KT_EMU_ATOMIC(name, T, expr) \
  inline T name(T* address, T val) { \
    const T old = *address;          \
    *address = (expr);               \
    return old;                      \
  }
KT_EMU_ATOMIC(atomicAdd, int, old + val)
KT_EMU_ATOMIC(atomicAdd, unsigned, old + val)
KT_EMU_ATOMIC(atomicAdd, unsigned long long, old + val)
KT_EMU_ATOMIC(atomicAdd, float, old + val)
KT_EMU_ATOMIC(atomicAdd, double, old + val)
KT_EMU_ATOMIC(atomicSub, int, old - val)
KT_EMU_ATOMIC(atomicSub, unsigned, old - val)
KT_EMU_ATOMIC(atomicExch, int, val)
KT_EMU_ATOMIC(atomicExch, unsigned, val)
KT_EMU_ATOMIC(atomicExch, unsigned long long, val)
KT_EMU_ATOMIC(atomicExch, float, val)
KT_EMU_ATOMIC(atomicMin, int, val < old ? val : old)
KT_EMU_ATOMIC(atomicMin, unsigned, val < old ? val : old)
KT_EMU_ATOMIC(atomicMin, long long, val < old ? val : old)
KT_EMU_ATOMIC(atomicMax, int, val > old ? val : old)
KT_EMU_ATOMIC(atomicMax, unsigned, val > old ? val : old)
KT_EMU_ATOMIC(atomicMax, long long, val > old ? val : old)
#undef KT_EMU_ATOMIC
inline int atomicCAS(int* address, int compare, int val) {
  const int old = *address;
  if (old == compare) *address = val;
  return old;
}
inline unsigned atomicCAS(unsigned* address, unsigned compare, unsigned val) {
  const unsigned old = *address;
  if (old == compare) *address = val;
  return old;
}
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare, unsigned long long val) {
  const unsigned long long old = *address;
  if (old == compare) *address = val;
  return old;
}

// Device math that the host library lacks (host precision, not the device's ulp bounds).
inline float rsqrtf(float x) { return 1.0f / ::sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return ::expf(x); }
inline float __logf(float x) { return ::logf(x); }
inline float __powf(float x, float y) { return ::powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : (x > 1.f ? 1.f : x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
template <class T>
T __ldg(const T* p) {
  return *p;
}
/// CUDA's min/max overloads (mixed integer types follow the usual arithmetic conversions; floats as fminf/fmaxf).
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>)
    return std::fmin(static_cast<C>(a), static_cast<C>(b));
  else
    return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>)
    return std::fmax(static_cast<C>(a), static_cast<C>(b));
  else
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
