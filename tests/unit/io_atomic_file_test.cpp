// io/atomic_file.h: temporaries unique per process and call, removed unless committed; a directory replaced
// as a whole; one lock per output (a second holder refused, naming the lock file and the pid); leftovers of
// killed jobs removed by the next holder; an output equal to an input refused.
#include "io/atomic_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "partition/test_graphs.h"

namespace halogen::io {
namespace {

namespace fs = std::filesystem;
using partition_test::TempDir;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(AtomicOutput, TemporaryIsHiddenUniqueAndNotH5) {
  TempDir dir("atomic");
  const AtomicOutput a(dir.sub("g.h5")), b(dir.sub("g.h5"));
  const std::string name = fs::path(a.temp_path()).filename().string();
  EXPECT_EQ(name.rfind(".g.h5.tmp." + std::to_string(getpid()) + ".", 0), 0u) << name;
  EXPECT_NE(name.substr(name.size() - 3), ".h5") << name;
  EXPECT_EQ(fs::path(a.temp_path()).parent_path(), fs::path(dir.path()));  // same directory: atomic rename
  EXPECT_NE(a.temp_path(), b.temp_path());  // two writers in one process do not share a temporary
}

TEST(AtomicOutput, NothingAppearsUnlessCommitted) {
  TempDir dir("atomic");
  write_text(dir.sub("g.h5"), "old");
  std::string temporary;
  {
    AtomicOutput output(dir.sub("g.h5"));
    temporary = output.temp_path();
    write_text(temporary, "half");
  }  // destroyed without commit: a failure half way
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_EQ(read_text(dir.sub("g.h5")), "old");
  {
    AtomicOutput output(dir.sub("g.h5"));
    write_text(output.temp_path(), "new");
    output.commit();
    EXPECT_FALSE(fs::exists(output.temp_path()));
  }
  EXPECT_EQ(read_text(dir.sub("g.h5")), "new");
}

TEST(AtomicOutput, WriteErrorsNameTheFinalPath) {
  TempDir dir("atomic");
  const std::string final_path = dir.sub("g.h5");
  try {
    write_atomically(final_path, [](const std::string& temporary) {
      write_text(temporary, "half");
      throw UserError(temporary + ": /csr/indices: write failed (disk full?)");
    });
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), final_path + ": /csr/indices: write failed (disk full?)");
  }
  EXPECT_TRUE(fs::is_empty(dir.path())) << "the temporary was left behind";
}

TEST(AtomicDirectory, ReplacesAWholeDirectoryOrNothing) {
  TempDir dir("atomic");
  const std::string out = dir.sub("p");
  fs::create_directory(out);
  write_text(out + "/part-00000.h5", "old 0");
  write_text(out + "/part-00001.h5", "old 1");
  {
    AtomicDirectory staged(out);
    write_text(staged.temp_path() + "/part-00000.h5", "new 0");
  }  // not committed: the old directory stays, the temporary goes
  EXPECT_EQ(read_text(out + "/part-00000.h5"), "old 0");
  EXPECT_EQ(read_text(out + "/part-00001.h5"), "old 1");
  {
    AtomicDirectory staged(out + "/");  // a trailing '/' names the same directory
    write_text(staged.temp_path() + "/part-00000.h5", "new 0");
    staged.commit();
  }
  EXPECT_EQ(read_text(out + "/part-00000.h5"), "new 0");
  EXPECT_FALSE(fs::exists(out + "/part-00001.h5"));  // the old directory went as a whole
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(dir.path())) entries += entry.path().filename() == "p" ? 0 : 1;
  EXPECT_EQ(entries, 0) << "a temporary or old directory was left beside p";
}

TEST(AtomicDirectory, CreatesAnAbsentDirectoryAndItsParents) {
  TempDir dir("atomic");
  const std::string out = dir.sub("a/b/p");
  AtomicDirectory staged(out);
  write_text(staged.temp_path() + "/meta.json", "{}");
  staged.commit();
  EXPECT_EQ(read_text(out + "/meta.json"), "{}");
}

TEST(OutputLock, SecondHolderIsRefusedWithTheLockAndPid) {
  TempDir dir("atomic");
  const std::string out = dir.sub("p");
  std::string lock_path;
  {
    const OutputLock first(out);
    lock_path = first.path();
    EXPECT_EQ(lock_path, dir.sub(".p.halogen.lock"));
    try {
      const OutputLock second(dir.path() + "/./p/");  // another spelling of the same output
      ADD_FAILURE() << "a second lock on the same output was granted";
    } catch (const UserError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(lock_path), std::string::npos) << message;
      EXPECT_NE(message.find("pid " + std::to_string(getpid())), std::string::npos) << message;
    }
    const OutputLock other(dir.sub("q"));  // another output: independent
  }
  EXPECT_FALSE(fs::exists(lock_path));  // released and removed
  const OutputLock again(out);          // and free again
}

