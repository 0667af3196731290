// Registration of this module's searchers/pruners with the core registry (see registration.hpp).
#include "kubetune/search/registration.hpp"

#include "kubetune/search/gp/bayesopt.hpp"

namespace kubetune::search {

void register_gp() {
  register_searcher("gp", &gp::GPSearcher::from_json);
  // Katib's algorithmName for its scikit-optimize GP suggestion service.
  register_searcher("bayesianoptimization", &gp::GPSearcher::from_json);
}

}  // namespace kubetune::search
