// Deterministic, serialisable random numbers (xoshiro256** seeded by splitmix64); identical on every platform.
#pragma once

#include <array>
#include <string_view>
#include <cstdint>
#include <limits>
#include <cstddef>
#include <utility>

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

  std::uint64_t next_u64() noexcept {  // (inline: samplers draw millions)
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
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
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::array<std::uint64_t, 4> s_{};
};

/// splitmix64 finaliser; also used to derive seeds.
std::uint64_t mix64(std::uint64_t x) noexcept;

/// The golden-ratio increment of splitmix64 (2^64 / phi), the constant of the seed recipes below.
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

/// The one seed-derivation rule: the seed of stream `stream_id` of seed `parent`,
/// mix64(parent) ^ mix64(stream_id * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019). `Rng(parent, stream_id)` seeds
/// itself from exactly this value, so a derived seed and the generator of that stream agree, and distinct
/// (parent, stream_id) pairs give unrelated streams. New code derives seeds only this way (a study's ask k
/// gets `Rng(seed, k)`; a searcher's private stream `Rng(seed, "name as an integer")`). Two older recipes
/// stay, verbatim, because saved studies pin their streams: the GP's `random_state` stream
/// (bayesopt.cpp) and Sobol's scramble key (sobol.cpp).
std::uint64_t derive_seed(std::uint64_t parent, std::uint64_t stream_id) noexcept;

/// mix64(h ^ v): folds the 64-bit value `v` into the running hash `h` (point hashes, learning-curve keys,
/// hashed ids). Not a seed rule: hash first, then seed an `Rng` from the hash if draws are needed.
std::uint64_t hash_combine(std::uint64_t h, std::uint64_t v) noexcept;

/// Fisher-Yates shuffle of [first, last) drawing from `rng`: for i = n-1 down to 1, swap element i with element
/// rng.below(i + 1). The same permutation for a seed with every standard library (std::shuffle's algorithm is
/// implementation-defined); it draws exactly n-1 numbers.
template <class RandomIt>
void shuffle(RandomIt first, RandomIt last, Rng& rng) {
  using std::swap;
  const auto n = static_cast<std::uint64_t>(last - first);
  for (std::uint64_t i = n; i > 1; --i) {
    const std::uint64_t j = rng.below(i);
    if (j != i - 1) swap(first[static_cast<std::ptrdiff_t>(i - 1)], first[static_cast<std::ptrdiff_t>(j)]);
  }
}

/// 64-bit FNV-1a of `s`, continuing from `h` (the FNV offset basis by default): a stable hash of text, the same
/// on every platform (file digests, Katib fingerprints and seeds).
std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = 14695981039346656037ULL) noexcept;

}  // namespace kubetune
