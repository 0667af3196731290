// Katib's Suggestion service logic: request JSON -> search space, searcher and a replayed study -> assignments.
#include "kubetune/core/katib.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/rng.hpp"
#include "kubetune/core/searcher.hpp"
#include "kubetune/core/settings.hpp"
#include "kubetune/core/study.hpp"
#include "katib_request.hpp"

namespace kubetune::katib {
namespace {

using json = nlohmann::json;

// Bounds on what a request may ask for (a Katib experiment's parallelTrialCount is far below either).
constexpr std::int64_t kMaxCount = 10000;
constexpr std::size_t kMaxStateValue = 4096;

// Katib algorithm name -> kubetune registry type. The registry also knows the names themselves.
const std::map<std::string, std::string>& algorithm_types() {
  static const std::map<std::string, std::string> m = {
      {"random", "random"},
      {"grid", "grid"},
      {"sobol", "sobol"},
      {"tpe", "tpe"},                                    // Katib: hyperopt's TPE (its preset, below)
      {"multivariate-tpe", "multivariate-tpe"},          // Katib: Optuna's multivariate TPE
      {"bayesianoptimization", "bayesianoptimization"},  // Katib: scikit-optimize's GP
      {"gp", "gp"},
      {"hyperband", "hyperband"},
      {"bohb", "bohb"},
      {"asha", "asha"},
  };
  return m;
}

std::string known_algorithms() {
  std::string s;
  for (const auto& [k, v] : algorithm_types()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

std::string hex16(std::uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = d[v & 15];
  return s;
}

// Shortest text that reads back as the same double.
std::string format_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Whole-string parse (Katib sends numbers as strings); nullopt on anything else.
std::optional<double> parse_double(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

const std::string& str(const json& j, const char* key, const std::string& what) {
  static const std::string empty;
  if (!j.contains(key) || j[key].is_null()) return empty;
  KT_CHECK(j[key].is_string(), InvalidArgument, what, ".", key, " must be a string, got ", j[key].type_name());
  return j[key].get_ref<const std::string&>();
}

const json& arr(const json& j, const char* key, const std::string& what) {
  static const json empty = json::array();
  if (!j.contains(key) || j[key].is_null()) return empty;
  KT_CHECK(j[key].is_array(), InvalidArgument, what, ".", key, " must be a list, got ", j[key].type_name());
  return j[key];
}

// [[name, value], ...] -> ordered pairs of strings.
std::vector<std::pair<std::string, std::string>> pairs(const json& j, const char* key, const std::string& what) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : arr(j, key, what)) {
    KT_CHECK(p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string(), InvalidArgument, what, ".",
             key, " entries must be [name, value] strings");
    out.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  }
  return out;
}

// Katib's protobuf enums -> the CRD spellings SearchSpace::from_katib reads.
std::string parameter_type(const std::string& t, const std::string& name) {
  if (t == "DOUBLE" || t == "double") return "double";
  if (t == "INT" || t == "int") return "int";
  if (t == "DISCRETE" || t == "discrete") return "discrete";
  if (t == "CATEGORICAL" || t == "categorical") return "categorical";
  KT_THROW(InvalidArgument, "parameter '", name, "': unknown parameter type '", t,
           "' (expected DOUBLE, INT, DISCRETE or CATEGORICAL)");
}

// The experiment's parameters as a SearchSpace, plus each discrete value's text (replies echo Katib's own text).
struct Space {
  SearchSpace space;
  std::vector<std::vector<std::string>> discrete_text;  // per parameter; empty unless discrete
};

Space parse_space(const json& exp) {
  json katib = json::array();
  std::map<std::string, int> seen;
  for (const auto& p : arr(exp, "parameters", "experiment")) {
    KT_CHECK(p.is_object(), InvalidArgument, "experiment.parameters entries must be objects");
    const std::string& name = str(p, "name", "parameter");
    KT_CHECK(!name.empty(), InvalidArgument, "a parameter has an empty name");
    KT_CHECK(seen[name]++ == 0, InvalidArgument, "parameter '", name, "' is declared twice");
    std::string type = parameter_type(str(p, "type", "parameter '" + name + "'"), name);
    // (SearchSpace::from_katib reads the distribution, Katib's enum names included: distribution_from_string)
    json fs = {{"distribution", str(p, "distribution", "parameter '" + name + "'")}};
    for (const char* k : {"min", "max", "step"}) {
      const std::string& v = str(p, k, "parameter '" + name + "'");
      if (!v.empty()) fs[k] = v;
    }
    const json& list = arr(p, "list", "parameter '" + name + "'");
    if (type == "discrete" || type == "categorical") {
      KT_CHECK(!list.empty(), InvalidArgument, "parameter '", name, "': feasibleSpace.list is empty");
      fs["list"] = list;
    } else {
      KT_CHECK(fs.contains("min") && fs.contains("max"), InvalidArgument, "parameter '", name,
               "': feasibleSpace needs min and max");
    }
    katib.push_back({{"name", name}, {"parameterType", type}, {"feasibleSpace", fs}});
  }
  KT_CHECK(!katib.empty(), InvalidArgument, "experiment has no parameters");
  Space s;
  s.space = SearchSpace::from_katib(katib);
  s.discrete_text.resize(s.space.size());
  for (std::size_t i = 0; i < s.space.size(); ++i) {
    const Param& p = s.space.param(i);
    if (p.type != ParamType::Discrete) continue;
    // from_katib sorted the values; keep the experiment's spelling of each.
    std::vector<std::string>& text = s.discrete_text[i];
    text.resize(p.values.size());
    for (const auto& v : katib[i]["feasibleSpace"]["list"]) {
      double d = settings::parse_number(v, p.name + ".list");
      auto it = std::find(p.values.begin(), p.values.end(), d);
      text[static_cast<std::size_t>(it - p.values.begin())] = v.get<std::string>();
    }
  }
  return s;
}

// Searcher attributes travel in two kinds of settings. Per-trial bookkeeping (Hyperband bracket and rung, Sobol
// index, ...) is kept under each suggestion's fingerprint. Model state that a searcher reads from its most
// recent suggestion only (the GP's hyperparameters, fit size and hedge gains: gp_*) is kept once, under
// kStatePrefix + "model", replaced by every reply (Katib replaces a setting of the same name), so the request
// does not grow by a model per trial. GP's acquisition value is a diagnostic and does not travel.
constexpr const char* kModelKey = "model";

bool is_model_attr(const std::string& k) { return k.rfind("gp_", 0) == 0; }

// "k=v,k=v" of the attributes that `pick` selects.
template <class Pick>
std::string encode_attrs(const std::map<std::string, double>& attrs, Pick pick) {
  std::string s;
  for (const auto& [k, v] : attrs) {
    if (k == "gp_acq_value" || !pick(k)) continue;
    s += (s.empty() ? "" : ",") + k + "=" + format_double(v);
  }
  return s;
}

std::map<std::string, double> decode_attrs(const std::string& fp, const std::string& text) {
  std::map<std::string, double> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view item(text.data() + pos, end - pos);
    std::size_t eq = item.find('=');
    std::optional<double> v;
    if (eq != std::string_view::npos && eq > 0) v = parse_double(item.substr(eq + 1));
    KT_CHECK(v.has_value(), InvalidArgument, "algorithm setting '", kStatePrefix, fp, "' = '", text,
             "' is not kubetune state (expected name=number,...)");
    out[std::string(item.substr(0, eq))] = *v;
    pos = end + 1;
  }
  return out;
}

struct Algorithm {
  std::string name;
  json config;  // searcher config: {"type": ..., user settings}
  std::map<std::string, std::map<std::string, double>> state;  // fingerprint -> per-trial searcher attributes
  std::string model_fingerprint;                                // whose model state `model` is
  std::map<std::string, double> model;
  std::optional<std::uint64_t> random_state;
};

Algorithm parse_algorithm(const json& exp) {
  KT_CHECK(exp.contains("algorithm") && exp["algorithm"].is_object(), InvalidArgument,
           "experiment has no algorithm spec");
  const json& a = exp["algorithm"];
  Algorithm out;
  out.name = str(a, "name", "algorithm");
  auto it = algorithm_types().find(out.name);
  KT_CHECK(it != algorithm_types().end(), InvalidArgument, "unknown algorithm '", out.name,
           "' (kubetune serves: ", known_algorithms(), ")");
  out.config = {{"type", it->second}};
  // Katib's "tpe" is hyperopt's: its defaults (20 startup jobs, 24 EI candidates, ...) unless a preset is given.
  bool hyperopt = out.name == "tpe";
  for (auto& [k, v] : pairs(a, "settings", "algorithm")) {
    if (k.rfind(kStatePrefix, 0) == 0) {
      KT_CHECK(v.size() <= kMaxStateValue, InvalidArgument, "algorithm setting '", k, "' is too long");
      // All of it is validated when read, whether it matches a trial or not.
      std::string fp = k.substr(std::char_traits<char>::length(kStatePrefix));
      if (fp == kModelKey) {
        std::size_t colon = v.find(':');
        KT_CHECK(colon == 16, InvalidArgument, "algorithm setting '", k, "' = '", v,
                 "' is not kubetune state (expected fingerprint:name=number,...)");
        out.model_fingerprint = v.substr(0, colon);
        out.model = decode_attrs(fp, v.substr(colon + 1));
      } else {
        out.state[fp] = decode_attrs(fp, v);
      }
      continue;
    }
    KT_CHECK(!out.config.contains(k), InvalidArgument, "algorithm setting '", k, "' is given twice");
    if (k == "random_state") {
      out.random_state = settings::uinteger(json(v), k);
      // The rung-based searchers draw from the study's stream alone: the seed is all they need of it.
      const std::string& type = it->second;
      if (type == "hyperband" || type == "bohb" || type == "asha") continue;
    }
    out.config[k] = v;
  }
  if (hyperopt && !out.config.contains("preset")) out.config["preset"] = "hyperopt";
  return out;
}

// One trial's assignment text in space order, the key under which its searcher state is kept.
template <class Text>
std::string fingerprint(const std::vector<Text>& values_in_space_order, const SearchSpace& space) {
  std::uint64_t h = fnv1a64("kubetune.katib/1");
  for (std::size_t i = 0; i < space.size(); ++i) {
    h = fnv1a64(space.param(i).name, h);
    h = fnv1a64("\x1f", h);
    h = fnv1a64(values_in_space_order[i], h);
    h = fnv1a64("\x1e", h);
  }
  return hex16(h);
}

// Katib's text of parameter i's value -> its internal encoding (the value; the index for lists), checked.
double parse_value(const Space& s, std::size_t i, std::string_view text, std::string_view trial) {
  const Param& p = s.space.param(i);
  auto bad = [&](const auto&... what) -> double {
    KT_THROW(InvalidArgument, "trial '", trial, "': parameter '", p.name, "' = '", text, "' ", what...);
  };
  if (p.type == ParamType::Categorical) {
    for (std::size_t k = 0; k < p.choices.size(); ++k)
      if (p.choices[k] == text) return static_cast<double>(k);
    return bad("is not a choice");
  }
  std::optional<double> d = parse_double(text);
  if (!d || !std::isfinite(*d)) return bad("is not a number");
  if (p.type == ParamType::Discrete) {
    for (std::size_t k = 0; k < p.values.size(); ++k)
      if (p.values[k] == *d) return static_cast<double>(k);
    return bad("is not in the list");
  }
  if (p.type == ParamType::Int && *d != std::floor(*d)) return bad("is not an integer");
  if (!(*d >= p.low && *d <= p.high)) return bad("lies outside [", p.low, ", ", p.high, "]");
  return *d;
}

std::string format_value(const Space& s, std::size_t i, double x) {
  const Param& p = s.space.param(i);
  switch (p.type) {
    case ParamType::Double: return format_double(x);
    case ParamType::Int: return std::to_string(static_cast<std::int64_t>(std::llround(x)));
    case ParamType::Discrete: return s.discrete_text[i].at(static_cast<std::size_t>(x));
    case ParamType::Categorical: return p.choices.at(static_cast<std::size_t>(x));
  }
  return {};
}

// Katib condition -> trial state for the searchers. Running covers CREATED/RUNNING/UNKNOWN: a pending point.
TrialState trial_state(std::string_view c, std::string_view trial) {
  if (c == "SUCCEEDED") return TrialState::Complete;
  if (c == "EARLYSTOPPED") return TrialState::Pruned;
  if (c == "FAILED" || c == "KILLED" || c == "METRICSUNAVAILABLE") return TrialState::Failed;
  if (c == "CREATED" || c == "RUNNING" || c == "UNKNOWN" || c.empty()) return TrialState::Running;
  KT_THROW(InvalidArgument, "trial '", trial, "': unknown condition '", c, "'");
}

struct Objective {
  Direction direction = Direction::Minimize;
  std::string metric;
};

Objective parse_objective(const json& exp) {
  KT_CHECK(exp.contains("objective") && exp["objective"].is_object(), InvalidArgument,
           "experiment has no objective");
  const json& o = exp["objective"];
  Objective out;
  const std::string& type = str(o, "type", "objective");
  if (type == "MAXIMIZE" || type == "maximize") {
    out.direction = Direction::Maximize;
  } else {
    KT_CHECK(type == "MINIMIZE" || type == "minimize", InvalidArgument, "objective type '", type,
             "' must be MINIMIZE or MAXIMIZE");
  }
  out.metric = str(o, "metric", "objective");
  KT_CHECK(!out.metric.empty(), InvalidArgument, "objective has no objective_metric_name");
  return out;
}

TrialRecord parse_trial(const TrialView& t, const Space& s, const Objective& obj, const Algorithm& alg) {
  const std::string_view name = t.name;
  const std::size_t n = s.space.size();
  std::vector<std::string_view> text(n);
  std::vector<bool> given(n, false);
  std::size_t next = 0;  // Katib sends the parameters in the experiment's order: try that first
  for (const auto& [k, v] : t.assignments) {
    std::size_t i = next < n && s.space.param(next).name == k ? next : n;
    for (std::size_t j = 0; i == n && j < n; ++j)
      if (s.space.param(j).name == k) i = j;
    KT_CHECK(i < n, InvalidArgument, "trial '", name, "': assignment of unknown parameter '", k, "'");
    KT_CHECK(!given[i], InvalidArgument, "trial '", name, "': parameter '", k, "' is assigned twice");
    given[i] = true;
    text[i] = v;
    next = i + 1;
  }
  TrialRecord r;
  r.x.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    KT_CHECK(given[i], InvalidArgument, "trial '", name, "': parameter '", s.space.param(i).name,
             "' is missing from its assignments");
    r.x[i] = parse_value(s, i, text[i], name);
  }
  r.state = trial_state(t.condition, name);
  const std::string_view* metric = nullptr;
  for (const auto& m : t.metrics)
    if (m.first == obj.metric) metric = &m.second;  // the last entry of the objective metric wins
  std::optional<double> value = metric ? parse_double(*metric) : std::nullopt;
  if (r.state == TrialState::Complete) {
    KT_CHECK(metric != nullptr, InvalidArgument, "trial '", name, "' succeeded without objective metric '",
             obj.metric, "'");
    KT_CHECK(value.has_value(), InvalidArgument, "trial '", name, "': objective metric '", obj.metric, "' = '",
             *metric, "' is not a number");
    r.values = {*value};
  } else if (r.state == TrialState::Pruned && value && std::isfinite(*value)) {
    r.intermediate = {{0, *value}};  // the value it was stopped at, for searchers that read pruned trials
  }
  if (!alg.state.empty() || !alg.model.empty()) {
    const std::string fp = fingerprint(text, s.space);
    auto st = alg.state.find(fp);
    if (st != alg.state.end()) r.system_attrs = st->second;
    if (fp == alg.model_fingerprint) r.system_attrs.insert(alg.model.begin(), alg.model.end());
  }
  return r;
}

struct Replayed {
  Space space;
  Algorithm algorithm;
  Objective objective;
  std::unique_ptr<Searcher> searcher;
};

Replayed parse_experiment(const json& exp) {
  KT_CHECK(exp.is_object(), InvalidArgument, "request has no experiment");
  Replayed r;
  r.space = parse_space(exp);
  r.algorithm = parse_algorithm(exp);
  r.objective = parse_objective(exp);
  r.searcher = make_searcher(r.algorithm.config);
  r.searcher->check_space(r.space.space);
  return r;
}

// Trials the searcher hands out when Katib's controller drives it `parallel` at a time and each batch finishes
// before the next request, until a short reply (Katib accepts only full ones) or `limit`. The objective is a
// fixed function of the point: the schedule of a rung-based searcher does not depend on the values.
std::size_t trials_until_short_reply(const Replayed& e, std::size_t parallel, std::size_t limit) {
  Study study(e.space.space, make_searcher(e.algorithm.config), {e.objective.direction}, 0);
  std::size_t made = 0;
  while (made < limit) {
    std::vector<Trial> batch = study.ask(std::min(parallel, limit - made));
    for (const Trial& t : batch) {
      double v = 0;
      for (double u : e.space.space.to_unit(t.x)) v += u;
      study.tell(t.id, v);
    }
    made += batch.size();
    if (batch.size() < parallel) break;
  }
  return made;
}

// Rung-based searchers (Hyperband, BOHB) must wait for a rung before promoting. Katib's controller accepts only
// replies of exactly the requested size, so a parallelTrialCount whose requests outgrow what a rung can hand
// out stops the schedule part-way (suggestionclient.go: "The response contains unexpected trials"). Checked
// at validation by playing the schedule with that parallel count against one trial at a time.
void check_parallel_count(const Replayed& e, const json& exp) {
  const std::string& type = e.algorithm.config["type"].get_ref<const std::string&>();
  if (type != "hyperband" && type != "bohb") return;
  if (!exp.contains("parallel_trial_count") || !exp["parallel_trial_count"].is_number_integer()) return;
  const std::int64_t parallel = exp["parallel_trial_count"].get<std::int64_t>();
  if (parallel <= 1) return;
  // Up to the experiment's maxTrialCount (BOHB's brackets repeat without end), at most kMaxPlayed.
  constexpr std::int64_t kMaxPlayed = 2000;
  std::int64_t limit = kMaxPlayed;
  if (exp.contains("max_trial_count") && exp["max_trial_count"].is_number_integer() &&
      exp["max_trial_count"].get<std::int64_t>() > 0)
    limit = std::min(limit, exp["max_trial_count"].get<std::int64_t>());
  const std::size_t serial = trials_until_short_reply(e, 1, static_cast<std::size_t>(limit));
  const auto at = [&](std::int64_t p) { return trials_until_short_reply(e, static_cast<std::size_t>(p), serial); };
  if (at(parallel) >= serial) return;
  std::int64_t largest = 1;
  for (std::int64_t p = std::min<std::int64_t>(parallel - 1, 64); p > 1; --p)
    if (at(p) >= serial) {
      largest = p;
      break;
    }
  KT_THROW(InvalidArgument, e.algorithm.name, ": parallelTrialCount = ", parallel, " stops the bracket schedule ",
           "after ", at(parallel), " of its ", serial, " trials (a rung cannot fill Katib's requests); use ",
           "parallelTrialCount <= ", largest, " or change r_l/eta");
}

}  // namespace

