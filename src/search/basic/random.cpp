// Random search.
#include "kubetune/search/random.hpp"

#include <cmath>
#include <set>

#include "kubetune/core/settings.hpp"

namespace kubetune::search {
namespace {
// Key of a point for duplicate detection (NaN-safe, exact).
std::vector<double> key(const std::vector<double>& x) {
  std::vector<double> k(x);
  for (double& v : k)
    if (std::isnan(v)) v = -1e308;
  return k;
}
}  // namespace

std::unique_ptr<Searcher> RandomSearch::from_json(const nlohmann::json& j) {
  // random_state: Katib's seed setting; the draws come from the study's seed (Study / Katib layer).
  settings::check_keys(j, "random", {"dedupe", "random_state"});
  Config c;
  if (j.contains("dedupe")) c.dedupe = settings::boolean(j["dedupe"], "dedupe");
  if (j.contains("random_state")) (void)settings::uinteger(j["random_state"], "random_state");
  return std::make_unique<RandomSearch>(c);
}

nlohmann::json RandomSearch::config() const { return {{"type", "random"}, {"dedupe", cfg_.dedupe}}; }

std::vector<Suggestion> RandomSearch::ask(const SearchContext& ctx, std::size_t n) {
  std::vector<Suggestion> out;
  out.reserve(n);
  // Finite spaces: avoid repeats while possible (matters for small categorical spaces and batch asks).
  std::uint64_t card = 1;
  bool finite = cfg_.dedupe;
  for (const auto& p : ctx.space.params()) {
    std::uint64_t c = p.cardinality();
    if (c == 0 || card > (1ULL << 40) / c) {
      finite = false;
      break;
    }
    card *= c;
  }
  std::set<std::vector<double>> seen;
  if (finite)
    for (const auto& t : ctx.trials) seen.insert(key(t.x));
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> x = ctx.space.sample(ctx.rng);
    if (finite) {
      if (seen.size() >= card) break;  // cannot be exact with conditions, but never loops forever
      int tries = 0;
      while (seen.count(key(x)) && tries++ < 1000) x = ctx.space.sample(ctx.rng);
      if (seen.count(key(x))) break;
      seen.insert(key(x));
    }
    out.push_back({std::move(x), {}});
  }
  return out;
}

}  // namespace kubetune::search
