// TPE internals: what an ask keeps between steps and between asks (tpe.cpp runs the steps, fit.cpp fits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kubetune/core/point_set.hpp"
#include "model.hpp"

namespace kubetune::search::detail {

/// "No index" (a kernel, a row position, a fit's batch size).
inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

/// Buffers of one gather (one per thread).
struct Gather {
  std::vector<double> obs, w_below, w_above;  // rows; recency weights of the last gather of each set
  std::vector<std::size_t> order, act, rowpos;
  std::vector<double> sorted_obs, sorted_w;   // a one-parameter g(x)'s rows in sorted order (sort_rows)
  std::vector<std::size_t> identity;
  // refit_model: positions, inserted rows, kernel weights, each trial's rank among the rows, the liars
  std::vector<std::size_t> erase, insert_at, rank, liars;
  std::vector<double> rows, weights;
  std::vector<std::pair<double, std::uint64_t>> added, erased;
};

/// An estimator as last fitted, for refitting it in place: each kernel's order key (kernel order is ascending
/// keys: (0, the row's key), or (value, key) for a sorted one-parameter g(x)), the history rows it holds (ascending)
/// and its liars.
struct ModelRows {
  bool valid = false;
  std::uint64_t generation = 0;        // History::generation() it was fitted on
  std::uint64_t liar_ask = 0;          // the ask its liars belong to
  std::size_t n_liars = 0;
  std::vector<std::size_t> rows;
  std::vector<std::pair<double, std::uint64_t>> keys;
};

/// A group's two estimators and the candidates of the point being proposed.
struct GroupState {
  ParzenEstimator below, above;
  bool below_fresh = false;
  std::size_t above_version = kNone;  // n_batch it was fitted with
  ModelRows below_rows, above_rows;
  std::vector<double> cand, lb, la;  // n_ei_candidates draws from l(x), then the refinement draws
  std::size_t n_main = 0, n_cand = 0;
};

struct TPEWorkspace {
  tpe::SpaceModel model;
  tpe::History history;
  tpe::Split split;
  PointSet seen;  // points tried and proposed (when exact repeats are possible)
  std::vector<double> batch;  // points of this ask so far, row-major (constant liars)
  std::size_t n_batch = 0;
  std::uint64_t ask_id = 0;   // counts asks (liars of an earlier ask are gone)
  std::vector<GroupState> groups;
  std::vector<Gather> gathers;
  std::vector<double> centre;
};

/// l(x) once per ask; g(x) again after each constant liar (fit.cpp).
void fit_group(TPEWorkspace& ws, const TPEConfig& cfg, const ParzenOptions& popt, Gather& g, std::size_t gi);

}  // namespace kubetune::search::detail
