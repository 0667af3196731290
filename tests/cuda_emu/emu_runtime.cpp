// The CUDA emulator's runtime: device-memory registry, error state, and the grid/block/thread scheduler.
//
// Threads of a block first run one after another on a single fiber. The first thread that synchronises
// (__syncthreads, __syncwarp, a shuffle) switches the block to one fiber per thread: threads before it have
// already returned, it keeps the first fiber, and the rest start fresh. The scheduler then runs every runnable
// thread until it waits or returns, resolves the warp operations and the barrier (strictly: see cuda_runtime.h),
// and repeats. All of it runs on the thread that launched the kernel.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <vector>

// Context switch: a few instructions of assembly on x86-64 (ucontext's swapcontext makes a signal-mask
// system call per switch, which dominated the run time); ucontext elsewhere, with shadow stacks (CET) or
// under AddressSanitizer, whose stack bookkeeping knows ucontext but not a hand-made switch.
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define KT_EMU_ASAN_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define KT_EMU_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define KT_EMU_ASAN_POISON(p, n) ((void)(p), (void)(n))
#define KT_EMU_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#if defined(__x86_64__) && !defined(__CET__) && !defined(__SANITIZE_ADDRESS__) && !defined(KT_EMU_UCONTEXT)
#define KT_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

dim3 gridDim;
dim3 blockDim;
uint3 blockIdx;
uint3 threadIdx;

// Bounds of the section that holds every __shared__ variable (defined by the linker when the section exists).
extern "C" char __start_kt_emu_shared[] __attribute__((weak));
extern "C" char __stop_kt_emu_shared[] __attribute__((weak));

