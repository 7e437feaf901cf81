// Fuzz target: the operator CLI reading batond's replies. A real HTTP server on
// loopback (in this process) answers every request with the reply the input
// describes; one of the CLI's commands runs against it. Whatever the reply
// (wrong shapes, wrong types, not JSON, odd statuses), the command ends with an
// exit code and a message. Input: byte 0 the command, byte 1 bit 0 --json, byte
// 2 the status, byte 3 bit 0 an X-Total-Count header, bit 1 a Retry-After
// header; the rest is the reply body.
#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "cli/request_helpers.hpp"

namespace {

struct reply {
  int status = 200;
  std::string body;
  bool total = false, retry_after = false;
};

std::mutex mu;
reply current;
int port = 0;

// Started before the first input (libFuzzer's initializer), so its allocations are not taken
// for a leak of the first input.
void start_server() {
  static httplib::Server server;
  {
    auto answer = [](const httplib::Request&, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu);
      res.status = current.status;
      res.set_content(current.body, "application/json");
      if (current.total) res.set_header("X-Total-Count", "12");
      if (current.retry_after) res.set_header("Retry-After", "1");
    };
    server.Get(".*", answer);
    server.Post(".*", answer);
    server.Put(".*", answer);
    server.Delete(".*", answer);
    port = server.bind_to_any_port("127.0.0.1");
    if (port <= 0) std::abort();
    std::thread([] { server.listen_after_bind(); }).detach();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server.is_running())
      if (std::chrono::steady_clock::now() > deadline) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  start_server();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace baton::cli;
  if (size < 4) return 0;
  static const int statuses[] = {200, 201, 202, 204, 400, 401, 403, 404, 409, 422, 429, 500, 503};
  {
    std::lock_guard<std::mutex> lock(mu);
    current.status = statuses[data[2] % (sizeof statuses / sizeof statuses[0])];
    current.total = data[3] & 1;
    current.retry_after = data[3] & 2;
    current.body.assign(reinterpret_cast<const char*>(data + 4), size - 4);
  }
  std::ostringstream out, err;
  endpoint server_at;  // by name: a positional list silently shifted when the struct grew
  server_at.port = port;
  server_at.token = "admin.token";
  server_at.operator_name = "fuzz";
  context c{server_at, (data[1] & 1) != 0, out, err};
  const std::string id = "3f2c1b9e-5a4d-4c3b-9a8f-7e6d5c4b3a21";
  submit_options so;
  so.path = "/data/bundle";
  so.title = "t";
  // The CLI's main runs every command through guarded(): a reply of an unknown
  // shape is a message and exit 1. What the fuzzer looks for is everything else
  // (crashes, UB, leaks).
  guarded(c, [&]() -> int {
    switch (data[0] % 21) {
      case 0:
        submit(c, so);
        break;
      case 1:
        jobs_list(c, {}, 10);
        break;
      case 2:
        jobs_show(c, id);
        break;
      case 3:
        jobs_history(c, id);
        break;
      case 4:
        jobs_cancel(c, id, false);
        break;
      case 5:
        jobs_requeue(c, id);
        break;
      case 6:
        jobs_prune(c, {"completed"}, 7);
        break;
      case 7:
        workers_list(c, {});
        break;
      case 8:
        clusters_list(c);
        break;
      case 9:
        clusters_set(c, "alpha", false, "maintenance");
        break;
      case 10:
        jobs_hold(c, id, true);
        break;
      case 11:
        jobs_why(c, id);
        break;
      case 12:
        priority(c, "");
        break;
      case 13:
        priority(c, id);
        break;
      case 14:
        fairshare(c);
        break;
      case 15:
        operators_add(c, "alice", "user", {"chem"});
        break;
      case 16:
        operators_list(c);
        break;
      case 17:
        operators_revoke(c, "alice");
        break;
      case 18:
        jobs_export_csv(c, "");
        break;
      case 19:
        operators_rotate(c, "alice", 60);
        break;
      case 20:
        pilot_token_rotate(c, 60);
        break;
    }
    return 0;
  });
  return 0;
}
