// Deterministic, serialisable random numbers (xoshiro256** seeded by splitmix64); identical on every platform.
#pragma once

#include <array>
#include <string_view>
#include <cstdint>
#include <limits>

namespace kubetune {

/// xoshiro256** (Blackman & Vigna 2018). Own distributions (not <random>'s) so that a seed gives the same
/// stream with every standard library. `Rng(seed, stream)` gives independent streams for one seed.
class Rng {
 public:
  using result_type = std::uint64_t;
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0) noexcept;

  std::uint64_t operator()() noexcept { return next_u64(); }
  static constexpr std::uint64_t min() noexcept { return 0; }
  static constexpr std::uint64_t max() noexcept { return std::numeric_limits<std::uint64_t>::max(); }

  std::uint64_t next_u64() noexcept;
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept;
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  /// Standard normal (Marsaglia polar method; keeps no cached spare, so the state is just 4 words).
  double normal() noexcept;
  /// Unbiased integer in [0, n) (Lemire's method); n must be > 0.
  std::uint64_t below(std::uint64_t n) noexcept;
  /// Integer in [lo, hi] inclusive.
  std::int64_t integer(std::int64_t lo, std::int64_t hi) noexcept;

  std::array<std::uint64_t, 4> state() const noexcept { return s_; }
  void set_state(const std::array<std::uint64_t, 4>& s) noexcept { s_ = s; }

 private:
  std::array<std::uint64_t, 4> s_{};
};

/// splitmix64 finaliser; also used to derive seeds.
std::uint64_t mix64(std::uint64_t x) noexcept;

/// 64-bit FNV-1a of `s`, continuing from `h` (the FNV offset basis by default): a stable hash of text, the same
/// on every platform (file digests, Katib fingerprints and seeds).
std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = 14695981039346656037ULL) noexcept;

}  // namespace kubetune
