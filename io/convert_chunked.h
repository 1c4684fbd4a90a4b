#pragma once
// The one conversion pipeline of the OGB csv, OGB npz and SNAP readers (`halogen convert`, `download`): the
// graph file is written while the input is read, with every data buffer counted against a memory limit
// (`--memory-limit MIB`; without one, 3/4 of the memory available when the conversion starts). These are the
// pieces the three share.
//
// Edges go through an external sort: entries (row, col) fill a buffer; a full buffer is sorted by (row, col),
// deduplicated and spilled as a run file beside the output; the runs are merged (k-way, in several passes
// when there are more runs than the merge buffers allow), duplicates dropped once more, and the merged stream
// becomes /csr/indptr and /csr/indices in chunked writes. When every entry fits in the buffer (the usual case
// of a graph smaller than the limit) nothing is spilled: the buffer is sorted in place (radix sort) and
// written from memory. The result equals graph::build_csr's (sorted, duplicate-free rows, no self-loops, both
// directions when symmetrised). Per-node arrays (features, labels) are written in row blocks through
// h5::DatasetWriter, in the order write_graph writes them, so the file is byte-identical to
// write_graph(output, graph) of the same graph (io_convert_test checks it).
//
// Memory: every data buffer is counted by a BufferBudget, whose high-water mark is reported at the end; the
// buffers stay within its limit, except the per-vertex tables a converter documents (split membership, 1 byte
// per vertex; SNAP's id table when ids are renumbered, 8 bytes per vertex). Run files are named like the
// temporaries of io/atomic_file.h (`.NAME.tmp.<pid>.<random>` beside the output NAME): removed when the
// conversion ends, successfully or not, and by the next OutputLock holder after a killed job.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/function_ref.h"

namespace halogen::h5 {
class File;
}

namespace halogen::io {

// The smallest --memory-limit a conversion accepts: two HDF5 chunks of about 1 MiB (indptr while
// the merge writes it, features or labels) and merge buffers of at least 64 KiB per run.
constexpr int64_t kMinimumConvertLimitBytes = int64_t{4} << 20;

// Bytes held by a conversion's data buffers: hold() and release() as they are allocated and freed; the high
// water mark is what `peak memory: ... (buffers Y MiB, ...)` reports.
class BufferBudget {
 public:
  explicit BufferBudget(int64_t limit_bytes) : limit_bytes_(limit_bytes) {}
  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t held_bytes() const { return held_bytes_; }
  int64_t high_water_bytes() const { return high_water_bytes_; }
  // What may still be held within the limit (never negative).
  int64_t free_bytes() const { return limit_bytes_ > held_bytes_ ? limit_bytes_ - held_bytes_ : 0; }
  void hold(int64_t bytes);
  void release(int64_t bytes);

 private:
  int64_t limit_bytes_;
  int64_t held_bytes_ = 0;
  int64_t high_water_bytes_ = 0;
};

// Holds `bytes` of a BufferBudget for its lifetime (RAII), resizable.
class HeldBytes {
 public:
  HeldBytes(BufferBudget& budget, int64_t bytes) : budget_(budget) { set(bytes); }
  ~HeldBytes() { budget_.release(bytes_); }
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  // Now holds exactly `bytes` (a reallocation that holds old and new buffers for a moment sets their sum
  // first).
  void set(int64_t bytes) {
    if (bytes > bytes_) budget_.hold(bytes - bytes_);
    if (bytes < bytes_) budget_.release(bytes_ - bytes);
    bytes_ = bytes;
  }

 private:
  BufferBudget& budget_;
  int64_t bytes_ = 0;
};

// A scratch file beside `output_path`, named as an AtomicOutput temporary; removed by the destructor. Written
// sequentially, then closed by rewind() and read back sequentially (opened again on its first read, so a
// spilled run holds no file descriptor until it is merged). Errors name the output and what the file holds.
class ScratchFile {
 public:
  ScratchFile(const std::string& output_path, std::string what);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  void write(const void* data, size_t bytes);
  void rewind();                          // ends writing (closes the file); reading starts at byte 0
  size_t read(void* data, size_t bytes);  // bytes read (fewer only at the end)
  const std::string& path() const { return path_; }

 private:
  std::string output_path_, what_, path_;
  std::FILE* file_ = nullptr;
};

// One directed CSR entry.
struct Entry {
  int64_t row, col;
  bool operator<(const Entry& other) const { return row != other.row ? row < other.row : col < other.col; }
  bool operator==(const Entry& other) const { return row == other.row && col == other.col; }
};

// External sort of CSR entries: add() buffers entries (self-loops dropped; an undirected edge is added as
// both of its entries by add_edge), spilling a full buffer as a sorted, duplicate-free run; merge() streams
// every distinct entry once in (row, col) order. The buffer takes `buffer_bytes` of the budget while reading;
// merge() releases it and uses what the budget has free (at least kMinimumConvertLimitBytes / 2 is expected).
// The buffer starts at min(buffer_bytes, 64 MiB) and grows while it fits, so a generous limit costs nothing
// on a small graph.
class EntrySorter {
 public:
  EntrySorter(const std::string& output_path, BufferBudget& budget, int64_t buffer_bytes, bool symmetrize);
  ~EntrySorter();
  void add_edge(int64_t src, int64_t dst) {
    if (src == dst) return;
    add(src, dst);
    if (symmetrize_) add(dst, src);
  }
  // Ends the input: when runs were spilled, the buffered rest is spilled too and the buffer is released (so
  // what follows can use the budget); when everything fitted, the buffer stays for merge() to emit from
  // memory.
  void finish_input();
  // Calls emit(row, col) for every distinct entry, in (row, col) order. Call once.
  void merge(FunctionRef<void(int64_t, int64_t)> emit);
  int64_t runs_spilled() const { return static_cast<int64_t>(runs_.size()); }
  // Every entry is still in the buffer (nothing spilled): sorted_entries() gives them without merge().
  bool fitted() const { return runs_.empty(); }
  // The buffer sorted by (row, col), duplicates removed; only while fitted(). The entries stay until merge()
  // or the destructor.
  const std::vector<Entry>& sorted_entries();
  // Frees the buffer (after sorted_entries() was used instead of merge()).
  void release();

