// CPU-only build of the device queries: there is never a CUDA device.
#include "kubetune/core/device.hpp"

namespace kubetune::device {

bool cuda_available() noexcept { return false; }
int cuda_device_count() noexcept { return 0; }
bool built_with_cuda() noexcept { return false; }
std::string cuda_device_name(int) { return {}; }

}  // namespace kubetune::device
