// Filter + bind cycles of the extender's HTTP server over loopback keep-alive connections, as kube-scheduler drives
// a nodeCacheCapable extender: per pod one POST filter (ExtenderArgs with NodeNames) and one POST bind to the
// first node the filter kept. A plain main() (not Google Benchmark): the figures are latency percentiles of a
// closed loop of 1 and 4 connections, and a breakdown of where a cycle's time goes.
//
// Cluster: N nodes x 8 GPUs x 32 GiB, pre-filled to about half its GPU memory. Pods ask aliyun.com/gpu-mem of 1, 2,
// 4, 8 or 16 GiB; each connection releases its oldest pod (directly on the extender, as the pod watch would,
// outside the timed cycle) once it holds 256, so the cluster does not fill.
//
// NodeNames per filter: every node (percentageOfNodesToScore = 100) or kube-scheduler's adaptive default
// (kubernetes pkg/scheduler/schedule_one.go, numFeasibleNodesToFind: all nodes below 100, else
// max(5, 50 - nodes/125) % of them, at least 100: 420 of 1,000 and 500 of 5,000), a window rotating over the nodes
// as the scheduler's start index does.
//
// With two or more CPUs the server's I/O threads run on CPU 0 and the clients on CPU 1 (threads inherit the
// affinity of the thread that creates them). Usage: bench_extender [--nodes 1000,5000] [--seconds 2]
// [--threads 1] [--connections 1,4]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "kubetune/sched/extender/server.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/policy.hpp"

namespace g = kubetune::sched::gpu;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kGpusPerNode = 8;
constexpr std::int64_t kGpuMemMib = 32768;
constexpr int kSizesGib[] = {1, 2, 4, 8, 16};
constexpr std::size_t kKeepBound = 256;  // pods a connection holds before it releases its oldest

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/// kube-scheduler's numFeasibleNodesToFind with percentageOfNodesToScore unset (the adaptive default).
int default_feasible_nodes(int nodes) {
  if (nodes < 100) return nodes;
  const int pct = std::max(5, 50 - nodes / 125);
  return std::max(100, nodes * pct / 100);
}

std::string node_name(int i) { return "node-" + std::to_string(i); }

/// Cluster of `nodes` 8 x 32 GiB nodes with about half its GPU memory placed (straight on the allocator).
std::shared_ptr<g::Allocator> make_cluster(int nodes, std::mt19937& rng) {
  g::Cluster c;
  for (int i = 0; i < nodes; ++i) {
    g::NodeSpec s;
    s.name = node_name(i);
    s.cpu_milli = 256000;
    s.memory_mib = 1 << 20;
    s.num_gpus = kGpusPerNode;
    s.gpu_memory_mib = kGpuMemMib;
    s.model = "V100M32";
    c.add_node(s);
  }
  auto alloc = std::make_shared<g::Allocator>(c, g::make_policy("best_fit"));
  std::uniform_int_distribution<int> size(0, 4);
  for (int i = 0; i < nodes; ++i) {
    std::int64_t placed = 0;
    for (int k = 0; placed < kGpusPerNode * kGpuMemMib / 2; ++k) {
      g::Request r;
      r.name = "default/prefill-" + std::to_string(i) + "-" + std::to_string(k);
      r.gpu_memory_mib = std::int64_t{kSizesGib[size(rng)]} * 1024;
      if (!alloc->place_on(r, i)) break;
      placed += r.gpu_memory_mib;
    }
  }
  return alloc;
}

