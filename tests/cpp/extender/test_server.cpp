// Tests of the extender's HTTP server, driven over loopback by a synchronous Beast client on kept-alive
// connections as kube-scheduler's Go client drives it: routes, metrics, latency, hostile input, slow and idle
// clients, concurrent binds, stop and start.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/extender/server.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/policy.hpp"

using namespace kubetune::sched::gpu;
namespace kt = kubetune;
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

using Response = http::response<http::string_body>;

/// One kept-alive connection (TCP_NODELAY, as Go's net package sets by default).
class Client {
 public:
  explicit Client(int port) : sock_(ioc_) {
    sock_.connect(tcp::endpoint(net::ip::address_v4::loopback(), static_cast<unsigned short>(port)));
    sock_.set_option(tcp::no_delay(true));
  }

  Response send(http::verb method, const std::string& target, std::string body = "", bool keep_alive = true) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (method == http::verb::post) req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.keep_alive(keep_alive);
    req.prepare_payload();
    http::write(sock_, req);
    return read();
  }
  Response post(const std::string& target, std::string body) { return send(http::verb::post, target, std::move(body)); }
  Response get(const std::string& target) { return send(http::verb::get, target); }

  void write_raw(const std::string& bytes) { net::write(sock_, net::buffer(bytes)); }
  Response raw(const std::string& bytes) {
    write_raw(bytes);
    return read();
  }
  Response read() {
    Response res;
    http::response_parser<http::string_body> p;
    p.body_limit(64u << 20);
    http::read(sock_, buf_, p);
    return p.release();
  }

  /// True when the server closes the connection within `s` seconds (data it still sends is dropped).
  bool closed_within(double s) {
    const Clock::time_point t0 = Clock::now();
    char scratch[4096];
    for (;;) {
      const int left_ms = static_cast<int>((s - since(t0)) * 1000);
      if (left_ms <= 0) return false;
      pollfd pfd{sock_.native_handle(), POLLIN, 0};
      if (::poll(&pfd, 1, left_ms) <= 0) return false;
      const ssize_t n = ::recv(sock_.native_handle(), scratch, sizeof scratch, 0);
      if (n <= 0) return true;  // EOF or reset
    }
  }

 private:
  net::io_context ioc_;
  tcp::socket sock_;
  beast::flat_buffer buf_;
};

NodeSpec gpu_node(const std::string& name, int gpus, std::int64_t gpu_mem_mib) {
  NodeSpec s;
  s.name = name;
  s.cpu_milli = 256000;
  s.memory_mib = 1 << 20;
  s.num_gpus = gpus;
  s.gpu_memory_mib = gpu_mem_mib;
  s.model = "V100M32";
  return s;
}

std::shared_ptr<Extender> make_extender(int nodes, int gpus = 4, std::int64_t gpu_mem_mib = 16384) {
  Cluster c;
  for (int i = 0; i < nodes; ++i) c.add_node(gpu_node("n" + std::to_string(i), gpus, gpu_mem_mib));
  return std::make_shared<Extender>(std::make_shared<Allocator>(c, make_policy("best_fit")));
}

std::vector<std::string> node_names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("n" + std::to_string(i));
  return v;
}

/// ExtenderArgs as kube-scheduler sends it to a nodeCacheCapable extender: the v1.Pod and NodeNames.
std::string filter_args(const std::string& pod, int gpu_mem_gib, const std::vector<std::string>& nodes) {
  json limits = {{"aliyun.com/gpu-mem", std::to_string(gpu_mem_gib)}};
  json p = {{"metadata", {{"name", pod}, {"namespace", "default"}, {"uid", "uid-" + pod}}},
            {"spec", {{"containers", json::array({{{"name", "main"}, {"resources", {{"limits", limits}}}}})}}}};
  return json{{"Pod", p}, {"NodeNames", nodes}}.dump();
}
std::string bind_args(const std::string& pod, const std::string& node) {
  return json{{"PodName", pod}, {"PodNamespace", "default"}, {"PodUID", "uid-" + pod}, {"Node", node}}.dump();
}
std::string release_args(const std::string& pod) { return json{{"PodName", pod}, {"PodNamespace", "default"}}.dump(); }

