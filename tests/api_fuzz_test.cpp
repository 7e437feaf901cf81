// Bad input loses nothing and crashes nothing: a seeded stream of random requests (random
// JSON and raw bytes as bodies, odd ids and query values, wrong credentials) against every
// route of a real batond. Every answer must be a 2xx/4xx with a JSON body (or empty), the
// daemon must stay up, keep serving valid requests, and stop cleanly.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "support/batond_process.hpp"
#include "support/loopback_socket.hpp"

using namespace baton::test;
using nlohmann::json;

namespace {

// clang-format off
const std::vector<std::string> keys = {
    "title", "input_bundle_path", "worker_image_key", "preferred_clusters", "comment", "id", "max_attempts", "platform",
    "gpu_model", "gpu_count", "vram_gb", "provider_id", "slurm_job_id", "job_id", "progress", "progress_codes",
    "checkpoint_manifest_path", "checkpoint_path", "reason", "detail", "failure_artifact_path", "enabled", "lab",
    "deadline_epoch_seconds", "message", "checkpoint_cycle_status", "checkpoint_cycle_failures", "force"};
// clang-format on

struct fuzzer {
  std::mt19937_64 rng{20261123};
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

  std::string text() {
    static const std::vector<std::string> pieces = {"a", "b",    "'", "\"", "\\", "$", "`", ";",           "\n",
                                                    " ", "\x01", "/", ".",  "%",  "-", "_", "\xe2\x98\x83"};  // the last: U+2603
    std::string s;
    for (size_t i = pick(24); i > 0; --i) s += pieces[pick(pieces.size())];
    return s;
  }
  json value(int depth = 0) {
    switch (pick(depth < 3 ? 13 : 11)) {
      case 0:
        return nullptr;
      case 1:
        return true;
      case 2:
        return false;
      case 3:
        return static_cast<int64_t>(rng());
      case 4:
        return std::uniform_real_distribution<double>(-1e300, 1e300)(rng);
      case 5:
        return text();
      case 6:
        return -0.0;
      case 7:
        return "default";
      case 8:
        return "lab";
      case 9:
        return std::string(pick(2) ? 3000 : 3, 'x');
      case 10:
        return static_cast<int>(pick(7)) - 3;
      case 11: {
        json o = json::object();
        for (size_t i = pick(5); i > 0; --i) o[keys[pick(keys.size())]] = value(depth + 1);
        return o;
      }
      default: {
        json a = json::array();
        for (size_t i = pick(4); i > 0; --i) a.push_back(value(depth + 1));
        return a;
      }
    }
  }
};

}  // namespace

