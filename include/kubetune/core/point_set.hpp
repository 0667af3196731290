// A hashed set of internal points (exact keys) and "draw a point not tried yet", shared by the searchers.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/core/space.hpp"

namespace kubetune {

/// Set of internal points (one double per parameter, NaN = inactive) with exact keys: two points are the
/// same when they have the same length and every coordinate is equal in canonical form, -0 as +0 and every
/// NaN as one NaN (so inactive parameters compare equal). Open addressing on PointSet::hash: insert and
/// contains are O(length) on average, allocation-free once reserved. It has no iteration order to leak:
/// the set only answers membership, so a hash never decides which point a searcher suggests.
class PointSet {
 public:
  PointSet() = default;

  /// Canonical bits of one coordinate: +0 for -0, 0x7FF8DEADBEEF0001 for every NaN, else the IEEE bits.
  static std::uint64_t canonical_bits(double v) noexcept;
  /// Hash of a point in canonical form: h = kGoldenGamma ^ size, then h = hash_combine(h, bits) per
  /// coordinate; the same on every platform (and the same as TPE's former hash_point).
  static std::uint64_t hash(std::span<const double> x) noexcept;

  /// Adds x; true when it was not there yet.
  bool insert(std::span<const double> x);
  bool contains(std::span<const double> x) const noexcept;
  /// Distinct points held.
  std::size_t size() const noexcept { return hashes_.size(); }
  bool empty() const noexcept { return hashes_.empty(); }
  void clear() noexcept;
  /// Room for `n_points` points of `dim` coordinates without rehashing.
  void reserve(std::size_t n_points, std::size_t dim = 0);

 private:
  std::size_t find_slot(std::span<const double> x, std::uint64_t h) const noexcept;
  bool same(std::size_t i, std::span<const double> x) const noexcept;
  void rehash(std::size_t capacity);  // capacity: a power of two above twice size()

  std::vector<std::uint64_t> bits_;     // canonical coordinates of every point, back to back
  std::vector<std::size_t> offsets_{0};  // point i is bits_[offsets_[i], offsets_[i + 1])
  std::vector<std::uint64_t> hashes_;   // hash of point i
  std::vector<std::size_t> slots_;      // open-addressing table: 0 empty, else point index + 1
};

/// Number of points of `space` when every parameter takes finitely many values: the product of the
/// parameters' cardinalities (conditions ignored, so an upper bound for conditional spaces). 0 when a
/// parameter is continuous or the product exceeds `cap`.
std::uint64_t point_count(const SearchSpace& space,
                          std::uint64_t cap = std::numeric_limits<std::uint64_t>::max()) noexcept;
/// Whether every parameter of `space` takes finitely many values (no continuous Double; any size).
bool is_discrete(const SearchSpace& space) noexcept;

/// The result of draw_unseen: the first draw not in the set (fresh), or the last draw (fresh == false)
/// when all `max_tries` draws were already there.
struct UnseenDraw {
  std::vector<double> x;
  bool fresh = false;
};

/// Calls `draw()` (returning std::vector<double>) up to `max_tries` times, at least once, stopping at the
/// first point not in `seen`. The draws are consumed in order, so the result depends only on the draw
/// stream and the membership answers. InvalidArgument when max_tries < 1.
template <class Draw>
UnseenDraw draw_unseen(const PointSet& seen, int max_tries, Draw&& draw) {
  KT_CHECK(max_tries >= 1, InvalidArgument, "draw_unseen: max_tries = ", max_tries, " must be >= 1");
  UnseenDraw out;
  for (int t = 0; t < max_tries; ++t) {
    out.x = draw();
    if (!seen.contains(out.x)) {
      out.fresh = true;
      break;
    }
  }
  return out;
}

/// A point from the space's priors (SearchSpace::sample) that is not in `seen`, trying at most `max_tries`
/// draws; nullopt when every draw repeated a known point (the space looks exhausted).
std::optional<std::vector<double>> sample_unseen(const SearchSpace& space, const PointSet& seen, Rng& rng,
                                                 int max_tries);

}  // namespace kubetune
