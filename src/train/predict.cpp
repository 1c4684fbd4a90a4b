#include "train/predict.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "io/h5.h"
#include "train/collective_error.h"

namespace halogen::train {
namespace {

template <typename T>
T config_value(const nlohmann::json& config, const char* key, const std::string& path) {
  HALOGEN_USER_CHECK(config.contains(key), "%s: the config attribute has no \"%s\"", path.c_str(), key);
  try {
    return config[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw UserError(strformat("%s: config attribute: \"%s\" is %s, of the wrong type", path.c_str(), key,
                              config[key].dump().c_str()));
  }
}

// This rank's rows of `m` as one contiguous host array.
std::vector<float> to_host(Matrix<const float> m) {
  std::vector<float> host(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r)
    detail::copy_bytes(host.data() + r * m.cols, Device::cpu, m.row(r), m.device, m.cols * sizeof(float));
  return host;
}

// Every rank's row count, on every rank.
std::vector<int64_t> rows_per_rank(comm::Communicator& comm, int64_t local_rows) {
  std::vector<int64_t> rows(static_cast<size_t>(comm.size()), 0);
  rows[comm.rank()] = local_rows;
  comm.allreduce_sum(rows.data(), comm.size());
  return rows;
}

// Rank 0 receives every rank's rows (rank q's in parts[q]); other ranks send theirs and get nothing.
std::vector<std::vector<float>> gather_to_rank0(comm::Communicator& comm, std::vector<float> local,
                                                const std::vector<int64_t>& rows, int64_t width) {
  std::vector<std::vector<float>> parts(static_cast<size_t>(comm.size()));
  std::vector<comm::Message> sends, receives;
  if (comm.rank() == 0) {
    for (int q = 1; q < comm.size(); ++q) {
      parts[q].resize(static_cast<size_t>(rows[q] * width));
      receives.push_back({q, parts[q].data(), rows[q] * width});
    }
  } else {
    sends.push_back({0, local.data(), static_cast<int64_t>(local.size())});
  }
  comm.wait(comm.start_exchange(sends, receives, nullptr), nullptr);
  if (comm.rank() == 0) parts[0] = std::move(local);
  return parts;
}

// Rows in global vertex order: part q's i-th row belongs to vertex owned_gid[q][i] (the shard's /owned/gid,
// which ascends only in gid vertex order: partition/vertex_order.h), which assignment.h5 must give to part q.
std::vector<float> global_order(const std::vector<std::vector<float>>& parts,
                                const std::vector<std::vector<int64_t>>& owned_gid,
                                const std::vector<int32_t>& part_of, const std::vector<int64_t>& rows,
                                int64_t width, const std::string& assignment) {
  const int64_t n = static_cast<int64_t>(part_of.size());
  std::vector<float> ordered(static_cast<size_t>(n * width));
  std::vector<uint8_t> placed(static_cast<size_t>(n), 0);
  int64_t total = 0;
  for (size_t q = 0; q < parts.size(); ++q) {
    HALOGEN_USER_CHECK(static_cast<int64_t>(owned_gid[q].size()) == rows[q],
                       "part %zu: its shard lists %zu owned vertices, its rank computed %lld rows", q,
                       owned_gid[q].size(), (long long)rows[q]);
    for (int64_t i = 0; i < rows[q]; ++i) {
      const int64_t v = owned_gid[q][i];
      HALOGEN_USER_CHECK(
          v >= 0 && v < n && part_of[v] == static_cast<int32_t>(q) && !placed[v],
          "%s: part %zu's shard owns vertex %lld, which the assignment does not give it (once)",
          assignment.c_str(), q, (long long)v);
      placed[v] = 1;
      std::copy_n(parts[q].data() + i * width, width, ordered.data() + v * width);
    }
    total += rows[q];
  }
  HALOGEN_USER_CHECK(total == n, "%s: the shards own %lld vertices, the graph has %lld", assignment.c_str(),
                     (long long)total, (long long)n);
  return ordered;
}

// Softmax probabilities and the argmax class of each row of logits (n, width).
void softmax_rows(const std::vector<float>& rows, int64_t n, int64_t width, std::vector<float>& probabilities,
                  std::vector<int32_t>& predicted) {
  probabilities.assign(rows.size(), 0.0f);
  predicted.assign(static_cast<size_t>(n), 0);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) {
    const float* logits = rows.data() + v * width;
    int64_t best = 0;
    for (int64_t c = 1; c < width; ++c)
      if (logits[c] > logits[best]) best = c;  // strict: ties keep the lowest class (kernels' count_correct)
    double sum = 0;
    for (int64_t c = 0; c < width; ++c) sum += std::exp(static_cast<double>(logits[c]) - logits[best]);
    for (int64_t c = 0; c < width; ++c)
      probabilities[v * width + c] = static_cast<float>(std::exp(static_cast<double>(logits[c]) - logits[best]) / sum);
    predicted[v] = static_cast<int32_t>(best);
  }
}

// The dataset as read back from the closed file must be what was written, byte for byte. HDF5 reports neither a
// chunk it could not flush at close (a full disk) nor, on reading, a chunk that was never written (the fill
// value, 0): only comparing the data catches a file of the right shape holding zeros.
template <typename T>
void expect_written(const h5::File& file, const std::string& dataset, const std::vector<T>& expected,
                    const std::string& output) {
  std::vector<T> read;
  try {
    read = file.read<T>(dataset);
  } catch (const UserError&) {
    read.clear();
  }
  HALOGEN_USER_CHECK(read.size() == expected.size() &&
                         std::memcmp(read.data(), expected.data(), expected.size() * sizeof(T)) == 0,
                     "%s: cannot write the predictions: %s did not read back as written (disk full?)%s",
                     output.c_str(), dataset.c_str(),
                     std::filesystem::exists(output) ? "; the earlier file is left as it was" : "");
}

void write_predictions(const PredictRequest& request, const CheckpointHeader& header, const std::vector<float>& rows,
                       int64_t n, int64_t width) {
  io::AtomicOutput output(request.output);
  const bool embeddings = request.embeddings_layer >= 0;
  std::vector<float> probabilities;
  std::vector<int32_t> predicted;
  if (!embeddings) softmax_rows(rows, n, width, probabilities, predicted);
  try {
    h5::File file(output.temp_path(), h5::Mode::create);
    io::write_format(file, "halogen.predictions", 1);
    file.set_attr("checkpoint", request.checkpoint_path);
    file.set_attr("epoch", header.epoch);
    file.set_attr("model", header.model);
    file.set_attr("graph_checksum", header.graph_checksum);
    file.set_attr("num_nodes", n);
    if (embeddings) {
      file.set_attr("layer", int64_t{request.embeddings_layer});
      file.write("/embeddings", rows.data(), {n, width}, /*compress=*/true);
    } else {
      file.write("/probabilities", probabilities.data(), {n, width}, /*compress=*/true);
      file.write("/predicted", predicted.data(), {n}, /*compress=*/true);
    }
    file.close();  // checked: a flush that fails (a full disk) is an error here, not at a silent destructor
  } catch (const UserError& e) {
    // Named by the output, not by its hidden temporary (which AtomicOutput removes); the earlier file stays.
    std::string message = e.what();
    for (size_t at = message.find(output.temp_path()); at != std::string::npos;
         at = message.find(output.temp_path(), at + request.output.size()))
      message.replace(at, output.temp_path().size(), request.output);
    if (std::filesystem::exists(request.output)) message += "; the earlier " + request.output + " is left as it was";
    throw UserError(message);
  }
  const h5::File check(output.temp_path(), h5::Mode::read);
  if (embeddings) {
    expect_written(check, "/embeddings", rows, request.output);
  } else {
    expect_written(check, "/probabilities", probabilities, request.output);
    expect_written(check, "/predicted", predicted, request.output);
  }
  output.commit();
}

}  // namespace

CheckpointModel checkpoint_model(const CheckpointHeader& header, const std::string& path) {
  const nn::ModelSpec* spec = nullptr;
  for (const nn::ModelSpec& s : nn::model_specs())
    if (s.name == header.model) spec = &s;
  HALOGEN_USER_CHECK(spec != nullptr,
                     "%s: a %s checkpoint: `halogen predict` runs the static node-classification models (%s) "
                     "(inference of temporal models is not implemented yet)", path.c_str(), header.model.c_str(),
                     nn::model_names().c_str());
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(header.config);
  } catch (const nlohmann::json::exception&) {
    throw UserError(path + ": the config attribute is not JSON");
  }
  HALOGEN_USER_CHECK(config.is_object(), "%s: the config attribute is not a JSON object", path.c_str());
  CheckpointModel m;
  m.model = nn::default_model_config(spec->name);
  m.model.layers = config_value<int>(config, "layers", path);
  m.model.hidden = config_value<int64_t>(config, "hidden", path);
  m.model.dropout = config_value<float>(config, "dropout", path);
  m.model.seed = config_value<uint64_t>(config, "seed", path);
  m.row_normalize = config_value<bool>(config, "row_normalize", path);
  // The model's own options (NodeClassification::options writes them), each checked against the range train
  // accepts: anything else is not a checkpoint train wrote.
  for (const nn::ModelOption& option : spec->options) {
    if (!option.required_in_checkpoint && !config.contains(option.key)) continue;
    const char* key = option.key.c_str();
    nn::OptionValue value;
    switch (option.type) {
      case nn::ModelOption::Type::integer: value = config_value<int64_t>(config, key, path); break;
      case nn::ModelOption::Type::real: value = config_value<float>(config, key, path); break;
      case nn::ModelOption::Type::flag: value = config_value<bool>(config, key, path); break;
      case nn::ModelOption::Type::choice: value = config_value<std::string>(config, key, path); break;
    }
    HALOGEN_USER_CHECK(nn::option_in_range(option, value), "%s: config attribute: %s %s (train accepts --%s %s)",
                       path.c_str(), key, nn::option_text(value).c_str(), option.name.c_str(),
                       option.type == nn::ModelOption::Type::choice
                           ? "as one of its choices"
                           : strformat("in [%g, %g%s", option.min, option.max, option.max_open ? ")" : "]").c_str());
    option.set(m.model, value);
  }
  if (config.contains("edge_weight")) m.model.edge_weight = config_value<bool>(config, "edge_weight", path);
  if (config.contains("precision")) {  // written for bf16 only
    const std::string precision = config_value<std::string>(config, "precision", path);
    HALOGEN_USER_CHECK(precision == "fp32" || precision == "bf16",
                       "%s: config attribute: precision \"%s\" (train accepts --precision fp32 or bf16)", path.c_str(),
                       precision.c_str());
    m.model.bf16 = precision == "bf16";
  }
  // The ranges `halogen train` accepts: anything else is not a checkpoint it wrote (and a huge width would only
  // fail later, in an allocation).
  HALOGEN_USER_CHECK(m.model.layers >= 1 && m.model.layers <= 64 && m.model.hidden >= 1 &&
                         m.model.hidden <= (int64_t{1} << 20),
                     "%s: config attribute: layers %d, hidden %lld (train accepts layers 1..64, hidden 1..2^20)",
                     path.c_str(), m.model.layers, (long long)m.model.hidden);
  return m;
}

