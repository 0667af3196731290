// The extender's HTTP/1.1 server on Boost.Beast: every Beast/Asio include of kubetune is in this one file (compile
// time). Each connection loops wait-for-bytes (idle timeout) -> read one request (read timeout) -> handle -> write,
// so a connection never runs two handlers at once and needs no lock; handlers run on the I/O threads.
#include "kubetune/sched/extender/server.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// ---------------------------------------------------------------- routes and metrics

/// What a request asked for; the metrics' verb label. The protocol verbs come first (handled by Extender::handle).
enum Route : int { kFilter, kPrioritize, kBind, kPreempt, kRelease, kHealthz, kReadyz, kMetrics, kUnknown, kRoutes };
constexpr std::array<std::string_view, kRoutes> kRouteNames = {"filter",  "prioritize", "bind",    "preempt", "release",
                                                               "healthz", "readyz",     "metrics", "unknown"};
constexpr int kProtocolRoutes = kHealthz;

/// Histogram bounds (seconds), 50 us to 1 s: a filter over a few thousand nodes takes about 1 ms, a bind that writes
/// to the API server tens of ms.
constexpr std::array<double, 14> kBuckets = {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3,
                                             10e-3, 25e-3,  50e-3,  0.1,    0.25, 0.5,   1.0};

class HttpMetrics {
 public:
  void observe(Route route, int code, double seconds) {
    std::lock_guard lock(mu_);
    ++requests_[{route, code}];
    Histogram& h = durations_[route];
    std::size_t b = 0;
    while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
    ++h.counts[b];
    h.sum += seconds;
    ++h.count;
  }
  std::atomic<std::int64_t>& connections() { return connections_; }

  /// Prometheus text exposition format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats).
  std::string text() const {
    std::ostringstream os;
    os.precision(9);
    std::lock_guard lock(mu_);
    os << "# HELP kubetune_extender_http_requests_total HTTP requests answered, by verb and status code.\n"
          "# TYPE kubetune_extender_http_requests_total counter\n";
    for (const auto& [key, n] : requests_)
      os << "kubetune_extender_http_requests_total{verb=\"" << kRouteNames[key.first] << "\",code=\"" << key.second
         << "\"} " << n << '\n';
    os << "# HELP kubetune_extender_http_request_duration_seconds Time from a request read to its response ready.\n"
          "# TYPE kubetune_extender_http_request_duration_seconds histogram\n";
    for (int r = 0; r < kRoutes; ++r) {
      const Histogram& h = durations_[r];
      if (h.count == 0) continue;
      const std::string_view verb = kRouteNames[r];
      std::int64_t cumulative = 0;
      for (std::size_t b = 0; b <= kBuckets.size(); ++b) {
        cumulative += h.counts[b];
        os << "kubetune_extender_http_request_duration_seconds_bucket{verb=\"" << verb << "\",le=\"";
        if (b < kBuckets.size()) os << kBuckets[b];
        else os << "+Inf";
        os << "\"} " << cumulative << '\n';
      }
      os << "kubetune_extender_http_request_duration_seconds_sum{verb=\"" << verb << "\"} " << h.sum << '\n'
         << "kubetune_extender_http_request_duration_seconds_count{verb=\"" << verb << "\"} " << h.count << '\n';
    }
    os << "# HELP kubetune_extender_http_connections Open HTTP connections.\n"
          "# TYPE kubetune_extender_http_connections gauge\n"
          "kubetune_extender_http_connections "
       << connections_.load() << '\n';
    return os.str();
  }

