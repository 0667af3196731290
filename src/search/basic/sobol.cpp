// Scrambled Sobol' sequence (Joe & Kuo 2008 direction numbers, linear matrix scramble + digital shift).
#include "kubetune/search/sobol.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/core/config_fields.hpp"

namespace kubetune::search {
namespace {
#include "sobol_directions.inc"

constexpr int kB = SobolSequence::kBits;
constexpr std::uint64_t kAllBits = (std::uint64_t{1} << kB) - 1;
constexpr double kScale = 1.0 / static_cast<double>(std::uint64_t{1} << kB);

// Offsets of each dimension's initial numbers inside kSobolInit (cumulative polynomial degrees).
const std::vector<std::size_t>& init_offsets() {
  static const std::vector<std::size_t> off = [] {
    std::vector<std::size_t> o(kSobolTableDims + 1, 0);
    for (std::size_t d = 0; d < kSobolTableDims; ++d)
      o[d + 1] = o[d] + static_cast<std::size_t>(std::bit_width(kSobolPoly[d]) - 1);
    return o;
  }();
  return off;
}

// Direction integers V_1..V_B of dimension d as B-bit numbers, most significant digit first (V_j = m_j 2^(B-j)).
// Recurrence of Bratley & Fox, ACM TOMS 14 (1988) 88-100, for m_j beyond the s initial values.
void direction_numbers(std::size_t d, std::uint64_t* v) {
  std::uint64_t m[kB + 1];
  if (d == 0) {
    for (int j = 1; j <= kB; ++j) m[j] = 1;
  } else {
    const std::uint32_t poly = kSobolPoly[d];
    const int s = std::bit_width(poly) - 1;
    const std::uint32_t* init = kSobolInit + init_offsets()[d];
    for (int j = 1; j <= s && j <= kB; ++j) m[j] = init[j - 1];
    for (int j = s + 1; j <= kB; ++j) {
      std::uint64_t x = m[j - s] ^ (m[j - s] << s);
      for (int k = 1; k < s; ++k)
        if ((poly >> (s - k)) & 1U) x ^= m[j - k] << k;
      m[j] = x;
    }
  }
  for (int j = 1; j <= kB; ++j) v[j - 1] = m[j] << (kB - j);
}

// Apply a lower-triangular (unit diagonal) GF(2) matrix, given by its row masks, to the digits of x.
std::uint64_t apply_ltm(const std::uint64_t* rows, std::uint64_t x) {
  std::uint64_t y = 0;
  for (int r = 0; r < kB; ++r) {
    const int pos = kB - 1 - r;
    y |= static_cast<std::uint64_t>(std::popcount(rows[r] & x) & 1) << pos;
  }
  return y;
}
}  // namespace

std::size_t sobol_max_dims() noexcept { return kSobolTableDims; }

SobolSequence::SobolSequence(std::size_t dim, bool scramble, std::uint64_t seed)
    : dim_(dim), scramble_(scramble), seed_(seed) {
  KT_CHECK(dim >= 1 && dim <= kSobolTableDims, InvalidArgument, "Sobol dimension ", dim, " must be in [1, ",
           kSobolTableDims, "]");
  v_.resize(dim * kB);
  shift_.assign(dim, 0);
  state_.assign(dim, 0);
  std::uint64_t rows[kB];
  for (std::size_t d = 0; d < dim; ++d) {
    std::uint64_t* vd = v_.data() + d * kB;
    direction_numbers(d, vd);
    if (!scramble) continue;
    // One independent stream per dimension, so the first k coordinates do not depend on dim.
    Rng rng(seed, 0x5C0B01ULL + d);
    for (int r = 0; r < kB; ++r) {
      const int pos = kB - 1 - r;
      const std::uint64_t above = kAllBits ^ ((std::uint64_t{1} << (pos + 1)) - 1);  // digits before r
      rows[r] = (rng.next_u64() & above) | (std::uint64_t{1} << pos);
    }
    for (int j = 0; j < kB; ++j) vd[j] = apply_ltm(rows, vd[j]);
    shift_[d] = rng.next_u64() & kAllBits;
  }
}

void SobolSequence::seek(std::uint64_t index) {
  KT_CHECK(index < (std::uint64_t{1} << kB), InvalidArgument, "Sobol index ", index, " must be < 2^", kB);
  const std::uint64_t g = index ^ (index >> 1);
  std::fill(state_.begin(), state_.end(), 0);
  for (int j = 0; j < kB; ++j) {
    if (!((g >> j) & 1U)) continue;
    for (std::size_t d = 0; d < dim_; ++d) state_[d] ^= v_[d * kB + j];
  }
  index_ = index;
}

void SobolSequence::next(double* out) {
  KT_CHECK(index_ + 1 < (std::uint64_t{1} << kB), StateError, "Sobol sequence exhausted at index ", index_);
  for (std::size_t d = 0; d < dim_; ++d) out[d] = static_cast<double>(state_[d] ^ shift_[d]) * kScale;
  // Gray-code step (Antonov & Saleev): the next point differs by the direction number of the lowest zero bit.
  const int c = std::countr_zero(index_ + 1);
  for (std::size_t d = 0; d < dim_; ++d) state_[d] ^= v_[d * kB + c];
  ++index_;
}

void SobolSequence::generate(std::size_t n, std::size_t dim, double* out) {
  KT_CHECK(dim == dim_, InvalidArgument, "Sobol generate: dim=", dim, " but the sequence has dim ", dim_);
  for (std::size_t i = 0; i < n; ++i) next(out + i * dim_);
}

void SobolSequence::point(std::uint64_t index, double* out) const {
  KT_CHECK(index < (std::uint64_t{1} << kB), InvalidArgument, "Sobol index ", index, " must be < 2^", kB);
  const std::uint64_t g = index ^ (index >> 1);
  for (std::size_t d = 0; d < dim_; ++d) {
    std::uint64_t x = 0;
    for (int j = 0; j < kB; ++j)
      if ((g >> j) & 1U) x ^= v_[d * kB + j];
    out[d] = static_cast<double>(x ^ shift_[d]) * kScale;
  }
}

// ------------------------------------------------------------------------------------------- searcher

namespace {
const settings::Fields<Sobol::Config>& sobol_table() {
  using C = Sobol::Config;
  static const settings::Fields<C> t =
      settings::Fields<C>("sobol")
          .field<&C::seed>("seed", "Seed of the scramble (mixed with the study's seed).")
          .alias("random_state")
          .field<&C::scramble>("scramble", "Linear matrix scramble plus digital shift (off: the plain sequence).")
          .field<&C::skip>("skip", "Index of the first point.")
          .below(static_cast<double>(std::uint64_t{1} << 40));
  return t;
}
}  // namespace

std::unique_ptr<Searcher> Sobol::from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "sobol config must be a JSON object, got ", j.dump());
  KT_CHECK(!j.contains("type") || j["type"] == "sobol", InvalidArgument, "sobol config: type is ", j["type"].dump());
  return std::make_unique<Sobol>(sobol_table().from_json(j));
}

