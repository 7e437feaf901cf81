// OpenSSL 3 marks the one-shot SHA256_* functions deprecated in favour of EVP, but EVP's
// per-call set-up (finding the provider's implementation, allocating and cleansing its
// context) cost ~600 instructions per hash, more than a tenth of a replay's reading thread
// besides the hash itself (docs/benchmarks.md). Both run the same block function (with the
// CPU's SHA instructions where it has them), so streams use SHA256_CTX too: a plain struct,
// copied by value, nothing to allocate or free.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "core/util/sha256.hpp"

#include <stdexcept>

#include "core/util/hex.hpp"

namespace baton::util {

static_assert(SHA256_DIGEST_LENGTH == sha256_size);

namespace {

[[noreturn]] void failed() { throw std::runtime_error("OpenSSL: SHA-256 failed"); }

}  // namespace

void sha256_into(std::string_view a, std::string_view b, unsigned char* out) {
  SHA256_CTX c;
  if (SHA256_Init(&c) != 1 || SHA256_Update(&c, a.data(), a.size()) != 1 || SHA256_Update(&c, b.data(), b.size()) != 1 ||
      SHA256_Final(out, &c) != 1)
    failed();
}

std::string sha256(std::string_view a, std::string_view b) {
  std::string out(sha256_size, '\0');
  sha256_into(a, b, reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string sha256_hex(std::string_view data) { return to_hex(sha256(data)); }

bool is_sha256_hex(std::string_view s) { return is_lower_hex(s, 2 * sha256_size); }

sha256_stream::sha256_stream() { reset(); }

void sha256_stream::reset() {
  if (SHA256_Init(&ctx_) != 1) failed();
}

void sha256_stream::update(const char* p, size_t n) {
  if (SHA256_Update(&ctx_, p, n) != 1) failed();
}

std::string sha256_stream::digest() {
  std::string out(sha256_size, '\0');
  if (SHA256_Final(reinterpret_cast<unsigned char*>(out.data()), &ctx_) != 1) failed();
  return out;
}

std::string sha256_stream::hex() { return to_hex(digest()); }

}  // namespace baton::util
