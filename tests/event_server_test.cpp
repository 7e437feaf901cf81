// event_server over real loopback sockets, spoken to byte by byte where it matters: keep-alive,
// pipelining, split requests, async replies from another thread, malformed input, limits,
// 100-continue, timeouts and a stop with a reply still in flight.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "http/event_server.hpp"
#include "http/http_wire.hpp"
#include "support/loopback_socket.hpp"

namespace {

using baton::http::event_server;
using baton::http::event_server_options;
using baton::http::respond_fn;
using nlohmann::json;

// A raw client: sends bytes, reads responses by Content-Length.
class raw_client {
 public:
  explicit raw_client(int port) : fd_(baton::test::connect_loopback(port, 5)), connected_(fd_ >= 0) {}
  ~raw_client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  void send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size())); }

  struct response {
    int status = 0;
    std::string head;
    std::string body;
  };
  // The next response; status 0 if the connection closed or timed out first.
  response next() {
    response r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return r;
    r.head = buf_.substr(0, end);
    r.status = std::stoi(r.head.substr(9, 3));
    size_t length = 0;
    auto cl = r.head.find("Content-Length: ");
    if (cl != std::string::npos) length = std::stoul(r.head.substr(cl + 16));
    while (buf_.size() < end + 4 + length)
      if (!fill()) return response{};
    r.body = buf_.substr(end + 4, length);
    buf_.erase(0, end + 4 + length);
    return r;
  }
  // True when the server closed the connection (EOF) within the receive timeout.
  bool closed_by_server() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  bool fill() {
    char tmp[4096];
    ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n";
}

struct served {
  explicit served(event_server_options o = {}) : server(std::move(o)) {
    auto& r = server.routes();
    r.set_error_handler([](const baton::http::request& req, baton::http::response& res) {
      res.set_content(json{{"error", res.status == 404 ? "not_found" : "http_error"}, {"path", req.path}}.dump(),
                      "application/json");
    });
    r.set_exception_handler([](const baton::http::request&, baton::http::response& res, std::exception_ptr) {
      res.status = 500;
      res.set_content(R"({"error":"internal_error"})", "application/json");
    });
    r.Get("/hello", [](const baton::http::request& req, baton::http::response& res) {
      res.set_content("hello " + req.get_param_value("name"), "text/plain");
    });
    r.Post(R"(/echo/([^/]+))", [](const baton::http::request& req, baton::http::response& res) {
      res.set_content(req.path_params[0] + ":" + req.body, "text/plain");
    });
    r.Get("/throws", [](const baton::http::request&, baton::http::response&) { throw std::runtime_error("boom"); });
    r.async("GET", "/later", [this](const baton::http::request& req, respond_fn respond) {
      int ms = std::stoi(req.get_param_value("ms"));
      std::thread([respond, ms, this] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        baton::http::response res;
        res.set_content("late " + std::to_string(ms), "text/plain");
        respond(std::move(res));
        ++answered_late;
      }).detach();
    });
    r.async("GET", "/held", [this](const baton::http::request&, respond_fn respond) { held.set_value(std::move(respond)); });
    port = server.start();
  }
  event_server server;
  int port = 0;
  std::atomic<int> answered_late{0};
  std::promise<respond_fn> held;
};

TEST(EventServer, KeepAliveServesSeveralRequestsOnOneConnection) {
  served s;
  raw_client c(s.port);
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    c.send(get("/hello?name=n" + std::to_string(i)));
    auto r = c.next();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "hello n" + std::to_string(i));
    EXPECT_EQ(r.head.find("Connection: close"), std::string::npos);
  }
}

TEST(EventServer, PipelinedRequestsAreAnsweredInOrder) {
  served s;
  raw_client c(s.port);
  // The slow async one first: the quick one behind it must wait its turn, not overtake.
  c.send(get("/later?ms=100") + get("/hello?name=second"));
  EXPECT_EQ(c.next().body, "late 100");
  EXPECT_EQ(c.next().body, "hello second");
}

TEST(EventServer, RequestArrivingByteByByteIsParsed) {
  served s;
  raw_client c(s.port);
  std::string req = "POST /echo/abc%20d HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
  for (char ch : req) {
    c.send(std::string(1, ch));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto r = c.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "abc d:hello");  // path percent-decoded before matching
}

TEST(EventServer, AsyncReplyDoesNotHoldUpOtherConnections) {
  served s;
  raw_client slow(s.port), quick(s.port);
  slow.send(get("/later?ms=500"));
  auto t0 = std::chrono::steady_clock::now();
  quick.send(get("/hello?name=q"));
  EXPECT_EQ(quick.next().body, "hello q");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(400)) << "the quick request waited for the slow one";
  EXPECT_EQ(slow.next().body, "late 500");
}

TEST(EventServer, UnknownRouteAndHandlerExceptionAnswerJson) {
  served s;
  raw_client c(s.port);
  c.send(get("/nowhere"));
  auto r = c.next();
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(json::parse(r.body)["error"], "not_found");
  c.send(get("/throws"));
  r = c.next();
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(json::parse(r.body)["error"], "internal_error");
  c.send(get("/hello?name=still"));  // the connection survives both
  EXPECT_EQ(c.next().body, "hello still");
}

