#include "download/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "download/catalog.h"
#include "download/sha256.h"
#include "download/unzip.h"

namespace halogen::download {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string human(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return strformat("%.1f GB", b / 1e9);
  if (b >= 1e6) return strformat("%.1f MB", b / 1e6);
  if (b >= 1e3) return strformat("%.1f kB", b / 1e3);
  return strformat("%lld B", static_cast<long long>(bytes));
}

int64_t free_bytes(const std::string& directory) {
  struct statvfs st {};
  if (::statvfs(directory.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

bool same_filesystem(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev;
}

int64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

int64_t mtime_ns(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The expected SHA-256 and size of one file, and where they come from.
struct Expected {
  std::string sha256;  // "" : none known (trust on first use)
  int64_t bytes = -1;
  std::string source;
};

std::map<std::string, std::string> read_checksums(const std::string& path) {
  std::ifstream in(path);
  HALOGEN_USER_CHECK(in.good(), "--checksums: %s: cannot open", path.c_str());
  std::map<std::string, std::string> sums;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find_first_of(" \t");
    std::string hex = line.substr(0, space);
    std::string name = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    if (!name.empty() && name[0] == '*') name.erase(0, 1);  // sha256sum's binary-mode marker
    HALOGEN_USER_CHECK(is_sha256_hex(hex) && !name.empty(),
                       "--checksums: %s:%d: expected \"SHA-256 (64 hex digits)  FILE NAME\"", path.c_str(), number);
    std::transform(hex.begin(), hex.end(), hex.begin(), [](unsigned char c) { return std::tolower(c); });
    sums[fs::path(name).filename().string()] = hex;
  }
  return sums;
}

// DIR/NAME/verified.json
struct State {
  fs::path path;
  json doc = json::object();

  void load() {
    std::ifstream in(path);
    if (!in.good()) return;
    try {
      doc = json::parse(in);
    } catch (const std::exception&) {
      log::warn(strformat("%s: unreadable; starting a new record", path.c_str()));
      doc = json::object();
    }
    if (!doc.is_object()) doc = json::object();
  }
  void save() const {
    const fs::path temp = path.string() + strformat(".tmp.%d", static_cast<int>(::getpid()));
    {
      std::ofstream out(temp);
      out << doc.dump(2) << "\n";
      HALOGEN_USER_CHECK(out.good(), "%s: write failed", temp.c_str());
    }
    std::error_code ec;
    fs::rename(temp, path, ec);
    HALOGEN_USER_CHECK(!ec, "%s: cannot rename into place (%s)", path.c_str(), ec.message().c_str());
  }
  const json* file(const std::string& name) const {
    if (!doc.contains("files") || !doc["files"].contains(name)) return nullptr;
    return &doc["files"][name];
  }
};

// flock(2) on DIR/.NAME.lock for the life of the object; a second job waits, saying for whom.
class DatasetLock {
 public:
  DatasetLock(const fs::path& path, const std::string& name) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    HALOGEN_USER_CHECK(fd_ >= 0, "%s: cannot open the lock (%s)", path.c_str(), std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char pid[32] = {0};
      const ssize_t got = ::pread(fd_, pid, sizeof pid - 1, 0);
      log::info(strformat("%s: waiting for another job downloading it (process %s holds %s)", name.c_str(),
                          got > 0 ? std::string(pid, static_cast<size_t>(got)).c_str() : "?", path.c_str()));
      HALOGEN_USER_CHECK(::flock(fd_, LOCK_EX) == 0, "%s: cannot lock (%s)", path.c_str(), std::strerror(errno));
    }
    const std::string me = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
      // the pid is only informative
    }
  }
  ~DatasetLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DatasetLock(const DatasetLock&) = delete;
  DatasetLock& operator=(const DatasetLock&) = delete;

 private:
  int fd_ = -1;
};

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

// The directory under `root` (itself included) that holds `member`, or "".
fs::path find_holding(const fs::path& root, const std::string& member, bool directory) {
  std::error_code ec;
  if (fs::exists(root / member, ec) && fs::is_directory(root / member, ec) == directory) return root;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == member && it->is_directory(ec) == directory) return it->path().parent_path();
  }
  return {};
}

}  // namespace

std::string resolve_data_dir(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("HALOGEN_DATA"); env != nullptr && env[0] != 0) return env;
  const char* home = std::getenv("HOME");
  HALOGEN_USER_CHECK(home != nullptr && home[0] != 0,
                     "download: no cache directory: give --data-dir or set HALOGEN_DATA (HOME is not set)");
  return (fs::path(home) / ".cache" / "halogen").string();
}

