// Bounded-memory conversion of SNAP edge lists (convert_snap_to_file; io/convert_chunked.h). Kept apart from
// convert_snap.cpp, whose reader the fuzz build compiles without HDF5.
#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "io/atomic_file.h"
#include "io/convert.h"
#include "io/convert_chunked.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/snap_scan.h"
#include "io/text_reader.h"

namespace halogen::io {

namespace {

// SNAP's ids, sorted and distinct, collected in blocks (the table for renumbering; 8 bytes per vertex).
class IdTable {
 public:
  explicit IdTable(BufferBudget& budget) : held_(budget, 0) { pending_.reserve(kPending); }
  void add(int64_t id) {
    pending_.push_back(id);
    if (pending_.size() == kPending) fold();
  }
  std::vector<int64_t>& finish() {
    fold();
    std::vector<int64_t>().swap(pending_);
    ids_.shrink_to_fit();
    held_.set(static_cast<int64_t>(ids_.capacity() * sizeof(int64_t)));
    return ids_;
  }

 private:
  static constexpr size_t kPending = 1 << 16;
  void fold() {
    std::sort(pending_.begin(), pending_.end());
    pending_.erase(std::unique(pending_.begin(), pending_.end()), pending_.end());
    const size_t old_size = ids_.size();
    if (ids_.capacity() <
        old_size + pending_.size())  // grows by a quarter, not doubling: the table is counted
      ids_.reserve(std::max(old_size + pending_.size(), ids_.capacity() + ids_.capacity() / 4));
    ids_.insert(ids_.end(), pending_.begin(), pending_.end());
    std::inplace_merge(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(old_size), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
    pending_.clear();
    held_.set(static_cast<int64_t>((ids_.capacity() + pending_.capacity()) * sizeof(int64_t)));
  }
  std::vector<int64_t> ids_, pending_;
  HeldBytes held_;
};


}  // namespace

ConvertSummary convert_snap_to_file(const ConvertOptions& options, const std::string& output) {
  check_convert_limit(options.memory_limit_bytes);
  BufferBudget budget(options.memory_limit_bytes);
  ConvertSummary summary;
  summary.directed = options.directed;
  const std::filesystem::path p(options.input);
  const std::string name = options.name.empty() ? p.stem().string() : options.name;
  write_atomically(output, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    // Entries are sorted by original ids: renumbering (sorted distinct ids -> 0..N-1) keeps their order, so
    // the runs serve either way and ids are mapped as they leave the merge.
    EntrySorter sorter(output, budget, budget.limit_bytes() - (int64_t{2} << 20), !options.directed);
    int64_t max_id = -1, edges = 0;
    const int64_t header_nodes = scan_snap(options.input, &max_id, &edges,
                                           [&](int64_t src, int64_t dst) { sorter.add_edge(src, dst); });
    sorter.finish_input();
    HALOGEN_USER_CHECK(edges > 0, "%s: no edges (an empty edge list would be a graph of 0 vertices)",
                       options.input.c_str());
    std::vector<int64_t> none;
    std::vector<int64_t>* ids = &none;  // empty: ids kept as they are
    std::unique_ptr<IdTable> table;
    if (header_nodes > 0 && max_id < header_nodes) {
      summary.num_nodes = header_nodes;
    } else {
      if (header_nodes > 0)
        log::warn(strformat(
            "%s: the header says %lld nodes but an edge names node %lld: ids are renumbered to the ones "
            "the edges use (vertices no edge touches are not kept)",
            options.input.c_str(), (long long)header_nodes, (long long)max_id));
      table = std::make_unique<IdTable>(budget);
      int64_t ignored_max = 0, ignored_edges = 0;
      scan_snap(options.input, &ignored_max, &ignored_edges, [&](int64_t src, int64_t dst) {
        table->add(src);
        table->add(dst);
      });
      ids = &table->finish();
      summary.num_nodes = static_cast<int64_t>(ids->size());
      bool identity = true;
      for (int64_t i = 0; i < summary.num_nodes && identity; ++i) identity = (*ids)[i] == i;
      if (identity) ids = &none;
    }
    write_graph_attributes(file, name, summary.num_nodes, 0, options.directed, 0, 0);
    summary.runs = sorter.runs_spilled();
    {
      CsrStreamWriter csr(file, output, summary.num_nodes, budget);
      auto rank = [&](int64_t id) {
        return ids->empty() ? id : std::lower_bound(ids->begin(), ids->end(), id) - ids->begin();
      };
      log::Progress progress("convert: merge edges (stored entries)", 0);
      int64_t entries = 0;
      sorter.merge([&](int64_t row, int64_t col) {
        csr.add(rank(row), rank(col));
        if ((++entries & 0xFFFF) == 0) progress.update(entries);
      });
      progress.finish();
      summary.num_edges = csr.finish();
      file.set_attr("num_edges", summary.num_edges);
    }
    if (!ids->empty()) file.write("/node/orig_id", *ids);
    file.write("/split/train", std::vector<int64_t>());
    file.write("/split/valid", std::vector<int64_t>());
    file.write("/split/test", std::vector<int64_t>());
    file.close();
  });
  summary.buffer_high_water_bytes = budget.high_water_bytes();
  return summary;
}

}  // namespace halogen::io
