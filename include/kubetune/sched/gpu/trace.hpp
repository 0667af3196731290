// Alibaba GPU trace 2023 ("openb") loading, a seeded synthetic look-alike, and the FGD paper's replay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kubetune/sched/gpu/cluster.hpp"
#include "kubetune/sched/gpu/request.hpp"

namespace kubetune::sched::gpu {

/// Trace CSV rules (both readers): a regular file of at most 1 GiB, lines of at most 64 KiB, a header naming the
/// columns (any order, extra columns ignored, no duplicates), at least one data row, every row with as many fields
/// as the header; blank lines are skipped. Integers must be whole decimal fields within the column's range (no
/// "1.7", no value beyond int64). Throws IoError (missing, unreadable or not a regular file) or InvalidArgument
/// naming the file, the line (1 = header) and the column.
///
/// Reads openb_node_list_*.csv (columns sn, cpu_milli, memory_mib, gpu in [0, 64], model); the nodes' total
/// cpu_milli must fit int64.
Cluster load_trace_cluster(const std::string& csv_path, bool gpu_nodes_only = true);
/// Reads openb_pod_list_*.csv (name, cpu_milli, memory_mib, num_gpu in [0, 64], gpu_milli in [0, 1000], optional
/// gpu_spec: '|'-separated models) into requests; each is checked by Request::validate_and_normalise.
std::vector<Request> load_trace_pods(const std::string& csv_path);

/// A seeded cluster + workload with the trace's shapes (8-GPU and 2-GPU nodes of a few models; ~13 % CPU-only
/// tasks, ~38 % shared-GPU tasks with the trace's common fractions, whole-GPU and a few 2/4/8-GPU tasks).
struct SyntheticTrace {
  Cluster cluster;
  std::vector<Request> pods;
};
SyntheticTrace synthetic_trace(int num_nodes, int num_pods, std::uint64_t seed);

struct ReplayOptions {
  std::string policy = "fgd";   // best_fit | spread | fgd | kubetune
  double inflation = 1.3;       // sample tasks (with replacement) until this x cluster GPU capacity has arrived
  std::uint64_t seed = 42;
  /// Baselines use Kubernetes scheduler semantics (integer scores 0..100, random tie among the best), as the
  /// paper's simulator does. kubetune always uses exact scores.
  bool kube_semantics = true;
  double popularity = 0.95;     // typical-pod coverage (simulator default)
  /// FGD's typical tasks counted by 1 + GPUs requested (simulator's GPU-resource weighting) instead of by count;
  /// with it FGD reproduces the paper's default-trace figure, with plain counts 8-GPU tasks drop out of the
  /// typical set. kubetune always uses kubetune_typical_pods.
  bool gpu_weighted_typical = true;
  double step_pct = 1.0;        // curve resolution in % of GPU capacity arrived
};

struct ReplayPoint {
  double arrived_pct = 0;        // GPU demand arrived so far, % of cluster GPU capacity
  double allocated_pct = 0;      // GPU allocated, % of capacity
  double allocation_rate_pct = 0;// allocated / arrived, %
  double unallocated_pct = 0;    // arrived - allocated, % of capacity (at 100 % arrived: idle GPU share)
  double frag_ratio_pct = 0;     // FGD fragmentation / free GPU, %
  double frag_pct = 0;           // FGD fragmentation, % of capacity
};

struct ReplayResult {
  std::string policy;
  std::uint64_t seed = 0;
  std::int64_t pods_arrived = 0;
  std::int64_t pods_failed = 0;
  std::vector<ReplayPoint> curve;
  ReplayPoint at_100;            // first point with arrived >= 100 %
  double seconds = 0;            // wall time of the placement loop
};

/// FGD paper replay (Weng et al. ATC'23, Sec. 6.1; simulator TunePodsByNodeTotalResource + shufflePod): the
/// whole workload plus tasks sampled with replacement until `inflation` x GPU capacity, shuffled with `seed`,
/// placed one by one with no departures; failed tasks stay failed.
ReplayResult replay(const Cluster& cluster, const std::vector<Request>& workload, const ReplayOptions& opt);

}  // namespace kubetune::sched::gpu
