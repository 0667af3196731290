// libFuzzer target: arbitrary bytes as an Alibaba GPU trace CSV file, read by both trace readers (the node list and
// the pod list; a file may carry both sets of columns, extra columns are ignored). Bad input must end as a
// kubetune::Error; a crash, hang or sanitizer report is a finding, and so is an accepted cluster and workload that
// the allocator cannot take (the first pods are placed and released, then the invariants checked).
// Run through scripts/fuzz.sh.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/sched/gpu/allocator.hpp"
#include "kubetune/sched/gpu/policy.hpp"
#include "kubetune/sched/gpu/trace.hpp"

namespace {
using namespace kubetune::sched::gpu;

/// The readers take a path: every input is written to one private file of this process.
const std::string& scratch_path() {
  static const std::string path = [] {
    char name[] = "/tmp/kt_fuzz_trace_XXXXXX";
    const int fd = mkstemp(name);
    if (fd < 0) std::abort();
    close(fd);
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return std::string(name);
  }();
  return path;
}

void write_file(const std::uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(scratch_path().c_str(), "wb");
  if (f == nullptr || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
}

/// Places (then releases) up to 16 of the pods; an Error here is a finding, a pod that does not fit is not.
void replay_some(Cluster cluster, const std::vector<Request>& pods) {
  static const std::shared_ptr<const Policy> policy = make_policy("best_fit");
  Allocator alloc(std::move(cluster), policy);
  std::vector<std::uint64_t> placed;
  for (std::size_t i = 0; i < pods.size() && i < 16; ++i)
    if (const auto p = alloc.place(pods[i])) placed.push_back(p->id);
  alloc.check_invariants();
  for (const std::uint64_t id : placed) alloc.release(id);
  alloc.check_invariants();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_file(data, size);
  const std::string& path = scratch_path();
  std::vector<Request> pods;
  try {
    pods = load_trace_pods(path);
  } catch (const kubetune::Error&) {
  }
  for (const bool gpu_nodes_only : {true, false}) {
    Cluster cluster;
    try {
      cluster = load_trace_cluster(path, gpu_nodes_only);
    } catch (const kubetune::Error&) {
      continue;
    }
    try {
      replay_some(std::move(cluster), pods);
    } catch (const kubetune::Error&) {
      std::abort();  // the readers accepted what the allocator refuses
    }
  }
  return 0;
}
