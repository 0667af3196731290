// TPE internals: how a search space is modelled (one Parzen dimension per parameter, parameters grouped into
// joint models), the trial history kept between asks, and the trial split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/parzen.hpp"
#include "kubetune/search/tpe.hpp"

namespace kubetune::search::tpe {

/// One parameter in model coordinates: log for log-scaled parameters, the index for ordered lists and
/// categories.
struct ParamModel {
  ParzenDim dim;
  bool log = false;
  bool index = false;  ///< Discrete list / Categorical: the model value is the index
  double to_model(double v) const { return log ? std::log(v) : v; }
};

/// Parameters modelled jointly (one, for univariate TPE).
struct Group {
  std::vector<std::size_t> params;
  std::vector<ParzenDim> dims;
};

/// The space as TPE models it; rebuilt only when the space or the grouping settings change.
struct SpaceModel {
  SearchSpace space;
  bool built = false, multivariate = false, group = false;
  std::vector<ParamModel> pm;
  std::vector<Group> groups;
  std::uint64_t cardinality = 0;  ///< number of distinct points; 0 = infinite (or too large to matter)
  /// An always-active continuous parameter makes exact repeats practically impossible: no dedupe set then.
  bool dedupe = true;
  bool unconditional = true;  ///< no conditional parameter: groups are independent

  /// Returns true when it (re)built the model.
  bool update(const SearchSpace& s, const TPEConfig& cfg);
  /// A model value back to the parameter's value (rounded to an index, exp'ed, snapped to the space).
  double from_model(std::size_t p, double t) const;
};

/// The history as TPE reads it, kept between asks and extended per new trial (pure memoisation: checked
/// against the trials on every ask; rows from the first trial that differs are rebuilt).
class History {
 public:
  void reset(std::size_t n_params);
  /// Bring the copy up to `trials` (x and activity only; states and values are read from the trials). With the
  /// same non-zero `epoch` as the last update (SearchContext::trials_epoch) the rows kept are not compared again.
  void update(const std::vector<Trial>& trials, const SpaceModel& model, std::uint64_t epoch = 0);
  /// Value of parameter p in trial i in model coordinates (ParamModel::to_model; NaN: inactive or malformed).
  double value(std::size_t p, std::size_t i) const { return cols_[p * cap_ + i]; }
  const double* column(std::size_t p) const { return cols_.data() + p * cap_; }
  /// Trials where parameter p is active, ascending in model value (ties by trial index); empty for
  /// categorical parameters (their estimators need no order).
  const std::vector<std::uint32_t>& sorted(std::size_t p) const { return sorted_[p]; }
  /// Changes when rows already read may have changed (reset, or a cached trial's x changed): what was fitted on
  /// the history before is stale then.
  std::uint64_t generation() const { return generation_; }

 private:
  std::size_t unchanged_prefix(const std::vector<Trial>& trials) const;
  void grow(std::size_t n_trials);
  void extend_sorted(const SpaceModel& model, std::size_t from, std::size_t to);

  std::size_t D_ = 0, n_ = 0, cap_ = 0;
  std::uint64_t generation_ = 0, epoch_ = 0;
  std::vector<double> rows_;      // row-major copy of each trial's x (to detect changes)
  std::vector<char> malformed_;   // per trial: x.size() != D
  std::vector<double> cols_;      // parameter-major, in model coordinates: cols_[p * cap_ + i]
  std::vector<std::vector<std::uint32_t>> sorted_;
  std::vector<std::pair<double, std::uint32_t>> sort_buf_;
};

/// The split TPE fits on (see tpe_split in tpe.hpp); `ranked` (optional) receives the below set best first.
struct Split {
  std::vector<std::pair<double, std::size_t>> complete;
  std::vector<std::tuple<double, double, std::size_t>> pruned;
  std::vector<std::size_t> below, above, ranked;
  std::vector<char> mark;
  std::size_t n_finished = 0;
  void run(const SearchContext& ctx, const TPEConfig& cfg, bool want_ranked);

 private:
  /// What the split reads of a trial: its kind, and its ranking keys (complete: the loss; pruned: minus the
  /// deepest step and its signed value).
  struct Outcome {
    enum Kind : std::uint8_t { None, Complete, Pruned, Live } kind = None;  // Live: running or enqueued
    bool finished = false;
    double a = 0.0, b = 0.0;
  };
  static Outcome read(const SearchContext& ctx, const Trial& t);
  void refresh(const SearchContext& ctx);
  void select_best(std::size_t nbc);
  bool has_cut = false;               // the last split's largest below key (select_best), a hint only
  std::pair<double, std::size_t> cut;
  // Per trial, as last read; with the same SearchContext::trials_epoch only the trials not finished then (open)
  // and new ones are read again.
  std::vector<Outcome> outcomes_;
  std::vector<std::size_t> open_, still_open_;
  std::uint64_t epoch_ = 0;
};

}  // namespace kubetune::search::tpe
