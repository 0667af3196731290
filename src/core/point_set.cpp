// PointSet (open addressing over canonical coordinate bits), space cardinality and sample_unseen.
#include "kubetune/core/point_set.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kubetune {

std::uint64_t PointSet::canonical_bits(double v) noexcept {
  if (std::isnan(v)) return 0x7FF8DEADBEEF0001ULL;
  if (v == 0.0) v = 0.0;  // -0 == +0
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::uint64_t PointSet::hash(std::span<const double> x) noexcept {
  std::uint64_t h = kGoldenGamma ^ x.size();
  for (double v : x) h = hash_combine(h, canonical_bits(v));
  return h;
}

bool PointSet::same(std::size_t i, std::span<const double> x) const noexcept {
  const std::size_t b = offsets_[i], e = offsets_[i + 1];
  if (e - b != x.size()) return false;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (bits_[b + j] != canonical_bits(x[j])) return false;
  return true;
}

// Slot holding x, or the empty slot where it would go. The table is never full (load <= 1/2).
std::size_t PointSet::find_slot(std::span<const double> x, std::uint64_t h) const noexcept {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t s = static_cast<std::size_t>(h) & mask;; s = (s + 1) & mask) {
    const std::size_t k = slots_[s];
    if (k == 0 || (hashes_[k - 1] == h && same(k - 1, x))) return s;
  }
}

void PointSet::rehash(std::size_t cap) {
  slots_.assign(cap, 0);
  const std::size_t mask = cap - 1;
  for (std::size_t i = 0; i < hashes_.size(); ++i) {
    std::size_t s = static_cast<std::size_t>(hashes_[i]) & mask;
    while (slots_[s] != 0) s = (s + 1) & mask;
    slots_[s] = i + 1;
  }
}

void PointSet::reserve(std::size_t n_points, std::size_t dim) {
  hashes_.reserve(n_points);
  offsets_.reserve(n_points + 1);
  bits_.reserve(n_points * dim);
  std::size_t cap = 16;
  while (cap < 2 * n_points) cap *= 2;
  if (cap > slots_.size()) rehash(cap);
}

bool PointSet::insert(std::span<const double> x) {
  if (2 * (hashes_.size() + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
  const std::uint64_t h = hash(x);
  const std::size_t s = find_slot(x, h);
  if (slots_[s] != 0) return false;
  for (double v : x) bits_.push_back(canonical_bits(v));
  offsets_.push_back(bits_.size());
  hashes_.push_back(h);
  slots_[s] = hashes_.size();
  return true;
}

bool PointSet::contains(std::span<const double> x) const noexcept {
  if (hashes_.empty()) return false;
  return slots_[find_slot(x, hash(x))] != 0;
}

void PointSet::clear() noexcept {
  bits_.clear();
  offsets_.assign(1, 0);
  hashes_.clear();
  std::fill(slots_.begin(), slots_.end(), 0);
}

std::uint64_t point_count(const SearchSpace& space, std::uint64_t cap) noexcept {
  std::uint64_t n = 1;
  for (const Param& p : space.params()) {
    const std::uint64_t c = p.cardinality();
    if (c == 0 || n > cap / c) return 0;
    n *= c;
  }
  return n;
}

bool is_discrete(const SearchSpace& space) noexcept {
  for (const Param& p : space.params())
    if (p.cardinality() == 0) return false;
  return true;
}

std::optional<std::vector<double>> sample_unseen(const SearchSpace& space, const PointSet& seen, Rng& rng,
                                                 int max_tries) {
  KT_CHECK(max_tries >= 1, InvalidArgument, "sample_unseen: max_tries = ", max_tries, " must be >= 1");
  UnseenDraw d = draw_unseen(seen, max_tries, [&] { return space.sample(rng); });
  if (!d.fresh) return std::nullopt;
  return std::move(d.x);
}

}  // namespace kubetune
