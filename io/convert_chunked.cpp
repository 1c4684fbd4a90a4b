// The shared machinery of the conversion pipeline (io/convert_chunked.h): the budget, scratch files, the
// external sort of CSR entries, the streaming CSR and feature writers, the row stash and the limit.
#include "io/convert_chunked.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <queue>
#include <utility>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "core/memory.h"
#include "io/atomic_file.h"
#include "io/graph_file.h"
#include "io/h5.h"

namespace halogen::io {

void BufferBudget::hold(int64_t bytes) {
  held_bytes_ += bytes;
  high_water_bytes_ = std::max(high_water_bytes_, held_bytes_);
}

void BufferBudget::release(int64_t bytes) {
  held_bytes_ -= bytes;
  HALOGEN_ASSERT(held_bytes_ >= 0, "buffer budget released more than it held");
}

// ----------------------------------------------------------------------------------------------------
// ScratchFile

ScratchFile::ScratchFile(const std::string& output_path, std::string what)
    : output_path_(output_path), what_(std::move(what)) {
  path_ =
      AtomicOutput(output_path).temp_path();  // the naming only: AtomicOutput removes nothing it never made
  file_ = std::fopen(path_.c_str(), "w+b");
  if (!file_)
    throw UserError(strformat("%s: cannot create a temporary file for the %s beside it: %s",
                              output_path_.c_str(), what_.c_str(), std::strerror(errno)));
}

ScratchFile::~ScratchFile() {
  if (file_) std::fclose(file_);
  std::remove(path_.c_str());
}

void ScratchFile::write(const void* data, size_t bytes) {
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes)
    throw UserError(strformat("%s: cannot write the temporary file of the %s (disk full?): %s",
                              output_path_.c_str(), what_.c_str(), std::strerror(errno)));
}

void ScratchFile::rewind() {
  const bool flushed = std::fflush(file_) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed)
    throw UserError(strformat("%s: cannot write the temporary file of the %s (disk full?): %s",
                              output_path_.c_str(), what_.c_str(), std::strerror(errno)));
}

size_t ScratchFile::read(void* data, size_t bytes) {
  if (!file_) file_ = std::fopen(path_.c_str(), "rb");  // opened on the first read: few files open at once
  if (!file_)
    throw UserError(strformat("%s: cannot read back the temporary file of the %s: %s", output_path_.c_str(),
                              what_.c_str(), std::strerror(errno)));
  const size_t got = std::fread(data, 1, bytes, file_);
  if (got < bytes && std::ferror(file_))
    throw UserError(strformat("%s: cannot read back the temporary file of the %s: %s", output_path_.c_str(),
                              what_.c_str(), std::strerror(errno)));
  return got;
}

// ---------------------------------------------------------------------------------------------------
// EntrySorter

namespace {
constexpr int64_t kMinimumRunBufferBytes = int64_t{64} << 10;
// Runs merged at once, at most: each is an open file while it is merged (well below the usual 1024
// descriptors).
constexpr int64_t kMaximumFanIn = 256;
}  // namespace

EntrySorter::EntrySorter(const std::string& output_path, BufferBudget& budget, int64_t buffer_bytes,
                         bool symmetrize)
    : output_path_(output_path), budget_(budget), symmetrize_(symmetrize) {
  const int64_t entry_bytes = static_cast<int64_t>(sizeof(Entry));
  buffer_bytes_ = std::max<int64_t>(2 * entry_bytes, buffer_bytes);
  capacity_ = buffer_bytes_ / entry_bytes;
  buffer_.reserve(static_cast<size_t>(std::min<int64_t>(capacity_, (int64_t{64} << 20) / entry_bytes)));
  held_ = std::make_unique<HeldBytes>(budget_, static_cast<int64_t>(buffer_.capacity()) * entry_bytes);
}

EntrySorter::~EntrySorter() = default;