TEST(OutputLock, RemovesWhatKilledJobsLeftBehind) {
  TempDir dir("atomic");
  write_text(dir.sub(".g.h5.tmp.123.00ff"), "killed writer");
  fs::create_directory(dir.sub(".p.tmp.77.abcdef"));
  write_text(dir.sub(".p.tmp.77.abcdef/part-00000.h5"), "killed partition");
  write_text(dir.sub(".g.h5.tmp.mine"), "not a halogen temporary");
  write_text(dir.sub(".h.h5.tmp.123.00ff"), "another output's");
  {
    const OutputLock lock(dir.sub("g.h5"));
    EXPECT_EQ(lock.removed_leftovers(), (std::vector<std::string>{".g.h5.tmp.123.00ff"}));
  }
  { const OutputLock lock(dir.sub("p")); }
  EXPECT_FALSE(fs::exists(dir.sub(".g.h5.tmp.123.00ff")));
  EXPECT_FALSE(fs::exists(dir.sub(".p.tmp.77.abcdef")));
  EXPECT_TRUE(fs::exists(dir.sub(".g.h5.tmp.mine")));
  EXPECT_TRUE(fs::exists(dir.sub(".h.h5.tmp.123.00ff")));
  // A swap without RENAME_EXCHANGE killed between its renames: the old directory is put back.
  fs::create_directory(dir.sub(".q.old.9.1a"));
  write_text(dir.sub(".q.old.9.1a/meta.json"), "old");
  { const OutputLock lock(dir.sub("q")); }
  EXPECT_EQ(read_text(dir.sub("q/meta.json")), "old");
}

TEST(OutputEqualToInput, RefusedForEverySpelling) {
  TempDir dir("atomic");
  write_text(dir.sub("edges.txt"), "0 1\n");
  fs::create_symlink(dir.sub("edges.txt"), dir.sub("link.txt"));
  EXPECT_THROW(refuse_output_equal_to_input(dir.sub("edges.txt"), dir.sub("edges.txt"), "-o"), UserError);
  EXPECT_THROW(refuse_output_equal_to_input(dir.path() + "/./edges.txt", dir.sub("link.txt"), "-o"), UserError);
  EXPECT_NO_THROW(refuse_output_equal_to_input(dir.sub("g.h5"), dir.sub("edges.txt"), "-o"));  // absent
}

}  // namespace
}  // namespace halogen::io

namespace halogen::io {
namespace {

// A legal 249-byte output name: its lock and temporaries use a shortened, hashed stem, so they fit NAME_MAX;
// two long names sharing the first 160 bytes still get two locks; a long name's leftovers are found again.
TEST(OutputLock, LongOutputNamesGetShortenedSiblings) {
  TempDir dir("atomic");
  const std::string long_a = std::string(245, 'a') + ".h5", long_b = std::string(244, 'a') + "b.h5";
  ASSERT_EQ(long_a.size(), 248u);
  std::string stem_a;
  {
    const OutputLock first(dir.sub(long_a));
    const std::string lock_name = fs::path(first.path()).filename().string();
    EXPECT_LE(lock_name.size(), 255u) << lock_name;
    EXPECT_TRUE(is_lock_file_name(lock_name)) << lock_name;
    EXPECT_NE(lock_name.find('~'), std::string::npos) << lock_name;
    stem_a = lock_name.substr(1, lock_name.size() - 1 - std::string(kLockSuffix).size());
    const OutputLock second(dir.sub(long_b));  // another output sharing the first 160 bytes: its own lock
    EXPECT_NE(second.path(), first.path());
    AtomicOutput out(dir.sub(long_b));
    EXPECT_LE(fs::path(out.temp_path()).filename().string().size(), 255u);
    write_text(out.temp_path(), "data");
    out.commit();
  }
  EXPECT_EQ(read_text(dir.sub(long_b)), "data");
  // A killed writer's temporary of the long name is removed by the next lock on that name.
  const std::string leftover = "." + stem_a + ".tmp.42.beef";
  write_text(dir.sub(leftover), "killed");
  const OutputLock again(dir.sub(long_a));
  EXPECT_EQ(again.removed_leftovers(), (std::vector<std::string>{leftover}));
  EXPECT_FALSE(fs::exists(dir.sub(leftover)));
}

TEST(OutputLock, LockFileNamesAreRecognised) {
  EXPECT_TRUE(is_lock_file_name(".x.h5.halogen.lock"));
  EXPECT_FALSE(is_lock_file_name("x.h5.halogen.lock"));
  EXPECT_FALSE(is_lock_file_name(".halogen.lock"));
  EXPECT_FALSE(is_lock_file_name(".x.h5"));
}

}  // namespace
}  // namespace halogen::io