nlohmann::json Sobol::settings_schema() { return sobol_table().schema(); }

nlohmann::json Sobol::config() const {
  nlohmann::json j = sobol_table().to_json(cfg_);
  j["type"] = "sobol";
  return j;
}

void Sobol::check_space(const SearchSpace& space) const {
  KT_CHECK(space.size() <= sobol_max_dims(), InvalidArgument, "sobol: the space has ", space.size(),
           " parameters, more than the ", sobol_max_dims(), " dimensions with direction numbers");
}

std::vector<Suggestion> Sobol::ask(const SearchContext& ctx, std::size_t n) {
  check_space(ctx.space);
  std::uint64_t next = cfg_.skip;
  for (const auto& t : ctx.trials) {
    auto it = t.system_attrs.find("sobol_index");
    if (it == t.system_attrs.end() || !(it->second >= 0)) continue;
    next = std::max(next, static_cast<std::uint64_t>(it->second) + 1);
  }
  std::vector<Suggestion> out;
  if (n == 0) return out;
  out.reserve(n);
  // The scramble depends on the searcher's seed and the study's seed (study seed 0 leaves it unchanged).
  // The key predates derive_seed (core/rng.hpp) and stays as it is: saved studies pin the scrambled sequence.
  SobolSequence seq(ctx.space.size(), cfg_.scramble, cfg_.seed ^ (ctx.study_seed * kGoldenGamma));
  seq.seek(next);
  std::vector<double> u(ctx.space.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t idx = seq.index();
    seq.next(u.data());
    out.push_back({ctx.space.from_unit(u), {{"sobol_index", static_cast<double>(idx)}}});
  }
  return out;
}

}  // namespace kubetune::search
