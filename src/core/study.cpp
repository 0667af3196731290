// Study: ask/tell bookkeeping, determinism, JSON persistence with atomic writes.
#include "kubetune/core/study.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <algorithm>
#include <cerrno>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/rng.hpp"

namespace kubetune {
namespace {
constexpr int kFormatVersion = 1;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double now_seconds() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

// Doubles round-trip exactly through nlohmann's shortest representation; non-finite ones become strings.
nlohmann::json num(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
double num(const nlohmann::json& j) {
  if (j.is_null()) return kNaN;
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    KT_THROW(InvalidArgument, "bad number '", s, "' in study file");
  }
  KT_CHECK(j.is_number(), InvalidArgument, "expected a number, got ", json_summary(j));
  return j.get<double>();
}

nlohmann::json trial_to_json(const Trial& t) {
  nlohmann::json j;
  j["id"] = t.id;
  j["state"] = to_string(t.state);
  nlohmann::json x = nlohmann::json::array();
  for (double v : t.x) x.push_back(num(v));
  j["x"] = x;
  nlohmann::json vals = nlohmann::json::array();
  for (double v : t.values) vals.push_back(num(v));
  j["values"] = vals;
  nlohmann::json inter = nlohmann::json::array();
  for (const auto& [s, v] : t.intermediate) inter.push_back({s, num(v)});
  j["intermediate"] = inter;
  j["created_at"] = t.created_at;
  j["finished_at"] = t.finished_at;
  j["user_attrs"] = t.user_attrs;
  nlohmann::json sys = nlohmann::json::object();
  for (const auto& [k, v] : t.system_attrs) sys[k] = num(v);
  j["system_attrs"] = sys;
  return j;
}

// Member `key` of a study-file object, of JSON kind `kind` ("array", "object", "string" or "number").
const nlohmann::json& field(const nlohmann::json& j, const char* key, const char* kind) {
  KT_CHECK(j.is_object(), InvalidArgument, "expected an object, got ", json_summary(j));
  auto it = j.find(key);
  KT_CHECK(it != j.end(), InvalidArgument, "'", key, "' is missing");
  const std::string_view k(kind);
  const bool ok = k == "array"    ? it->is_array()
                  : k == "object" ? it->is_object()
                  : k == "string" ? it->is_string()
                                  : it->is_number();
  KT_CHECK(ok, InvalidArgument, "'", key, "' must be a", k == "array" || k == "object" ? "n " : " ", kind, ", got ",
           json_summary(*it));
  return *it;
}

Trial trial_from_json(const nlohmann::json& j) {
  Trial t;
  t.id = checked_int<std::int64_t>(field(j, "id", "number"), "'id'");
  t.state = trial_state_from_string(field(j, "state", "string").get<std::string>());
  for (const auto& v : field(j, "x", "array")) t.x.push_back(num(v));
  for (const auto& v : field(j, "values", "array")) t.values.push_back(num(v));
  for (const auto& p : field(j, "intermediate", "array")) {
    KT_CHECK(p.is_array() && p.size() == 2, InvalidArgument, "'intermediate' entries must be [step, value], got ",
             json_summary(p));
    t.intermediate.emplace_back(checked_int<std::int64_t>(p[0], "intermediate step"), num(p[1]));
  }
  t.created_at = field(j, "created_at", "number").get<double>();
  t.finished_at = field(j, "finished_at", "number").get<double>();
  for (const auto& [k, v] : field(j, "user_attrs", "object").items()) {
    KT_CHECK(v.is_string(), InvalidArgument, "user_attrs '", k, "' must be a string, got ", json_summary(v));
    t.user_attrs[k] = v.get<std::string>();
  }
  for (const auto& [k, v] : field(j, "system_attrs", "object").items()) t.system_attrs[k] = num(v);
  return t;
}

// A loaded trial must be one that ask/tell could have produced: searchers and best() index values and x
// without further checks. Throws InvalidArgument naming the field.
void check_loaded_trial(const Trial& t, const SearchSpace& space, std::size_t n_directions) {
  if (t.state == TrialState::Complete) {
    KT_CHECK(t.values.size() == n_directions, InvalidArgument, "'values' has ", t.values.size(),
             " entries for ", n_directions, " directions");
    for (double v : t.values)
      KT_CHECK(std::isfinite(v), InvalidArgument, "'values' holds ", v, "; a complete trial has finite values");
  } else {
    KT_CHECK(t.values.empty(), InvalidArgument, "'values' must be empty for a ", to_string(t.state),
             " trial, has ", t.values.size(), " entries");
  }
  KT_CHECK(std::isfinite(t.created_at) && std::isfinite(t.finished_at), InvalidArgument,
           "'created_at'/'finished_at' must be finite (", t.created_at, ", ", t.finished_at, ")");
  KT_CHECK(t.is_finished() || t.finished_at == 0, InvalidArgument, "'finished_at' = ", t.finished_at, " for a ",
           to_string(t.state), " trial (must be 0)");
  try {
    space.validate_point(t.x);
  } catch (const Error& e) {
    KT_THROW(InvalidArgument, "'x': ", e.what());
  }
  for (std::size_t i = 0; i < t.intermediate.size(); ++i) {
    const std::int64_t step = t.intermediate[i].first;
    KT_CHECK(step >= 0 && (i == 0 || step > t.intermediate[i - 1].first), InvalidArgument,
             "'intermediate' steps must be >= 0 and strictly ascending, got step ", step, " at entry ", i);
  }
}
}  // namespace

namespace {
// SearchContext::trials_epoch values, unique in the process (searchers may be shared between studies).
std::uint64_t next_epoch() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}
}  // namespace