/// The protocol's Error field of a 200 reply ("" = success); the reply's status text otherwise.
std::string protocol_error(const Response& r) {
  if (r.result_int() != 200) return "HTTP " + std::to_string(r.result_int());
  return json::parse(r.body()).value("Error", std::string());
}

/// Whether an ExtenderFilterResult turned the node down (unknown nodes are unresolvable: preemption cannot help).
bool rejected(const json& filter_result, const std::string& node) {
  return filter_result["FailedNodes"].contains(node) ||
         filter_result.value("FailedAndUnresolvableNodes", json::object()).contains(node);
}

/// Value of one series in a Prometheus text exposition; -1 when absent.
double metric(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const std::size_t at = ("\n" + text).find(key);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + key.size() - 1));
}

/// Placements (id -> node, memory) of the extender's allocator, to show a request changed nothing.
std::map<std::uint64_t, std::pair<int, std::int64_t>> placements(const Extender& ext) {
  std::map<std::uint64_t, std::pair<int, std::int64_t>> out;
  for (const auto& [id, p] : ext.allocator()->snapshot().placements) out[id] = {p.node, p.gpu_memory_mib};
  return out;
}

HttpServerOptions quick_options() {
  HttpServerOptions o;
  o.read_timeout_s = 2.0;
  o.idle_timeout_s = 5.0;
  return o;
}

}  // namespace

// ---------------------------------------------------------------- routes, health, metrics
TEST(ExtenderHttp, RoutesStatusCodesHealthAndReadiness) {
  auto ext = make_extender(2);
  ExtenderHttpServer srv(ext, quick_options());
  srv.start();
  ASSERT_TRUE(srv.running());
  ASSERT_GT(srv.port(), 0);
  Client c(srv.port());

  for (const std::string target : {"/gpushare-scheduler/filter", "/filter"}) {
    const Response r = c.post(target, filter_args("p-" + std::to_string(target.size()), 4, {"n0", "n1", "ghost"}));
    EXPECT_EQ(r.result_int(), 200) << target;
    EXPECT_EQ(r[http::field::content_type], "application/json");
    const json f = json::parse(r.body());
    EXPECT_EQ(f["NodeNames"], json::array({"n0", "n1"}));
    EXPECT_TRUE(rejected(f, "ghost"));
  }
  const Response b = c.post("/gpushare-scheduler/bind", bind_args("p-7", "n1"));  // "/filter" filtered p-7
  EXPECT_EQ(protocol_error(b), "");
  EXPECT_EQ(ext->allocator()->snapshot().placements.size(), 1u);
  EXPECT_EQ(protocol_error(c.post("/release", release_args("p-7"))), "");
  EXPECT_TRUE(ext->allocator()->snapshot().placements.empty());
  EXPECT_EQ(c.post("/prioritize", filter_args("p-x", 4, {"n0"})).result_int(), 200);

  Response h = c.get("/healthz");
  EXPECT_EQ(h.result_int(), 200);
  EXPECT_EQ(h.body(), "ok");
  EXPECT_EQ(c.get("/readyz").result_int(), 200);  // built over a fixed cluster: ready

  Response r = c.get("/gpushare-scheduler/filter");
  EXPECT_EQ(r.result_int(), 405);
  EXPECT_EQ(r[http::field::allow], "POST");
  EXPECT_NE(json::parse(r.body())["Error"].get<std::string>().find("GET"), std::string::npos);
  r = c.post("/healthz", "{}");
  EXPECT_EQ(r.result_int(), 405);
  EXPECT_EQ(r[http::field::allow], "GET");
  for (const std::string target : {"/nope", "/gpushare-scheduler/unbind", "/gpushare-scheduler", "/filter/x"}) {
    r = c.post(target, "{}");
    EXPECT_EQ(r.result_int(), 404) << target;
    EXPECT_NE(json::parse(r.body())["Error"].get<std::string>().find(target), std::string::npos) << r.body();
  }

  // Not synced yet: live but not ready.
  auto unsynced = std::make_shared<Extender>(make_policy("best_fit"), ExtenderConfig{});
  ExtenderHttpServer srv2(unsynced, quick_options());
  srv2.start();
  Client c2(srv2.port());
  EXPECT_EQ(c2.get("/healthz").result_int(), 200);
  r = c2.get("/readyz");
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_NE(json::parse(r.body())["Error"].get<std::string>(), "");
}

