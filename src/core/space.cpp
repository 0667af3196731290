// SearchSpace: validation, encoding, sampling and JSON / Katib conversion.
#include "kubetune/core/space.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/settings.hpp"

namespace kubetune {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Int parameters live in doubles (the internal encoding) and leave as int64: bounds must be integers that a
// double holds exactly, |v| <= 2^53, so every value of the range converts both ways without loss.
constexpr double kMaxIntBound = 9007199254740992.0;

// A required member of parameter entry `e` (the `what` of messages, e.g. "parameter 'lr'"), InvalidArgument
// naming it when it is missing.
const nlohmann::json& member(const nlohmann::json& e, const char* key, const std::string& what) {
  KT_CHECK(e.is_object(), InvalidArgument, what, ": expected a JSON object, got ", json_summary(e));
  auto it = e.find(key);
  KT_CHECK(it != e.end(), InvalidArgument, what, ": '", key, "' is missing");
  return *it;
}
std::string string_member(const nlohmann::json& e, const char* key, const std::string& what) {
  const nlohmann::json& v = member(e, key, what);
  KT_CHECK(v.is_string(), InvalidArgument, what, ": '", key, "' must be a string, got ", json_summary(v));
  return v.get<std::string>();
}
std::vector<std::string> string_list(const nlohmann::json& v, const std::string& what) {
  KT_CHECK(v.is_array(), InvalidArgument, what, " must be a list of strings, got ", json_summary(v));
  std::vector<std::string> out;
  out.reserve(v.size());
  for (const auto& e : v) {
    KT_CHECK(e.is_string(), InvalidArgument, what, " must be a list of strings, got element ", json_summary(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}
const nlohmann::json& parameter_list(const nlohmann::json& j, const char* what) {
  check_json_depth(j, what);
  const nlohmann::json& arr = j.is_array() ? j : member(j, "parameters", what);
  KT_CHECK(arr.is_array(), InvalidArgument, what, ": 'parameters' must be a list, got ", json_summary(arr));
  return arr;
}

std::int64_t grid_count(double lo, double hi, double step) {
  return static_cast<std::int64_t>(std::floor((hi - lo) / step + 1e-9)) + 1;
}

// Unit-cube bounds of a numeric parameter in its modelling space (log where log; half-step padding when
// discrete so that every legal value owns an equal slice).
void unit_bounds(const Param& p, double& a, double& b) {
  double lo = p.low, hi = p.high;
  if (p.type == ParamType::Int || p.step > 0) {
    double half = (p.type == ParamType::Int ? std::max(p.step, 1.0) : p.step) / 2.0;
    if (p.type == ParamType::Int && p.step <= 1.0) half = 0.5;
    lo -= half;
    hi += half;
  }
  if (p.is_log()) {
    a = std::log(lo);
    b = std::log(hi);
  } else {
    a = lo;
    b = hi;
  }
}

// kubetune's names, Katib's feasibleSpace spellings and its protobuf enum names (api.proto's Distribution).
bool distribution_lookup(const std::string& s, Distribution& out) noexcept {
  if (s == "uniform" || s == "UNIFORM" || s == "DISTRIBUTION_UNSPECIFIED") out = Distribution::Uniform;
  else if (s == "log_uniform" || s == "logUniform" || s == "loguniform" || s == "LOG_UNIFORM") out = Distribution::LogUniform;
  else if (s == "normal" || s == "NORMAL") out = Distribution::Normal;
  else if (s == "log_normal" || s == "logNormal" || s == "lognormal" || s == "LOG_NORMAL") out = Distribution::LogNormal;
  else return false;
  return true;
}

constexpr const char* kDistributionNames = "uniform, log_uniform, normal, log_normal";

// A parameter's "distribution" in a space's JSON or a Katib feasibleSpace: empty (Katib's unset) is uniform.
Distribution parse_distribution(const std::string& s, const std::string& name) {
  Distribution d = Distribution::Uniform;
  if (s.empty() || distribution_lookup(s, d)) return d;
  KT_THROW(InvalidArgument, "parameter '", name, "': unknown distribution '", s, "' (expected ", kDistributionNames,
           ")");
}
}  // namespace

Distribution distribution_from_string(const std::string& s) {
  Distribution d = Distribution::Uniform;
  KT_CHECK(distribution_lookup(s, d), InvalidArgument, "unknown distribution '", s, "' (expected ",
           kDistributionNames, ")");
  return d;
}

std::string to_string(ParamType t) {
  switch (t) {
    case ParamType::Double: return "double";
    case ParamType::Int: return "int";
    case ParamType::Discrete: return "discrete";
    case ParamType::Categorical: return "categorical";
  }
  return "?";
}

std::string to_string(Distribution d) {
  switch (d) {
    case Distribution::Uniform: return "uniform";
    case Distribution::LogUniform: return "log_uniform";
    case Distribution::Normal: return "normal";
    case Distribution::LogNormal: return "log_normal";
  }
  return "?";
}

std::string value_to_string(const Value& v) {
  if (auto* d = std::get_if<double>(&v)) {
    std::ostringstream os;
    os.precision(17);
    os << *d;
    return os.str();
  }
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

std::uint64_t Param::cardinality() const noexcept {
  switch (type) {
    case ParamType::Double: return step > 0 ? static_cast<std::uint64_t>(grid_count(low, high, step)) : 0;
    case ParamType::Int: return static_cast<std::uint64_t>(grid_count(low, high, std::max(step, 1.0)));
    case ParamType::Discrete: return values.size();
    case ParamType::Categorical: return choices.size();
  }
  return 0;
}

void SearchSpace::validate(const Param& p) {
  KT_CHECK(!p.name.empty(), InvalidArgument, "parameter name must not be empty");
  const std::string& n = p.name;
  switch (p.type) {
    case ParamType::Double:
    case ParamType::Int: {
      KT_CHECK(std::isfinite(p.low) && std::isfinite(p.high), InvalidArgument, "parameter '", n,
               "': bounds must be finite (low=", p.low, ", high=", p.high, ")");
      if (p.type == ParamType::Double) {
        KT_CHECK(p.low < p.high, InvalidArgument, "parameter '", n, "': empty or inverted range low=", p.low,
                 " >= high=", p.high);
      } else {
        KT_CHECK(p.low <= p.high, InvalidArgument, "parameter '", n, "': inverted range low=", p.low,
                 " > high=", p.high);
        KT_CHECK(p.low == std::floor(p.low) && p.high == std::floor(p.high), InvalidArgument, "parameter '", n,
                 "': int bounds must be integers (low=", p.low, ", high=", p.high, ")");
        KT_CHECK(std::fabs(p.low) <= kMaxIntBound && std::fabs(p.high) <= kMaxIntBound, InvalidArgument,
                 "parameter '", n, "': int bounds must lie within +-2^53 (low=", p.low, ", high=", p.high, ")");
      }
      KT_CHECK(p.step >= 0 && std::isfinite(p.step), InvalidArgument, "parameter '", n, "': step=", p.step,
               " must be >= 0");
      if (p.type == ParamType::Int) {
        KT_CHECK(p.step >= 1 && p.step == std::floor(p.step), InvalidArgument, "parameter '", n,
                 "': int step=", p.step, " must be an integer >= 1");
      }
      if (p.step > 0 && p.high > p.low) {
        KT_CHECK(p.step <= p.high - p.low, InvalidArgument, "parameter '", n, "': step=", p.step,
                 " is larger than the range [", p.low, ", ", p.high, "]");
        // The grid's size is counted in an int64 (cardinality, snap); beyond 2^53 points a double grid is
        // no longer exact anyway.
        KT_CHECK((p.high - p.low) / p.step <= kMaxIntBound, InvalidArgument, "parameter '", n, "': step=", p.step,
                 " gives more than 2^53 grid points on [", p.low, ", ", p.high, "]");
      }
      if (p.is_log()) {
        KT_CHECK(p.low > 0, InvalidArgument, "parameter '", n, "': log-scale bounds must be > 0 (low=", p.low,
                 ")");
        KT_CHECK(p.type == ParamType::Int ? p.step == 1 : p.step == 0, InvalidArgument, "parameter '", n,
                 "': log scale cannot be combined with step=", p.step);
      }
      if (p.distribution == Distribution::Normal || p.distribution == Distribution::LogNormal) {
        KT_CHECK(p.sigma > 0 && std::isfinite(p.sigma) && std::isfinite(p.mu), InvalidArgument, "parameter '", n,
                 "': prior needs finite mu and sigma > 0 (mu=", p.mu, ", sigma=", p.sigma, ")");
      }
      break;
    }
    case ParamType::Discrete: {
      KT_CHECK(!p.values.empty(), InvalidArgument, "parameter '", n, "': discrete list is empty");
      for (double v : p.values)
        KT_CHECK(std::isfinite(v), InvalidArgument, "parameter '", n, "': discrete value ", v, " is not finite");
      for (std::size_t i = 1; i < p.values.size(); ++i)
        KT_CHECK(p.values[i] > p.values[i - 1], InvalidArgument, "parameter '", n,
                 "': discrete values must be distinct (", p.values[i], " repeated)");
      break;
    }
    case ParamType::Categorical: {
      KT_CHECK(!p.choices.empty(), InvalidArgument, "parameter '", n, "': categorical list is empty");
      std::set<std::string> seen;
      for (const auto& c : p.choices)
        KT_CHECK(seen.insert(c).second, InvalidArgument, "parameter '", n, "': duplicate choice '", c, "'");
      break;
    }
  }
}

SearchSpace& SearchSpace::add(Param p) {
  if (p.type == ParamType::Discrete) std::sort(p.values.begin(), p.values.end());
  if (p.type == ParamType::Int && p.step == 0) p.step = 1;
  validate(p);
  KT_CHECK(!contains(p.name), InvalidArgument, "duplicate parameter name '", p.name, "'");
  if (p.condition) {
    const auto& c = *p.condition;
    KT_CHECK(contains(c.parent), InvalidArgument, "parameter '", p.name, "': condition parent '", c.parent,
             "' must be declared before it");
    const Param& par = params_[index_of(c.parent)];
    KT_CHECK(par.type == ParamType::Categorical, InvalidArgument, "parameter '", p.name, "': condition parent '",
             c.parent, "' must be categorical");
    KT_CHECK(!c.values.empty(), InvalidArgument, "parameter '", p.name, "': condition has no values");
    for (const auto& v : c.values)
      KT_CHECK(std::find(par.choices.begin(), par.choices.end(), v) != par.choices.end(), InvalidArgument,
               "parameter '", p.name, "': condition value '", v, "' is not a choice of '", c.parent, "'");
  }
  params_.push_back(std::move(p));
  return *this;
}

SearchSpace& SearchSpace::add_float(const std::string& name, double low, double high, bool log, double step) {
  Param p;
  p.name = name;
  p.type = ParamType::Double;
  p.low = low;
  p.high = high;
  p.step = step;
  p.distribution = log ? Distribution::LogUniform : Distribution::Uniform;
  return add(std::move(p));
}

SearchSpace& SearchSpace::add_int(const std::string& name, std::int64_t low, std::int64_t high, bool log,
                                  std::int64_t step) {
  Param p;
  p.name = name;
  p.type = ParamType::Int;
  p.low = static_cast<double>(low);
  p.high = static_cast<double>(high);
  p.step = static_cast<double>(step);
  KT_CHECK(step >= 1, InvalidArgument, "parameter '", name, "': int step=", step, " must be >= 1");
  p.distribution = log ? Distribution::LogUniform : Distribution::Uniform;
  return add(std::move(p));
}

SearchSpace& SearchSpace::add_discrete(const std::string& name, std::vector<double> values) {
  Param p;
  p.name = name;
  p.type = ParamType::Discrete;
  p.values = std::move(values);
  return add(std::move(p));
}

SearchSpace& SearchSpace::add_categorical(const std::string& name, std::vector<std::string> choices) {
  Param p;
  p.name = name;
  p.type = ParamType::Categorical;
  p.choices = std::move(choices);
  return add(std::move(p));
}

SearchSpace& SearchSpace::set_prior(const std::string& name, Distribution d, double mu, double sigma) {
  Param& p = params_[index_of(name)];
  KT_CHECK(p.is_numeric_range(), InvalidArgument, "parameter '", name, "': priors apply to double/int only");
  Param q = p;
  q.distribution = d;
  if (d == Distribution::Normal || d == Distribution::LogNormal) {
    bool lg = d == Distribution::LogNormal;
    KT_CHECK(!lg || q.low > 0, InvalidArgument, "parameter '", name, "': log-normal prior needs low > 0 (low=",
             q.low, ")");
    double a = lg ? std::log(q.low) : q.low, b = lg ? std::log(q.high) : q.high;
    q.mu = std::isnan(mu) ? 0.5 * (a + b) : mu;
    q.sigma = sigma > 0 ? sigma : (b - a) / 6.0;  // default: the range spans +-3 sigma
    if (q.sigma <= 0) q.sigma = 1.0;
  }
  if (q.is_log() && q.type == ParamType::Double) q.step = 0;
  validate(q);
  p = q;
  return *this;
}

SearchSpace& SearchSpace::set_condition(const std::string& name, const std::string& parent,
                                        std::vector<std::string> values) {
  std::size_t i = index_of(name);
  KT_CHECK(contains(parent), NotFound, "condition parent '", parent, "' not found");
  std::size_t pi = index_of(parent);
  KT_CHECK(pi < i, InvalidArgument, "parameter '", name, "': condition parent '", parent,
           "' must be declared before it");
  const Param& par = params_[pi];
  KT_CHECK(par.type == ParamType::Categorical, InvalidArgument, "parameter '", name, "': condition parent '",
           parent, "' must be categorical");
  KT_CHECK(!values.empty(), InvalidArgument, "parameter '", name, "': condition has no values");
  for (const auto& v : values)
    KT_CHECK(std::find(par.choices.begin(), par.choices.end(), v) != par.choices.end(), InvalidArgument,
             "parameter '", name, "': condition value '", v, "' is not a choice of '", parent, "'");
  params_[i].condition = Condition{parent, std::move(values)};
  return *this;
}

std::size_t SearchSpace::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return i;
  KT_THROW(NotFound, "unknown parameter '", name, "'");
}

bool SearchSpace::contains(const std::string& name) const noexcept {
  for (const auto& p : params_)
    if (p.name == name) return true;
  return false;
}

bool SearchSpace::has_conditions() const noexcept {
  for (const auto& p : params_)
    if (p.condition) return true;
  return false;
}

std::vector<int> SearchSpace::parent_indices() const {
  std::vector<int> out(params_.size(), -1);
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].condition) out[i] = static_cast<int>(index_of(params_[i].condition->parent));
  return out;
}

bool SearchSpace::is_active(std::size_t i, const std::vector<double>& x) const {
  const Param& p = params_.at(i);
  if (!p.condition) return true;
  std::size_t pi = index_of(p.condition->parent);
  if (!is_active(pi, x)) return false;
  double v = x.at(pi);
  if (std::isnan(v)) return false;
  const auto& choice = params_[pi].choices.at(static_cast<std::size_t>(v));
  return std::find(p.condition->values.begin(), p.condition->values.end(), choice) != p.condition->values.end();
}

void SearchSpace::apply_conditions(std::vector<double>& x) const {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].condition && !is_active(i, x)) x[i] = kNaN;
}

