// Grid search: axis construction (Katib semantics), ranking/unranking of active combinations, stateless asks.
#include "kubetune/search/grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/core/config_fields.hpp"

namespace kubetune::search {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::uint64_t kSat = std::numeric_limits<std::uint64_t>::max();

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kSat / b ? kSat : a * b;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > kSat - b ? kSat : a + b; }

/// Most values one grid axis may hold (8 bytes each): a 3e9-value integer axis would ask for 24 GB.
constexpr std::uint64_t kMaxAxisValues = 10'000'000;

// Values of parameter p on the grid.
std::vector<double> make_axis(const Param& p, const GridSearch::Config& c) {
  std::vector<double> axis;
  if (p.type != ParamType::Double || p.step > 0)
    KT_CHECK(p.cardinality() <= kMaxAxisValues, InvalidArgument, "grid: parameter '", p.name, "' has ",
             p.cardinality(), " values, more than the ", kMaxAxisValues, " one grid axis may hold (give it a step)");
  switch (p.type) {
    case ParamType::Discrete:
    case ParamType::Categorical: {
      axis.resize(p.cardinality());
      std::iota(axis.begin(), axis.end(), 0.0);
      return axis;
    }
    case ParamType::Int: {
      const std::uint64_t k = p.cardinality();
      axis.reserve(k);
      for (std::uint64_t i = 0; i < k; ++i) axis.push_back(p.low + static_cast<double>(i) * p.step);
      return axis;
    }
    case ParamType::Double: break;
  }
  if (p.step > 0) {  // Katib: numpy.arange(min, max + step, step), dropping a last value above max
    const std::uint64_t k = p.cardinality();
    for (std::uint64_t i = 0; i < k; ++i) axis.push_back(p.low + static_cast<double>(i) * p.step);
    return axis;
  }
  auto st = c.steps.find(p.name);
  if (st != c.steps.end()) {
    const double step = st->second;
    KT_CHECK(step > 0 && std::isfinite(step), InvalidArgument, "grid: step for parameter '", p.name, "' = ", step,
             " must be > 0");
    KT_CHECK(step <= p.high - p.low, InvalidArgument, "grid: step for parameter '", p.name, "' = ", step,
             " is larger than its range [", p.low, ", ", p.high, "]");
    const double count = std::floor((p.high - p.low) / step + 1e-9) + 1;
    KT_CHECK(count <= 1e9, InvalidArgument, "grid: step ", step, " gives parameter '", p.name, "' ", count,
             " values");
    for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(count); ++i)
      axis.push_back(std::min(p.low + static_cast<double>(i) * step, p.high));
    return axis;
  }
  std::uint64_t n = c.default_points;
  auto pt = c.points.find(p.name);
  if (pt != c.points.end()) n = pt->second;
  KT_CHECK(n > 0, InvalidArgument, "grid: parameter '", p.name,
           "' is a continuous double without step; give it a step, or set 'steps' {\"", p.name,
           "\": ...}, 'points' or 'default_points'");
  KT_CHECK(n <= 1'000'000'000, InvalidArgument, "grid: ", n, " points for parameter '", p.name, "' is too many");
  const bool lg = p.is_log();
  const double a = lg ? std::log(p.low) : p.low, b = lg ? std::log(p.high) : p.high;
  if (n == 1) {
    double m = 0.5 * (a + b);
    axis.push_back(std::clamp(lg ? std::exp(m) : m, p.low, p.high));
    return axis;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    double t = a + (b - a) * static_cast<double>(i) / static_cast<double>(n - 1);
    double v = lg ? std::exp(t) : t;
    axis.push_back(i == 0 ? p.low : i + 1 == n ? p.high : std::clamp(v, p.low, p.high));
  }
  return axis;
}

// Ranks and unranks the active combinations of a (possibly conditional) grid. Counts of completions depend
// only on the values of the condition parents chosen so far, so they are memoised on those.
class Grid {
 public:
  Grid(const SearchSpace& s, std::vector<std::vector<double>> axes) : s_(s), axes_(std::move(axes)) {
    is_parent_.assign(s.size(), false);
    for (int p : s.parent_indices())
      if (p >= 0) is_parent_[static_cast<std::size_t>(p)] = true;
    std::vector<double> x(s.size(), kNaN);
    size_ = count_from(0, x);
    // Without conditions the grid is a plain mixed-radix number: precomputed strides, no memo look-ups.
    simple_ = std::none_of(is_parent_.begin(), is_parent_.end(), [](bool b) { return b; });
    if (simple_ && size_ != kSat) {
      stride_.assign(s.size(), 1);
      for (std::size_t i = s.size(); i-- > 1;) stride_[i - 1] = stride_[i] * axes_[i].size();
    } else {
      simple_ = false;
    }
  }
  std::uint64_t size() const noexcept { return size_; }

