#pragma once
// HTTP(S) transfers through libcurl into a partial file that survives a broken connection or a killed job:
// each attempt asks for the bytes the file lacks (Range: bytes=K-), appends on 206, starts over on 200 (a
// server without ranges), and the transfer is retried with exponential backoff until the file holds the
// whole body (its size as the server declared it). Progress: a bar with rate and ETA on a terminal, a line
// every few seconds otherwise.
#include <cstdint>
#include <functional>
#include <string>

namespace halogen::download {

struct TransferOptions {
  int retries = 5;            // attempts in a row that bring no new byte, after the first, before giving up
  double retry_wait_s = 2.0;  // the first wait; it doubles after each failed attempt, at most 60 s
  double progress_interval_s = 10.0;  // seconds between progress lines when stderr is not a terminal
  std::string label;                  // what progress lines call the file (e.g. "arxiv.zip")
  // Called once per attempt when the size of the whole file is known (-1: the server did not say), before
  // any byte is written: the disk-space check. It may throw UserError, which ends the transfer.
  std::function<void(int64_t total_bytes, int64_t bytes_present)> on_size;
};

struct TransferResult {
  int64_t bytes = 0;    // size of the complete file
  int attempts = 0;     // requests made
  int64_t resumed_at = -1;  // the largest offset a request resumed from (-1: never resumed)
  double seconds = 0;       // from the first request to the last byte, retries and waits included
};

// Fetches `url` into `partial_path` (created or continued). UserError naming the URL, the reason (HTTP
// status or transfer error) and the number of attempts when it cannot complete; the partial file is kept.
TransferResult fetch_to_file(const std::string& url, const std::string& partial_path, const TransferOptions& options);

}  // namespace halogen::download