TEST(ExtenderHttp, MetricsCountRequestsAndConnections) {
  auto ext = make_extender(2);
  ExtenderHttpServer srv(ext, quick_options());
  srv.start();
  Client c(srv.port());
  constexpr int kFilters = 25;
  for (int i = 0; i < kFilters; ++i) ASSERT_EQ(c.post("/filter", filter_args("m", 2, {"n0", "n1"})).result_int(), 200);
  ASSERT_EQ(c.post("/filter", "not json").result_int(), 400);
  ASSERT_EQ(c.get("/nope").result_int(), 404);
  Client other(srv.port());
  ASSERT_EQ(other.get("/healthz").result_int(), 200);

  const Response m = c.get("/metrics");
  ASSERT_EQ(m.result_int(), 200);
  EXPECT_EQ(m[http::field::content_type], "text/plain; version=0.0.4");
  const std::string& text = m.body();
  // The extender's metrics first, then the server's.
  const std::size_t own = text.find("# HELP kubetune_extender_http_requests_total");
  ASSERT_NE(own, std::string::npos);
  EXPECT_GT(own, 0u);
  EXPECT_EQ(text.substr(0, own).find("kubetune_extender_http_"), std::string::npos);
  EXPECT_EQ(metric(text, R"(kubetune_extender_http_requests_total{verb="filter",code="200"})"), kFilters);
  EXPECT_EQ(metric(text, R"(kubetune_extender_http_requests_total{verb="filter",code="400"})"), 1);
  EXPECT_EQ(metric(text, R"(kubetune_extender_http_requests_total{verb="unknown",code="404"})"), 1);
  EXPECT_EQ(metric(text, R"(kubetune_extender_http_requests_total{verb="healthz",code="200"})"), 1);
  EXPECT_EQ(metric(text, R"(kubetune_extender_http_request_duration_seconds_count{verb="filter"})"), kFilters + 1);
  EXPECT_EQ(metric(text, R"(kubetune_extender_http_request_duration_seconds_bucket{verb="filter",le="+Inf"})"),
            kFilters + 1);
  double prev = 0;
  for (const char* le : {"5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
                         "0.1", "0.25", "0.5", "1", "+Inf"}) {
    const std::string series = "kubetune_extender_http_request_duration_seconds_bucket{verb=\"filter\",le=\"";
    const double v = metric(text, series + le + "\"}");
    ASSERT_GE(v, prev) << le;  // present and cumulative
    prev = v;
  }
  EXPECT_GT(metric(text, R"(kubetune_extender_http_request_duration_seconds_sum{verb="filter"})"), 0.0);
  EXPECT_EQ(metric(text, "kubetune_extender_http_connections"), 2);
  // The counters move: the /metrics request itself is counted once answered.
  EXPECT_EQ(metric(srv.metrics_text(), R"(kubetune_extender_http_requests_total{verb="metrics",code="200"})"), 1);
}

