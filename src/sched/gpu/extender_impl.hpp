// Extender internals shared by extender_protocol.cpp (the verbs) and extender_state.cpp (the Kubernetes state).
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kube_json.hpp"
#include "kubetune/sched/gpu/extender.hpp"

namespace kubetune::sched::gpu {

/// What the extender knows of one pod ("namespace/name").
struct PodRecord {
  enum class State {
    kPending,  // filtered, waiting for its bind (forgotten after pending_ttl_s)
    kBinding,  // bind claimed it and placed it; the API writes are in flight
    kBound,    // bound (by this extender, or seen bound in the API): holds a placement when its node is known
  };
  State state = State::kPending;
  Request req;
  std::string uid;
  std::string node;         // kBinding / kBound
  std::vector<int> gpus;    // recorded GPU indices (pinned on rebuilds); empty = let the allocator choose
  int mig_start = -1;
  double since = 0;         // kPending: filtered at; kBound by us: bound at (monotonic seconds)
  bool placed = false;      // holds a placement in the allocator
  bool by_us = false;       // bound by this extender and not yet seen bound in the API
  bool deleted = false;     // deleted while its bind was in flight
};

/// ExtenderArgs as filter and prioritize read them: the DOM of everything but a top-level NodeNames array of strings,
/// whose entries are in `names` (nullopt: no such array was taken out, and candidate_names reads `rest`).
struct ExtenderArgsView {
  nlohmann::json rest;
  std::optional<std::vector<std::string>> names;
};

/// A counter shared by handler threads.
using Counter = std::atomic<std::int64_t>;

struct Extender::Impl {
  explicit Impl(std::shared_ptr<const Policy> p, AllocatorOptions o) : policy(std::move(p)), aopt(o) {}

  std::shared_ptr<const Policy> policy;
  AllocatorOptions aopt;

  // Lock order: alloc_mu (shared: any use of `alloc`; exclusive: replacing it) -> pods_mu -> the allocator's own.
  mutable std::shared_mutex alloc_mu;
  std::shared_ptr<Allocator> alloc;
  std::vector<NodeSpec> specs;                      // the nodes `alloc` was built from, in order
  std::map<std::string, std::vector<int>> unhealthy;  // node -> unhealthy GPU indices

  mutable std::mutex pods_mu;
  std::unordered_map<std::string, PodRecord> pods;
  std::unordered_map<std::string, std::string> uid_key;  // pod UID -> "namespace/name" (preemption's MetaPod)
  std::int64_t pending = 0;  // records in state kPending (kept by record / set_state / erase_record)
  double last_sweep = 0;

  mutable std::mutex writer_mu;
  std::shared_ptr<KubeWriter> writer;

  struct {
    Counter filter{0}, prioritize{0}, bind{0}, preempt{0}, bad_requests{0};
    Counter bind_ok{0}, bind_failed{0}, rollbacks{0}, bind_conflicts{0};
    Counter releases{0}, pin_conflicts{0}, syncs{0}, node_events{0}, pod_events{0}, rebuilds{0}, pending_expired{0};
    Counter bad_objects{0};
  } n;

  static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::shared_ptr<KubeWriter> current_writer() const {
    std::lock_guard lock(writer_mu);
    return writer;
  }

  // ---- the verbs (extender_protocol.cpp): args is the parsed body; InvalidArgument = a bad request
  /// The ExtenderFilterResult, serialized (written directly: a DOM of 5,000 names costs more than the filter).
  std::string filter(const ExtenderConfig& cfg, ExtenderArgsView&& args);
  nlohmann::json prioritize(const ExtenderConfig& cfg, ExtenderArgsView&& args);
  nlohmann::json bind(const ExtenderConfig& cfg, const nlohmann::json& args);
  nlohmann::json preempt(const ExtenderConfig& cfg, const nlohmann::json& args);
  nlohmann::json release(const ExtenderConfig& cfg, const nlohmann::json& args);

  // ---- pods (callers hold alloc_mu shared or exclusive, and pods_mu)
  /// Places a kBound record's pod in `a` (pinned to its GPUs when recorded); false on a conflict.
  bool place_record(Allocator& a, PodRecord& rec);
  /// The record of key, created pending (not yet filtered: since = 0) when absent.
  PodRecord& record(const std::string& key);
  void set_state(PodRecord& rec, PodRecord::State s);
  void erase_record(const std::string& key);
  /// Forgets expired pending pods, and the oldest ones beyond max_pending.
  void sweep_pending(const ExtenderConfig& cfg, double t);

  // ---- nodes (caller holds alloc_mu exclusive)
  /// A new allocator over `specs` with every bound record placed again and the unhealthy GPUs marked.
  void rebuild();
};

}  // namespace kubetune::sched::gpu
