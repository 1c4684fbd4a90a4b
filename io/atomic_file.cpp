#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"

namespace halogen::io {

namespace fs = std::filesystem;

namespace {

// The directory holding an output, the output's name ("out/p8/" -> {"/abs/out", "p8"}) and the stem of its
// hidden siblings (".STEM.tmp.*", ".STEM.old.*", ".STEM.halogen.lock"): the name itself, or for a name longer
// than kMaxPlainStem its first kShortStem bytes, '~' and the 16 hex digits of FNV-1a of the whole name, so a
// sibling never overflows a legal name (NAME_MAX 255) and two long names still get two locks.
struct Sibling {
  fs::path dir;
  std::string name, stem;
};

constexpr size_t kMaxPlainStem = 200, kShortStem = 160;

std::string sibling_stem(const std::string& name) {
  if (name.size() <= kMaxPlainStem) return name;
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64-bit, over the bytes
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return name.substr(0, kShortStem) + strformat("~%016llx", static_cast<unsigned long long>(hash));
}

Sibling split_output(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  if (ec) throw UserError(path + ": cannot resolve the path: " + ec.message());
  if (p.filename().empty()) p = p.parent_path();  // a trailing '/'
  if (p.filename().empty() || p == p.root_path()) throw UserError(path + ": not a valid output path");
  const std::string name = p.filename().string();
  return {p.parent_path(), name, sibling_stem(name)};
}

// UserError "OUTPUT: cannot write in the directory DIR: <reason>" unless the process may create files in dir
// (read-only filesystem, no write or search permission), so an unwritable place is named with its reason
// instead of a hidden temporary's name.
void check_writable_dir(const std::string& output, const fs::path& dir) {
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UserError(output + ": cannot write in the directory " + dir.string() + ": " + std::strerror(errno));
}

// "<pid>.<16 hex digits>": unique per process (the pid) and per call (the random part).
std::string unique_suffix() {
  static std::random_device device;
  const uint64_t random = (static_cast<uint64_t>(device()) << 32) ^ device();
  return strformat("%lld.%016llx", static_cast<long long>(getpid()), static_cast<unsigned long long>(random));
}

// Whether `file` is `prefix` followed by a unique_suffix().
bool is_leftover(const std::string& file, const std::string& prefix) {
  if (file.compare(0, prefix.size(), prefix) != 0) return false;
  size_t i = prefix.size(), digits = 0, hex = 0;
  while (i < file.size() && std::isdigit(static_cast<unsigned char>(file[i]))) ++i, ++digits;
  if (digits == 0 || i >= file.size() || file[i++] != '.') return false;
  while (i < file.size() && std::isxdigit(static_cast<unsigned char>(file[i]))) ++i, ++hex;
  return hex > 0 && i == file.size();
}

// fsync(2) of a file or directory; returns errno (0 on success).
int sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) return errno;
  const int status = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  // Some filesystems refuse fsync on a directory (EINVAL); there is nothing more to make durable then.
  return directory && status == EINVAL ? 0 : status;
}

// Test-only: HALOGEN_FAULT_NO_EXCHANGE=1 makes AtomicDirectory take the path of filesystems without
// RENAME_EXCHANGE.
bool exchange_disabled() {
  const char* value = std::getenv("HALOGEN_FAULT_NO_EXCHANGE");
  return value && std::strcmp(value, "1") == 0;
}

}  // namespace

StagedPath::~StagedPath() { interrupt::untrack(interrupt_handle_); }

void StagedPath::stage(std::string temp_path) {
  temp_path_ = std::move(temp_path);
  interrupt_handle_ = interrupt::track(temp_path_);
}

AtomicOutput::AtomicOutput(std::string final_path) : StagedPath(std::move(final_path)) {
  const fs::path target(final_path_);
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw UserError(final_path_ + ": directory " + dir.string() + " does not exist");
  if (fs::is_directory(target, ec)) throw UserError(final_path_ + ": is a directory");
  const Sibling sibling = split_output(final_path_);
  check_writable_dir(final_path_, dir);
  stage((dir / ("." + sibling.stem + ".tmp." + unique_suffix())).string());
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) std::remove(temp_path_.c_str());
}