TEST(ExtenderHttp, ConnectionCloseHttp10ChunkedAndPipelined) {
  auto ext = make_extender(2);
  ExtenderHttpServer srv(ext, quick_options());
  srv.start();
  {
    Client c(srv.port());
    const Response r = c.send(http::verb::get, "/healthz", "", /*keep_alive=*/false);
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_FALSE(r.keep_alive());
    EXPECT_TRUE(c.closed_within(1.0));
  }
  {
    Client c(srv.port());
    const Response r = c.raw("GET /healthz HTTP/1.0\r\n\r\n");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r.version(), 10);
    EXPECT_TRUE(c.closed_within(1.0));
  }
  {
    Client c(srv.port());
    const std::string body = filter_args("chunky", 4, {"n0"});
    std::ostringstream req;
    req << "POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        << std::hex << 10 << "\r\n" << body.substr(0, 10) << "\r\n"
        << std::hex << body.size() - 10 << "\r\n" << body.substr(10) << "\r\n0\r\n\r\n";
    const Response r = c.raw(req.str());
    EXPECT_EQ(protocol_error(r), "");
    EXPECT_EQ(json::parse(r.body())["NodeNames"], json::array({"n0"}));
    // Two requests in one write: two answers, in order, on the same connection.
    c.write_raw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(c.read().result_int(), 200);
    EXPECT_EQ(c.read().result_int(), 404);
    EXPECT_EQ(c.get("/healthz").result_int(), 200);
  }
}

// ---------------------------------------------------------------- keep-alive latency
TEST(ExtenderHttp, KeptAliveRoundTripIsWellUnderAMillisecond) {
  auto ext = make_extender(16);
  ExtenderHttpServer srv(ext, quick_options());
  srv.start();
  Client c(srv.port());
  const std::string body = filter_args("lat", 4, node_names(16));
  std::vector<double> rtt;
  for (int i = 0; i < 1000; ++i) {
    const Clock::time_point t0 = Clock::now();
    const Response r = c.post("/gpushare-scheduler/filter", body);
    rtt.push_back(since(t0));
    ASSERT_EQ(r.result_int(), 200);
  }
  std::nth_element(rtt.begin(), rtt.begin() + 500, rtt.end());
  // Nagle + delayed ACK would make this ~40 ms; the loopback round trip is tens of us (5 ms: loaded CI box).
  EXPECT_LT(rtt[500], 5e-3);
  EXPECT_EQ(metric(srv.metrics_text(), "kubetune_extender_http_connections"), 1);  // one connection throughout
}

