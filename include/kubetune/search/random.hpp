// Random search: independent draws from the space's priors (uniform, log-uniform, normal, log-normal).
#pragma once

#include "kubetune/core/searcher.hpp"

namespace kubetune::search {

/// Bergstra & Bengio, "Random Search for Hyper-Parameter Optimization", JMLR 2012. Honours priors, log
/// scales, steps and conditions. With `dedupe` (default), a finite space never repeats a point already in
/// the history (running ones included) while unseen points remain.
class RandomSearch final : public Searcher {
 public:
  struct Config {
    bool dedupe = true;
  };
  RandomSearch() = default;
  explicit RandomSearch(Config c) : cfg_(c) {}
  static std::unique_ptr<Searcher> from_json(const nlohmann::json& j);
  /// The settings table (declared once in its .cpp) as data: name, type, default, range, aliases, doc.
  static nlohmann::json settings_schema();

  std::string type() const override { return "random"; }
  nlohmann::json config() const override;
  std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) override;

 private:
  Config cfg_;
};


}  // namespace kubetune::search
