// nn::DeviceCsr and nn::DistributedAdjacency memory (issue #36): the bytes their bytes_for predict are the
// Buffers they allocate, for every value layout (stored, row and column factors, row factor, none), the layout
// each normalisation gets, and the views the CPU spmm receives (factors instead of values).
#include <gtest/gtest.h>

#include "comm/self_comm.h"
#include "core/buffer.h"
#include "graph/local_graph.h"
#include "nn/distributed_adjacency.h"
#include "nn/sparse_adjacency.h"
#include "train/synthetic_graph.h"
#include "train/trainer.h"

namespace halogen::nn {
namespace {

struct Variant {
  graph::Normalization normalization;
  bool weighted;
};

const Variant kVariants[] = {{graph::Normalization::gcn, false},      {graph::Normalization::mean, false},
                             {graph::Normalization::sum, false},      {graph::Normalization::chebyshev, false},
                             {graph::Normalization::gcn, true},       {graph::Normalization::mean, true},
                             {graph::Normalization::sum, true}};

// Part 1 of 3 of a small graph (it has halo vertices), weighted variants with arbitrary positive weights.
graph::LocalGraph build(const graph::Shard& shard, const Variant& v) {
  if (!v.weighted) return graph::build_local_graph(shard, v.normalization);
  graph::EdgeWeighting weighting;
  weighting.degree_owned = graph::weighted_owned_degrees(shard);
  weighting.degree_halo.assign(static_cast<size_t>(shard.num_halo()), 2.5);
  return graph::build_local_graph(shard, v.normalization, &weighting);
}

graph::Shard three_part_shard() {
  const graph::Graph g = testing::synthetic_graph(90, 3, 2, 4, 21);
  std::vector<int32_t> owner(90);
  for (int v = 0; v < 90; ++v) owner[v] = (v * 7) % 3;
  graph::Shard s = testing::make_shard(g, owner, 3, 1);
  s.weight.resize(static_cast<size_t>(s.nnz()));
  for (int64_t k = 0; k < s.nnz(); ++k) s.weight[k] = 0.5f + static_cast<float>(k % 5);
  return s;
}

// Bytes a DeviceCsr of `host` allocates on the CPU.
int64_t allocated_bytes(const graph::LocalCsr& host) {
  const int64_t before = detail::bytes_in_use(Device::cpu);
  DeviceCsr csr(host, Device::cpu);
  return detail::bytes_in_use(Device::cpu) - before;
}

TEST(DeviceCsr, BytesForIsTheAllocationOfEveryLayout) {
  const graph::Shard s = three_part_shard();
  ASSERT_GT(s.num_halo(), 0);
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(::testing::Message() << "normalisation " << static_cast<int>(v.normalization) << " weighted "
                                    << v.weighted);
    const graph::LocalGraph lg = build(s, v);
    const ValueLayout layout = value_layout_of(v.normalization, v.weighted);
    EXPECT_EQ(value_layout(lg.a_own), layout) << "value_layout_of must say what build_local_graph builds";
    EXPECT_EQ(value_layout(lg.a_halo), layout);
    EXPECT_EQ(value_layout(lg.a_halo_t), transposed(layout));
    for (const graph::LocalCsr* a : {&lg.a_own, &lg.a_halo, &lg.own_transpose(), &lg.a_halo_t}) {
      const ValueLayout expected = a == &lg.a_own || a == &lg.a_halo ? layout : transposed(layout);
      EXPECT_EQ(allocated_bytes(*a), DeviceCsr::bytes_for(a->rows, a->cols, a->nnz(), expected, Device::cpu));
      // The GPU keeps every layout's values (cuSPARSE): the stored layout's bytes.
      EXPECT_EQ(DeviceCsr::bytes_for(a->rows, a->cols, a->nnz(), expected, Device::cuda),
                DeviceCsr::bytes_for(a->rows, a->cols, a->nnz(), ValueLayout::stored, Device::cpu));
    }
    // The whole adjacency's matrices (A_own^T not stored when A_own is symmetric).
    const graph::LocalCsr none;
    const int64_t matrices = allocated_bytes(lg.a_own) + allocated_bytes(lg.a_halo) +
                             allocated_bytes(lg.a_own_symmetric ? none : lg.a_own_t) + allocated_bytes(lg.a_halo_t);
    EXPECT_EQ(matrices, DistributedAdjacency::matrix_bytes_for(lg.num_owned, lg.num_halo,
                                                               lg.a_own.nnz() + lg.a_halo.nnz(), lg.a_halo.nnz(),
                                                               lg.a_own_symmetric, layout, Device::cpu));
  }
}

TEST(DeviceCsr, ImplicitMatricesGiveTheCpuTheirFactors) {
  const graph::Shard s = three_part_shard();
  for (const Variant& v : kVariants) {
    const graph::LocalGraph lg = build(s, v);
    const ValueLayout layout = value_layout_of(v.normalization, v.weighted);
    const DeviceCsr own(lg.a_own, Device::cpu), halo_t(lg.a_halo_t, Device::cpu);
    const kernels::CsrView own_view = own.view(), halo_t_view = halo_t.view();
    EXPECT_EQ(own_view.values != nullptr, layout == ValueLayout::stored);
    EXPECT_EQ(own_view.row_scale != nullptr, layout == ValueLayout::scaled_both || layout == ValueLayout::scaled_rows);
    EXPECT_EQ(own_view.col_scale != nullptr, layout == ValueLayout::scaled_both);
    // mean's transpose: a column factor (the rows' 1/deg), no row factor.
    EXPECT_EQ(halo_t_view.col_scale != nullptr,
              layout == ValueLayout::scaled_both || layout == ValueLayout::scaled_rows);
    EXPECT_EQ(halo_t_view.row_scale != nullptr, layout == ValueLayout::scaled_both);
  }
}

TEST(DistributedAdjacency, BytesForIsTheAllocationOnOneRank) {
  const graph::Graph g = testing::synthetic_graph(70, 3, 2, 4, 5, 9);
  const graph::Shard s = testing::whole_graph_shard(g);
  comm::SelfComm comm;
  constexpr int64_t kWidth = 13;
  for (const Variant& v : kVariants) {
    if (v.weighted) continue;  // whole-graph shard without weights
    SCOPED_TRACE(::testing::Message() << "normalisation " << static_cast<int>(v.normalization));
    const graph::LocalGraph lg = graph::build_local_graph(s, v.normalization);
    const int64_t before = detail::bytes_in_use(Device::cpu);
    DistributedAdjacency adjacency(comm, lg, s.plan, kWidth, Device::cpu);
    const int64_t allocated = detail::bytes_in_use(Device::cpu) - before;
    const ValueLayout layout = value_layout_of(v.normalization, false);
    EXPECT_EQ(allocated, DistributedAdjacency::matrix_bytes_for(lg.num_owned, lg.num_halo,
                                                                lg.a_own.nnz() + lg.a_halo.nnz(), lg.a_halo.nnz(),
                                                                lg.a_own_symmetric, layout, Device::cpu) +
                             DistributedAdjacency::exchange_bytes_for(lg.num_halo, s.plan.num_send(), kWidth));
  }
}

// The model's plan (Model::estimate_breakdown with the layout its kind implies) is its allocation, exactly, for
// the models whose adjacency keeps factors (gcn, appnp: both; sage: rows; gin: none), as the Trainer test checks
// for gcn alone.
TEST(ModelPlan, EstimateIsTheAllocationForEveryAdjacencyLayout) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  for (ConvKind kind : {ConvKind::gcn, ConvKind::sage, ConvKind::gin, ConvKind::appnp}) {
    SCOPED_TRACE(conv_kind_name(kind));
    comm::SelfComm comm;
    train::TrainConfig config;
    config.model.kind = kind;
    config.model.layers = 2;
    config.model.hidden = 8;
    config.model.seed = 1;
    config.epochs = 2;
    config.print_epochs = false;
    const int64_t before = detail::bytes_in_use(Device::cpu);
    train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
    const train::TrainResult result = trainer.run();
    EXPECT_EQ(result.estimated_bytes, detail::bytes_in_use(Device::cpu) - before);
    EXPECT_EQ(result.estimated_bytes, result.allocated_bytes);
  }
}

}  // namespace
}  // namespace halogen::nn
