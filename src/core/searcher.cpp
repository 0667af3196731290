// Search context helpers and the searcher / pruner registry.
#include "kubetune/core/searcher.hpp"

#include <cmath>
#include <limits>
#include <mutex>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

namespace kubetune {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, SearcherFactory> searchers;
  std::map<std::string, PrunerFactory> pruners;
};
Registry& registry() {
  static Registry r;
  return r;
}
template <class M>
std::string names(const M& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return s.empty() ? "none; call kubetune::register_builtins()" : s;
}
}  // namespace

void register_searcher(const std::string& type, SearcherFactory f) {
  std::lock_guard<std::mutex> lk(registry().mu);
  registry().searchers[type] = std::move(f);
}

void register_pruner(const std::string& type, PrunerFactory f) {
  std::lock_guard<std::mutex> lk(registry().mu);
  registry().pruners[type] = std::move(f);
}

namespace {
/// The factory registered in `factories` under config["type"]; `what` ("searcher", "pruner") names the kind in
/// the errors (a config that is not an object with a string "type"; an unknown type, listing the registered).
template <class Factory>
Factory factory_for(const nlohmann::json& config, const std::map<std::string, Factory>& factories,
                    const char* what) {
  check_json_depth(config, std::string(what) + " config");
  KT_CHECK(config.is_object() && config.contains("type") && config["type"].is_string(), InvalidArgument, what,
           " config must be an object with a string 'type', got ", json_summary(config));
  std::string type = config["type"].get<std::string>();
  std::lock_guard<std::mutex> lk(registry().mu);
  auto it = factories.find(type);
  KT_CHECK(it != factories.end(), NotFound, "unknown ", what, " type '", type, "' (registered: ", names(factories),
           ")");
  return it->second;
}
}  // namespace

std::unique_ptr<Searcher> make_searcher(const nlohmann::json& config) {
  return factory_for(config, registry().searchers, "searcher")(config);
}

std::unique_ptr<Pruner> make_pruner(const nlohmann::json& config) {
  return factory_for(config, registry().pruners, "pruner")(config);
}

std::vector<std::string> registered_searchers() {
  std::lock_guard<std::mutex> lk(registry().mu);
  std::vector<std::string> out;
  for (const auto& [k, v] : registry().searchers) out.push_back(k);
  return out;
}

std::vector<std::string> registered_pruners() {
  std::lock_guard<std::mutex> lk(registry().mu);
  std::vector<std::string> out;
  for (const auto& [k, v] : registry().pruners) out.push_back(k);
  return out;
}

}  // namespace kubetune