void AtomicOutput::commit() {
  const int sync_error = sync_path(temp_path_, false);
  if (sync_error != 0) {
    std::remove(temp_path_.c_str());
    throw UserError(final_path_ + ": cannot write: " + std::strerror(sync_error));
  }
  fault_point("before-rename");
  std::error_code ec;
  fs::rename(temp_path_, final_path_, ec);
  if (ec) {
    std::remove(temp_path_.c_str());
    throw UserError(final_path_ + ": cannot move the finished file into place: " + ec.message());
  }
  committed_ = true;
  // Makes the rename durable; the file is in place already, so a failure here is no reason to fail the job.
  sync_path(split_output(final_path_).dir.string(), true);
}

namespace {
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}
}  // namespace

std::string AtomicOutput::name_final(const std::string& message) const {
  return replace_all(message, temp_path_, final_path_);
}

void write_atomically(const std::string& final_path, const std::function<void(const std::string&)>& write) {
  AtomicOutput output(final_path);
  try {
    write(output.temp_path());
  } catch (const UserError& e) {
    throw UserError(output.name_final(e.what()));
  }
  output.commit();
}

AtomicDirectory::AtomicDirectory(std::string final_dir) : StagedPath(std::move(final_dir)) {
  const Sibling sibling = split_output(final_path_);
  std::error_code ec;
  fs::create_directories(sibling.dir, ec);
  if (ec)
    throw UserError(final_path_ + ": cannot create the directory " + sibling.dir.string() + ": " +
                    ec.message());
  check_writable_dir(final_path_, sibling.dir);
  const std::string temp = (sibling.dir / ("." + sibling.stem + ".tmp." + unique_suffix())).string();
  if (!fs::create_directory(temp, ec) || ec)
    throw UserError(final_path_ + ": cannot create the temporary directory " + temp + ": " +
                    (ec ? ec.message() : std::string("it exists")));
  stage(temp);
}

AtomicDirectory::~AtomicDirectory() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(temp_path_, ignored);
}