void EntrySorter::make_room() {
  const int64_t entry_bytes = static_cast<int64_t>(sizeof(Entry));
  const int64_t current = static_cast<int64_t>(buffer_.capacity());
  const int64_t grown = std::min(capacity_, 2 * current);
  if (grown > current && (grown + current) * entry_bytes <= buffer_bytes_) {
    held_->set((grown + current) * entry_bytes);  // both, while the elements move
    buffer_.reserve(static_cast<size_t>(grown));
    held_->set(grown * entry_bytes);
  } else {
    spill();
  }
}

namespace {

int bit_width(uint64_t x) {
  return x == 0 ? 0 : 64 - __builtin_clzll(x);
}

// LSD radix sort of keys[0, n) with scratch[0, n), 11 bits a pass over the low `bits` bits (the rest are 0).
void radix_sort(uint64_t* keys, uint64_t* scratch, size_t n, int bits) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  const int passes = (bits + kDigitBits - 1) / kDigitBits;
  std::vector<size_t> counts(static_cast<size_t>(passes) * kBuckets, 0);
  for (size_t i = 0; i < n; ++i)
    for (int p = 0; p < passes; ++p)
      ++counts[p * kBuckets + ((keys[i] >> (p * kDigitBits)) & (kBuckets - 1))];
  uint64_t* from = keys;
  uint64_t* to = scratch;
  for (int p = 0; p < passes; ++p) {
    size_t* count = &counts[p * kBuckets];
    if (count[(from[0] >> (p * kDigitBits)) & (kBuckets - 1)] == n) continue;  // one digit value: order kept
    size_t offset = 0;
    for (size_t b = 0; b < kBuckets; ++b) offset += std::exchange(count[b], offset);
    for (size_t i = 0; i < n; ++i) to[count[(from[i] >> (p * kDigitBits)) & (kBuckets - 1)]++] = from[i];
    std::swap(from, to);
  }
  if (from != keys) std::copy(from, from + n, keys);
}

}  // namespace

// Entries whose row and column fit in one 64-bit key together (any graph below 2^32 vertices, SNAP ids below
// 2^32) are packed as keys into the first half of the buffer's own memory and radix sorted with its second
// half as scratch: a few linear passes instead of a comparison sort, and no memory beyond the buffer. Keys
// order as (row, col) does, so the result is the same either way.
void EntrySorter::sort_buffer() {
  if (sorted_) return;
  sorted_ = true;
  const size_t n = buffer_.size();
  int64_t min_id = 0, max_row = 0, max_col = 0;
  for (const Entry& e : buffer_) {
    min_id = std::min(min_id, std::min(e.row, e.col));
    max_row = std::max(max_row, e.row);
    max_col = std::max(max_col, e.col);
  }
  const int col_bits = bit_width(static_cast<uint64_t>(max_col));
  const int key_bits = col_bits + bit_width(static_cast<uint64_t>(max_row));
  if (n < 1024 || min_id < 0 || key_bits > 64 || col_bits >= 64) {
    std::sort(buffer_.begin(), buffer_.end());
    buffer_.erase(std::unique(buffer_.begin(), buffer_.end()), buffer_.end());
    return;
  }
  static_assert(sizeof(Entry) == 2 * sizeof(uint64_t), "an entry holds two keys' room");
  // keys[i] overwrites bytes of entry i / 2 <= i, already read (int64_t may be accessed as uint64_t).
  auto* keys = reinterpret_cast<uint64_t*>(buffer_.data());
  for (size_t i = 0; i < n; ++i) {
    const Entry e = buffer_[i];
    keys[i] = (static_cast<uint64_t>(e.row) << col_bits) | static_cast<uint64_t>(e.col);
  }
  radix_sort(keys, keys + n, n, key_bits);
  const size_t distinct = static_cast<size_t>(std::unique(keys, keys + n) - keys);
  // Unpacked from the back: entry i overwrites keys 2i and 2i + 1, both >= i and so already read.
  const uint64_t col_mask = col_bits == 0 ? 0 : (~uint64_t{0} >> (64 - col_bits));
  for (size_t i = distinct; i-- > 0;) {
    const uint64_t key = keys[i];
    buffer_[i] = {static_cast<int64_t>(key >> col_bits), static_cast<int64_t>(key & col_mask)};
  }
  buffer_.resize(distinct);
}

