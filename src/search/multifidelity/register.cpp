// Registration of this module's searchers/pruners with the core registry (see registration.hpp).
#include "kubetune/search/registration.hpp"

#include "kubetune/core/searcher.hpp"
#include "kubetune/search/multifidelity/asha.hpp"
#include "kubetune/search/multifidelity/bohb.hpp"
#include "kubetune/search/multifidelity/hyperband.hpp"
#include "kubetune/search/multifidelity/median_stop.hpp"

namespace kubetune::search {

void register_multifidelity() {
  register_searcher("hyperband", &Hyperband::from_json);
  register_searcher("bohb", &BOHB::from_json);
  register_searcher("asha", &ASHA::from_json);
  register_pruner("asha", &ASHAPruner::from_json);
  register_pruner("hyperband", &HyperbandPruner::from_json);
  register_pruner("median_stop", &MedianStop::from_json);
  register_pruner("medianstop", &MedianStop::from_json);  // Katib's algorithmName
  register_pruner("percentile", &PercentilePruner::from_json);
}

}  // namespace kubetune::search