// ---------------------------------------------------------------- hostile input
TEST(ExtenderHttp, BadInputGetsAnErrorAndChangesNothing) {
  auto ext = make_extender(2);
  HttpServerOptions o = quick_options();
  o.max_body_bytes = 1u << 20;
  ExtenderHttpServer srv(ext, o);
  srv.start();
  {
    Client c(srv.port());
    ASSERT_EQ(protocol_error(c.post("/filter", filter_args("kept", 4, {"n0", "n1"}))), "");
    ASSERT_EQ(protocol_error(c.post("/bind", bind_args("kept", "n0"))), "");
  }
  const auto before = placements(*ext);
  ASSERT_EQ(before.size(), 1u);
  auto unchanged = [&](const std::string& what) {
    EXPECT_EQ(placements(*ext), before) << what;
    EXPECT_NO_THROW(ext->allocator()->check_invariants()) << what;
    Client fresh(srv.port());  // still serving
    EXPECT_EQ(fresh.post("/filter", filter_args("probe", 1, {"n0"})).result_int(), 200) << what;
  };

  // Protocol-level: the JSON is not the verb's -> an HTTP 4xx or the protocol's Error, connection kept.
  const std::string deep = std::string(75000, '[') + std::string(75000, ']');  // 150 KB, 75,000 levels
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"/filter", "{\"Pod\": {\"metadata\": "},                                  // malformed JSON
      {"/filter", R"({"Pod": 5, "NodeNames": "n0"})"},                            // wrong types
      {"/filter", R"({"Pod": {"metadata": {"name": 7}}, "NodeNames": [1, 2]})"},  // wrong types inside
      {"/bind", R"({"PodName": ["kept"], "Node": {}})"},
      {"/bind", bind_args("kept", "n1")},                                        // already bound
      {"/bind", bind_args("never-filtered", "n0")},
      {"/filter", "{\"Pod\": \"\xff\xfe\xc3\x28\", \"NodeNames\": [\"\xed\xa0\x80\"]}"},  // invalid UTF-8
      {"/filter", deep},
      {"/prioritize", deep},
      {"/bind", deep},
      {"/release", "[]"},
      {"/bind", bind_args("kept", "ghost")},                                     // unknown node
      {"/preempt", "{}"},
  };
  Client c(srv.port());
  for (const auto& [target, body] : bodies) {
    const Response r = c.post(target, body);
    EXPECT_NE(protocol_error(r), "") << target << " " << body.substr(0, 60);
    if (r.result_int() != 200) {
      EXPECT_NE(json::parse(r.body()).value("Error", ""), "") << r.body();
    }
    unchanged(target + " " + body.substr(0, 60));
  }
  // Unknown node names in a filter: reported per node, the request itself fine.
  const json f = json::parse(c.post("/filter", filter_args("u", 4, {"ghost", "n0"})).body());
  EXPECT_EQ(f["NodeNames"], json::array({"n0"}));
  EXPECT_TRUE(rejected(f, "ghost"));
  unchanged("unknown nodes");

  // HTTP-level: the framing is lost -> an error response and the connection closed.
  const std::string head = "POST /filter HTTP/1.1\r\nHost: x\r\n";
  const std::vector<std::pair<std::string, int>> raws = {
      {head + "Content-Length: abc\r\n\r\n{}", 400},
      {head + "Content-Length: -5\r\n\r\n{}", 400},
      {head + "Content-Length: 1e12\r\n\r\n{}", 400},
      {head + "Content-Length: 1000000000000\r\n\r\n{}", 413},
      {head + "Content-Length: " + std::to_string(2u << 20) + "\r\n\r\n" + std::string(2u << 20, ' '), 413},
      {head + "X-Pad: " + std::string(20000, 'a') + "\r\nContent-Length: 2\r\n\r\n{}", 431},
      {"GARBAGE\r\n\r\n", 400},
      {"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
  };
  for (const auto& [bytes, code] : raws) {
    Client raw(srv.port());
    const Response r = raw.raw(bytes);
    EXPECT_EQ(r.result_int(), code) << bytes.substr(0, 80);
    EXPECT_NE(json::parse(r.body()).value("Error", ""), "");
    EXPECT_TRUE(raw.closed_within(2.0)) << bytes.substr(0, 80);
    unchanged(bytes.substr(0, 80));
  }
}

// ---------------------------------------------------------------- slow and idle clients
TEST(ExtenderHttp, SlowClientIsCutOffWhileOthersAreServed) {
  auto ext = make_extender(2);
  HttpServerOptions o = quick_options();
  o.read_timeout_s = 0.3;
  o.n_threads = 1;  // one I/O thread: a stalled read must not occupy it
  ExtenderHttpServer srv(ext, o);
  srv.start();

  Client slow(srv.port());
  const Clock::time_point t0 = Clock::now();
  slow.write_raw("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"Pod\"");
  Client fast(srv.port());
  for (int i = 0; i < 20; ++i) ASSERT_EQ(fast.post("/filter", filter_args("f", 1, {"n0"})).result_int(), 200);
  EXPECT_LT(since(t0), 0.3);  // served while the slow request was pending
  EXPECT_TRUE(slow.closed_within(2.0));
  EXPECT_GE(since(t0), 0.25);

  // A client dribbling a byte every 50 ms makes progress but still has only read_timeout for the whole request.
  Client dribble(srv.port());
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  const Clock::time_point t1 = Clock::now();
  bool cut = false;
  for (std::size_t i = 0; i < req.size() && !cut; ++i) {
    try {
      dribble.write_raw(req.substr(i, 1));
    } catch (const boost::system::system_error&) {
      cut = true;
    }
    cut = cut || dribble.closed_within(0.05);
  }
  EXPECT_TRUE(cut);
  EXPECT_LT(since(t1), 1.0);
  EXPECT_EQ(fast.get("/healthz").result_int(), 200);
}