 private:
  struct Histogram {
    std::array<std::int64_t, kBuckets.size() + 1> counts{};  // per bucket (not cumulative); last = above 1 s
    double sum = 0.0;
    std::int64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<int, int>, std::int64_t> requests_;  // (route, code) -> count
  std::array<Histogram, kRoutes> durations_{};
  std::atomic<std::int64_t> connections_{0};
};

/// Parse errors (malformed HTTP, limits) as opposed to socket errors.
const boost::system::error_category& kHttpErrors = http::make_error_code(http::error::bad_target).category();

std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

/// The route of a path: the prefix, when present, is stripped, so "/gpushare-scheduler/filter" and "/filter" agree.
Route route_of(std::string_view target, const std::string& prefix) {
  std::string_view path = target.substr(0, target.find('?'));
  if (!prefix.empty() && path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix &&
      path[prefix.size()] == '/')
    path.remove_prefix(prefix.size());
  if (path.empty() || path[0] != '/') return kUnknown;
  path.remove_prefix(1);
  for (int r = 0; r < kUnknown; ++r)
    if (path == kRouteNames[r]) return static_cast<Route>(r);
  return kUnknown;
}

using Response = http::response<http::string_body>;

Response make_response(http::status status, std::string body, const char* content_type) {
  Response res{status, 11};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  return res;
}

/// Every error body is the protocol's shape, {"Error": "..."}, so kube-scheduler logs the reason.
Response error_response(http::status status, const std::string& message) {
  return make_response(status, nlohmann::json{{"Error", message}}.dump(), "application/json");
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

/// After the last response of a connection the server stops sending and reads (and drops) what the client still
/// sends for at most this long before closing: closing with unread bytes would reset the connection and could
/// destroy the response before the client reads it (a 413 sent while the body is still arriving).
constexpr double kLingerS = 1.0;

}  // namespace

// ---------------------------------------------------------------- options

void HttpServerOptions::validate() const {
  KT_CHECK(!host.empty(), InvalidArgument, "HttpServerOptions.host is empty");
  KT_CHECK(port >= 0 && port <= 65535, InvalidArgument, "HttpServerOptions.port = ", port, " is not in [0, 65535]");
  KT_CHECK(n_threads >= 1 && n_threads <= 1024, InvalidArgument, "HttpServerOptions.n_threads = ", n_threads,
           " is not in [1, 1024]");
  KT_CHECK(prefix.empty() || (prefix.front() == '/' && prefix.back() != '/'), InvalidArgument,
           "HttpServerOptions.prefix = '", prefix, "' must be empty or start with '/' and not end with '/'");
  KT_CHECK(max_body_bytes > 0, InvalidArgument, "HttpServerOptions.max_body_bytes = ", max_body_bytes, " must be > 0");
  KT_CHECK(max_header_bytes >= 256 && max_header_bytes <= (1u << 30), InvalidArgument,
           "HttpServerOptions.max_header_bytes = ", max_header_bytes, " is not in [256, 2^30]");
  KT_CHECK(std::isfinite(read_timeout_s) && read_timeout_s > 0, InvalidArgument,
           "HttpServerOptions.read_timeout_s = ", read_timeout_s, " must be a positive number");
  KT_CHECK(std::isfinite(idle_timeout_s) && idle_timeout_s > 0, InvalidArgument,
           "HttpServerOptions.idle_timeout_s = ", idle_timeout_s, " must be a positive number");
  KT_CHECK(max_connections >= 1, InvalidArgument, "HttpServerOptions.max_connections = ", max_connections,
           " must be >= 1");
}

// ---------------------------------------------------------------- server state shared by connections

namespace {

/// What connections share: the extender, the options and the metrics.
struct Shared {
  Shared(std::shared_ptr<Extender> e, HttpServerOptions o) : ext(std::move(e)), opt(std::move(o)) {
    KT_CHECK(ext != nullptr, InvalidArgument, "ExtenderHttpServer: extender must not be null");
    opt.validate();
    body_limit = std::min<std::uint64_t>(opt.max_body_bytes, ext->config().max_body_bytes);
  }
  Response answer(const http::request<http::string_body>& req, Route route);
  Response respond(Route route, std::string_view body);

  std::shared_ptr<Extender> ext;
  HttpServerOptions opt;
  std::uint64_t body_limit = 0;  // min(opt.max_body_bytes, ext->config().max_body_bytes)
  HttpMetrics metrics;
};

}  // namespace

struct ExtenderHttpServer::Impl : Shared {
  using Shared::Shared;
  void accept();

  /// One run: the io_context, its acceptor and threads. Destroying it destroys every pending handler and with
  /// them the connections (each owned by its pending operation), which is how stop() closes idle connections.
  struct Runtime {
    explicit Runtime(int threads) : ioc(threads), acceptor(ioc), retry(ioc) {}
    net::io_context ioc;
    tcp::acceptor acceptor;
    net::steady_timer retry;  // accept failed (e.g. out of file descriptors): wait before the next try
    std::vector<std::thread> threads;
  };
  std::mutex lifecycle;  // start/stop
  std::unique_ptr<Runtime> rt;
  std::atomic<int> port{0};
};

namespace {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket&& socket, Shared& srv) : stream_(std::move(socket)), srv_(srv) {
    ++srv_.metrics.connections();
  }
  ~Connection() { --srv_.metrics.connections(); }

  void start() { wait_for_request(); }

