// Trace CSV loading, synthetic workload generator and the FGD-paper replay loop.
#include "kubetune/sched/gpu/trace.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/allocator_config.hpp"
#include "kubetune/sched/gpu/policy.hpp"

namespace kubetune::sched::gpu {

namespace {
// Bounds on what a trace file may hold; the openb files are under 1 MiB with lines under 200 bytes.
constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{1} << 30;
constexpr std::size_t kMaxLineBytes = std::size_t{1} << 16;

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

// Streams a comma-separated trace file row by row. Every row must have as many fields as the header; every
// error names the file, the line (1 = header) and, for a field, the column.
class TraceReader {
 public:
  explicit TraceReader(const std::string& path) : path_(path) {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    KT_CHECK(!ec && std::filesystem::exists(st), IoError, "cannot open trace file '", path, "': ",
             ec ? ec.message() : "no such file");
    KT_CHECK(std::filesystem::is_regular_file(st), IoError, "trace file '", path, "' is not a regular file");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    KT_CHECK(!ec && size <= kMaxTraceBytes, InvalidArgument, "trace file '", path, "' has ", size,
             " bytes, more than the limit of ", kMaxTraceBytes);
    in_.open(path, std::ios::binary);
    KT_CHECK(in_.is_open(), IoError, "cannot open trace file '", path, "'");
    std::string line;
    KT_CHECK(read_line(line), InvalidArgument, "trace file '", path, "' is empty (expected a header line)");
    if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // UTF-8 byte-order mark written by spreadsheets
    header_ = split(line, ',');
    for (std::size_t i = 0; i < header_.size(); ++i)
      for (std::size_t k = 0; k < i; ++k)
        KT_CHECK(header_[i] != header_[k], InvalidArgument, where(), ": column '", header_[i],
                 "' appears twice in the header");
  }

