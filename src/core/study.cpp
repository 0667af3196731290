// Study: ask/tell bookkeeping, determinism, JSON persistence with atomic writes.
#include "kubetune/core/study.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <algorithm>
#include <cerrno>

#include "kubetune/core/error.hpp"

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

Trial trial_from_json(const nlohmann::json& j) {
  Trial t;
  t.id = j.at("id").get<std::int64_t>();
  t.state = trial_state_from_string(j.at("state").get<std::string>());
  for (const auto& v : j.at("x")) t.x.push_back(num(v));
  for (const auto& v : j.at("values")) t.values.push_back(num(v));
  for (const auto& p : j.at("intermediate")) t.intermediate.emplace_back(p.at(0).get<std::int64_t>(), num(p.at(1)));
  t.created_at = j.at("created_at").get<double>();
  t.finished_at = j.at("finished_at").get<double>();
  t.user_attrs = j.at("user_attrs").get<std::map<std::string, std::string>>();
  for (const auto& [k, v] : j.at("system_attrs").items()) t.system_attrs[k] = num(v);
  return t;
}
}  // namespace

Study::Study(SearchSpace space, std::unique_ptr<Searcher> searcher, std::vector<Direction> directions,
             std::uint64_t seed, std::unique_ptr<Pruner> pruner)
    : space_(std::move(space)),
      searcher_(std::move(searcher)),
      pruner_(std::move(pruner)),
      directions_(std::move(directions)),
      seed_(seed) {
  KT_CHECK(searcher_ != nullptr, InvalidArgument, "study needs a searcher");
  KT_CHECK(!space_.empty(), InvalidArgument, "study needs a non-empty search space");
  KT_CHECK(!directions_.empty(), InvalidArgument, "study needs at least one direction");
  searcher_->check_space(space_);
}

std::vector<Trial> Study::ask(std::size_t n) {
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
    SearchContext ctx{space_, trials_, directions_, rng, seed_};
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
  SearchContext ctx{space_, trials_, directions_, rng, seed_};
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

Trial Study::make_trial(const Assignment& a, const std::vector<double>& values, TrialState state,
                        const std::vector<std::pair<std::int64_t, double>>& intermediate) const {
  Trial t;
  t.x = space_.from_assignment(a);
  if (state == TrialState::Complete) {
    KT_CHECK(values.size() == directions_.size(), InvalidArgument, "trial has ", values.size(),
             " objective values for ", directions_.size(), " directions");
    for (double v : values)
      if (!std::isfinite(v)) state = TrialState::Failed;
    if (state == TrialState::Complete) t.values = values;
  }
  t.state = state;
  t.intermediate = intermediate;
  std::sort(t.intermediate.begin(), t.intermediate.end());
  t.created_at = now_seconds();
  if (t.is_finished()) t.finished_at = t.created_at;
  return t;
}

std::int64_t Study::add_trial(const Assignment& a, const std::vector<double>& values, TrialState state,
                              const std::vector<std::pair<std::int64_t, double>>& intermediate) {
  KT_CHECK(state == TrialState::Complete || state == TrialState::Pruned || state == TrialState::Failed,
           InvalidArgument, "add_trial needs a final state, got '", to_string(state), "'");
  Trial t = make_trial(a, values, state, intermediate);
  std::lock_guard<std::mutex> lk(mu_);
  t.id = static_cast<std::int64_t>(trials_.size());
  trials_.push_back(std::move(t));
  return trials_.back().id;
}

std::unique_ptr<Study> Study::replay(SearchSpace space, std::unique_ptr<Searcher> searcher,
                                     std::vector<Direction> directions, std::uint64_t seed,
                                     const std::vector<TrialRecord>& trials, std::uint64_t ask_counter,
                                     std::unique_ptr<Pruner> pruner) {
  auto s = std::make_unique<Study>(std::move(space), std::move(searcher), std::move(directions), seed,
                                   std::move(pruner));
  s->ask_counter_ = ask_counter;
  s->trials_.reserve(trials.size());
  for (const auto& r : trials) {
    // A pending record is one the other engine has not started yet: to searchers it is running all the same.
    TrialState st = r.state == TrialState::Pending ? TrialState::Running : r.state;
    Trial t;
    try {
      t = s->make_trial(r.params, r.values, st, r.intermediate);
    } catch (const Error& e) {
      KT_THROW(InvalidArgument, "trial ", s->trials_.size(), ": ", e.what());
    }
    t.id = static_cast<std::int64_t>(s->trials_.size());
    t.system_attrs = r.system_attrs;
    s->trials_.push_back(std::move(t));
  }
  s->first_pending_ = s->trials_.size();
  return s;
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
    int version = j.at("version").get<int>();
    KT_CHECK(version == kFormatVersion, InvalidArgument, "unsupported study format version ", version);
    SearchSpace space = SearchSpace::from_json(j.at("space"));
    std::vector<Direction> dirs;
    for (const auto& d : j.at("directions")) dirs.push_back(direction_from_string(d.get<std::string>()));
    auto searcher = make_searcher(j.at("searcher"));
    std::unique_ptr<Pruner> pruner;
    if (j.contains("pruner") && !j["pruner"].is_null()) pruner = make_pruner(j["pruner"]);
    auto s = std::make_unique<Study>(std::move(space), std::move(searcher), std::move(dirs),
                                     j.at("seed").get<std::uint64_t>(), std::move(pruner));
    s->ask_counter_ = j.at("ask_counter").get<std::uint64_t>();
    s->exhausted_ = j.value("exhausted", false);
    for (const auto& tj : j.at("trials")) {
      Trial t = trial_from_json(tj);
      KT_CHECK(t.id == static_cast<std::int64_t>(s->trials_.size()), InvalidArgument, "study file: trial id ",
               t.id, " out of sequence");
      KT_CHECK(t.x.size() == s->space_.size(), InvalidArgument, "study file: trial ", t.id, " has ", t.x.size(),
               " values for ", s->space_.size(), " parameters");
      s->trials_.push_back(std::move(t));
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    KT_THROW(InvalidArgument, "corrupt study JSON: ", e.what());
  }
}

void Study::save(const std::string& path) const {
  std::string text = to_json().dump();
  std::string dir = ".";
  auto slash = path.find_last_of('/');
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 100000);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KT_CHECK(fd >= 0, IoError, "cannot write study to '", path, "': cannot create temp file '", tmp, "'");
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(tmp.c_str());
      KT_THROW(IoError, "cannot write study to '", path, "': write failed");
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    KT_THROW(IoError, "cannot write study to '", path, "': fsync/close failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    KT_THROW(IoError, "cannot write study to '", path, "': rename failed");
  }
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::unique_ptr<Study> Study::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KT_CHECK(in.good(), IoError, "cannot open study file '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    KT_THROW(InvalidArgument, "study file '", path, "' is truncated or corrupt: ", e.what());
  }
  try {
    return from_json(j);
  } catch (const Error& e) {
    KT_THROW(InvalidArgument, "study file '", path, "': ", e.what());
  }
}

}  // namespace kubetune
