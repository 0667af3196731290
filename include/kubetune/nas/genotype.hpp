// Discrete architecture derived from DARTS' alphas, printed in DARTS' and Katib's genotype formats.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kubetune::nas {

/// One chosen edge: (DARTS op name, index of the input state; 0/1 = the two cell inputs).
using GenotypeEdge = std::pair<std::string, int>;

/// DARTS Genotype(normal, normal_concat, reduce, reduce_concat). Edges are grouped by node: node i has
/// `k` edges (default 2), stored consecutively, strongest first.
struct Genotype {
  std::vector<GenotypeEdge> normal, reduce;
  std::vector<int> normal_concat, reduce_concat;
  int edges_per_node = 2;

  /// "Genotype(normal=[('sep_conv_3x3', 0), ...], normal_concat=range(2, 6), reduce=[...], reduce_concat=range(2, 6))"
  std::string to_darts_string() const;
  /// Katib's trial output: per-node nested lists with Katib op names, e.g.
  /// "Genotype(normal=[[('separable_convolution_3x3', 0), ('skip_connection', 1)], ...], normal_concat=range(2, 6), ...)"
  std::string to_katib_string() const;
  /// JSON object {"normal": [[op, input], ...], "normal_concat": [...], "reduce": ..., "reduce_concat": ...}.
  std::string to_json() const;
  /// Throws InvalidArgument when an edge refers to a state that does not precede its node, an op is
  /// unknown or 'none', or a node has duplicate inputs.
  void validate() const;
};

/// Genotype of a cell from its alpha (softmax or raw logits, [edges x ops], row-major, edges ordered
/// node by node as in DARTS). For each node keep the `k` incoming edges whose strongest non-'none' op
/// weight is largest, each with that op (DARTS' model_search.py genotype()).
std::vector<GenotypeEdge> derive_cell(const std::vector<float>& weights, int nodes, const std::vector<std::string>& ops,
                                      int k = 2);
/// Both cells; concat = the last `multiplier` nodes.
Genotype derive_genotype(const std::vector<float>& normal, const std::vector<float>& reduce, int nodes,
                         int multiplier, const std::vector<std::string>& ops, int k = 2);

}  // namespace kubetune::nas
