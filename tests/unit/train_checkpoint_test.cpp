// Checkpoint files (train/checkpoint.h): the HDF5 layout other tools read (dataset names and shapes, root
// attributes), a round trip of every field, corruption / truncation / a missing or misshapen tensor as
// UserErrors, and the --resume rules (compare_run_options and the Trainer's refusals on one rank).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <functional>
#include <iterator>
#include <string>

#include "comm/self_comm.h"
#include "core/error.h"
#include "io/h5.h"
#include "train/checkpoint.h"
#include "train/synthetic_graph.h"
#include "train/trainer.h"
#include "temp_dir_util.h"

namespace halogen {
namespace {

std::string temp_dir(const std::string& name) { return halogen::test::fresh_temp_subdir("checkpoint_test", name); }

nn::ParameterInfo info(const std::string& name, int layer, int64_t rows, int64_t cols, int64_t offset, bool bias) {
  nn::ParameterInfo i;
  i.name = name;
  i.layer = layer;
  i.rows = rows;
  i.cols = cols;
  i.offset = offset;
  i.is_bias = bias;
  return i;
}

// layer0.weight [3, 2], layer0.bias [2], head.weight (layer 1) [2, 1]: 6 + 2 + 2 = 10 floats. Values are
// distinctive (k + 0.25) so that a test can find the tensor's bytes in the file.
train::CheckpointState sample_state() {
  train::CheckpointState s;
  s.layout = {info("layer0.weight", 0, 3, 2, 0, false), info("layer0.bias", 0, 1, 2, 6, true),
              info("head.weight", 1, 2, 1, 8, false)};
  for (int k = 0; k < 10; ++k) {
    s.params.push_back(static_cast<float>(k) + 1000.25f);
    s.adam_m.push_back(static_cast<float>(k) * 0.5f);
    s.adam_v.push_back(static_cast<float>(k) * 0.125f);
  }
  train::CheckpointHeader& h = s.header;
  h.model = "gcn";
  h.task = "node-classification";
  h.fingerprint = "model=gcn layers=2";
  h.graph_checksum = "fnv1a64:0123456789abcdef";
  h.partition = R"({"parts": 2})";
  h.config = R"({"lr": 0.01, "hidden": 16})";
  h.epoch = 7;
  h.adam_steps = 7;
  h.best_epoch = 5;
  h.best_valid_acc = 0.75;
  h.test_acc_at_best = 0.5;
  h.train_acc_at_best = 0.25;
  h.evals_since_best = 2;
  h.rng_seed = 18446744073709551615ull;  // the largest seed: uint64 on disk
  return s;
}

TEST(CheckpointLayout, DatasetNamesDropOnlyTheOwnLayerPrefix) {
  EXPECT_EQ(train::tensor_dataset(info("layer0.weight", 0, 1, 1, 0, false)), "layers/0/weight");
  EXPECT_EQ(train::tensor_dataset(info("layer1.weight_self", 1, 1, 1, 0, false)), "layers/1/weight_self");
  EXPECT_EQ(train::tensor_dataset(info("tgcn.conv_bias", 0, 1, 1, 0, true)), "layers/0/tgcn.conv_bias");
  EXPECT_EQ(train::tensor_dataset(info("egcn.layer0.weight", 0, 1, 1, 0, false)), "layers/0/egcn.layer0.weight");
  EXPECT_EQ(train::tensor_dataset(info("head.bias", 2, 1, 1, 0, true)), "layers/2/head.bias");
}

TEST(CheckpointLayout, FileHasTheDocumentedDatasetsAndAttributes) {
  const std::string dir = temp_dir("layout");
  const std::string path = train::last_checkpoint_path(dir);
  train::write_checkpoint(path, sample_state());
  const h5::File file(path, h5::Mode::read);
  EXPECT_EQ(file.attr_string("format"), "halogen.checkpoint");
  EXPECT_EQ(file.attr_int("format_version"), 1);
  EXPECT_EQ(file.attr_int("epoch"), 7);
  EXPECT_EQ(file.attr_string("graph_checksum"), "fnv1a64:0123456789abcdef");
  EXPECT_EQ(file.attr_string("config"), R"({"lr": 0.01, "hidden": 16})");
  EXPECT_EQ(file.attr_int("steps", "/optimizer"), 7);
  for (const std::string root : {"/", "/optimizer/m/", "/optimizer/v/"}) {
    EXPECT_EQ(file.shape(root + "layers/0/weight"), (std::vector<int64_t>{3, 2})) << root;
    EXPECT_EQ(file.shape(root + "layers/0/bias"), (std::vector<int64_t>{2})) << root << ": a bias is 1-D";
    EXPECT_EQ(file.shape(root + "layers/1/head.weight"), (std::vector<int64_t>{2, 1})) << root;
  }
  EXPECT_EQ(file.read<float>("/layers/0/bias"), (std::vector<float>{1006.25f, 1007.25f}));
  EXPECT_EQ(file.read<float>("/optimizer/v/layers/1/head.weight"), (std::vector<float>{1.0f, 1.125f}));
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename(), "last.h5") << "temporary file left behind";
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, RoundTripsEveryField) {
  const std::string dir = temp_dir("roundtrip");
  const std::string path = train::last_checkpoint_path(dir);
  const train::CheckpointState s = sample_state();
  train::write_checkpoint(path, s);
  const train::CheckpointState r = train::read_checkpoint(path, s.layout, true);
  const train::CheckpointHeader &a = r.header, &b = s.header;
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.graph_checksum, b.graph_checksum);
  EXPECT_EQ(a.partition, b.partition);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.adam_steps, b.adam_steps);
  EXPECT_EQ(a.best_epoch, b.best_epoch);
  EXPECT_EQ(a.best_valid_acc, b.best_valid_acc);
  EXPECT_EQ(a.test_acc_at_best, b.test_acc_at_best);
  EXPECT_EQ(a.train_acc_at_best, b.train_acc_at_best);
  EXPECT_EQ(a.evals_since_best, b.evals_since_best);
  EXPECT_EQ(a.rng_seed, b.rng_seed);
  EXPECT_EQ(r.params, s.params);
  EXPECT_EQ(r.adam_m, s.adam_m);
  EXPECT_EQ(r.adam_v, s.adam_v);
  const train::CheckpointState weights_only = train::read_checkpoint(path, s.layout, false);
  EXPECT_EQ(weights_only.params, s.params);
  EXPECT_TRUE(weights_only.adam_m.empty());
  std::filesystem::remove_all(dir);
}