Study::Study(SearchSpace space, std::unique_ptr<Searcher> searcher, std::vector<Direction> directions,
             std::uint64_t seed, std::unique_ptr<Pruner> pruner)
    : space_(std::move(space)),
      searcher_(std::move(searcher)),
      pruner_(std::move(pruner)),
      directions_(std::move(directions)),
      seed_(seed),
      epoch_(next_epoch()) {
  KT_CHECK(searcher_ != nullptr, InvalidArgument, "study needs a searcher");
  KT_CHECK(!space_.empty(), InvalidArgument, "study needs a non-empty search space");
  KT_CHECK(!directions_.empty(), InvalidArgument, "study needs at least one direction");
  searcher_->check_space(space_);
}

std::vector<Trial> Study::ask(std::size_t n) {
  KT_CHECK(n <= kMaxAskBatch, InvalidArgument, "ask: n = ", n, " is larger than the limit of ", kMaxAskBatch,
           " trials per call");
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<Trial> out;
  out.reserve(n);
  double now = now_seconds();
  // Enqueued trials first (in order); the scan only happens while some are waiting.
  for (std::size_t i = first_pending_; i < trials_.size() && out.size() < n; ++i) {
    Trial& t = trials_[i];
    if (t.state == TrialState::Pending) {
      t.state = TrialState::Running;
      t.created_at = now;
      out.push_back(t);
    }
  }
  while (first_pending_ < trials_.size() && trials_[first_pending_].state != TrialState::Pending) ++first_pending_;
  if (out.size() < n) {
    Rng rng(seed_, ask_counter_++);
    SearchContext ctx{space_, trials_, directions_, rng, seed_, epoch_};
    std::size_t want = n - out.size();
    std::vector<Suggestion> sugg = searcher_->ask(ctx, want);
    KT_CHECK(sugg.size() <= want, StateError, "searcher '", searcher_->type(), "' returned ", sugg.size(),
             " suggestions for ", want);
    if (sugg.size() < want) exhausted_ = true;
    for (auto& s : sugg) {
      space_.validate_point(s.x);
      Trial t;
      t.id = static_cast<std::int64_t>(trials_.size());
      t.x = std::move(s.x);
      t.state = TrialState::Running;
      t.created_at = now;
      t.system_attrs = std::move(s.attrs);
      trials_.push_back(t);
      out.push_back(std::move(t));
    }
  }
  return out;
}

Trial& Study::find_locked(std::int64_t id) {
  KT_CHECK(id >= 0 && static_cast<std::size_t>(id) < trials_.size(), NotFound, "unknown trial id ", id);
  return trials_[static_cast<std::size_t>(id)];
}

void Study::finish_locked(Trial& t, TrialState s) {
  t.state = s;
  t.finished_at = now_seconds();
}

TrialState Study::tell(std::int64_t id, double value) { return tell(id, std::vector<double>{value}); }

TrialState Study::tell(std::int64_t id, const std::vector<double>& values) {
  std::lock_guard<std::mutex> lk(mu_);
  Trial& t = find_locked(id);
  KT_CHECK(!t.is_finished(), StateError, "trial ", id, " is already finished (", to_string(t.state), ")");
  KT_CHECK(t.state == TrialState::Running, StateError, "trial ", id, " was enqueued but not asked yet");
  KT_CHECK(values.size() == directions_.size(), InvalidArgument, "trial ", id, ": got ", values.size(),
           " objective values for ", directions_.size(), " directions");
  for (double v : values) {
    if (!std::isfinite(v)) {
      finish_locked(t, TrialState::Failed);
      t.user_attrs["fail_reason"] = "non-finite objective value";
      return TrialState::Failed;
    }
  }
  t.values = values;
  finish_locked(t, TrialState::Complete);
  return TrialState::Complete;
}

void Study::tell_state(std::int64_t id, TrialState state) {
  std::lock_guard<std::mutex> lk(mu_);
  Trial& t = find_locked(id);
  KT_CHECK(!t.is_finished(), StateError, "trial ", id, " is already finished (", to_string(t.state), ")");
  KT_CHECK(state == TrialState::Failed || state == TrialState::Pruned, InvalidArgument,
           "tell_state takes 'failed' or 'pruned', got '", to_string(state), "'");
  finish_locked(t, state);
}