void EntrySorter::release() {
  std::vector<Entry>().swap(buffer_);
  held_.reset();
}

const std::vector<Entry>& EntrySorter::sorted_entries() {
  HALOGEN_ASSERT(runs_.empty(), "sorted_entries() after entries were spilled");
  sort_buffer();
  return buffer_;
}

void EntrySorter::spill() {
  sort_buffer();
  Run run;
  run.file = std::make_unique<ScratchFile>(output_path_, "sorted edge run " + std::to_string(runs_.size()));
  run.file->write(buffer_.data(), buffer_.size() * sizeof(Entry));
  run.file->rewind();
  run.entries = static_cast<int64_t>(buffer_.size());
  runs_.push_back(std::move(run));
  buffer_.clear();
  sorted_ = false;
}

void EntrySorter::merge_runs(std::vector<Run*>& inputs, int64_t buffer_entries,
                             FunctionRef<void(int64_t, int64_t)> emit) {
  struct Cursor {
    std::vector<Entry> block;
    size_t at = 0;
    int64_t left = 0;  // entries of the run not yet read into block
  };
  const size_t k = inputs.size();
  HeldBytes held(budget_, static_cast<int64_t>(k) * buffer_entries * static_cast<int64_t>(sizeof(Entry)));
  std::vector<Cursor> cursors(k);
  auto refill = [&](size_t i) {
    Cursor& c = cursors[i];
    const int64_t take = std::min(c.left, buffer_entries);
    c.block.resize(static_cast<size_t>(take));
    const size_t bytes = static_cast<size_t>(take) * sizeof(Entry);
    if (inputs[i]->file->read(c.block.data(), bytes) != bytes)
      throw UserError(output_path_ +
                      ": a temporary edge run file is shorter than written (disk or file system error)");
    c.left -= take;
    c.at = 0;
    return take > 0;
  };
  using Head = std::pair<Entry, size_t>;
  auto later = [](const Head& a, const Head& b) { return b.first < a.first; };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heap(later);
  for (size_t i = 0; i < k; ++i) {
    cursors[i].block.reserve(static_cast<size_t>(buffer_entries));
    cursors[i].left = inputs[i]->entries;
    if (refill(i)) heap.push({cursors[i].block[0], i});
  }
  bool first = true;
  Entry last{0, 0};
  while (!heap.empty()) {
    const auto [entry, i] = heap.top();
    heap.pop();
    if (first || !(entry == last)) {
      emit(entry.row, entry.col);
      last = entry;
      first = false;
    }
    Cursor& c = cursors[i];
    if (++c.at < c.block.size() || refill(i)) heap.push({c.block[c.at], i});
  }
}

void EntrySorter::finish_input() {
  if (runs_.empty() || !held_) return;
  if (!buffer_.empty()) spill();
  std::vector<Entry>().swap(buffer_);
  held_.reset();
}

