#include "train/checkpoint.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "io/h5.h"

namespace halogen::train {
namespace {

// Dataset shape of a parameter: biases of one row are 1-D.
std::vector<int64_t> tensor_dims(const nn::ParameterInfo& info) {
  if (info.is_bias && info.rows == 1) return {info.cols};
  return {info.rows, info.cols};
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i > 0 ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// uint64 attributes (h5::File writes int64, double and strings only).
void write_uint64_attr(const h5::File& file, const char* name, uint64_t value) {
  h5::Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  h5::Handle attr(H5Acreate2(file.id(), name, H5T_NATIVE_UINT64, space.id(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.id(), H5T_NATIVE_UINT64, &value) < 0)
    throw UserError(file.path() + ": cannot write attribute " + name);
}

uint64_t read_uint64_attr(const h5::File& file, const char* name) {
  if (!file.has_attr(name)) throw UserError(file.path() + ": attribute /@" + std::string(name) + " missing");
  h5::Handle attr(H5Aopen(file.id(), name, H5P_DEFAULT), H5Aclose);
  uint64_t value = 0;
  if (!attr.valid() || H5Aread(attr.id(), H5T_NATIVE_UINT64, &value) < 0)
    throw UserError(file.path() + ": cannot read attribute /@" + std::string(name));
  return value;
}

void write_tensors(h5::File& file, const std::string& root, const std::vector<nn::ParameterInfo>& layout,
                   const std::vector<float>& values) {
  for (const nn::ParameterInfo& info : layout) {
    const std::string dataset = root + tensor_dataset(info);
    const float* data = values.data() + info.offset;
    file.write(dataset, data, tensor_dims(info));
  }
}

void read_tensors(const h5::File& file, const std::string& root, const std::vector<nn::ParameterInfo>& layout,
                  std::vector<float>& values) {
  int64_t total = 0;
  for (const nn::ParameterInfo& info : layout) total = std::max(total, info.offset + info.size());
  values.assign(static_cast<size_t>(total), 0.0f);
  for (const nn::ParameterInfo& info : layout) {
    const std::string dataset = root + tensor_dataset(info);
    HALOGEN_USER_CHECK(file.exists(dataset), "%s: %s: missing (the checkpoint holds another model: parameter %s)",
                       file.path().c_str(), dataset.c_str(), info.name.c_str());
    const std::vector<int64_t> expected = tensor_dims(info);
    const std::vector<int64_t> found = file.shape(dataset);
    HALOGEN_USER_CHECK(found == expected, "%s: %s: shape %s, the model needs %s", file.path().c_str(),
                       dataset.c_str(), dims_text(found).c_str(), dims_text(expected).c_str());
    const std::vector<float> data = file.read<float>(dataset);
    // Training never writes a non-finite parameter (it stops at a NaN loss), and Adam's moments are finite too.
    for (size_t i = 0; i < data.size(); ++i)
      HALOGEN_USER_CHECK(std::isfinite(data[i]), "%s: %s: element %zu is not finite (%g)", file.path().c_str(),
                         dataset.c_str(), i, static_cast<double>(data[i]));
    std::copy(data.begin(), data.end(), values.begin() + info.offset);
  }
}

// fsync, so that the rename cannot reach the disk before the data.
void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  HALOGEN_USER_CHECK(synced, "%s: cannot sync the checkpoint to disk: %s", path.c_str(), std::strerror(errno));
}

std::string option_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string flag_name(std::string name) {
  for (char& c : name)
    if (c == '_') c = '-';
  return "--" + name;
}

}  // namespace

std::string last_checkpoint_path(const std::string& dir) { return dir + "/last.h5"; }
std::string best_checkpoint_path(const std::string& dir) { return dir + "/best.h5"; }

std::string resolve_checkpoint(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    HALOGEN_USER_CHECK(std::filesystem::exists(path, error), "%s: no such checkpoint file or directory",
                       path.c_str());
    return path;
  }
  for (const std::string& candidate : {best_checkpoint_path(path), last_checkpoint_path(path)})
    if (std::filesystem::is_regular_file(candidate, error)) return candidate;
  throw UserError(path + ": a directory without best.h5 or last.h5 (not a checkpoint directory of `halogen train "
                  "--checkpoint`)");
}

std::string tensor_dataset(const nn::ParameterInfo& info) {
  const std::string prefix = "layer" + std::to_string(info.layer) + ".";
  std::string name = info.name;
  // "layerK." with K the parameter's own layer; names of other shapes are kept whole.
  if (name.compare(0, prefix.size(), prefix) == 0 && name.size() > prefix.size()) name = name.substr(prefix.size());
  return "layers/" + std::to_string(info.layer) + "/" + name;
}

std::vector<nn::ParameterInfo> parameter_layout(const nn::ParameterStore& store) {
  std::vector<nn::ParameterInfo> layout;
  for (int k = 0; k < store.count(); ++k) layout.push_back(store.info(k));
  return layout;
}

void write_checkpoint(const std::string& path, const CheckpointState& s) {
  const std::filesystem::path target(path);
  std::error_code error;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
  HALOGEN_USER_CHECK(!error, "%s: cannot create the checkpoint directory: %s", path.c_str(), error.message().c_str());
  std::set<std::string> names;
  for (const nn::ParameterInfo& info : s.layout)
    HALOGEN_ASSERT(names.insert(tensor_dataset(info)).second, "two parameters map to one checkpoint dataset");
  const bool with_optimizer = !s.adam_m.empty();
  // What read_checkpoint refuses is not written (the trainer stops before a parameter becomes non-finite).
  for (const std::vector<float>* values : {&s.params, &s.adam_m, &s.adam_v})
    for (size_t i = 0; i < values->size(); ++i)
      HALOGEN_USER_CHECK(std::isfinite((*values)[i]), "%s: not written: %s value (flat index %zu) is not finite",
                         path.c_str(), values == &s.params ? "a parameter" : "an optimizer", i);

  io::AtomicOutput output(path);
  const CheckpointHeader& h = s.header;
  {
    h5::File file(output.temp_path(), h5::Mode::create);
    io::write_format(file, kCheckpointFormat, kCheckpointVersion);
    file.set_attr("epoch", h.epoch);
    file.set_attr("model", h.model);
    file.set_attr("task", h.task);
    file.set_attr("fingerprint", h.fingerprint);
    file.set_attr("graph_checksum", h.graph_checksum);
    file.set_attr("partition", h.partition.empty() ? std::string("{}") : h.partition);
    file.set_attr("config", h.config.empty() ? std::string("{}") : h.config);
    file.set_attr("best_epoch", h.best_epoch);
    file.set_attr("best_valid_acc", h.best_valid_acc);
    file.set_attr("best_valid_loss", h.best_valid_loss);
    file.set_attr("test_acc_at_best", h.test_acc_at_best);
    file.set_attr("train_acc_at_best", h.train_acc_at_best);
    file.set_attr("evals_since_best", h.evals_since_best);
    write_uint64_attr(file, "rng_seed", h.rng_seed);
    write_tensors(file, "/", s.layout, s.params);
    if (with_optimizer) {
      write_tensors(file, "/optimizer/m/", s.layout, s.adam_m);
      write_tensors(file, "/optimizer/v/", s.layout, s.adam_v);
      file.set_attr("steps", h.adam_steps, "/optimizer");
    }
  }
  // HDF5 reports some write failures only as a failed close, which h5::File cannot report: reading the file
  // back (checksums included) is what proves it complete before it replaces the previous checkpoint.
  try {
    const CheckpointState back = read_checkpoint(output.temp_path(), s.layout, with_optimizer);
    HALOGEN_USER_CHECK(back.header.epoch == h.epoch && back.params.size() == s.params.size() &&
                           std::memcmp(back.params.data(), s.params.data(), s.params.size() * sizeof(float)) == 0,
                       "read-back differs");
  } catch (const UserError& e) {
    // Named by the checkpoint, not by its hidden temporary (which AtomicOutput removes).
    std::string why = e.what();
    const std::string temp = output.temp_path() + ": ";
    if (why.rfind(temp, 0) == 0) why = "reading it back: " + why.substr(temp.size());
    throw UserError(path + ": cannot write checkpoint (disk full?): " + why + "; an earlier checkpoint stays as it was");
  }
  sync_file(output.temp_path());
  output.commit();
}

CheckpointHeader read_checkpoint_header(const std::string& path) {
  h5::File file(path, h5::Mode::read);
  HALOGEN_USER_CHECK(io::read_format(file) == kCheckpointFormat,
                     "%s: not a Halogen checkpoint (no format=\"%s\" attribute)", path.c_str(), kCheckpointFormat);
  const int64_t version = io::read_format_version(file);
  HALOGEN_USER_CHECK(version == kCheckpointVersion, "%s: checkpoint format_version %lld, this build reads %lld",
                     path.c_str(), (long long)version, (long long)kCheckpointVersion);
  CheckpointHeader h;
  h.model = file.attr_string("model");
  h.task = file.attr_string("task");
  h.fingerprint = file.attr_string("fingerprint");
  h.graph_checksum = file.attr_string("graph_checksum");
  h.partition = file.attr_string("partition");
  h.config = file.attr_string("config");
  h.epoch = file.attr_int("epoch");
  h.best_epoch = file.attr_int("best_epoch");
  h.best_valid_acc = file.attr_double("best_valid_acc");
  if (file.has_attr("best_valid_loss")) h.best_valid_loss = file.attr_double("best_valid_loss");
  h.test_acc_at_best = file.attr_double("test_acc_at_best");
  h.train_acc_at_best = file.attr_double("train_acc_at_best");
  h.evals_since_best = file.attr_int("evals_since_best");
  h.rng_seed = read_uint64_attr(file, "rng_seed");
  if (file.exists("/optimizer")) h.adam_steps = file.attr_int("steps", "/optimizer");
  // A checkpoint is written after epoch 1 at the earliest; best_epoch is 0 before the first evaluation.
  constexpr int64_t kMaxEpoch = int64_t(1) << 40;
  HALOGEN_USER_CHECK(h.epoch >= 1 && h.epoch <= kMaxEpoch, "%s: epoch: %lld is not an epoch number (1 to 2^40)",
                     path.c_str(), (long long)h.epoch);
  HALOGEN_USER_CHECK(h.best_epoch >= 0 && h.best_epoch <= h.epoch, "%s: best_epoch: %lld is not in 0..epoch (%lld)",
                     path.c_str(), (long long)h.best_epoch, (long long)h.epoch);
  HALOGEN_USER_CHECK(h.evals_since_best >= 0 && h.evals_since_best <= h.epoch,
                     "%s: evals_since_best: %lld is not in 0..epoch (%lld)", path.c_str(),
                     (long long)h.evals_since_best, (long long)h.epoch);
  HALOGEN_USER_CHECK(h.adam_steps >= 0, "%s: /optimizer steps: %lld is negative", path.c_str(),
                     (long long)h.adam_steps);
  return h;
}

CheckpointState read_checkpoint(const std::string& path, const std::vector<nn::ParameterInfo>& layout,
                                bool with_optimizer) {
  CheckpointState s;
  s.header = read_checkpoint_header(path);
  s.layout = layout;
  h5::File file(path, h5::Mode::read);
  read_tensors(file, "/", layout, s.params);
  if (with_optimizer) {
    HALOGEN_USER_CHECK(file.exists("/optimizer"), "%s: /optimizer: missing (the file holds no optimizer state)",
                       path.c_str());
    read_tensors(file, "/optimizer/m/", layout, s.adam_m);
    read_tensors(file, "/optimizer/v/", layout, s.adam_v);
  }
  return s;
}

std::string compare_run_options(const std::string& checkpoint_config, const RunOptions& run, bool allow_lr_change) {
  nlohmann::json recorded;
  try {
    recorded = nlohmann::json::parse(checkpoint_config);
  } catch (const nlohmann::json::exception&) {
    return "its config attribute is not JSON";
  }
  if (!recorded.is_object()) return "its config attribute is not a JSON object";
  std::set<std::string> seen;
  for (const RunOption& option : run) {
    seen.insert(option.name);
    const nlohmann::json value = nlohmann::json::parse(option.value);
    if (!recorded.contains(option.name))
      return strformat("%s is %s, the checkpoint records no %s", flag_name(option.name).c_str(),
                       option_text(value).c_str(), flag_name(option.name).c_str());
    const nlohmann::json& old = recorded[option.name];
    if (old == value || (option.name == "lr" && allow_lr_change)) continue;
    std::string text = strformat("%s is %s, the checkpoint was trained with %s", flag_name(option.name).c_str(),
                                 option_text(value).c_str(), option_text(old).c_str());
    if (option.name == "lr") text += " (--allow-lr-change continues with the new rate)";
    return text;
  }
  for (const auto& item : recorded.items())
    if (seen.count(item.key()) == 0)
      return strformat("the checkpoint was trained with %s %s, which this run does not have",
                       flag_name(item.key()).c_str(), option_text(item.value()).c_str());
  return "";
}

}  // namespace halogen::train
