// The module exercise's Python binding (its module's BIND function): kubetune._kubetune.ExerciseRandom() builds
// the searcher through the registry, ready for kt.Study(space, searcher=...).
#include <memory>

#include "bindings.hpp"
#include "kubetune/core/searcher.hpp"

namespace kubetune::python {

void bind_exercise(py::module_& m) {
  m.def(
      "ExerciseRandom",
      []() -> std::shared_ptr<Searcher> { return make_searcher({{"type", "exercise_random"}}); },
      "The module exercise's uniform random searcher (tests/module_exercise).");
}

}  // namespace kubetune::python