PredictSummary predict(comm::Communicator& comm, const io::PartitionMeta& meta, const graph::Shard& shard,
                       const CheckpointHeader& header, const CheckpointModel& config, const PredictRequest& request) {
  // Rank 0 writes the output: it holds the output's lock from before any work to the rename, so a second
  // predict into the same file is refused with this one's pid instead of both saying "wrote".
  std::unique_ptr<io::OutputLock> lock;
  run_collectively(comm, [&] {
    if (comm.rank() == 0) lock = std::make_unique<io::OutputLock>(request.output);
  }, Report::lowest_failing_rank);
  std::unique_ptr<nn::NodeModel> model;
  interrupt::set_phase("building the model");
  run_collectively(comm, [&] {
    model = nn::model_spec(config.model).build(config.model, comm, shard, nullptr, comm.device());
  });
  nn::ParameterStore& store = model->parameters();
  run_collectively(comm, [&] {
    HALOGEN_USER_CHECK(request.embeddings_layer < model->num_layers(),
                       "--embeddings %d: the model of %s has layers 0..%d", request.embeddings_layer,
                       request.checkpoint_path.c_str(), model->num_layers() - 1);
    const CheckpointState s = read_checkpoint(request.checkpoint_path, parameter_layout(store), false);
    store.params().copy_from_host(s.params.data(), static_cast<int64_t>(s.params.size()));
  }, Report::lowest_failing_rank);

  interrupt::set_phase("inference");
  model->infer();
  const Matrix<const float> out =
      request.embeddings_layer >= 0 ? model->layer_output(request.embeddings_layer) : model->logits();
  const int64_t width = out.cols;
  const std::vector<int64_t> rows = rows_per_rank(comm, out.rows);
  std::vector<std::vector<float>> parts = gather_to_rank0(comm, to_host(out), rows, width);
  model.reset();

  interrupt::set_phase("writing " + request.output);
  run_collectively(comm, [&] {
    if (comm.rank() != 0) return;
    const std::string assignment = io::assignment_path(request.partition_dir);
    const std::vector<int32_t> part_of = io::read_assignment(assignment, comm.size(), meta.num_nodes);
    std::vector<std::vector<int64_t>> owned_gid(parts.size());
    for (int q = 0; q < comm.size(); ++q)
      owned_gid[q] = q == comm.rank() ? shard.owned_gid
                                      : h5::File(io::shard_path(request.partition_dir, q), h5::Mode::read)
                                            .read<int64_t>("/owned/gid");
    const std::vector<float> ordered = global_order(parts, owned_gid, part_of, rows, width, assignment);
    parts.clear();
    write_predictions(request, header, ordered, meta.num_nodes, width);
  });
  return PredictSummary{meta.num_nodes, width};
}

}  // namespace halogen::train
