#include "train/checkpoint.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/format.h"

namespace halogen::train {
namespace {

constexpr char kMagic[] = "HALOGEN-CKPT";  // 12 bytes + NUL
constexpr uint32_t kVersion = 1;

uint64_t fnv1a(const std::string& bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

class Writer {
 public:
  template <typename T>
  void pod(const T& value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T)); }
  void string(const std::string& s) {
    pod<int64_t>(static_cast<int64_t>(s.size()));
    bytes_.append(s);
  }
  void floats(const std::vector<float>& v) {
    pod<int64_t>(static_cast<int64_t>(v.size()));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <typename T>
  T pod() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string string() {
    const int64_t n = length();
    need(n);
    std::string s = bytes_.substr(offset_, n);
    offset_ += n;
    return s;
  }
  std::vector<float> floats() {
    const int64_t n = length();
    need(n * sizeof(float));
    std::vector<float> v(n);
    std::memcpy(v.data(), bytes_.data() + offset_, n * sizeof(float));
    offset_ += n * sizeof(float);
    return v;
  }

 private:
  int64_t length() {
    const int64_t n = pod<int64_t>();
    HALOGEN_USER_CHECK(n >= 0 && n <= static_cast<int64_t>(bytes_.size()), "%s: corrupt checkpoint (length %lld)",
                       path_.c_str(), (long long)n);
    return n;
  }
  void need(size_t n) {
    HALOGEN_USER_CHECK(offset_ + n <= bytes_.size(), "%s: truncated checkpoint", path_.c_str());
  }
  const std::string& bytes_;
  const std::string& path_;
  size_t offset_ = 0;
};

}  // namespace

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.bin"; }

void write_checkpoint(const std::string& dir, const CheckpointState& s) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  HALOGEN_USER_CHECK(!error, "%s: cannot create the checkpoint directory: %s", dir.c_str(), error.message().c_str());
  Writer w;
  w.bytes().append(kMagic, sizeof(kMagic) - 1);
  w.pod(kVersion);
  w.string(s.fingerprint);
  w.pod(s.epoch);
  w.pod(s.adam_steps);
  w.pod(s.best_epoch);
  w.pod(s.best_valid_acc);
  w.pod(s.test_acc_at_best);
  w.pod(s.train_acc_at_best);
  w.pod(s.evals_since_best);
  w.floats(s.params);
  w.floats(s.adam_m);
  w.floats(s.adam_v);
  w.pod(fnv1a(w.bytes()));

  const std::string path = checkpoint_path(dir);
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  FILE* file = std::fopen(temp.c_str(), "wb");
  HALOGEN_USER_CHECK(file != nullptr, "%s: cannot write checkpoint: %s", temp.c_str(), std::strerror(errno));
  const bool written = std::fwrite(w.bytes().data(), 1, w.bytes().size(), file) == w.bytes().size() &&
                       std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temp.c_str());
    throw UserError(strformat("%s: cannot write checkpoint: %s", path.c_str(), reason.c_str()));
  }
}

CheckpointState read_checkpoint(const std::string& dir) {
  const std::string path = checkpoint_path(dir);
  std::ifstream in(path, std::ios::binary);
  HALOGEN_USER_CHECK(in.good(), "%s: no checkpoint to resume from (run once with --checkpoint %s)", path.c_str(),
                     dir.c_str());
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t magic_size = sizeof(kMagic) - 1;
  HALOGEN_USER_CHECK(bytes.size() >= magic_size + sizeof(uint32_t) + sizeof(uint64_t) &&
                         bytes.compare(0, magic_size, kMagic) == 0,
                     "%s: not a Halogen checkpoint", path.c_str());
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(uint64_t), sizeof(uint64_t));
  const std::string body = bytes.substr(0, bytes.size() - sizeof(uint64_t));
  HALOGEN_USER_CHECK(fnv1a(body) == stored, "%s: corrupt checkpoint (checksum mismatch)", path.c_str());
  Reader r(body, path);
  for (size_t i = 0; i < magic_size; ++i) r.pod<char>();
  const uint32_t version = r.pod<uint32_t>();
  HALOGEN_USER_CHECK(version == kVersion, "%s: checkpoint version %u, this build reads %u", path.c_str(), version,
                     kVersion);
  CheckpointState s;
  s.fingerprint = r.string();
  s.epoch = r.pod<int64_t>();
  s.adam_steps = r.pod<int64_t>();
  s.best_epoch = r.pod<int64_t>();
  s.best_valid_acc = r.pod<double>();
  s.test_acc_at_best = r.pod<double>();
  s.train_acc_at_best = r.pod<double>();
  s.evals_since_best = r.pod<int64_t>();
  s.params = r.floats();
  s.adam_m = r.floats();
  s.adam_v = r.floats();
  return s;
}

}  // namespace halogen::train
