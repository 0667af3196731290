// Genotype derivation (top-k edges per node by strongest non-zero op) and its text formats.
#include "kubetune/nas/genotype.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "kubetune/core/error.hpp"
#include "kubetune/nas/supernet.hpp"

namespace kubetune::nas {

std::vector<GenotypeEdge> derive_cell(const std::vector<float>& w, int nodes, const std::vector<std::string>& ops,
                                      int k) {
  const int K = static_cast<int>(ops.size());
  KT_CHECK(nodes >= 1, InvalidArgument, "param 'nodes' = ", nodes, " must be >= 1");
  KT_CHECK(k >= 1, InvalidArgument, "param 'k' = ", k, " must be >= 1");
  const int E = nodes * (nodes + 3) / 2;
  KT_CHECK(static_cast<int>(w.size()) == E * K, InvalidArgument, "param 'weights' has ", w.size(),
           " entries, expected edges*ops = ", E, "*", K);
  std::vector<OpKind> kinds;
  for (const auto& o : ops) kinds.push_back(parse_op(o));
  KT_CHECK(std::any_of(kinds.begin(), kinds.end(), [](OpKind o) { return o != OpKind::None; }), InvalidArgument,
           "param 'ops' has no operation besides 'none'");
  std::vector<GenotypeEdge> gene;
  int start = 0;
  for (int i = 0; i < nodes; ++i) {
    const int n_in = 2 + i;
    std::vector<int> best_op(n_in);
    std::vector<float> strength(n_in);
    for (int j = 0; j < n_in; ++j) {
      const float* row = w.data() + static_cast<std::size_t>(start + j) * K;
      int b = -1;
      for (int o = 0; o < K; ++o)
        if (kinds[o] != OpKind::None && (b < 0 || row[o] > row[b])) b = o;
      best_op[j] = b;
      strength[j] = row[b];
    }
    std::vector<int> order(n_in);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return strength[a] > strength[b]; });
    for (int t = 0; t < std::min(k, n_in); ++t) gene.emplace_back(op_name(kinds[best_op[order[t]]]), order[t]);
    start += n_in;
  }
  return gene;
}

Genotype derive_genotype(const std::vector<float>& normal, const std::vector<float>& reduce, int nodes,
                         int multiplier, const std::vector<std::string>& ops, int k) {
  KT_CHECK(multiplier >= 1 && multiplier <= nodes, InvalidArgument, "param 'multiplier' = ", multiplier,
           " must be in [1, ", nodes, "]");
  Genotype g;
  g.edges_per_node = k;
  g.normal = derive_cell(normal, nodes, ops, k);
  g.reduce = derive_cell(reduce, nodes, ops, k);
  for (int i = 2 + nodes - multiplier; i < 2 + nodes; ++i) {
    g.normal_concat.push_back(i);
    g.reduce_concat.push_back(i);
  }
  return g;
}

namespace {
std::string concat_str(const std::vector<int>& c) {
  std::ostringstream os;
  bool contiguous = !c.empty();
  for (std::size_t i = 1; i < c.size(); ++i) contiguous = contiguous && c[i] == c[i - 1] + 1;
  if (contiguous) {
    os << "range(" << c.front() << ", " << c.back() + 1 << ")";
  } else {
    os << '[';
    for (std::size_t i = 0; i < c.size(); ++i) os << (i ? ", " : "") << c[i];
    os << ']';
  }
  return os.str();
}
std::string flat(const std::vector<GenotypeEdge>& es) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < es.size(); ++i) os << (i ? ", " : "") << "('" << es[i].first << "', " << es[i].second << ')';
  os << ']';
  return os.str();
}
std::string nested_katib(const std::vector<GenotypeEdge>& es, int per_node) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < es.size(); ++i) {
    if (i % per_node == 0) os << (i ? "], [" : "[");
    else os << ", ";
    os << "('" << katib_op_name(parse_op(es[i].first)) << "', " << es[i].second << ')';
  }
  if (!es.empty()) os << ']';
  os << ']';
  return os.str();
}
}  // namespace

std::string Genotype::to_darts_string() const {
  return "Genotype(normal=" + flat(normal) + ", normal_concat=" + concat_str(normal_concat) + ", reduce=" +
         flat(reduce) + ", reduce_concat=" + concat_str(reduce_concat) + ")";
}

std::string Genotype::to_katib_string() const {
  return "Genotype(normal=" + nested_katib(normal, edges_per_node) + ", normal_concat=" + concat_str(normal_concat) +
         ", reduce=" + nested_katib(reduce, edges_per_node) + ", reduce_concat=" + concat_str(reduce_concat) + ")";
}

std::string Genotype::to_json() const {
  auto edges = [](const std::vector<GenotypeEdge>& es) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : es) a.push_back({e.first, e.second});
    return a;
  };
  nlohmann::json j{{"normal", edges(normal)}, {"normal_concat", normal_concat}, {"reduce", edges(reduce)},
                   {"reduce_concat", reduce_concat}, {"edges_per_node", edges_per_node}};
  return j.dump();
}

void Genotype::validate() const {
  KT_CHECK(edges_per_node >= 1, InvalidArgument, "genotype: edges_per_node = ", edges_per_node, " must be >= 1");
  for (const auto* cell : {&normal, &reduce}) {
    const char* name = cell == &normal ? "normal" : "reduce";
    KT_CHECK(cell->size() % edges_per_node == 0 && !cell->empty(), InvalidArgument, "genotype: '", name, "' has ",
             cell->size(), " edges, not a positive multiple of ", edges_per_node);
    const int nodes = static_cast<int>(cell->size()) / edges_per_node;
    for (int i = 0; i < nodes; ++i) {
      std::vector<int> seen;
      for (int t = 0; t < edges_per_node; ++t) {
        const auto& e = (*cell)[static_cast<std::size_t>(i) * edges_per_node + t];
        KT_CHECK(parse_op(e.first) != OpKind::None, InvalidArgument, "genotype: '", name, "' node ", i,
                 " uses op 'none'");
        KT_CHECK(e.second >= 0 && e.second < 2 + i, InvalidArgument, "genotype: '", name, "' node ", i,
                 " has input ", e.second, " outside [0, ", 2 + i, ")");
        KT_CHECK(std::find(seen.begin(), seen.end(), e.second) == seen.end(), InvalidArgument, "genotype: '", name,
                 "' node ", i, " uses input ", e.second, " twice");
        seen.push_back(e.second);
      }
    }
    const auto& cc = cell == &normal ? normal_concat : reduce_concat;
    for (int c : cc)
      KT_CHECK(c >= 0 && c < 2 + nodes, InvalidArgument, "genotype: '", name, "_concat' entry ", c, " out of range");
  }
}

}  // namespace kubetune::nas