std::vector<std::string> algorithm_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : algorithm_types()) out.push_back(k);
  return out;
}

void validate_algorithm_settings(const nlohmann::json& experiment) {
  check_parallel_count(parse_experiment(experiment), experiment);
}

namespace {

// The request JSON of katib.hpp as a view (strings stay in `request`).
RequestView view_of(const nlohmann::json& request) {
  KT_CHECK(request.is_object() && request.contains("experiment"), InvalidArgument, "request has no experiment");
  KT_CHECK(request.contains("count") && request["count"].is_number_integer(), InvalidArgument,
           "request needs an integer current_request_number");
  RequestView v;
  v.experiment = request["experiment"];
  v.count = request["count"].get<std::int64_t>();
  auto view_pairs = [](const json& t, const char* key, const std::string& what) {
    TextPairs out;
    for (const auto& p : arr(t, key, what)) {
      KT_CHECK(p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string(), InvalidArgument, what,
               ".", key, " entries must be [name, value] strings");
      out.emplace_back(p[0].get_ref<const std::string&>(), p[1].get_ref<const std::string&>());
    }
    return out;
  };
  for (const auto& t : arr(request, "trials", "request")) {
    KT_CHECK(t.is_object(), InvalidArgument, "request.trials entries must be objects");
    TrialView tv;
    tv.name = str(t, "name", "trial");
    if (t.contains("start_time")) tv.start_time = str(t, "start_time", "trial '" + std::string(tv.name) + "'");
    const std::string what = "trial '" + std::string(tv.name) + "'";
    tv.condition = str(t, "condition", what);
    tv.assignments = view_pairs(t, "assignments", what);
    tv.metrics = view_pairs(t, "metrics", what);
    v.trials.push_back(std::move(tv));
  }
  return v;
}

// Studies of recent experiments, kept between calls (Katib sends every trial each time): replace_trials() keeps
// a study's searcher caches, which are memoisation only, so the answer is the one a fresh replay gives. The key
// holds everything but the trials that an answer depends on; a study is taken out while a call uses it, so
// concurrent calls on one experiment each get their own.
class StudyCache {
 public:
  std::unique_ptr<Study> take(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->first != key) continue;
      std::unique_ptr<Study> s = std::move(it->second);
      lru_.erase(it);
      return s;
    }
    return nullptr;
  }
  void put(std::string key, std::unique_ptr<Study> s) {
    std::lock_guard<std::mutex> lock(mu_);
    lru_.emplace_front(std::move(key), std::move(s));
    if (lru_.size() > kEntries) lru_.pop_back();
  }

 private:
  static constexpr std::size_t kEntries = 8;  // at about 1 MB each for 5,000 trials of 10 parameters
  std::mutex mu_;
  std::list<std::pair<std::string, std::unique_ptr<Study>>> lru_;  // most recently used first
};

