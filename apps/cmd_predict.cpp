// `halogen predict DIR --checkpoint PATH`: per-vertex class probabilities (or one layer's embeddings) of a
// trained model on any partition of its graph, one rank per part (mpirun -np P halogen predict DIR ...), written
// by rank 0 as one HDF5 file in global vertex order (train/predict.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "apps/rank_device.h"
#include "comm/mpi_session.h"
#include "comm/watchdog.h"
#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "nn/model_registry.h"
#include "train/checkpoint.h"
#include "train/collective_error.h"
#include "train/load.h"
#include "train/predict.h"

namespace halogen::app {
namespace {

struct PredictFlags {
  std::string dir;
  std::string checkpoint;
  std::string output = "predictions.h5";
  int embeddings = -1;
  int threads = 0;
  double comm_timeout = 0;
  std::string precision;  // empty: the checkpoint's (fp32 unless it was trained with --precision bf16)
};

void run_predict(const PredictFlags& flags) {
  int argc = 0;
  char** argv = nullptr;
  comm::MpiSession session(&argc, &argv);
  const interrupt::Guard guard("predict");  // before the communicator, whose handler hands signals on to it
  if (flags.comm_timeout > 0) comm::set_comm_timeout_seconds(flags.comm_timeout);
  set_rank_threads(flags.threads, session);
  Device device = Device::cpu;
  std::unique_ptr<comm::Communicator> rank_comm = make_rank_comm("cpu", "", session, device);
  comm::Communicator& comm = *rank_comm;
  run_rank_job(rank_comm, [&] {
    train::PredictRequest request;
    request.partition_dir = flags.dir;
    request.output = flags.output;
    request.embeddings_layer = flags.embeddings;
    train::CheckpointHeader header;
    train::CheckpointModel config;
    interrupt::set_phase("reading the checkpoint");
    train::run_collectively(comm, [&] {
      request.checkpoint_path = train::resolve_checkpoint(flags.checkpoint);
      header = train::read_checkpoint_header(request.checkpoint_path);
      config = train::checkpoint_model(header, request.checkpoint_path);
      if (!flags.precision.empty()) config.model.bf16 = flags.precision == "bf16";
      nn::require_precision_supported(config.model);
      // The output's directory is checked now, not after the inference; an input is never overwritten.
      std::error_code error;
      HALOGEN_USER_CHECK(!std::filesystem::exists(flags.output, error) ||
                             !std::filesystem::equivalent(flags.output, request.checkpoint_path, error),
                         "%s: --output is the checkpoint itself", flags.output.c_str());
      const std::filesystem::path output_dir = std::filesystem::path(flags.output).parent_path();
      HALOGEN_USER_CHECK(!std::filesystem::exists(flags.output, error) ||
                             !std::filesystem::equivalent(output_dir.empty() ? "." : output_dir, flags.dir, error),
                         "%s: --output would replace a file of the partition directory %s", flags.output.c_str(),
                         flags.dir.c_str());
      if (comm.rank() == 0) io::AtomicOutput check(flags.output);  // UserError: no such directory, a directory
    }, train::Report::lowest_failing_rank);
    interrupt::set_phase("reading " + flags.dir);
    train::RankInput input = train::load_rank_input(comm, flags.dir, config.row_normalize);
    train::run_collectively(comm, [&] {
      io::refuse_output_equal_to_input(flags.output, input.meta.graph_file, "--output");
      HALOGEN_USER_CHECK(input.meta.graph_checksum == header.graph_checksum,
                         "%s: the checkpoint was trained on the graph with checksum %s, the partition %s is of the "
                         "graph with checksum %s (%s)%s", request.checkpoint_path.c_str(),
                         header.graph_checksum.c_str(), flags.dir.c_str(), input.meta.graph_checksum.c_str(),
                         input.meta.graph_file.c_str(),
                         io::checksum_kind_hint(header.graph_checksum, input.meta.graph_checksum).c_str());
    }, train::Report::lowest_failing_rank);
    log::info(strformat("checkpoint %s: %s, %d layers, hidden %lld, epoch %lld%s%s | graph %s: %lld nodes | %d ranks",
                        request.checkpoint_path.c_str(), header.model.c_str(), config.model.layers,
                        (long long)config.model.hidden, (long long)header.epoch,
                        config.model.bf16 ? ", precision bf16" : "",
                        config.row_normalize ? ", row-normalised features" : "", input.meta.graph_name.c_str(),
                        (long long)input.meta.num_nodes, comm.size()));
    const train::PredictSummary summary = train::predict(comm, input.meta, input.shard, header, config, request);
    log::info(strformat("wrote %s: %s [%lld, %lld]%s", flags.output.c_str(),
                        flags.embeddings >= 0 ? "embeddings" : "probabilities", (long long)summary.rows,
                        (long long)summary.cols, flags.embeddings >= 0 ? "" : " and predicted"));
  });
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto flags = std::make_shared<PredictFlags>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Class probabilities or embeddings of a trained model, in global vertex order (run under "
                 "mpirun/srun, one rank per part of any partition of the training graph)");
  cmd->add_option("dir", flags->dir, "Partition directory of the graph the checkpoint was trained on")->required();
  cmd->add_option("--checkpoint", flags->checkpoint,
                  "A checkpoint file, or a `halogen train --checkpoint` directory (its best.h5 if there is one, "
                  "else its last.h5)")
      ->required();
  cmd->add_option("-o,--output", flags->output,
                  "HDF5 file: /probabilities float32 [N, C] and /predicted int32 [N], or /embeddings [N, H]")
      ->capture_default_str();
  cmd->add_option("--embeddings", flags->embeddings,
                  "Write the output of this layer (0-based; hidden layers after relu) as /embeddings instead")
      ->check(non_negative());  // the model says how many layers it has (train/predict.cpp)
  cmd->add_option("--precision", flags->precision,
                  "fp32 or bf16 (default: the precision the checkpoint was trained with); bf16 as in `halogen train "
                  "--precision`")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--threads", flags->threads,
                  "OpenMP threads per rank (default: OMP_NUM_THREADS, else the node's cores / ranks on the node)")
      ->check(non_negative());
  cmd->add_option("--comm-timeout", flags->comm_timeout,
                  "Seconds a rank waits for one communication before it ends the job, naming the peer (default: "
                  "HALOGEN_COMM_TIMEOUT, else 600)")
      ->check(finite_number(0.0, false));
  cmd->callback([flags] { run_predict(*flags); });
}

}  // namespace halogen::app