std::string what(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Checkpoint, CorruptTruncatedMissingAndMisshapenAreUserErrors) {
  const std::string dir = temp_dir("corrupt");
  const std::string path = train::last_checkpoint_path(dir);
  const train::CheckpointState s = sample_state();
  EXPECT_NE(what([&] { train::read_checkpoint(path, s.layout, true); }).find(path), std::string::npos);  // missing

  train::write_checkpoint(path, s);
  train::CheckpointState other = s;
  other.layout[2].rows = 4;  // head.weight [4, 1]
  const std::string misshapen = what([&] { train::read_checkpoint(path, other.layout, false); });
  EXPECT_NE(misshapen.find("/layers/1/head.weight: shape [2, 1], the model needs [4, 1]"), std::string::npos)
      << misshapen;
  other = s;
  other.layout[1].name = "layer0.other";
  EXPECT_NE(what([&] { train::read_checkpoint(path, other.layout, false); }).find("/layers/0/other: missing"),
            std::string::npos);

  // One flipped bit inside layer0.weight's data (found by its values: the dataset is stored contiguously).
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string needle(reinterpret_cast<const char*>(s.params.data()), 6 * sizeof(float));
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos) << "layer0.weight's bytes not found in the file";
  bytes[at + 5] ^= 0x01;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string corrupt = what([&] { train::read_checkpoint(path, s.layout, false); });
  EXPECT_NE(corrupt.find("/layers/0/weight: checksum mismatch"), std::string::npos) << corrupt;

  std::filesystem::resize_file(path, 100);
  EXPECT_NE(what([&] { train::read_checkpoint_header(path); }).find(path), std::string::npos);  // truncated
  std::filesystem::remove_all(dir);
}

// A NaN (or infinite) parameter or moment is not written (and read_checkpoint refuses one written by another
// tool with a valid checksum: tests/train/checkpoint_rules.sh); no file is left behind.
TEST(Checkpoint, NonFiniteValuesAreNotWritten) {
  const std::string dir = temp_dir("nonfinite");
  const std::string path = train::last_checkpoint_path(dir);
  train::CheckpointState s = sample_state();
  s.params[4] = std::numeric_limits<float>::quiet_NaN();
  const std::string nan = what([&] { train::write_checkpoint(path, s); });
  EXPECT_NE(nan.find("not written: a parameter value (flat index 4) is not finite"), std::string::npos) << nan;
  s = sample_state();
  s.adam_v[0] = std::numeric_limits<float>::infinity();
  const std::string inf = what([&] { train::write_checkpoint(path, s); });
  EXPECT_NE(inf.find("not written: an optimizer value (flat index 0) is not finite"), std::string::npos) << inf;
  EXPECT_FALSE(std::filesystem::exists(path));
  std::filesystem::remove_all(dir);
}

TEST(Checkpoint, ADirectoryMeansItsBestElseItsLast) {
  const std::string dir = temp_dir("resolve");
  EXPECT_NE(what([&] { train::resolve_checkpoint(dir); }).find("without best.h5 or last.h5"), std::string::npos);
  train::write_checkpoint(train::last_checkpoint_path(dir), sample_state());
  EXPECT_EQ(train::resolve_checkpoint(dir), train::last_checkpoint_path(dir));
  train::write_checkpoint(train::best_checkpoint_path(dir), sample_state());
  EXPECT_EQ(train::resolve_checkpoint(dir), train::best_checkpoint_path(dir));
  EXPECT_EQ(train::resolve_checkpoint(train::last_checkpoint_path(dir)), train::last_checkpoint_path(dir));
  std::filesystem::remove_all(dir);
}