  /// Over max_connections: one 503 and close, without reading a request.
  void reject() {
    res_ = error_response(http::status::service_unavailable,
                          "too many connections (max_connections = " + std::to_string(srv_.opt.max_connections) + ")");
    write(false);
  }

 private:
  /// Between requests the idle timeout runs; bytes already buffered (a pipelined request) start the next at once.
  void wait_for_request() {
    if (buffer_.size() > 0) return read_request();
    stream_.expires_after(seconds(srv_.opt.idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            beast::bind_front_handler(&Connection::on_first_bytes, shared_from_this()));
  }

  void on_first_bytes(beast::error_code ec, std::size_t n) {
    if (ec) return;  // idle timeout, or the client closed: drop the connection
    buffer_.commit(n);
    read_request();
  }

  void read_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.opt.max_header_bytes));
    parser_->body_limit(srv_.body_limit);
    stream_.expires_after(seconds(srv_.opt.read_timeout_s));
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Connection::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout) return;  // closed, or too slow: drop
    if (ec && ec.category() != kHttpErrors) return;  // a socket error (reset): nobody to answer
    const Clock::time_point t0 = Clock::now();
    const Route route = parser_->is_header_done() ? route_of(sv(parser_->get().target()), srv_.opt.prefix) : kUnknown;
    bool keep_alive = false;
    if (ec) {
      res_ = protocol_error(ec);  // the stream's framing is lost: answer and close
    } else {
      keep_alive = parser_->get().keep_alive();
      res_ = answer(route);
    }
    res_.version(ec ? 11 : parser_->get().version());
    srv_.metrics.observe(route, res_.result_int(), std::chrono::duration<double>(Clock::now() - t0).count());
    write(keep_alive);
  }

  Response protocol_error(beast::error_code ec) const {
    if (ec == http::error::body_limit)
      return error_response(http::status::payload_too_large,
                            "request body over the limit of " + std::to_string(srv_.body_limit) + " bytes");
    if (ec == http::error::header_limit)
      return error_response(http::status::request_header_fields_too_large,
                            "request header over the limit of " + std::to_string(srv_.opt.max_header_bytes) +
                                " bytes");
    return error_response(http::status::bad_request, "malformed HTTP request: " + ec.message());
  }

  /// Never throws: a failing handler is a 500 with its reason.
  Response answer(Route route) noexcept {
    try {
      return srv_.answer(parser_->get(), route);
    } catch (const std::exception& e) {
      return error_response(http::status::internal_server_error, std::string("internal error: ") + e.what());
    } catch (...) {
      return error_response(http::status::internal_server_error, "internal error");
    }
  }

  /// The whole response (header and body) goes out in one gathered write; TCP_NODELAY (set at accept) sends it at
  /// once instead of waiting for the client's delayed ACK.
  void write(bool keep_alive) {
    res_.keep_alive(keep_alive);
    res_.prepare_payload();
    stream_.expires_after(seconds(srv_.opt.read_timeout_s));  // a client that does not read is dropped too
    http::async_write(stream_, res_, beast::bind_front_handler(&Connection::on_write, shared_from_this(), keep_alive));
  }

  void on_write(bool keep_alive, beast::error_code ec, std::size_t) {
    if (ec) return;
    if (keep_alive) {
      release_request();
      return wait_for_request();
    }
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(seconds(std::min(kLingerS, srv_.opt.read_timeout_s)));
    drain();
  }

  /// An idle connection keeps no request or response (a body may be megabytes), nor a big buffer.
  void release_request() {
    parser_.reset();
    res_ = {};
    if (buffer_.size() == 0 && buffer_.capacity() > kReadChunk * 4) buffer_.shrink_to_fit();
  }

  void drain() {
    buffer_.clear();
    auto self = shared_from_this();
    stream_.async_read_some(buffer_.prepare(kReadChunk), [self](beast::error_code ec, std::size_t) {
      if (!ec) self->drain();  // until the client's EOF or the linger timeout
    });
  }

  static constexpr std::size_t kReadChunk = 16u << 10;
  beast::tcp_stream stream_;
  Shared& srv_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Response res_;
};

}  // namespace

void ExtenderHttpServer::Impl::accept() {
  // Each connection runs on its own strand: its tcp_stream timer and its I/O never run concurrently.
  rt->acceptor.async_accept(net::make_strand(rt->ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      rt->retry.expires_after(std::chrono::milliseconds(50));
      rt->retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) accept();
      });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    const bool over = static_cast<std::size_t>(metrics.connections().load()) >= opt.max_connections;
    auto conn = std::make_shared<Connection>(std::move(socket), *this);
    if (over) conn->reject();
    else conn->start();
    accept();
  });
}