double SearchSpace::snap(std::size_t i, double v) const {
  const Param& p = params_.at(i);
  if (std::isnan(v)) return v;
  switch (p.type) {
    case ParamType::Double:
      if (p.step > 0) {
        double k = std::round((v - p.low) / p.step);
        k = std::clamp(k, 0.0, static_cast<double>(grid_count(p.low, p.high, p.step) - 1));
        return p.low + k * p.step;
      }
      return std::clamp(v, p.low, p.high);
    case ParamType::Int: {
      double k = std::round((v - p.low) / p.step);
      k = std::clamp(k, 0.0, static_cast<double>(grid_count(p.low, p.high, p.step) - 1));
      return p.low + k * p.step;
    }
    case ParamType::Discrete:
    case ParamType::Categorical: {
      double n = static_cast<double>(p.type == ParamType::Discrete ? p.values.size() : p.choices.size());
      return std::clamp(std::round(v), 0.0, n - 1);
    }
  }
  return v;
}

void SearchSpace::validate_point(const std::vector<double>& x) const {
  KT_CHECK(x.size() == params_.size(), InvalidArgument, "point has ", x.size(), " values, space has ",
           params_.size(), " parameters");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    bool active = is_active(i, x);
    if (!active) {
      KT_CHECK(std::isnan(x[i]), InvalidArgument, "parameter '", p.name, "' is inactive but has a value");
      continue;
    }
    KT_CHECK(!std::isnan(x[i]), InvalidArgument, "parameter '", p.name, "' is active but has no value");
    double s = snap(i, x[i]);
    bool in = p.type == ParamType::Double && p.step == 0 ? (x[i] >= p.low && x[i] <= p.high)
                                                          : std::abs(s - x[i]) <= 1e-9 * (1 + std::abs(s));
    KT_CHECK(in, InvalidArgument, "parameter '", p.name, "': value ", x[i], " is not legal");
  }
}