void AtomicDirectory::commit() {
  const Sibling sibling = split_output(final_path_);
  const std::string target = (sibling.dir / sibling.name).string();
  const int sync_error = sync_path(temp_path_, true);
  if (sync_error != 0) throw UserError(final_path_ + ": cannot write: " + std::strerror(sync_error));
  std::error_code ec;
  // The new directory keeps the permissions of the one it replaces (set only now: they may forbid writing).
  if (fs::is_directory(target, ec))
    fs::permissions(temp_path_, fs::status(target, ec).permissions(), fs::perm_options::replace, ec);
  const bool replace = fs::exists(target, ec) && !(fs::is_directory(target, ec) && fs::is_empty(target, ec));
  if (!replace) {
    // rename(2) replaces an empty directory atomically.
    if (std::rename(temp_path_.c_str(), target.c_str()) != 0)
      throw UserError(final_path_ +
                      ": cannot move the finished directory into place: " + std::strerror(errno));
    committed_ = true;
  } else if (!exchange_disabled() &&
             ::renameat2(AT_FDCWD, temp_path_.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    committed_ = true;  // temp_path_ now names the old content
    fault_point("exchanged");
    sync_path(sibling.dir.string(), true);
    fs::remove_all(temp_path_, ec);
    return;
  } else if (!exchange_disabled() && errno != EINVAL && errno != ENOSYS) {
    throw UserError(final_path_ + ": cannot swap the finished directory into place: " + std::strerror(errno));
  } else {
    // No RENAME_EXCHANGE on this filesystem: two renames (OutputLock's holder repairs a kill between them).
    const std::string old_path = (sibling.dir / ("." + sibling.stem + ".old." + unique_suffix())).string();
    if (std::rename(target.c_str(), old_path.c_str()) != 0)
      throw UserError(final_path_ + ": cannot move the old directory aside: " + std::strerror(errno));
    fault_point("moved-old");
    if (std::rename(temp_path_.c_str(), target.c_str()) != 0) {
      const int error = errno;
      std::rename(old_path.c_str(), target.c_str());
      throw UserError(final_path_ +
                      ": cannot move the finished directory into place: " + std::strerror(error));
    }
    committed_ = true;
    sync_path(sibling.dir.string(), true);
    fs::remove_all(old_path, ec);
    return;
  }
  sync_path(sibling.dir.string(), true);
}

std::string AtomicDirectory::name_final(const std::string& message) const {
  std::string final_dir = final_path_;
  while (final_dir.size() > 1 && final_dir.back() == '/') final_dir.pop_back();
  return replace_all(message, temp_path_, final_dir);
}

namespace {

// Removes what killed jobs left beside `dir/name` (see OutputLock); called with the lock held, so no running
// job owns any of it. Returns the names removed (a directory put back is not counted).
std::vector<std::string> remove_leftovers(const fs::path& dir, const std::string& name, const std::string& stem) {
  const std::string tmp_prefix = "." + stem + ".tmp.", old_prefix = "." + stem + ".old.";
  std::vector<fs::path> temporaries, olds;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (is_leftover(file, tmp_prefix))
      temporaries.push_back(it->path());
    else if (is_leftover(file, old_prefix))
      olds.push_back(it->path());
  }
  const fs::path target = dir / name;
  if (!olds.empty() && !fs::exists(target, ec)) {
    // A directory swap without RENAME_EXCHANGE was killed between its two renames: the old one goes back.
    fs::rename(olds.back(), target, ec);
    if (!ec) olds.pop_back();
  }
  std::vector<std::string> removed;
  for (const std::vector<fs::path>* list : {&temporaries, &olds})
    for (const fs::path& leftover : *list)
      if (fs::remove_all(leftover, ec) > 0 && !ec) removed.push_back(leftover.filename().string());
  return removed;
}

std::string read_holder(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string holder(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder.empty() ? "an unknown process" : holder;
}

}  // namespace

OutputLock::OutputLock(const std::string& output_path, bool create_parent) {
  const Sibling sibling = split_output(output_path);
  std::error_code ec;
  if (create_parent) fs::create_directories(sibling.dir, ec);
  if (ec)
    throw UserError(output_path + ": cannot create the directory " + sibling.dir.string() + ": " +
                    ec.message());
  if (!fs::is_directory(sibling.dir, ec))
    throw UserError(output_path + ": directory " + sibling.dir.string() + " does not exist");
  check_writable_dir(output_path, sibling.dir);
  lock_path_ = (sibling.dir / ("." + sibling.stem + kLockSuffix)).string();
  // A previous holder removes the file as it releases it: if the file we locked is no longer the one at
  // lock_path_, we locked a removed file, and try again on the new one.
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw UserError(lock_path_ + ": cannot create the lock file: " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = read_holder(fd);
      ::close(fd);
      if (error == EWOULDBLOCK)
        throw UserError(strformat("%s: another job is writing it (lock %s held by %s)", output_path.c_str(),
                                  lock_path_.c_str(), holder.c_str()));
      throw UserError(lock_path_ + ": cannot lock: " + std::strerror(error));
    }
    struct stat locked {
    }, current{};
    if (::fstat(fd, &locked) == 0 && ::stat(lock_path_.c_str(), &current) == 0 &&
        locked.st_dev == current.st_dev && locked.st_ino == current.st_ino)
      fd_ = fd;
    else
      ::close(fd);
  }
  if (fd_ < 0) throw UserError(lock_path_ + ": cannot lock: the lock file keeps being replaced");
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::string holder = strformat("pid %lld on %s\n", static_cast<long long>(getpid()), host);
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, holder.data(), holder.size(), 0) < 0) {
    // The lock is held all the same; only the holder's name is missing from the file.
  }
  interrupt_handle_ = interrupt::track(lock_path_);  // an interrupted job removes it as a release would
  removed_ = remove_leftovers(sibling.dir, sibling.name, sibling.stem);
  if (!removed_.empty())
    log::info(strformat("%s: removed %zu leftover%s of a killed job (%s%s) from %s", output_path.c_str(),
                        removed_.size(), removed_.size() == 1 ? "" : "s", removed_[0].c_str(),
                        removed_.size() > 1 ? ", ..." : "", sibling.dir.c_str()));
}

OutputLock::~OutputLock() {
  interrupt::untrack(interrupt_handle_);
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // while still locked: see the constructor
  ::close(fd_);
}

void refuse_output_equal_to_input(const std::string& output, const std::string& input,
                                  const std::string& what) {
  std::error_code ec;
  if (fs::equivalent(output, input, ec) && !ec)
    throw UserError(
        strformat("%s: %s is also the input %s; writing it would destroy the input (choose another "
                  "output)",
                  what.c_str(), output.c_str(), input.c_str()));
}

void fault_point(const char* point) {
  const char* kill_at = std::getenv("HALOGEN_FAULT_KILL_AT");
  if (kill_at && std::strcmp(kill_at, point) == 0) std::raise(SIGKILL);
  const char* stop_at = std::getenv("HALOGEN_FAULT_STOP_AT");
  if (stop_at && std::strcmp(stop_at, point) == 0) std::raise(SIGSTOP);
}

}  // namespace halogen::io
