#include "train/trace.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/atomic_file.h"
#include "train/collective_error.h"
#include "train/metrics.h"

namespace halogen::train {
namespace {

int lane_of(nn::Phase phase) {
  switch (phase) {
    case nn::Phase::halo_total: return 1;
    case nn::Phase::halo_exposed: return 2;
    case nn::Phase::allreduce: return 3;
    case nn::Phase::allreduce_exposed: return 4;
    default: return 0;
  }
}
constexpr const char* kLaneNames[] = {"compute", "halo", "halo wait", "allreduce", "allreduce wait"};

}  // namespace

void write_trace(comm::Communicator& comm, const nn::TraceRecorder& recorder, double origin_s,
                 const std::string& path) {
  const std::vector<std::string> hosts = rank_host_names(comm);
  // Every rank's span count and dropped count (slot r: rank r's; zeros elsewhere, so the sum is all of them).
  std::vector<double> counts(static_cast<size_t>(2 * comm.size()), 0.0);
  counts[static_cast<size_t>(2 * comm.rank())] = static_cast<double>(recorder.spans().size());
  counts[static_cast<size_t>(2 * comm.rank() + 1)] = static_cast<double>(recorder.dropped());
  comm.allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
  double longest = 0, dropped_max = 0;
  for (int r = 0; r < comm.size(); ++r) {
    longest = std::max(longest, counts[static_cast<size_t>(2 * r)]);
    dropped_max = std::max(dropped_max, counts[static_cast<size_t>(2 * r + 1)]);
  }
  // Then every rank's spans, the same way: 4 doubles per span (phase, epoch, begin, end), in slots as long as
  // the longest rank's list.
  const int64_t slot = 4 * static_cast<int64_t>(longest);
  std::vector<double> all(static_cast<size_t>(slot * comm.size()), 0.0);
  double* own = all.data() + slot * comm.rank();
  for (const nn::TraceSpan& span : recorder.spans()) {
    *own++ = span.phase;
    *own++ = span.epoch;
    *own++ = (span.begin_s - origin_s) * 1e6;
    *own++ = (span.end_s - origin_s) * 1e6;
  }
  comm.allreduce_sum(all.data(), static_cast<int64_t>(all.size()));
  run_collectively(comm, [&] {
    if (comm.rank() != 0) return;
    nlohmann::json events = nlohmann::json::array();
    for (int r = 0; r < comm.size(); ++r) {
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
                        {"args", {{"name", "rank " + std::to_string(r) + " (" + hosts[static_cast<size_t>(r)] + ")"}}}});
      events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
      for (int lane = 0; lane < 5; ++lane)
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", lane},
                          {"args", {{"name", kLaneNames[lane]}}}});
      const double* s = all.data() + slot * r;
      for (int64_t i = 0; i < static_cast<int64_t>(counts[static_cast<size_t>(2 * r)]); ++i, s += 4) {
        const auto phase = static_cast<nn::Phase>(static_cast<int>(s[0]));
        events.push_back({{"name", nn::phase_name(phase)}, {"ph", "X"}, {"pid", r}, {"tid", lane_of(phase)},
                          {"ts", s[2]}, {"dur", std::max(0.0, s[3] - s[2])},
                          {"args", {{"epoch", static_cast<int64_t>(s[1])}}}});
      }
    }
    nlohmann::json trace = {{"traceEvents", events},
                            {"displayTimeUnit", "ms"},
                            {"otherData", {{"ranks", comm.size()}, {"spans_dropped_max_per_rank", dropped_max}}}};
    const std::string text = trace.dump();
    io::write_atomically(path, [&](const std::string& temp) {
      std::FILE* f = std::fopen(temp.c_str(), "wb");
      HALOGEN_USER_CHECK(f != nullptr, "%s: cannot write the trace: %s", temp.c_str(), std::strerror(errno));
      const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
      const bool closed = std::fclose(f) == 0;
      HALOGEN_USER_CHECK(written && closed, "%s: cannot write the trace: %s", temp.c_str(), std::strerror(errno));
    });
  }, Report::lowest_failing_rank);
}

}  // namespace halogen::train
