#pragma once
// Outputs that appear only when complete, and one lock per output.
//
// AtomicOutput (one file) and AtomicDirectory (a directory replaced as a whole) write to a temporary sibling
// named `.NAME.tmp.<pid>.<random>`: in the same directory as the output, so on the same filesystem and the
// final rename is atomic; unique per process, so two jobs never write the same temporary; hidden and never
// ending in `.h5`, so no reader takes it for an output. commit() moves it into place after its data is on
// disk (fsync). Destroyed before commit (an exception, a full disk, a bad input found half way), the object
// removes its temporary. A job killed with SIGKILL leaves its temporary behind; the next holder of the
// output's OutputLock removes it.
#include <functional>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace halogen::io {

// What AtomicOutput and AtomicDirectory share: the final path, the temporary sibling the content is built
// under (removed if the job is interrupted, core/interrupt.h), and whether it was committed.
class StagedPath {
 public:
  StagedPath(const StagedPath&) = delete;
  StagedPath& operator=(const StagedPath&) = delete;
  const std::string& temp_path() const { return temp_path_; }
  const std::string& final_path() const { return final_path_; }

 protected:
  explicit StagedPath(std::string final_path) : final_path_(std::move(final_path)) {}
  ~StagedPath();
  // Sets the temporary path (once it exists or is about to) and has an interruption remove it.
  void stage(std::string temp_path);

  std::string final_path_;
  std::string temp_path_;
  bool committed_ = false;

 private:
  int64_t interrupt_handle_ = 0;
};

class AtomicOutput : public StagedPath {
 public:
  explicit AtomicOutput(std::string final_path);  // UserError if the directory is missing or the path is one
  ~AtomicOutput();

  // fsyncs the (closed) temporary file, renames it onto the final path (replacing an existing file) and
  // fsyncs the directory. UserError naming the final path on failure; the temporary is then removed.
  void commit();
  // `message` with every mention of the temporary path replaced by the final path: errors raised while
  // writing the temporary name the file the user asked for.
  std::string name_final(const std::string& message) const;
};

// Writes `final_path` through `write(temp_path)`, which must create, fill and close the file, then commits.
// A UserError thrown by `write` is re-thrown naming the final path instead of the temporary; nothing is left.
void write_atomically(const std::string& final_path, const std::function<void(const std::string&)>& write);

// A directory whose content is replaced as a whole. The new content is built in temp_path(), a sibling
// directory `.NAME.tmp.<pid>.<random>`; commit() swaps it in:
//  - `final_dir` absent or an empty directory: one rename(2);
//  - otherwise one renameat2(RENAME_EXCHANGE) swaps the two names atomically, then the old content (now under
//    the temporary name) is removed. At every instant `final_dir` holds either the old or the new content.
//    Where the filesystem lacks RENAME_EXCHANGE: rename(final, `.NAME.old.<pid>.<random>`), then
//    rename(temp, final); a kill between the two leaves `final_dir` absent and the old content, complete,
//    under the `.old.` name, which the next OutputLock holder renames back.
// Destroyed before commit, it removes the temporary directory and everything in it.
class AtomicDirectory : public StagedPath {
 public:
  explicit AtomicDirectory(std::string final_dir);  // creates the temporary directory; UserError on failure
  ~AtomicDirectory();

  // fsyncs the temporary directory, then swaps it in (above). UserError on failure. The files in it must be
  // complete and synced already (written through AtomicOutput).
  void commit();
  // `message` with every mention of the temporary directory replaced by the final one (see AtomicOutput).
  std::string name_final(const std::string& message) const;
};

// The lock file of output NAME is `.NAME` + kLockSuffix (a long NAME is shortened with a hash, see
// atomic_file.cpp); is_lock_file_name says whether a file name has that form.
inline constexpr const char* kLockSuffix = ".halogen.lock";
inline bool is_lock_file_name(const std::string& name) {
  const std::string suffix = kLockSuffix;
  return name.size() > suffix.size() && name[0] == '.' &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// An exclusive lock on an output (file or directory) for the life of the object: flock(2) on
// `.NAME.halogen.lock` beside the output, holding the holder's pid. Taken once per job, before any work: a
// second job asking for the same output gets a UserError naming the lock file and the holder's pid. The
// kernel drops the lock when its holder dies, so a killed job never leaves a lock that refuses the next one.
// The lock file is removed on release (the holder re-checks after flock that the file it locked is still the
// one at that path, so a removal never lets two jobs hold it). While held, it removes leftovers of killed
// earlier jobs on the same output (`.NAME.tmp.<pid>.<random>`,
// `.NAME.old.<pid>.<random>`; an `.old.` directory is first renamed back when the output itself is missing).
class OutputLock {
 public:
  // `create_parent`: create the directory holding the output when missing (else that is a UserError).
  explicit OutputLock(const std::string& output_path, bool create_parent = false);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  const std::string& path() const { return lock_path_; }
  // The leftovers of killed jobs this lock removed (file names; also reported on one log line).
  const std::vector<std::string>& removed_leftovers() const { return removed_; }

 private:
  std::string lock_path_;
  int fd_ = -1;
  std::vector<std::string> removed_;
  int64_t interrupt_handle_ = 0;
};

// UserError "`what`: OUTPUT is also the input INPUT; ..." when both name the same existing file
// (std::filesystem::equivalent: symlinks, hard links, ./ and ../ spellings included). Absent paths never
// match.
void refuse_output_equal_to_input(const std::string& output, const std::string& input,
                                  const std::string& what);

// Test-only fault injection at named points of a writer: when the environment variable HALOGEN_FAULT_KILL_AT
// equals `point`, the process sends itself SIGKILL (no destructor, no atexit handler runs), as `kill -9`
// would; when HALOGEN_FAULT_STOP_AT equals it, SIGSTOP (the job pauses there, holding its lock, until
// SIGCONT). Points: "before-rename" (every AtomicOutput::commit, file synced, not yet renamed), "exchanged"
// (a directory swapped in, the old one not yet removed), "moved-old" (the fallback swap between its two
// renames); `halogen partition` adds "assignment", "shard" (part 0 written) and "meta" (meta.json written,
// not swapped in); `halogen convert --memory-limit` (OGB csv) adds "convert-runs" (edges sorted into run files
// beside the output, nothing merged yet). HALOGEN_FAULT_NO_EXCHANGE=1 makes AtomicDirectory swap as on a filesystem without
// RENAME_EXCHANGE.
void fault_point(const char* point);

}  // namespace halogen::io