  std::vector<double> unrank(std::uint64_t k) {
    std::vector<double> x(s_.size(), kNaN);
    if (simple_) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = axes_[i][static_cast<std::size_t>(k / stride_[i])];
        k %= stride_[i];
      }
      return x;
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!s_.is_active(i, x)) continue;
      const auto& ax = axes_[i];
      if (!is_parent_[i]) {
        x[i] = ax[0];
        const std::uint64_t c = count_from(i + 1, x);
        const std::uint64_t idx = k / c;
        k %= c;
        x[i] = ax[static_cast<std::size_t>(idx)];
      } else {
        for (double v : ax) {
          x[i] = v;
          const std::uint64_t c = count_from(i + 1, x);
          if (k < c) break;
          k -= c;
        }
      }
    }
    return x;
  }

  // Rank of x, or false when x is not a grid point (off-grid value, wrong activity).
  bool rank(const std::vector<double>& x, std::uint64_t& r) {
    if (x.size() != s_.size()) return false;
    r = 0;
    if (simple_) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        std::size_t idx = 0;
        if (!find(i, x[i], idx)) return false;
        r += static_cast<std::uint64_t>(idx) * stride_[i];
      }
      return true;
    }
    std::vector<double> y(x.size(), kNaN);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const bool active = s_.is_active(i, y);
      if (!active) {
        if (!std::isnan(x[i])) return false;
        continue;
      }
      std::size_t idx = 0;
      if (!find(i, x[i], idx)) return false;
      const auto& ax = axes_[i];
      if (!is_parent_[i]) {
        y[i] = ax[0];
        r += static_cast<std::uint64_t>(idx) * count_from(i + 1, y);
      } else {
        for (std::size_t j = 0; j < idx; ++j) {
          y[i] = ax[j];
          r += count_from(i + 1, y);
        }
      }
      y[i] = ax[idx];
    }
    return true;
  }

 private:
  bool find(std::size_t i, double v, std::size_t& idx) const {
    if (std::isnan(v)) return false;
    const auto& ax = axes_[i];
    auto it = std::lower_bound(ax.begin(), ax.end(), v);
    const double tol = 1e-9 * (1.0 + std::abs(v));
    if (it != ax.end() && std::abs(*it - v) <= tol) {
      idx = static_cast<std::size_t>(it - ax.begin());
      return true;
    }
    if (it != ax.begin() && std::abs(*(it - 1) - v) <= tol) {
      idx = static_cast<std::size_t>(it - ax.begin()) - 1;
      return true;
    }
    return false;
  }

  // Number of active completions of parameters i.. given x[0..i) (x[i..] is NaN on entry and on exit).
  std::uint64_t count_from(std::size_t i, std::vector<double>& x) {
    if (i == x.size()) return 1;
    std::vector<double> key;
    key.reserve(8);
    key.push_back(static_cast<double>(i));
    for (std::size_t j = 0; j < i; ++j)
      if (is_parent_[j]) key.push_back(std::isnan(x[j]) ? -1.0 : x[j]);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    std::uint64_t c = 0;
    if (!s_.is_active(i, x)) {
      c = count_from(i + 1, x);
    } else if (!is_parent_[i]) {
      x[i] = axes_[i][0];
      c = sat_mul(count_from(i + 1, x), axes_[i].size());
      x[i] = kNaN;
    } else {
      for (double v : axes_[i]) {
        x[i] = v;
        c = sat_add(c, count_from(i + 1, x));
      }
      x[i] = kNaN;
    }
    memo_.emplace(std::move(key), c);
    return c;
  }

  const SearchSpace& s_;
  std::vector<std::vector<double>> axes_;
  std::vector<bool> is_parent_;
  std::map<std::vector<double>, std::uint64_t> memo_;
  std::uint64_t size_ = 0;
  bool simple_ = false;
  std::vector<std::uint64_t> stride_;
};

// Seeded affine bijection of [0, n): position p -> (a p + b) mod n, gcd(a, n) = 1.
struct Permutation {
  std::uint64_t n = 1, a = 1, b = 0, a_inv = 1;
  Permutation(std::uint64_t size, bool shuffle, std::uint64_t seed) : n(size) {
    if (!shuffle || n <= 2) return;
    Rng rng(seed, 0x67726964ULL);  // "grid"
    do a = 1 + rng.below(n - 1);
    while (std::gcd(a, n) != 1);
    b = rng.below(n);
    // Modular inverse of a (extended Euclid on signed 128-bit integers).
    __int128 t = 0, nt = 1, r = static_cast<__int128>(n), nr = static_cast<__int128>(a);
    while (nr != 0) {
      __int128 q = r / nr;
      __int128 tmp = t - q * nt;
      t = nt;
      nt = tmp;
      tmp = r - q * nr;
      r = nr;
      nr = tmp;
    }
    if (t < 0) t += static_cast<__int128>(n);
    a_inv = static_cast<std::uint64_t>(t);
  }
  std::uint64_t rank_at(std::uint64_t p) const {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * p + b) % n);
  }
  std::uint64_t position_of(std::uint64_t r) const {
    const std::uint64_t d = (r + n - b % n) % n;
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a_inv) * d) % n);
  }
};

