// Hyperband: bracket tables (exact, Katib, HpBandSter arithmetic) and the stateless bracket scheduler.
#include "kubetune/search/multifidelity/hyperband.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "kubetune/core/error.hpp"
#include "schedule.hpp"
#include "settings.hpp"

namespace kubetune::search {
namespace {
namespace md = mf_detail;

bool integral(double v) { return std::floor(v) == v && std::fabs(v) < 9.0e15; }

void check_resources(double max_resource, int eta, double min_resource) {
  KT_CHECK(std::isfinite(max_resource) && max_resource > 0, InvalidArgument, "setting 'max_resource' = ",
           max_resource, " must be > 0");
  KT_CHECK(std::isfinite(min_resource) && min_resource > 0, InvalidArgument, "setting 'min_resource' = ",
           min_resource, " must be > 0");
  KT_CHECK(max_resource >= min_resource, InvalidArgument, "setting 'max_resource' = ", max_resource,
           " must be >= min_resource = ", min_resource);
  KT_CHECK(eta >= 2 && eta <= 1000, InvalidArgument, "setting 'eta' = ", eta, " must be an integer in [2, 1000]");
}

std::int64_t ipow(std::int64_t b, int e) {
  std::int64_t r = 1;
  for (int i = 0; i < e; ++i) r *= b;
  return r;
}
}  // namespace

std::string to_string(BracketMode m) {
  switch (m) {
    case BracketMode::Exact: return "exact";
    case BracketMode::Katib: return "katib";
    case BracketMode::HpBandSter: return "hpbandster";
  }
  return "exact";
}

BracketMode bracket_mode_from_string(const std::string& s) {
  if (s == "exact" || s == "paper") return BracketMode::Exact;
  if (s == "katib") return BracketMode::Katib;
  if (s == "hpbandster" || s == "bohb") return BracketMode::HpBandSter;
  KT_THROW(InvalidArgument, "setting 'mode' = '", s, "' must be one of exact, katib, hpbandster");
}

double Bracket::total_resource() const noexcept {
  double t = 0;
  for (const auto& r : rungs) t += static_cast<double>(r.n) * r.resource;
  return t;
}

int hyperband_s_max(double max_resource, int eta, BracketMode mode, double min_resource) {
  check_resources(max_resource, eta, min_resource);
  switch (mode) {
    case BracketMode::Exact: {
      int s = 0;
      if (integral(max_resource) && integral(min_resource)) {
        // Exact integer arithmetic: largest s with min * eta^s <= max.
        auto mx = static_cast<std::int64_t>(max_resource);
        auto p = static_cast<std::int64_t>(min_resource);
        while (p <= mx / eta && p * eta <= mx) {
          p *= eta;
          ++s;
        }
      } else {
        double p = min_resource;
        while (p * eta <= max_resource * (1.0 + 1e-12)) {
          p *= eta;
          ++s;
        }
      }
      return s;
    }
    case BracketMode::Katib:
      // Katib: s_max = int(math.log(r_l) / math.log(eta)) (floating point; 243, 3 -> 4).
      KT_CHECK(min_resource == 1.0, InvalidArgument, "setting 'min_resource' = ", min_resource,
               " must be 1 in mode 'katib' (Katib has no minimum resource)");
      return static_cast<int>(std::log(max_resource) / std::log(static_cast<double>(eta)));
    case BracketMode::HpBandSter:
      // HpBandSter: max_SH_iter = -int(np.log(min_budget / max_budget) / np.log(eta)) + 1.
      return -static_cast<int>(std::log(min_resource / max_resource) / std::log(static_cast<double>(eta)));
  }
  return 0;
}

std::vector<Bracket> hyperband_brackets(double max_resource, int eta, BracketMode mode, double min_resource) {
  const int s_max = hyperband_s_max(max_resource, eta, mode, min_resource);
  const double e = eta;
  std::vector<Bracket> out;
  for (int s = s_max; s >= 0; --s) {
    Bracket b;
    b.s = s;
    switch (mode) {
      case BracketMode::Exact: {
        // n = ceil((s_max + 1) / (s + 1) * eta^s), integer ceiling of a rational.
        const std::int64_t es = ipow(eta, s);
        const std::int64_t n = ((s_max + 1) * es + s) / (s + 1);
        for (int i = 0; i <= s; ++i)
          b.rungs.push_back({n / ipow(eta, i), max_resource / static_cast<double>(ipow(eta, s - i))});
        break;
      }
      case BracketMode::Katib: {
        // Katib service.py: n = int(ceil(float(s_max+1) * (float(eta**s) / float(s+1)))), r = r_l * eta**-s,
        // master rung at int(r); r goes through the algorithm settings as int(float(str(r))), so every child
        // rung uses r_i = int(int(r) * eta**i); top_trials = int(ceil(ceil(n * eta**-i) / eta)).
        const auto n = static_cast<std::int64_t>(std::ceil(double(s_max + 1) * (std::pow(e, s) / double(s + 1))));
        const auto r = static_cast<std::int64_t>(max_resource * std::pow(e, -s));
        b.rungs.push_back({n, static_cast<double>(r)});
        for (int i = 0; i < s; ++i) {
          const double n_i = std::ceil(static_cast<double>(n) * std::pow(e, -i));
          const auto top = static_cast<std::int64_t>(std::ceil(n_i / e));
          const auto r_i = static_cast<std::int64_t>(static_cast<double>(r) * std::pow(e, i + 1));
          b.rungs.push_back({top, static_cast<double>(r_i)});
        }
        break;
      }
      case BracketMode::HpBandSter: {
        // n0 = int(floor(max_SH_iter / (s+1)) * eta**s); ns = max(int(n0 * eta**-i), 1);
        // budgets = max_budget * eta**-linspace(max_SH_iter - 1, 0).
        const int max_sh_iter = s_max + 1;
        const auto n0 = static_cast<std::int64_t>(std::floor(double(max_sh_iter) / double(s + 1)) * std::pow(e, s));
        for (int i = 0; i <= s; ++i) {
          auto ni = static_cast<std::int64_t>(static_cast<double>(n0) * std::pow(e, -i));
          b.rungs.push_back({std::max<std::int64_t>(ni, 1), max_resource * std::pow(e, -double(s - i))});
        }
        break;
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

// ------------------------------------------------------------------------------------------ searcher

namespace mf_detail {
settings::Fields<Hyperband::Config> hyperband_fields(const std::string& what) {
  using C = Hyperband::Config;
  return settings::Fields<C>(what)
      .field<&C::resource_name>("resource_name", "The Int or Double parameter that receives the budget (required).")
      .field<&C::max_resource>("max_resource", "Largest budget R.")
      .alias("r_l")
      .alias("R")
      .field<&C::min_resource>("min_resource", "Smallest budget unit (Hyperband's R is max / min).")
      .field<&C::eta>("eta", "Reduction factor (>= 2).")
      .alias("reduction_factor")
      .choice<&C::mode, &bracket_mode_from_string>(
          "mode", {to_string(BracketMode::Exact), to_string(BracketMode::Katib), to_string(BracketMode::HpBandSter)},
          "Bracket arithmetic: the paper's exact one, or Katib's or HpBandSter's.")
      .alias("rounding")
      .field<&C::n_iterations>("n_iterations", "Outer Hyperband loops (0 = repeat forever).")
      .field<&C::bracket>("bracket", "-1: all brackets; s: successive halving with that bracket only.");
}
}  // namespace mf_detail

namespace {
const settings::Fields<Hyperband::Config>& hyperband_table() {
  static const settings::Fields<Hyperband::Config> t = md::hyperband_fields("hyperband");
  return t;
}
}  // namespace

Hyperband::Config Hyperband::parse_config(const nlohmann::json& j, const std::string& what) {
  if (j.is_object())
    for (const char* k : {"s_max", "b_l", "r", "n", "current_s", "current_i", "evaluating_trials"})
      KT_CHECK(!j.contains(k), InvalidArgument, what, ": Katib state setting '", k,
               "' is not accepted; kubetune recomputes Hyperband's state from the trials");
  return hyperband_table().from_json(j);
}

nlohmann::json Hyperband::settings_schema() { return hyperband_table().schema(); }

Hyperband::Hyperband(Config c) : cfg_(std::move(c)) {
  KT_CHECK(!cfg_.resource_name.empty(), InvalidArgument,
           "hyperband: setting 'resource_name' is required (the Int or Double parameter that receives the budget)");
  KT_CHECK(cfg_.n_iterations >= 0, InvalidArgument, "setting 'n_iterations' = ", cfg_.n_iterations,
           " must be >= 0 (0 = unlimited)");
  table_ = hyperband_brackets(cfg_.max_resource, cfg_.eta, cfg_.mode, cfg_.min_resource);
  if (cfg_.bracket >= 0) {
    const int s_max = table_.front().s;
    KT_CHECK(cfg_.bracket <= s_max, InvalidArgument, "setting 'bracket' = ", cfg_.bracket, " must be in [0, s_max = ",
             s_max, "] or -1");
    Bracket keep = table_[static_cast<std::size_t>(s_max - cfg_.bracket)];
    table_ = {keep};
  }
}

std::unique_ptr<Searcher> Hyperband::from_json(const nlohmann::json& j) {
  KT_CHECK(j.is_object(), InvalidArgument, "hyperband config must be a JSON object, got ", json_summary(j));
  return std::make_unique<Hyperband>(parse_config(j, "hyperband"));
}

nlohmann::json Hyperband::base_config() const { return hyperband_table().to_json(cfg_); }

nlohmann::json Hyperband::config() const {
  nlohmann::json j = base_config();
  j["type"] = type();
  return j;
}

void Hyperband::check_space(const SearchSpace& space) const {
  mf_detail::check_resource_param(space, cfg_.resource_name, type());
  const std::size_t idx = space.index_of(cfg_.resource_name);
  for (const auto& b : table_)
    for (const auto& r : b.rungs) mf_detail::resource_value(space, idx, r.resource, type());
}

std::vector<double> Hyperband::sample_config(const SearchContext& ctx) { return ctx.space.sample(ctx.rng); }

std::vector<Suggestion> Hyperband::ask(const SearchContext& ctx, std::size_t n) {
  std::vector<Suggestion> out;
  if (n == 0) return out;
  const std::size_t ridx = ctx.space.index_of(cfg_.resource_name);
  mf_detail::Scheduler sch(table_, cfg_.n_iterations, ctx.trials, ctx);
  std::vector<mf_detail::Plan> plans = sch.plan(n);
  bool prepared = false;
  mf_detail::SeenConfigs seen(ctx.space, ctx.trials);
  for (const auto& p : plans) {
    Suggestion s;
    const double res = mf_detail::resource_value(ctx.space, ridx, p.resource, type());
    if (p.base_x) {
      s.x = *p.base_x;
      s.x[ridx] = res;
    } else {
      if (!prepared) {
        prepare(ctx);
        prepared = true;
      }
      s.x = seen.draw([&] {
        std::vector<double> x = sample_config(ctx);
        x[ridx] = res;
        ctx.space.apply_conditions(x);
        return x;
      });
    }
    seen.insert(s.x);
    s.attrs = {{"hb_bracket", static_cast<double>(p.bracket)},
               {"hb_s", static_cast<double>(p.s)},
               {"hb_rung", static_cast<double>(p.rung)},
               {"hb_config", static_cast<double>(p.cfg)},
               {"hb_resource", res}};
    out.push_back(std::move(s));
  }
  return out;
}

Hyperband::Progress Hyperband::progress(const SearchSpace& space, const std::vector<Trial>& trials) const {
  std::vector<Direction> dirs{Direction::Minimize};
  Rng rng(0);
  SearchContext ctx{space, trials, dirs, rng};
  mf_detail::Scheduler sch(table_, cfg_.n_iterations, trials, ctx);
  auto st = sch.status();
  Progress p;
  p.brackets_total = cfg_.n_iterations == 0 ? 0 : cfg_.n_iterations * static_cast<std::int64_t>(table_.size());
  p.brackets_started = st.started;
  p.brackets_finished = st.finished;
  p.running = st.running;
  p.ready = st.ready;
  p.finished = p.brackets_total != 0 && st.finished == p.brackets_total;
  p.waiting = !p.finished && st.ready == 0 && p.brackets_total != 0 && st.started == p.brackets_total;
  return p;
}

}  // namespace kubetune::search
