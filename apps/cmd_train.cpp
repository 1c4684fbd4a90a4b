// `halogen train DIR`: full-batch GNN training on a partition directory, one MPI rank per part
// (mpirun -np P halogen train DIR ...). MPI is initialised here (comm::MpiSession).
#include <omp.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "apps/commands.h"
#include "apps/rank_device.h"
#include "comm/mpi_comm.h"
#include "comm/mpi_session.h"
#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "train/collective_error.h"
#include "train/load.h"
#include "train/trainer.h"

namespace halogen::app {
namespace {

struct TrainFlags {
  std::string dir;
  std::string model = "gcn";
  int layers = 2;
  int64_t hidden = 16;
  int64_t epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  bool weight_decay_all_layers = false;
  float dropout = 0.5f;
  uint64_t seed = 0;
  bool row_normalize = false;
  int64_t eval_every = 1;
  int64_t patience = 0;
  int threads = 0;
  std::string metrics;
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  bool resume = false;
  bool no_overlap = false;
  std::string device;  // cpu | cuda; empty: cuda when every rank sees a usable GPU (CUDA builds), else cpu
  std::string comm;    // nccl | mpi (device cuda only); empty: nccl
  bool quiet = false;
};

void run_train(const TrainFlags& flags) {
  check_device_flags_before_mpi(flags.device, flags.comm);
  int argc = 0;
  char** argv = nullptr;
  comm::MpiSession session(&argc, &argv);
  set_rank_threads(flags.threads, session);
  Device device = Device::cpu;
  std::unique_ptr<comm::Communicator> rank_comm = make_rank_comm(flags.device, flags.comm, session, device);
  comm::Communicator& comm = *rank_comm;
  try {
    train::TrainConfig config;
    config.model.kind = flags.model == "sage" ? nn::ConvKind::sage : nn::ConvKind::gcn;
    config.model.layers = flags.layers;
    config.model.hidden = flags.hidden;
    config.model.dropout = flags.dropout;
    config.model.seed = flags.seed;
    config.model.overlap = !flags.no_overlap;
    config.epochs = flags.epochs;
    config.lr = flags.lr;
    config.weight_decay = flags.weight_decay;
    config.weight_decay_all_layers = flags.weight_decay_all_layers;
    config.eval_every = flags.eval_every;
    config.patience = flags.patience;
    config.metrics_path = flags.metrics;
    config.checkpoint_dir = flags.checkpoint;
    config.checkpoint_every = flags.checkpoint_every;
    config.resume = flags.resume;
    config.print_epochs = !flags.quiet;
    config.device = device;
    HALOGEN_USER_CHECK(!flags.resume || !flags.checkpoint.empty(), "--resume needs --checkpoint DIR");

    train::RankInput input = train::load_rank_input(comm, flags.dir, flags.row_normalize);
    const io::PartitionMeta& meta = input.meta;
    int64_t sizes[4] = {input.shard.num_owned(), input.shard.num_halo(), input.shard.nnz(),
                        static_cast<int64_t>(input.shard.send_idx.size())};
    double extremes[2] = {static_cast<double>(sizes[0]), -static_cast<double>(sizes[0])};
    comm.allreduce_max(extremes, 2);
    comm.allreduce_sum(sizes, 4);
    log::info(strformat("graph %s: %lld nodes, %lld edges, %lld features, %d classes | %d ranks (%s), owned "
                        "%lld..%lld per rank, halo rows %lld in total | %d threads per rank",
                        meta.graph_name.c_str(), (long long)meta.num_nodes, (long long)meta.num_edges,
                        (long long)meta.num_features, meta.num_classes, comm.size(), meta.method.c_str(),
                        (long long)-extremes[1], (long long)extremes[0], (long long)sizes[1], omp_get_max_threads()));
    log::info(strformat("model %s: %d layers, hidden %lld, dropout %g | adam lr %g, weight decay %g (%s) | %lld "
                        "epochs, seed %llu, overlap %s%s | device %s",
                        flags.model.c_str(), flags.layers, (long long)flags.hidden, flags.dropout, flags.lr,
                        flags.weight_decay, flags.weight_decay_all_layers ? "all layers" : "first layer",
                        (long long)flags.epochs, (unsigned long long)flags.seed, flags.no_overlap ? "off" : "on",
                        flags.row_normalize ? ", row-normalised features" : "", device_name(device)));

    std::unique_ptr<train::Trainer> trainer;
    train::run_collectively(comm, [&] { trainer = std::make_unique<train::Trainer>(comm, input.shard, config); });
    input.shard = graph::Shard{};  // the model holds its own copies
    const train::TrainResult result = trainer->run();
    log::info(strformat("done: best valid %.4f at epoch %lld, test %.4f there | mean epoch %.2f ms%s",
                        result.best_valid_acc, (long long)result.best_epoch, result.test_acc_at_best,
                        result.mean_epoch_ms, result.stopped_early ? " | stopped early" : ""));
  } catch (const train::PeerFailed&) {
    exit_code() = 2;  // the failing rank printed the reason
  } catch (const UserError&) {
    throw;  // raised on every rank in step (collective checks): main prints it, exit 2
  } catch (const std::exception& e) {
    // Raised on this rank only: the others may be waiting in a collective, so take the whole job down.
    log::rank_line(std::string("error: ") + e.what());
    comm.abort(1);
  }
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a GNN on a partition directory (run under mpirun/srun, one rank per part)");
  cmd->add_option("dir", flags->dir, "Partition directory made by `halogen partition`")->required();
  cmd->add_option("--model", flags->model, "gcn (Kipf & Welling) or sage (GraphSAGE-mean)")
      ->check(CLI::IsMember({"gcn", "sage"}))->capture_default_str();
  cmd->add_option("--layers", flags->layers, "Number of graph convolution layers")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--hidden", flags->hidden, "Hidden width")->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--epochs", flags->epochs, "Training epochs (full-batch steps)")->check(CLI::Range(int64_t{1}, int64_t{1} << 40))->capture_default_str();
  cmd->add_option("--lr", flags->lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", flags->weight_decay,
                  "L2 weight decay on the FIRST layer's parameters (Kipf & Welling); see --weight-decay-all-layers")
      ->capture_default_str();
  cmd->add_flag("--weight-decay-all-layers", flags->weight_decay_all_layers, "Apply --weight-decay to every layer");
  cmd->add_option("--dropout", flags->dropout, "Dropout probability on every layer's input, in [0, 1)")
      ->check(CLI::Range(0.0, 0.999))->capture_default_str();
  cmd->add_option("--seed", flags->seed, "Seed of weight init and dropout (results do not depend on the rank count)")
      ->capture_default_str();
  cmd->add_flag("--row-normalize", flags->row_normalize, "Divide each feature row by its sum (Kipf & Welling)");
  cmd->add_option("--eval-every", flags->eval_every, "Evaluate train/valid/test accuracy every N epochs")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))->capture_default_str();
  cmd->add_option("--patience", flags->patience, "Stop after N evaluations without a better valid accuracy (0: off)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--threads", flags->threads,
                  "OpenMP threads per rank (default: OMP_NUM_THREADS, else the node's cores / ranks on the node)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--metrics", flags->metrics, "Write JSON lines: one object per evaluated epoch, then a final one");
  cmd->add_option("--checkpoint", flags->checkpoint, "Checkpoint directory (DIR/checkpoint.bin, written atomically)");
  cmd->add_option("--checkpoint-every", flags->checkpoint_every, "Epochs between checkpoints (0: only at the end)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_flag("--resume", flags->resume, "Continue from --checkpoint DIR exactly where it stopped");
  cmd->add_flag("--no-overlap", flags->no_overlap, "Wait for halo exchanges before the local product (comparison)");
  cmd->add_option("--device", flags->device,
                  "cpu or cuda (default: cuda when the build has the CUDA backend and every rank sees a GPU, else cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--comm", flags->comm,
                  "With --device cuda: nccl (default; one GPU per rank) or mpi (host-staged over MPI; ranks may share "
                  "a GPU)")
      ->check(CLI::IsMember({"nccl", "mpi"}));
  cmd->add_flag("--quiet", flags->quiet, "Do not print one line per evaluated epoch");
  cmd->callback([flags] { run_train(*flags); });
}

}  // namespace halogen::app
