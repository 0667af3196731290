// Google Benchmark: KPA decisions per second (single and batch), HPA reconciles, Erlang C sizing, simulation.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kubetune/sched/autoscale/hpa.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "kubetune/sched/autoscale/queueing.hpp"
#include "kubetune/sched/autoscale/simulate.hpp"

namespace as = kubetune::sched::autoscale;

namespace {
struct Inputs {
  std::vector<std::int32_t> ready;
  std::vector<double> stable, panic;
  explicit Inputs(std::size_t n) : ready(n), stable(n), panic(n) {
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> pods(0, 50);
    std::uniform_real_distribution<double> load(0.0, 3000.0);
    for (std::size_t i = 0; i < n; ++i) {
      ready[i] = pods(rng);
      stable[i] = load(rng);
      panic[i] = stable[i] * (0.5 + (i % 7) * 0.25);
    }
  }
};
}  // namespace

// One revision decided over and over (the call a controller makes per tick).
static void BM_KpaDecideSingle(benchmark::State& state) {
  as::KpaDecider d(as::make_decider_spec(as::KpaConfig{}, as::KpaRevision{}));
  Inputs in(1024);
  std::size_t i = 0;
  double now = 0.0;
  for (auto _ : state) {
    const std::size_t k = i++ & 1023;
    benchmark::DoNotOptimize(d.decide(now, in.ready[k], in.stable[k], in.panic[k]));
    now += 2.0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KpaDecideSingle);

// Batch form: n revisions per call on one core (threads = 1); items = decisions.
static void BM_KpaDecideBatch(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const bool delay = state.range(1) != 0;
  as::KpaRevision rev;
  if (delay) rev.scale_down_delay_s = 30.0;
  std::vector<as::KpaDecider> deciders(n, as::KpaDecider(as::make_decider_spec(as::KpaConfig{}, rev)));
  std::vector<as::ScaleResult> out(n);
  Inputs in(n);
  double now = 0.0;
  for (auto _ : state) {
    as::kpa_decide_batch(deciders.data(), n, now, in.ready.data(), in.stable.data(), in.panic.data(), out.data(), 1);
    benchmark::ClobberMemory();
    now += 2.0;
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetLabel(delay ? "scale-down delay 30 s" : "no delay");
}
BENCHMARK(BM_KpaDecideBatch)->Args({1000, 0})->Args({100000, 0})->Args({100000, 1});

static void BM_HpaReconcileWithBehaviour(benchmark::State& state) {
  as::HpaController c(as::HpaSpec{1, 1000, as::HpaBehavior{}});
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> want(1, 200);
  std::int32_t current = 10;
  double now = 0.0;
  for (auto _ : state) {
    const as::HpaDecision d = c.reconcile(now, current, std::vector<std::optional<std::int32_t>>{want(rng)});
    current = d.desired_replicas;
    now += 15.0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HpaReconcileWithBehaviour);

static void BM_HpaResourceReplicas(benchmark::State& state) {
  std::vector<as::HpaPod> pods(static_cast<std::size_t>(state.range(0)));
  for (std::size_t i = 0; i < pods.size(); ++i) {
    pods[i].metric = 300 + static_cast<std::int64_t>(i % 500);
    pods[i].request = 1000;
    pods[i].start_time = -1e4;
  }
  for (auto _ : state)
    benchmark::DoNotOptimize(as::resource_utilization_replicas(0.0, static_cast<std::int32_t>(pods.size()), 50, pods));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HpaResourceReplicas)->Arg(10)->Arg(1000);

static void BM_ErlangC(benchmark::State& state) {
  const auto c = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(as::erlang_c(c, 0.9 * static_cast<double>(c)));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ErlangC)->Arg(14)->Arg(1000);

static void BM_MinReplicasForSlo(benchmark::State& state) {
  const as::LatencySlo slo{0.5, 0.99, true, 1.0};
  for (auto _ : state) benchmark::DoNotOptimize(as::min_replicas_for_slo(static_cast<double>(state.range(0)), 0.1, 10, slo));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MinReplicasForSlo)->Arg(100)->Arg(10000);

static void BM_SimulateHour(benchmark::State& state) {
  const as::Trace t = as::trace_diurnal(200, 150, 3600, 3600, 1.0, 0.05, 3);
  as::SimConfig c;
  c.policy = static_cast<as::SimPolicy>(state.range(0));
  c.kpa_revision.container_concurrency = 10;
  for (auto _ : state) benchmark::DoNotOptimize(as::simulate(t, c));
  state.SetItemsProcessed(state.iterations() * 3600);  // simulated seconds
  state.SetLabel(c.policy == as::SimPolicy::kKpa ? "kpa" : c.policy == as::SimPolicy::kHpa ? "hpa" : "slo");
}
BENCHMARK(BM_SimulateHour)->Arg(0)->Arg(1)->Arg(2);
