// Katib's NAS operations (nasConfig.operations / graphConfig) for the DARTS algorithm: parsing and validation in
// one place. kubetune.katib.darts (the suggestion side), kubetune.katib.darts_trial (the trial's --search-space)
// and kubetune.nas.katib_operations_to_ops (dict form) only convert their inputs to these types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kubetune::nas {

/// One parameter of a Katib operation: its name and feasibleSpace.list.
struct KatibParameter {
  std::string name;
  std::vector<std::string> list;
};

/// One entry of nasConfig.operations: operationType and its parameterSpecs.parameters.
struct KatibOperation {
  std::string operation_type;
  std::vector<KatibParameter> parameters;
};

/// nasConfig as the DARTS algorithm reads it. `present` is false when the Experiment has no nasConfig.
struct KatibNasConfig {
  bool present = true;
  std::int64_t num_layers = 0;  ///< graphConfig.numLayers
  std::vector<KatibOperation> operations;
};

/// operationType values a DARTS trial builds (the ops of Katib's DARTS trial image), in Katib's order:
/// separable_convolution, dilated_convolution, avg_pooling, max_pooling, skip_connection.
const std::vector<std::string>& katib_darts_operation_types();

/// The op names of one operation as Katib's DARTS service expands it: `<type>_<k>x<k>` for every size of the
/// FIRST parameter's list (Katib reads that list as the filter sizes whatever its name); skip_connection as is,
/// its parameters ignored. `where` (e.g. "nas_config.operations[2]") starts every error: empty or unknown
/// operation_type, no parameters, an empty list, a filter size no DARTS op has (InvalidArgument).
std::vector<std::string> katib_operation_names(const KatibOperation& op, const std::string& where);

/// The search space of a DARTS Experiment: every operation's names in order. InvalidArgument when nasConfig is
/// missing, has no operations, an operation is invalid (katib_operation_names) or an op is listed twice.
std::vector<std::string> katib_darts_search_space(const KatibNasConfig& config);

/// graphConfig.numLayers, checked (>= 1; InvalidArgument naming nas_config.graph_config.num_layers).
int katib_darts_num_layers(const KatibNasConfig& config);

/// kubetune.nas.katib_operations_to_ops: op names from operations in the dict form (every parameter named
/// 'filter_size' contributes its sizes; without sizes the type itself is the name), duplicates dropped, 'none'
/// first unless present. InvalidArgument naming an unknown op.
std::vector<std::string> katib_operations_to_ops(const std::vector<KatibOperation>& operations);

/// The ops of a DARTS trial from Katib's search-space assignment (op names, DARTS or Katib spelling): `names` as
/// given, with 'none' appended unless listed (Katib's trial adds it last); empty `names` means DARTS' seven ops.
/// `what` (e.g. "argument --search-space") starts the errors: unknown op, an op listed twice (in either
/// spelling), nothing but 'none'.
std::vector<std::string> katib_trial_ops(const std::vector<std::string>& names, const std::string& what);

}  // namespace kubetune::nas
