// libFuzzer target: arbitrary text as every JSON argument of the C API (include/kubetune/c_api/*.h). The first byte
// picks the entry point, the rest is the NUL-terminated JSON text; handles the call needs besides the text are
// created fresh per input from fixed valid JSON. Bad input must come back as an error code other than
// KT_ERR_INTERNAL with a message; a crash, hang, sanitizer report, KT_ERR_INTERNAL, an error without a message, a
// leak (every handle and string is freed) or a broken allocator invariant is a finding. Run through scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "kubetune/c_api.h"

namespace {
constexpr const char* kSpace = R"({"space":{"parameters":[{"name":"x","type":"double","low":-5,"high":10},
 {"name":"n","type":"int","low":1,"high":8},{"name":"c","type":"categorical","choices":["a","b"]}]},"seed":3})";
constexpr const char* kCluster = R"({"nodes":[{"name":"a","cpu_milli":64000,"memory_mib":262144,"gpus":2,
 "gpu_memory_mib":16384,"model":"T4"},{"name":"b","cpu_milli":64000,"gpus":1,"gpu_memory_mib":16384,"model":"T4"}]})";
constexpr const char* kGpushare = R"({"policy":"gpushare"})";
/// Entry points the first byte chooses from (the cases below).
constexpr int kEntries = 20;
constexpr const char* kHpaSpec = R"({"minReplicas":1,"maxReplicas":10})";

/// Runs call(&err): KT_OK, or an error that is not KT_ERR_INTERNAL and comes with a message. Returns the code.
template <class F>
int checked(F&& call) {
  char* err = nullptr;
  const int rc = call(&err);
  if (rc != KT_OK && (rc == KT_ERR_INTERNAL || err == nullptr || *err == '\0')) std::abort();
  if (rc == KT_OK && err != nullptr) std::abort();  // err_out is written on failure only
  kt_free_string(err);
  return rc;
}

/// Frees a returned string after reading it through once (an unterminated or dangling one trips ASan).
void consume(char* s) {
  if (s != nullptr) (void)std::strlen(s);
  kt_free_string(s);
}

/// A call on valid input that must succeed.
void must(int rc) {
  if (rc != KT_OK) std::abort();
}

kt_study* fixed_study() {
  kt_study* st = nullptr;
  must(kt_study_create(kSpace, &st, nullptr));
  return st;
}

kt_gpu_allocator* fixed_allocator() {
  kt_gpu_allocator* a = nullptr;
  must(kt_gpu_allocator_create(kCluster, kGpushare, &a, nullptr));
  return a;
}

/// A study accepted from C is usable: an ask, its tell, best and serialisation all succeed.
void exercise(kt_study* st) {
  char* out = nullptr;
  must(kt_study_ask(st, 1, &out, nullptr));
  consume(out);
  must(kt_study_best(st, &out, nullptr));
  consume(out);
  must(kt_study_to_json(st, &out, nullptr));
  consume(out);
}

void study_create(const char* text) {
  kt_study* st = nullptr;
  if (checked([&](char** e) { return kt_study_create(text, &st, e); }) == KT_OK) exercise(st);
  kt_study_free(st);
}

void study_enqueue(const char* text) {
  kt_study* st = fixed_study();
  std::int64_t id = -1;
  if (checked([&](char** e) { return kt_study_enqueue(st, text, &id, e); }) == KT_OK) {
    char* out = nullptr;
    must(kt_study_ask(st, 1, &out, nullptr));  // the queued assignment comes back
    consume(out);
    must(kt_study_tell(st, id, 1.0, nullptr));
  }
  kt_study_free(st);
}

void allocator_create(const char* cluster, const char* options) {
  kt_gpu_allocator* a = nullptr;
  if (checked([&](char** e) { return kt_gpu_allocator_create(cluster, options, &a, e); }) == KT_OK) {
    char* out = nullptr;
    must(kt_gpu_stats(a, &out, nullptr));
    consume(out);
    must(kt_gpu_check_invariants(a, nullptr));
  }
  kt_gpu_allocator_free(a);
}

/// One call (a placement, a gang, an extender verb) on the fixed cluster; the allocator stays consistent.
template <class F>
void on_allocator(F&& call) {
  kt_gpu_allocator* a = fixed_allocator();
  char* out = nullptr;
  checked([&](char** e) { return call(a, &out, e); });
  consume(out);
  must(kt_gpu_check_invariants(a, nullptr));
  kt_gpu_allocator_free(a);
}

