// Snapshot of the HPA controller's per-HPA state (recommendations, scale events) and its JSON form, and the JSON
// form of an HpaFleet's state (one such object per HPA).
#include <cmath>
#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/sched/autoscale/hpa.hpp"
#include "state_json.hpp"

namespace kubetune::sched::autoscale {

using nlohmann::json;

namespace {

using state_json::Fields;
using state_json::kInt32Max;
using state_json::parse_object;

constexpr const char* kWhat = "HpaController state";

json events_json(const std::vector<HpaController::ScaleEvent>& events) {
  json a = json::array();
  for (const auto& e : events) a.push_back(json{{"change", e.change}, {"time_s", e.time}, {"outdated", e.outdated}});
  return a;
}

// An array of `key` whose entries are read by `one(fields of entry k)`.
template <class F>
void read_array(const Fields& f, const char* key, F&& one) {
  const json& a = f.at(key);
  KT_CHECK(a.is_array(), InvalidArgument, f.name(key), " = ", json_summary(a), " must be an array");
  for (std::size_t k = 0; k < a.size(); ++k) one(f.name(key) + "[" + std::to_string(k) + "]", a[k]);
}

std::vector<HpaController::ScaleEvent> events_from(const Fields& f, const char* key) {
  std::vector<HpaController::ScaleEvent> out;
  read_array(f, key, [&](const std::string& name, const json& j) {
    const Fields e(name, j, {"change", "time_s", "outdated"});
    out.push_back({static_cast<std::int32_t>(e.integer("change", 0, kInt32Max)), e.finite("time_s"),
                   e.boolean("outdated")});
  });
  return out;
}

void check_events(const char* key, const std::vector<HpaController::ScaleEvent>& events) {
  for (std::size_t k = 0; k < events.size(); ++k) {
    KT_CHECK(events[k].change >= 0, InvalidArgument, kWhat, ": ", key, "[", k, "].change = ", events[k].change,
             " must be >= 0");
    KT_CHECK(std::isfinite(events[k].time), InvalidArgument, kWhat, ": ", key, "[", k, "].time_s = ", events[k].time,
             " must be finite");
  }
}

json hpa_state_json(const HpaController::State& s) {
  json recs = json::array();
  for (const auto& r : s.recommendations) recs.push_back(json{{"replicas", r.replicas}, {"time_s", r.time}});
  return json{{"history_started", s.history_started},
              {"recommendations", recs},
              {"scale_up_events", events_json(s.scale_up_events)},
              {"scale_down_events", events_json(s.scale_down_events)}};
}

// One state object; errors start with kWhat ("HpaController state.recommendations[0].replicas = ...").
HpaController::State hpa_state_from(const json& j) {
  const Fields f(kWhat, j, {"history_started", "recommendations", "scale_up_events", "scale_down_events"});
  HpaController::State s;
  s.history_started = f.boolean("history_started");
  read_array(f, "recommendations", [&](const std::string& name, const json& e) {
    const Fields r(name, e, {"replicas", "time_s"});
    s.recommendations.push_back({static_cast<std::int32_t>(r.integer("replicas", 0, kInt32Max)), r.finite("time_s")});
  });
  s.scale_up_events = events_from(f, "scale_up_events");
  s.scale_down_events = events_from(f, "scale_down_events");
  s.validate();
  return s;
}

}  // namespace

void HpaController::State::validate() const {
  KT_CHECK(history_started || recommendations.empty(), InvalidArgument, kWhat, ": history_started = false with ",
           recommendations.size(), " recommendations (an injected history has started)");
  for (std::size_t k = 0; k < recommendations.size(); ++k) {
    const Recommendation& r = recommendations[k];
    KT_CHECK(r.replicas >= 0, InvalidArgument, kWhat, ": recommendations[", k, "].replicas = ", r.replicas,
             " must be >= 0");
    KT_CHECK(std::isfinite(r.time), InvalidArgument, kWhat, ": recommendations[", k, "].time_s = ", r.time,
             " must be finite");
  }
  check_events("scale_up_events", scale_up_events);
  check_events("scale_down_events", scale_down_events);
}

std::string HpaController::State::to_json() const { return hpa_state_json(*this).dump(); }

HpaController::State HpaController::State::from_json(const std::string& text) {
  return hpa_state_from(parse_object(kWhat, text));
}

HpaController::State HpaController::snapshot() const {
  return State{history_started_, recs_, up_events_, down_events_};
}

void HpaController::restore(const State& s) {
  s.validate();
  history_started_ = s.history_started;
  recs_ = s.recommendations;
  up_events_ = s.scale_up_events;
  down_events_ = s.scale_down_events;
}

// ------------------------------------------------------------------------------------------------ HpaFleet
std::string HpaFleet::snapshot_json() const {
  json a = json::array();
  for (const HpaController& h : hpas_) a.push_back(hpa_state_json(h.snapshot()));
  return a.dump();
}

void HpaFleet::restore_json(const std::string& text) {
  const json a = parse_user_json(text, "HpaFleet state JSON");
  KT_CHECK(a.is_array() && a.size() == hpas_.size(), InvalidArgument, "HpaFleet state must be an array of ",
           hpas_.size(), " controller states, got ",
           a.is_array() ? std::to_string(a.size()) + " entries" : json_summary(a));
  std::vector<HpaController::State> states;
  states.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    try {
      states.push_back(hpa_state_from(a[i]));
    } catch (const InvalidArgument& e) {
      KT_THROW(InvalidArgument, "HpaFleet state[", i, "]: ", e.what());
    }
  }
  restore(states);  // all or none
}

}  // namespace kubetune::sched::autoscale