TEST(ApiFuzz, RandomRequestsGetClearAnswersAndTheDaemonCarriesOn) {
  temp_dir dir;
  batond_process d(dir,
                   "provisioning: {interval_seconds: 3600}\n"
                   "clusters:\n  - {name: lab, partition: no-such-partition, worker_images: {default: {}}}\n"
                   "workers: {heartbeat_interval_seconds: 1, reaper_interval_seconds: 1, accept_shared_token: true}\n"
                   // thousands of operator requests in a second: the request budget is not what is tested here
                   "limits: {operator_requests_per_second: 0}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  auto c = d.client();
  fuzzer f;
  std::vector<std::string> ids = {"x", "lab", "..", "%2e%2e", "a%2Fb", "%00", std::string(300, 'a'), "%E2%98%83"};
  const std::vector<std::pair<std::string, std::string>> routes = {{"POST", "/workers/register"},
                                                                   {"POST", "/workers/{id}/heartbeat"},
                                                                   {"POST", "/workers/{id}/deregister"},
                                                                   {"GET", "/workers?state={q}&limit={n}"},
                                                                   {"POST", "/jobs/request?worker_id={id}"},
                                                                   {"GET", "/jobs/{id}/control"},
                                                                   {"POST", "/jobs/{id}/start"},
                                                                   {"POST", "/jobs/{id}/checkpoint"},
                                                                   {"POST", "/jobs/{id}/handoff/start"},
                                                                   {"POST", "/jobs/{id}/handoff/complete"},
                                                                   {"POST", "/jobs/{id}/complete"},
                                                                   {"POST", "/jobs/{id}/fail"},
                                                                   {"POST", "/jobs"},
                                                                   {"GET", "/jobs?status={q}&limit={n}&offset={n}"},
                                                                   {"GET", "/jobs/{id}"},
                                                                   {"DELETE", "/jobs/{id}?force={q}"},
                                                                   {"POST", "/jobs/{id}/requeue"},
                                                                   {"GET", "/jobs/{id}/history"},
                                                                   {"DELETE", "/jobs?status={q}&older_than_days={n}"},
                                                                   {"GET", "/clusters"},
                                                                   {"GET", "/config/slurm-clusters"},
                                                                   {"PUT", "/config/slurm-clusters/enabled"},
                                                                   {"GET", "/config/worker-images"},
                                                                   {"POST", "/clusters/{id}/enable"},
                                                                   {"POST", "/clusters/{id}/disable"},
                                                                   {"GET", "/cloud/salad"},
                                                                   {"GET", "/healthz"}};
  std::map<int, int> statuses;
  for (int i = 0; i < 20000; ++i) {
    auto [method, path] = routes[f.pick(routes.size())];
    for (std::string hole : {"{id}", "{q}", "{n}"})
      for (size_t at; (at = path.find(hole)) != std::string::npos;)
        path.replace(at, hole.size(),
                     hole == "{n}"   ? std::vector<std::string>{"-1", "0", "1", "99999999999999", "x"}[f.pick(5)]
                     : hole == "{q}" ? std::vector<std::string>{"queued", "running", "gone", "idle", "x", "true", ""}[f.pick(7)]
                                     : ids[f.pick(ids.size())]);
    std::string body;
    if (f.chance(0.1)) {
      for (size_t k = f.pick(40); k > 0; --k) body += static_cast<char>(f.pick(256));
    } else if (method == "POST" && path == "/jobs" && f.chance(0.4)) {
      body = json{{"title", "t"}, {"input_bundle_path", "/b"}}.dump();
    } else if (method == "POST" && path == "/workers/register" && f.chance(0.4)) {
      body = json{{"platform", f.chance(0.5) ? "hpc" : "salad"}, {"gpu_count", 1}}.dump();
    } else {
      body = f.value().dump();
    }
    httplib::Headers h;
    if (f.chance(0.1)) h = {{"X-Worker-Token", ids[f.pick(ids.size())] + ".secret"}};
    httplib::Result r = method == "GET"    ? c->Get(path.c_str(), h)
                        : method == "POST" ? c->Post(path.c_str(), h, body, "application/json")
                        : method == "PUT"  ? c->Put(path.c_str(), h, body, "application/json")
                                           : c->Delete(path.c_str(), h, body, "application/json");
    ASSERT_TRUE(r) << "no answer to " << method << " " << path << "\n" << d.err();
    ++statuses[r->status];
    EXPECT_LT(r->status, 500) << method << " " << path << " " << body << " -> " << r->body;
    if (!r->body.empty()) {
      EXPECT_FALSE(json::parse(r->body, nullptr, false).is_discarded()) << method << " " << path;
    }
    if (r->status == 200 && method == "POST" && (path == "/jobs" || path == "/workers/register")) {
      auto j = json::parse(r->body);
      ids.push_back(j.value(path == "/jobs" ? "id" : "worker_id", "x"));
    }
  }
  for (const auto& [status, n] : statuses) std::printf("HTTP %d: %d\n", status, n);
  EXPECT_GT(statuses[200], 2000) << "the stream must also reach the valid paths";
  EXPECT_GT(statuses[422], 2000);
  // Still serving, and it stops cleanly.
  auto created = c->Post("/jobs", json{{"title", "after"}, {"input_bundle_path", "/b"}}.dump(), "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 200);
  EXPECT_EQ(d.stop(), 0) << d.err();
}

namespace {

// Sends raw bytes on a fresh connection, half-closes, and reads until the server closes.
// Returns the status codes of the responses found; nullopt if the server never closed.
std::optional<std::vector<int>> exchange(int port, const std::string& bytes) {
  int fd = connect_loopback(port, 10);
  std::string in;
  bool closed = false;
  if (fd < 0) {
    ADD_FAILURE() << "cannot connect: " << std::strerror(errno);
  } else {
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    char buf[8192];
    for (;;) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        in.append(buf, static_cast<size_t>(n));
        continue;
      }
      closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);  // only a timeout means it hung
      if (!closed) std::fprintf(stderr, "recv: n=%zd errno=%d after %zu bytes\n", n, errno, in.size());
      break;
    }
  }
  if (fd >= 0) ::close(fd);
  if (!closed) return std::nullopt;
  // Walk the responses by their Content-Length; anything unparseable counts as status 0.
  std::vector<int> statuses;
  size_t at = 0;
  while (at < in.size()) {
    auto end = in.find("\r\n\r\n", at);
    if (in.compare(at, 9, "HTTP/1.1 ") != 0 || end == std::string::npos) {
      statuses.push_back(0);
      break;
    }
    statuses.push_back(std::atoi(in.c_str() + at + 9));
    auto head = in.substr(at, end - at);
    auto cl = head.find("Content-Length: ");
    at = end + 4 + (cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16)));
  }
  return statuses;
}

}  // namespace