void check_names(const SearchSpace& space, const GridSearch::Config& c) {
  auto check = [&](const std::string& name, const char* what) {
    KT_CHECK(space.contains(name), InvalidArgument, "grid: '", what, "' names unknown parameter '", name, "'");
    const Param& p = space.param(space.index_of(name));
    KT_CHECK(p.type == ParamType::Double && p.step == 0, InvalidArgument, "grid: '", what, "' names parameter '",
             name, "', which is not a continuous double (it has its own values)");
  };
  for (const auto& [name, n] : c.points) check(name, "points");
  for (const auto& [name, st] : c.steps) {
    check(name, "steps");
    KT_CHECK(!c.points.count(name), InvalidArgument, "grid: parameter '", name,
             "' is given both 'points' and 'steps'");
  }
}

std::uint64_t checked_size(const SearchSpace& space, const GridSearch::Config& c, Grid& g) {
  (void)space;
  KT_CHECK(g.size() <= c.max_grid_size, InvalidArgument, "grid: the grid has ",
           g.size() == kSat ? std::string("more than 1.8e19") : std::to_string(g.size()),
           " points, more than max_grid_size=", c.max_grid_size, "; coarsen steps or raise max_grid_size");
  return g.size();
}
}  // namespace

namespace {
const settings::Fields<GridSearch::Config>& grid_table() {
  using C = GridSearch::Config;
  static const settings::Fields<C> t =
      settings::Fields<C>("grid")
          .field<&C::default_points>("default_points",
                                     "Evenly spaced values for every continuous double without a step (0: an error).")
          .field<&C::points>("points", "Per-parameter number of values for continuous doubles, {name: n}.")
          .field<&C::steps>("steps", "Per-parameter linear step for continuous doubles, {name: step}.")
          .field<&C::max_grid_size>("max_grid_size", "Largest grid accepted when the study is created.")
          .at_least(1)
          .field<&C::shuffle>("shuffle", "Visit the grid in a seeded, spread-out order.")
          .field<&C::seed>("seed", "Seed of the shuffled order.")
          // Katib (Optuna's GridSampler): a seed means a shuffled order, so the alias also sets shuffle.
          .extra("random_state");
  return t;
}
}  // namespace

std::unique_ptr<Searcher> GridSearch::from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "grid config must be a JSON object, got ", j.dump());
  KT_CHECK(!j.contains("type") || j["type"] == "grid", InvalidArgument, "grid config: type is ", j["type"].dump());
  Config c = grid_table().from_json(j);
  if (j.contains("random_state")) {
    KT_CHECK(!j.contains("seed"), InvalidArgument, "grid: setting 'seed' is given twice (as 'seed' and 'random_state')");
    c.seed = grid_table().from_json({{"seed", j["random_state"]}}).seed;
    c.shuffle = true;
  }
  return std::make_unique<GridSearch>(c);
}

nlohmann::json GridSearch::settings_schema() { return grid_table().schema(); }

nlohmann::json GridSearch::config() const {
  nlohmann::json j = grid_table().to_json(cfg_);
  j["type"] = "grid";
  return j;
}

std::vector<std::vector<double>> GridSearch::axes(const SearchSpace& space) const {
  check_names(space, cfg_);
  std::vector<std::vector<double>> out;
  out.reserve(space.size());
  for (const auto& p : space.params()) out.push_back(make_axis(p, cfg_));
  return out;
}

std::uint64_t GridSearch::grid_size(const SearchSpace& space) const {
  Grid g(space, axes(space));
  return g.size();
}

void GridSearch::check_space(const SearchSpace& space) const {
  Grid g(space, axes(space));
  checked_size(space, cfg_, g);
}

std::vector<std::vector<double>> GridSearch::enumerate(const SearchSpace& space, std::uint64_t limit) const {
  Grid g(space, axes(space));
  const std::uint64_t n = checked_size(space, cfg_, g);
  KT_CHECK(n <= limit, InvalidArgument, "grid: ", n, " points exceed the enumeration limit ", limit);
  Permutation perm(n, cfg_.shuffle, cfg_.seed);
  std::vector<std::vector<double>> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::uint64_t p = 0; p < n; ++p) out.push_back(g.unrank(perm.rank_at(p)));
  return out;
}

std::vector<Suggestion> GridSearch::ask(const SearchContext& ctx, std::size_t n) {
  Grid g(ctx.space, axes(ctx.space));
  const std::uint64_t size = checked_size(ctx.space, cfg_, g);
  Permutation perm(size, cfg_.shuffle, cfg_.seed);
  // Every trial on the grid (whatever its state) takes its point: pending, running and finished alike.
  std::unordered_set<std::uint64_t> used;
  used.reserve(ctx.trials.size() * 2);
  for (const auto& t : ctx.trials) {
    std::uint64_t r = 0;
    if (g.rank(t.x, r)) used.insert(perm.position_of(r));
  }
  std::vector<Suggestion> out;
  out.reserve(std::min<std::uint64_t>(n, size));
  for (std::uint64_t p = 0; p < size && out.size() < n; ++p) {
    if (used.count(p)) continue;
    out.push_back({g.unrank(perm.rank_at(p)), {}});
  }
  return out;
}

}  // namespace kubetune::search
