// GraphConv under --precision bf16 with its Â X kept in BF16 for the backward (GraphConv::set_bf16_aggregate),
// against the same layer keeping Â X in FP32, on one rank with more owned rows than GraphConv::kWidenRows (so
// the weight gradient is widened in two whole blocks and a partial one):
// - the forward is bit for bit the FP32-kept layer's (it multiplies W with the FP32 Â X), and so is the input
//   gradient (which does not read Â X);
// - GCN and SAGE: grad W equals a double reference sum_r bf16(Â X)[r, i] grad_z[r, j], with Â X from the
//   adjacency's own product. The reference with the unrounded Â X is far outside the tolerance, so the
//   rounding is in effect and a block widened from the wrong rows would fail;
// - GIN (learned eps): grad W within BF16 rounding of the FP32-kept layer's, every other gradient bit for bit.
// - An evaluation forward (LayerContext::keep_for_backward false) leaves the kept copy alone.
// - A layer with a BF16 input and output (set_bf16_input, set_bf16_output) agrees with the same layer reading
//   and writing FP32 to summation order.
// - Whole models (GCN, SAGE, GIN with learned eps; 2 and 3 layers; also over three blocks of rows, with the hidden
//   outputs kept in BF16): one training step's gradients under bf16 within BF16 rounding of FP32's. With 2 layers the last transforms first and needs less backward scratch than
//   layer 0 widens into, so this fails if the plan does not reserve the widening rows (Model::workspace_plan):
//   the widened block would overwrite dLoss/dZ_0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "comm/halo_exchange.h"
#include "comm/self_comm.h"
#include "core/bf16.h"
#include "core/rng.h"
#include "graph/local_graph.h"
#include "nn/graph_conv.h"
#include "nn/model.h"
#include "nn/model_registry.h"
#include "train/synthetic_graph.h"

namespace halogen::nn {
namespace {

constexpr int64_t kRows = 2 * GraphConv::kWidenRows + 123;
constexpr int64_t kIn = 12, kOut = 16, kGinHidden = 16;

graph::Normalization normalization_of(ConvKind kind) {
  return kind == ConvKind::sage ? graph::Normalization::mean
                                : kind == ConvKind::gin ? graph::Normalization::sum : graph::Normalization::gcn;
}

std::vector<float> random_values(int64_t count, uint64_t seed) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = rng::uniform(seed, 7, static_cast<uint64_t>(i)) * 2.0f - 1.0f;
  return v;
}

struct Run {
  std::vector<float> z, grad_x, grads;
};

// One forward and backward of a layer of `kind` (bf16 staging; Â X kept in BF16 when keep_bf16).
class Layer {
 public:
  Layer(ConvKind kind, bool keep_bf16, DistributedAdjacency& adjacency, Matrix<Bf16> staging)
      : conv_(kind, 1, kIn, kOut, store_, kind == ConvKind::gin ? kGinHidden : 0, kind == ConvKind::gin) {
    store_.allocate(Device::cpu);
    store_.initialize(3);
    conv_.set_bf16_staging(staging);
    conv_.set_bf16_aggregate(keep_bf16);
    conv_.allocate(adjacency);
    EXPECT_FALSE(conv_.transform_first());
    EXPECT_EQ(conv_.keeps_bf16_aggregate(), keep_bf16);
  }
  void forward(std::vector<float>& x, std::vector<float>& z, bool training) {
    LayerContext context;
    context.clock = clock_.get();
    context.keep_for_backward = training;
    const Matrix<float> input{x.data(), kRows, kIn, kIn, Device::cpu};
    const Matrix<float> output{z.data(), kRows, kOut, kOut, Device::cpu};
    conv_.forward(input, output, context);
  }
  Run run(std::vector<float> x, std::vector<float> grad_z, bool eval_between = false) {
    Run r;
    r.z.assign(kRows * kOut, 0.0f);
    forward(x, r.z, true);
    if (eval_between) {  // an evaluation forward on other inputs keeps nothing
      std::vector<float> other = random_values(kRows * kIn, 99), z(kRows * kOut);
      forward(other, z, false);
    }
    r.grad_x.assign(kRows * kIn, 0.0f);
    store_.zero_grads();
    LayerContext context;
    context.clock = clock_.get();
    conv_.backward(Matrix<const float>{x.data(), kRows, kIn, kIn, Device::cpu},
                   Matrix<float>{grad_z.data(), kRows, kOut, kOut, Device::cpu},
                   Matrix<float>{r.grad_x.data(), kRows, kIn, kIn, Device::cpu}, true, context);
    r.grads.resize(store_.total_size());
    store_.grads().copy_to_host(r.grads.data());
    return r;
  }
  // The offset and size of "layer1.weight" in the store's gradients.
  std::pair<int64_t, int64_t> weight_slot() const {
    for (int k = 0; k < store_.count(); ++k)
      if (store_.info(k).name == "layer1.weight") return {store_.info(k).offset, store_.info(k).size()};
    return {0, 0};
  }

