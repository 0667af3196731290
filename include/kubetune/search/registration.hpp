// Per-module registration hooks called by kubetune::register_builtins() (src/registry.cpp).
#pragma once

namespace kubetune::search {

void register_basic_searchers();  // random, grid, sobol            (src/search/basic)
void register_tpe();              // tpe                            (src/search/tpe)
void register_gp();               // gp                             (src/search/gp)
void register_multifidelity();    // hyperband, asha, bohb, median, percentile (src/search/multifidelity)

}  // namespace kubetune::search
