// Python bindings of the extender module (into kubetune._kubetune.sched): the scheduler extender's HTTP server.
#include <pybind11/stl.h>

#include <memory>

#include "bindings.hpp"
#include "kubetune/sched/extender/server.hpp"

namespace kubetune::python {

namespace g = kubetune::sched::gpu;

namespace {
/// The server's destructor joins threads that may be waiting for the GIL (a bind calling a Python KubeWriter).
struct DeleteWithoutGil {
  void operator()(g::ExtenderHttpServer* s) const {
    py::gil_scoped_release nogil;
    delete s;
  }
};
using ServerHolder = std::unique_ptr<g::ExtenderHttpServer, DeleteWithoutGil>;
}  // namespace

void bind_extender(py::module_& parent) {
  py::module_ m = parent.attr("sched").cast<py::module_>();
  py::class_<g::ExtenderHttpServer, ServerHolder>(
      m, "ExtenderHttpServer",
      "kube-scheduler's extender protocol over HTTP/1.1 (Boost.Beast, kept-alive connections, TCP_NODELAY): POST "
      "<prefix>/{filter,prioritize,bind,preempt,release}, GET /healthz, /readyz, /metrics. Serves on its own "
      "threads; the GIL is free while it runs.")
      .def(py::init([](std::shared_ptr<g::Extender> ext, std::string host, int port, int n_threads, std::string prefix,
                       std::size_t max_body, std::size_t max_header, double read_timeout, double idle_timeout,
                       std::size_t max_connections) {
             const g::HttpServerOptions o{.host = std::move(host), .port = port, .n_threads = n_threads,
                                          .prefix = std::move(prefix), .max_body_bytes = max_body,
                                          .max_header_bytes = max_header, .read_timeout_s = read_timeout,
                                          .idle_timeout_s = idle_timeout, .max_connections = max_connections};
             o.validate();
             return ServerHolder(new g::ExtenderHttpServer(std::move(ext), o));
           }),
           py::arg("extender"), py::arg("host") = "127.0.0.1", py::arg("port") = 0, py::arg("n_threads") = 2,
           py::arg("prefix") = "/gpushare-scheduler", py::arg("max_body_bytes") = std::size_t{64} << 20,
           py::arg("max_header_bytes") = std::size_t{16} << 10, py::arg("read_timeout_s") = 10.0,
           py::arg("idle_timeout_s") = 90.0, py::arg("max_connections") = 1024, py::keep_alive<1, 2>())
      .def("start", &g::ExtenderHttpServer::start, py::call_guard<py::gil_scoped_release>())
      .def("stop", &g::ExtenderHttpServer::stop, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("port", &g::ExtenderHttpServer::port)
      .def_property_readonly("running", &g::ExtenderHttpServer::running)
      .def("metrics_text", &g::ExtenderHttpServer::metrics_text);
}

}  // namespace kubetune::python
