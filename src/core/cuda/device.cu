// CUDA build of the device queries: errors from the runtime (no driver, no GPU) mean 0 devices.
#include <cuda_runtime.h>

#include "kubetune/core/device.hpp"

namespace kubetune::device {

int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return 0;
  }
  return n;
}
bool cuda_available() noexcept { return cuda_device_count() > 0; }
bool built_with_cuda() noexcept { return true; }
std::string cuda_device_name(int index) {
  cudaDeviceProp prop{};
  if (index < 0 || index >= cuda_device_count()) return {};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return {};
  return prop.name;
}

}  // namespace kubetune::device