 private:
  std::unique_ptr<PhaseClock> clock_ = make_phase_clock(Device::cpu);
  ParameterStore store_;
  GraphConv conv_;
};

void check(ConvKind kind, bool eval_between) {
  const graph::Graph g = testing::synthetic_graph(kRows, 3, 4, 3, 5, 7);
  const graph::Shard shard = testing::whole_graph_shard(g);
  comm::SelfComm comm;
  const graph::LocalGraph local = graph::build_local_graph(shard, normalization_of(kind));
  DistributedAdjacency adjacency(comm, local, shard.plan, kIn, Device::cpu, nullptr, true);
  const int64_t stride = comm::HaloExchange::bf16_stride(kIn);
  Buffer<Bf16> staging_buffer(kRows * stride, Device::cpu);
  staging_buffer.zero();
  const Matrix<Bf16> staging{staging_buffer.data(), kRows, stride, stride, Device::cpu};

  const std::vector<float> x = random_values(kRows * kIn, 1), grad_z = random_values(kRows * kOut, 2);
  Layer fp32(kind, false, adjacency, staging), bf16(kind, true, adjacency, staging);
  const Run a = fp32.run(x, grad_z), b = bf16.run(x, grad_z, eval_between);
  EXPECT_EQ(a.z, b.z) << "the forward must not depend on how Â X is kept";
  EXPECT_EQ(a.grad_x, b.grad_x) << "the input gradient does not read Â X";
  const auto [offset, size] = bf16.weight_slot();
  ASSERT_EQ(size, kIn * (kind == ConvKind::gin ? kGinHidden : kOut));
  for (int64_t i = 0; i < static_cast<int64_t>(a.grads.size()); ++i)
    if (i < offset || i >= offset + size) {
      EXPECT_EQ(a.grads[i], b.grads[i]) << "gradient element " << i;
    }

  double differs = 0, scale = 0;  // the BF16-kept and FP32-kept weight gradients
  for (int64_t i = offset; i < offset + size; ++i) {
    differs = std::max(differs, std::abs(double(a.grads[i]) - b.grads[i]));
    scale = std::max(scale, std::abs(double(a.grads[i])));
  }
  EXPECT_GT(differs, 1e-5 * scale) << "the weight gradient should read the rounded Â X";
  EXPECT_LT(differs, 1e-2 * scale);
  if (kind == ConvKind::gin) return;

  // The reference: Â X from the adjacency (the layer's own product), rounded or not.
  std::vector<float> x_copy = x, ax(kRows * kIn);
  adjacency.forward_rounding(Matrix<float>{x_copy.data(), kRows, kIn, kIn, Device::cpu}, staging,
                             Matrix<float>{ax.data(), kRows, kIn, kIn, Device::cpu}, false);
  for (const bool rounded : {true, false}) {
    double worst = 0;
    for (int64_t i = 0; i < kIn; ++i)
      for (int64_t j = 0; j < kOut; ++j) {
        double sum = 0;
        for (int64_t r = 0; r < kRows; ++r) {
          const float v = ax[r * kIn + i];
          sum += double(rounded ? round_to_bf16(v) : v) * grad_z[r * kOut + j];
        }
        worst = std::max(worst, std::abs(sum - b.grads[offset + i * kOut + j]));
      }
    if (rounded) {
      EXPECT_LT(worst, 1e-5 * scale) << "grad W against bf16(Â X)^T grad_z";
    } else {
      EXPECT_GT(worst, 1e-4 * scale) << "the unrounded reference should be far off";
    }
  }
}

// A GCN or SAGE layer whose input and (aggregating first) output are BF16 (set_bf16_input, set_bf16_output),
// against the same layer given the widened input in FP32 and writing its output in FP32: the products are
// blocked (kWidenRows rows; two whole blocks and a partial one here) but read the same values, so the output,
// the input gradient and every parameter gradient agree to FP32 summation order (the k-split of the weight
// gradients), and the output blocks arrive in order, once each.
void check_bf16_sides(ConvKind kind, bool transform_first) {
  const int64_t in = transform_first ? kOut : kIn, out = transform_first ? kIn : kOut;
  const graph::Graph g = testing::synthetic_graph(kRows, 3, 4, 3, 5, 7);
  const graph::Shard shard = testing::whole_graph_shard(g);
  comm::SelfComm comm;
  const graph::LocalGraph local = graph::build_local_graph(shard, normalization_of(kind));
  DistributedAdjacency adjacency(comm, local, shard.plan, std::max(in, out), Device::cpu, nullptr, true);
  const int64_t stride = comm::HaloExchange::bf16_stride(std::max(in, out));
  Buffer<Bf16> staging_buffer(kRows * stride, Device::cpu);
  staging_buffer.zero();
  const Matrix<Bf16> staging{staging_buffer.data(), kRows, stride, stride, Device::cpu};

  const std::vector<float> x_fp32 = random_values(kRows * in, 1), grad_z = random_values(kRows * out, 2);
  std::vector<Bf16> x_bf16(x_fp32.size());
  std::vector<float> x(x_fp32.size());  // the values the BF16 input holds
  for (size_t i = 0; i < x.size(); ++i) {
    x_bf16[i] = to_bf16(x_fp32[i]);
    x[i] = to_float(x_bf16[i]);
  }
  struct Result {
    std::vector<float> z, grad_x, grads;
    int blocks = 0;
  };
  auto run = [&](bool bf16_sides) {
    ParameterStore store;
    const bool gin = kind == ConvKind::gin;  // learned eps; hidden 8 < in when transforming first
    GraphConv conv(kind, 1, in, out, store, gin ? (transform_first ? 8 : kGinHidden) : 0, gin);
    store.allocate(Device::cpu);
    store.initialize(3);
    conv.set_bf16_staging(staging);
    conv.set_bf16_aggregate(!transform_first);
    EXPECT_EQ(conv.transform_first(), transform_first || kind == ConvKind::appnp);
    const bool gives_output = kind == ConvKind::appnp || gin || !transform_first;
    const bool output = bf16_sides && gives_output;
    EXPECT_EQ(GraphConv::can_give_bf16_output(kind, in, out), gives_output);
    if (bf16_sides) conv.set_bf16_input(Matrix<const Bf16>{x_bf16.data(), kRows, in, in, Device::cpu});
    conv.set_bf16_output(output);
    std::vector<float> blocks(GraphConv::block_floats(in, out, kRows, bf16_sides, output), -1.0f);
    conv.set_bf16_blocks(Span<float>{blocks.data(), static_cast<int64_t>(blocks.size()), Device::cpu});
    conv.allocate(adjacency);
    std::unique_ptr<PhaseClock> clock = make_phase_clock(Device::cpu);
    Result r;
    r.z.assign(kRows * out, 0.0f);
    int64_t next = 0;
    auto keep = [&](int64_t first, Matrix<float> z) {
      EXPECT_EQ(first, next) << "blocks in row order";
      EXPECT_EQ(z.rows, std::min(GraphConv::kWidenRows, kRows - first));
      for (int64_t i = 0; i < z.rows; ++i)
        for (int64_t j = 0; j < out; ++j) r.z[(first + i) * out + j] = z(i, j);
      next = first + z.rows;
      ++r.blocks;
    };
    LayerContext context;
    context.clock = clock.get();
    context.output_block = keep;
    std::vector<float> x_copy = x;  // the FP32 input (rows overwritten by nothing: no halo, not scratch)
    conv.forward(bf16_sides ? Matrix<float>{} : Matrix<float>{x_copy.data(), kRows, in, in, Device::cpu},
                 output ? Matrix<float>{} : Matrix<float>{r.z.data(), kRows, out, out, Device::cpu}, context);
    if (output) {
      EXPECT_EQ(next, kRows);
    }
    r.grad_x.assign(kRows * in, 0.0f);
    std::vector<float> g = grad_z;
    store.zero_grads();
    conv.backward(bf16_sides ? Matrix<const float>{} : Matrix<const float>{x.data(), kRows, in, in, Device::cpu},
                  Matrix<float>{g.data(), kRows, out, out, Device::cpu},
                  Matrix<float>{r.grad_x.data(), kRows, in, in, Device::cpu}, true, context);
    r.grads.resize(store.total_size());
    store.grads().copy_to_host(r.grads.data());
    return r;
  };
  const Result a = run(false), b = run(true);
  EXPECT_EQ(b.blocks, transform_first && kind != ConvKind::appnp && kind != ConvKind::gin ? 0 : 3);
  auto near = [](const std::vector<float>& u, const std::vector<float>& v, const char* what) {
    ASSERT_EQ(u.size(), v.size());
    double scale = 0, worst = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      scale = std::max(scale, std::abs(double(u[i])));
      worst = std::max(worst, std::abs(double(u[i]) - v[i]));
    }
    EXPECT_GT(scale, 0.0) << what;
    EXPECT_LE(worst, 1e-6 * scale) << what;
  };
  near(a.z, b.z, "z");
  near(a.grad_x, b.grad_x, "grad x");
  near(a.grads, b.grads, "parameter gradients");
}

