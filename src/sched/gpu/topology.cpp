// Boost.Graph-backed GPU interconnect topology and best-connected GPU subset search.
#include "kubetune/sched/gpu/topology.hpp"

#include <algorithm>
#include <functional>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/filtered_graph.hpp>

#include "kubetune/core/error.hpp"

namespace kubetune::sched::gpu {

namespace {
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                    boost::property<boost::edge_weight_t, int>>;
}

struct Topology::Impl {
  Graph g;
  LinkType default_link = LinkType::kPcie;
  std::vector<std::uint8_t> matrix;  // dense cache of link classes, n*n
  int n = 0;
};

LinkType parse_link_type(const std::string& s) {
  if (s == "nvlink") return LinkType::kNvLink;
  if (s == "pcie") return LinkType::kPcie;
  if (s == "pcie-cross" || s == "sys") return LinkType::kPcieCrossSocket;
  if (s == "none") return LinkType::kNone;
  KT_THROW(InvalidArgument, "link type '", s, "' is not one of nvlink, pcie, pcie-cross, none");
}

const char* to_string(LinkType t) noexcept {
  switch (t) {
    case LinkType::kNvLink: return "nvlink";
    case LinkType::kPcie: return "pcie";
    case LinkType::kPcieCrossSocket: return "pcie-cross";
    default: return "none";
  }
}

Topology::Topology(int num_gpus, LinkType default_link) : impl_(std::make_unique<Impl>()) {
  KT_CHECK(num_gpus >= 0 && num_gpus <= 64, InvalidArgument, "topology num_gpus = ", num_gpus, " must be in [0, 64]");
  impl_->g = Graph(static_cast<std::size_t>(num_gpus));
  impl_->default_link = default_link;
  impl_->n = num_gpus;
  impl_->matrix.assign(static_cast<std::size_t>(num_gpus) * static_cast<std::size_t>(num_gpus),
                       static_cast<std::uint8_t>(default_link));
}
Topology::~Topology() = default;
Topology::Topology(const Topology& o) : impl_(std::make_unique<Impl>(*o.impl_)) {}
Topology& Topology::operator=(const Topology& o) {
  if (this != &o) impl_ = std::make_unique<Impl>(*o.impl_);
  return *this;
}
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

Topology Topology::nvlink_islands(int num_gpus, int islands) {
  KT_CHECK(islands >= 1 && islands <= std::max(1, num_gpus), InvalidArgument, "nvlink islands = ", islands,
           " must be in [1, num_gpus=", num_gpus, "]");
  Topology t(num_gpus, LinkType::kPcie);
  const int per = (num_gpus + islands - 1) / islands;
  for (int a = 0; a < num_gpus; ++a)
    for (int b = a + 1; b < num_gpus; ++b)
      if (a / per == b / per) t.set_link(a, b, LinkType::kNvLink);
  return t;
}

int Topology::num_gpus() const noexcept { return impl_->n; }

void Topology::set_link(int a, int b, LinkType t) {
  const int n = impl_->n;
  KT_CHECK(a >= 0 && a < n && b >= 0 && b < n && a != b, InvalidArgument, "link (", a, ", ", b,
           ") invalid for a node with ", n, " GPUs");
  auto [e, found] = boost::edge(static_cast<std::size_t>(a), static_cast<std::size_t>(b), impl_->g);
  if (found) {
    boost::put(boost::edge_weight, impl_->g, e, static_cast<int>(t));
  } else {
    boost::add_edge(static_cast<std::size_t>(a), static_cast<std::size_t>(b), static_cast<int>(t), impl_->g);
  }
  impl_->matrix[static_cast<std::size_t>(a * n + b)] = static_cast<std::uint8_t>(t);
  impl_->matrix[static_cast<std::size_t>(b * n + a)] = static_cast<std::uint8_t>(t);
}

LinkType Topology::link(int a, int b) const {
  const int n = impl_->n;
  KT_CHECK(a >= 0 && a < n && b >= 0 && b < n, InvalidArgument, "GPU pair (", a, ", ", b, ") out of range for ", n,
           " GPUs");
  if (a == b) return LinkType::kNvLink;
  return static_cast<LinkType>(impl_->matrix[static_cast<std::size_t>(a * n + b)]);
}

int Topology::set_score(const std::vector<int>& gpus) const {
  int s = 0;
  const int n = impl_->n;
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = i + 1; j < gpus.size(); ++j)
      s += impl_->matrix[static_cast<std::size_t>(gpus[i] * n + gpus[j])];
  return s;
}

int Topology::nvlink_component_size(int gpu) const {
  const int n = impl_->n;
  KT_CHECK(gpu >= 0 && gpu < n, InvalidArgument, "gpu = ", gpu, " out of range for ", n, " GPUs");
  const Graph& g = impl_->g;
  auto wmap = boost::get(boost::edge_weight, g);
  auto keep = [wmap](Graph::edge_descriptor e) { return wmap[e] == static_cast<int>(LinkType::kNvLink); };
  boost::filtered_graph<Graph, std::function<bool(Graph::edge_descriptor)>> fg(g, keep);
  std::vector<int> comp(static_cast<std::size_t>(n));
  boost::connected_components(fg, comp.data());
  int size = 0;
  for (int v = 0; v < n; ++v) size += comp[static_cast<std::size_t>(v)] == comp[static_cast<std::size_t>(gpu)];
  return size;
}

std::vector<int> Topology::best_subset(const std::vector<int>& candidates, int k) const {
  const int m = static_cast<int>(candidates.size());
  if (k <= 0) return {};
  if (k > m) return {};
  if (k == m) return candidates;
  // Exhaustive over combinations in lexicographic order; keep the first best.
  std::vector<int> idx(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) idx[static_cast<std::size_t>(i)] = i;
  std::vector<int> best, cur(static_cast<std::size_t>(k));
  int best_score = -1;
  const int n = impl_->n;
  while (true) {
    int s = 0;
    for (int i = 0; i < k; ++i) {
      cur[static_cast<std::size_t>(i)] = candidates[static_cast<std::size_t>(idx[static_cast<std::size_t>(i)])];
    }
    for (int i = 0; i < k; ++i)
      for (int j = i + 1; j < k; ++j)
        s += impl_->matrix[static_cast<std::size_t>(cur[static_cast<std::size_t>(i)] * n + cur[static_cast<std::size_t>(j)])];
    if (s > best_score) {
      best_score = s;
      best = cur;
    }
    int i = k - 1;
    while (i >= 0 && idx[static_cast<std::size_t>(i)] == m - k + i) --i;
    if (i < 0) break;
    ++idx[static_cast<std::size_t>(i)];
    for (int j = i + 1; j < k; ++j) idx[static_cast<std::size_t>(j)] = idx[static_cast<std::size_t>(j - 1)] + 1;
  }
  return best;
}

}  // namespace kubetune::sched::gpu
