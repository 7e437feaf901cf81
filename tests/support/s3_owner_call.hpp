#pragma once
// A request to the S3 store with the backend's own key, signed in header form as
// s3_backend::prepare signs batond's calls: what a test does as the bucket's owner (set a
// policy, change an object behind batond's back). GET, PUT or DELETE; no answer: a null result.
#include <httplib.h>

#include <chrono>
#include <string>

#include "http/storage/s3_backend.hpp"

namespace baton::test {

inline httplib::Result s3_owner_call(const storage::s3_backend& b, const std::string& method, const std::string& key,
                                     const storage::sigv4::pairs& query, const std::string& body = {}) {
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto p = b.prepare(method, key, query, {}, body, now);
  httplib::Client cli(p.base);
  cli.set_url_encode(false);  // the target is encoded as it was signed
  httplib::Headers h;
  for (const auto& [n, v] : p.headers)
    if (n != "Host") h.emplace(n, v);  // httplib sends its own, the same
  if (method == "GET") return cli.Get(p.target.c_str(), h);
  if (method == "PUT") return cli.Put(p.target.c_str(), h, body, "application/octet-stream");
  return cli.Delete(p.target.c_str(), h);
}

}  // namespace baton::test
