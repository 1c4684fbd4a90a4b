#include "download/sha256.h"

#include <openssl/evp.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/format.h"

namespace halogen::download {

struct Sha256::State {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  HALOGEN_ASSERT(state_->ctx != nullptr && EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) == 1,
                 "EVP_DigestInit_ex(sha256) failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::update(const void* data, size_t bytes) {
  HALOGEN_ASSERT(EVP_DigestUpdate(state_->ctx, data, bytes) == 1, "EVP_DigestUpdate failed");
}

std::string Sha256::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HALOGEN_ASSERT(EVP_DigestFinal_ex(state_->ctx, digest, &length) == 1 && length == 32,
                 "EVP_DigestFinal_ex failed");
  static const char* digits = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = digits[digest[i] >> 4];
    out[2 * i + 1] = digits[digest[i] & 15];
  }
  return out;
}

std::string sha256_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  HALOGEN_USER_CHECK(f != nullptr, "%s: cannot open to compute its SHA-256 (%s)", path.c_str(),
                     std::strerror(errno));
  Sha256 hash;
  std::vector<unsigned char> buffer(size_t{4} << 20);
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), f)) > 0) hash.update(buffer.data(), got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  HALOGEN_USER_CHECK(!failed, "%s: read error while computing its SHA-256", path.c_str());
  return hash.hex();
}

bool is_sha256_hex(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace halogen::download
