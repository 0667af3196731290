// Random search.
#include "kubetune/search/random.hpp"

#include <nlohmann/json.hpp>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/point_set.hpp"

namespace kubetune::search {
namespace {
using Config = RandomSearch::Config;
const settings::Fields<Config>& table() {
  static const settings::Fields<Config> t =
      settings::Fields<Config>("random")
          .field<&Config::dedupe>("dedupe", "A finite space never repeats a point while unseen ones remain.")
          // Katib's seed setting: checked, unused (the draws come from the study's seed, which Katib's layer sets).
          .ignored("random_state", "Katib's seed: checked, not stored (the study's seed drives the draws).");
  return t;
}
}  // namespace

std::unique_ptr<Searcher> RandomSearch::from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "random config must be a JSON object, got ", json_summary(j));
  return std::make_unique<RandomSearch>(table().from_json(j));
}

nlohmann::json RandomSearch::settings_schema() { return table().schema(); }

nlohmann::json RandomSearch::config() const {
  nlohmann::json j = table().to_json(cfg_);
  j["type"] = "random";
  return j;
}

std::vector<Suggestion> RandomSearch::ask(const SearchContext& ctx, std::size_t n) {
  std::vector<Suggestion> out;
  out.reserve(n);
  // Finite spaces (up to 2^40 points): avoid repeats while possible (small categorical spaces, batch asks).
  const std::uint64_t card = cfg_.dedupe ? point_count(ctx.space, std::uint64_t{1} << 40) : 0;
  const bool finite = card != 0;
  PointSet seen;
  if (finite)
    for (const auto& t : ctx.trials) seen.insert(t.x);
  for (std::size_t i = 0; i < n; ++i) {
    if (!finite) {
      out.push_back({ctx.space.sample(ctx.rng), {}});
      continue;
    }
    if (seen.size() >= card) break;  // cannot be exact with conditions, but never loops forever
    auto x = sample_unseen(ctx.space, seen, ctx.rng, 1001);
    if (!x) break;
    seen.insert(*x);
    out.push_back({std::move(*x), {}});
  }
  return out;
}

}  // namespace kubetune::search
