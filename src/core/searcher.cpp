// Search context helpers and the searcher / pruner registry.
#include "kubetune/core/searcher.hpp"

#include <cmath>
#include <limits>
#include <mutex>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"

namespace kubetune {

double SearchContext::signed_value(double v) const noexcept {
  if (!directions.empty() && directions[0] == Direction::Maximize) return -v;
  return v;
}

double SearchContext::loss(const Trial& t) const noexcept {
  if (t.values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return signed_value(t.values[0]);
}

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

std::unique_ptr<Searcher> make_searcher(const nlohmann::json& config) {
  check_json_depth(config, "searcher config");
  KT_CHECK(config.is_object() && config.contains("type") && config["type"].is_string(), InvalidArgument,
           "searcher config must be an object with a string 'type', got ", json_summary(config));
  std::string type = config["type"].get<std::string>();
  SearcherFactory f;
  {
    std::lock_guard<std::mutex> lk(registry().mu);
    auto it = registry().searchers.find(type);
    KT_CHECK(it != registry().searchers.end(), NotFound, "unknown searcher type '", type,
             "' (registered: ", names(registry().searchers), ")");
    f = it->second;
  }
  return f(config);
}

std::unique_ptr<Pruner> make_pruner(const nlohmann::json& config) {
  check_json_depth(config, "pruner config");
  KT_CHECK(config.is_object() && config.contains("type") && config["type"].is_string(), InvalidArgument,
           "pruner config must be an object with a string 'type', got ", json_summary(config));
  std::string type = config["type"].get<std::string>();
  PrunerFactory f;
  {
    std::lock_guard<std::mutex> lk(registry().mu);
    auto it = registry().pruners.find(type);
    KT_CHECK(it != registry().pruners.end(), NotFound, "unknown pruner type '", type,
             "' (registered: ", names(registry().pruners), ")");
    f = it->second;
  }
  return f(config);
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
