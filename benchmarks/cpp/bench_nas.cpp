// DARTS step time: reduced supernet on the CPU (5 cells, C=8, batch 32, 28x28) and paper-size on a GPU.
// A "step" = first-order architecture step (alpha forward/backward on a validation batch + Adam) and a
// weight step (forward/backward on a training batch + clip + SGD), as in DARTS' train_search.py.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kubetune/core/device.hpp"
#include "kubetune/nas/darts.hpp"

namespace {

using namespace kubetune::nas;

struct Setup {
  std::unique_ptr<Darts> darts;
  Batch train, val;
};

Setup make(Device dev, int cells, int C, int batch, int hw, int in_ch, bool second_order) {
  DartsConfig cfg;
  cfg.net.in_channels = in_ch;
  cfg.net.num_classes = 10;
  cfg.net.channels = C;
  cfg.net.layers = cells;
  cfg.second_order = second_order;
  cfg.batch_size = batch;
  Setup s;
  s.darts = std::make_unique<Darts>(cfg, dev);
  std::mt19937_64 rng(0);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> X(static_cast<std::size_t>(2 * batch) * in_ch * hw * hw);
  for (auto& v : X) v = nd(rng);
  std::vector<int> y(2 * batch), r1(batch), r2(batch);
  for (int i = 0; i < 2 * batch; ++i) y[i] = i % 10;
  for (int i = 0; i < batch; ++i) {
    r1[i] = i;
    r2[i] = batch + i;
  }
  s.train = s.darts->make_batch(X.data(), y.data(), r1, in_ch, hw, hw);
  s.val = s.darts->make_batch(X.data(), y.data(), r2, in_ch, hw, hw);
  return s;
}

void run_steps(benchmark::State& state, Setup& s, Device dev) {
  s.darts->step(s.train, s.val, 0.025);  // warm-up: fills the memory pool
  pool_reset_peak(dev);
  for (auto _ : state) {
    auto r = s.darts->step(s.train, s.val, 0.025);
    benchmark::DoNotOptimize(r.loss);
  }
  state.counters["peak_MiB"] = static_cast<double>(pool_stats(dev).peak) / (1 << 20);
  state.counters["weights"] = static_cast<double>(s.darts->net().num_weights());
}

bool have_cuda(benchmark::State& state) {
  if (kubetune::device::cuda_available()) return true;
  state.SkipWithError("no CUDA device (or built without CUDA)");
  return false;
}

void BM_DartsStepCPU_Reduced(benchmark::State& state) {
  set_n_threads(static_cast<int>(state.range(0)));
  Setup s = make(Device::CPU, 5, 8, 32, 28, 1, false);
  run_steps(state, s, Device::CPU);
  state.SetLabel("5 cells, C=8, batch 32, 28x28, threads " + std::to_string(state.range(0)));
}
BENCHMARK(BM_DartsStepCPU_Reduced)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_DartsStepCPU_Reduced_SecondOrder(benchmark::State& state) {
  set_n_threads(1);
  Setup s = make(Device::CPU, 5, 8, 32, 28, 1, true);
  run_steps(state, s, Device::CPU);
}
BENCHMARK(BM_DartsStepCPU_Reduced_SecondOrder)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_DartsStepCUDA_Paper(benchmark::State& state) {
  if (!have_cuda(state)) return;
  Setup s = make(Device::CUDA, 8, 16, 64, 32, 3, false);
  run_steps(state, s, Device::CUDA);
  state.SetLabel("8 cells, C=16, batch 64, 32x32");
}
BENCHMARK(BM_DartsStepCUDA_Paper)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

void BM_DartsStepCUDA_Paper_SecondOrder(benchmark::State& state) {
  if (!have_cuda(state)) return;
  Setup s = make(Device::CUDA, 8, 16, 64, 32, 3, true);
  run_steps(state, s, Device::CUDA);
  state.SetLabel("8 cells, C=16, batch 64, 32x32, second order");
}
BENCHMARK(BM_DartsStepCUDA_Paper_SecondOrder)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

void BM_DartsStepCUDA_Reduced(benchmark::State& state) {
  if (!have_cuda(state)) return;
  Setup s = make(Device::CUDA, 5, 8, 32, 28, 1, false);
  run_steps(state, s, Device::CUDA);
}
BENCHMARK(BM_DartsStepCUDA_Reduced)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

}  // namespace