TEST(EventServer, MalformedRequestsGetJsonErrorsAndTheConnectionCloses) {
  served s;
  struct bad_case {
    std::string bytes;
    int status;
  };
  std::vector<bad_case> cases = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET noslash HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 400},
      {"POST /echo/a HTTP/1.1\r\nContent-Length: x1\r\n\r\n", 400},
      {"POST /echo/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400},
      {"POST /echo/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
      {"POST /echo/a HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nNo-Colon-Here\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: " + std::string(70000, 'a') + "\r\n\r\n", 431},
  };
  for (const auto& bad : cases) {
    raw_client c(s.port);
    c.send(bad.bytes);
    auto r = c.next();
    EXPECT_EQ(r.status, bad.status) << bad.bytes.substr(0, 60);
    if (r.status) {
      auto body = json::parse(r.body);
      EXPECT_TRUE(body.contains("error")) << r.body;
      EXPECT_TRUE(body.contains("message")) << r.body;
    }
    EXPECT_TRUE(c.closed_by_server()) << bad.bytes.substr(0, 60);
  }
  raw_client ok(s.port);  // and the server is fine
  ok.send(get("/hello?name=ok"));
  EXPECT_EQ(ok.next().body, "hello ok");
}

TEST(EventServer, ConnectionCloseAndHttp10AreHonoured) {
  served s;
  {
    raw_client c(s.port);
    c.send(get("/hello?name=a", "Connection: close\r\n"));
    auto r = c.next();
    EXPECT_EQ(r.status, 200);
    EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    raw_client c(s.port);
    c.send("GET /hello?name=b HTTP/1.0\r\n\r\n");
    EXPECT_EQ(c.next().body, "hello b");
    EXPECT_TRUE(c.closed_by_server());
  }
}

TEST(EventServer, ExpectContinueGetsAnInterimResponse) {
  served s;
  raw_client c(s.port);
  c.send("POST /echo/x HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  auto interim = c.next();
  EXPECT_EQ(interim.status, 100);
  c.send("abc");
  EXPECT_EQ(c.next().body, "x:abc");
}

TEST(EventServer, IdleAndStalledConnectionsAreClosed) {
  event_server_options o;
  o.idle_timeout_seconds = 1;
  o.read_timeout_seconds = 1;
  served s(o);
  raw_client idle(s.port), stalled(s.port);
  idle.send(get("/hello?name=i"));
  EXPECT_EQ(idle.next().body, "hello i");
  stalled.send("GET /hello HTTP/1.1\r\nHost:");  // never finishes
  EXPECT_TRUE(idle.closed_by_server());          // within the 5 s receive timeout
  EXPECT_TRUE(stalled.closed_by_server());
}

TEST(EventServer, StopDeliversRepliesAlreadyInFlight) {
  auto s = std::make_unique<served>();
  raw_client c(s->port);
  c.send(get("/later?ms=300"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the request has reached the handler
  s->server.stop();
  auto r = c.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "late 300");
  EXPECT_TRUE(c.closed_by_server());
}

TEST(EventServer, ReplyAfterTheServerIsGoneIsDropped) {
  respond_fn late;
  int port;
  {
    served s;
    port = s.port;
    raw_client c(port);
    c.send(get("/held"));
    auto f = s.held.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    late = f.get();
    s.server.stop();  // waits up to 5 s for the held reply, then closes
  }
  baton::http::response res;
  res.set_content("too late", "text/plain");
  late(std::move(res));  // must not touch the destroyed server
  SUCCEED();
}

TEST(EventServer, ManyConcurrentKeepAliveClients) {
  served s;
  std::vector<std::future<int>> clients;
  for (int t = 0; t < 16; ++t)
    clients.push_back(std::async(std::launch::async, [&s, t] {
      raw_client c(s.port);
      int ok = 0;
      for (int i = 0; i < 200; ++i) {
        std::string name = std::to_string(t) + "-" + std::to_string(i);
        c.send(get(i % 2 ? "/hello?name=" + name : "/later?ms=0"));
        auto r = c.next();
        if (r.status == 200 && r.body == (i % 2 ? "hello " + name : "late 0")) ++ok;
      }
      return ok;
    }));
  for (auto& f : clients) EXPECT_EQ(f.get(), 200);
}

TEST(HttpWire, HeadIsIncompleteUntilTheBlankLine) {
  using namespace baton::http::wire;
  EXPECT_EQ(parse_head("GET / HTTP/1.1\r\nHost: x\r\n", 1024, 1024).state, head_state::incomplete);
  auto h = parse_head("GET /a%2Fb?x=1&x=2&y=%20 HTTP/1.1\r\nhost:  x \r\n\r\n", 1024, 1024);
  ASSERT_EQ(h.state, head_state::complete);
  EXPECT_EQ(h.req.path, "/a/b");
  EXPECT_EQ(h.req.get_param_value_count("x"), 2u);
  EXPECT_EQ(h.req.get_param_value("y"), " ");
  EXPECT_EQ(h.req.get_header_value("Host"), "x");  // names case-insensitive, value trimmed
  EXPECT_TRUE(h.keep_alive);
}

TEST(HttpWire, SerializeComputesLengthAndLeavesBodyOffNoContent) {
  using namespace baton::http::wire;
  baton::http::response res;
  res.status = 204;
  res.set_header("Content-Length", "999");  // a stale header is replaced, not repeated
  auto out = serialize(res, true);
  EXPECT_EQ(out, "HTTP/1.1 204 No Content\r\n\r\n");
  res.status = 422;
  res.body = "{}";
  out = serialize(res, false);
  EXPECT_NE(out.find("HTTP/1.1 422 Unprocessable Entity\r\n"), std::string::npos);
  EXPECT_NE(out.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 6), "\r\n\r\n{}");
}

}  // namespace
