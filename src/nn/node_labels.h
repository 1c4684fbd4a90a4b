#pragma once
// NodeLabels: what a node-classification model on one rank knows of its labelled vertices, on `device`: the
// owned vertices' global ids (the dropout key of every row), their labels (-1: none) and the local rows of
// the train, valid and test splits that have a label. nn::Model and GCNII (nn/models/gcnii.cpp) share it: the
// softmax cross-entropy over a split and the correct predictions per split, from a model's logits.
//
//   loss(logits, split, scale, grad):  sum over the split's rows r of -log softmax(logits[r])[label[r]];
//                                      grad (n_own, C) "=" (softmax - onehot) * scale on those rows, 0
//                                      elsewhere
//   count_correct(logits):             rows of train, valid, test whose argmax is the label
// Both run on `stream` through kernels/ (softmax_cross_entropy, count_correct) and read one host scalar each.
#include <array>
#include <cstdint>

#include "core/buffer.h"
#include "graph/shard.h"
#include "kernels/ops.h"

namespace halogen::nn {

struct NodeLabels {
  Buffer<int64_t> row_gid;                    // (n_own)
  Buffer<int32_t> labels;                     // (n_own); -1 = none
  std::array<Buffer<int64_t>, 3> split_rows;  // train, valid, test local rows (labelled only)
  std::array<int64_t, 3> split_sizes{};

  NodeLabels() = default;
  // Copies them from `shard`; split rows whose label is < 0 are dropped.
  NodeLabels(const graph::Shard& shard, Device device);

  Span<const int64_t> gids() const {
    return Span<const int64_t>{row_gid.data(), row_gid.size(), row_gid.device()};
  }
  double loss(Matrix<const float> logits, int split, float scale, Matrix<float> grad,
              kernels::Stream stream) const;
  std::array<int64_t, 3> count_correct(Matrix<const float> logits, kernels::Stream stream) const;
  // Bytes of a rank with `num_owned` vertices and `num_split_rows` labelled split rows.
  static int64_t bytes_for(int64_t num_owned, int64_t num_split_rows) {
    return num_owned * 8 + num_owned * 4 + num_split_rows * 8;
  }
};

}  // namespace halogen::nn
