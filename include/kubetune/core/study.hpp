// Study: the ask / tell / report / prune loop over a search space, thread-safe and persisted atomically.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kubetune/core/searcher.hpp"

namespace kubetune {

/// One trial as another engine records it (Katib, Optuna, Ray Tune). Integrations rebuild a study from such
/// records on each call (Study::replay) instead of keeping one in memory, so a restarted service answers alike.
struct TrialRecord {
  Assignment params;
  /// The point in the internal encoding (see SearchSpace) instead of params when non-empty (a faster path
  /// for integrations that convert in bulk); checked as params are and snapped onto the legal values.
  std::vector<double> x;
  /// Running (or Pending): still being evaluated, a pending point every searcher avoids (constant liar).
  TrialState state = TrialState::Running;
  std::vector<double> values;  ///< one per direction when Complete; NaN/inf turns it into Failed
  std::vector<std::pair<std::int64_t, double>> intermediate;  ///< (step, value), any order
  std::map<std::string, double> system_attrs;  ///< searcher attributes handed out with the trial (bracket, ...)
};

/// Searcher from a study config's "searcher" value: null -> random, "tpe" -> {"type": "tpe"}, a string starting
/// with '{' -> that JSON text, an object -> make_searcher(object). Anything else: InvalidArgument naming `field`.
std::unique_ptr<Searcher> searcher_from_spec(const nlohmann::json& spec, const std::string& field = "searcher");
/// Pruner from a study config's "pruner" value: null -> none (nullptr), a type name or a config object.
std::unique_ptr<Pruner> pruner_from_spec(const nlohmann::json& spec, const std::string& field = "pruner");
/// Directions from a study config's "direction" value: a string or a list of strings.
std::vector<Direction> directions_from_spec(const nlohmann::json& spec, const std::string& field = "direction");

/// A study owns its trials. Same seed + same tells => same asks, bit for bit (each ask draws from
/// Rng(seed, ask counter), and searchers are stateless beyond their config). All methods are thread-safe.
class Study {
 public:
  Study(SearchSpace space, std::unique_ptr<Searcher> searcher,
        std::vector<Direction> directions = {Direction::Minimize}, std::uint64_t seed = 0,
        std::unique_ptr<Pruner> pruner = nullptr);
  Study(const Study&) = delete;
  Study& operator=(const Study&) = delete;

  /// A study from its configuration object, the one reading of it that every edge (the C API's
  /// kt_study_create, Python's kt.Study(...)) uses. Keys (all optional except the space):
  ///   "space": SearchSpace::from_json's object, or "katib_parameters": Katib's `parameters` list (one of the two;
  ///            both is InvalidArgument);
  ///   "searcher": null (random), a type name ("tpe"), a JSON object text ("{\"type\": \"tpe\"}") or a config
  ///               object ({"type": "tpe", ...}), as searcher_from_spec reads it;
  ///   "pruner": null (none), a type name or a config object, as pruner_from_spec reads it;
  ///   "direction": "minimize" | "maximize", or a list of them (one per objective);
  ///   "directions": a list of them (not both "direction" and "directions"; neither: ["minimize"]);
  ///   "seed": an integer in [0, 2^64) (default 0).
  /// Any other key is InvalidArgument naming it; errors name the field ("study config: 'seed' = -1 ...").
  /// Needs register_builtins() first for searcher and pruner types.
  static std::unique_ptr<Study> from_config(const nlohmann::json& config);
  /// The same with the space given as an object: `config` holds the other keys ("space" / "katib_parameters"
  /// there are InvalidArgument).
  static std::unique_ptr<Study> from_config(SearchSpace space, const nlohmann::json& config);

