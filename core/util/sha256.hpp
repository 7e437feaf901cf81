#pragma once
// SHA-256: the log's chain hash, blob digests, token hashes, checkpoint and bundle digests.
// One implementation (OpenSSL's SHA256_* block function) for whole strings and for streams.
#include <openssl/sha.h>  // SHA256_CTX (the type is not deprecated, its functions are)

#include <cstddef>
#include <string>
#include <string_view>

namespace baton::util {

constexpr size_t sha256_size = 32;

// SHA-256 of a ‖ b as 32 raw bytes. Thread-safe (the state is on the stack).
std::string sha256(std::string_view a, std::string_view b = {});
// The same into `out` (sha256_size bytes), allocating nothing: a replay checks one per event.
void sha256_into(std::string_view a, std::string_view b, unsigned char* out);
// Lower-case hex of SHA-256(data): how blobs and tokens are named.
std::string sha256_hex(std::string_view data);
// Whether s names a SHA-256 as blobs are named: exactly 64 lower-case hex digits.
bool is_sha256_hex(std::string_view s);

// SHA-256 of bytes that arrive in pieces (files, uploads, downloads). A plain value: copying
// it copies the state (an upload resumed within one run continues from a copy), and it holds
// no heap memory.
class sha256_stream {
 public:
  sha256_stream();
  void update(const char* p, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // The digest of what was hashed (32 raw bytes, or lower-case hex); either ends the stream,
  // reset() starts another.
  std::string digest();
  std::string hex();
  void reset();

 private:
  SHA256_CTX ctx_;
};

}  // namespace baton::util