StudyCache& study_cache() {
  static StudyCache cache;
  return cache;
}

std::string study_key(const std::string& experiment, const Replayed& e, std::uint64_t seed) {
  return experiment + '\n' + e.algorithm.config.dump() + '\n' + e.space.space.to_json().dump() + '\n' +
         std::to_string(static_cast<int>(e.objective.direction)) + '\n' + std::to_string(seed);
}

}  // namespace

nlohmann::json get_suggestions(const nlohmann::json& request) { return suggest(view_of(request)); }

nlohmann::json get_suggestions_wire(std::string_view bytes) { return suggest(read_suggestions_request(bytes)); }

nlohmann::json suggest(const RequestView& request) {
  Replayed e = parse_experiment(request.experiment);
  const std::int64_t count = request.count;
  KT_CHECK(count >= 0 && count <= kMaxCount, InvalidArgument, "current_request_number = ", count,
           " must be in [0, ", kMaxCount, "]");

  // Katib lists trials in no fixed order and may repeat one: the last entry of a name wins. They are replayed
  // in start order (started ones by start time, then the others; ties by name): the order they were
  // suggested in, so recency weights mean what they say and a kept study sees new trials after the old ones.
  std::unordered_map<std::string_view, const TrialView*> by_name;
  by_name.reserve(request.trials.size());
  for (const auto& t : request.trials) by_name[t.name] = &t;
  std::vector<const TrialView*> ordered;
  ordered.reserve(by_name.size());
  for (const auto& [name, t] : by_name) ordered.push_back(t);
  std::sort(ordered.begin(), ordered.end(), [](const TrialView* a, const TrialView* b) {
    if (a->start_time.empty() != b->start_time.empty()) return b->start_time.empty();
    if (a->start_time != b->start_time) return a->start_time < b->start_time;
    return a->name < b->name;  // names are unique here
  });
  std::vector<TrialRecord> records;
  records.reserve(ordered.size());
  bool running = false;
  for (const TrialView* t : ordered) {
    records.push_back(parse_trial(*t, e.space, e.objective, e.algorithm));
    running = running || records.back().state == TrialState::Running;
  }

  const std::string& exp_name = str(request.experiment, "name", "experiment");
  std::uint64_t seed = e.algorithm.random_state.value_or(fnv1a64(exp_name));
  const std::string key = study_key(exp_name, e, seed);
  const std::size_t n_records = records.size();
  std::unique_ptr<Study> study = study_cache().take(key);
  if (study)
    study->replace_trials(std::move(records), n_records);
  else
    study = Study::replay(e.space.space, std::move(e.searcher), {e.objective.direction}, seed, records, n_records);
  std::vector<Trial> asked = study->ask(static_cast<std::size_t>(count));
  study_cache().put(key, std::move(study));

  json assignments = json::array();
  json state = json::array();
  std::string model;
  for (const Trial& t : asked) {
    std::vector<std::string> text(e.space.space.size());
    json a = json::array();
    for (std::size_t i = 0; i < text.size(); ++i) {
      text[i] = format_value(e.space, i, t.x[i]);
      a.push_back({e.space.space.param(i).name, text[i]});
    }
    assignments.push_back(std::move(a));
    const std::string fp = fingerprint(text, e.space.space);
    std::string attrs = encode_attrs(t.system_attrs, [](const std::string& k) { return !is_model_attr(k); });
    if (!attrs.empty()) state.push_back({kStatePrefix + fp, attrs});
    std::string m = encode_attrs(t.system_attrs, is_model_attr);
    if (!m.empty()) model = fp + ":" + m;  // the last suggestion's model is the one read next time
  }
  if (!model.empty()) state.push_back({std::string(kStatePrefix) + kModelKey, model});
  bool short_reply = static_cast<std::int64_t>(asked.size()) < count;
  return {{"assignments", std::move(assignments)},
          {"state", std::move(state)},
          {"exhausted", short_reply && !running},
          {"waiting", short_reply && running},
          {"algorithm", e.algorithm.name},
          {"experiment", exp_name},
          {"trials", n_records},
          {"count", count}};
}

}  // namespace kubetune::katib
