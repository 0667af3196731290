// Registration of the TPE searcher ("tpe", and Katib's "multivariate-tpe") with the core registry.
#include "kubetune/search/registration.hpp"

#include <nlohmann/json.hpp>

#include "kubetune/search/tpe.hpp"

namespace kubetune::search {

void register_tpe() {
  register_searcher("tpe", &TPE::from_json);
  // Katib's Optuna-backed algorithm name: the same searcher with a joint density.
  register_searcher("multivariate-tpe", [](const nlohmann::json& j) -> std::unique_ptr<Searcher> {
    nlohmann::json c = j.is_object() ? j : nlohmann::json::object();
    if (!c.contains("multivariate")) c["multivariate"] = true;
    return TPE::from_json(c);
  });
}

}  // namespace kubetune::search
