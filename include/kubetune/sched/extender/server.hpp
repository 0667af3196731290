// HTTP/1.1 server of the scheduler extender: kube-scheduler's POST <prefix>/<verb> calls over kept-alive
// connections, plus /healthz, /readyz and /metrics. Boost.Beast lives in src/sched/extender/server.cpp only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kubetune/sched/gpu/extender.hpp"

namespace kubetune::sched::gpu {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                                 // 0 = a free port (port() tells which)
  int n_threads = 2;                            // I/O threads, which also run the handlers
  std::string prefix = "/gpushare-scheduler";   // the verbs answer under the prefix and bare ("/filter")
  std::size_t max_body_bytes = 64u << 20;       // 413 above (the smaller of this and the extender's limit)
  std::size_t max_header_bytes = 16u << 10;     // 431 above
  double read_timeout_s = 10.0;                 // a request must be read (and its response written) completely
                                                // this long after its first byte
  double idle_timeout_s = 90.0;                 // a kept-alive connection idle this long is closed (Go's client: 90 s)
  std::size_t max_connections = 1024;           // further connections get 503 and are closed

  void validate() const;  // throws InvalidArgument naming the field and value
};

/// Serves one Extender. Each connection reads, handles and writes one request at a time (so one connection never
/// runs two handlers at once); handlers run on the `n_threads` I/O threads and may block (bind writes to the API).
class ExtenderHttpServer {
 public:
  ExtenderHttpServer(std::shared_ptr<Extender> ext, HttpServerOptions opt = {});
  ~ExtenderHttpServer();  // stop()
  ExtenderHttpServer(const ExtenderHttpServer&) = delete;
  ExtenderHttpServer& operator=(const ExtenderHttpServer&) = delete;

  /// Binds, listens and starts the threads. Throws InvalidArgument for a host that does not resolve and
  /// StateError when already running or when the address cannot be bound (both name host:port).
  void start();
  /// Idempotent; closes every connection (idle kept-alive ones too) and joins the threads. start() may follow.
  void stop();
  int port() const;
  bool running() const;
  /// The server's own Prometheus metrics (kubetune_extender_http_*); /metrics serves the extender's first.
  std::string metrics_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubetune::sched::gpu