void extender(const char* verb, const char* body) {
  on_allocator([&](kt_gpu_allocator* a, char** o, char** e) { return kt_gpu_extender(a, verb, body, o, e); });
}

void kpa_fleet_create(const char* config, const char* revision) {
  kt_kpa_fleet* f = nullptr;
  const std::int32_t ready[2] = {0, 3};
  checked([&](char** e) { return kt_kpa_fleet_create(config, revision, 2, ready, 0.0, &f, e); });
  kt_kpa_fleet_free(f);
}

void kpa_fleet_restore(const char* state) {
  kt_kpa_fleet* f = nullptr;
  const std::int32_t ready[2] = {0, 3};
  must(kt_kpa_fleet_create(nullptr, "{}", 2, ready, 0.0, &f, nullptr));
  checked([&](char** e) { return kt_kpa_fleet_restore(f, state, e); });
  kt_kpa_fleet_free(f);
}

void kpa_scaler_create(const char* config, const char* revision) {
  kt_kpa_scaler* sc = nullptr;
  checked([&](char** e) { return kt_kpa_scaler_create(config, revision, 0.0, 1, &sc, e); });
  kt_kpa_scaler_free(sc);
}

void kpa_scaler_restore(const char* state) {
  kt_kpa_scaler* sc = nullptr;
  must(kt_kpa_scaler_create(nullptr, nullptr, 0.0, 1, &sc, nullptr));
  checked([&](char** e) { return kt_kpa_scaler_restore(sc, state, e); });
  kt_kpa_scaler_free(sc);
}

void hpa(const char* spec, const char* controller) {
  kt_hpa* h = nullptr;
  if (checked([&](char** e) { return kt_hpa_create(spec, controller, &h, e); }) == KT_OK) {
    const std::int32_t proposals[2] = {4, 2};
    char* out = nullptr;
    checked([&](char** e) { return kt_hpa_reconcile_json(h, 30.0, 3, 2, proposals, nullptr, &out, e); });
    consume(out);
  }
  kt_hpa_free(h);
  kt_hpa_fleet* f = nullptr;
  checked([&](char** e) { return kt_hpa_fleet_create(spec, controller, 2, &f, e); });
  kt_hpa_fleet_free(f);
}

/// A returned string from one text-in, text-out call.
template <class F>
void text_call(F&& call) {
  char* out = nullptr;
  checked([&](char** e) { return call(&out, e); });
  consume(out);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);  // c_str() stops at an embedded NUL
  const char* t = text.c_str();
  const double rates[8] = {0, 5, 50, 200, 200, 10, 0, 0};
  switch (data[0] % kEntries) {
    case 0: study_create(t); break;
    case 1: study_enqueue(t); break;
    case 2: allocator_create(t, kGpushare); break;
    case 3: allocator_create(kCluster, t); break;
    case 4: on_allocator([&](kt_gpu_allocator* a, char** o, char** e) { return kt_gpu_place(a, t, -1, o, e); }); break;
    case 5: on_allocator([&](kt_gpu_allocator* a, char** o, char** e) { return kt_gpu_place(a, t, 1, o, e); }); break;
    case 6:
      on_allocator([&](kt_gpu_allocator* a, char** o, char** e) { return kt_gpu_place_gang(a, t, "spread", o, e); });
      break;
    case 7: text_call([&](char** o, char** e) { return kt_gpu_device_plugin_allocate(t, o, e); }); break;
    case 8:
      for (const char* verb : {"filter", "bind"}) extender(verb, t);
      break;
    case 9:
      for (const char* verb : {"prioritize", "preempt", "release"}) extender(verb, t);
      break;
    case 10: text_call([&](char** o, char** e) { return kt_kpa_config_normalize(t, o, e); }); break;
    case 11: kpa_fleet_create(t, "{}"); break;
    case 12: kpa_fleet_create(nullptr, t); break;
    case 13: kpa_fleet_restore(t); break;
    case 14: kpa_scaler_create(t, nullptr); break;
    case 15: kpa_scaler_create(nullptr, t); break;
    case 16: kpa_scaler_restore(t); break;
    case 17: hpa(t, nullptr); break;
    case 18: hpa(kHpaSpec, t); break;
    case 19: text_call([&](char** o, char** e) { return kt_autoscale_simulate(t, rates, 8, 1.0, o, e); }); break;
  }
  return 0;
}
