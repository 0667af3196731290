// Google Benchmark: GPU placement decisions per second at 1k / 10k / 100k nodes (indexed allocator, one thread).
//
// Cluster: the Alibaba openb GPU node list (1,213 nodes) tiled to N nodes, or the seeded synthetic look-alike when
// the trace is absent. Requests: drawn from the trace's typical task shapes (those FGD measures against), so a
// steady stream of templated pods. Each iteration places one request and, to hold the cluster at ~60-70 % GPU
// allocation, releases the oldest live placement once the target is reached. Reported `decisions/s` counts
// place() calls.
#include <benchmark/benchmark.h>

#include <deque>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/policy.hpp"
#include "kubetune/sched/gpu/trace.hpp"

namespace g = kubetune::sched::gpu;

namespace {

struct Fixture {
  g::Cluster cluster;
  std::vector<g::Request> shapes;   // request templates
  std::vector<double> weights;      // their popularity
  std::vector<g::TypicalPod> typical;           // FGD (GPU-weighted, as the replay)
  std::vector<g::TypicalPod> typical_kubetune;  // kubetune's set
};

std::string trace_dir() {
#ifdef KT_SHARED_DATA_DIR
  std::string d = std::string(KT_SHARED_DATA_DIR) + "/alibaba-gpu-2023/";
#else
  std::string d = "../shared/data/alibaba-gpu-2023/";
#endif
  if (const char* e = std::getenv("KUBETUNE_SHARED_DATA")) d = std::string(e) + "/alibaba-gpu-2023/";
  return d;
}

const Fixture& fixture(int nodes) {
  static std::map<int, std::unique_ptr<Fixture>> cache;
  auto& f = cache[nodes];
  if (f) return *f;
  f = std::make_unique<Fixture>();
  const std::string d = trace_dir();
  g::Cluster base;
  std::vector<g::Request> pods;
  if (std::filesystem::exists(d + "openb_node_list_gpu_node.csv")) {
    base = g::load_trace_cluster(d + "openb_node_list_gpu_node.csv");
    pods = g::load_trace_pods(d + "openb_pod_list_default.csv");
  } else {
    g::SyntheticTrace t = g::synthetic_trace(1213, 8000, 1);
    base = t.cluster;
    pods = t.pods;
  }
  for (int i = 0; i < nodes; ++i) {
    g::NodeSpec s = base.node(i % base.num_nodes());
    s.name = "n" + std::to_string(i);
    f->cluster.add_node(std::move(s));
  }
  f->typical = g::typical_pods(f->cluster, pods, 0.95, true, true);
  f->typical_kubetune = g::kubetune_typical_pods(f->cluster, pods, 0.95);
  for (const g::TypicalPod& t : f->typical) {
    g::Request r;
    r.cpu_milli = t.cpu_milli;
    r.memory_mib = t.cpu_milli * 2;
    r.gpu_count = t.gpu_count;
    r.gpu_milli = t.gpu_milli;
    f->shapes.push_back(r);
    f->weights.push_back(t.weight);
  }
  return *f;
}

void run(benchmark::State& state, const char* policy, bool indexed = true) {
  const int nodes = static_cast<int>(state.range(0));
  const Fixture& f = fixture(nodes);
  g::AllocatorOptions opt;
  opt.indexed = indexed;
  const bool ours = std::string(policy) == "kubetune";
  g::Allocator a(f.cluster, g::make_policy(policy, ours ? f.typical_kubetune : f.typical), opt);
  std::mt19937_64 rng(1);
  std::discrete_distribution<std::size_t> pick(f.weights.begin(), f.weights.end());
  std::deque<std::uint64_t> live;
  const double target = 0.65 * static_cast<double>(f.cluster.total_gpu_milli());
  double allocated = 0;
  std::deque<double> sizes;
  // Warm up to the target occupancy (not timed).
  while (allocated < target) {
    const g::Request& r = f.shapes[pick(rng)];
    if (auto p = a.place(r)) {
      live.push_back(p->id);
      sizes.push_back(static_cast<double>(r.total_gpu_milli()));
      allocated += sizes.back();
    } else {
      break;
    }
  }
  std::int64_t decisions = 0;
  for (auto _ : state) {
    const g::Request& r = f.shapes[pick(rng)];
    auto p = a.place(r);
    ++decisions;
    if (p) {
      live.push_back(p->id);
      sizes.push_back(static_cast<double>(r.total_gpu_milli()));
      allocated += sizes.back();
    }
    while (allocated > target && !live.empty()) {
      a.release(live.front());
      allocated -= sizes.front();
      live.pop_front();
      sizes.pop_front();
    }
  }
  state.counters["decisions/s"] = benchmark::Counter(static_cast<double>(decisions), benchmark::Counter::kIsRate);
  state.counters["nodes"] = nodes;
}

void BM_PlaceBestFit(benchmark::State& s) { run(s, "best_fit"); }
void BM_PlaceFgd(benchmark::State& s) { run(s, "fgd"); }
void BM_PlaceKubetune(benchmark::State& s) { run(s, "kubetune"); }
// The same FGD decisions by a full scan over the nodes (what the index avoids).
void BM_PlaceFgdFullScan(benchmark::State& s) { run(s, "fgd", false); }

}  // namespace

BENCHMARK(BM_PlaceBestFit)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_PlaceFgd)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_PlaceKubetune)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
BENCHMARK(BM_PlaceFgdFullScan)->Arg(1000)->Unit(benchmark::kMicrosecond)->MinTime(1.0);
