// Registration of the basic searchers (random, grid, sobol) with the core registry.
#include "kubetune/search/random.hpp"
#include "kubetune/search/registration.hpp"

namespace kubetune::search {

void register_basic_searchers() {
  register_searcher("random", &RandomSearch::from_json);
  // grid and sobol: see grid.cpp / sobol.cpp
}

}  // namespace kubetune::search