Assignment SearchSpace::to_assignment(const std::vector<double>& x) const {
  KT_CHECK(x.size() == params_.size(), InvalidArgument, "point has ", x.size(), " values, space has ",
           params_.size(), " parameters");
  Assignment a;
  a.reserve(x.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (std::isnan(x[i])) continue;
    const Param& p = params_[i];
    switch (p.type) {
      case ParamType::Double: a.emplace_back(p.name, Value{x[i]}); break;
      case ParamType::Int: a.emplace_back(p.name, Value{static_cast<std::int64_t>(std::llround(x[i]))}); break;
      case ParamType::Discrete: a.emplace_back(p.name, Value{p.values.at(static_cast<std::size_t>(x[i]))}); break;
      case ParamType::Categorical: a.emplace_back(p.name, Value{p.choices.at(static_cast<std::size_t>(x[i]))}); break;
    }
  }
  return a;
}

std::vector<double> SearchSpace::from_assignment(const Assignment& a) const {
  std::vector<double> x(params_.size(), kNaN);
  std::vector<bool> given(params_.size(), false);
  for (const auto& entry : a) {
    // Plain references, not a structured binding: clang < 16 cannot capture bindings in the lambda below.
    const std::string& name = entry.first;
    const Value& value = entry.second;
    KT_CHECK(contains(name), InvalidArgument, "unknown parameter '", name, "' in assignment");
    std::size_t i = index_of(name);
    KT_CHECK(!given[i], InvalidArgument, "parameter '", name, "' given twice");
    given[i] = true;
    const Param& p = params_[i];
    auto numeric = [&]() -> double {
      if (auto* d = std::get_if<double>(&value)) return *d;
      if (auto* n = std::get_if<std::int64_t>(&value)) return static_cast<double>(*n);
      KT_THROW(InvalidArgument, "parameter '", name, "': expected a number, got '", std::get<std::string>(value),
               "'");
    };
    switch (p.type) {
      case ParamType::Double:
      case ParamType::Int: {
        double v = numeric();
        KT_CHECK(std::isfinite(v) && v >= p.low && v <= p.high, InvalidArgument, "parameter '", name, "': value ",
                 v, " outside [", p.low, ", ", p.high, "]");
        double s = snap(i, v);
        bool ok = p.type == ParamType::Double && p.step == 0 ? true : std::abs(s - v) <= 1e-9 * (1 + std::abs(v));
        KT_CHECK(ok, InvalidArgument, "parameter '", name, "': value ", v, " is not on its ",
                 p.type == ParamType::Int ? "integer" : "step", " grid");
        x[i] = p.type == ParamType::Double && p.step == 0 ? v : s;
        break;
      }
      case ParamType::Discrete: {
        double v = numeric();
        auto it = std::find_if(p.values.begin(), p.values.end(),
                               [&](double w) { return std::abs(w - v) <= 1e-12 * (1 + std::abs(w)); });
        KT_CHECK(it != p.values.end(), InvalidArgument, "parameter '", name, "': value ", v,
                 " is not in its discrete list");
        x[i] = static_cast<double>(it - p.values.begin());
        break;
      }
      case ParamType::Categorical: {
        const std::string* s = std::get_if<std::string>(&value);
        KT_CHECK(s != nullptr, InvalidArgument, "parameter '", name, "': expected a string choice, got ",
                 value_to_string(value));
        auto it = std::find(p.choices.begin(), p.choices.end(), *s);
        KT_CHECK(it != p.choices.end(), InvalidArgument, "parameter '", name, "': '", *s, "' is not a choice");
        x[i] = static_cast<double>(it - p.choices.begin());
        break;
      }
    }
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    bool active = is_active(i, x);
    if (active) {
      KT_CHECK(given[i], InvalidArgument, "parameter '", params_[i].name, "' is missing from the assignment");
    } else if (given[i]) {
      KT_THROW(InvalidArgument, "parameter '", params_[i].name, "' is inactive under its condition but was given");
    }
  }
  return x;
}