void EntrySorter::merge(FunctionRef<void(int64_t, int64_t)> emit) {
  if (runs_.empty()) {  // everything fitted in one buffer: no file at all
    sort_buffer();
    for (const Entry& e : buffer_) emit(e.row, e.col);
    std::vector<Entry>().swap(buffer_);
    held_.reset();
    return;
  }
  finish_input();

  // Fan-in: as many runs as the free budget gives kMinimumRunBufferBytes each, one more buffer for the output
  // of an intermediate pass. More runs than that are merged in passes, oldest first, into new runs.
  const int64_t free_bytes = std::max(budget_.free_bytes(), 3 * kMinimumRunBufferBytes);
  const size_t fan_in =
      static_cast<size_t>(std::clamp<int64_t>(free_bytes / kMinimumRunBufferBytes - 1, 2, kMaximumFanIn));
  const int64_t entry_bytes = static_cast<int64_t>(sizeof(Entry));
  size_t next = 0;  // runs_[next...] are not merged yet
  while (runs_.size() - next > fan_in) {
    std::vector<Run*> inputs;
    for (size_t i = 0; i < fan_in; ++i) inputs.push_back(&runs_[next + i]);
    const int64_t buffer_entries =
        std::max<int64_t>(1, free_bytes / static_cast<int64_t>(fan_in + 1) / entry_bytes);
    Run merged;
    merged.file =
        std::make_unique<ScratchFile>(output_path_, "merged edge run " + std::to_string(runs_.size()));
    {
      std::vector<Entry> out;
      out.reserve(static_cast<size_t>(buffer_entries));
      HeldBytes held(budget_, buffer_entries * entry_bytes);
      merge_runs(inputs, buffer_entries, [&](int64_t row, int64_t col) {
        out.push_back({row, col});
        if (static_cast<int64_t>(out.size()) == buffer_entries) {
          merged.file->write(out.data(), out.size() * sizeof(Entry));
          merged.entries += static_cast<int64_t>(out.size());
          out.clear();
        }
      });
      merged.file->write(out.data(), out.size() * sizeof(Entry));
      merged.entries += static_cast<int64_t>(out.size());
    }
    merged.file->rewind();
    for (size_t i = 0; i < fan_in; ++i) runs_[next + i].file.reset();  // removes the merged inputs
    next += fan_in;
    runs_.push_back(std::move(merged));
  }
  std::vector<Run*> inputs;
  for (size_t i = next; i < runs_.size(); ++i) inputs.push_back(&runs_[i]);
  const int64_t buffer_entries =
      std::max<int64_t>(1, free_bytes / static_cast<int64_t>(inputs.size()) / entry_bytes);
  merge_runs(inputs, buffer_entries, emit);
  runs_.clear();
}

// -----------------------------------------------------------------------------------------------
// CsrStreamWriter

struct CsrStreamWriter::State {
  State(h5::File& f, const std::string& output, int64_t n, BufferBudget& b)
      : file(f),
        output_path(output),
        num_nodes(n),
        budget(b),
        indptr(f, "/csr/indptr", {n + 1}),
        held_indptr(b, indptr.buffer_bytes()),
        indices(output, "column indices"),
        held_indices(b, kIndexBlock * 8) {
    index_block.reserve(kIndexBlock);
  }
  static constexpr size_t kIndexBlock = 1 << 16;  // 512 KiB of int64 column indices
  h5::File& file;
  std::string output_path;
  int64_t num_nodes;
  BufferBudget& budget;
  h5::DatasetWriter<int64_t> indptr;
  HeldBytes held_indptr;
  ScratchFile indices;
  HeldBytes held_indices;
  std::vector<int64_t> index_block;
  int64_t rows_done = 0;  // rows whose end offset is written (indptr holds rows_done + 1 entries)
  int64_t count = 0;      // entries so far
};

CsrStreamWriter::CsrStreamWriter(h5::File& file, const std::string& output_path, int64_t num_nodes,
                                 BufferBudget& budget)
    : state_(std::make_unique<State>(file, output_path, num_nodes, budget)) {
  const int64_t zero = 0;
  state_->indptr.append(&zero, 1);
}

CsrStreamWriter::~CsrStreamWriter() = default;

void CsrStreamWriter::add(int64_t row, int64_t col) {
  State& s = *state_;
  HALOGEN_ASSERT(row >= s.rows_done && row < s.num_nodes, "CSR entries out of order");
  while (s.rows_done < row) {
    s.indptr.append(&s.count, 1);
    ++s.rows_done;
  }
  ++s.count;
  s.index_block.push_back(col);
  if (s.index_block.size() == State::kIndexBlock) {
    s.indices.write(s.index_block.data(), s.index_block.size() * sizeof(int64_t));
    s.index_block.clear();
  }
}