void Study::report(std::int64_t id, std::int64_t step, double value) {
  std::lock_guard<std::mutex> lk(mu_);
  Trial& t = find_locked(id);
  KT_CHECK(t.state == TrialState::Running, StateError, "trial ", id, " is ", to_string(t.state),
           "; report needs a running trial");
  KT_CHECK(step >= 0, InvalidArgument, "trial ", id, ": step ", step, " must be >= 0");
  auto& iv = t.intermediate;
  auto it = std::lower_bound(iv.begin(), iv.end(), step, [](const auto& p, std::int64_t s) { return p.first < s; });
  if (it != iv.end() && it->first == step) it->second = value;
  else iv.insert(it, {step, value});
}

bool Study::should_prune(std::int64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  Trial& t = find_locked(id);
  if (t.state != TrialState::Running) return false;
  Rng rng(seed_, ~ask_counter_);
  SearchContext ctx{space_, trials_, directions_, rng, seed_, epoch_};
  if (pruner_) return pruner_->should_prune(ctx, t);
  return searcher_->should_prune(ctx, t);
}

std::optional<Trial> Study::best() const {
  std::lock_guard<std::mutex> lk(mu_);
  const Trial* best = nullptr;
  for (const auto& t : trials_) {
    if (t.state != TrialState::Complete) continue;
    double v = t.values[0];
    if (!best) best = &t;
    else if (directions_[0] == Direction::Minimize ? v < best->values[0] : v > best->values[0]) best = &t;
  }
  if (!best) return std::nullopt;
  return *best;
}

std::vector<Trial> Study::trials() const {
  std::lock_guard<std::mutex> lk(mu_);
  return trials_;
}

Trial Study::trial(std::int64_t id) const {
  std::lock_guard<std::mutex> lk(mu_);
  KT_CHECK(id >= 0 && static_cast<std::size_t>(id) < trials_.size(), NotFound, "unknown trial id ", id);
  return trials_[static_cast<std::size_t>(id)];
}

std::size_t Study::n_trials() const {
  std::lock_guard<std::mutex> lk(mu_);
  return trials_.size();
}

std::int64_t Study::enqueue(const Assignment& a) {
  std::vector<double> x = space_.from_assignment(a);
  std::lock_guard<std::mutex> lk(mu_);
  Trial t;
  t.id = static_cast<std::int64_t>(trials_.size());
  t.x = std::move(x);
  t.state = TrialState::Pending;
  t.created_at = now_seconds();
  t.system_attrs["enqueued"] = 1;
  if (first_pending_ >= trials_.size() || trials_[first_pending_].state != TrialState::Pending)
    first_pending_ = trials_.size();
  trials_.push_back(std::move(t));
  return trials_.back().id;
}

Trial Study::make_trial(std::vector<double> x, std::vector<double> values, TrialState state,
                        std::vector<std::pair<std::int64_t, double>> intermediate, double now) const {
  Trial t;
  t.x = std::move(x);
  if (state == TrialState::Complete) {
    KT_CHECK(values.size() == directions_.size(), InvalidArgument, "trial has ", values.size(),
             " objective values for ", directions_.size(), " directions");
    for (double v : values)
      if (!std::isfinite(v)) state = TrialState::Failed;
    if (state == TrialState::Complete) t.values = std::move(values);
  }
  t.state = state;
  t.intermediate = std::move(intermediate);
  if (!std::is_sorted(t.intermediate.begin(), t.intermediate.end()))
    std::sort(t.intermediate.begin(), t.intermediate.end());
  t.created_at = now;
  if (t.is_finished()) t.finished_at = t.created_at;
  return t;
}

std::int64_t Study::add_trial(const Assignment& a, const std::vector<double>& values, TrialState state,
                              const std::vector<std::pair<std::int64_t, double>>& intermediate) {
  KT_CHECK(state == TrialState::Complete || state == TrialState::Pruned || state == TrialState::Failed,
           InvalidArgument, "add_trial needs a final state, got '", to_string(state), "'");
  Trial t = make_trial(space_.from_assignment(a), values, state, intermediate, now_seconds());
  std::lock_guard<std::mutex> lk(mu_);
  t.id = static_cast<std::int64_t>(trials_.size());
  trials_.push_back(std::move(t));
  return trials_.back().id;
}