std::string catalog_listing() {
  std::ostringstream out;
  out << strformat("%-20s %10s %13s %15s  %s\n", "name", "download", "vertices", "edges", "source, licence");
  for (const Dataset& d : catalog()) {
    int64_t exact = 0;
    bool all_known = true;
    for (const PublishedFile& f : d.files) {
      if (f.bytes < 0) all_known = false;
      exact += std::max<int64_t>(0, f.bytes);
    }
    const std::string size = all_known ? human(exact) : "~" + human(d.approx_download_bytes);
    const std::string edges = d.edges > 0 ? strformat("%lld", static_cast<long long>(d.edges)) : "varies";
    out << strformat("%-20s %10s %13lld %15s  %s (%s); SHA-256: %s\n", d.name.c_str(), size.c_str(),
                     static_cast<long long>(d.vertices), edges.c_str(), d.licence.c_str(), d.edges_note.c_str(),
                     d.hash_source.empty() ? "none published, trusted on first use" : d.hash_source.c_str());
  }
  out << "Sizes with ~ are approximate. The first use of each name needs the internet (or --mirror).\n";
  return out.str();
}

DownloadResult download_dataset(const DownloadOptions& options, const ConvertFunction& convert) {
  const Dataset& d = find_dataset(options.name);
  const fs::path dir = fs::absolute(resolve_data_dir(options.data_dir));
  std::error_code ec;
  fs::create_directories(dir, ec);
  HALOGEN_USER_CHECK(!ec && fs::is_directory(dir), "download: %s: cannot create the cache directory (%s)",
                     dir.c_str(), ec ? ec.message().c_str() : "not a directory");
  const fs::path ds_dir = dir / d.name, partial_dir = dir / ".partial" / d.name;
  const fs::path output = fs::absolute(options.output.empty() ? (dir / (d.name + ".h5")).string() : options.output);
  fs::create_directories(output.parent_path(), ec);
  HALOGEN_USER_CHECK(!ec, "download: %s: cannot create (%s)", output.parent_path().c_str(), ec.message().c_str());

  interrupt::set_phase("waiting for the lock of " + d.name);
  const DatasetLock lock(dir / ("." + d.name + ".lock"), d.name);
  fs::create_directories(ds_dir, ec);
  HALOGEN_USER_CHECK(!ec, "download: %s: cannot create (%s)", ds_dir.c_str(), ec.message().c_str());
  State state;
  state.path = ds_dir / "verified.json";
  state.load();

  // What each file must be.
  std::map<std::string, std::string> sums;
  if (!options.checksums.empty()) sums = read_checksums(options.checksums);
  std::vector<Expected> expected;
  for (const PublishedFile& f : d.files) {
    Expected e;
    if (!options.checksums.empty()) {
      const auto it = sums.find(f.name);
      if (it == sums.end()) {
        std::string names;
        for (const PublishedFile& g : d.files) names += (names.empty() ? "" : ", ") + g.name;
        throw UserError(strformat("--checksums: %s: no SHA-256 for %s (%s needs: %s)", options.checksums.c_str(),
                                  f.name.c_str(), d.name.c_str(), names.c_str()));
      }
      e = {it->second, -1, "--checksums " + options.checksums};
    } else if (!f.sha256.empty()) {
      e = {f.sha256, f.bytes, "the table of published hashes"};
    } else if (const json* rec = state.file(f.name); rec != nullptr && rec->contains("sha256")) {
      e = {(*rec)["sha256"].get<std::string>(), (*rec).value("bytes", int64_t{-1}),
           "its first download, recorded in " + state.path.string()};
    }
    expected.push_back(e);
  }

  // Up to date: the output is the graph converted from files with these hashes.
  if (state.doc.contains("graph") && fs::exists(output, ec)) {
    const json& g = state.doc["graph"];
    bool same = g.value("path", std::string()) == output.string() &&
                g.value("bytes", int64_t{-2}) == size_or_zero(output) && g.value("mtime_ns", int64_t{-2}) == mtime_ns(output);
    for (size_t i = 0; same && i < d.files.size(); ++i) {
      const json* rec = state.file(d.files[i].name);
      same = rec != nullptr && (expected[i].sha256.empty() || rec->value("sha256", std::string()) == expected[i].sha256);
    }
    if (same) {
      log::info(strformat("%s: %s is already converted from verified files; nothing fetched", d.name.c_str(),
                          output.c_str()));
      return {output.string(), true, 0};
    }
  }

  // Which files must be fetched: a kept file is used again only when it still has its recorded hash.
  std::vector<bool> have(d.files.size(), false);
  for (size_t i = 0; i < d.files.size(); ++i) {
    const fs::path kept = ds_dir / d.files[i].name;
    if (!fs::exists(kept, ec)) continue;
    interrupt::set_phase("verifying " + kept.string());
    const std::string hex = sha256_file(kept.string());
    const std::string want = !expected[i].sha256.empty() ? expected[i].sha256
                             : state.file(d.files[i].name) ? state.file(d.files[i].name)->value("sha256", "")
                                                           : "";
    if (!want.empty() && hex == want) {
      have[i] = true;
    } else {
      log::warn(strformat("%s: SHA-256 %s is not the expected %s; fetching it again", kept.c_str(), hex.c_str(),
                          want.empty() ? "(none recorded)" : want.c_str()));
      remove_quietly(kept);
    }
  }

  // Disk space before starting: what is left to fetch, the unpacked members, the graph file. The unpacked and
  // graph sizes are estimated in proportion to the download, from the table's figures for the dataset.
  const double approx_download = static_cast<double>(std::max<int64_t>(1, d.approx_download_bytes));
  const double unpacked_ratio =
      d.packaging == Packaging::zip ? static_cast<double>(d.approx_unpacked_bytes) / approx_download : 0.0;
  const double graph_ratio = static_cast<double>(d.approx_graph_bytes) / approx_download;
  const bool output_here = same_filesystem(dir.string(), output.parent_path().string());
  auto check_space = [&](const fs::path& where, int64_t transfer, int64_t unpacked, int64_t graph) {
    const int64_t need = transfer + unpacked + graph;
    const int64_t free = free_bytes(where.string());
    if (free < 0 || free >= need) return;
    throw UserError(strformat("download: %s: %s free, %s needs %s (files %s + unpacked %s + graph file %s); "
                              "free some space or choose another --data-dir / -o",
                              where.c_str(), human(free).c_str(), d.name.c_str(), human(need).c_str(),
                              human(transfer).c_str(), human(unpacked).c_str(), human(graph).c_str()));
  };
  // download_bytes: the whole download's size (exact where known); transfer: what is left of it to fetch.
  auto check_all = [&](int64_t download_bytes, int64_t transfer) {
    const auto unpacked = static_cast<int64_t>(unpacked_ratio * static_cast<double>(download_bytes));
    const auto graph = static_cast<int64_t>(graph_ratio * static_cast<double>(download_bytes));
    check_space(dir, transfer, unpacked, output_here ? graph : 0);
    if (!output_here) check_space(output.parent_path(), 0, 0, graph);
  };
  int64_t download_bytes = 0, transfer_bytes = 0;
  bool sizes_known = true;
  for (size_t i = 0; i < d.files.size(); ++i) {
    const int64_t size = expected[i].bytes >= 0 ? expected[i].bytes
                         : options.checksums.empty() && d.files[i].bytes >= 0 ? d.files[i].bytes
                                                                               : -1;
    if (size < 0) sizes_known = false;
    download_bytes += std::max<int64_t>(0, size);
    if (!have[i]) transfer_bytes += std::max<int64_t>(0, size - size_or_zero(partial_dir / d.files[i].name));
  }
  if (!sizes_known && options.checksums.empty()) {  // the table's approximate size of the whole download
    transfer_bytes += std::max<int64_t>(0, d.approx_download_bytes - download_bytes);
    download_bytes = std::max(download_bytes, d.approx_download_bytes);
  }
  // With --checksums and no sizes, each transfer checks once the server has said the file's size.
  if (sizes_known || options.checksums.empty()) check_all(download_bytes, transfer_bytes);

  DownloadResult result;
  result.output = output.string();
  fs::create_directories(partial_dir, ec);
  HALOGEN_USER_CHECK(!ec, "download: %s: cannot create (%s)", partial_dir.c_str(), ec.message().c_str());
  for (size_t i = 0; i < d.files.size(); ++i) {
    if (have[i]) continue;
    const PublishedFile& f = d.files[i];
    std::string base = options.mirror;
    while (!base.empty() && base.back() == '/') base.pop_back();
    const std::string url = base.empty() ? f.url : base + "/" + f.name;
    const fs::path partial = partial_dir / f.name;
    TransferOptions transfer = options.transfer;
    transfer.label = f.name;
    transfer.on_size = [&](int64_t total, int64_t present) {
      if (total >= 0 && d.files.size() == 1) check_all(std::max(total, download_bytes), total - present);
    };
    interrupt::set_phase("downloading " + url);
    log::info(strformat("%s: fetching %s", d.name.c_str(), url.c_str()));
    TransferResult got;
    try {
      got = fetch_to_file(url, partial.string(), transfer);
    } catch (...) {  // keep a partial file to resume from, but no empty file or directory
      std::error_code ignored;
      if (size_or_zero(partial) == 0) fs::remove(partial, ignored);
      fs::remove(partial_dir, ignored);
      fs::remove(dir / ".partial", ignored);
      throw;
    }
    ++result.fetched;
    interrupt::set_phase("verifying " + partial.string());
    const Expected& e = expected[i];
    if (e.bytes >= 0 && got.bytes != e.bytes) {
      remove_quietly(partial);
      throw UserError(strformat("%s: %lld bytes where %s says %lld, so its SHA-256 cannot match; deleted, "
                                "nothing converted: run again to fetch it anew",
                                partial.c_str(), static_cast<long long>(got.bytes), e.source.c_str(),
                                static_cast<long long>(e.bytes)));
    }
    const std::string hex = sha256_file(partial.string());
    if (!e.sha256.empty() && hex != e.sha256) {
      remove_quietly(partial);
      throw UserError(strformat("%s: SHA-256 %s does not match %s from %s; deleted, nothing converted: run again "
                                "to fetch it anew",
                                partial.c_str(), hex.c_str(), e.sha256.c_str(), e.source.c_str()));
    }
    if (e.sha256.empty()) {
      log::info(strformat("%s: no published SHA-256; trusting this first complete download: SHA-256 %s, %lld "
                          "bytes, recorded in %s for every later use",
                          f.name.c_str(), hex.c_str(), static_cast<long long>(got.bytes), state.path.c_str()));
    } else {
      log::info(strformat("%s: %lld bytes in %.1f s, SHA-256 verified (%s)", f.name.c_str(),
                          static_cast<long long>(got.bytes), got.seconds, e.source.c_str()));
    }
    state.doc["files"][f.name] = {{"sha256", hex},
                                  {"bytes", got.bytes},
                                  {"url", url},
                                  {"trust", e.sha256.empty() ? "first use" : e.source}};
    fs::rename(partial, ds_dir / f.name, ec);
    HALOGEN_USER_CHECK(!ec, "%s: cannot move into %s (%s)", partial.c_str(), ds_dir.c_str(), ec.message().c_str());
    state.save();
    have[i] = true;
  }
  remove_quietly(partial_dir);
  std::error_code ignore;
  fs::remove(dir / ".partial", ignore);  // only when empty

  // Unpack, then convert. When either fails, a file trusted on first use loses its record and is deleted (it
  // may be a damaged copy; the next run fetches and trusts again); files verified against a known hash stay.
  fs::path input;
  const fs::path unpacked = ds_dir / "unpacked";
  try {
    if (d.packaging == Packaging::zip) {
      const fs::path archive = ds_dir / d.files.front().name;
      const int64_t members = zip_unpacked_bytes(archive.string());
      const int64_t archive_bytes = size_or_zero(archive);
      check_space(dir, 0, members,
                  output_here ? static_cast<int64_t>(graph_ratio * static_cast<double>(archive_bytes)) : 0);
      remove_quietly(unpacked);
      interrupt::set_phase("unpacking " + archive.string());
      log::info(strformat("%s: unpacking %s (%s)", d.name.c_str(), archive.c_str(), human(members).c_str()));
      const int64_t handle = interrupt::track(unpacked.string());
      extract_zip(archive.string(), unpacked.string());
      interrupt::untrack(handle);
      if (d.format == "reddit") {
        input = find_holding(unpacked, "reddit_data.npz", false);
        HALOGEN_USER_CHECK(!input.empty(), "%s: has no reddit_data.npz", archive.c_str());
      } else {
        const fs::path holder = find_holding(unpacked, d.input, true);
        HALOGEN_USER_CHECK(!holder.empty(), "%s: has no %s/ directory (the dataset's files)", archive.c_str(),
                           d.input.c_str());
        input = holder / d.input;
      }
    } else {
      input = d.input.empty() ? ds_dir : ds_dir / d.input;
    }
    interrupt::set_phase("converting " + input.string());
    convert(d.format, input.string(), output.string(), d.name);
  } catch (...) {
    remove_quietly(unpacked);
    for (const PublishedFile& f : d.files) {
      const json* rec = state.file(f.name);
      if (rec != nullptr && rec->value("trust", "") == "first use") {
        remove_quietly(ds_dir / f.name);
        state.doc["files"].erase(f.name);
      }
    }
    state.save();
    throw;
  }
  remove_quietly(unpacked);
  state.doc["graph"] = {{"path", output.string()}, {"bytes", size_or_zero(output)}, {"mtime_ns", mtime_ns(output)}};
  if (!options.keep_archive) {
    for (const PublishedFile& f : d.files) remove_quietly(ds_dir / f.name);
  }
  state.save();
  return result;
}

}  // namespace halogen::download