TEST(GraphConvBf16, GcnBf16InputAndOutput) { check_bf16_sides(ConvKind::gcn, false); }
TEST(GraphConvBf16, SageBf16InputAndOutput) { check_bf16_sides(ConvKind::sage, false); }
TEST(GraphConvBf16, GcnTransformFirstBf16Input) { check_bf16_sides(ConvKind::gcn, true); }
TEST(GraphConvBf16, SageTransformFirstBf16Input) { check_bf16_sides(ConvKind::sage, true); }
TEST(GraphConvBf16, AppnpBf16InputAndOutput) { check_bf16_sides(ConvKind::appnp, false); }
TEST(GraphConvBf16, GinBf16InputAndOutput) { check_bf16_sides(ConvKind::gin, false); }
TEST(GraphConvBf16, GinTransformFirstBf16InputAndOutput) { check_bf16_sides(ConvKind::gin, true); }

// The whole models below: 6 features, hidden 8, 3 classes.
constexpr int64_t kModelFeatures = 6, kModelClasses = 3;
ModelConfig model_config(ConvKind kind, int layers, bool learn_eps, bool bf16) {
  ModelConfig config;
  config.kind = kind;
  config.layers = layers;
  config.hidden = 8;
  config.dropout = 0.5f;
  config.seed = 11;
  config.gin_learn_eps = learn_eps;
  config.bf16 = bf16;
  return config;
}