namespace {
// A record's point given in the internal encoding: the checks of from_assignment (right size, finite, in
// bounds, on the grid, legal index), then snapped onto the legal value as from_assignment does. One pass
// without conditions (the bulk path of integrations); validate_point otherwise.
void check_point(const SearchSpace& space, std::vector<double>& x, bool conditional) {
  if (conditional) space.validate_point(x);
  KT_CHECK(x.size() == space.size(), InvalidArgument, "point has ", x.size(), " values, space has ", space.size(),
           " parameters");
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (conditional && std::isnan(v)) continue;  // inactive (validate_point checked it)
    const Param& p = space.param(i);
    KT_CHECK(!std::isnan(v), InvalidArgument, "parameter '", p.name, "' is active but has no value");
    if (p.type == ParamType::Double && p.step == 0) {
      KT_CHECK(v >= p.low && v <= p.high, InvalidArgument, "parameter '", p.name, "': value ", v, " outside [",
               p.low, ", ", p.high, "]");
      continue;
    }
    const double s = space.snap(i, v);
    KT_CHECK(std::isfinite(v) && std::abs(s - v) <= 1e-9 * (1 + std::abs(s)), InvalidArgument, "parameter '",
             p.name, "': value ", v, " is not legal");
    x[i] = s;
  }
}
}  // namespace

// ----------------------------------------------------------------------------------- study configuration
namespace {
using nlohmann::json;

// A component ("searcher" / "pruner") as a config object: a type name, a JSON object text or an object.
json component_object(const json& spec, const std::string& field) {
  if (spec.is_string()) {
    const auto& s = spec.get_ref<const std::string&>();
    KT_CHECK(!s.empty(), InvalidArgument, "study config: '", field, "' must not be an empty type name");
    if (s.front() == '{') {
      json j = parse_user_json(s, "study config: '" + field + "'");
      KT_CHECK(j.is_object(), InvalidArgument, "study config: '", field, "' text must be a JSON object, got ",
               json_summary(j));
      return j;
    }
    return json{{"type", s}};
  }
  KT_CHECK(spec.is_object(), InvalidArgument, "study config: '", field,
           "' must be a type name or an object, got ", json_summary(spec));
  return spec;
}

Direction direction_entry(const json& d, const std::string& field) {
  KT_CHECK(d.is_string(), InvalidArgument, "study config: '", field, "' entries must be strings, got ",
           json_summary(d));
  return direction_from_string(d.get<std::string>());
}

std::unique_ptr<Study> study_from_config(std::optional<SearchSpace> given, const json& cfg) {
  KT_CHECK(cfg.is_object(), InvalidArgument, "study config must be a JSON object, got ", json_summary(cfg));
  static const char* const kKeys[] = {"space", "katib_parameters", "searcher", "pruner", "direction", "directions",
                                      "seed"};
  for (const auto& [k, v] : cfg.items()) {
    (void)v;
    bool known = false;
    for (const char* key : kKeys) known = known || k == key;
    KT_CHECK(known, InvalidArgument, "study config: unknown key '", k,
             "' (expected space, katib_parameters, searcher, pruner, direction, directions, seed)");
  }
  const auto space_it = cfg.find("space");
  const auto katib_it = cfg.find("katib_parameters");
  SearchSpace space;
  if (given) {
    KT_CHECK(space_it == cfg.end() && katib_it == cfg.end(), InvalidArgument,
             "study config: the space is given, so 'space' / 'katib_parameters' must not be");
    space = std::move(*given);
  } else {
    KT_CHECK(space_it == cfg.end() || katib_it == cfg.end(), InvalidArgument,
             "study config: give 'space' or 'katib_parameters', not both");
    if (katib_it != cfg.end()) space = SearchSpace::from_katib(*katib_it);
    else {
      KT_CHECK(space_it != cfg.end(), InvalidArgument, "study config needs 'space' or 'katib_parameters'");
      space = SearchSpace::from_json(*space_it);
    }
  }
  const auto dir_it = cfg.find("direction");
  const auto dirs_it = cfg.find("directions");
  KT_CHECK(dir_it == cfg.end() || dirs_it == cfg.end(), InvalidArgument,
           "study config: give 'direction' or 'directions', not both");
  std::vector<Direction> dirs{Direction::Minimize};
  if (dirs_it != cfg.end()) {
    KT_CHECK(dirs_it->is_array(), InvalidArgument, "study config: 'directions' must be a list of strings, got ",
             json_summary(*dirs_it));
    dirs = directions_from_spec(*dirs_it, "directions");
  } else if (dir_it != cfg.end()) {
    dirs = directions_from_spec(*dir_it, "direction");
  }
  const std::uint64_t seed = checked_int_or(cfg, "seed", std::uint64_t{0}, "study config: 'seed'");
  const auto srch_it = cfg.find("searcher");
  auto searcher = searcher_from_spec(srch_it == cfg.end() ? json() : *srch_it, "searcher");
  const auto prn_it = cfg.find("pruner");
  auto pruner = pruner_from_spec(prn_it == cfg.end() ? json() : *prn_it, "pruner");
  return std::make_unique<Study>(std::move(space), std::move(searcher), std::move(dirs), seed, std::move(pruner));
}
}  // namespace

std::unique_ptr<Searcher> searcher_from_spec(const nlohmann::json& spec, const std::string& field) {
  if (spec.is_null()) return make_searcher(json{{"type", "random"}});
  return make_searcher(component_object(spec, field));
}

