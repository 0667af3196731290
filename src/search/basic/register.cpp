// Registration of the basic searchers (random, grid, sobol) with the core registry.
#include "kubetune/search/grid.hpp"
#include "kubetune/search/random.hpp"
#include "kubetune/search/registration.hpp"
#include "kubetune/search/sobol.hpp"

namespace kubetune::search {

void register_basic_searchers() {
  register_searcher("random", &RandomSearch::from_json);
  register_searcher("grid", &GridSearch::from_json);
  register_searcher("sobol", &Sobol::from_json);
}

}  // namespace kubetune::search
