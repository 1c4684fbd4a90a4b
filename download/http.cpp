#include "download/http.h"

#include <curl/curl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <thread>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"

namespace halogen::download {

namespace {

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// Bytes in the unit that keeps 3 significant digits (KiB, MiB, GiB).
std::string mib(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b < 1024.0 * 1024) return strformat("%.1f KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return strformat("%.1f MiB", b / (1 << 20));
  return strformat("%.2f GiB", b / (1 << 30));
}

std::string seconds_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 90) return strformat("%.0f s", s);
  if (s < 5400) return strformat("%.0f min", s / 60);
  return strformat("%.1f h", s / 3600);
}

void global_init() {
  static const bool done = [] {
    HALOGEN_ASSERT(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK, "curl_global_init failed");
    return true;
  }();
  (void)done;
}

using Clock = std::chrono::steady_clock;

// One request's state, shared with libcurl's callbacks.
struct Attempt {
  const std::string* path = nullptr;
  const TransferOptions* options = nullptr;
  FILE* file = nullptr;
  int64_t offset = 0;        // bytes the file held when the request was made (after a 200: 0)
  int64_t written = 0;       // bytes appended by this request
  long status = 0;           // of the last response (redirects reset it)
  int64_t content_length = -1;
  int64_t range_start = -1, range_total = -1;  // from Content-Range
  int64_t total = -1;        // size of the whole file, once the body starts
  bool body_started = false;
  bool local_file = false;   // a file:// URL: no status line; the request is for the bytes from `offset`
  CURL* curl = nullptr;
  std::string stop_reason;   // why this request stopped early
  bool give_up = false;      // ... and whether that ends the transfer (a local write failed), not to retry
  std::exception_ptr stop_error;
  // progress
  Clock::time_point start = Clock::now(), last_print = Clock::now();
  bool terminal = false, printed_bar = false;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  Attempt& a = *static_cast<Attempt*>(user);
  const std::string line(data, size * count);
  if (line.compare(0, 5, "HTTP/") == 0) {
    const size_t space = line.find(' ');
    a.status = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
    a.content_length = a.range_start = a.range_total = -1;
  } else {
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    long long a_start = 0, a_end = 0, a_total = 0;
    if (std::sscanf(lower.c_str(), "content-length: %lld", &a_start) == 1) a.content_length = a_start;
    if (std::sscanf(lower.c_str(), "content-range: bytes %lld-%lld/%lld", &a_start, &a_end, &a_total) == 3) {
      a.range_start = a_start;
      a.range_total = a_total;
    } else if (std::sscanf(lower.c_str(), "content-range: bytes */%lld", &a_total) == 1) {
      a.range_total = a_total;
    }
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  Attempt& a = *static_cast<Attempt*>(user);
  const size_t bytes = size * count;
  if (!a.body_started) {
    a.body_started = true;
    if (a.local_file && a.status == 0) {  // what an HTTP server would have said
      curl_off_t rest = -1;
      curl_easy_getinfo(a.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &rest);
      a.status = a.offset > 0 ? 206 : 200;
      a.content_length = rest;
      a.range_start = a.offset;
      a.range_total = rest >= 0 ? a.offset + rest : -1;
    }
    if (a.status >= 400 || (a.status != 200 && a.status != 206)) return 0;  // an error page: not the file
    if (a.status == 200) {  // the whole body: start the file over (a server that ignores ranges)
      if (a.offset > 0) {
        if (std::fflush(a.file) != 0 || ::ftruncate(::fileno(a.file), 0) != 0 ||
            std::fseek(a.file, 0, SEEK_SET) != 0) {
          a.stop_reason = strformat("%s: cannot truncate (%s)", a.path->c_str(), std::strerror(errno));
          a.give_up = true;
          return 0;
        }
        log::info(strformat("%s: the server sent the whole file, not the missing range: starting over",
                            a.options->label.c_str()));
      }
      a.offset = 0;
      a.total = a.content_length;
    } else {  // 206: the missing range, which must start where the file ends
      if (a.range_start != a.offset) {
        a.stop_reason = strformat("the server sent bytes from %lld, not from %lld", (long long)a.range_start,
                                  (long long)a.offset);
        return 0;
      }
      a.total = a.range_total;
    }
    if (a.options->on_size) {
      try {
        a.options->on_size(a.total, a.offset);
      } catch (...) {
        a.stop_error = std::current_exception();
        return 0;
      }
    }
  }
  if (std::fwrite(data, 1, bytes, a.file) != bytes) {
    a.stop_reason = strformat("%s: write failed (%s)", a.path->c_str(), std::strerror(errno));
    a.give_up = true;
    return 0;
  }
  a.written += static_cast<int64_t>(bytes);
  return bytes;
}

void print_progress(Attempt& a) {
  const auto now = Clock::now();
  const double since_print = std::chrono::duration<double>(now - a.last_print).count();
  const double interval = a.terminal ? 0.25 : a.options->progress_interval_s;
  if (since_print < interval) return;
  a.last_print = now;
  const double elapsed = std::max(1e-3, std::chrono::duration<double>(now - a.start).count());
  const double rate = static_cast<double>(a.written) / elapsed;
  const int64_t have = a.offset + a.written;
  const std::string label = a.options->label;
  if (a.total > 0) {
    const double share = std::min(1.0, static_cast<double>(have) / static_cast<double>(a.total));
    const double eta = rate > 0 ? static_cast<double>(a.total - have) / rate : -1;
    if (a.terminal) {
      const int width = 30, filled = static_cast<int>(share * width);
      std::fprintf(stderr, "\r%s %3.0f%% [%s%s] %s of %s, %s/s, ETA %s\033[K", label.c_str(), 100 * share,
                   std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), mib(have).c_str(),
                   mib(a.total).c_str(), mib(static_cast<int64_t>(rate)).c_str(), seconds_text(eta).c_str());
      a.printed_bar = true;
    } else {
      std::fprintf(stderr, "%s: %s of %s (%.0f%%), %s/s, ETA %s\n", label.c_str(), mib(have).c_str(),
                   mib(a.total).c_str(), 100 * share, mib(static_cast<int64_t>(rate)).c_str(),
                   seconds_text(eta).c_str());
    }
  } else {
    std::fprintf(stderr, a.terminal ? "\r%s: %s, %s/s\033[K" : "%s: %s, %s/s\n", label.c_str(), mib(have).c_str(),
                 mib(static_cast<int64_t>(rate)).c_str());
    a.printed_bar = a.terminal;
  }
  std::fflush(stderr);
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  Attempt& a = *static_cast<Attempt*>(user);
  if (a.body_started && a.stop_reason.empty() && !a.stop_error) print_progress(a);
  return 0;
}

}  // namespace