std::unique_ptr<Pruner> pruner_from_spec(const nlohmann::json& spec, const std::string& field) {
  if (spec.is_null()) return nullptr;
  return make_pruner(component_object(spec, field));
}

std::vector<Direction> directions_from_spec(const nlohmann::json& spec, const std::string& field) {
  if (spec.is_string()) return {direction_from_string(spec.get<std::string>())};
  KT_CHECK(spec.is_array(), InvalidArgument, "study config: '", field,
           "' must be a string or a list of strings, got ", json_summary(spec));
  KT_CHECK(!spec.empty(), InvalidArgument, "study config: '", field, "' must name at least one direction");
  std::vector<Direction> dirs;
  dirs.reserve(spec.size());
  for (const auto& d : spec) dirs.push_back(direction_entry(d, field));
  return dirs;
}

std::unique_ptr<Study> Study::from_config(const nlohmann::json& config) {
  return study_from_config(std::nullopt, config);
}

std::unique_ptr<Study> Study::from_config(SearchSpace space, const nlohmann::json& config) {
  return study_from_config(std::move(space), config);
}

std::unique_ptr<Study> Study::replay(SearchSpace space, std::unique_ptr<Searcher> searcher,
                                     std::vector<Direction> directions, std::uint64_t seed,
                                     const std::vector<TrialRecord>& trials, std::uint64_t ask_counter,
                                     std::unique_ptr<Pruner> pruner) {
  auto s = std::make_unique<Study>(std::move(space), std::move(searcher), std::move(directions), seed,
                                   std::move(pruner));
  s->replace_trials(trials, ask_counter);
  return s;
}

void Study::replace_trials(std::vector<TrialRecord> trials, std::uint64_t ask_counter, std::size_t keep) {
  const double now = now_seconds();
  const bool conditional = space_.has_conditions();
  // Reuse the storage of the trials replaced last time: integrations call this on every ask, and a fresh
  // buffer of that size would come from (and go back to) the kernel each time.
  std::vector<Trial> built;
  if (keep == 0) {
    std::lock_guard<std::mutex> lk(mu_);
    built.swap(spare_);
  }
  built.clear();
  built.reserve(trials.size() + 16);  // room for the asks that usually follow
  for (auto& r : trials) {
    // A pending record is one the other engine has not started yet: to searchers it is running all the same.
    TrialState st = r.state == TrialState::Pending ? TrialState::Running : r.state;
    Trial t;
    try {
      std::vector<double> x;
      if (r.x.empty()) {
        x = space_.from_assignment(r.params);
      } else {
        check_point(space_, r.x, conditional);
        x = std::move(r.x);
      }
      t = make_trial(std::move(x), std::move(r.values), st, std::move(r.intermediate), now);
    } catch (const Error& e) {
      KT_THROW(InvalidArgument, "trial ", keep + built.size(), ": ", e.what());
    }
    t.id = static_cast<std::int64_t>(keep + built.size());
    t.system_attrs = std::move(r.system_attrs);
    built.push_back(std::move(t));
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    KT_CHECK(keep <= trials_.size(), InvalidArgument, "replace_trials: keep = ", keep, " but the study has ",
             trials_.size(), " trials");
    for (std::size_t i = 0; i < keep; ++i)
      KT_CHECK(trials_[i].is_finished(), InvalidArgument, "replace_trials: kept trial ", i, " is ",
               to_string(trials_[i].state), "; only finished trials can be kept");
    if (keep == 0) {
      trials_.swap(built);
    } else {
      trials_.erase(trials_.begin() + static_cast<std::ptrdiff_t>(keep), trials_.end());
      const std::size_t need = keep + built.size() + 16;  // room for the asks that usually follow
      if (trials_.capacity() < need) trials_.reserve(std::max(need, 2 * trials_.capacity()));
      std::move(built.begin(), built.end(), std::back_inserter(trials_));
    }
    ask_counter_ = ask_counter;
    exhausted_ = false;
    first_pending_ = trials_.size();
    epoch_ = next_epoch();  // trials were replaced: what searchers derived from them is stale
  }
  if (keep != 0) return;
  built.clear();  // the replaced trials, freed outside the lock; their storage is kept for the next call
  std::lock_guard<std::mutex> lk(mu_);
  if (spare_.capacity() < built.capacity()) spare_.swap(built);
}

void Study::set_user_attr(std::int64_t id, const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lk(mu_);
  find_locked(id).user_attrs[key] = value;
}

bool Study::exhausted() const {
  std::lock_guard<std::mutex> lk(mu_);
  return exhausted_;
}

nlohmann::json Study::searcher_config() const {
  std::lock_guard<std::mutex> lk(mu_);
  return searcher_->config();
}

std::optional<nlohmann::json> Study::pruner_config() const {
  std::lock_guard<std::mutex> lk(mu_);
  if (!pruner_) return std::nullopt;
  return pruner_->config();
}

