// Registration of this module's searchers/pruners with the core registry (see registration.hpp).
#include "kubetune/search/registration.hpp"

namespace kubetune::search {

void register_gp() {}

}  // namespace kubetune::search
