// Runtime CUDA device queries; "no GPU" and "no driver" are answers (false / 0), never errors.
#pragma once

#include <string>

namespace kubetune::device {

/// True when this build has CUDA support and at least one usable GPU is present.
bool cuda_available() noexcept;
/// Number of usable CUDA devices (0 without CUDA support, driver or GPU).
int cuda_device_count() noexcept;
/// True when the library was compiled with KUBETUNE_ENABLE_CUDA.
bool built_with_cuda() noexcept;
/// Human-readable name of device `index` ("" when unavailable).
std::string cuda_device_name(int index);

}  // namespace kubetune::device
