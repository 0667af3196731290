// Katib's NAS operations for the DARTS algorithm: expansion of nasConfig.operations into op names and validation.
#include "kubetune/nas/katib_ops.hpp"

#include <algorithm>
#include <limits>

#include "kubetune/core/error.hpp"
#include "kubetune/nas/supernet.hpp"

namespace kubetune::nas {

namespace {

bool known_op(const std::string& name) {
  try {
    parse_op(name);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

const std::vector<std::string>& katib_darts_operation_types() {
  static const std::vector<std::string> types = {"separable_convolution", "dilated_convolution", "avg_pooling",
                                                 "max_pooling", "skip_connection"};
  return types;
}

std::vector<std::string> katib_operation_names(const KatibOperation& op, const std::string& where) {
  const std::string& kind = op.operation_type;
  KT_CHECK(!kind.empty(), InvalidArgument, where, ".operation_type is empty");
  KT_CHECK(contains(katib_darts_operation_types(), kind), InvalidArgument, where, ".operation_type = '", kind,
           "' is not a DARTS operation (known: ", join_names(katib_darts_operation_types()), ")");
  if (kind == "skip_connection") return {kind};  // Katib lists it as is and ignores its parameters
  KT_CHECK(!op.parameters.empty(), InvalidArgument, where, " (", kind,
           ") has no parameters: it needs a 'filter_size' list such as ['3']");
  const KatibParameter& sizes = op.parameters.front();  // Katib reads the first parameter's list as the sizes
  KT_CHECK(!sizes.list.empty(), InvalidArgument, where, " (", kind, ") parameter '", sizes.name,
           "' has an empty feasible_space.list");
  std::vector<std::string> names;
  for (const auto& size : sizes.list) {
    std::string name = kind + "_" + size + "x" + size;
    KT_CHECK(known_op(name), InvalidArgument, where, " (", kind, ") filter size '", size,
             "' is not supported: no operation '", name, "' (separable/dilated convolutions take 3 or 5, poolings 3)");
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::string> katib_darts_search_space(const KatibNasConfig& config) {
  KT_CHECK(config.present, InvalidArgument,
           "experiment.spec.nas_config is missing: algorithm 'darts' needs nasConfig.operations");
  KT_CHECK(!config.operations.empty(), InvalidArgument,
           "nas_config.operations is empty: algorithm 'darts' needs at least one operation");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < config.operations.size(); ++i) {
    const std::string where = "nas_config.operations[" + std::to_string(i) + "]";
    for (auto& name : katib_operation_names(config.operations[i], where)) {
      KT_CHECK(!contains(names, name), InvalidArgument, where, " lists operation '", name, "' a second time");
      names.push_back(std::move(name));
    }
  }
  return names;
}

int katib_darts_num_layers(const KatibNasConfig& config) {
  KT_CHECK(config.num_layers >= 1, InvalidArgument, "nas_config.graph_config.num_layers = ", config.num_layers,
           " must be >= 1");
  KT_CHECK(config.num_layers <= std::numeric_limits<int>::max(), InvalidArgument,
           "nas_config.graph_config.num_layers = ", config.num_layers, " is too large");
  return static_cast<int>(config.num_layers);
}

std::vector<std::string> katib_operations_to_ops(const std::vector<KatibOperation>& operations) {
  std::vector<std::string> ops;
  for (const auto& op : operations) {
    std::vector<std::string> sizes;
    for (const auto& p : op.parameters)
      if (p.name == "filter_size") sizes.insert(sizes.end(), p.list.begin(), p.list.end());
    std::vector<std::string> names;
    if (sizes.empty()) names.push_back(op.operation_type);
    for (const auto& s : sizes) names.push_back(op.operation_type + "_" + s + "x" + s);
    for (auto& n : names) {
      parse_op(n);  // InvalidArgument naming the op when unknown
      if (!contains(ops, n)) ops.push_back(std::move(n));
    }
  }
  if (!contains(ops, "none")) ops.insert(ops.begin(), "none");
  return ops;
}

std::vector<std::string> katib_trial_ops(const std::vector<std::string>& names, const std::string& what) {
  std::vector<std::string> ops;
  if (names.empty()) {
    for (auto& op : darts_ops())
      if (op != "none") ops.push_back(std::move(op));
  } else {
    std::vector<std::string> seen;  // DARTS spelling
    for (const auto& name : names) {
      KT_CHECK(known_op(name), InvalidArgument, what, ": unknown operation '", name, "'");
      std::string canon = op_name(parse_op(name));
      KT_CHECK(!contains(seen, canon), InvalidArgument, what, " lists operation '", name, "' twice");
      seen.push_back(std::move(canon));
    }
    KT_CHECK(!(seen.size() == 1 && seen[0] == "none"), InvalidArgument, what,
             " needs at least one operation besides 'none'");
    ops = names;
    if (contains(seen, "none")) return ops;
  }
  ops.push_back("none");  // Katib's trial adds it last
  return ops;
}

}  // namespace kubetune::nas
