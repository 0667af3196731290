// libFuzzer target: arbitrary bytes as a study file and as a search space. Bad input must end as a kubetune::Error;
// a crash, hang or sanitizer report is a finding, and so is a study or space whose own to_json() does not load
// back. Run through scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/searcher.hpp"
#include "kubetune/core/space.hpp"
#include "kubetune/core/study.hpp"

namespace {
/// What was accepted once must be accepted again from its own serialisation (Study::save/load's round trip).
template <class F>
void must_reload(F&& reload) {
  try {
    reload();
  } catch (const kubetune::Error&) {
    std::abort();  // accepted, then refused its own to_json()
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool registered = (kubetune::register_builtins(), true);  // the searchers a study file names
  (void)registered;
  nlohmann::json j;
  try {
    j = kubetune::parse_user_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz input");
  } catch (const kubetune::Error&) {
    return 0;
  }
  try {
    auto study = kubetune::Study::from_json(j);
    must_reload([&] { kubetune::Study::from_json(study->to_json()); });
  } catch (const kubetune::Error&) {
  }
  try {
    const auto space = kubetune::SearchSpace::from_json(j);
    must_reload([&] { kubetune::SearchSpace::from_json(space.to_json()); });
  } catch (const kubetune::Error&) {
  }
  return 0;
}