 private:
  struct Run {
    std::unique_ptr<ScratchFile> file;
    int64_t entries = 0;
  };
  void add(int64_t row, int64_t col) {
    if (buffer_.size() == buffer_.capacity()) make_room();
    buffer_.push_back({row, col});
  }
  // A full buffer: grows (doubling, up to capacity_) while the old and the new buffer fit in buffer_bytes_
  // together (a reallocation holds both), else is spilled.
  void make_room();
  void sort_buffer();  // sorts and deduplicates buffer_ (sorted_ tells it is done)
  void spill();
  // Merges `inputs` into emit, with `buffer_entries` entries of read buffer per input.
  void merge_runs(std::vector<Run*>& inputs, int64_t buffer_entries,
                  FunctionRef<void(int64_t, int64_t)> emit);

  std::string output_path_;
  BufferBudget& budget_;
  bool symmetrize_;
  int64_t buffer_bytes_, capacity_;
  std::vector<Entry> buffer_;
  bool sorted_ = false;
  std::unique_ptr<HeldBytes> held_;
  std::vector<Run> runs_;
};

// Writes /csr/indptr and /csr/indices of an N-vertex graph from entries given in (row, col) order without
// duplicates: indptr in chunks as the rows go by, indices into a scratch file first (their count is known
// only at the end), then copied into the dataset in chunks. Buffers: about 1 MiB for indptr, 1 MiB for
// indices (counted in the budget).
class CsrStreamWriter {
 public:
  CsrStreamWriter(h5::File& file, const std::string& output_path, int64_t num_nodes, BufferBudget& budget);
  ~CsrStreamWriter();
  void add(int64_t row, int64_t col);
  // Writes the remaining rows and /csr/indices; returns the number of stored entries.
  int64_t finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// /node/feat [N, F] from rows given in order: the first MiB (or all rows, when fewer) is held until the
// deflate decision is made as write_graph makes it (features_compress_well), then rows go through an
// h5::DatasetWriter. Buffers: up to 2 MiB (counted in the budget).
class FeatureStreamWriter {
 public:
  FeatureStreamWriter(h5::File& file, int64_t num_nodes, int64_t num_features, BufferBudget& budget);
  ~FeatureStreamWriter();
  void append(const float* rows, int64_t count);  // rows: (count, num_features)
  void finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// /csr/indptr, /csr/indices and the root attribute num_edges of an N-vertex graph from the sorter's entries
// (merged, or straight from the buffer when everything fitted); `ids`, when not empty, renumbers: an entry's
// row and column are replaced by their ranks in `ids` (sorted, distinct). Returns the stored entries.
int64_t write_sorted_csr(EntrySorter& sorter, h5::File& file, const std::string& output, int64_t num_nodes,
                         BufferBudget& budget, const std::vector<int64_t>& ids = {});

// Rows of a per-node array read before the graph's edges are written (OGB csv: features and labels come
// after the edge file, but the graph file holds /csr first): held in memory while the budget leaves room
// (keeping kMinimumConvertLimitBytes free for the merge and the writers), spilled to a scratch file beside
// the output past that, then given back in order by replay().
template <typename T>
class RowStash {
 public:
  // expected_rows: the memory first reserved (within the room), 0 for none.
  RowStash(const std::string& output_path, BufferBudget& budget, int64_t row_elements, const char* what,
           int64_t expected_rows = 0);
  void append(const T* row);  // one row of row_elements values
  int64_t rows() const { return rows_; }
  // Calls rows(data, count) for blocks of consecutive rows, all of them in order; releases the memory.
  void replay(FunctionRef<void(const T*, int64_t)> rows);

 private:
  std::string output_path_, what_;
  BufferBudget& budget_;
  int64_t row_elements_, allowed_bytes_, rows_ = 0;
  std::vector<T> values_;
  HeldBytes held_;
  std::unique_ptr<ScratchFile> spilled_;
};

// The limit of a conversion: `requested` bytes (--memory-limit; UserError below kMinimumConvertLimitBytes),
// or for 0 three quarters of available_memory_bytes() (at least kMinimumConvertLimitBytes; when nothing can
// be read, no limit: the largest int64 / 4).
int64_t convert_limit_bytes(int64_t requested);

// UserError unless options' limit is at least kMinimumConvertLimitBytes ("--memory-limit: ...").
void check_convert_limit(int64_t limit_bytes);

// The peak-memory line every convert and partition prints at its end:
// "peak memory: X MiB (buffers Y MiB, limit Z MiB)" (limit "none" when limit_bytes is 0); X is the process's
// peak resident set (getrusage ru_maxrss).
std::string peak_memory_line(int64_t buffer_bytes, int64_t limit_bytes);
// getrusage(RUSAGE_SELF) ru_maxrss in bytes; current resident set (/proc/self/statm) in bytes (0 unknown).
int64_t max_resident_bytes();
int64_t resident_bytes();

}  // namespace halogen::io