// One training step of a whole model: its loss and gradients.
std::pair<double, std::vector<float>> train_step(ConvKind kind, int layers, bool learn_eps, bool bf16,
                                                 int64_t n = 24) {
  const graph::Graph g = testing::synthetic_graph(n, kModelClasses, kModelFeatures, /*picks=*/2, 5, 7);
  const graph::Shard shard = testing::whole_graph_shard(g);
  comm::SelfComm comm;
  const ModelConfig config = model_config(kind, layers, learn_eps, bf16);
  const std::unique_ptr<NodeModel> model = model_spec(config).build(config, comm, shard, nullptr, Device::cpu);
  const int64_t train_count = model->split_sizes_local()[0];
  const double loss = model->train_step_local(3, 1.0f / static_cast<float>(train_count)) / train_count;
  std::vector<float> grads(model->parameters().total_size());
  model->parameters().grads().copy_to_host(grads.data());
  return {loss, grads};
}

void check_model(ConvKind kind, int layers, bool learn_eps = false, int64_t n = 24) {
  const auto [loss32, grads32] = train_step(kind, layers, learn_eps, false, n);
  const auto [loss16, grads16] = train_step(kind, layers, learn_eps, true, n);
  EXPECT_NEAR(loss16, loss32, 1e-2 * std::abs(loss32));
  ASSERT_EQ(grads16.size(), grads32.size());
  double largest = 0, worst = 0;
  for (size_t i = 0; i < grads32.size(); ++i) {
    largest = std::max(largest, std::abs(double(grads32[i])));
    worst = std::max(worst, std::abs(double(grads16[i]) - grads32[i]));
  }
  ASSERT_GT(largest, 1e-3);
  EXPECT_LT(worst, 2e-2 * largest) << "bf16 gradients beyond BF16 rounding of fp32's";
  EXPECT_GT(worst, 0.0) << "bf16 should round something";
}

