#pragma once
// The CLI's connection to batond: where it is, which token, and one call = one result with
// the exit code the command should end with.
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace baton::cli {

enum exit_code : int { ok = 0, api_error = 1, usage_error = 2, unreachable = 3 };

struct endpoint {
  std::string host = "127.0.0.1";
  int port = 36158;
  std::string token;
  std::string operator_name;  // X-Baton-Operator: who the log records
};

struct result {
  int status = 0;  // HTTP status, 0 when the daemon could not be reached
  nlohmann::json body;
  std::string error;  // transport error, when status is 0
  exit_code code() const;
  std::string message() const;  // for stderr when code() != ok
};

result call(const endpoint& e, const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);

// GET whose 200 body is written to out as it arrives (an export can be large); any other
// answer is read into the result as call() reads it.
result download(const endpoint& e, const std::string& path, std::ostream& out);

// "http://host:port" or "host:port" -> endpoint host and port; false if malformed.
bool parse_url(const std::string& url, endpoint& e);

}  // namespace baton::cli
