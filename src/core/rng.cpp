// xoshiro256** generator and its distributions.
#include "kubetune/core/rng.hpp"

#include <cmath>

namespace kubetune {

std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t derive_seed(std::uint64_t parent, std::uint64_t stream_id) noexcept {
  return mix64(parent) ^ mix64(stream_id * 0xD1B54A32D192ED03ULL + 0x632BE59BD9B4E019ULL);
}

std::uint64_t hash_combine(std::uint64_t h, std::uint64_t v) noexcept { return mix64(h ^ v); }

Rng::Rng(std::uint64_t seed, std::uint64_t stream) noexcept {
  std::uint64_t x = derive_seed(seed, stream);
  for (auto& w : s_) {
    x += 0x9E3779B97F4A7C15ULL;
    w = mix64(x);
  }
  if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) s_[0] = 1;
}

double Rng::normal() noexcept {
  for (;;) {
    double u = 2.0 * uniform() - 1.0;
    double v = 2.0 * uniform() - 1.0;
    double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

std::uint64_t Rng::below(std::uint64_t n) noexcept {
  if (n <= 1) return 0;
  __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
  auto lo = static_cast<std::uint64_t>(m);
  if (lo < n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (lo < threshold) {
      m = static_cast<__uint128_t>(next_u64()) * n;
      lo = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

std::int64_t Rng::integer(std::int64_t lo, std::int64_t hi) noexcept {
  if (hi <= lo) return lo;
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

std::uint64_t fnv1a64(std::string_view s, std::uint64_t h) noexcept {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;  // FNV 64-bit prime
  }
  return h;
}

}  // namespace kubetune
