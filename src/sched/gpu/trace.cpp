// Trace CSV loading, synthetic workload generator and the FGD-paper replay loop.
#include "kubetune/sched/gpu/trace.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/policy.hpp"

namespace kubetune::sched::gpu {

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  int col(const std::string& name, const std::string& path, bool required = true) const {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
    KT_CHECK(!required, InvalidArgument, "trace file '", path, "' lacks column '", name, "'");
    return -1;
  }
};

Csv read_csv(const std::string& path) {
  std::ifstream in(path);
  KT_CHECK(in.good(), IoError, "cannot open trace file '", path, "'");
  Csv c;
  std::string line;
  KT_CHECK(static_cast<bool>(std::getline(in, line)), InvalidArgument, "trace file '", path, "' is empty");
  c.header = split(line, ',');
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    c.rows.push_back(split(line, ','));
  }
  return c;
}

std::int64_t to_i64(const std::string& s, const std::string& path, std::size_t row, const char* col) {
  try {
    std::size_t pos = 0;
    const std::int64_t v = std::stoll(s, &pos);
    return v;
  } catch (...) {
    KT_THROW(InvalidArgument, "trace file '", path, "' row ", row + 1, ": column '", col, "' = '", s,
             "' is not an integer");
  }
}
}  // namespace

Cluster load_trace_cluster(const std::string& path, bool gpu_nodes_only) {
  const Csv c = read_csv(path);
  const int sn = c.col("sn", path), cpu = c.col("cpu_milli", path), mem = c.col("memory_mib", path),
            gpu = c.col("gpu", path), model = c.col("model", path);
  Cluster cl;
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    const auto& row = c.rows[r];
    KT_CHECK(row.size() >= c.header.size() - 1, InvalidArgument, "trace file '", path, "' row ", r + 1,
             " has too few columns");
    NodeSpec s;
    s.name = row[static_cast<std::size_t>(sn)];
    s.cpu_milli = to_i64(row[static_cast<std::size_t>(cpu)], path, r, "cpu_milli");
    s.memory_mib = to_i64(row[static_cast<std::size_t>(mem)], path, r, "memory_mib");
    s.num_gpus = static_cast<int>(to_i64(row[static_cast<std::size_t>(gpu)], path, r, "gpu"));
    s.model = static_cast<std::size_t>(model) < row.size() ? row[static_cast<std::size_t>(model)] : "";
    if (gpu_nodes_only && s.num_gpus == 0) continue;
    cl.add_node(std::move(s));
  }
  return cl;
}

std::vector<Request> load_trace_pods(const std::string& path) {
  const Csv c = read_csv(path);
  const int name = c.col("name", path), cpu = c.col("cpu_milli", path), mem = c.col("memory_mib", path),
            ng = c.col("num_gpu", path), gm = c.col("gpu_milli", path), spec = c.col("gpu_spec", path, false);
  std::vector<Request> out;
  out.reserve(c.rows.size());
  for (std::size_t r = 0; r < c.rows.size(); ++r) {
    const auto& row = c.rows[r];
    KT_CHECK(row.size() >= 5, InvalidArgument, "trace file '", path, "' row ", r + 1, " has too few columns");
    Request q;
    q.name = row[static_cast<std::size_t>(name)];
    q.cpu_milli = to_i64(row[static_cast<std::size_t>(cpu)], path, r, "cpu_milli");
    q.memory_mib = to_i64(row[static_cast<std::size_t>(mem)], path, r, "memory_mib");
    q.gpu_count = static_cast<int>(to_i64(row[static_cast<std::size_t>(ng)], path, r, "num_gpu"));
    q.gpu_milli = q.gpu_count > 0 ? static_cast<int>(to_i64(row[static_cast<std::size_t>(gm)], path, r, "gpu_milli")) : 0;
    if (spec >= 0 && static_cast<std::size_t>(spec) < row.size() && !row[static_cast<std::size_t>(spec)].empty()) {
      for (const std::string& m : split(row[static_cast<std::size_t>(spec)], '|'))
        if (!m.empty() && std::find(q.models.begin(), q.models.end(), m) == q.models.end()) q.models.push_back(m);
    }
    q.validate_and_normalise();
    out.push_back(std::move(q));
  }
  return out;
}