int64_t CsrStreamWriter::finish() {
  State& s = *state_;
  while (s.rows_done < s.num_nodes) {
    s.indptr.append(&s.count, 1);
    ++s.rows_done;
  }
  s.indptr.finish();
  s.indices.write(s.index_block.data(), s.index_block.size() * sizeof(int64_t));
  s.indices.rewind();
  h5::DatasetWriter<int64_t> indices(s.file, "/csr/indices", {s.count});
  HeldBytes held(s.budget, indices.buffer_bytes());
  for (int64_t done = 0; done < s.count;) {
    const int64_t take = std::min<int64_t>(s.count - done, static_cast<int64_t>(State::kIndexBlock));
    s.index_block.resize(static_cast<size_t>(take));
    const size_t bytes = static_cast<size_t>(take) * sizeof(int64_t);
    if (s.indices.read(s.index_block.data(), bytes) != bytes)
      throw UserError(s.output_path + ": the temporary file of column indices is shorter than written");
    indices.append(s.index_block.data(), take);
    done += take;
  }
  indices.finish();
  return s.count;
}

// -------------------------------------------------------------------------------------------
// FeatureStreamWriter

struct FeatureStreamWriter::State {
  State(h5::File& f, int64_t n, int64_t columns, BufferBudget& b)
      : file(f), num_nodes(n), num_features(columns), budget(b), held_pending(b, 0) {
    constexpr int64_t kDecisionValues = (1 << 20) / sizeof(float);
    pending.reserve(static_cast<size_t>(std::min(saturating_bytes(n, columns), kDecisionValues + columns)));
    held_pending.set(static_cast<int64_t>(pending.capacity() * sizeof(float)));
  }
  h5::File& file;
  int64_t num_nodes, num_features;
  BufferBudget& budget;
  std::vector<float> pending;  // rows before the deflate decision
  HeldBytes held_pending;
  std::unique_ptr<h5::DatasetWriter<float>> writer;
  std::unique_ptr<HeldBytes> held_writer;

  void start_writer() {
    const bool compress = features_compress_well(pending.data(), static_cast<int64_t>(pending.size()));
    writer = std::make_unique<h5::DatasetWriter<float>>(
        file, "/node/feat", std::vector<int64_t>{num_nodes, num_features}, compress);
    held_writer = std::make_unique<HeldBytes>(budget, writer->buffer_bytes());
    writer->append(pending.data(), static_cast<int64_t>(pending.size()) / num_features);
    std::vector<float>().swap(pending);
    held_pending.set(0);
  }
};

FeatureStreamWriter::FeatureStreamWriter(h5::File& file, int64_t num_nodes, int64_t num_features,
                                         BufferBudget& budget)
    : state_(std::make_unique<State>(file, num_nodes, num_features, budget)) {}

FeatureStreamWriter::~FeatureStreamWriter() = default;

void FeatureStreamWriter::append(const float* rows, int64_t count) {
  State& s = *state_;
  if (s.writer) {
    s.writer->append(rows, count);
    return;
  }
  s.pending.insert(s.pending.end(), rows, rows + count * s.num_features);
  s.held_pending.set(static_cast<int64_t>(s.pending.capacity() * sizeof(float)));
  constexpr size_t kDecisionValues = (1 << 20) / sizeof(float);  // features_compress_well looks at 1 MiB
  if (s.pending.size() >= kDecisionValues) s.start_writer();
}

void FeatureStreamWriter::finish() {
  State& s = *state_;
  if (!s.writer) s.start_writer();
  s.writer->finish();
  s.writer.reset();
  s.held_writer.reset();
}

// ---------------------------------------------------------------------------------------------------
// write_sorted_csr