std::string pod_json(const std::string& name, int gib) {
  const nlohmann::json limits = {{"aliyun.com/gpu-mem", std::to_string(gib)}};
  const nlohmann::json container = {{"name", "main"}, {"resources", {{"limits", limits}}}};
  return nlohmann::json{{"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}},
                        {"spec", {{"containers", nlohmann::json::array({container})}}}}
      .dump();
}

/// The NodeNames arrays of the rotating windows (JSON text, built once).
std::vector<std::string> node_windows(int nodes, int per_filter) {
  std::vector<std::string> out;
  const int windows = per_filter == nodes ? 1 : 16;
  for (int w = 0; w < windows; ++w) {
    std::vector<std::string> names;
    for (int k = 0; k < per_filter; ++k) names.push_back(node_name((w * nodes / windows + k) % nodes));
    out.push_back(nlohmann::json(names).dump());
  }
  return out;
}

std::string filter_body(const std::string& pod, int gib, const std::string& names_json) {
  return "{\"Pod\":" + pod_json(pod, gib) + ",\"NodeNames\":" + names_json + "}";
}
std::string bind_body(const std::string& pod, const std::string& node) {
  return "{\"PodName\":\"" + pod + "\",\"PodNamespace\":\"default\",\"PodUID\":\"uid-" + pod + "\",\"Node\":\"" + node +
         "\"}";
}

std::string release_body(const std::string& pod) {
  return "{\"PodName\":\"" + pod + "\",\"PodNamespace\":\"default\"}";
}

/// First name of the ExtenderFilterResult's NodeNames, by a scan (kube-scheduler's JSON decoding is its own CPU,
/// not the server's; a full parse here would only slow the client).
std::string first_node(const std::string& filter_result) {
  const char* key = "\"NodeNames\":[\"";
  const std::size_t at = filter_result.find(key);
  if (at == std::string::npos) return "";
  const std::size_t from = at + std::strlen(key);
  return filter_result.substr(from, filter_result.find('"', from) - from);
}

/// One kept-alive connection posting pre-built requests.
class Connection {
 public:
  explicit Connection(int port) : sock_(ioc_) {
    sock_.connect(tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(port)));
    sock_.set_option(tcp::no_delay(true));
  }
  std::string post(const std::string& target, const std::string& body) {
    std::string req = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    req += body;
    net::write(sock_, net::buffer(req));
    http::response_parser<http::string_body> p;
    p.body_limit(64u << 20);
    http::read(sock_, buf_, p);
    return std::move(p.get().body());
  }

 private:
  net::io_context ioc_;
  tcp::socket sock_;
  beast::flat_buffer buf_;
};

struct Result {
  std::vector<double> cycles;  // seconds
  std::int64_t failed_binds = 0;
  std::string first_failure;  // reply of the first failed bind
  double wall = 0;
};

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

/// Closed loop: each connection runs filter + bind cycles back to back for `secs` seconds.
Result run_loop(g::Extender& ext, int port, const std::vector<std::string>& windows, int connections, double secs,
                const std::string& tag) {
  std::vector<Result> per(static_cast<std::size_t>(connections));
  std::vector<std::thread> clients;
  const Clock::time_point t0 = Clock::now();
  for (int c = 0; c < connections; ++c)
    clients.emplace_back([&, c] {
      Connection conn(port);
      std::mt19937 rng(static_cast<unsigned>(c + 1));
      std::deque<std::string> bound;
      Result& out = per[static_cast<std::size_t>(c)];
      for (std::int64_t k = 0; seconds_since(t0) < secs; ++k) {
        const std::string pod = tag + "-c" + std::to_string(c) + "-" + std::to_string(k);
        const int gib = kSizesGib[rng() % 5];
        const std::string& names = windows[static_cast<std::size_t>(k + 5 * c) % windows.size()];
        const Clock::time_point c0 = Clock::now();
        const std::string node = first_node(conn.post("/gpushare-scheduler/filter", filter_body(pod, gib, names)));
        const std::string reply =
            node.empty() ? "no feasible node" : conn.post("/gpushare-scheduler/bind", bind_body(pod, node));
        out.cycles.push_back(seconds_since(c0));
        if (reply.find("\"Error\":\"\"") == std::string::npos) {
          if (out.failed_binds++ == 0) out.first_failure = reply;
          continue;
        }
        bound.push_back(pod);
        if (bound.size() > kKeepBound) {
          ext.handle("release", release_body(bound.front()));
          bound.pop_front();
        }
      }
    });
  for (auto& t : clients) t.join();
  Result all;
  all.wall = seconds_since(t0);
  for (Result& r : per) {
    all.cycles.insert(all.cycles.end(), r.cycles.begin(), r.cycles.end());
    all.failed_binds += r.failed_binds;
    if (all.first_failure.empty()) all.first_failure = r.first_failure;
  }
  return all;
}

/// Median seconds of timed(i) over `n` calls; prepare(i) runs untimed before each.
double median_time(int n, const std::function<void(int)>& prepare, const std::function<void(int)>& timed) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    prepare(i);
    const Clock::time_point t0 = Clock::now();
    timed(i);
    t.push_back(seconds_since(t0));
  }
  return percentile(t, 0.5);
}

/// Where one cycle's server time goes, measured in-process without HTTP (medians): the JSON parse of the filter's
/// ExtenderArgs alone, the allocator's feasibility scan and placement alone, and Extender::handle of filter and of
/// bind (JSON in and out plus the allocator). The HTTP share is the cycle's median minus the two handles.
struct Breakdown {
  double json_parse = 0, allocator = 0, filter = 0, bind = 0;
};

