// Snapshots of the KPA's state machines (metric windows, decider, scaler, whole autoscaler) and their JSON form,
// so that an operator can persist them across restarts and restore them exactly.
#include <algorithm>
#include <cmath>
#include <vector>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/sched/autoscale/kpa.hpp"
#include "state_json.hpp"

namespace kubetune::sched::autoscale {

using nlohmann::json;

namespace {

using state_json::Fields;
using state_json::kInt32Max;
using state_json::kInt64Max;
using state_json::kInt64Min;
using state_json::parse_object;

// ------------------------------------------------------------------------------------------ window <-> JSON
json window_json(const BucketWindow::State& s) {
  return json{{"written", s.written}, {"first_bucket", s.first}, {"last_bucket", s.last}, {"total", s.total},
              {"buckets", s.buckets}};
}

BucketWindow::State window_from(const std::string& what, const json& j) {
  const Fields f(what, j, {"written", "first_bucket", "last_bucket", "total", "buckets"});
  BucketWindow::State s;
  s.written = f.boolean("written");
  s.first = f.integer("first_bucket", kInt64Min, kInt64Max);
  s.last = f.integer("last_bucket", kInt64Min, kInt64Max);
  s.total = f.finite("total");
  const json& b = f.at("buckets");
  KT_CHECK(b.is_array(), InvalidArgument, f.name("buckets"), " = ", json_summary(b), " must be an array");
  for (std::size_t k = 0; k < b.size(); ++k)
    s.buckets.push_back(Fields::finite_number(f.name("buckets") + "[" + std::to_string(k) + "]", b[k]));
  KT_CHECK(s.first <= s.last, InvalidArgument, what, ": first_bucket = ", s.first, " must be <= last_bucket = ",
           s.last);
  return s;
}

// ---------------------------------------------------------------------------------- decider / scaler <-> JSON
json decider_json(const KpaDecider::State& s) {
  json delay = json::array();
  for (const auto& [t, pods] : s.delay_window) delay.push_back(json{{"time_s", t}, {"pods", pods}});
  return json{{"panicking", s.panicking},
              {"panic_time_s", s.panic_time_s},
              {"max_panic_pods", s.max_panic_pods},
              {"delay_window", delay}};
}

KpaDecider::State decider_from(const std::string& what, const json& j) {
  const Fields f(what, j, {"panicking", "panic_time_s", "max_panic_pods", "delay_window"});
  KpaDecider::State s;
  s.panicking = f.boolean("panicking");
  s.panic_time_s = f.finite("panic_time_s");
  s.max_panic_pods = static_cast<std::int32_t>(f.integer("max_panic_pods", 0, kInt32Max));
  const json& d = f.at("delay_window");
  KT_CHECK(d.is_array(), InvalidArgument, f.name("delay_window"), " = ", json_summary(d), " must be an array");
  for (std::size_t k = 0; k < d.size(); ++k) {
    const Fields e(f.name("delay_window") + "[" + std::to_string(k) + "]", d[k], {"time_s", "pods"});
    s.delay_window.emplace_back(e.finite("time_s"), static_cast<std::int32_t>(e.integer("pods", 0, kInt32Max)));
  }
  s.validate();
  return s;
}

const char* pa_state_name(PaState s) {
  switch (s) {
    case PaState::kActive: return "active";
    case PaState::kInactive: return "inactive";
    case PaState::kActivating: break;
  }
  return "activating";
}

PaState pa_state_from(const std::string& name, const std::string& v) {
  if (v == "activating") return PaState::kActivating;
  if (v == "active") return PaState::kActive;
  if (v == "inactive") return PaState::kInactive;
  KT_THROW(InvalidArgument, name, " = '", v, "' must be 'activating', 'active' or 'inactive'");
}

// The reasons kpa.go computeActiveCondition writes (plus "" of a PA never reconciled), as the string literals
// ScalerStep::reason points to.
const char* known_reason(PaState state, const std::string& reason) {
  static constexpr const char* kActivating[] = {"", "Queued"};
  static constexpr const char* kActive[] = {""};
  static constexpr const char* kInactive[] = {"NoTraffic", "TimedOut"};
  const auto find = [&](auto& list) -> const char* {
    for (const char* r : list)
      if (reason == r) return r;
    return nullptr;
  };
  const char* r = state == PaState::kActive ? find(kActive) : state == PaState::kInactive ? find(kInactive)
                                                                                           : find(kActivating);
  KT_CHECK(r, InvalidArgument, "KpaScaler state: reason = '", reason, "' is not a reason of pa_state = '",
           pa_state_name(state), "' (activating: '' or 'Queued'; active: ''; inactive: 'NoTraffic' or 'TimedOut')");
  return r;
}

json scaler_json(const KpaScaler::State& s) {
  return json{{"pa_state", pa_state_name(s.pa_state)},
              {"reason", s.reason},
              {"since_s", s.since_s},
              {"scale_target_initialized", s.scale_target_initialized},
              {"proxy_mode", s.proxy_mode},
              {"proxy_since_s", s.proxy_since_s},
              {"replicas", s.replicas}};
}

KpaScaler::State scaler_from(const std::string& what, const json& j) {
  const Fields f(what, j,
                 {"pa_state", "reason", "since_s", "scale_target_initialized", "proxy_mode", "proxy_since_s",
                  "replicas"});
  KpaScaler::State s;
  s.pa_state = pa_state_from(f.name("pa_state"), f.text("pa_state"));
  s.reason = f.text("reason");
  s.since_s = f.finite("since_s");
  s.scale_target_initialized = f.boolean("scale_target_initialized");
  s.proxy_mode = f.boolean("proxy_mode");
  s.proxy_since_s = f.finite("proxy_since_s");
  s.replicas = static_cast<std::int32_t>(f.integer("replicas", 0, kInt32Max));
  s.validate();
  return s;
}

json collector_json(const KpaMetricCollector::State& s) {
  return json{{"concurrency_stable", window_json(s.concurrency_stable)},
              {"concurrency_panic", window_json(s.concurrency_panic)},
              {"rps_stable", window_json(s.rps_stable)},
              {"rps_panic", window_json(s.rps_panic)}};
}

KpaMetricCollector::State collector_from(const std::string& what, const json& j) {
  const Fields f(what, j, {"concurrency_stable", "concurrency_panic", "rps_stable", "rps_panic"});
  return KpaMetricCollector::State{window_from(f.name("concurrency_stable"), f.at("concurrency_stable")),
                                   window_from(f.name("concurrency_panic"), f.at("concurrency_panic")),
                                   window_from(f.name("rps_stable"), f.at("rps_stable")),
                                   window_from(f.name("rps_panic"), f.at("rps_panic"))};
}

}  // namespace

// ---------------------------------------------------------------------------------------------- KpaDecider
void KpaDecider::State::validate() const {
  KT_CHECK(std::isfinite(panic_time_s), InvalidArgument, "KpaDecider state: panic_time_s = ", panic_time_s,
           " must be finite");
  KT_CHECK(max_panic_pods >= 0, InvalidArgument, "KpaDecider state: max_panic_pods = ", max_panic_pods,
           " must be >= 0");
  for (std::size_t k = 0; k < delay_window.size(); ++k) {
    const auto [t, pods] = delay_window[k];
    KT_CHECK(std::isfinite(t) && std::floor(t / kTickIntervalSeconds) * kTickIntervalSeconds == t, InvalidArgument,
             "KpaDecider state: delay_window[", k, "].time_s = ", t, " must be a multiple of the ",
             kTickIntervalSeconds, " s tick");
    KT_CHECK(pods >= 0, InvalidArgument, "KpaDecider state: delay_window[", k, "].pods = ", pods, " must be >= 0");
  }
}

std::string KpaDecider::State::to_json() const { return decider_json(*this).dump(); }
KpaDecider::State KpaDecider::State::from_json(const std::string& text) {
  return decider_from("KpaDecider state", parse_object("KpaDecider state", text));
}

KpaDecider::State KpaDecider::snapshot() const {
  State s{panicking_, panic_time_, max_panic_pods_, {}};
  if (delay_)
    for (const MaxTimeWindow::Entry& e : delay_->entries())
      s.delay_window.emplace_back(static_cast<double>(e.index) * kTickIntervalSeconds,
                                  static_cast<std::int32_t>(e.value));
  return s;
}

void KpaDecider::restore(const State& s) {
  s.validate();
  KT_CHECK(delay_ || s.delay_window.empty(), InvalidArgument, "KpaDecider state: delay_window has ",
           s.delay_window.size(), " entries but the spec's scale_down_delay_s = 0 keeps none");
  if (delay_) {
    std::vector<MaxTimeWindow::Entry> entries;
    for (const auto& [t, pods] : s.delay_window)
      entries.push_back({static_cast<double>(pods), static_cast<std::int64_t>(std::floor(t / kTickIntervalSeconds))});
    MaxTimeWindow w = *delay_;
    w.restore(entries, "KpaDecider state: delay_window");
    *delay_ = w;
  }
  panicking_ = s.panicking;
  panic_time_ = s.panic_time_s;
  max_panic_pods_ = s.max_panic_pods;
}

std::string kpa_fleet_snapshot_json(const KpaDecider* deciders, std::size_t n) {
  KT_CHECK(deciders || n == 0, InvalidArgument, "kpa_fleet_snapshot_json: null deciders with n = ", n);
  json a = json::array();
  for (std::size_t i = 0; i < n; ++i) a.push_back(decider_json(deciders[i].snapshot()));
  return a.dump();
}

void kpa_fleet_restore_json(KpaDecider* deciders, std::size_t n, const std::string& text) {
  KT_CHECK(deciders || n == 0, InvalidArgument, "kpa_fleet_restore_json: null deciders with n = ", n);
  const json a = parse_user_json(text, "KpaFleet state JSON");
  KT_CHECK(a.is_array() && a.size() == n, InvalidArgument, "KpaFleet state must be an array of ", n,
           " decider states, got ", a.is_array() ? std::to_string(a.size()) + " entries" : a.type_name());
  std::vector<KpaDecider> restored(deciders, deciders + n);  // all or none
  for (std::size_t i = 0; i < n; ++i) {
    try {
      restored[i].restore(decider_from("KpaDecider state", a[i]));
    } catch (const InvalidArgument& e) {
      KT_THROW(InvalidArgument, "KpaFleet state[", i, "]: ", e.what());
    }
  }
  std::move(restored.begin(), restored.end(), deciders);
}

// ------------------------------------------------------------------------------------ KpaMetricCollector
std::string KpaMetricCollector::State::to_json() const { return collector_json(*this).dump(); }
KpaMetricCollector::State KpaMetricCollector::State::from_json(const std::string& text) {
  return collector_from("KpaMetricCollector state", parse_object("KpaMetricCollector state", text));
}

KpaMetricCollector::State KpaMetricCollector::snapshot() const {
  return State{conc_stable_.snapshot(), conc_panic_.snapshot(), rps_stable_.snapshot(), rps_panic_.snapshot()};
}

void KpaMetricCollector::restore(const State& s) {
  KpaMetricCollector c = *this;  // all four windows or none
  c.conc_stable_.restore(s.concurrency_stable, "KpaMetricCollector state: concurrency_stable");
  c.conc_panic_.restore(s.concurrency_panic, "KpaMetricCollector state: concurrency_panic");
  c.rps_stable_.restore(s.rps_stable, "KpaMetricCollector state: rps_stable");
  c.rps_panic_.restore(s.rps_panic, "KpaMetricCollector state: rps_panic");
  *this = std::move(c);
}

// ------------------------------------------------------------------------------------------------ KpaScaler
void KpaScaler::State::validate() const {
  KT_CHECK(std::isfinite(since_s), InvalidArgument, "KpaScaler state: since_s = ", since_s, " must be finite");
  KT_CHECK(std::isfinite(proxy_since_s), InvalidArgument, "KpaScaler state: proxy_since_s = ", proxy_since_s,
           " must be finite");
  KT_CHECK(replicas >= 0, InvalidArgument, "KpaScaler state: replicas = ", replicas, " must be >= 0");
  known_reason(pa_state, reason);
}

std::string KpaScaler::State::to_json() const { return scaler_json(*this).dump(); }
KpaScaler::State KpaScaler::State::from_json(const std::string& text) {
  return scaler_from("KpaScaler state", parse_object("KpaScaler state", text));
}

KpaScaler::State KpaScaler::snapshot() const {
  return State{state_, reason_, state_since_, initialized_, proxy_, proxy_since_, replicas_};
}

void KpaScaler::restore(const State& s) {
  s.validate();
  KT_CHECK(s.proxy_mode || tbc_ != -1, InvalidArgument,
           "KpaScaler state: proxy_mode = false, but target burst capacity -1 keeps the activator in the path");
  state_ = s.pa_state;
  reason_ = known_reason(s.pa_state, s.reason);
  state_since_ = s.since_s;
  initialized_ = s.scale_target_initialized;
  proxy_ = s.proxy_mode;
  proxy_since_ = s.proxy_since_s;
  replicas_ = s.replicas;
}

// ------------------------------------------------------------------------------------------- KpaAutoscaler
std::string KpaAutoscaler::State::to_json() const {
  return json{{"collector", collector_json(collector)}, {"decider", decider_json(decider)},
              {"scaler", scaler_json(scaler)}}
      .dump();
}

KpaAutoscaler::State KpaAutoscaler::State::from_json(const std::string& text) {
  const json j = parse_object("KpaAutoscaler state", text);
  const Fields f("KpaAutoscaler state", j, {"collector", "decider", "scaler"});
  return State{collector_from(f.name("collector"), f.at("collector")), decider_from(f.name("decider"), f.at("decider")),
               scaler_from(f.name("scaler"), f.at("scaler"))};
}

KpaAutoscaler::State KpaAutoscaler::snapshot() const {
  return State{collector_.snapshot(), decider_.snapshot(), scaler_.snapshot()};
}

void KpaAutoscaler::restore(const State& s) {
  KpaMetricCollector c = collector_;  // all three parts or none
  KpaDecider d = decider_;
  KpaScaler sc = scaler_;
  c.restore(s.collector);
  d.restore(s.decider);
  sc.restore(s.scaler);
  collector_ = std::move(c);
  decider_ = std::move(d);
  scaler_ = std::move(sc);
}

}  // namespace kubetune::sched::autoscale
