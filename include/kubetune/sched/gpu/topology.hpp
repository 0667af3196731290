// Per-node GPU interconnect topology (NVLink / PCIe) kept as a Boost.Graph graph behind a small interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kubetune::sched::gpu {

/// Link class between two GPUs of one node; higher is faster.
enum class LinkType : std::uint8_t { kNone = 0, kPcieCrossSocket = 1, kPcie = 2, kNvLink = 3 };

/// Parse "nvlink" / "pcie" / "pcie-cross" / "none" (case-sensitive); throws InvalidArgument naming the value.
LinkType parse_link_type(const std::string& s);
const char* to_string(LinkType t) noexcept;

/// Undirected weighted graph of the GPUs of one node (vertices = GPU indices, edge property = LinkType).
/// Stored as a boost::adjacency_list in the .cpp (pimpl) so that public headers stay light.
/// Without an explicit edge two GPUs talk over PCIe (`default_link`).
class Topology {
 public:
  explicit Topology(int num_gpus, LinkType default_link = LinkType::kPcie);
  ~Topology();
  Topology(const Topology& o);
  Topology& operator=(const Topology& o);
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  /// A topology where GPUs {0..n/2-1} and {n/2..n-1} are fully NVLink-connected islands joined over PCIe
  /// (DGX-1-like hybrid cube mesh simplified), or one full NVLink clique when `islands` == 1.
  static Topology nvlink_islands(int num_gpus, int islands);

  int num_gpus() const noexcept;
  void set_link(int a, int b, LinkType t);
  LinkType link(int a, int b) const;
  /// Sum of pairwise link classes inside `gpus` (higher = better connected).
  int set_score(const std::vector<int>& gpus) const;
  /// Number of GPUs reachable from `gpu` through NVLink edges only (connected component size).
  int nvlink_component_size(int gpu) const;
  /// Among `candidates`, the k-subset with the highest set_score; ties keep the lexicographically smallest.
  /// Exhaustive over combinations (nodes hold <= 16 GPUs); returns empty when k > |candidates|.
  std::vector<int> best_subset(const std::vector<int>& candidates, int k) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kubetune::sched::gpu