double SearchSpace::to_unit(std::size_t i, double v) const {
  const Param& p = params_.at(i);
  if (std::isnan(v)) return v;
  if (p.type == ParamType::Discrete || p.type == ParamType::Categorical) {
    double n = static_cast<double>(p.cardinality());
    return (v + 0.5) / n;
  }
  double a, b;
  unit_bounds(p, a, b);
  double t = p.is_log() ? std::log(v) : v;
  return std::clamp((t - a) / (b - a), 0.0, 1.0);
}

double SearchSpace::from_unit(std::size_t i, double u) const {
  const Param& p = params_.at(i);
  if (std::isnan(u)) return u;
  u = std::clamp(u, 0.0, 1.0);
  if (p.type == ParamType::Discrete || p.type == ParamType::Categorical) {
    double n = static_cast<double>(p.cardinality());
    return std::min(std::floor(u * n), n - 1);
  }
  double a, b;
  unit_bounds(p, a, b);
  double t = a + u * (b - a);
  double v = p.is_log() ? std::exp(t) : t;
  return snap(i, v);
}

std::vector<double> SearchSpace::to_unit(const std::vector<double>& x) const {
  std::vector<double> u(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) u[i] = to_unit(i, x[i]);
  return u;
}

std::vector<double> SearchSpace::from_unit(const std::vector<double>& u) const {
  KT_CHECK(u.size() == params_.size(), InvalidArgument, "unit point has ", u.size(), " values, space has ",
           params_.size());
  std::vector<double> x(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) x[i] = from_unit(i, u[i]);
  apply_conditions(x);
  return x;
}

