#pragma once
// The CLI's connection to batond: where it is, which token, and one call = one result with
// the exit code the command should end with.
#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace httplib {
class Client;
}

namespace baton::cli {

enum exit_code : int { ok = 0, api_error = 1, usage_error = 2, unreachable = 3, wait_timeout = 4 };

struct endpoint {
  std::string host = "127.0.0.1";
  int port = 36158;
  bool https = false;
  std::string ca_file;  // HTTPS: the CA that signed batond's certificate ("" = the system's CAs)
  std::string token;
  std::string operator_name;  // X-Baton-Operator: who the log records
  std::string store_ca_file;  // an https object store's CA, for presigned transfers ("" = the system's CAs)
};

struct result {
  int status = 0;  // HTTP status, 0 when the daemon could not be reached
  nlohmann::json body;
  std::string error;            // transport error, when status is 0
  int64_t total = -1;           // a list's X-Total-Count (-1: none)
  int retry_after_seconds = 0;  // a 429's Retry-After
  exit_code code() const;
  std::string message() const;  // for stderr when code() != ok
};

result call(const endpoint& e, const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);

// GET whose 200 body is written to out as it arrives (an export can be large); any other
// answer is read into the result as call() reads it.
// progress(bytes so far, total or 0 when unknown) is called as the body arrives.
result download(const endpoint& e, const std::string& path, std::ostream& out,
                const std::function<void(uint64_t, uint64_t)>& progress = {});

// "http://host:port", "https://host:port" or "host:port" -> endpoint host, port and
// scheme; false if malformed.
bool parse_url(const std::string& url, endpoint& e);

// A client for the endpoint: HTTPS with the server's certificate verified (against ca_file,
// or the system's CAs) and its name checked, or plain HTTP.
std::unique_ptr<httplib::Client> connect(const endpoint& e);

}  // namespace baton::cli