Response Shared::answer(const http::request<http::string_body>& req, Route route) {
  if (route == kUnknown)
    return error_response(http::status::not_found,
                          "no route " + std::string(sv(req.method_string())) + " " + std::string(sv(req.target())) +
                              " (POST [" + opt.prefix + "]/{filter,prioritize,bind,preempt,release}, GET /healthz, "
                              "/readyz, /metrics)");
  const bool protocol = route < kProtocolRoutes;
  const http::verb allowed = protocol ? http::verb::post : http::verb::get;
  if (req.method() != allowed) {
    Response res = error_response(http::status::method_not_allowed,
                                  "method " + std::string(sv(req.method_string())) + " is not allowed on " +
                                      std::string(kRouteNames[route]) + " (allowed: " +
                                      std::string(sv(http::to_string(allowed))) + ")");
    res.set(http::field::allow, http::to_string(allowed));
    return res;
  }
  return respond(route, req.body());
}

Response Shared::respond(Route route, std::string_view body) {
  switch (route) {
    case kHealthz:
      return make_response(http::status::ok, "ok", "text/plain");
    case kReadyz:
      if (ext->ready()) return make_response(http::status::ok, "ok", "text/plain");
      return error_response(http::status::service_unavailable, "the extender has not synced with the API server yet");
    case kMetrics:
      return make_response(http::status::ok, ext->metrics_text() + metrics.text(), "text/plain; version=0.0.4");
    default: {
      ExtenderReply reply = ext->handle(kRouteNames[route], body);
      return make_response(static_cast<http::status>(reply.status), std::move(reply.body), "application/json");
    }
  }
}

// ---------------------------------------------------------------- ExtenderHttpServer

ExtenderHttpServer::ExtenderHttpServer(std::shared_ptr<Extender> ext, HttpServerOptions opt)
    : impl_(std::make_unique<Impl>(std::move(ext), std::move(opt))) {}

ExtenderHttpServer::~ExtenderHttpServer() { stop(); }

void ExtenderHttpServer::start() {
  std::lock_guard lock(impl_->lifecycle);
  const HttpServerOptions& o = impl_->opt;
  const std::string where = o.host + ":" + std::to_string(o.port);
  KT_CHECK(impl_->rt == nullptr, StateError, "extender HTTP server on ", where, " is already running");
  auto rt = std::make_unique<Impl::Runtime>(o.n_threads);
  tcp::endpoint ep;
  try {
    tcp::resolver resolver(rt->ioc);
    ep = *resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive | tcp::resolver::numeric_service)
              .begin();
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, "extender HTTP server: host '", o.host, "' does not resolve (", where, "): ", e.what());
  }
  try {
    rt->acceptor.open(ep.protocol());
    rt->acceptor.set_option(net::socket_base::reuse_address(true));  // restart while old sockets are in TIME_WAIT
    rt->acceptor.bind(ep);
    rt->acceptor.listen(net::socket_base::max_listen_connections);
  } catch (const std::exception& e) {
    KT_THROW(StateError, "extender HTTP server cannot listen on ", where, ": ", e.what());
  }
  impl_->port = rt->acceptor.local_endpoint().port();
  impl_->rt = std::move(rt);
  impl_->accept();
  for (int i = 0; i < o.n_threads; ++i)
    impl_->rt->threads.emplace_back([ioc = &impl_->rt->ioc] {
      for (;;) {
        try {
          ioc->run();
          return;
        } catch (...) {  // handlers catch their own failures; this keeps the thread serving if one slips through
        }
      }
    });
}

void ExtenderHttpServer::stop() {
  std::lock_guard lock(impl_->lifecycle);
  if (!impl_->rt) return;
  impl_->rt->ioc.stop();  // running handlers finish (a bind in flight completes); queued ones never run
  for (std::thread& t : impl_->rt->threads) t.join();
  impl_->rt.reset();  // closes the acceptor and every connection
}

int ExtenderHttpServer::port() const { return impl_->port.load(); }

bool ExtenderHttpServer::running() const {
  std::lock_guard lock(impl_->lifecycle);
  return impl_->rt != nullptr;
}

std::string ExtenderHttpServer::metrics_text() const { return impl_->metrics.text(); }

}  // namespace kubetune::sched::gpu
