// Katib's NAS operations for DARTS: expansion into op names and the errors naming the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kubetune/core/error.hpp"
#include "kubetune/nas/katib_ops.hpp"

using namespace kubetune::nas;
using Names = std::vector<std::string>;

namespace {

KatibOperation op(const std::string& type, std::vector<std::string> sizes = {}, bool with_param = true) {
  KatibOperation o{type, {}};
  if (with_param) o.parameters.push_back({"filter_size", std::move(sizes)});
  return o;
}

KatibNasConfig config(std::vector<KatibOperation> ops, std::int64_t layers = 3) {
  KatibNasConfig c;
  c.num_layers = layers;
  c.operations = std::move(ops);
  return c;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const kubetune::InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

}  // namespace

TEST(NasKatibOps, ExampleExperimentSearchSpace) {
  // nasConfig.operations of Katib's darts-gpu.yaml
  auto c = config({op("separable_convolution", {"3"}), op("dilated_convolution", {"3", "5"}),
                   op("avg_pooling", {"3"}), op("max_pooling", {"3"}), op("skip_connection", {}, false)});
  EXPECT_EQ(katib_darts_search_space(c),
            (Names{"separable_convolution_3x3", "dilated_convolution_3x3", "dilated_convolution_5x5",
                   "avg_pooling_3x3", "max_pooling_3x3", "skip_connection"}));
  EXPECT_EQ(katib_darts_num_layers(c), 3);
  // skip_connection's parameters are ignored; order is Katib's
  c = config({op("max_pooling", {"3"}), op("skip_connection", {"3"}), op("separable_convolution", {"5", "3"})});
  EXPECT_EQ(katib_darts_search_space(c), (Names{"max_pooling_3x3", "skip_connection", "separable_convolution_5x5",
                                                "separable_convolution_3x3"}));
  EXPECT_EQ(katib_darts_operation_types().size(), 5u);
}

TEST(NasKatibOps, ErrorsNameTheField) {
  struct Case {
    KatibNasConfig config;
    const char* message;
  };
  KatibNasConfig missing;
  missing.present = false;
  KatibOperation first_param_empty{"max_pooling", {{"kernel", {}}, {"filter_size", {"3"}}}};
  const std::vector<Case> cases = {
      {missing, "nas_config is missing"},
      {config({}), "nas_config.operations is empty"},
      {config({op("convolution", {"3"})}), "nas_config.operations[0].operation_type = 'convolution' is not a DARTS"},
      {config({op("none")}), "operation_type = 'none'"},
      {config({op("")}), "nas_config.operations[0].operation_type is empty"},
      {config({op("skip_connection"), op("separable_convolution", {}, false)}),
       "nas_config.operations[1] (separable_convolution) has no parameters"},
      {config({op("max_pooling", {})}), "parameter 'filter_size' has an empty feasible_space.list"},
      {config({first_param_empty}), "parameter 'kernel' has an empty feasible_space.list"},
      {config({op("dilated_convolution", {"3", "7"})}),
       "(dilated_convolution) filter size '7' is not supported: no operation 'dilated_convolution_7x7'"},
      {config({op("avg_pooling", {"5"})}), "filter size '5'"},
      {config({op("max_pooling", {"3"}), op("max_pooling", {"3"})}),
       "nas_config.operations[1] lists operation 'max_pooling_3x3' a second time"},
  };
  for (const auto& c : cases) {
    const std::string m = error_of([&] { katib_darts_search_space(c.config); });
    EXPECT_NE(m.find(c.message), std::string::npos) << m;
  }
  for (std::int64_t n : {0, -1}) {
    const std::string m = error_of([&] { katib_darts_num_layers(config({}, n)); });
    EXPECT_NE(m.find("nas_config.graph_config.num_layers = " + std::to_string(n) + " must be >= 1"),
              std::string::npos)
        << m;
  }
}

TEST(NasKatibOps, DictFormExpansion) {
  std::vector<KatibOperation> ops = {
      {"separable_convolution", {{"filter_size", {"3"}}}},
      {"dilated_convolution", {{"other", {"9"}}, {"filter_size", {"3", "5"}}}},  // only 'filter_size' counts
      {"max_pooling", {{"filter_size", {"3"}}}},
      {"skip_connection", {}},
      {"max_pooling", {{"filter_size", {"3"}}}},  // duplicate dropped
  };
  EXPECT_EQ(katib_operations_to_ops(ops),
            (Names{"none", "separable_convolution_3x3", "dilated_convolution_3x3", "dilated_convolution_5x5",
                   "max_pooling_3x3", "skip_connection"}));
  EXPECT_EQ(katib_operations_to_ops({{"none", {}}, {"skip_connect", {}}}), (Names{"none", "skip_connect"}));
  EXPECT_NE(error_of([] { katib_operations_to_ops({{"fancy_conv", {}}}); }).find("fancy_conv"), std::string::npos);
}

TEST(NasKatibOps, TrialSearchSpace) {
  EXPECT_EQ(katib_trial_ops({"max_pooling_3x3", "skip_connection"}, "x"),
            (Names{"max_pooling_3x3", "skip_connection", "none"}));
  EXPECT_EQ(katib_trial_ops({"none", "sep_conv_3x3"}, "x"), (Names{"none", "sep_conv_3x3"}));
  const Names defaults = katib_trial_ops({}, "x");
  ASSERT_EQ(defaults.size(), 8u);
  EXPECT_EQ(defaults.back(), "none");
  EXPECT_EQ(defaults.front(), "max_pool_3x3");
  EXPECT_EQ(error_of([] { katib_trial_ops({"conv_3x3"}, "argument --search-space"); }),
            "argument --search-space: unknown operation 'conv_3x3'");
  EXPECT_EQ(error_of([] { katib_trial_ops({"skip_connection", "skip_connect"}, "arg"); }),
            "arg lists operation 'skip_connect' twice");
  EXPECT_EQ(error_of([] { katib_trial_ops({"none"}, "arg"); }), "arg needs at least one operation besides 'none'");
}