TEST(ModelBf16, GcnTwoLayersGradientsNearFp32) { check_model(ConvKind::gcn, 2); }
TEST(ModelBf16, GcnThreeLayersGradientsNearFp32) { check_model(ConvKind::gcn, 3); }
TEST(ModelBf16, SageTwoLayersGradientsNearFp32) { check_model(ConvKind::sage, 2); }
TEST(ModelBf16, GinLearnedEpsGradientsNearFp32) { check_model(ConvKind::gin, 2, true); }
// X_1 (and X_2) kept in BF16 (Model::keeps_bf16_activation: 6 features, hidden 8, so the layers before them
// aggregate first) over more rows than a block: the epilogue's dropout keyed block by block by the rows' global
// ids, the relu backward widened block by block. A block keyed by the wrong rows fails here.
TEST(ModelBf16, GcnBf16ActivationsInBlocksGradientsNearFp32) {
  ModelConfig config = model_config(ConvKind::gcn, 3, false, true);
  const std::vector<int64_t> widths = Model::layer_widths(config, kModelFeatures, kModelClasses);
  EXPECT_TRUE(Model::keeps_bf16_activation(config, widths, 1, true));
  EXPECT_TRUE(Model::keeps_bf16_activation(config, widths, 2, true));
  EXPECT_FALSE(Model::keeps_bf16_activation(config, widths, 3, true));  // the logits
  config.bf16 = false;
  EXPECT_FALSE(Model::keeps_bf16_activation(config, widths, 1, true));
  check_model(ConvKind::gcn, 3, false, kRows);
}
TEST(ModelBf16, SageBf16ActivationsInBlocksGradientsNearFp32) { check_model(ConvKind::sage, 2, false, kRows); }
// GIN (learned eps; hidden 8 over 6 features: its layers aggregate first): the self term and the eps gradient
// read the widened BF16 input block by block.
TEST(ModelBf16, GinBf16ActivationsInBlocksGradientsNearFp32) { check_model(ConvKind::gin, 3, true, kRows); }
TEST(ModelBf16, AppnpBf16ActivationsInBlocksGradientsNearFp32) {
  const ModelConfig config = model_config(ConvKind::appnp, 3, false, true);
  const std::vector<int64_t> widths = Model::layer_widths(config, kModelFeatures, kModelClasses);
  EXPECT_TRUE(Model::keeps_bf16_activation(config, widths, 1, true));
  EXPECT_TRUE(Model::keeps_bf16_activation(config, widths, 2, true));
  EXPECT_FALSE(Model::keeps_bf16_activation(config, widths, 1, false));  // layer 0 multiplies a sparse input
  EXPECT_TRUE(Model::keeps_bf16_activation(config, widths, 2, false));
  check_model(ConvKind::appnp, 3, false, kRows);
}

TEST(GraphConvBf16, GcnKeepsAggregateInBf16) { check(ConvKind::gcn, false); }
TEST(GraphConvBf16, SageKeepsAggregateInBf16) { check(ConvKind::sage, false); }
TEST(GraphConvBf16, GinLearnedEpsKeepsAggregateInBf16) { check(ConvKind::gin, false); }
TEST(GraphConvBf16, EvaluationForwardKeepsNothing) { check(ConvKind::gcn, true); }

}  // namespace
}  // namespace halogen::nn
