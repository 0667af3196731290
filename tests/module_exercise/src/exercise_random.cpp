// The module exercise's searcher (docs/architecture.md, "Adding a module"): "exercise_random" draws every point
// uniformly from the space, and registers itself through its module's REGISTER function. No other file names it.
#include <memory>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"
#include "kubetune/core/settings.hpp"

namespace kubetune::exercise {
namespace {

class ExerciseRandom final : public Searcher {
 public:
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j) {
    settings::check_keys(j, "exercise_random", {});
    return std::make_unique<ExerciseRandom>();
  }
  std::string type() const override { return "exercise_random"; }
  nlohmann::json config() const override { return {{"type", "exercise_random"}}; }
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override {
    std::vector<Suggestion> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back({ctx.space.sample(ctx.rng), {}});
    return out;
  }
};

}  // namespace

// The module's REGISTER function (module.cmake): kubetune::register_builtins() calls it.
void register_exercise() { register_searcher("exercise_random", &ExerciseRandom::from_json); }

}  // namespace kubetune::exercise