TransferResult fetch_to_file(const std::string& url, const std::string& partial_path, const TransferOptions& options) {
  global_init();
  TransferResult result;
  const auto started = Clock::now();
  int failures_in_a_row = 0;
  for (;;) {
    Attempt a;
    a.path = &partial_path;
    a.options = &options;
    a.terminal = log::stderr_is_terminal();
    a.offset = file_size(partial_path);
    a.file = std::fopen(partial_path.c_str(), a.offset > 0 ? "ab" : "wb");
    HALOGEN_USER_CHECK(a.file != nullptr, "%s: cannot open for writing (%s)", partial_path.c_str(),
                       std::strerror(errno));
    if (a.offset > 0) {
      log::info(strformat("%s: resuming at %s (%lld bytes)", options.label.c_str(), mib(a.offset).c_str(),
                          static_cast<long long>(a.offset)));
      result.resumed_at = std::max(result.resumed_at, a.offset);
    }
    CURL* curl = curl_easy_init();
    HALOGEN_ASSERT(curl != nullptr, "curl_easy_init failed");
    a.curl = curl;
    a.local_file = url.rfind("file://", 0) == 0;
    char error_text[CURL_ERROR_SIZE] = {0};
    const std::string range = strformat("%lld-", static_cast<long long>(a.offset));
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "halogen-download/1");
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);  // a stalled connection: no byte for 60 s
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (a.offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &a);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    a.start = a.last_print = Clock::now();
    const CURLcode code = curl_easy_perform(curl);
    ++result.attempts;
    curl_easy_cleanup(curl);
    const bool closed = std::fclose(a.file) == 0;
    if (a.printed_bar) {  // erased, as log::Progress does; the caller reports the outcome on one line
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
    }
    if (a.stop_error) std::rethrow_exception(a.stop_error);
    HALOGEN_USER_CHECK(closed, "%s: write failed (%s)", partial_path.c_str(), std::strerror(errno));
    HALOGEN_USER_CHECK(!a.give_up, "%s (%lld bytes kept; run again to resume)", a.stop_reason.c_str(),
                       static_cast<long long>(file_size(partial_path)));
    const int64_t have = file_size(partial_path);
    std::string reason;
    if (code == CURLE_OK && (a.status == 200 || a.status == 206)) {
      if (a.total < 0 || have == a.total) {
        result.bytes = have;
        result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
        return result;
      }
      reason = strformat("the body ended at %lld of %lld bytes", static_cast<long long>(have),
                         static_cast<long long>(a.total));
    } else if (a.status == 416 && a.offset > 0) {
      // The range starts at or past the end: the file is complete if the server's size agrees, else it is
      // not the server's file: start over.
      if (a.range_total == a.offset) {
        result.bytes = have;
        result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
        return result;
      }
      reason = strformat("HTTP 416 (the kept %lld bytes do not fit the server's file): starting over",
                         static_cast<long long>(a.offset));
      HALOGEN_USER_CHECK(::truncate(partial_path.c_str(), 0) == 0, "%s: cannot truncate (%s)", partial_path.c_str(),
                         std::strerror(errno));
    } else if (!a.stop_reason.empty()) {
      reason = a.stop_reason;
      HALOGEN_USER_CHECK(::truncate(partial_path.c_str(), 0) == 0, "%s: cannot truncate (%s)", partial_path.c_str(),
                         std::strerror(errno));
    } else if (a.status >= 300) {
      reason = strformat("HTTP %ld", a.status);
    } else {
      reason = error_text[0] != 0 ? error_text : curl_easy_strerror(code);
    }
    failures_in_a_row = a.written > 0 ? 0 : failures_in_a_row + 1;
    if (failures_in_a_row > options.retries) {
      const std::string kept = have > 0 ? strformat(" (%lld bytes kept in %s; run again to resume)",
                                                    static_cast<long long>(have), partial_path.c_str())
                                          : std::string();
      throw UserError(
          strformat("%s: %s after %d attempts%s", url.c_str(), reason.c_str(), result.attempts, kept.c_str()));
    }
    const double wait =
        failures_in_a_row == 0 ? 0.0
                               : std::min(60.0, options.retry_wait_s * std::pow(2.0, failures_in_a_row - 1));
    log::warn(strformat("%s: %s; retrying%s", url.c_str(), reason.c_str(),
                        wait > 0 ? strformat(" in %s", seconds_text(wait).c_str()).c_str() : " at once"));
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

}  // namespace halogen::download