// The same promise one layer down: mutated HTTP on the wire (flipped bytes, truncations,
// stray CRLFs, odd lengths, several requests in one write). The server answers what it can
// parse with a 2xx/4xx, closes what it cannot, never hangs a connection, and carries on.
TEST(ApiFuzz, MangledHttpOnTheWireNeverTakesTheDaemonDown) {
  temp_dir dir;
  batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  fuzzer f;
  const std::vector<std::string> seeds = {
      "POST /jobs/request?worker_id=w1 HTTP/1.1\r\nHost: x\r\nX-API-Token: t\r\nContent-Length: 0\r\n\r\n",
      "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\r\n"
      "{\"title\":\"t\",\"input_bundle_path\":\"/b\"}",
      "GET /jobs?limit=5&status=queued HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
      "PUT /config/slurm-clusters/enabled HTTP/1.1\r\nContent-Length: 13\r\nExpect: 100-continue\r\n\r\n{\"enabled\":{}}",
  };
  const std::vector<std::string> inserts = {"\r\n",
                                            "\r\n\r\n",
                                            " ",
                                            ":",
                                            "\0",
                                            "%",
                                            "Content-Length: 5\r\n",
                                            "Transfer-Encoding: chunked\r\n",
                                            "Content-Length: -1\r\n",
                                            "Connection: close\r\n",
                                            "\xff\xfe",
                                            "HTTP/1.1",
                                            "?a=%zz&&=",
                                            std::string(300, 'A')};
  std::map<int, int> statuses;
  int cases = 3000;
  for (int i = 0; i < cases; ++i) {
    std::string bytes;
    for (size_t n = 1 + f.pick(3); n > 0; --n) bytes += seeds[f.pick(seeds.size())];  // pipelined
    for (size_t m = f.pick(4); m > 0; --m) {
      size_t at = f.pick(bytes.size() + 1);
      switch (f.pick(4)) {
        case 0:
          if (at < bytes.size()) bytes[at] = static_cast<char>(f.pick(256));
          break;
        case 1:
          bytes.insert(at, inserts[f.pick(inserts.size())]);
          break;
        case 2:
          bytes.erase(at, f.pick(8));
          break;
        default:
          bytes.resize(at);
          break;
      }
    }
    auto answer = exchange(d.port(), bytes);
    ASSERT_TRUE(answer) << "the server left a connection hanging after:\n" << bytes << "\nbatond:\n" << d.err();
    for (int status : *answer) {
      ++statuses[status];
      EXPECT_TRUE(status >= 100 && status < 500) << status << " for:\n" << bytes;
    }
  }
  for (const auto& [status, n] : statuses) std::printf("HTTP %d: %d\n", status, n);
  EXPECT_GT(statuses[400], 100) << "the mutations must reach the parser's error paths";
  EXPECT_GT(statuses[401] + statuses[200], 100) << "and some requests must survive them";
  auto c = d.client();
  auto created = c->Post("/jobs", json{{"title", "after"}, {"input_bundle_path", "/b"}}.dump(), "application/json");
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 200);
  EXPECT_EQ(d.stop(), 0) << d.err();
}
