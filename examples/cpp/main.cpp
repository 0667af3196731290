// Minimal C++ use of kubetune: a study with the ask -> evaluate -> tell loop on Branin.
#include <cmath>
#include <iostream>
#include <memory>
#include <numbers>

#include <kubetune/kubetune.hpp>

int main() {
  kubetune::register_builtins();
  kubetune::SearchSpace space;
  space.add_float("x", -5, 10).add_float("y", 0, 15);
  kubetune::Study study(space, kubetune::make_searcher({{"type", "random"}}), {kubetune::Direction::Minimize}, 42);
  for (int i = 0; i < 64; ++i) {
    for (const auto& t : study.ask(1)) {
      double x = t.x[0], y = t.x[1], pi = std::numbers::pi;
      double a = y - 5.1 / (4 * pi * pi) * x * x + 5 / pi * x - 6;
      study.tell(t.id, a * a + 10 * (1 - 1 / (8 * pi)) * std::cos(x) + 10);
    }
  }
  auto best = study.best();
  std::cout << "example: best Branin value after 64 random trials = " << best->values[0] << "\n";
  return best->values[0] < 5.0 ? 0 : 1;
}
