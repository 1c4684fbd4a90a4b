#pragma once
// An output file that appears only when complete: writers write to `temp_path()` (same directory, so the
// final rename is atomic) and call commit(); if the object is destroyed first (an exception, a bad input
// found half way) the temporary file is removed and nothing is left behind.
#include <string>

namespace halogen::io {

class AtomicOutput {
 public:
  explicit AtomicOutput(std::string final_path);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& temp_path() const { return temp_path_; }
  const std::string& final_path() const { return final_path_; }
  // Renames the temporary file onto the final path (replacing an existing file). UserError on failure.
  void commit();

 private:
  std::string final_path_;
  std::string temp_path_;
  bool committed_ = false;
};

}  // namespace halogen::io
