// Internal: stateless bracket scheduler (rebuilt from trial attributes on every ask) and resource helpers.
#include "schedule.hpp"

#include <algorithm>
#include <cmath>

#include "kubetune/core/error.hpp"
#include "settings.hpp"

namespace kubetune::search::mf_detail {

void check_resource_param(const SearchSpace& space, const std::string& name, const std::string& who) {
  KT_CHECK(space.contains(name), InvalidArgument, who, ": resource parameter '", name,
           "' (setting 'resource_name') is not in the search space");
  const Param& p = space.param(space.index_of(name));
  KT_CHECK(p.type == ParamType::Int || p.type == ParamType::Double, InvalidArgument, who, ": resource parameter '",
           name, "' must be Int or Double, got ", to_string(p.type));
  KT_CHECK(!p.condition.has_value(), InvalidArgument, who, ": resource parameter '", name,
           "' must not be conditional");
}

double resource_value(const SearchSpace& space, std::size_t idx, double r, const std::string& who) {
  const Param& p = space.param(idx);
  double v = p.type == ParamType::Int ? std::round(r) : r;
  const double tol = 1e-9 * std::max(1.0, std::fabs(p.high));
  KT_CHECK(v >= p.low - tol && v <= p.high + tol, InvalidArgument, who, ": budget ", r, " of resource parameter '",
           p.name, "' lies outside its range [", p.low, ", ", p.high, "]; widen the range or change max_resource/eta");
  return space.snap(idx, std::clamp(v, p.low, p.high));
}

Scheduler::Scheduler(const std::vector<Bracket>& table, std::int64_t n_iterations, const std::vector<Trial>& trials,
                     const SearchContext& ctx)
    : table_(table), total_(n_iterations == 0 ? 0 : n_iterations * static_cast<std::int64_t>(table.size())), ctx_(ctx) {
  for (const Trial& t : trials) {
    auto kb = attr(t, "hb_bracket");
    auto kr = attr(t, "hb_rung");
    auto kc = attr(t, "hb_config");
    if (!kb || !kr || !kc) continue;
    const auto k = static_cast<std::int64_t>(*kb);
    const auto i = static_cast<std::size_t>(*kr);
    const Bracket& b = table_[static_cast<std::size_t>(k) % table_.size()];
    KT_CHECK(*kb >= 0 && *kr >= 0 && i < b.rungs.size(), StateError, "trial ", t.id, " has hb_bracket=", *kb,
             ", hb_rung=", *kr, " which does not fit this Hyperband configuration (changed settings?)");
    BState& st = states_[k];
    if (st.rungs.empty()) st.rungs.resize(b.rungs.size());
    st.rungs[i].push_back({static_cast<std::int64_t>(*kc), &t});
    next_cfg_ = std::max(next_cfg_, static_cast<std::int64_t>(*kc) + 1);
    if (!t.is_finished()) ++running_;
  }
}

bool Scheduler::walk(std::int64_t k, std::size_t limit, std::vector<Plan>* out, std::int64_t* ready) {
  const Bracket& b = table_[static_cast<std::size_t>(k) % table_.size()];
  BState& st = states_[k];
  if (st.rungs.empty()) st.rungs.resize(b.rungs.size());
  auto room = [&]() { return out == nullptr || out->size() < limit; };
  auto emit = [&](int rung, std::int64_t cfg, const std::vector<double>* base) {
    if (out) out->push_back({k, b.s, rung, cfg, base, b.rungs[static_cast<std::size_t>(rung)].resource});
    if (ready) ++*ready;
    st.rungs[static_cast<std::size_t>(rung)].push_back({cfg, nullptr});
  };
  std::int64_t expected = b.rungs[0].n;
  while (static_cast<std::int64_t>(st.rungs[0].size()) < expected && room()) emit(0, out ? next_cfg_++ : -1, nullptr);
  for (std::size_t i = 0; i < b.rungs.size(); ++i) {
    auto& R = st.rungs[i];
    if (static_cast<std::int64_t>(R.size()) < expected) return false;
    for (const auto& m : R)
      if (m.trial == nullptr || !m.trial->is_finished()) return false;
    if (i + 1 == b.rungs.size()) return true;
    // Rung i is complete: rank its successful trials by objective 0 (ties: older configuration first).
    std::vector<std::pair<double, const Member*>> ok;
    for (const auto& m : R) {
      if (m.trial->state != TrialState::Complete) continue;
      double l = ctx_.loss(*m.trial);
      if (std::isnan(l)) continue;
      ok.push_back({l, &m});
    }
    std::sort(ok.begin(), ok.end(), [](const auto& a, const auto& c) {
      if (a.first != c.first) return a.first < c.first;
      return a.second->cfg < c.second->cfg;
    });
    expected = std::min<std::int64_t>(b.rungs[i + 1].n, static_cast<std::int64_t>(ok.size()));
    auto& up = st.rungs[i + 1];
    for (std::int64_t j = 0; j < expected && room(); ++j) {
      const Member* m = ok[static_cast<std::size_t>(j)].second;
      bool there = std::any_of(up.begin(), up.end(), [&](const Member& u) { return u.cfg == m->cfg; });
      if (!there) emit(static_cast<int>(i + 1), m->cfg, &m->trial->x);
    }
    if (expected == 0) return true;
  }
  return false;
}

std::vector<Plan> Scheduler::plan(std::size_t n) {
  std::vector<Plan> out;
  for (std::int64_t k = 0; out.size() < n; ++k) {
    if (total_ != 0 && k >= total_) break;
    walk(k, n, &out, nullptr);
  }
  return out;
}

Scheduler::Status Scheduler::status() {
  Status s;
  s.running = running_;
  std::vector<std::int64_t> keys;
  for (const auto& [k, v] : states_) keys.push_back(k);
  for (std::int64_t k : keys) {
    ++s.started;
    if (walk(k, 0, nullptr, &s.ready)) ++s.finished;
  }
  return s;
}

SeenConfigs::SeenConfigs(const SearchSpace& space, const std::vector<Trial>& trials) {
  if (!is_discrete(space)) return;
  tries_ = 101;
  set_.reserve(trials.size(), space.size());
  for (const auto& t : trials) set_.insert(t.x);
}

}  // namespace kubetune::search::mf_detail