  /// Most trials one ask hands out (n is reserved up front; larger batches are a caller's bug, not a need).
  static constexpr std::size_t kMaxAskBatch = 100000;
  /// Hand out up to n trials (enqueued ones first). Fewer than n (maybe none) => the space is exhausted.
  /// n > kMaxAskBatch: InvalidArgument.
  std::vector<Trial> ask(std::size_t n = 1);
  /// Record the objective; NaN/inf records the trial as failed (searchers never see the value).
  TrialState tell(std::int64_t id, double value);
  TrialState tell(std::int64_t id, const std::vector<double>& values);
  /// Finish a trial as failed or pruned without a value (a pruned trial keeps its learning curve).
  void tell_state(std::int64_t id, TrialState state);
  /// Intermediate value at `step` for pruning (a repeated step overwrites).
  void report(std::int64_t id, std::int64_t step, double value);
  bool should_prune(std::int64_t id);
  /// Best complete trial for objective 0 (nullopt if none complete).
  std::optional<Trial> best() const;
  std::vector<Trial> trials() const;
  Trial trial(std::int64_t id) const;
  std::size_t n_trials() const;
  /// Warm start: the next ask returns this assignment before asking the searcher.
  std::int64_t enqueue(const Assignment& a);
  /// Add a finished trial (e.g. from an earlier run). state must be final.
  std::int64_t add_trial(const Assignment& a, const std::vector<double>& values,
                         TrialState state = TrialState::Complete,
                         const std::vector<std::pair<std::int64_t, double>>& intermediate = {});
  /// A study rebuilt from another engine's record: the trials in order (ids 0..n-1), then asks that draw from
  /// Rng(seed, ask_counter), Rng(seed, ask_counter + 1), ... Same arguments => same asks.
  static std::unique_ptr<Study> replay(SearchSpace space, std::unique_ptr<Searcher> searcher,
                                       std::vector<Direction> directions, std::uint64_t seed,
                                       const std::vector<TrialRecord>& trials, std::uint64_t ask_counter = 0,
                                       std::unique_ptr<Pruner> pruner = nullptr);
  /// Replace the trials by these records, as replay() builds them, and set the ask counter. The searcher and
  /// pruner instances stay (their caches are memoisation only), so the next asks equal a fresh replay()'s with
  /// the same arguments; integrations that rebuild the same study on every call keep those caches warm.
  /// keep > 0: the first `keep` trials stay and the records replace the ones after them; the caller vouches
  /// that the kept trials are what their records would give (finished trials it replayed before: they must
  /// be finished, and keep <= n_trials(), or InvalidArgument leaves the study unchanged).
  void replace_trials(std::vector<TrialRecord> trials, std::uint64_t ask_counter, std::size_t keep = 0);
  void set_user_attr(std::int64_t id, const std::string& key, const std::string& value);
  /// True once an ask returned fewer trials than requested because the searcher had nothing new.
  bool exhausted() const;

  const SearchSpace& space() const noexcept { return space_; }
  const std::vector<Direction>& directions() const noexcept { return directions_; }
  std::uint64_t seed() const noexcept { return seed_; }
  nlohmann::json searcher_config() const;
  std::optional<nlohmann::json> pruner_config() const;

  nlohmann::json to_json() const;
  /// The checks of load() on a parsed document (depth, fields, every trial).
  static std::unique_ptr<Study> from_json(const nlohmann::json& j);
  /// Atomic, checked write. Holds an advisory lock (flock on `<path>.lock`) while it reads the file on disk,
  /// checks it and replaces it: through a fresh temp file in the same folder (O_EXCL|O_NOFOLLOW, removed on
  /// any failure), fsync, rename, fsync of the folder. The file gets the study's to_json() plus "lineage" (a
  /// random token, new whenever a save starts a file) and "revision" (+1 on every save).
  /// Throws StateError, leaving the file as it is, when the path already holds a file that this object did not
  /// load or save, or one that changed since this object loaded or last saved it (another process or Study
  /// object saved there): never silent lost updates. `overwrite` = replace whatever is there.
  /// One process per study file; several processes share a study through the Optuna integration.
  void save(const std::string& path, bool overwrite = false) const;
  /// Throws IoError / InvalidArgument on a missing, truncated or corrupt file; never modifies it. Files
  /// written before "lineage"/"revision" existed load (and continue) exactly as before. Refuses what is not a
  /// regular file, files over kMaxJsonBytes (1 GiB) and JSON nested beyond kMaxJsonDepth (64); every trial is
  /// checked (values one per direction when complete, x legal in the space, states consistent) and errors name
  /// the trial number and the field.
  static std::unique_ptr<Study> load(const std::string& path);

 private:
  Trial& find_locked(std::int64_t id);
  Trial make_trial(std::vector<double> x, std::vector<double> values, TrialState state,
                   std::vector<std::pair<std::int64_t, double>> intermediate, double now) const;
  void finish_locked(Trial& t, TrialState s);

  mutable std::mutex mu_;
  SearchSpace space_;
  std::unique_ptr<Searcher> searcher_;
  std::unique_ptr<Pruner> pruner_;
  std::vector<Direction> directions_;
  std::uint64_t seed_;
  std::uint64_t ask_counter_ = 0;
  std::uint64_t epoch_;  // SearchContext::trials_epoch: a fresh value whenever trials change other than by growing
  bool exhausted_ = false;
  std::size_t first_pending_ = 0;  // no Pending trial before this index (derived; rebuilt on load)
  std::vector<Trial> trials_;
  std::vector<Trial> spare_;  // replace_trials: the storage of the trials it replaced (empty, capacity only)

  /// What this object last read from or wrote to one study file (save/load only).
  struct FileVersion {
    std::string lineage;         ///< empty for a file written before lineages existed
    std::uint64_t revision = 0;
    std::uint64_t digest = 0;    ///< FNV-1a of the file's bytes
    std::size_t size = 0;
  };
  mutable std::mutex file_mu_;  // serialises this object's saves; taken before mu_, never after
  mutable std::map<std::string, FileVersion> files_;  // by absolute, normalised path
};

}  // namespace kubetune