double SearchSpace::sample_param(std::size_t i, Rng& rng) const {
  const Param& p = params_.at(i);
  switch (p.type) {
    case ParamType::Discrete: return static_cast<double>(rng.below(p.values.size()));
    case ParamType::Categorical: return static_cast<double>(rng.below(p.choices.size()));
    default: break;
  }
  switch (p.distribution) {
    case Distribution::Uniform:
      if (p.type == ParamType::Int || p.step > 0)
        return p.low + p.step * static_cast<double>(rng.below(p.cardinality()));
      return std::min(rng.uniform(p.low, p.high), p.high);
    case Distribution::LogUniform: {
      double a, b;
      unit_bounds(p, a, b);
      return snap(i, std::exp(rng.uniform(a, b)));
    }
    case Distribution::Normal:
    case Distribution::LogNormal: {
      bool lg = p.distribution == Distribution::LogNormal;
      double a = lg ? std::log(p.low) : p.low, b = lg ? std::log(p.high) : p.high;
      // Truncated to the bounds by rejection; a far-off prior falls back to uniform after 64 tries.
      double t = rng.uniform(a, b);
      for (int k = 0; k < 64; ++k) {
        double z = p.mu + p.sigma * rng.normal();
        if (z >= a && z <= b) {
          t = z;
          break;
        }
      }
      return snap(i, lg ? std::exp(t) : t);
    }
  }
  return p.low;
}