TEST(ExtenderHttp, IdleKeptAliveConnectionIsClosedAfterIdleTimeout) {
  auto ext = make_extender(1);
  HttpServerOptions o = quick_options();
  o.idle_timeout_s = 0.3;
  ExtenderHttpServer srv(ext, o);
  srv.start();
  Client c(srv.port());
  ASSERT_EQ(c.get("/healthz").result_int(), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(c.get("/healthz").result_int(), 200);  // 0.1 s idle: still open
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(c.closed_within(2.0));
  EXPECT_GE(since(t0), 0.25);
  // The socket closes as the connection object goes away: the gauge follows within moments.
  for (int i = 0; i < 100 && metric(srv.metrics_text(), "kubetune_extender_http_connections") != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(metric(srv.metrics_text(), "kubetune_extender_http_connections"), 0);
}

TEST(ExtenderHttp, ConnectionsOverTheLimitGet503) {
  auto ext = make_extender(1);
  HttpServerOptions o = quick_options();
  o.max_connections = 2;
  ExtenderHttpServer srv(ext, o);
  srv.start();
  Client a(srv.port()), b(srv.port());
  ASSERT_EQ(a.get("/healthz").result_int(), 200);
  ASSERT_EQ(b.get("/healthz").result_int(), 200);
  Client c(srv.port());
  const Response r = c.read();
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_NE(json::parse(r.body())["Error"].get<std::string>().find("max_connections = 2"), std::string::npos);
  EXPECT_TRUE(c.closed_within(2.0));
  EXPECT_EQ(a.get("/healthz").result_int(), 200);
}

/// A Kubernetes API that takes 300 ms to create a Binding (a slow API server, or Python holding the GIL).
class SlowWriter : public KubeWriter {
 public:
  std::string get_pod(const std::string& ns, const std::string& name) override {
    throw std::runtime_error("no pod " + ns + "/" + name);
  }
  void patch_pod_annotations(const std::string&, const std::string&, const std::string&,
                             const std::map<std::string, std::string>&) override {}
  void create_binding(const std::string&, const std::string&, const std::string&, const std::string&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
};

TEST(ExtenderHttp, ABlockingBindDoesNotStallOtherConnections) {
  auto ext = make_extender(2);
  ext->set_writer(std::make_shared<SlowWriter>());
  ExtenderHttpServer srv(ext, quick_options());  // two I/O threads
  srv.start();
  Client binder(srv.port()), other(srv.port());
  ASSERT_EQ(protocol_error(binder.post("/filter", filter_args("slow", 4, {"n0"}))), "");
  const Clock::time_point t0 = Clock::now();
  std::thread bind([&] { EXPECT_EQ(protocol_error(binder.post("/bind", bind_args("slow", "n0"))), ""); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the bind is inside create_binding now
  for (int i = 0; i < 20; ++i) ASSERT_EQ(other.post("/filter", filter_args("o", 1, {"n1"})).result_int(), 200);
  EXPECT_LT(since(t0), 0.25);  // answered while the bind was blocked
  bind.join();
  EXPECT_GE(since(t0), 0.3);
  EXPECT_EQ(ext->allocator()->snapshot().placements.size(), 1u);
}

// ---------------------------------------------------------------- concurrency (acceptance)
TEST(ExtenderHttp, ConcurrentFilterBindReleaseKeepTheAllocatorConsistent) {
  constexpr int kNodes = 6, kThreads = 16, kRequests = 1000, kSameRounds = 20, kSameThreads = 8;
  auto ext = make_extender(kNodes, 4, 16384);  // 24 GPUs x 16 GiB: the mixed phase fills it
  HttpServerOptions o = quick_options();
  o.n_threads = 4;
  ExtenderHttpServer srv(ext, o);
  srv.start();
  const std::vector<std::string> nodes = node_names(kNodes);
  std::mutex mu;
  std::map<std::string, int> ok_binds;              // pod -> successful bind replies
  std::map<std::string, std::int64_t> granted_mib;  // pod -> memory its bind reply granted (bound now)
  std::int64_t ok_releases = 0, no_longer_fits = 0;
  auto record_bind = [&](const std::string& pod, const Response& r) {
    const std::string err = protocol_error(r);
    std::lock_guard lock(mu);
    if (err.find("no longer fits") != std::string::npos) ++no_longer_fits;
    if (!err.empty()) return false;
    ++ok_binds[pod];
    const json anno = json::parse(r.body())["Annotations"];
    granted_mib[pod] = std::stoll(anno.at(kAnnoGpuMemPod).get<std::string>()) * ext->config().gpu_mem_unit_mib;
    return true;
  };

  // Rounds where 8 connections bind the same pod at once: exactly one wins.
  std::vector<std::unique_ptr<Client>> same;
  for (int t = 0; t < kSameThreads; ++t) same.push_back(std::make_unique<Client>(srv.port()));
  for (int round = 0; round < kSameRounds; ++round) {
    const std::string pod = "same-" + std::to_string(round);
    const json f = json::parse(same[0]->post("/filter", filter_args(pod, 1, nodes)).body());
    ASSERT_FALSE(f["NodeNames"].empty());
    const std::string node = f["NodeNames"][0];
    std::atomic<bool> go{false};
    std::atomic<int> wins{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kSameThreads; ++t)
      ts.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        if (record_bind(pod, same[t]->post("/bind", bind_args(pod, node)))) ++wins;
      });
    go = true;
    for (auto& th : ts) th.join();
    EXPECT_EQ(wins.load(), 1) << pod;
  }

  // 16 connections x 1,000 mixed requests: filter then bind to the first feasible node (all threads contend for
  // the same nodes, so some binds lose the race), a duplicate bind now and then, releases of random bound pods.
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&, t] {
      Client c(srv.port());
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<std::string> bound;
      for (int req = 0, k = 0; req < kRequests;) {
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        if (!bound.empty() && u < 0.3) {
          const std::size_t i = std::uniform_int_distribution<std::size_t>(0, bound.size() - 1)(rng);
          ++req;
          if (protocol_error(c.post("/release", release_args(bound[i]))) == "") {
            std::lock_guard lock(mu);
            ++ok_releases;
            granted_mib.erase(bound[i]);
          }
          bound.erase(bound.begin() + static_cast<std::ptrdiff_t>(i));
        } else if (!bound.empty() && u < 0.35) {
          ++req;
          EXPECT_FALSE(record_bind(bound.back(), c.post("/bind", bind_args(bound.back(), nodes[0]))));
        } else {
          const std::string pod = "t" + std::to_string(t) + "-" + std::to_string(k++);
          const int gib = 1 << std::uniform_int_distribution<int>(0, 3)(rng);  // 1, 2, 4, 8 GiB
          const Response f = c.post("/filter", filter_args(pod, gib, nodes));
          ++req;
          const json names = json::parse(f.body())["NodeNames"];
          if (names.empty()) continue;
          ++req;
          if (record_bind(pod, c.post("/bind", bind_args(pod, names[0].get<std::string>())))) bound.push_back(pod);
        }
      }
    });
  for (auto& th : workers) th.join();

  auto alloc = ext->allocator();
  EXPECT_NO_THROW(alloc->check_invariants());
  const Snapshot s = alloc->snapshot();
  std::int64_t binds = 0, placed_mib = 0, used_mib = 0, granted = 0;
  for (const auto& [pod, n] : ok_binds) {
    EXPECT_EQ(n, 1) << pod;
    binds += n;
  }
  for (const auto& [id, p] : s.placements) placed_mib += p.gpu_memory_mib * static_cast<std::int64_t>(p.gpus.size());
  for (const NodeState& n : s.nodes)
    for (const GpuState& g : n.gpus) {
      EXPECT_GE(g.memory_free, 0);
      EXPECT_LE(g.memory_free, 16384);
      used_mib += 16384 - g.memory_free;
    }
  for (const auto& [pod, mib] : granted_mib) granted += mib;
  EXPECT_EQ(static_cast<std::int64_t>(s.placements.size()), binds - ok_releases);
  EXPECT_EQ(placed_mib, granted);
  EXPECT_EQ(used_mib, placed_mib);
  EXPECT_GT(no_longer_fits, 0);  // the GPUs did run out under contention
  EXPECT_GT(ok_releases, 0);
}

// ---------------------------------------------------------------- lifecycle
TEST(ExtenderHttp, StopIsPromptWithIdleKeptAliveClients) {
  auto ext = make_extender(1);
  ExtenderHttpServer srv(ext, HttpServerOptions{});  // default 90 s idle timeout
  srv.start();
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(std::make_unique<Client>(srv.port()));
    ASSERT_EQ(idle.back()->get("/healthz").result_int(), 200);
  }
  const Clock::time_point t0 = Clock::now();
  srv.stop();
  EXPECT_LT(since(t0), 1.0);
  EXPECT_FALSE(srv.running());
  for (auto& c : idle) EXPECT_TRUE(c->closed_within(1.0));
  EXPECT_EQ(metric(srv.metrics_text(), "kubetune_extender_http_connections"), 0);
  srv.stop();  // idempotent
  srv.start();  // and restartable
  Client again(srv.port());
  EXPECT_EQ(again.get("/healthz").result_int(), 200);
}