TEST(ResumeRules, OptionsAreComparedByValueWithOldAndNewInTheMessage) {
  train::RunOptions run;
  train::add_option(run, "model", "gcn");
  train::add_option(run, "hidden", int64_t{16});
  train::add_option(run, "lr", 0.01f);
  train::add_option(run, "row_normalize", true);
  const std::string recorded = train::options_json(run);
  EXPECT_EQ(recorded, R"({"model": "gcn", "hidden": 16, "lr": 0.01, "row_normalize": true})");
  EXPECT_EQ(train::compare_run_options(recorded, run, false), "");

  train::RunOptions changed = run;
  changed[2].value = train::json_value(0.02f);
  EXPECT_EQ(train::compare_run_options(recorded, changed, false),
            "--lr is 0.02, the checkpoint was trained with 0.01 (--allow-lr-change continues with the new rate)");
  EXPECT_EQ(train::compare_run_options(recorded, changed, true), "");
  changed[1].value = train::json_value(int64_t{8});
  EXPECT_EQ(train::compare_run_options(recorded, changed, true), "--hidden is 8, the checkpoint was trained with 16");
  changed = run;
  changed[0].value = train::json_value("sage");
  EXPECT_EQ(train::compare_run_options(recorded, changed, true), "--model is sage, the checkpoint was trained with gcn");
  changed = run;
  changed[3].value = train::json_value(false);
  EXPECT_EQ(train::compare_run_options(recorded, changed, true),
            "--row-normalize is false, the checkpoint was trained with true");
  changed = run;
  train::add_option(changed, "dropout", 0.5f);
  EXPECT_EQ(train::compare_run_options(recorded, changed, false),
            "--dropout is 0.5, the checkpoint records no --dropout");
  changed = run;
  changed.pop_back();
  EXPECT_EQ(train::compare_run_options(recorded, changed, false),
            "the checkpoint was trained with --row-normalize true, which this run does not have");
}

train::TrainConfig small_config(const std::string& dir) {
  train::TrainConfig config;
  config.model.layers = 2;
  config.model.hidden = 8;
  config.model.seed = 1;
  config.epochs = 4;
  config.print_epochs = false;
  config.checkpoint_dir = dir;
  config.graph_checksum = "fnv1a64:graph-a";
  return config;
}

std::string resume_error(const train::TrainConfig& config) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  comm::SelfComm comm;
  return what([&] {
    train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
    trainer.run();
  });
}

TEST(ResumeRules, TrainerRefusesAnotherGraphOrOptionsAndAcceptsLoopOptions) {
  const std::string dir = temp_dir("rules");
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  comm::SelfComm comm;
  {
    train::TrainConfig first = small_config(dir);
    first.save_best = true;
    train::Trainer trainer(comm, testing::whole_graph_shard(g), first);
    const train::TrainResult result = trainer.run();
    const train::CheckpointHeader best = train::read_checkpoint_header(train::best_checkpoint_path(dir));
    EXPECT_EQ(best.epoch, result.best_epoch);
    EXPECT_EQ(best.best_valid_acc, result.best_valid_acc);
    EXPECT_EQ(train::read_checkpoint_header(train::last_checkpoint_path(dir)).epoch, 4);
  }
  train::TrainConfig resumed = small_config(dir);
  resumed.resume = true;
  resumed.epochs = 6;

  train::TrainConfig c = resumed;
  c.graph_checksum = "fnv1a64:graph-b";
  std::string message = resume_error(c);
  EXPECT_NE(message.find("--resume on another graph: the checkpoint was trained on the graph with checksum "
                         "fnv1a64:graph-a, this partition's graph has checksum fnv1a64:graph-b"),
            std::string::npos) << message;
  c = resumed;
  c.lr = 0.02f;
  message = resume_error(c);
  EXPECT_NE(message.find("--lr is 0.02, the checkpoint was trained with 0.01"), std::string::npos) << message;
  c = resumed;
  c.model.dropout = 0.25f;
  EXPECT_NE(resume_error(c).find("--dropout is 0.25, the checkpoint was trained with 0.5"), std::string::npos);
  c = resumed;
  c.weight_decay = 0.0f;
  EXPECT_NE(resume_error(c).find("--weight-decay is 0, the checkpoint was trained with 0.0005"), std::string::npos);
  c = resumed;
  c.model.seed = 2;
  EXPECT_NE(resume_error(c).find("--seed is 2, the checkpoint was trained with 1"), std::string::npos);
  c = resumed;
  c.preprocessing = {{"row_normalize", "true"}};
  EXPECT_NE(resume_error(c).find("--row-normalize is true, the checkpoint records no --row-normalize"),
            std::string::npos) << "an option the checkpoint lacks is a change too";

  // Allowed: a changed lr with allow_lr_change, and the loop options.
  c = resumed;
  c.lr = 0.02f;
  c.allow_lr_change = true;
  c.eval_every = 2;
  c.patience = 5;
  c.checkpoint_every = 1;
  EXPECT_EQ(resume_error(c), "(no error)");
  EXPECT_EQ(train::read_checkpoint_header(train::last_checkpoint_path(dir)).epoch, 6);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace halogen
