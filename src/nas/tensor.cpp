// Tensor storage and the per-device caching pools (CPU: aligned malloc; CUDA: cudaMalloc via cuda_backend).
#include "kubetune/nas/tensor.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "cuda_backend.hpp"
#include "kubetune/core/error.hpp"

namespace kubetune::nas {

Device parse_device(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "cpu") return Device::CPU;
  if (s == "cuda" || s == "gpu" || s == "cuda:0") return Device::CUDA;
  KT_THROW(InvalidArgument, "param 'device' = '", name, "' must be 'cpu' or 'cuda'");
}

const char* device_name(Device d) noexcept { return d == Device::CUDA ? "cuda" : "cpu"; }

std::int64_t shape_numel(const std::vector<int>& shape) {
  std::int64_t n = 1;
  for (int s : shape) {
    KT_CHECK(s >= 0, InvalidArgument, "tensor shape has a negative extent ", s);
    n *= s;
  }
  return n;
}

namespace {

/// Caching allocator: freed blocks are kept in a size-ordered free list and reused for requests of
/// at most twice their size (the idea of PyTorch's caching allocator, much simplified).
class Pool {
 public:
  explicit Pool(Device d) : device_(d) {}
  ~Pool() { release_cached(); }
  void* alloc(std::size_t& bytes) {
    bytes = round(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes) {
      void* p = it->second;
      bytes = it->first;
      free_.erase(it);
      stats_.cached -= bytes;
      note_use(bytes);
      return p;
    }
    void* p = raw_alloc(bytes);
    if (p == nullptr) {  // out of memory: drop the cache and retry once
      release_cached_locked();
      p = raw_alloc(bytes);
      KT_CHECK(p != nullptr, Error, "nas: out of ", device_name(device_), " memory allocating ", bytes, " bytes");
    }
    ++stats_.raw_allocs;
    note_use(bytes);
    return p;
  }
  void free(void* p, std::size_t bytes) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace(bytes, p);
    stats_.in_use -= bytes;
    stats_.cached += bytes;
  }
  void release_cached() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }
  PoolStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak = stats_.in_use;
  }

 private:
  static std::size_t round(std::size_t b) {
    if (b < 512) return 512;
    return (b + 511) / 512 * 512;
  }
  void note_use(std::size_t bytes) {
    stats_.in_use += bytes;
    stats_.peak = std::max(stats_.peak, stats_.in_use);
  }
  void* raw_alloc(std::size_t bytes) {
    if (device_ == Device::CPU) return std::aligned_alloc(64, bytes);
    return cuda::raw_alloc(bytes);
  }
  void raw_free(void* p) noexcept {
    if (device_ == Device::CPU)
      std::free(p);
    else
      cuda::raw_free(p);
  }
  void release_cached_locked() noexcept {
    for (auto& [b, p] : free_) raw_free(p);
    free_.clear();
    stats_.cached = 0;
  }
  Device device_;
  std::mutex mu_;
  std::multimap<std::size_t, void*> free_;
  PoolStats stats_;
};

Pool& pool(Device d) {
  // Leaked on purpose: tensors held by static objects may be freed after main returns.
  static Pool* cpu = new Pool(Device::CPU);
  static Pool* gpu = new Pool(Device::CUDA);
  return d == Device::CPU ? *cpu : *gpu;
}

}  // namespace

