// Grid search with Katib's semantics: the Cartesian product of every parameter's values, in a fixed order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"

namespace kubetune::search {

/// Exhaustive grid search as Katib defines it (katib pkg/suggestion/v1beta1/internal/search_space.py,
/// convert_to_combinations): int -> min..max by its step; double -> min..max by its step (an error naming the
/// parameter when it has none); discrete and categorical -> their lists. kubetune extensions, all optional:
/// `default_points` (n evenly spaced values, log-spaced on log-scale doubles, for every continuous double),
/// `points` {name: n} and `steps` {name: step} per continuous double (a step enumerates linearly, as Katib does
/// even for log-uniform doubles: SearchSpace::from_katib drops the step of a log double, so give it here).
///
/// Order: lexicographic in parameter order, the last parameter varying fastest (itertools.product), each axis
/// ascending; with `shuffle` the order is permuted by a seeded affine bijection k -> (a k + b) mod N (spread out,
/// deterministic, not uniformly random; Katib's "random_state" turns it on). Conditional parameters: only the
/// combinations that are active are enumerated (an inactive parameter contributes one NaN, never duplicates).
/// Stateless: each ask returns the first grid points, in order, not already present among the study's trials
/// (running and enqueued included), so batch and parallel asks are distinct and a reloaded study continues;
/// when every point is taken it returns fewer (or no) suggestions and the Study reports exhaustion.
/// Grids larger than `max_grid_size` (default 1e7) are rejected when the study is created.
class GridSearch final : public Searcher {
 public:
  struct Config {
    std::uint64_t default_points = 0;             ///< 0: a continuous double without step is an error
    std::map<std::string, std::uint64_t> points;  ///< per-parameter number of points (>= 1)
    std::map<std::string, double> steps;          ///< per-parameter linear step (> 0)
    std::uint64_t max_grid_size = 10'000'000;
    bool shuffle = false;
    std::uint64_t seed = 0;
  };
  GridSearch() = default;
  explicit GridSearch(Config c) : cfg_(std::move(c)) {}
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, range, aliases, doc.
  static nlohmann::json settings_schema();

  std::string type() const override { return "grid"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;
  /// Throws InvalidArgument (naming the parameter) for a double without step/points, and for too large grids.
  void check_space(const SearchSpace& space) const override;
  const Config& settings() const noexcept { return cfg_; }

  /// The values each parameter takes on the grid (internal encoding: value, or index for lists).
  std::vector<std::vector<double>> axes(const SearchSpace& space) const;
  /// Number of (active) grid points.
  std::uint64_t grid_size(const SearchSpace& space) const;
  /// All grid points in enumeration order (for inspection and tests; throws if more than `limit`).
  std::vector<std::vector<double>> enumerate(const SearchSpace& space, std::uint64_t limit = 1'000'000) const;

 private:
  Config cfg_;
};

}  // namespace kubetune::search
