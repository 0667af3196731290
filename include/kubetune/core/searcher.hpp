// Searcher and Pruner interfaces, the context they see, and the registry that rebuilds them from JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kubetune/core/rng.hpp"
#include "kubetune/core/space.hpp"
#include "kubetune/core/trial.hpp"

namespace kubetune {

/// What a searcher sees on each ask: the space, every trial (running ones included, so batch and parallel
/// asks never duplicate), the directions and a random stream derived from (study seed, ask counter).
struct SearchContext {
  const SearchSpace& space;
  const std::vector<Trial>& trials;
  const std::vector<Direction>& directions;
  Rng& rng;
  /// The study's seed (the rng above already depends on it); for searchers that seed their own structures.
  std::uint64_t study_seed = 0;
  /// Non-zero (set by Study, unique to one study object and history): while it is the same from one call to the
  /// next, `trials` only grew at the end, no trial's x changed and finished trials did not change at all (only
  /// running and enqueued ones may have), so a searcher may keep what it derived from them. 0: no such promise.
  std::uint64_t trials_epoch = 0;

  /// Objective 0 signed so that lower is better (NaN if the trial has no value).
  double loss(const Trial& t) const noexcept {
    return t.values.empty() ? std::numeric_limits<double>::quiet_NaN() : signed_value(t.values[0]);
  }
  /// Same for an intermediate value of objective 0.
  double signed_value(double v) const noexcept {
    return !directions.empty() && directions[0] == Direction::Maximize ? -v : v;
  }
};

/// A point proposed by a searcher (internal encoding) and attributes stored on the trial.
struct Suggestion {
  std::vector<double> x;
  std::map<std::string, double> attrs;
};

/// Searchers keep no hidden state beyond config(): a study reloaded from JSON continues identically.
class Searcher {
 public:
  virtual ~Searcher() = default;
  /// Registry name, e.g. "random", "tpe".
  virtual std::string type() const = 0;
  /// Configuration as JSON, including {"type": type()}; make_searcher(config()) rebuilds the searcher.
  virtual nlohmann::json config() const = 0;
  /// Up to n new suggestions (fewer, possibly none, when the space is exhausted).
  virtual std::vector<Suggestion> ask(const SearchContext& ctx, std::size_t n) = 0;
  /// Early-stopping decision for a running trial (multi-fidelity searchers); default never.
  virtual bool should_prune(const SearchContext& ctx, const Trial& trial) { return false; }
  /// Called once when attached to a study; throws InvalidArgument if the space is unsupported.
  virtual void check_space(const SearchSpace& space) const {}
};

/// Early-stopping rule applied to running trials' intermediate values.
class Pruner {
 public:
  virtual ~Pruner() = default;
  virtual std::string type() const = 0;
  virtual nlohmann::json config() const = 0;
  virtual bool should_prune(const SearchContext& ctx, const Trial& trial) = 0;
};

using SearcherFactory = std::function<std::unique_ptr<Searcher>(const nlohmann::json&)>;
using PrunerFactory = std::function<std::unique_ptr<Pruner>(const nlohmann::json&)>;

/// Register a searcher type (thread-safe; re-registering a name replaces it).
void register_searcher(const std::string& type, SearcherFactory f);
void register_pruner(const std::string& type, PrunerFactory f);
/// Build from {"type": ..., ...}; NotFound names the registered types. Call register_builtins() first
/// (kubetune.hpp) when using C++ directly; Python and the C API do it for you.
std::unique_ptr<Searcher> make_searcher(const nlohmann::json& config);
std::unique_ptr<Pruner> make_pruner(const nlohmann::json& config);
std::vector<std::string> registered_searchers();
std::vector<std::string> registered_pruners();

/// Registers every built-in searcher and pruner (defined in src/registry.cpp; idempotent).
void register_builtins();

}  // namespace kubetune
