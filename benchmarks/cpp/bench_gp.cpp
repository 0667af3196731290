// Google Benchmark of the GP searcher: hyperparameter fit, batched posterior, rank-1 update, full ask.
#include <cmath>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "kubetune/core/searcher.hpp"
#include "kubetune/core/study.hpp"
#include "kubetune/search/functions.hpp"
#include "kubetune/search/gp/bayesopt.hpp"
#include "kubetune/search/gp/gp.hpp"

using namespace kubetune;
using namespace kubetune::search::gp;

namespace {
// Thin wrapper over the built-in benchmark function (kubetune/search/functions.hpp).
double hartmann6(const std::vector<double>& x) {
  static const auto f = search::functions::get("hartmann6");
  return f.evaluate(x);
}

SearchSpace space6() {
  SearchSpace s;
  for (int i = 0; i < 6; ++i) s.add_float("x" + std::to_string(i), 0, 1);
  return s;
}

std::vector<Trial> history(const SearchSpace& s, int n) {
  Rng rng(1);
  std::vector<Trial> ts;
  for (int i = 0; i < n; ++i) {
    Trial t;
    t.id = i;
    t.x = s.sample(rng);
    t.state = TrialState::Complete;
    t.values = {hartmann6(t.x)};
    ts.push_back(std::move(t));
  }
  return ts;
}

void data(int n, Eigen::MatrixXd& X, Eigen::VectorXd& y) {
  Rng rng(2);
  X.resize(6, n);
  y.resize(n);
  for (int j = 0; j < n; ++j) {
    std::vector<double> x(6);
    for (int d = 0; d < 6; ++d) X(d, j) = x[static_cast<std::size_t>(d)] = rng.uniform();
    y[j] = hartmann6(x);
  }
}
}  // namespace

// Cold ML-II fit (default + 2 random starts) on n points, as the searcher does without a warm start.
static void BM_GPFitHyperparameters(benchmark::State& st) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  data(static_cast<int>(st.range(0)), X, y);
  for (auto _ : st) {
    GaussianProcess gp(KernelType::Matern52, 6);
    gp.set_data(X, y);
    FitOptions fo;
    Rng rng(3);
    benchmark::DoNotOptimize(gp.fit_hyperparameters(fo, rng));
  }
}
BENCHMARK(BM_GPFitHyperparameters)->Arg(100)->Arg(200)->Arg(400)->Unit(benchmark::kMillisecond);

// Cholesky factorisation of n points (what each ask does on all points after the fit).
static void BM_GPFactorize(benchmark::State& st) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  data(static_cast<int>(st.range(0)), X, y);
  GaussianProcess gp(KernelType::Matern52, 6);
  for (auto _ : st) gp.set_data(X, y);
}
BENCHMARK(BM_GPFactorize)->Arg(100)->Arg(200)->Arg(1000)->Arg(2000)->Arg(5000)->Unit(benchmark::kMillisecond);

// Posterior mean + variance of 1,024 candidates, 1 thread.
static void BM_GPPredict1024(benchmark::State& st) {
  Eigen::MatrixXd X, Q;
  Eigen::VectorXd y, qy, mu, var;
  data(static_cast<int>(st.range(0)), X, y);
  data(1024, Q, qy);
  GaussianProcess gp(KernelType::Matern52, 6);
  gp.set_data(X, y);
  for (auto _ : st) gp.predict(Q, mu, var, 1);
}
BENCHMARK(BM_GPPredict1024)->Arg(100)->Arg(200)->Arg(1000)->Arg(5000)->Unit(benchmark::kMillisecond);

// Rank-1 Cholesky update (one fantasised observation) on n points.
static void BM_GPRankOneUpdate(benchmark::State& st) {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  data(static_cast<int>(st.range(0)) + 1, X, y);
  GaussianProcess base(KernelType::Matern52, 6);
  base.set_data(X.leftCols(st.range(0)), y.head(st.range(0)));
  for (auto _ : st) {
    st.PauseTiming();
    GaussianProcess gp = base;
    st.ResumeTiming();
    gp.add_observation(X.col(st.range(0)), y[st.range(0)]);
  }
}
BENCHMARK(BM_GPRankOneUpdate)->Arg(100)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

// One suggestion with n complete trials of Hartmann6, 1 thread, repeated on the same history: the stored
// fit is from this n, so this is an ask without a hyperparameter refit (factor extended from the cache).
static void BM_GPAsk(benchmark::State& st) {
  SearchSpace s = space6();
  std::vector<Trial> ts = history(s, static_cast<int>(st.range(0)));
  std::vector<Direction> dirs{Direction::Minimize};
  GPConfig c;
  c.n_threads = 1;
  GPSearcher g(c);
  {  // As in a running study, the last trial carries the previous fit (warm start).
    Rng rng(7, 1000);
    SearchContext ctx{s, ts, dirs, rng};
    ts.back().system_attrs = g.ask(ctx, 1).at(0).attrs;
  }
  std::uint64_t k = 0;
  for (auto _ : st) {
    Rng rng(7, k++);
    SearchContext ctx{s, ts, dirs, rng};
    benchmark::DoNotOptimize(g.ask(ctx, 1));
  }
}
BENCHMARK(BM_GPAsk)->Arg(50)->Arg(100)->Arg(200)->Arg(201)->Arg(1000)->Arg(2000)->Arg(5000)->Unit(benchmark::kMillisecond);

// A running study: n - 1 random trials, one untimed ask (the cold fit), then 20 consecutive ask + tell
// from n trials on (the reported time is for all 20: divide by 20 for the mean per ask, hyperparameter
// refits, every ~10% growth of the history, included).
static void BM_GPAskSequence(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  constexpr int kAsks = 20;
  SearchSpace s = space6();
  std::vector<Trial> hist = history(s, n - 1);
  GPConfig c;
  c.n_threads = 1;
  for (auto _ : st) {
    st.PauseTiming();
    Study study(s, std::make_unique<GPSearcher>(c), {Direction::Minimize}, 3);
    for (const Trial& t : hist) study.add_trial(s.to_assignment(t.x), t.values);
    Trial first = study.ask(1).at(0);
    study.tell(first.id, hartmann6(first.x));
    st.ResumeTiming();
    for (int k = 0; k < kAsks; ++k) {
      Trial t = study.ask(1).at(0);
      study.tell(t.id, hartmann6(t.x));
    }
  }
}
BENCHMARK(BM_GPAskSequence)->Arg(50)->Arg(200)->Arg(1000)->Unit(benchmark::kMillisecond)->Iterations(3);
