#include "events/sha256.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace baton::events {
namespace {

struct digest_context {
  // Fetch the algorithm once: EVP_Digest's implicit fetch per call costs more than the hash.
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  digest_context() {
    if (!md || !ctx) throw std::runtime_error("OpenSSL: SHA-256 is unavailable");
  }
  ~digest_context() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};

}  // namespace

void sha256_into(std::string_view a, std::string_view b, unsigned char* out) {
  thread_local digest_context d;
  unsigned len = 0;
  if (EVP_DigestInit_ex(d.ctx, d.md, nullptr) != 1 || EVP_DigestUpdate(d.ctx, a.data(), a.size()) != 1 ||
      EVP_DigestUpdate(d.ctx, b.data(), b.size()) != 1 || EVP_DigestFinal_ex(d.ctx, out, &len) != 1 || len != hash_size)
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