  int column(const char* name, bool required = true) const {
    for (std::size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return static_cast<int>(i);
    KT_CHECK(!required, InvalidArgument, "trace file '", path_, "' lacks column '", name, "'");
    return -1;
  }

  // Reads the next non-blank row; false at the end. A file with no data row at all is an error.
  bool next() {
    std::string line;
    while (read_line(line)) {
      if (line.empty() || line == "\r") continue;
      fields_ = split(line, ',');
      KT_CHECK(fields_.size() == header_.size(), InvalidArgument, where(), " has ", fields_.size(),
               " fields, the header has ", header_.size());
      ++rows_;
      return true;
    }
    KT_CHECK(rows_ > 0, InvalidArgument, "trace file '", path_, "' has a header but no data rows");
    return false;
  }

  const std::string& text(int col) const { return fields_[static_cast<std::size_t>(col)]; }

  // The field as an integer in [lo, hi]: the whole field must be decimal digits (an optional '-'), so "1.7",
  // "12abc" or a value beyond int64 is an error instead of a truncated number.
  std::int64_t integer(int col, std::int64_t lo, std::int64_t hi) const {
    const std::string& s = text(col);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    KT_CHECK(ec != std::errc::result_out_of_range, InvalidArgument, field(col), " = '", s,
             "' is out of range [", lo, ", ", hi, "]");
    KT_CHECK(!s.empty() && ec == std::errc() && end == s.data() + s.size(), InvalidArgument, field(col), " = '", s,
             "' is not an integer");
    KT_CHECK(v >= lo && v <= hi, InvalidArgument, field(col), " = ", v, " is out of range [", lo, ", ", hi, "]");
    return v;
  }

  std::string where() const { return detail::concat("trace file '", path_, "' line ", line_); }
  std::string field(int col) const {
    return detail::concat(where(), " column ", col + 1, " '", header_[static_cast<std::size_t>(col)], "'");
  }

 private:
  // std::getline with a length cap, so a file without newlines cannot make one huge string.
  bool read_line(std::string& line) {
    constexpr int kEof = std::char_traits<char>::eof();
    line.clear();
    std::streambuf* buf = in_.rdbuf();
    int ch = buf->sbumpc();
    if (ch == kEof) return false;
    ++line_;
    for (; ch != kEof && ch != '\n'; ch = buf->sbumpc()) {
      line += static_cast<char>(ch);
      KT_CHECK(line.size() <= kMaxLineBytes, InvalidArgument, where(), " is longer than ", kMaxLineBytes, " bytes");
    }
    return true;
  }

  std::string path_;
  std::ifstream in_;
  std::vector<std::string> header_;
  std::vector<std::string> fields_;
  std::size_t line_ = 0;
  std::size_t rows_ = 0;
};

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Runs f (a Cluster or Request validation) and prefixes its InvalidArgument with the file and line.
template <class F>
void at_row(const TraceReader& t, F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    KT_THROW(InvalidArgument, t.where(), ": ", e.what());
  }
}
}  // namespace

Cluster load_trace_cluster(const std::string& path, bool gpu_nodes_only) {
  TraceReader t(path);
  const int sn = t.column("sn"), cpu = t.column("cpu_milli"), mem = t.column("memory_mib"), gpu = t.column("gpu"),
            model = t.column("model");
  Cluster cl;
  std::int64_t total_cpu = 0;
  while (t.next()) {
    NodeSpec s;
    s.name = t.text(sn);
    s.cpu_milli = t.integer(cpu, 0, kInt64Max);
    s.memory_mib = t.integer(mem, 0, kInt64Max);
    s.num_gpus = static_cast<int>(t.integer(gpu, 0, 64));  // Cluster::add_node's GPU bound
    s.model = t.text(model);
    if (gpu_nodes_only && s.num_gpus == 0) continue;
    // Cluster keeps the node CPU total in an int64; refuse a file whose total would wrap it.
    KT_CHECK(!__builtin_add_overflow(total_cpu, s.cpu_milli, &total_cpu), InvalidArgument, t.field(cpu),
             ": the total cpu_milli of the nodes so far overflows int64");
    at_row(t, [&] { cl.add_node(std::move(s)); });
  }
  return cl;
}

std::vector<Request> load_trace_pods(const std::string& path) {
  TraceReader t(path);
  const int name = t.column("name"), cpu = t.column("cpu_milli"), mem = t.column("memory_mib"),
            ng = t.column("num_gpu"), gm = t.column("gpu_milli"), spec = t.column("gpu_spec", false);
  std::vector<Request> out;
  while (t.next()) {
    Request q;
    q.name = t.text(name);
    q.cpu_milli = t.integer(cpu, 0, kInt64Max);
    q.memory_mib = t.integer(mem, 0, kInt64Max);
    q.gpu_count = static_cast<int>(t.integer(ng, 0, 64));    // Request's bounds
    q.gpu_milli = static_cast<int>(t.integer(gm, 0, kMilli));
    if (spec >= 0) {
      for (const std::string& m : split(t.text(spec), '|'))
        if (!m.empty() && std::find(q.models.begin(), q.models.end(), m) == q.models.end()) q.models.push_back(m);
    }
    at_row(t, [&] { q.validate_and_normalise(); });
    out.push_back(std::move(q));
  }
  return out;
}

SyntheticTrace synthetic_trace(int num_nodes, int num_pods, std::uint64_t seed) {
  KT_CHECK(num_nodes >= 1, InvalidArgument, "num_nodes = ", num_nodes, " must be >= 1");
  KT_CHECK(num_pods >= 1, InvalidArgument, "num_pods = ", num_pods, " must be >= 1");
  kubetune::Rng rng(seed);  // the same trace for a seed on every standard library
  SyntheticTrace t;
  // Node mix after the trace: ~45 % 8-GPU (G2-like, 96 cores), ~43 % 2-GPU (T4-like), rest 4-GPU V100 / 1-GPU.
  for (int i = 0; i < num_nodes; ++i) {
    NodeSpec s;
    s.name = "syn-node-" + std::to_string(i);
    const double x = rng.uniform();
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
    r.cpu_milli = cpus[rng.below(7)];
    r.memory_mib = r.cpu_milli * 2;  // 2 MiB per milli-CPU, as most trace pods
    const double x = rng.uniform();
    if (x < 0.13) {
      r.gpu_count = 0;
    } else if (x < 0.51) {
      r.gpu_count = 1;
      r.gpu_milli = fractions[rng.below(10)];
    } else if (x < 0.985) {
      r.gpu_count = 1;
      r.gpu_milli = 1000;
    } else {
      const int counts[] = {2, 4, 8};
      r.gpu_count = counts[rng.below(3)];
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
  // The policy's typical pods by the one rule (typical_pods_for); `tp` is what fragmentation is measured against.
  auto policy = make_policy(opt.policy, opt.policy == "kubetune" ? typical_pods_for(cluster, opt.policy, workload,
                                                                                    opt.popularity)
                                                                 : tp);
  const bool kube = opt.kube_semantics && opt.policy != "kubetune";
  policy->set_kube_semantics(kube);
  AllocatorOptions ao;
  ao.seed = opt.seed;
  ao.indexed = true;
  Allocator alloc(cluster, policy, ao);

  // Inflate: the original list, then samples with replacement until the next would pass inflation x capacity.
  kubetune::Rng rng(opt.seed);  // the same replay for a seed on every standard library
  const double cap = static_cast<double>(cluster.total_gpu_milli());
  std::vector<Request> pods = workload;
  double total = 0;
  for (const Request& r : pods) total += static_cast<double>(r.total_gpu_milli());
  if (total < opt.inflation * cap) {
    for (int guard = 0; guard < 10000000; ++guard) {
      const Request& r = workload[rng.below(workload.size())];
      if (total + static_cast<double>(r.total_gpu_milli()) > opt.inflation * cap) break;
      total += static_cast<double>(r.total_gpu_milli());
      pods.push_back(r);
    }
  } else {
    while (!pods.empty() && total > opt.inflation * cap) {  // tune down: drop random tasks
      const std::size_t k = rng.below(pods.size());
      total -= static_cast<double>(pods[k].total_gpu_milli());
      pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  kubetune::shuffle(pods.begin(), pods.end(), rng);

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
