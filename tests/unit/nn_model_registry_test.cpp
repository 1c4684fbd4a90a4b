// The model registry (nn/model_registry.h): every registered model's options read back what they print, refuse
// what train refuses (NaN, out of range, unknown choices), and default to ModelConfig's values; a layer-stack
// spec builds, sizes and counts the model of its own kind whatever kind the configuration carries.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "core/error.h"
#include "nn/model.h"
#include "nn/model_registry.h"

namespace halogen::nn {
namespace {

TEST(ModelRegistry, NamesAreUniqueAndFound) {
  std::set<std::string> names;
  for (const ModelSpec& spec : model_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(&model_spec(spec.name), &spec);
    EXPECT_FALSE(spec.description.empty()) << spec.name;
    ASSERT_TRUE(spec.build && spec.estimate && spec.parameter_count && spec.summary) << spec.name;
  }
  for (const char* name : {"gcn", "sage", "gin", "appnp", "gat"}) EXPECT_EQ(names.count(name), 1u) << name;
  EXPECT_EQ(model_names().substr(0, 15), "gcn, sage, gin,");
  try {
    model_spec("tgcn", "--model");
    FAIL() << "tgcn is not a static model";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "--model tgcn: not a static model (one of " + model_names() + ")");
  }
}

TEST(ModelRegistry, EmptyNameIsTheLayerStackOfTheKind) {
  ModelConfig config;
  config.kind = ConvKind::gat;
  EXPECT_EQ(model_spec(config).name, "gat");
  config.name = "appnp";
  EXPECT_EQ(model_spec(config).name, "appnp");
}

TEST(ModelRegistry, OptionsReadBackWhatTheyPrint) {
  for (const ModelSpec& spec : model_specs()) {
    const ModelConfig defaults = default_model_config(spec.name);
    EXPECT_EQ(defaults.name, spec.name);
    std::set<std::string> keys;
    for (const ModelOption& option : spec.options) {
      SCOPED_TRACE(spec.name + " --" + option.name);
      EXPECT_TRUE(keys.insert(option.key).second);
      EXPECT_EQ(option.key.find('-'), std::string::npos);
      const OptionValue value = option.get(defaults);
      EXPECT_TRUE(option_in_range(option, value));
      const std::string text = option_text(value);
      const OptionValue back = parse_option(option, text, "test");
      EXPECT_EQ(back, value);
      ModelConfig changed = defaults;
      option.set(changed, back);
      EXPECT_EQ(option.get(changed), value);
    }
  }
}

TEST(ModelRegistry, DefaultsAreModelConfigs) {
  const ModelConfig plain;
  const ModelConfig gat = default_model_config("gat");
  EXPECT_EQ(gat.gat_heads, plain.gat_heads);
  EXPECT_EQ(gat.gat_output_heads, plain.gat_output_heads);
  EXPECT_EQ(gat.attention_dropout, plain.attention_dropout);
  EXPECT_EQ(gat.gat_per_head_dropout, plain.gat_per_head_dropout);
  const ModelConfig appnp = default_model_config("appnp");
  EXPECT_EQ(appnp.appnp_k, plain.appnp_k);
  EXPECT_EQ(appnp.appnp_alpha, plain.appnp_alpha);
  EXPECT_EQ(default_model_config("gin").gin_learn_eps, plain.gin_learn_eps);
}

const ModelOption& find_option(const std::string& model, const std::string& name) {
  for (const ModelOption& option : model_spec(model).options)
    if (option.name == name) return option;
  throw std::runtime_error("no option " + name);
}

TEST(ModelRegistry, RefusesWhatTrainRefuses) {
  const ModelOption& heads = find_option("gat", "heads");
  EXPECT_FALSE(read_option(heads, "0").has_value());
  EXPECT_FALSE(read_option(heads, "1025").has_value());
  EXPECT_FALSE(read_option(heads, "8x").has_value());
  EXPECT_FALSE(read_option(heads, "").has_value());
  EXPECT_EQ(std::get<int64_t>(*read_option(heads, "1024")), 1024);
  const ModelOption& attention = find_option("gat", "attention-dropout");
  EXPECT_FALSE(read_option(attention, "nan").has_value());
  EXPECT_FALSE(read_option(attention, "1").has_value());  // [0, 1)
  EXPECT_FALSE(read_option(attention, "-0.1").has_value());
  EXPECT_EQ(std::get<float>(*read_option(attention, "0.999")), 0.999f);
  const ModelOption& alpha = find_option("appnp", "appnp-alpha");
  EXPECT_EQ(std::get<float>(*read_option(alpha, "1")), 1.0f);  // [0, 1]
  EXPECT_FALSE(read_option(alpha, "inf").has_value());
  const ModelOption& placement = find_option("gat", "gat-dropout");
  EXPECT_FALSE(read_option(placement, "PyG").has_value());
  EXPECT_EQ(std::get<std::string>(*read_option(placement, "pyg")), "pyg");
  const ModelOption& eps = find_option("gin", "gin-eps-learn");
  EXPECT_EQ(std::get<bool>(*read_option(eps, "true")), true);
  EXPECT_FALSE(read_option(eps, "yes").has_value());
  try {
    parse_option(heads, "0", "file.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "file.json: --heads 0: expected an integer in [1, 1024]");
  }
}

TEST(ModelRegistry, FloatTextIsTheShortestThatReadsBack) {
  EXPECT_EQ(option_text(OptionValue{0.1f}), "0.1");
  EXPECT_EQ(option_text(OptionValue{0.6f}), "0.6");
  EXPECT_EQ(option_text(OptionValue{1.0f / 3.0f}), "0.33333334");  // 8 digits: 7 read back another float
  EXPECT_EQ(option_text(OptionValue{int64_t{1} << 20}), "1048576");
  EXPECT_EQ(option_text(OptionValue{false}), "false");
}

TEST(ModelRegistry, LayerStackSpecsUseTheirOwnKind) {
  RankShape shape{/*num_owned=*/100, /*num_halo=*/10, /*nnz=*/600, /*num_send=*/10, /*num_features=*/32,
                  /*num_classes=*/4, /*num_split_rows=*/60};
  for (const char* name : {"gcn", "sage", "gin", "appnp", "gat"}) {
    SCOPED_TRACE(name);
    ModelConfig config = default_model_config(name);
    config.kind = ConvKind::gcn;  // a stale kind: the spec's name decides
    ModelConfig right = config;
    right.kind = parse_conv_kind(name);
    EXPECT_EQ(model_spec(name).parameter_count(config, 32, 4), Model::parameter_count(right, 32, 4));
    EXPECT_EQ(model_spec(name).estimate(config, shape).total(), Model::estimate_breakdown(right, shape).total());
  }
  // The five differ from each other (a spec that ignored its kind would make them equal).
  std::set<int64_t> counts;
  for (const char* name : {"gcn", "sage", "gin", "gat"})
    counts.insert(model_spec(name).parameter_count(default_model_config(name), 32, 4));
  EXPECT_EQ(counts.size(), 4u);
}

// The sparse input path needs at least one nonzero: a rank whose features are all zero takes the dense path,
// which is what a memory estimate (RankShape::sparse_feature_nonzeros == 0) counts for it.
TEST(ModelRegistry, AllZeroFeaturesTakeTheDensePath) {
  EXPECT_FALSE(Model::uses_sparse_input(0, 10, 4));
  EXPECT_TRUE(Model::uses_sparse_input(1, 10, 4));
  EXPECT_TRUE(Model::uses_sparse_input(10, 10, 4));
  EXPECT_FALSE(Model::uses_sparse_input(11, 10, 4));  // above 25%
  EXPECT_FALSE(Model::uses_sparse_input(0, 0, 4));
}

}  // namespace
}  // namespace halogen::nn
