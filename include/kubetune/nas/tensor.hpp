// NCHW float32 tensor with explicit device (CPU or CUDA) and a caching memory pool per device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kubetune::nas {

/// Where a tensor's storage lives.
enum class Device { CPU, CUDA };

/// "cpu" / "cuda" (case-insensitive) to Device; throws InvalidArgument naming the value otherwise.
Device parse_device(const std::string& name);
/// "cpu" or "cuda".
const char* device_name(Device d) noexcept;

/// Allocation statistics of one device's pool (bytes).
struct PoolStats {
  std::size_t in_use = 0;   ///< held by live tensors
  std::size_t cached = 0;   ///< freed blocks kept for reuse
  std::size_t peak = 0;     ///< maximum of in_use since start or reset_peak
  std::size_t raw_allocs = 0;  ///< calls that reached malloc / cudaMalloc
};
PoolStats pool_stats(Device d);
/// Return every cached block of device `d` to the system.
void pool_release_cached(Device d);
/// Reset the peak counter of device `d` to the current in-use bytes.
void pool_reset_peak(Device d);

namespace detail {
struct Storage;
}

/// Dense row-major float32 tensor (NCHW for images). Copies share storage (like a handle);
/// clone() makes a deep copy. Storage comes from the device's caching pool.
class Tensor {
 public:
  Tensor() = default;
  /// Uninitialised tensor of `shape` on `device`.
  explicit Tensor(std::vector<int> shape, Device device = Device::CPU);
  static Tensor zeros(std::vector<int> shape, Device device = Device::CPU);
  static Tensor full(std::vector<int> shape, float value, Device device = Device::CPU);
  /// Copy of `data` (host memory, numel(shape) floats) placed on `device`.
  static Tensor from_host(const float* data, std::vector<int> shape, Device device = Device::CPU);

  bool defined() const noexcept { return storage_ != nullptr; }
  const std::vector<int>& shape() const noexcept { return shape_; }
  int dim(int i) const;
  int ndim() const noexcept { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const noexcept { return numel_; }
  Device device() const noexcept { return device_; }
  bool is_cuda() const noexcept { return device_ == Device::CUDA; }

  float* data() noexcept;
  const float* data() const noexcept;

  /// View of `shape` starting `offset` floats into this tensor's storage (shares memory).
  Tensor view(std::int64_t offset, std::vector<int> shape) const;
  /// Same storage, new shape with equal numel.
  Tensor reshape(std::vector<int> shape) const;
  /// Deep copy on `device`.
  Tensor to(Device device) const;
  Tensor clone() const { return to(device_); }
  /// Copies to host memory.
  std::vector<float> to_host() const;
  /// Copy values from `src` (same numel, any device) into this tensor.
  void copy_from(const Tensor& src);
  void fill(float value);
  void zero() { fill(0.0f); }
  std::string shape_str() const;

 private:
  std::shared_ptr<detail::Storage> storage_;
  std::int64_t offset_ = 0;
  std::int64_t numel_ = 0;
  std::vector<int> shape_;
  Device device_ = Device::CPU;
};

/// numel of a shape; throws InvalidArgument on negative extents.
std::int64_t shape_numel(const std::vector<int>& shape);

}  // namespace kubetune::nas
