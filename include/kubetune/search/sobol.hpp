// Scrambled Sobol' low-discrepancy sequence: a standalone generator and a stateless searcher built on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kubetune/core/searcher.hpp"

namespace kubetune::search {

/// Number of dimensions for which direction numbers are compiled in (Joe & Kuo 2008, new-joe-kuo-6.21201).
std::size_t sobol_max_dims() noexcept;

/// Sobol' sequence (I. M. Sobol', USSR Comput. Math. Math. Phys. 7 (1967) 86-112) in Gray-code order
/// (Antonov & Saleev 1979), with the direction numbers of Joe & Kuo, SIAM J. Sci. Comput. 30 (2008)
/// 2635-2654, and 52-bit digits. Point k is the XOR of the direction numbers selected by gray(k) = k ^ (k>>1),
/// so that, unscrambled, point k equals row k of scipy.stats.qmc.Sobol(d, scramble=False).random(k + 1).
///
/// Scrambling (default on): a random linear matrix scramble plus a random digital shift (Matousek,
/// "On the L2-discrepancy for anchored boxes", J. Complexity 14 (1998); Owen, "Variance with alternative
/// scramblings of digital nets", ACM TOMACS 13 (2003)) drawn from `seed`. Both are bijective linear maps on
/// the digits, so every 2^m-point block starting at a multiple of 2^m keeps the (t, m, s)-net property
/// (each dyadic interval of volume 2^(t-m) holds 2^t points; in one dimension every [j/2^m, (j+1)/2^m) holds
/// exactly one). Same (dim, scramble, seed) => same points on every platform. One object per thread (next()
/// moves it); point() is const and safe to share.
class SobolSequence {
 public:
  static constexpr int kBits = 52;
  /// dim in [1, sobol_max_dims()]; throws InvalidArgument otherwise.
  explicit SobolSequence(std::size_t dim, bool scramble = true, std::uint64_t seed = 0);

  std::size_t dim() const noexcept { return dim_; }
  bool scrambled() const noexcept { return scramble_; }
  std::uint64_t seed() const noexcept { return seed_; }
  /// Index of the point the next call to next() returns.
  std::uint64_t index() const noexcept { return index_; }
  /// Jump to point `index` (< 2^52) in O(dim * 52).
  void seek(std::uint64_t index);
  /// Write point index() (dim values in [0, 1)) to out and advance, in O(dim).
  void next(double* out);
  /// Batch: n points, row-major n x dim into out; `dim` must equal dim() (faiss-style pointer API).
  void generate(std::size_t n, std::size_t dim, double* out);
  /// Point `index` without moving the generator.
  void point(std::uint64_t index, double* out) const;

 private:
  std::size_t dim_;
  bool scramble_;
  std::uint64_t seed_;
  std::uint64_t index_ = 0;
  std::vector<std::uint64_t> v_;      // dim x kBits direction integers (scrambled when asked), MSB first
  std::vector<std::uint64_t> shift_;  // digital shift per dimension (0 when unscrambled)
  std::vector<std::uint64_t> state_;  // XOR of the direction numbers of gray(index_), before the shift
};

/// Quasi-random search: trial k gets Sobol' point k mapped through SearchSpace::from_unit (so log scales,
/// steps, integer and categorical parameters and conditions are honoured). Stateless: the index of each point
/// is stored in the trial's system attribute "sobol_index" and the next ask continues at the largest stored
/// index + 1 (running trials included, so batch and parallel asks never reuse an index; enqueued or added
/// trials without the attribute are ignored). Index 0 is used: with scrambling it is an ordinary point
/// (A. B. Owen, "On dropping the first Sobol' point", MCQMC 2020, Springer 2022); `skip` starts later.
/// Config JSON: {"type": "sobol", "seed": 0, "scramble": true, "skip": 0}; Katib's "random_state" is accepted
/// as an alias of seed.
class Sobol final : public Searcher {
 public:
  struct Config {
    std::uint64_t seed = 0;
    bool scramble = true;
    std::uint64_t skip = 0;
  };
  Sobol() = default;
  explicit Sobol(Config c) : cfg_(c) {}
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, range, aliases, doc.
  static nlohmann::json settings_schema();

  std::string type() const override { return "sobol"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;
  void check_space(const SearchSpace& space) const override;
  const Config& settings() const noexcept { return cfg_; }

 private:
  Config cfg_;
};

}  // namespace kubetune::search
