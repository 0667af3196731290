// Checks the module exercise's minimal tree (core + exercise): its searcher is registered through its REGISTER
// function, works in a study, and comes back from the registry when a saved study is reloaded; the modules this
// tree leaves out are not registered. Exit status 0 when every check passes.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <kubetune/kubetune.hpp>

#ifndef KT_HAVE_EXERCISE
#error "KT_HAVE_EXERCISE is not defined: the exercise module is not in this build"
#endif
#ifdef KT_HAVE_TPE
#error "KT_HAVE_TPE is defined: this tree must hold core and the exercise module only"
#endif

namespace {
int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}
}  // namespace

int main() {
  namespace kt = kubetune;
  kt::register_builtins();
  const std::vector<std::string> names = kt::registered_searchers();
  auto known = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  check(known("exercise_random"), "registry knows exercise_random");
  check(!known("tpe") && !known("random"), "registry holds no searcher of a module left out (tpe, random)");

  auto searcher = kt::make_searcher({{"type", "exercise_random"}});
  check(searcher->type() == "exercise_random", "make_searcher builds exercise_random");
  check(searcher->config() == nlohmann::json{{"type", "exercise_random"}}, "its config names its type");
  try {
    kt::make_searcher({{"type", "exercise_random"}, {"n_startup", 3}});
    check(false, "an unknown setting is refused");
  } catch (const kt::InvalidArgument& e) {
    check(std::string(e.what()).find("unknown setting 'n_startup'") != std::string::npos,
          std::string("an unknown setting is refused: ") + e.what());
  }

  kt::SearchSpace space;
  space.add_float("x", -5, 10).add_int("n", 1, 8);
  kt::Study study(space, std::move(searcher), {kt::Direction::Minimize}, 7);
  bool in_range = true;
  for (const auto& t : study.ask(16)) {
    in_range = in_range && t.x[0] >= -5 && t.x[0] <= 10 && t.x[1] >= 1 && t.x[1] <= 8 && t.x[1] == double(int(t.x[1]));
    study.tell(t.id, t.x[0] * t.x[0] + t.x[1]);
  }
  check(in_range, "16 trials, every point inside the space");
  check(study.n_trials() == 16 && study.best().has_value(), "the study records them");

  // A saved study names its searcher by type; loading it goes through the registry again.
  auto reloaded = kt::Study::from_json(study.to_json());
  check(reloaded->searcher_config() == nlohmann::json{{"type", "exercise_random"}}, "reloaded study has exercise_random");
  auto a = study.ask(4);
  auto b = reloaded->ask(4);
  bool same = a.size() == 4 && b.size() == 4;
  for (std::size_t i = 0; same && i < 4; ++i) same = a[i].x == b[i].x;
  check(same, "reloaded study continues with the same points");
  std::printf("%s\n", failures ? "module exercise FAILED" : "module exercise OK");
  return failures ? 1 : 0;
}