namespace detail {
struct Storage {
  Storage(Device d, std::size_t bytes) : device(d), bytes(bytes) { ptr = pool(d).alloc(this->bytes); }
  ~Storage() { pool(device).free(ptr, bytes); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Device device;
  std::size_t bytes;
  void* ptr = nullptr;
};
}  // namespace detail

PoolStats pool_stats(Device d) { return pool(d).stats(); }
void pool_release_cached(Device d) { pool(d).release_cached(); }
void pool_reset_peak(Device d) { pool(d).reset_peak(); }

Tensor::Tensor(std::vector<int> shape, Device device)
    : numel_(shape_numel(shape)), shape_(std::move(shape)), device_(device) {
  storage_ = std::make_shared<detail::Storage>(device, static_cast<std::size_t>(std::max<std::int64_t>(numel_, 1)) *
                                                           sizeof(float));
}

Tensor Tensor::zeros(std::vector<int> shape, Device device) { return full(std::move(shape), 0.0f, device); }

Tensor Tensor::full(std::vector<int> shape, float value, Device device) {
  Tensor t(std::move(shape), device);
  t.fill(value);
  return t;
}

Tensor Tensor::from_host(const float* data, std::vector<int> shape, Device device) {
  Tensor t(std::move(shape), device);
  if (t.numel_ == 0) return t;
  if (device == Device::CPU)
    std::memcpy(t.data(), data, t.numel_ * sizeof(float));
  else
    cuda::memcpy(t.data(), data, t.numel_ * sizeof(float), cuda::Copy::HostToDevice);
  return t;
}

int Tensor::dim(int i) const {
  KT_CHECK(i >= 0 && i < ndim(), InvalidArgument, "tensor dim ", i, " out of range for shape ", shape_str());
  return shape_[i];
}

float* Tensor::data() noexcept {
  return storage_ ? static_cast<float*>(storage_->ptr) + offset_ : nullptr;
}
const float* Tensor::data() const noexcept {
  return storage_ ? static_cast<const float*>(storage_->ptr) + offset_ : nullptr;
}

Tensor Tensor::view(std::int64_t offset, std::vector<int> shape) const {
  KT_CHECK(defined(), StateError, "view of an undefined tensor");
  std::int64_t n = shape_numel(shape);
  std::int64_t cap = static_cast<std::int64_t>(storage_->bytes / sizeof(float)) - offset_;
  KT_CHECK(offset >= 0 && offset + n <= cap, InvalidArgument, "view [", offset, ", ", offset + n,
           ") exceeds storage of ", cap, " floats");
  Tensor t = *this;
  t.offset_ = offset_ + offset;
  t.numel_ = n;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::reshape(std::vector<int> shape) const {
  KT_CHECK(shape_numel(shape) == numel_, InvalidArgument, "reshape from ", shape_str(), " changes numel");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::to(Device device) const {
  Tensor t(shape_, device);
  t.copy_from(*this);
  return t;
}

std::vector<float> Tensor::to_host() const {
  std::vector<float> out(static_cast<std::size_t>(numel_));
  if (numel_ == 0) return out;
  if (device_ == Device::CPU)
    std::memcpy(out.data(), data(), numel_ * sizeof(float));
  else
    cuda::memcpy(out.data(), data(), numel_ * sizeof(float), cuda::Copy::DeviceToHost);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  KT_CHECK(src.numel_ == numel_, InvalidArgument, "copy_from: numel ", src.numel_, " != ", numel_);
  if (numel_ == 0) return;
  std::size_t bytes = numel_ * sizeof(float);
  if (device_ == Device::CPU && src.device_ == Device::CPU)
    std::memcpy(data(), src.data(), bytes);
  else if (device_ == Device::CUDA && src.device_ == Device::CPU)
    cuda::memcpy(data(), src.data(), bytes, cuda::Copy::HostToDevice);
  else if (device_ == Device::CPU && src.device_ == Device::CUDA)
    cuda::memcpy(data(), src.data(), bytes, cuda::Copy::DeviceToHost);
  else
    cuda::memcpy(data(), src.data(), bytes, cuda::Copy::DeviceToDevice);
}

void Tensor::fill(float value) {
  if (numel_ == 0) return;
  if (device_ == Device::CPU)
    std::fill(data(), data() + numel_, value);
  else
    cuda::fill(data(), numel_, value);
}

std::string Tensor::shape_str() const {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < shape_.size(); ++i) os << (i ? ", " : "") << shape_[i];
  os << ']';
  return os.str();
}

}  // namespace kubetune::nas
