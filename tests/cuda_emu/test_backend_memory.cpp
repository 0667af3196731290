// The nas CUDA backend when device memory runs out, which only the emulator can arrange on demand
// (kt_emu::set_memory_limit): the tensor pool's drop-the-cache retry and the scratch buffers' failed growth.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "fd.hpp"
#include "kt_cuda_emu.hpp"
#include "kubetune/core/device.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/nas/ops.hpp"

using namespace kubetune::nas;

namespace {

/// Lifts the memory limit again however the test ends.
struct MemoryLimit {
  explicit MemoryLimit(std::size_t headroom) { kt_emu::set_memory_limit(kt_emu::stats().bytes_in_use + headroom); }
  ~MemoryLimit() { kt_emu::set_memory_limit(SIZE_MAX); }
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_host(), y = b.to_host();
  EXPECT_EQ(x.size(), y.size());
  double d = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) d = std::max(d, std::abs(double(x[i]) - y[i]));
  return d;
}

}  // namespace

// The twin tests skip without a device: make sure this binary has one (src/core/cuda/device.cu on the emulator,
// not the CPU-only device_nocuda.cpp), so that they cannot silently stop running.
TEST(CudaEmulatorBackend, TheEmulatedDeviceIsVisible) {
  EXPECT_TRUE(kubetune::device::built_with_cuda());
  EXPECT_TRUE(kubetune::device::cuda_available());
  EXPECT_EQ(kubetune::device::cuda_device_count(), 1);
  EXPECT_NE(kubetune::device::cuda_device_name(0).find("emulator"), std::string::npos);
}

TEST(CudaEmulatorBackend, TensorPoolDropsItsCacheWhenDeviceMemoryRunsOut) {
  pool_release_cached(Device::CUDA);
  constexpr int kMiB = 1 << 20;
  { Tensor cached({kMiB / 4}, Device::CUDA); }  // freed into the pool's cache, still allocated on the device
  ASSERT_GE(pool_stats(Device::CUDA).cached, std::size_t{kMiB});
  MemoryLimit limit(kMiB / 2);
  // 1.25 MiB: the cached 1 MiB block is too small and 0.5 MiB of headroom too little, until the cache goes
  Tensor big({5 * kMiB / 16}, Device::CUDA);
  EXPECT_EQ(pool_stats(Device::CUDA).cached, 0u);
  big.fill(2.f);
  EXPECT_EQ(big.to_host()[0], 2.f);
  try {
    Tensor more({5 * kMiB / 16}, Device::CUDA);
    ADD_FAILURE() << "allocated past the device memory limit";
  } catch (const kubetune::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of cuda memory"), std::string::npos) << e.what();
  }
}

TEST(CudaEmulatorBackend, FailedScratchGrowthLeavesNoFreedPointerBehind) {
  std::mt19937_64 rng(8);
  Tensor xs = kt_test::randn({2, 3, 6, 6}, rng), ws = kt_test::randn({4, 3, 3, 3}, rng);
  Tensor xsg = xs.to(Device::CUDA), wsg = ws.to(Device::CUDA);
  const Tensor ref = conv2d_forward(xs, ws, 1, 1);
  EXPECT_LT(max_abs_diff(ref, conv2d_forward(xsg, wsg, 1, 1)), 1e-4);  // the column scratch now exists
  // 8 x 72 x 1024 column floats (2.25 MiB) against 1 MiB of headroom: the output fits, the scratch does not
  Tensor xb = kt_test::randn({8, 8, 32, 32}, rng), wb = kt_test::randn({8, 8, 3, 3}, rng);
  Tensor xbg = xb.to(Device::CUDA), wbg = wb.to(Device::CUDA);
  {
    MemoryLimit limit(1 << 20);
    try {
      conv2d_forward(xbg, wbg, 1, 1);
      ADD_FAILURE() << "a 2.25 MiB scratch buffer fitted into 1 MiB";
    } catch (const kubetune::Error& e) {
      EXPECT_NE(std::string(e.what()).find("scratch"), std::string::npos) << e.what();
    }
  }
  // The old scratch block was released before the failed growth: a kept pointer to it would be rejected at
  // the next launch (the emulator aborts on arguments outside live allocations).
  EXPECT_LT(max_abs_diff(ref, conv2d_forward(xsg, wsg, 1, 1)), 1e-4);
  EXPECT_LT(max_abs_diff(conv2d_forward(xb, wb, 1, 1), conv2d_forward(xbg, wbg, 1, 1)), 1e-3);
}
