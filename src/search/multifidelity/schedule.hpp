// Internal: the stateless successive-halving bracket scheduler shared by Hyperband and BOHB.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kubetune/core/point_set.hpp"
#include "kubetune/core/searcher.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"

namespace kubetune::search::mf_detail {

/// Throws InvalidArgument unless `name` is an unconditional Int or Double parameter of `space`.
void check_resource_param(const SearchSpace& space, const std::string& name, const std::string& who);
/// Budget `r` as a legal value of parameter idx (Int: rounded); throws if outside the parameter's range.
double resource_value(const SearchSpace& space, std::size_t idx, double r, const std::string& who);

/// One thing to run: a new configuration (base_x == nullptr) or a promotion of base_x.
struct Plan {
  std::int64_t bracket = 0;
  int s = 0;
  int rung = 0;
  std::int64_t cfg = 0;
  const std::vector<double>* base_x = nullptr;
  double resource = 0.0;
};

/// Rebuilds every bracket from trials' system_attrs (hb_bracket, hb_rung, hb_config) and plans what to run.
class Scheduler {
 public:
  Scheduler(const std::vector<Bracket>& table, std::int64_t n_iterations, const std::vector<Trial>& trials,
            const SearchContext& ctx);
  /// Up to n plans: oldest bracket first; in each, fill rung 0, then promote the top of finished rungs;
  /// then start the next bracket.
  std::vector<Plan> plan(std::size_t n);
  struct Status {
    std::int64_t started = 0, finished = 0, running = 0, ready = 0;
  };
  Status status();

 private:
  struct Member {
    std::int64_t cfg;
    const Trial* trial;  // nullptr for a member planned in this ask
  };
  struct BState {
    std::vector<std::vector<Member>> rungs;
  };
  // Walk bracket k; append up to `limit - out.size()` plans (or just count them when out == nullptr).
  // Returns true when the bracket is finished.
  bool walk(std::int64_t k, std::size_t limit, std::vector<Plan>* out, std::int64_t* ready);

  const std::vector<Bracket>& table_;
  std::int64_t total_;  // 0 = unlimited
  const SearchContext& ctx_;
  std::map<std::int64_t, BState> states_;
  std::int64_t next_cfg_ = 0;
  std::int64_t running_ = 0;
};

/// The configurations tried so far (the trials' points, then each one planned), so that a discrete space
/// does not repeat one: draw() redraws up to 100 times, then accepts the repeat. A space with a continuous
/// parameter is not checked (one draw). A policy over kubetune::PointSet / draw_unseen.
class SeenConfigs {
 public:
  SeenConfigs(const SearchSpace& space, const std::vector<Trial>& trials);
  /// A configuration from `draw()` (returning std::vector<double>), new where the space allows.
  template <class Draw>
  std::vector<double> draw(Draw&& d) const {
    return draw_unseen(set_, tries_, std::forward<Draw>(d)).x;
  }
  void insert(const std::vector<double>& x) {
    if (tries_ > 1) set_.insert(x);
  }

 private:
  int tries_ = 1;
  PointSet set_;
};

}  // namespace kubetune::search::mf_detail