Breakdown breakdown(g::Extender& ext, const std::vector<std::string>& windows) {
  constexpr int kReps = 200;
  Breakdown b;
  const std::string body = filter_body("probe", 4, windows[0]);
  std::size_t sink = 0;
  auto none = [](int) {};
  b.json_parse = median_time(kReps, none, [&](int) { sink += nlohmann::json::parse(body).size(); });
  if (sink == 0) std::abort();  // keeps the parse from being optimised away
  auto alloc = ext.allocator();
  std::vector<int> idx;
  for (const std::string& n : nlohmann::json::parse(windows[0]).get<std::vector<std::string>>())
    idx.push_back(alloc->cluster().find_node(n));
  g::Request r;
  r.name = "default/alloc-probe";
  r.gpu_memory_mib = 4096;
  b.allocator = median_time(kReps, none, [&](int) {
    const std::vector<int> ok = alloc->feasible_nodes(r, idx);
    if (ok.empty()) return;
    if (auto p = alloc->place_on(r, ok.front())) alloc->release(p->id);
  });
  std::string filter_req, node, bind_req;
  auto release = [&](int i) { ext.handle("release", release_body("probe-" + std::to_string(i))); };
  b.filter = median_time(
      kReps, [&](int i) { filter_req = filter_body("probe-" + std::to_string(i), 4, windows[0]); },
      [&](int) { node = first_node(ext.handle("filter", filter_req).body); });
  b.bind = median_time(
      kReps,
      [&](int i) {
        if (i > 0) release(i - 1);
        filter_req = filter_body("probe-" + std::to_string(i), 4, windows[0]);
        node = first_node(ext.handle("filter", filter_req).body);
        bind_req = bind_body("probe-" + std::to_string(i), node);
      },
      [&](int) { ext.handle("bind", bind_req); });
  release(kReps - 1);
  return b;
}

std::vector<int> int_list(const char* s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) v.push_back(std::stoi(item));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> cluster_sizes = {1000, 5000}, connection_counts = {1, 4};
  double secs = 2.0;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--nodes") cluster_sizes = int_list(argv[i + 1]);
    else if (a == "--seconds") secs = std::atof(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--connections") connection_counts = int_list(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  const bool pinned = std::thread::hardware_concurrency() >= 2;
  std::printf("server: %d I/O thread(s)%s; %.1f s per row; cycle = POST filter + POST bind\n\n", threads,
              pinned ? " on CPU 0, clients on CPU 1" : " (not pinned: one CPU)", secs);
  std::printf("%6s %6s %5s %9s %9s %9s %10s %7s | %9s %9s %9s %9s %9s\n", "nodes", "names", "conns", "p50 us", "p99 us",
              "max us", "cycles/s", "failed", "parse us", "alloc us", "filter us", "bind us", "http us");
  std::mt19937 rng(7);
  for (int nodes : cluster_sizes) {
    auto ext = std::make_shared<g::Extender>(make_cluster(nodes, rng));
    g::HttpServerOptions opt;
    opt.n_threads = threads;
    if (pinned) pin_to_cpu(0);
    g::ExtenderHttpServer srv(ext, opt);
    srv.start();
    if (pinned) pin_to_cpu(1);
    for (int per_filter : {nodes, default_feasible_nodes(nodes)}) {
      const std::vector<std::string> windows = node_windows(nodes, per_filter);
      const Breakdown b = breakdown(*ext, windows);
      for (int conns : connection_counts) {
        const std::string tag = std::to_string(nodes) + "-" + std::to_string(per_filter) + "-" + std::to_string(conns);
        Result r = run_loop(*ext, srv.port(), windows, conns, secs, tag);
        const double n = static_cast<double>(r.cycles.size());
        const double p50 = percentile(r.cycles, 0.50), p99 = percentile(r.cycles, 0.99);
        const double mx = r.cycles.empty() ? 0 : *std::max_element(r.cycles.begin(), r.cycles.end());
        const double handle = b.filter + b.bind;
        std::printf("%6d %6d %5d %9.0f %9.0f %9.0f %10.0f %7lld | %9.0f %9.0f %9.0f %9.0f %9.0f\n", nodes, per_filter,
                    conns, p50 * 1e6, p99 * 1e6, mx * 1e6, n / r.wall, static_cast<long long>(r.failed_binds),
                    b.json_parse * 1e6, b.allocator * 1e6, b.filter * 1e6, b.bind * 1e6,
                    (conns == 1 ? p50 - handle : 0) * 1e6);
        if (!r.first_failure.empty()) std::printf("    first failed bind: %.160s\n", r.first_failure.c_str());
      }
    }
    srv.stop();
    ext->allocator()->check_invariants();
  }
  std::printf("\nmedians in-process: parse = nlohmann::json::parse of one filter's ExtenderArgs; alloc = "
              "feasible_nodes + place_on + release on the allocator; filter, bind = Extender::handle; http = p50 cycle "
              "- filter - bind (1 connection).\n");
  return 0;
}