namespace kt_emu {

void fatal(const char* fmt, ...) {
  std::fflush(stdout);
  std::fputs("kt_emu: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

namespace {

constexpr unsigned char kPoison = 0x7f;  // 0x7f7f7f7f is about 3.4e38 as a float
thread_local cudaError_t last_error = cudaSuccess;
cudaError_t fail(cudaError_t e) {
  last_error = e;
  return e;
}

// ------------------------------------------------------------------------------------------------ memory
struct Allocation {
  std::size_t bytes;
  bool device;  // false: cudaMallocHost (pinned host memory, also reachable from kernels)
};
/// Freed device blocks stay allocated (poisoned) for a while, so a stale pointer cannot land in a new
/// allocation that reused the address; the oldest leave once they exceed this many bytes.
constexpr std::size_t kQuarantineBytes = std::size_t{64} << 20;

struct Memory {
  std::mutex mu;
  std::map<std::uintptr_t, Allocation> blocks;
  std::map<std::uintptr_t, std::size_t> quarantine;  // freed blocks: base -> bytes
  std::deque<std::uintptr_t> quarantine_order;
  std::size_t quarantine_bytes = 0;
  std::size_t device_bytes = 0;
  std::size_t limit = SIZE_MAX;
  std::set<cudaStream_t> streams;
  std::map<cudaEvent_t, std::chrono::steady_clock::time_point> events;
};
Memory& memory() {
  static Memory* m = new Memory;  // leaked: tensor pools may free blocks after main returns
  return *m;
}
struct Counters {
  std::mutex mu;
  Stats s;
};
Counters& counters() {
  static Counters* c = new Counters;
  return *c;
}
template <class F>
void count(F&& f) {
  Counters& c = counters();
  std::lock_guard<std::mutex> lock(c.mu);
  f(c.s);
}

/// The allocation holding `p` (p may be one past its end), with its base address; null when none.
const Allocation* find_locked(Memory& m, const void* p, std::uintptr_t* base = nullptr) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = m.blocks.upper_bound(a);
  if (it == m.blocks.begin()) return nullptr;
  --it;
  if (a - it->first > it->second.bytes) return nullptr;
  if (base) *base = it->first;
  return &it->second;
}
/// True when [p, p + bytes) lies inside one allocation of the given kind.
bool range_ok_locked(Memory& m, const void* p, std::size_t bytes, bool device) {
  std::uintptr_t base = 0;
  const Allocation* a = find_locked(m, p, &base);
  if (!a || a->device != device) return false;
  return bytes <= a->bytes - (reinterpret_cast<std::uintptr_t>(p) - base);
}
std::size_t rounded_size(std::size_t bytes) { return bytes ? (bytes + 255) / 256 * 256 : 256; }
/// 256-byte aligned like cudaMalloc; under AddressSanitizer the rounding tail is unaddressable, so kernels
/// that overrun the requested size are reported.
void* aligned_block(std::size_t bytes) {
  void* p = std::aligned_alloc(256, rounded_size(bytes));
  if (p) KT_EMU_ASAN_POISON(static_cast<char*>(p) + bytes, rounded_size(bytes) - bytes);
  return p;
}
void release_block(void* p, std::size_t bytes) {
  KT_EMU_ASAN_UNPOISON(p, rounded_size(bytes));
  std::free(p);
}
bool in_quarantine_locked(Memory& m, const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = m.quarantine.upper_bound(a);
  if (it == m.quarantine.begin()) return false;
  --it;
  return a - it->first <= it->second;
}
void quarantine_locked(Memory& m, std::uintptr_t base, std::size_t bytes) {
  m.quarantine[base] = bytes;
  m.quarantine_order.push_back(base);
  m.quarantine_bytes += bytes;
  while (m.quarantine_bytes > kQuarantineBytes && !m.quarantine_order.empty()) {
    const std::uintptr_t oldest = m.quarantine_order.front();
    m.quarantine_order.pop_front();
    const std::size_t old_bytes = m.quarantine[oldest];
    m.quarantine_bytes -= old_bytes;
    m.quarantine.erase(oldest);
    release_block(reinterpret_cast<void*>(oldest), old_bytes);
  }
}
bool is_device_locked(Memory& m, const void* p) {
  const Allocation* a = find_locked(m, p);
  return a && a->device;
}

// ------------------------------------------------------------------------------------------------ fibers
constexpr std::size_t kStackBytes = 256 * 1024;

#ifdef KT_EMU_ASM_SWITCH
// kt_emu_switch_stack(save, load): pushes the callee-saved registers and the SSE/x87 control words, stores the
// stack pointer in *save, loads `load` and pops the same frame from there.
extern "C" void kt_emu_switch_stack(void** save, void* load);
asm(R"(
  .text
  .p2align 4
  .globl kt_emu_switch_stack
  .hidden kt_emu_switch_stack
  .type kt_emu_switch_stack, @function
kt_emu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kt_emu_switch_stack, .-kt_emu_switch_stack
)");
struct Context {
  void* sp = nullptr;
};
void context_start(Context& c, char* stack, void (*entry)()) {
  auto top = reinterpret_cast<std::uintptr_t>(stack + kStackBytes) & ~std::uintptr_t{15};
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;                         // return address of `entry`, which never returns
  *--sp = reinterpret_cast<void*>(entry);  // taken by the switch's `ret`: entry starts with rsp = 8 (mod 16)
  for (int i = 0; i < 6; ++i) *--sp = nullptr;  // rbp rbx r12 r13 r14 r15
  std::uint32_t control[2];
  asm volatile("stmxcsr %0" : "=m"(control[0]));
  asm volatile("fnstcw %0" : "=m"(control[1]));
  *--sp = nullptr;
  std::memcpy(sp, control, sizeof control);
  c.sp = sp;
}
void context_switch(Context& from, Context& to) { kt_emu_switch_stack(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
};
void context_start(Context& c, char* stack, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = kStackBytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

char* new_stack() {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) fatal("cannot map a %zu-byte fiber stack", kStackBytes);
  mprotect(p, page, PROT_NONE);  // guard page: an overflow faults instead of overwriting the next stack
  return static_cast<char*>(p) + page;
}

// ------------------------------------------------------------------------------------------------ scheduler
enum class State : unsigned char { NotStarted, Runnable, AtBarrier, AtWarpOp, Exited };

struct CudaThread {
  State state = State::NotStarted;
  unsigned fiber = 0;
  detail::WarpOp op = detail::WarpOp::Sync;
  unsigned mask = 0;
  int width = 32, arg = 0, size = 0;
  int predicate = 0, barrier_result = 0;
  unsigned char in[8] = {}, out[8] = {};
};

struct Machine {
  std::mutex launch_mu;  // one launch at a time, as on a GPU's default stream
  std::vector<char*> stacks;
  std::vector<Context> fibers;
  Context scheduler;
  std::vector<CudaThread> threads;
  const LaunchConfig* cfg = nullptr;
  void (*body)(void*) = nullptr;
  void* ctx = nullptr;
  unsigned n = 0;  // threads per block
  unsigned current = 0;
  bool in_kernel = false;
  bool reverse = false;  // blocks and threads in reverse order (set_reverse_order, KT_EMU_REVERSE_ORDER)
  bool parallel = false;
  bool sequential_done = false;
  std::vector<unsigned char> dynamic_shared;
};
Machine& machine() {
  static Machine* m = [] {
    auto* mm = new Machine;
    const char* env = std::getenv("KT_EMU_REVERSE_ORDER");
    mm->reverse = env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
    return mm;
  }();
  return *m;
}
/// The i-th thread of a block in execution order.
unsigned nth_thread(const Machine& m, unsigned i) { return m.reverse ? m.n - 1 - i : i; }

const char* op_name(detail::WarpOp op) {
  switch (op) {
    case detail::WarpOp::Idx: return "__shfl_sync";
    case detail::WarpOp::Up: return "__shfl_up_sync";
    case detail::WarpOp::Down: return "__shfl_down_sync";
    case detail::WarpOp::Xor: return "__shfl_xor_sync";
    case detail::WarpOp::Sync: return "__syncwarp";
  }
  return "?";
}
const char* state_name(const CudaThread& t) {
  switch (t.state) {
    case State::AtBarrier: return "waits at __syncthreads";
    case State::AtWarpOp: return op_name(t.op);
    case State::Exited: return "has returned from the kernel";
    default: return "is running";
  }
}

/// "kernel 'k' (launched at file:line), block (x,y,z)" for messages.
const char* where(const Machine& m) {
  static char buf[512];
  std::snprintf(buf, sizeof buf, "kernel '%s' (launched at %s:%d), block (%u,%u,%u) of (%u,%u,%u)", m.cfg->kernel,
                m.cfg->file, m.cfg->line, blockIdx.x, blockIdx.y, blockIdx.z, gridDim.x, gridDim.y, gridDim.z);
  return buf;
}

void enter(Machine& m, unsigned t) {
  m.current = t;
  threadIdx.x = t % blockDim.x;
  threadIdx.y = (t / blockDim.x) % blockDim.y;
  threadIdx.z = t / (blockDim.x * blockDim.y);
}

void ensure_stacks(Machine& m, std::size_t count) {
  while (m.stacks.size() < count) m.stacks.push_back(new_stack());
  if (m.fibers.size() < count) m.fibers.resize(count);
}

[[noreturn]] void exit_thread(Machine& m) {
  CudaThread& t = m.threads[m.current];
  t.state = State::Exited;
  context_switch(m.fibers[t.fiber], m.scheduler);
  fatal("internal error: a returned thread was resumed");
}

/// Fiber 0 of every block: the threads one after another until one of them synchronises.
void sequential_main() {
  Machine& m = machine();
  for (unsigned i = 0; i < m.n; ++i) {
    enter(m, nth_thread(m, i));
    m.body(m.ctx);
    if (m.parallel) exit_thread(m);  // this thread switched the block to fibers and has now returned
  }
  m.sequential_done = true;
  context_switch(m.fibers[0], m.scheduler);
  fatal("internal error: a finished block was resumed");
}

/// Fibers 1..n: one thread each, after the block switched to one fiber per thread.
void thread_main() {
  Machine& m = machine();
  m.body(m.ctx);
  exit_thread(m);
}

/// The current thread (running on fiber 0) is the first to synchronise: the threads before it (in execution
/// order) have returned, the ones after it have not started.
void go_parallel(Machine& m) {
  m.parallel = true;
  count([](Stats& s) { ++s.parallel_blocks; });
  ensure_stacks(m, m.n + 1);
  m.threads.assign(m.n, CudaThread{});
  for (unsigned u = 0; u < m.n; ++u) {
    const bool before = m.reverse ? u > m.current : u < m.current;
    m.threads[u].state = before ? State::Exited : State::NotStarted;
    m.threads[u].fiber = u + 1;
  }
  m.threads[m.current].state = State::Runnable;
  m.threads[m.current].fiber = 0;
}

void require_kernel(const Machine& m, const char* what) {
  if (!m.in_kernel) fatal("%s called outside a kernel", what);
}

void suspend(Machine& m) { context_switch(m.fibers[m.threads[m.current].fiber], m.scheduler); }

/// Source lane of a shuffle for `lane`; `lane` itself when the source lies outside its width segment.
unsigned source_lane(detail::WarpOp op, unsigned lane, int arg, int width) {
  const unsigned w = static_cast<unsigned>(width), seg = lane & ~(w - 1), in_seg = lane & (w - 1);
  switch (op) {
    case detail::WarpOp::Idx: return seg + (static_cast<unsigned>(arg) & (w - 1));
    case detail::WarpOp::Up: return arg >= 0 && in_seg >= static_cast<unsigned>(arg) ? lane - arg : lane;
    case detail::WarpOp::Down: return arg >= 0 && in_seg + static_cast<unsigned>(arg) < w ? lane + arg : lane;
    case detail::WarpOp::Xor: {
      const unsigned src = lane ^ (static_cast<unsigned>(arg) & 31u);
      return (src & ~(w - 1)) > seg ? lane : src;
    }
    case detail::WarpOp::Sync: break;
  }
  return lane;
}

bool same_warp_op(const CudaThread& a, const CudaThread& b) {
  return a.op == b.op && a.mask == b.mask && a.width == b.width && a.size == b.size;
}

/// Completes every warp operation that all lanes named in its mask have reached (lanes outside the mask may
/// be anywhere), else the barrier once every thread waits there. Returns false when every thread has
/// returned; aborts on divergence: a named lane that returned or waits at __syncthreads, lanes waiting for
/// each other at different warp operations, a barrier some threads will never reach.
bool resolve(Machine& m) {
  bool progressed = false;
  int stuck_lane = -1, other_lane = -1;  // a warp operation that cannot complete yet, for the message
  for (unsigned first = 0; first < m.n; first += 32) {
    const unsigned lanes = std::min(32u, m.n - first);
    for (unsigned l = 0; l < lanes; ++l) {
      const CudaThread& lead = m.threads[first + l];
      if (lead.state != State::AtWarpOp) continue;
      bool complete = true;
      for (unsigned j = 0; j < lanes && complete; ++j) {
        if (!(lead.mask >> j & 1u)) continue;
        const CudaThread& t = m.threads[first + j];
        if (t.state == State::Runnable) {  // released earlier in this pass: it may still arrive
          complete = false;
          continue;
        }
        if (t.state == State::AtWarpOp) {
          if (!same_warp_op(t, lead)) {
            complete = false;
            if (stuck_lane < 0) {
              stuck_lane = static_cast<int>(first + l);
              other_lane = static_cast<int>(first + j);
            }
          }
          continue;
        }
        fatal("divergent %s in %s: thread %u (lane %u of warp %u) waits there with mask 0x%08x, but thread %u (lane "
              "%u) %s",
              op_name(lead.op), where(m), first + l, l, first / 32, lead.mask, first + j, j, state_name(t));
      }
      if (!complete) continue;
      const CudaThread group = lead;  // copy: the lanes' states change below
      for (unsigned j = 0; j < lanes; ++j) {
        if (!(group.mask >> j & 1u)) continue;
        CudaThread& t = m.threads[first + j];
        if (group.op != detail::WarpOp::Sync) {
          const unsigned src = source_lane(group.op, j, group.arg, group.width);
          if (src != j && (src >= lanes || !(group.mask >> src & 1u)))
            fatal("%s in %s: thread %u (lane %u) reads lane %u, which %s (the value is undefined on a GPU)",
                  op_name(group.op), where(m), first + j, j, src,
                  src >= lanes ? "does not exist (block size)" : "is not in the mask");
          std::memcpy(t.out, m.threads[first + src].in, static_cast<std::size_t>(group.size));
        }
        t.state = State::Runnable;
      }
      progressed = true;
    }
  }
  if (progressed) return true;
  if (stuck_lane >= 0) {
    const CudaThread &a = m.threads[stuck_lane], &b = m.threads[other_lane];
    fatal("divergent warp operations in %s: thread %d calls %s (mask 0x%08x, width %d) while thread %d, named in "
          "its mask, calls %s (mask 0x%08x, width %d)",
          where(m), stuck_lane, op_name(a.op), a.mask, a.width, other_lane, op_name(b.op), b.mask, b.width);
  }
  unsigned waiting = 0, returned = 0, first_waiting = 0, first_returned = 0;
  for (unsigned u = 0; u < m.n; ++u) {
    const State s = m.threads[u].state;
    if (s == State::AtBarrier && waiting++ == 0) first_waiting = u;
    if (s == State::Exited && returned++ == 0) first_returned = u;
  }
  if (returned == m.n) return false;
  if (waiting == m.n) {
    int count_true = 0;
    for (const CudaThread& t : m.threads) count_true += t.predicate;
    for (CudaThread& t : m.threads) {
      t.barrier_result = count_true;
      t.state = State::Runnable;
    }
    return true;
  }
  fatal("divergent __syncthreads in %s: thread %u waits at the barrier but thread %u has returned from the kernel "
        "(%u of %u threads wait)",
        where(m), first_waiting, first_returned, waiting, m.n);
}

void schedule(Machine& m) {
  for (;;) {
    for (unsigned i = 0; i < m.n; ++i) {
      const unsigned u = nth_thread(m, i);
      CudaThread& t = m.threads[u];
      if (t.state == State::NotStarted) {
        context_start(m.fibers[t.fiber], m.stacks[t.fiber], thread_main);
        t.state = State::Runnable;
      }
      if (t.state != State::Runnable) continue;
      enter(m, u);
      context_switch(m.scheduler, m.fibers[t.fiber]);
    }
    if (!resolve(m)) return;
  }
}

void poison_shared(Machine& m) {
  char* const begin = __start_kt_emu_shared;
  char* const end = __stop_kt_emu_shared;
  if (begin != nullptr && end > begin) std::memset(begin, kPoison, static_cast<std::size_t>(end - begin));
  if (!m.dynamic_shared.empty()) std::memset(m.dynamic_shared.data(), kPoison, m.dynamic_shared.size());
}

void run_block(Machine& m) {
  poison_shared(m);
  m.parallel = false;
  m.sequential_done = false;
  context_start(m.fibers[0], m.stacks[0], sequential_main);
  context_switch(m.scheduler, m.fibers[0]);
  if (m.parallel)
    schedule(m);
  else if (!m.sequential_done)
    fatal("internal error: %s stopped without finishing", where(m));
}

bool valid_config(const LaunchConfig& c) {
  const dim3 g = c.grid, b = c.block;
  const unsigned long long threads = 1ull * b.x * b.y * b.z;
  return g.x >= 1 && g.y >= 1 && g.z >= 1 && g.x <= 2147483647u && g.y <= 65535 && g.z <= 65535 && b.x >= 1 &&
         b.y >= 1 && b.z >= 1 && b.x <= 1024 && b.y <= 1024 && b.z <= 64 && threads <= 1024 &&
         c.shared_bytes <= 48 * 1024;
}

}  // namespace

// ------------------------------------------------------------------------------------------------ kernel side
namespace detail {

void run_grid(const LaunchConfig& cfg, void (*body)(void*), void* ctx) {
  Machine& m = machine();
  if (m.in_kernel) fatal("kernel '%s' launched from inside %s (dynamic parallelism is not emulated)", cfg.kernel,
                         where(m));
  std::lock_guard<std::mutex> lock(m.launch_mu);
  if (!valid_config(cfg)) {
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  if (cfg.stream != nullptr) {
    Memory& mem = memory();
    std::lock_guard<std::mutex> l(mem.mu);
    if (!mem.streams.count(cfg.stream)) {
      fail(cudaErrorInvalidResourceHandle);
      return;
    }
  }
  count([](Stats& s) { ++s.launches; });
  gridDim = cfg.grid;
  blockDim = cfg.block;
  m.cfg = &cfg;
  m.body = body;
  m.ctx = ctx;
  m.n = cfg.block.x * cfg.block.y * cfg.block.z;
  m.dynamic_shared.assign(cfg.shared_bytes, kPoison);
  ensure_stacks(m, 1);
  m.in_kernel = true;
  const auto order = [&](unsigned i, unsigned extent) { return m.reverse ? extent - 1 - i : i; };
  for (unsigned z = 0; z < cfg.grid.z; ++z)
    for (unsigned y = 0; y < cfg.grid.y; ++y)
      for (unsigned x = 0; x < cfg.grid.x; ++x) {
        blockIdx = uint3{order(x, cfg.grid.x), order(y, cfg.grid.y), order(z, cfg.grid.z)};
        run_block(m);
      }
  m.in_kernel = false;
}

void check_kernel_pointer(const LaunchConfig& cfg, std::size_t index, const void* ptr) {
  if (ptr == nullptr) return;
  Memory& mem = memory();
  std::lock_guard<std::mutex> lock(mem.mu);
  if (!find_locked(mem, ptr))
    fatal("kernel '%s' (launched at %s:%d): argument %zu = %p is not in any live device allocation (%s)", cfg.kernel,
          cfg.file, cfg.line, index, ptr,
          in_quarantine_locked(mem, ptr) ? "it points into memory already released with cudaFree"
                                         : "a host pointer?");
}

int block_barrier(int predicate) {
  Machine& m = machine();
  require_kernel(m, "__syncthreads");
  if (!m.parallel) go_parallel(m);
  m.threads[m.current].state = State::AtBarrier;
  m.threads[m.current].predicate = predicate;
  suspend(m);
  return m.threads[m.current].barrier_result;
}

void warp_op(WarpOp op, unsigned mask, const void* in, void* out, int size, int arg, int width) {
  Machine& m = machine();
  require_kernel(m, op_name(op));
  const unsigned lane = m.current % 32;
  if (!(mask >> lane & 1u))
    fatal("%s in %s: thread %u (lane %u) passes mask 0x%08x, which does not name its own lane", op_name(op), where(m),
          m.current, lane, mask);
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    fatal("%s in %s: width %d must be a power of two in [1, 32]", op_name(op), where(m), width);
  if (!m.parallel) go_parallel(m);
  CudaThread& t = m.threads[m.current];
  t.state = State::AtWarpOp;
  t.op = op;
  t.mask = mask;
  t.size = size;
  t.arg = arg;
  t.width = width;
  if (size) std::memcpy(t.in, in, static_cast<std::size_t>(size));
  suspend(m);
  if (size) std::memcpy(out, m.threads[m.current].out, static_cast<std::size_t>(size));
}

void* dynamic_shared() {
  Machine& m = machine();
  require_kernel(m, "extern __shared__ memory");
  return m.dynamic_shared.data();
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------ test hooks
Stats stats() {
  Stats s;
  count([&](Stats& c) { s = c; });
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  s.bytes_in_use = m.device_bytes;
  return s;
}
bool reverse_order() {
  Machine& m = machine();
  std::lock_guard<std::mutex> lock(m.launch_mu);
  return m.reverse;
}
void set_reverse_order(bool reverse) {
  Machine& m = machine();
  std::lock_guard<std::mutex> lock(m.launch_mu);
  m.reverse = reverse;
}
void set_memory_limit(std::size_t bytes) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  m.limit = bytes;
}
bool is_device_range(const void* ptr, std::size_t bytes) {
  Memory& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  return range_ok_locked(m, ptr, bytes, true);
}
void note_blas_call() {
  count([](Stats& s) { ++s.blas_calls; });
}

}  // namespace kt_emu

// ------------------------------------------------------------------------------------------------ runtime API
using kt_emu::fail;
using kt_emu::memory;

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  if (bytes > m.limit || m.device_bytes > m.limit - bytes) return fail(cudaErrorMemoryAllocation);
  void* p = kt_emu::aligned_block(bytes);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  std::memset(p, kt_emu::kPoison, bytes);
  m.blocks[reinterpret_cast<std::uintptr_t>(p)] = {bytes, true};
  m.device_bytes += bytes;
  kt_emu::count([](kt_emu::Stats& s) { ++s.mallocs; });
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.blocks.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == m.blocks.end() || !it->second.device) return fail(cudaErrorInvalidValue);
  std::memset(ptr, kt_emu::kPoison, it->second.bytes);  // stale reads through a kept pointer show up as well
  KT_EMU_ASAN_POISON(ptr, it->second.bytes);            // and AddressSanitizer names them
  m.device_bytes -= it->second.bytes;
  kt_emu::quarantine_locked(m, it->first, it->second.bytes);
  m.blocks.erase(it);
  kt_emu::count([](kt_emu::Stats& s) {
    ++s.frees;
    ++s.host_syncs;
  });
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  void* p = kt_emu::aligned_block(bytes);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  m.blocks[reinterpret_cast<std::uintptr_t>(p)] = {bytes, false};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.blocks.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == m.blocks.end() || it->second.device) return fail(cudaErrorInvalidValue);
  const std::size_t bytes = it->second.bytes;
  m.blocks.erase(it);
  kt_emu::release_block(ptr, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return fail(cudaErrorInvalidValue);
  auto& m = memory();
  {
    std::lock_guard<std::mutex> lock(m.mu);
    const bool dst_dev = kt_emu::is_device_locked(m, dst), src_dev = kt_emu::is_device_locked(m, src);
    bool want_dst_dev = dst_dev, want_src_dev = src_dev;
    switch (kind) {
      case cudaMemcpyHostToHost: want_dst_dev = want_src_dev = false; break;
      case cudaMemcpyHostToDevice: want_dst_dev = true, want_src_dev = false; break;
      case cudaMemcpyDeviceToHost: want_dst_dev = false, want_src_dev = true; break;
      case cudaMemcpyDeviceToDevice: want_dst_dev = want_src_dev = true; break;
      case cudaMemcpyDefault: break;
      default: return fail(cudaErrorInvalidMemcpyDirection);
    }
    if (dst_dev != want_dst_dev || src_dev != want_src_dev) return fail(cudaErrorInvalidValue);
    if (dst_dev && !kt_emu::range_ok_locked(m, dst, bytes, true)) return fail(cudaErrorInvalidValue);
    if (src_dev && !kt_emu::range_ok_locked(m, src, bytes, true)) return fail(cudaErrorInvalidValue);
  }
  std::memmove(dst, src, bytes);
  kt_emu::count([](kt_emu::Stats& s) { ++s.host_syncs; });
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  auto& m = memory();
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (!kt_emu::range_ok_locked(m, ptr, bytes, true)) return fail(cudaErrorInvalidValue);
  }
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t) {
  return cudaMemset(ptr, value, bytes);
}

cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  const std::size_t total = std::min<std::size_t>(m.limit, std::size_t{80} << 30);
  if (total_bytes) *total_bytes = total;
  if (free_bytes) *free_bytes = total > m.device_bytes ? total - m.device_bytes : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  kt_emu::count([](kt_emu::Stats& s) { ++s.host_syncs; });
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  if (stream == nullptr) return fail(cudaErrorInvalidValue);
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  *stream = reinterpret_cast<cudaStream_t>(new char);
  m.streams.insert(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  if (!m.streams.erase(stream)) return fail(cudaErrorInvalidResourceHandle);
  delete reinterpret_cast<char*>(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  if (stream != nullptr && !m.streams.count(stream)) return fail(cudaErrorInvalidResourceHandle);
  kt_emu::count([](kt_emu::Stats& s) { ++s.host_syncs; });
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  *event = reinterpret_cast<cudaEvent_t>(new char);
  m.events[*event] = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  if (!m.events.erase(event)) return fail(cudaErrorInvalidResourceHandle);
  delete reinterpret_cast<char*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.events.find(event);
  if (it == m.events.end()) return fail(cudaErrorInvalidResourceHandle);
  it->second = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  return m.events.count(event) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  auto& m = memory();
  std::lock_guard<std::mutex> lock(m.mu);
  auto a = m.events.find(start), b = m.events.find(end);
  if (ms == nullptr || a == m.events.end() || b == m.events.end()) return fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(b->second - a->second).count();
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = kt_emu::last_error;
  kt_emu::last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return kt_emu::last_error; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define KT_EMU_NAME(name, value, text) \
  case name: return #name;
    KT_EMU_CUDA_ERRORS(KT_EMU_NAME)
#undef KT_EMU_NAME
  }
  return "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
#define KT_EMU_TEXT(name, value, text) \
  case name: return text;
    KT_EMU_CUDA_ERRORS(KT_EMU_TEXT)
#undef KT_EMU_TEXT
  }
  return "unrecognized error code";
}

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  if (device != 0) return fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "kubetune CUDA emulator (host)");
  std::size_t free_bytes = 0;
  cudaMemGetInfo(&free_bytes, &prop->totalGlobalMem);
  prop->sharedMemPerBlock = 48 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = INT_MAX;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->clockRate = 1000000;
  prop->multiProcessorCount = 1;
  prop->major = 9;
  prop->minor = 0;
  return cudaSuccess;
}
