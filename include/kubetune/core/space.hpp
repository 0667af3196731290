// Search space: typed parameters, priors, conditions, unit-cube encoding, JSON and Katib import.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kubetune/core/rng.hpp"

namespace kubetune {

enum class ParamType { Double, Int, Discrete, Categorical };
/// Prior used by random sampling and TPE's prior component (Katib's feasibleSpace.distribution).
enum class Distribution { Uniform, LogUniform, Normal, LogNormal };

/// A parameter is active only when the categorical `parent` takes one of `values`.
struct Condition {
  std::string parent;
  std::vector<std::string> values;
};

/// One parameter. Internal encoding of a value (what searchers see, one double per parameter):
/// Double/Int -> the value itself; Discrete/Categorical -> the index into values/choices; NaN -> inactive.
struct Param {
  std::string name;
  ParamType type = ParamType::Double;
  double low = 0.0, high = 1.0;  // Double/Int bounds (inclusive)
  double step = 0.0;             // Double: 0 = continuous; Int: >= 1
  Distribution distribution = Distribution::Uniform;
  double mu = 0.0, sigma = 0.0;  // Normal/LogNormal prior (in log space for LogNormal)
  std::vector<double> values;         // Discrete: sorted ascending, distinct
  std::vector<std::string> choices;   // Categorical
  std::optional<Condition> condition;

  bool is_log() const noexcept {
    return distribution == Distribution::LogUniform || distribution == Distribution::LogNormal;
  }
  bool is_numeric_range() const noexcept { return type == ParamType::Double || type == ParamType::Int; }
  /// Number of distinct values, 0 for a continuous Double.
  std::uint64_t cardinality() const noexcept;
};

/// An external value as users see it.
using Value = std::variant<double, std::int64_t, std::string>;
/// Ordered (space order) name -> value for the active parameters of one point.
using Assignment = std::vector<std::pair<std::string, Value>>;

std::string to_string(ParamType t);
std::string to_string(Distribution d);
/// The inverse of to_string(Distribution), with the spellings Katib and Optuna use: "uniform", "log_uniform"
/// (also "loguniform", "logUniform"), "normal", "log_normal" (also "lognormal", "logNormal"). Anything else
/// (the empty string too) is InvalidArgument naming the value; a space's JSON and Katib's feasibleSpace read an
/// empty or absent distribution as uniform.
Distribution distribution_from_string(const std::string& s);
std::string value_to_string(const Value& v);

/// Ordered set of parameters. Validates on every addition, with messages that name the parameter.
class SearchSpace {
 public:
  SearchSpace() = default;

  /// Continuous (step == 0) or stepped float parameter on [low, high]; log => log-uniform (low > 0).
  SearchSpace& add_float(const std::string& name, double low, double high, bool log = false, double step = 0.0);
  /// The former name of add_float (Python has always said add_float); kept for one release.
  [[deprecated("use add_float")]] SearchSpace& add_double(const std::string& name, double low, double high,
                                                           bool log = false, double step = 0.0) {
    return add_float(name, low, high, log, step);
  }
  /// Integer parameter on [low, high] with `step` (>= 1); log => log-uniform (low >= 1).
  SearchSpace& add_int(const std::string& name, std::int64_t low, std::int64_t high, bool log = false,
                       std::int64_t step = 1);
  /// Ordered numeric list (Katib "discrete"); values are sorted and must be distinct.
  SearchSpace& add_discrete(const std::string& name, std::vector<double> values);
  /// Unordered list of strings.
  SearchSpace& add_categorical(const std::string& name, std::vector<std::string> choices);
  /// Fully specified parameter (validated).
  SearchSpace& add(Param p);
  /// Normal / LogNormal prior for a Double/Int parameter; sigma <= 0 picks range/6 (mu NaN: midpoint).
  SearchSpace& set_prior(const std::string& name, Distribution d, double mu, double sigma);
  /// Make `name` active only when categorical `parent` (declared earlier) takes one of `values`.
  SearchSpace& set_condition(const std::string& name, const std::string& parent, std::vector<std::string> values);

  std::size_t size() const noexcept { return params_.size(); }
  bool empty() const noexcept { return params_.empty(); }
  const Param& param(std::size_t i) const { return params_.at(i); }
  const std::vector<Param>& params() const noexcept { return params_; }
  /// Index of a parameter; throws NotFound naming it.
  std::size_t index_of(const std::string& name) const;
  bool contains(const std::string& name) const noexcept;
  bool has_conditions() const noexcept;
  /// Index of each parameter's parent, or -1 (same order as params()).
  std::vector<int> parent_indices() const;

  /// Is parameter i active at internal point x (parents already decided in x)?
  bool is_active(std::size_t i, const std::vector<double>& x) const;
  /// Set inactive parameters of x to NaN (in order, so chains of conditions work).
  void apply_conditions(std::vector<double>& x) const;
  /// Checks an internal point: right size, active values legal, inactive ones NaN. Throws InvalidArgument.
  void validate_point(const std::vector<double>& x) const;
  /// Round a value of parameter i onto its legal set (step grid, integers, indices) and clip to bounds.
  double snap(std::size_t i, double v) const;

  /// Internal point -> user assignment (inactive parameters omitted).
  Assignment to_assignment(const std::vector<double>& x) const;
  /// User assignment -> internal point; throws on unknown names, illegal values, missing active ones.
  std::vector<double> from_assignment(const Assignment& a) const;

  /// Map an (active) internal value to [0, 1] (log-scaled where the parameter is log).
  double to_unit(std::size_t i, double v) const;
  /// Inverse of to_unit, snapped to legal values.
  double from_unit(std::size_t i, double u) const;
  std::vector<double> to_unit(const std::vector<double>& x) const;
  std::vector<double> from_unit(const std::vector<double>& u) const;

  /// Draw a point from the priors (uniform / log-uniform / truncated normal / log-normal), honouring conditions.
  std::vector<double> sample(Rng& rng) const;
  /// Draw one value of parameter i from its prior.
  double sample_param(std::size_t i, Rng& rng) const;

  nlohmann::json to_json() const;
  static SearchSpace from_json(const nlohmann::json& j);
  /// Katib experiment `parameters` list: [{name, parameterType, feasibleSpace{min,max,step,list,distribution}}].
  static SearchSpace from_katib(const nlohmann::json& parameters);
  std::string dump() const;  // JSON text

  bool operator==(const SearchSpace& o) const;

 private:
  static void validate(const Param& p);
  std::vector<Param> params_;
};

}  // namespace kubetune