SyntheticTrace synthetic_trace(int num_nodes, int num_pods, std::uint64_t seed) {
  KT_CHECK(num_nodes >= 1, InvalidArgument, "num_nodes = ", num_nodes, " must be >= 1");
  KT_CHECK(num_pods >= 1, InvalidArgument, "num_pods = ", num_pods, " must be >= 1");
  std::mt19937_64 rng(seed);
  SyntheticTrace t;
  // Node mix after the trace: ~45 % 8-GPU (G2-like, 96 cores), ~43 % 2-GPU (T4-like), rest 4-GPU V100 / 1-GPU.
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < num_nodes; ++i) {
    NodeSpec s;
    s.name = "syn-node-" + std::to_string(i);
    const double x = u(rng);
    if (x < 0.45) {
      s.cpu_milli = 96000; s.memory_mib = 786432; s.num_gpus = 8; s.model = "G2";
    } else if (x < 0.88) {
      s.cpu_milli = 104000; s.memory_mib = 393216; s.num_gpus = 2; s.model = "T4";
    } else if (x < 0.97) {
      s.cpu_milli = 64000; s.memory_mib = 262144; s.num_gpus = 4; s.model = "V100M32";
    } else {
      s.cpu_milli = 32000; s.memory_mib = 131072; s.num_gpus = 1; s.model = "P100";
    }
    t.cluster.add_node(std::move(s));
  }
  const int fractions[] = {810, 470, 320, 650, 230, 460, 500, 250, 100, 200};
  const std::int64_t cpus[] = {1000, 2000, 4000, 6000, 8000, 12000, 16000};
  for (int i = 0; i < num_pods; ++i) {
    Request r;
    r.name = "syn-pod-" + std::to_string(i);
    r.cpu_milli = cpus[rng() % 7];
    r.memory_mib = r.cpu_milli * 2;  // 2 MiB per milli-CPU, as most trace pods
    const double x = u(rng);
    if (x < 0.13) {
      r.gpu_count = 0;
    } else if (x < 0.51) {
      r.gpu_count = 1;
      r.gpu_milli = fractions[rng() % 10];
    } else if (x < 0.985) {
      r.gpu_count = 1;
      r.gpu_milli = 1000;
    } else {
      const int counts[] = {2, 4, 8};
      r.gpu_count = counts[rng() % 3];
      r.gpu_milli = 1000;
    }
    t.pods.push_back(std::move(r));
  }
  return t;
}

ReplayResult replay(const Cluster& cluster, const std::vector<Request>& workload, const ReplayOptions& opt) {
  KT_CHECK(!workload.empty(), InvalidArgument, "replay workload is empty");
  KT_CHECK(opt.inflation > 0.0 && opt.inflation <= 10.0, InvalidArgument, "inflation = ", opt.inflation,
           " must be in (0, 10]");
  KT_CHECK(opt.step_pct > 0.0, InvalidArgument, "step_pct = ", opt.step_pct, " must be > 0");
  KT_CHECK(cluster.total_gpu_milli() > 0, InvalidArgument, "replay cluster has no GPU");
  const std::vector<TypicalPod> tp = typical_pods(cluster, workload, opt.popularity, true, opt.gpu_weighted_typical);
  auto policy = make_policy(opt.policy, opt.policy == "kubetune" ? kubetune_typical_pods(cluster, workload, opt.popularity) : tp);
  const bool kube = opt.kube_semantics && opt.policy != "kubetune";
  policy->set_kube_semantics(kube);
  AllocatorOptions ao;
  ao.seed = opt.seed;
  ao.indexed = true;
  Allocator alloc(cluster, policy, ao);

  // Inflate: the original list, then samples with replacement until the next would pass inflation x capacity.
  std::mt19937_64 rng(opt.seed);
  const double cap = static_cast<double>(cluster.total_gpu_milli());
  std::vector<Request> pods = workload;
  double total = 0;
  for (const Request& r : pods) total += static_cast<double>(r.total_gpu_milli());
  if (total < opt.inflation * cap) {
    std::uniform_int_distribution<std::size_t> pick(0, workload.size() - 1);
    for (int guard = 0; guard < 10000000; ++guard) {
      const Request& r = workload[pick(rng)];
      if (total + static_cast<double>(r.total_gpu_milli()) > opt.inflation * cap) break;
      total += static_cast<double>(r.total_gpu_milli());
      pods.push_back(r);
    }
  } else {
    while (!pods.empty() && total > opt.inflation * cap) {  // tune down: drop random tasks
      std::uniform_int_distribution<std::size_t> pick(0, pods.size() - 1);
      const std::size_t k = pick(rng);
      total -= static_cast<double>(pods[k].total_gpu_milli());
      pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  std::shuffle(pods.begin(), pods.end(), rng);

  ReplayResult res;
  res.policy = opt.policy;
  res.seed = opt.seed;
  double arrived = 0;
  double next_mark = opt.step_pct;
  bool have100 = false;
  double placing = 0;
  auto point = [&](double arrived_milli) {
    AllocatorStats s = alloc.stats(tp);
    ReplayPoint p;
    p.arrived_pct = 100.0 * arrived_milli / cap;
    p.allocated_pct = 100.0 * static_cast<double>(s.gpu_milli_allocated) / cap;
    p.allocation_rate_pct = arrived_milli > 0 ? 100.0 * static_cast<double>(s.gpu_milli_allocated) / arrived_milli : 100.0;
    p.unallocated_pct = p.arrived_pct - p.allocated_pct;
    p.frag_ratio_pct = 100.0 * s.fragmentation_ratio;
    p.frag_pct = 100.0 * s.fragmentation_milli / cap;
    return p;
  };
  for (Request& r : pods) {
    r.name.clear();  // sampled duplicates share names; the replay does not need them
    const auto a = std::chrono::steady_clock::now();
    auto pl = alloc.place(r);
    placing += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    ++res.pods_arrived;
    if (!pl) ++res.pods_failed;
    arrived += static_cast<double>(r.total_gpu_milli());
    const double pct = 100.0 * arrived / cap;
    if (pct >= next_mark) {
      ReplayPoint p = point(arrived);
      res.curve.push_back(p);
      while (next_mark <= pct) next_mark += opt.step_pct;
    }
    if (!have100 && pct >= 100.0) {
      res.at_100 = res.curve.empty() || res.curve.back().arrived_pct != pct ? point(arrived) : res.curve.back();
      have100 = true;
    }
  }
  res.seconds = placing;
  if (!have100) res.at_100 = point(arrived);
  return res;
}

}  // namespace kubetune::sched::gpu