nlohmann::json Study::to_json() const {
  std::lock_guard<std::mutex> lk(mu_);
  nlohmann::json j;
  j["format"] = "kubetune.study";
  j["version"] = kFormatVersion;
  j["space"] = space_.to_json();
  nlohmann::json dirs = nlohmann::json::array();
  for (auto d : directions_) dirs.push_back(to_string(d));
  j["directions"] = dirs;
  j["searcher"] = searcher_->config();
  j["pruner"] = pruner_ ? pruner_->config() : nlohmann::json(nullptr);
  j["seed"] = seed_;
  j["ask_counter"] = ask_counter_;
  j["exhausted"] = exhausted_;
  nlohmann::json ts = nlohmann::json::array();
  for (const auto& t : trials_) ts.push_back(trial_to_json(t));
  j["trials"] = ts;
  return j;
}

std::unique_ptr<Study> Study::from_json(const nlohmann::json& j) {
  try {
    KT_CHECK(j.is_object() && j.value("format", std::string()) == "kubetune.study", InvalidArgument,
             "not a kubetune study (missing format 'kubetune.study')");
    check_json_depth(j, "study JSON");
    const int version = checked_int<int>(field(j, "version", "number"), "'version'");
    KT_CHECK(version == kFormatVersion, InvalidArgument, "unsupported study format version ", version);
    SearchSpace space = SearchSpace::from_json(field(j, "space", "object"));
    std::vector<Direction> dirs;
    for (const auto& d : field(j, "directions", "array")) {
      KT_CHECK(d.is_string(), InvalidArgument, "'directions' entries must be strings, got ", json_summary(d));
      dirs.push_back(direction_from_string(d.get<std::string>()));
    }
    auto searcher = make_searcher(field(j, "searcher", "object"));
    std::unique_ptr<Pruner> pruner;
    if (j.contains("pruner") && !j["pruner"].is_null()) pruner = make_pruner(j["pruner"]);
    const auto seed = checked_int<std::uint64_t>(field(j, "seed", "number"), "'seed'");
    auto s = std::make_unique<Study>(std::move(space), std::move(searcher), std::move(dirs), seed,
                                     std::move(pruner));
    s->ask_counter_ = checked_int<std::uint64_t>(field(j, "ask_counter", "number"), "'ask_counter'");
    if (j.contains("exhausted")) {
      KT_CHECK(j["exhausted"].is_boolean(), InvalidArgument, "'exhausted' must be a boolean, got ",
               json_summary(j["exhausted"]));
      s->exhausted_ = j["exhausted"].get<bool>();
    }
    const nlohmann::json& trials = field(j, "trials", "array");
    s->trials_.reserve(trials.size());
    for (const auto& tj : trials) {
      const std::size_t k = s->trials_.size();
      try {
        Trial t = trial_from_json(tj);
        KT_CHECK(t.id == static_cast<std::int64_t>(k), InvalidArgument, "'id' = ", t.id, " out of sequence");
        check_loaded_trial(t, s->space_, s->directions_.size());
        s->trials_.push_back(std::move(t));
      } catch (const Error& e) {
        KT_THROW(InvalidArgument, "trial ", k, ": ", e.what());
      }
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    KT_THROW(InvalidArgument, "corrupt study JSON: ", e.what());
  }
}

namespace {
// ---- persistence helpers (save/load) ----

std::string random_hex(std::size_t bytes) {
  static const char* digits = "0123456789abcdef";
  std::random_device rd;
  std::string out;
  out.reserve(2 * bytes);
  for (std::size_t i = 0; i < bytes; i += 4) {
    std::uint32_t r = rd();
    for (std::size_t k = 0; k < 4 && i + k < bytes; ++k, r >>= 8) {
      out.push_back(digits[(r >> 4) & 0xf]);
      out.push_back(digits[r & 0xf]);
    }
  }
  return out;
}

std::string errno_text(int e) { return std::string(std::strerror(e)); }

/// The key under which a Study remembers a file: absolute and normalised, so "./s.json" and "s.json" agree.
std::string file_key(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::string parent_dir(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// A descriptor closed on every path out of scope.
struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd >= 0) ::close(fd);
  }
  /// close() and report its result; the descriptor is released either way (Linux semantics).
  int close_now() {
    int r = ::close(fd);
    fd = -1;
    return r;
  }
};

/// Exclusive advisory lock on `<path>.lock` for the read-check-write of a save. Bounded wait.
class FileLock {
 public:
  explicit FileLock(const std::string& path) : lock_path_(path + ".lock"), fd_(-1) {
    // O_NOFOLLOW: a symlink planted at the lock's name is refused, not followed.
    fd_.fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    int e = errno;
    KT_CHECK(fd_.fd >= 0, IoError, "cannot save study to '", path, "': cannot open lock file '", lock_path_,
             "': ", errno_text(e));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (::flock(fd_.fd, LOCK_EX | LOCK_NB) != 0) {
      e = errno;
      if (e == EINTR) continue;
      KT_CHECK(e == EWOULDBLOCK, IoError, "cannot save study to '", path, "': cannot lock '", lock_path_,
               "': ", errno_text(e));
      KT_CHECK(std::chrono::steady_clock::now() < deadline, IoError, "cannot save study to '", path,
               "': another process has held the lock '", lock_path_, "' for 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ~FileLock() {
    if (fd_.fd >= 0) ::flock(fd_.fd, LOCK_UN);
  }

 private:
  std::string lock_path_;
  UniqueFd fd_;
};

/// Reads a whole file from one descriptor (one inode, so a concurrent rename never mixes two versions).
/// nullopt when it does not exist; `mode` gets its permission bits.
std::optional<std::string> read_file_if_exists(const std::string& path, const char* what, mode_t* mode = nullptr) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) {
    int e = errno;
    if (e == ENOENT) return std::nullopt;
    KT_THROW(IoError, what, " '", path, "': ", errno_text(e));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) {
    int e = errno;
    KT_THROW(IoError, what, " '", path, "': ", errno_text(e));
  }
  KT_CHECK(!S_ISDIR(st.st_mode), IoError, what, " '", path, "': it is a directory");
  // A device or FIFO (/dev/zero, a pipe) would be read for ever or block: study files are regular files.
  KT_CHECK(S_ISREG(st.st_mode), IoError, what, " '", path, "': not a regular file");
  KT_CHECK(static_cast<std::uint64_t>(st.st_size) <= kMaxJsonBytes, IoError, what, " '", path, "': ",
           st.st_size, " bytes, larger than the limit of ", kMaxJsonBytes, " bytes");
  if (mode) *mode = st.st_mode & 07777;
  std::string out;
  out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    // The file may grow while it is read: the cap holds for what is read, not only for fstat's size.
    KT_CHECK(out.size() <= kMaxJsonBytes, IoError, what, " '", path, "': grew beyond the limit of ",
             kMaxJsonBytes, " bytes while being read");
    ssize_t r = ::read(fd.fd, buf, sizeof buf);
    if (r < 0) {
      int e = errno;
      if (e == EINTR) continue;
      KT_THROW(IoError, what, " '", path, "': read failed: ", errno_text(e));
    }
    if (r == 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

/// Permission bits for a new study file: 0666 minus the process umask (read from /proc, since umask(2) can
/// only be read by changing it, which races with other threads); 0644 when /proc is not there.
mode_t new_file_mode() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      try {
        return static_cast<mode_t>(0666 & ~std::stoul(line.substr(6), nullptr, 8));
      } catch (const std::exception&) {
        break;
      }
    }
  }
  return 0644;
}

