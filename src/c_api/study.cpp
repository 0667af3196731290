// C API over kubetune::Study: JSON in, JSON out, error codes at the edge.
#include <cmath>
#include <memory>

#include "c_api_internal.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/study.hpp"

struct kt_study {
  std::unique_ptr<kubetune::Study> impl;
};

namespace {
using kubetune::Assignment;
using kubetune::InvalidArgument;
using kubetune::Value;
using nlohmann::json;

json parse(const char* text, const char* what) {
  KT_CHECK(text != nullptr, InvalidArgument, what, " must not be NULL");
  return kubetune::parse_user_json(text, what);
}

Assignment to_assignment(const json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "params must be a JSON object, got ", kubetune::json_summary(j));
  Assignment a;
  for (const auto& [k, v] : j.items()) {
    if (v.is_number_integer())
      a.emplace_back(k, Value{kubetune::checked_int<std::int64_t>(v, "parameter '" + k + "'")});
    else if (v.is_number()) a.emplace_back(k, Value{v.get<double>()});
    else if (v.is_string()) a.emplace_back(k, Value{v.get<std::string>()});
    else KT_THROW(InvalidArgument, "parameter '", k, "': unsupported JSON value ", kubetune::json_summary(v));
  }
  return a;
}

json params_json(const kubetune::SearchSpace& s, const std::vector<double>& x) {
  json p = json::object();
  for (const auto& [k, v] : s.to_assignment(x)) {
    if (auto* d = std::get_if<double>(&v)) p[k] = *d;
    else if (auto* i = std::get_if<std::int64_t>(&v)) p[k] = *i;
    else p[k] = std::get<std::string>(v);
  }
  return p;
}

kubetune::Study& get(kt_study* s) {
  KT_CHECK(s != nullptr && s->impl != nullptr, InvalidArgument, "study handle is NULL");
  return *s->impl;
}

template <class T>
void check_out(T* p, const char* name) {
  KT_CHECK(p != nullptr, InvalidArgument, name, " must not be NULL");
}
}  // namespace

extern "C" {

KT_API int kt_study_create(const char* config_json, kt_study** out, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(out, "out");
  *out = nullptr;
  kubetune::register_builtins();
  auto study = kubetune::Study::from_config(parse(config_json, "config_json"));
  *out = new kt_study{std::move(study)};
  KT_API_END(err_out)
}

KT_API void kt_study_free(kt_study* study) { delete study; }

KT_API int kt_study_ask(kt_study* study, int n, char** trials_json, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(trials_json, "trials_json");
  KT_CHECK(n >= 1, InvalidArgument, "n=", n, " must be >= 1");
  auto& s = get(study);
  json arr = json::array();
  for (const auto& t : s.ask(static_cast<std::size_t>(n)))
    arr.push_back({{"id", t.id}, {"params", params_json(s.space(), t.x)}});
  *trials_json = kubetune::capi::dup_string(arr.dump());
  KT_API_END(err_out)
}

KT_API int kt_study_tell(kt_study* study, int64_t trial_id, double value, char** err_out) {
  KT_API_BEGIN(err_out)
  get(study).tell(trial_id, value);
  KT_API_END(err_out)
}

KT_API int kt_study_tell_values(kt_study* study, int64_t trial_id, const double* values, size_t n_values,
                                char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(values != nullptr || n_values == 0, InvalidArgument, "values must not be NULL (n_values = ", n_values,
           ")");
  auto& s = get(study);
  // Checked before copying: n_values comes from the caller and the study wants one per direction.
  KT_CHECK(n_values == s.directions().size(), InvalidArgument, "trial ", trial_id, ": n_values = ", n_values,
           " but the study has ", s.directions().size(), " directions");
  s.tell(trial_id, std::vector<double>(values, values + n_values));
  KT_API_END(err_out)
}

KT_API int kt_study_tell_state(kt_study* study, int64_t trial_id, const char* state, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(state != nullptr, InvalidArgument, "state must not be NULL");
  get(study).tell_state(trial_id, kubetune::trial_state_from_string(state));
  KT_API_END(err_out)
}

KT_API int kt_study_report(kt_study* study, int64_t trial_id, int64_t step, double value, char** err_out) {
  KT_API_BEGIN(err_out)
  // An intermediate value is a measurement (a failed trial is told with NaN instead): pruners rank them.
  KT_CHECK(std::isfinite(value), InvalidArgument, "trial ", trial_id, ": reported value ", value, " at step ", step,
           " must be finite");
  get(study).report(trial_id, step, value);
  KT_API_END(err_out)
}

KT_API int kt_study_should_prune(kt_study* study, int64_t trial_id, int* prune_out, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(prune_out, "prune_out");
  *prune_out = get(study).should_prune(trial_id) ? 1 : 0;
  KT_API_END(err_out)
}

KT_API int kt_study_enqueue(kt_study* study, const char* params_json, int64_t* trial_id_out, char** err_out) {
  KT_API_BEGIN(err_out)
  auto id = get(study).enqueue(to_assignment(parse(params_json, "params_json")));
  if (trial_id_out) *trial_id_out = id;
  KT_API_END(err_out)
}

KT_API int kt_study_best(kt_study* study, char** best_json, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(best_json, "best_json");
  auto& s = get(study);
  auto b = s.best();
  json j = nullptr;
  if (b) j = {{"id", b->id}, {"params", params_json(s.space(), b->x)}, {"value", b->values[0]}};
  *best_json = kubetune::capi::dup_string(j.dump());
  KT_API_END(err_out)
}

KT_API int kt_study_to_json(kt_study* study, char** out, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(out, "json");
  *out = kubetune::capi::dup_string(get(study).to_json().dump());
  KT_API_END(err_out)
}

KT_API int kt_study_n_trials(kt_study* study, int64_t* n_out, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(n_out, "n_out");
  *n_out = static_cast<int64_t>(get(study).n_trials());
  KT_API_END(err_out)
}

KT_API int kt_study_save(kt_study* study, const char* path, char** err_out) {
  KT_API_BEGIN(err_out)
  KT_CHECK(path != nullptr, InvalidArgument, "path must not be NULL");
  get(study).save(path);
  KT_API_END(err_out)
}

KT_API int kt_study_load(const char* path, kt_study** out, char** err_out) {
  KT_API_BEGIN(err_out)
  check_out(out, "out");
  *out = nullptr;
  KT_CHECK(path != nullptr, InvalidArgument, "path must not be NULL");
  kubetune::register_builtins();
  *out = new kt_study{kubetune::Study::load(path)};
  KT_API_END(err_out)
}

}  // extern "C"