int64_t write_sorted_csr(EntrySorter& sorter, h5::File& file, const std::string& output, int64_t num_nodes,
                         BufferBudget& budget, const std::vector<int64_t>& ids) {
  auto rank = [&](int64_t id) {
    return ids.empty() ? id : std::lower_bound(ids.begin(), ids.end(), id) - ids.begin();
  };
  int64_t count = 0;
  if (sorter.fitted()) {
    // From memory: /csr/indptr from the rows, then /csr/indices from the columns (the datasets in
    // write_graph's order; no scratch file).
    const std::vector<Entry>& entries = sorter.sorted_entries();
    count = static_cast<int64_t>(entries.size());
    {
      h5::DatasetWriter<int64_t> indptr(file, "/csr/indptr", {num_nodes + 1});
      const HeldBytes held(budget, indptr.buffer_bytes());
      int64_t at = 0, id_at = 0;
      for (int64_t row = 0; row <= num_nodes; ++row) {
        indptr.append(&at, 1);
        if (row == num_nodes) break;
        // Rows ascend, so their ranks follow one cursor through ids.
        while (at < count) {
          int64_t r = entries[at].row;
          if (!ids.empty()) {
            while (ids[id_at] < r) ++id_at;
            r = id_at;
          }
          HALOGEN_ASSERT(r >= row && r < num_nodes, "CSR entries out of order");
          if (r != row) break;
          ++at;
        }
      }
      indptr.finish();
    }
    h5::DatasetWriter<int64_t> indices(file, "/csr/indices", {count});
    const HeldBytes held(budget, indices.buffer_bytes());
    constexpr int64_t kBlock = 1 << 16;
    std::vector<int64_t> block(static_cast<size_t>(std::min(count, kBlock)));
    const HeldBytes held_block(budget, static_cast<int64_t>(block.size() * sizeof(int64_t)));
    for (int64_t done = 0; done < count;) {
      const int64_t take = std::min(kBlock, count - done);
#pragma omp parallel for schedule(static) if (!ids.empty())
      for (int64_t i = 0; i < take; ++i) block[static_cast<size_t>(i)] = rank(entries[done + i].col);
      indices.append(block.data(), take);
      done += take;
    }
    indices.finish();
    sorter.release();
  } else {
    CsrStreamWriter csr(file, output, num_nodes, budget);
    log::Progress progress("convert: merge edges (stored entries)", 0);
    int64_t entries = 0;
    sorter.merge([&](int64_t row, int64_t col) {
      csr.add(rank(row), rank(col));
      if ((++entries & 0xFFFF) == 0) progress.update(entries);
    });
    progress.finish();
    count = csr.finish();
  }
  file.set_attr("num_edges", count);
  return count;
}

// ---------------------------------------------------------------------------------------------------
// RowStash

template <typename T>
RowStash<T>::RowStash(const std::string& output_path, BufferBudget& budget, int64_t row_elements,
                      const char* what, int64_t expected_rows)
    : output_path_(output_path),
      what_(what),
      budget_(budget),
      row_elements_(std::max<int64_t>(row_elements, 1)),
      allowed_bytes_(std::max<int64_t>(0, budget.free_bytes() - kMinimumConvertLimitBytes)),
      held_(budget, 0) {
  const int64_t hint = std::min(
      saturating_bytes(expected_rows, row_elements_ * static_cast<int64_t>(sizeof(T))), allowed_bytes_);
  if (hint > 0) {
    values_.reserve(static_cast<size_t>(hint) / sizeof(T));
    held_.set(static_cast<int64_t>(values_.capacity() * sizeof(T)));
  }
}