std::vector<double> SearchSpace::sample(Rng& rng) const {
  std::vector<double> x(params_.size(), kNaN);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    // Always draw, so an inactive parameter does not shift the stream of the ones after it.
    double v = sample_param(i, rng);
    if (is_active(i, x)) x[i] = v;
  }
  return x;
}

nlohmann::json SearchSpace::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& p : params_) {
    nlohmann::json j;
    j["name"] = p.name;
    j["type"] = to_string(p.type);
    if (p.is_numeric_range()) {
      j["low"] = p.low;
      j["high"] = p.high;
      j["step"] = p.step;
      j["distribution"] = to_string(p.distribution);
      if (p.distribution == Distribution::Normal || p.distribution == Distribution::LogNormal) {
        j["mu"] = p.mu;
        j["sigma"] = p.sigma;
      }
    } else if (p.type == ParamType::Discrete) {
      j["values"] = p.values;
    } else {
      j["choices"] = p.choices;
    }
    if (p.condition) j["condition"] = {{"parent", p.condition->parent}, {"values", p.condition->values}};
    arr.push_back(std::move(j));
  }
  return {{"parameters", arr}};
}

SearchSpace SearchSpace::from_json(const nlohmann::json& j) {
  const nlohmann::json& arr = parameter_list(j, "search space JSON");
  SearchSpace s;
  for (std::size_t k = 0; k < arr.size(); ++k) {
    const nlohmann::json& e = arr[k];
    Param p;
    p.name = string_member(e, "name", "search space JSON: parameter " + std::to_string(k));
    const std::string what = "parameter '" + p.name + "'";
    std::string t = string_member(e, "type", what);
    if (t == "double" || t == "float") p.type = ParamType::Double;
    else if (t == "int") p.type = ParamType::Int;
    else if (t == "discrete") p.type = ParamType::Discrete;
    else if (t == "categorical") p.type = ParamType::Categorical;
    else KT_THROW(InvalidArgument, what, ": unknown type '", t, "'");
    if (p.is_numeric_range()) {
      p.low = settings::parse_number(member(e, "low", what), p.name + ".low");
      p.high = settings::parse_number(member(e, "high", what), p.name + ".high");
      p.step = e.contains("step") ? settings::parse_number(e["step"], p.name + ".step") : 0.0;
      const auto dist = e.find("distribution");
      if (dist != e.end()) {
        KT_CHECK(dist->is_string(), InvalidArgument, what, ": 'distribution' must be a string, got ",
                 json_summary(*dist));
        p.distribution = parse_distribution(dist->get<std::string>(), p.name);
      }
      if (e.contains("mu")) p.mu = settings::parse_number(e["mu"], p.name + ".mu");
      if (e.contains("sigma")) p.sigma = settings::parse_number(e["sigma"], p.name + ".sigma");
    } else if (p.type == ParamType::Discrete) {
      const nlohmann::json& vals = member(e, "values", what);
      KT_CHECK(vals.is_array(), InvalidArgument, what, ": 'values' must be a list, got ", json_summary(vals));
      for (const auto& v : vals) p.values.push_back(settings::parse_number(v, p.name + ".values"));
    } else {
      p.choices = string_list(member(e, "choices", what), what + ": 'choices'");
    }
    if (e.contains("condition") && !e["condition"].is_null()) {
      const std::string cw = what + ": 'condition'";
      p.condition = Condition{string_member(e["condition"], "parent", cw),
                              string_list(member(e["condition"], "values", cw), cw + " values")};
    }
    s.add(std::move(p));
  }
  return s;
}

