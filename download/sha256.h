#pragma once
// SHA-256 (OpenSSL's libcrypto) of a file or of bytes, as 64 lower-case hex digits.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace halogen::download {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t bytes);
  std::string hex();  // finishes; the object is spent

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The SHA-256 of the whole file; UserError naming it when it cannot be read.
std::string sha256_file(const std::string& path);

// Whether `text` is 64 hex digits (either case).
bool is_sha256_hex(const std::string& text);

}  // namespace halogen::download