TEST(ExtenderHttp, StartOnAPortInUseThrowsNamingIt) {
  auto ext = make_extender(1);
  ExtenderHttpServer a(ext);
  a.start();
  HttpServerOptions o;
  o.port = a.port();
  ExtenderHttpServer b(ext, o);
  try {
    b.start();
    FAIL() << "start on a port in use did not throw";
  } catch (const kt::StateError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(a.port())), std::string::npos) << e.what();
  }
  EXPECT_FALSE(b.running());
  EXPECT_THROW(a.start(), kt::StateError);  // already running
  o.host = "192.0.2.1";  // TEST-NET-1 (RFC 5737): not an address of this machine
  o.port = 0;
  EXPECT_THROW(ExtenderHttpServer(ext, o).start(), kt::StateError);
  o.host = "not a host";
  EXPECT_THROW(ExtenderHttpServer(ext, o).start(), kt::InvalidArgument);
}

TEST(ExtenderHttp, OptionsAreValidated) {
  auto bad = [](auto mutate, const std::string& field) {
    HttpServerOptions o;
    mutate(o);
    try {
      o.validate();
      ADD_FAILURE() << field << " accepted";
    } catch (const kt::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  bad([](HttpServerOptions& o) { o.port = 70000; }, "port = 70000");
  bad([](HttpServerOptions& o) { o.n_threads = 0; }, "n_threads = 0");
  bad([](HttpServerOptions& o) { o.prefix = "gpushare/"; }, "prefix = 'gpushare/'");
  bad([](HttpServerOptions& o) { o.max_body_bytes = 0; }, "max_body_bytes = 0");
  bad([](HttpServerOptions& o) { o.max_header_bytes = 10; }, "max_header_bytes = 10");
  bad([](HttpServerOptions& o) { o.read_timeout_s = -1; }, "read_timeout_s = -1");
  bad([](HttpServerOptions& o) { o.idle_timeout_s = 0; }, "idle_timeout_s = 0");
  bad([](HttpServerOptions& o) { o.max_connections = 0; }, "max_connections = 0");
  bad([](HttpServerOptions& o) { o.host = ""; }, "host");
  EXPECT_NO_THROW(HttpServerOptions{}.validate());
  EXPECT_THROW(ExtenderHttpServer(nullptr), kt::InvalidArgument);
  HttpServerOptions o;
  o.n_threads = 0;
  EXPECT_THROW(ExtenderHttpServer(make_extender(1), o), kt::InvalidArgument);
}