SearchSpace SearchSpace::from_katib(const nlohmann::json& parameters) {
  const nlohmann::json& arr = parameter_list(parameters, "Katib parameters");
  SearchSpace s;
  for (std::size_t k = 0; k < arr.size(); ++k) {
    const nlohmann::json& e = arr[k];
    std::string name = string_member(e, "name", "Katib parameter " + std::to_string(k));
    const std::string what = "parameter '" + name + "'";
    std::string type = string_member(e, "parameterType", what);
    const auto& fs = member(e, "feasibleSpace", what);
    std::string dist = fs.contains("distribution") ? string_member(fs, "distribution", what + " feasibleSpace")
                                                   : std::string();
    if (type == "double" || type == "int") {
      Param p;
      p.name = name;
      p.type = type == "double" ? ParamType::Double : ParamType::Int;
      KT_CHECK(fs.contains("min") && fs.contains("max"), InvalidArgument, "parameter '", name,
               "': feasibleSpace needs min and max");
      p.low = settings::parse_number(fs["min"], name + ".min");
      p.high = settings::parse_number(fs["max"], name + ".max");
      if (fs.contains("step") && !(fs["step"].is_string() && fs["step"].get<std::string>().empty()))
        p.step = settings::parse_number(fs["step"], name + ".step");
      if (p.type == ParamType::Int && p.step == 0) p.step = 1;
      Distribution d = parse_distribution(dist, name);
      if (d == Distribution::LogUniform || d == Distribution::LogNormal) {
        // A log prior has no step grid in kubetune; Katib's step then only matters for grid search.
        if (p.type == ParamType::Double) p.step = 0;
        else p.step = 1;
      }
      p.distribution = Distribution::Uniform;
      s.add(p);
      if (d != Distribution::Uniform) {
        if (d == Distribution::LogUniform) {
          Param& q = s.params_.back();
          q.distribution = Distribution::LogUniform;
          try {
            validate(q);
          } catch (...) {
            s.params_.pop_back();
            throw;
          }
        } else {
          s.set_prior(name, d, std::numeric_limits<double>::quiet_NaN(), 0.0);
        }
      }
    } else if (type == "discrete") {
      std::vector<double> vals;
      for (const auto& v : member(fs, "list", what)) vals.push_back(settings::parse_number(v, name + ".list"));
      s.add_discrete(name, vals);
    } else if (type == "categorical") {
      std::vector<std::string> ch;
      for (const auto& v : member(fs, "list", what)) ch.push_back(v.is_string() ? v.get<std::string>() : v.dump());
      s.add_categorical(name, ch);
    } else {
      KT_THROW(InvalidArgument, "parameter '", name, "': unknown Katib parameterType '", type, "'");
    }
  }
  return s;
}

std::string SearchSpace::dump() const { return to_json().dump(); }

bool SearchSpace::operator==(const SearchSpace& o) const { return to_json() == o.to_json(); }

}  // namespace kubetune
