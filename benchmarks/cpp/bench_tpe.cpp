// Google Benchmark: TPE time per suggestion versus the number of observed trials (10 parameters), on histories
// from the searcher's own run.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/tpe.hpp"

namespace {
using namespace kubetune;

struct History {
  SearchSpace space;
  std::vector<Trial> trials;
  std::vector<Direction> dirs{Direction::Minimize};
};

// The objective: a shifted sphere over the floats (optimum at 1), plus |k - 20| / 10 and the category index.
double objective(const std::vector<double>& x, int nf, bool mixed) {
  double s = 0.0;
  for (int i = 0; i < nf; ++i) s += (x[i] - 1.0) * (x[i] - 1.0);
  if (mixed) s += std::abs(x[8] - 20) / 10 + x[9];
  return s;
}

// n complete trials from the searcher's own optimisation run (cfg, one trial at a time) on a 10-d space:
// mixed = false: 10 floats on [-5, 5] (as the Python benchmark against Optuna); mixed = true: 8 floats, one int
// in [1, 64], one 4-way categorical. A run's history clusters near the optimum, unlike random points.
History make_history(std::size_t n, bool mixed, const search::TPEConfig& cfg) {
  History h;
  const int nf = mixed ? 8 : 10;
  for (int i = 0; i < nf; ++i) h.space.add_float("x" + std::to_string(i), -5.0, 5.0);
  if (mixed) {
    h.space.add_int("k", 1, 64);
    h.space.add_categorical("c", {"a", "b", "c", "d"});
  }
  search::TPE tpe(cfg);
  Rng rng(123);
  for (std::size_t t = 0; t < n; ++t) {
    SearchContext ctx{h.space, h.trials, h.dirs, rng};
    Trial tr;
    tr.id = static_cast<std::int64_t>(t);
    tr.x = tpe.ask(ctx, 1).at(0).x;
    tr.values = {objective(tr.x, nf, mixed)};
    tr.state = TrialState::Complete;
    h.trials.push_back(std::move(tr));
  }
  return h;
}

/// Consecutive asks of `batch` points on a fixed history (a fresh random stream each, as a study gives).
void run_asks(benchmark::State& state, search::TPE& tpe, const History& h, std::size_t batch) {
  std::uint64_t k = 0;
  for (auto _ : state) {
    Rng rng(7, k++);
    SearchContext ctx{h.space, h.trials, h.dirs, rng};
    auto s = tpe.ask(ctx, batch);
    benchmark::DoNotOptimize(s.data());
  }
}

void BM_TPESuggest(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  search::TPEConfig cfg = state.range(3) != 0 ? search::TPEConfig{} : search::TPEConfig::optuna();
  cfg.multivariate = state.range(1) != 0;
  History h = make_history(n, state.range(2) != 0, cfg);
  search::TPE tpe(cfg);
  run_asks(state, tpe, h, 1);
  state.counters["trials"] = static_cast<double>(n);
}

// Univariate ask with n_threads = 1 or 2 (groups fitted and scored on several threads): wall time.
void BM_TPESuggestThreads(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  search::TPEConfig cfg;
  cfg.n_threads = static_cast<int>(state.range(1));
  History h = make_history(n, false, cfg);
  search::TPE tpe(cfg);
  run_asks(state, tpe, h, 1);
}

void BM_TPEBatch8(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  History h = make_history(n, false, search::TPEConfig{});
  search::TPE tpe;
  run_asks(state, tpe, h, 8);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 8);
}
}  // namespace

// refine = 0: TPEConfig::optuna() (no candidate refinement), to show what the refinement costs.
BENCHMARK(BM_TPESuggest)
    ->ArgNames({"n", "multivariate", "mixed", "refine"})
    ->ArgsProduct({{100, 1000, 5000}, {0, 1}, {0, 1}, {1}})
    ->ArgsProduct({{1000}, {0, 1}, {0}, {0}})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TPESuggestThreads)
    ->ArgNames({"n", "threads"})
    ->ArgsProduct({{1000, 5000}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TPEBatch8)->ArgName("n")->Arg(1000)->Unit(benchmark::kMicrosecond);