template <typename T>
void RowStash<T>::append(const T* row) {
  ++rows_;
  if (spilled_) {
    spilled_->write(row, static_cast<size_t>(row_elements_) * sizeof(T));
    return;
  }
  const int64_t needed =
      static_cast<int64_t>(values_.size() + row_elements_) * static_cast<int64_t>(sizeof(T));
  if (needed > static_cast<int64_t>(values_.capacity() * sizeof(T))) {
    // Grows by half (a reallocation holds both buffers for a moment), within the room it was given.
    const int64_t grown = std::max<int64_t>(
        {needed, static_cast<int64_t>(values_.capacity() * sizeof(T)) * 3 / 2, int64_t{64} << 10});
    if (grown + static_cast<int64_t>(values_.capacity() * sizeof(T)) <= allowed_bytes_) {
      held_.set(grown + static_cast<int64_t>(values_.capacity() * sizeof(T)));
      values_.reserve(static_cast<size_t>(grown) / sizeof(T));
      held_.set(static_cast<int64_t>(values_.capacity() * sizeof(T)));
    } else {
      spilled_ = std::make_unique<ScratchFile>(output_path_, what_);
      spilled_->write(values_.data(), values_.size() * sizeof(T));
      std::vector<T>().swap(values_);
      held_.set(0);
      spilled_->write(row, static_cast<size_t>(row_elements_) * sizeof(T));
      return;
    }
  }
  values_.insert(values_.end(), row, row + row_elements_);
}

template <typename T>
void RowStash<T>::replay(FunctionRef<void(const T*, int64_t)> rows) {
  // Blocks of about 1 MiB (what a FeatureStreamWriter holds before its deflate decision).
  const int64_t block_rows =
      std::max<int64_t>(1, (int64_t{1} << 20) / (row_elements_ * static_cast<int64_t>(sizeof(T))));
  if (!spilled_) {
    for (int64_t done = 0; done < rows_; done += block_rows)
      rows(values_.data() + done * row_elements_, std::min(block_rows, rows_ - done));
    std::vector<T>().swap(values_);
    held_.set(0);
    return;
  }
  spilled_->rewind();
  std::vector<T> block(static_cast<size_t>(block_rows * row_elements_));
  const HeldBytes held(budget_, static_cast<int64_t>(block.size() * sizeof(T)));
  for (int64_t done = 0; done < rows_;) {
    const int64_t take = std::min(block_rows, rows_ - done);
    const size_t bytes = static_cast<size_t>(take * row_elements_) * sizeof(T);
    if (spilled_->read(block.data(), bytes) != bytes)
      throw UserError(output_path_ + ": the temporary file of the " + what_ + " is shorter than written");
    rows(block.data(), take);
    done += take;
  }
  spilled_.reset();
}

template class RowStash<float>;
template class RowStash<int32_t>;

int64_t convert_limit_bytes(int64_t requested) {
  if (requested != 0) {
    check_convert_limit(requested);
    return requested;
  }
  const int64_t available = available_memory_bytes();
  if (available < 0) return std::numeric_limits<int64_t>::max() / 4;
  return std::max(kMinimumConvertLimitBytes, available / 4 * 3);
}

void check_convert_limit(int64_t limit_bytes) {
  HALOGEN_USER_CHECK(
      limit_bytes >= kMinimumConvertLimitBytes,
      "--memory-limit: %lld MiB is below the %lld MiB a bounded conversion needs (two HDF5 chunks of "
      "1 MiB and the merge buffers)",
      static_cast<long long>(limit_bytes >> 20), static_cast<long long>(kMinimumConvertLimitBytes >> 20));
}

// -----------------------------------------------------------------------------------------------------
// reporting

int64_t max_resident_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

std::string peak_memory_line(int64_t buffer_bytes, int64_t limit_bytes) {
  const double mib = 1 << 20;
  const std::string limit =
      limit_bytes > 0 ? strformat("%.0f MiB", static_cast<double>(limit_bytes) / mib) : std::string("none");
  return strformat("peak memory: %.1f MiB (buffers %.1f MiB, limit %s)",
                   static_cast<double>(max_resident_bytes()) / mib, static_cast<double>(buffer_bytes) / mib,
                   limit.c_str());
}

}  // namespace halogen::io