/// Replace `path` by `text` atomically: a fresh temp file next to it (unique random name, O_EXCL|O_NOFOLLOW,
/// mode 0600 until written), write, fchmod, fsync, rename, fsync of the folder. The temp file is removed and
/// its descriptor closed on every failure.
void write_file_atomically(const std::string& path, const std::string& text, mode_t mode) {
  std::string tmp;
  UniqueFd fd(-1);
  int e = 0;
  for (int attempt = 0; attempt < 64 && fd.fd < 0; ++attempt) {
    tmp = path + ".tmp-" + random_hex(8);
    fd.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    e = errno;
    if (fd.fd < 0 && e != EEXIST) break;
  }
  KT_CHECK(fd.fd >= 0, IoError, "cannot write study to '", path, "': cannot create a temp file next to it: ",
           errno_text(e));
  struct Remover {
    const std::string& name;
    bool armed = true;
    ~Remover() {
      if (armed) ::unlink(name.c_str());
    }
  } remover{tmp};
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t w = ::write(fd.fd, p, left);
    if (w <= 0) {
      e = w < 0 ? errno : ENOSPC;
      if (e == EINTR) continue;
      KT_THROW(IoError, "cannot write study to '", path, "': write failed: ", errno_text(e));
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  if (::fchmod(fd.fd, mode) != 0) {
    e = errno;
    KT_THROW(IoError, "cannot write study to '", path, "': fchmod failed: ", errno_text(e));
  }
  if (::fsync(fd.fd) != 0) {
    e = errno;
    KT_THROW(IoError, "cannot write study to '", path, "': fsync failed: ", errno_text(e));
  }
  if (fd.close_now() != 0) {
    e = errno;
    KT_THROW(IoError, "cannot write study to '", path, "': close failed: ", errno_text(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    e = errno;
    KT_THROW(IoError, "cannot write study to '", path, "': rename failed: ", errno_text(e));
  }
  remover.armed = false;
  // Make the rename durable. Best effort: some file systems do not support fsync on a folder.
  UniqueFd dfd(::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd >= 0) ::fsync(dfd.fd);
}

/// The lineage and revision a file on disk carries, for messages ("" / 0 when it has none).
struct DiskVersion {
  bool is_study = false;
  std::string lineage;
  std::uint64_t revision = 0;
};

DiskVersion disk_version(const std::string& text) {
  DiskVersion v;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("format", std::string()) != "kubetune.study") return v;
  v.is_study = true;
  if (j.contains("lineage") && j["lineage"].is_string()) v.lineage = j["lineage"].get<std::string>();
  if (j.contains("revision") && j["revision"].is_number_unsigned()) v.revision = j["revision"].get<std::uint64_t>();
  return v;
}

std::string describe(const std::string& lineage, std::uint64_t revision) {
  if (lineage.empty()) return "no revision (a file written before revisions existed, or by hand)";
  return "revision " + std::to_string(revision) + " of lineage " + lineage.substr(0, 8);
}

constexpr const char* kShareHint =
    " One process per study file: to share a study between processes or machines, use the Optuna "
    "integration (docs/integrations.md).";
}  // namespace

void Study::save(const std::string& path, bool overwrite) const {
  KT_CHECK(!path.empty() && path.back() != '/', InvalidArgument, "study path '", path, "' must name a file");
  std::lock_guard<std::mutex> guard(file_mu_);  // this object's saves one at a time; mu_ only inside to_json
  const std::string key = file_key(path);
  FileLock lock(path);
  mode_t mode = 0;
  std::optional<std::string> disk = read_file_if_exists(path, "cannot save study over", &mode);
  auto known = files_.find(key);
  const FileVersion* mine = known == files_.end() ? nullptr : &known->second;
  DiskVersion dv;
  if (disk) {
    bool unchanged = mine && mine->size == disk->size() && mine->digest == fnv1a64(*disk);
    if (!unchanged) dv = disk_version(*disk);
    if (!unchanged && !overwrite) {
      if (!mine && !dv.is_study)
        KT_THROW(StateError, "cannot save study to '", path, "': the file exists and is not a kubetune study; ",
                 "choose another path, or pass overwrite=True to replace it");
      if (!mine)
        KT_THROW(StateError, "cannot save study to '", path, "': the file already holds a study (",
                 describe(dv.lineage, dv.revision), ") that this Study object did not load or save; load it ",
                 "(Study.load) to continue it, or pass overwrite=True to replace it.", kShareHint);
      KT_THROW(StateError, "cannot save study to '", path, "': the file was changed by someone else since this ",
               "Study loaded or last saved it (this Study has ", describe(mine->lineage, mine->revision),
               ", the file now has ",
               !dv.is_study ? "content that is not a study"
               : dv.lineage == mine->lineage && dv.revision == mine->revision
                   ? "other content under that same revision"
                   : describe(dv.lineage, dv.revision),
               "); saving would silently drop those changes. Load the file again and redo this work on it, or ",
               "pass overwrite=True to replace it.", kShareHint);
    }
  }
  FileVersion next;
  if (mine && !overwrite && !mine->lineage.empty()) {
    next.lineage = mine->lineage;
    next.revision = mine->revision + 1;
  } else {
    // A new file, an overwrite or a file from before revisions: a new lineage, revisions still count up.
    next.lineage = random_hex(16);
    next.revision = std::max(mine ? mine->revision : 0, dv.revision) + 1;
  }
  nlohmann::json j = to_json();
  j["lineage"] = next.lineage;
  j["revision"] = next.revision;
  std::string text = j.dump();
  write_file_atomically(path, text, disk ? mode : new_file_mode());
  next.digest = fnv1a64(text);
  next.size = text.size();
  files_[key] = std::move(next);
}

std::unique_ptr<Study> Study::load(const std::string& path) {
  std::optional<std::string> text = read_file_if_exists(path, "cannot open study file");
  KT_CHECK(text.has_value(), IoError, "cannot open study file '", path, "': no such file");
  nlohmann::json j;
  try {
    j = parse_user_json(*text, "the study");
  } catch (const Error& e) {
    KT_THROW(InvalidArgument, "study file '", path, "': ", e.what());
  }
  FileVersion v;
  if (j.is_object() && j.contains("lineage")) {
    KT_CHECK(j["lineage"].is_string() && !j["lineage"].get_ref<const std::string&>().empty(), InvalidArgument,
             "study file '", path, "': 'lineage' must be a non-empty string, got ", json_summary(j["lineage"]));
    KT_CHECK(j.contains("revision") && j["revision"].is_number_unsigned(), InvalidArgument, "study file '", path,
             "': 'revision' must be a non-negative integer, got ",
             json_summary(j.value("revision", nlohmann::json())));
    v.lineage = j["lineage"].get<std::string>();
    v.revision = j["revision"].get<std::uint64_t>();
  }
  v.digest = fnv1a64(*text);
  v.size = text->size();
  std::unique_ptr<Study> s;
  try {
    s = from_json(j);
  } catch (const Error& e) {
    KT_THROW(InvalidArgument, "study file '", path, "': ", e.what());
  }
  s->files_[file_key(path)] = std::move(v);
  return s;
}

}  // namespace kubetune
