#include "events/sha256.hpp"

// OpenSSL 3 marks the one-shot SHA256_* functions deprecated in favour of EVP, but EVP's
// per-call set-up (finding the provider's implementation, allocating and cleansing its
// context) cost ~600 instructions per hash, more than a tenth of a replay's reading thread
// besides the hash itself (docs/benchmarks.md). Both run the same block function (with the
// CPU's SHA instructions where it has them).
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <stdexcept>

namespace baton::events {

static_assert(SHA256_DIGEST_LENGTH == hash_size);

void sha256_into(std::string_view a, std::string_view b, unsigned char* out) {
  SHA256_CTX c;
  if (SHA256_Init(&c) != 1 || SHA256_Update(&c, a.data(), a.size()) != 1 || SHA256_Update(&c, b.data(), b.size()) != 1 ||
      SHA256_Final(out, &c) != 1)
    throw std::runtime_error("OpenSSL: SHA-256 failed");
}

std::string sha256(std::string_view a, std::string_view b) {
  std::string out(hash_size, '\0');
  sha256_into(a, b, reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    s.push_back(digits[c >> 4]);
    s.push_back(digits[c & 15]);
  }
  return s;
}

}  // namespace baton::events
