// The Beast server (http/beast_server.hpp) over real loopback sockets, spoken to byte by byte
// where it matters: keep-alive, pipelining, split requests, async replies from another thread,
// malformed input, limits (read deadline, connections, buffered bytes, reply deadline),
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

#include <boost/beast/http/write.hpp>

#include <sstream>

#include "http/beast_message.hpp"
#include "http/beast_server.hpp"
#include "http/event_stream.hpp"
#include "support/loopback_socket.hpp"
#include "support/raw_client.hpp"
#include "support/wait_until.hpp"

namespace {

using baton::test::wait_until;
// How long a test waits for something the server does, and how often it looks (its
// latencies are milliseconds).
constexpr std::chrono::milliseconds within_5s{5000}, every_5ms{5};

using baton::http::beast_server;
using baton::http::beast_server_options;
using steady = std::chrono::steady_clock;
using baton::http::respond_fn;
using nlohmann::json;

using baton::test::raw_client;

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n";
}

struct served {
  explicit served(beast_server_options o = {}) : server(std::move(o)) {
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
      ++started_late;
      std::thread([respond, ms, this] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        baton::http::response res;
        res.set_content("late " + std::to_string(ms), "text/plain");
        respond(std::move(res));
        ++answered_late;
      }).detach();
    });
    r.async("GET", "/held", [this](const baton::http::request&, respond_fn respond) { held.set_value(std::move(respond)); });
    r.async("GET", "/stream", [this](const baton::http::request&, respond_fn respond) {
      baton::http::response res;
      res.status = 200;
      res.content_type = "text/event-stream";
      res.stream = std::make_shared<baton::http::event_stream>();
      stream.set_value(res.stream);
      respond(std::move(res));
    });
    port = server.start();
  }
  beast_server server;
  int port = 0;
  std::atomic<int> started_late{0};
  std::atomic<int> answered_late{0};
  std::promise<respond_fn> held;
  std::promise<std::shared_ptr<baton::http::event_stream>> stream;
};

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnection) {
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

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  served s;
  raw_client c(s.port);
  // Three requests in one write, the slow async one in the middle: the quick one behind it
  // must wait its turn, not overtake.
  c.send(get("/hello?name=first") + get("/later?ms=200") + get("/hello?name=third"));
  EXPECT_EQ(c.next().body, "hello first");
  EXPECT_EQ(c.next().body, "late 200");
  EXPECT_EQ(c.next().body, "hello third");
}

TEST(HttpServer, RequestArrivingByteByByteIsParsed) {
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

TEST(HttpServer, AsyncReplyDoesNotHoldUpOtherConnections) {
  served s;
  raw_client slow(s.port), quick(s.port);
  slow.send(get("/later?ms=3000"));
  auto t0 = std::chrono::steady_clock::now();
  quick.send(get("/hello?name=q"));
  EXPECT_EQ(quick.next().body, "hello q");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2000))
      << "the quick request waited for the slow one";
  EXPECT_EQ(slow.next().body, "late 3000");
}

TEST(HttpServer, UnknownRouteAndHandlerExceptionAnswerJson) {
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

TEST(HttpServer, MalformedRequestsGetJsonErrorsAndTheConnectionCloses) {
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
      {"GET / HTTP/1.1\r\nExpect: magic\r\n\r\n", 417},
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
      EXPECT_TRUE(body.contains("detail")) << r.body;
    }
    EXPECT_TRUE(c.closed_by_server()) << bad.bytes.substr(0, 60);
  }
  raw_client ok(s.port);  // and the server is fine
  ok.send(get("/hello?name=ok"));
  EXPECT_EQ(ok.next().body, "hello ok");
}

TEST(HttpServer, ConnectionCloseAndHttp10AreHonoured) {
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
  {
    raw_client c(s.port);  // HTTP/1.0 asking for keep-alive gets it, said explicitly
    c.send("GET /hello?name=c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto r = c.next();
    EXPECT_EQ(r.body, "hello c");
    EXPECT_NE(r.head.find("Connection: keep-alive"), std::string::npos) << r.head;
    c.send("GET /hello?name=d HTTP/1.0\r\n\r\n");
    EXPECT_EQ(c.next().body, "hello d");
    EXPECT_TRUE(c.closed_by_server());
  }
}

TEST(HttpServer, ExpectContinueGetsAnInterimResponse) {
  served s;
  raw_client c(s.port);
  c.send("POST /echo/x HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  auto interim = c.next();
  EXPECT_EQ(interim.status, 100);
  c.send("abc");
  EXPECT_EQ(c.next().body, "x:abc");
}

TEST(HttpServer, IdleAndStalledConnectionsAreClosed) {
  beast_server_options o;
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

TEST(HttpServer, StopDeliversRepliesAlreadyInFlight) {
  auto s = std::make_unique<served>();
  raw_client c(s->port);
  c.send(get("/later?ms=300"));
  ASSERT_TRUE(wait_until([&] { return s->started_late > 0; }, within_5s, every_5ms)) << "the request never reached its handler";
  s->server.stop();
  auto r = c.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "late 300");
  EXPECT_TRUE(c.closed_by_server());
}

TEST(HttpServer, ReplyAfterTheServerIsGoneIsDropped) {
  respond_fn late;
  int port;
  {
    beast_server_options o;
    o.stop_grace_seconds = 1;
    served s(o);
    port = s.port;
    raw_client c(port);
    c.send(get("/held"));
    auto f = s.held.get_future();
    ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    late = f.get();
    s.server.stop();  // waits up to the grace period for the held reply, then closes
  }
  baton::http::response res;
  res.set_content("too late", "text/plain");
  late(std::move(res));  // must not touch the destroyed server
  SUCCEED();
}

TEST(HttpServer, ManyConcurrentKeepAliveClients) {
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

TEST(HttpServer, KeepAliveMaxClosesAfterThatManyRequests) {
  beast_server_options o;
  o.max_requests_per_connection = 2;
  served s(o);
  raw_client c(s.port);
  c.send(get("/hello?name=1"));
  auto r = c.next();
  EXPECT_EQ(r.body, "hello 1");
  EXPECT_EQ(r.head.find("Connection: close"), std::string::npos);
  c.send(get("/hello?name=2"));
  r = c.next();
  EXPECT_EQ(r.body, "hello 2");
  EXPECT_NE(r.head.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(c.closed_by_server());
}

// Sends one byte a second from a thread until told to stop or the server closes.
struct trickler {
  trickler(int fd, std::string bytes)
      : thread([this, fd, bytes] {
          for (char ch : bytes) {
            if (::send(fd, &ch, 1, MSG_NOSIGNAL) != 1) return;
            for (int i = 0; i < 100 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (stop) return;
          }
        }) {}
  ~trickler() {
    stop = true;
    thread.join();
  }
  std::atomic<bool> stop{false};
  std::thread thread;
};

TEST(HttpServer, TricklingClientIsClosedAtTheReadDeadlineThoughBytesKeepComing) {
  beast_server_options o;
  o.read_timeout_seconds = 2;
  served s(o);
  int fd = baton::test::connect_loopback(s.port, 30);
  ASSERT_GE(fd, 0);
  std::string request = "POST /echo/a HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n" + std::string(20, 'b');
  auto t0 = steady::now();
  trickler t(fd, request);  // about 70 s of bytes
  char buf[256];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
  }
  auto waited = steady::now() - t0;
  bool closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  EXPECT_TRUE(closed) << "the receive timed out instead";
  EXPECT_GE(waited, std::chrono::seconds(2));
  EXPECT_LT(waited, std::chrono::seconds(15)) << "closed only as the bytes ran out";
  ::close(fd);
}

TEST(HttpServer, ConnectionsBeyondTheCapGet503AndAFreedSlotIsReused) {
  beast_server_options o;
  o.max_connections = 3;
  served s(o);
  std::vector<std::unique_ptr<raw_client>> admitted;
  for (int i = 0; i < 3; ++i) {
    admitted.push_back(std::make_unique<raw_client>(s.port));
    admitted.back()->send(get("/hello?name=" + std::to_string(i)));
    ASSERT_EQ(admitted.back()->next().status, 200);
  }
  {
    raw_client fourth(s.port);
    auto r = fourth.next();
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(json::parse(r.body)["error"], "too_many_connections");
    EXPECT_TRUE(fourth.closed_by_server());
  }
  admitted.front().reset();  // frees a slot once the server sees the close
  EXPECT_TRUE(wait_until(
      [&] {
        raw_client c(s.port);
        c.send(get("/hello?name=again"));
        return c.next().body == "hello again";
      },
      within_5s, every_5ms));
  admitted[1]->send(get("/hello?name=still"));  // the others were never disturbed
  EXPECT_EQ(admitted[1]->next().body, "hello still");
}

TEST(HttpServer, GlobalCapOnBufferedRequestBytes) {
  beast_server_options o;
  o.max_buffered_request_bytes = 100000;
  served s(o);
  // A's head announces 80 kB; the 100 Continue shows the server has counted them.
  raw_client a(s.port);
  a.send("POST /echo/a HTTP/1.1\r\nContent-Length: 80000\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_EQ(a.next().status, 100);
  raw_client small(s.port);  // what still fits is served
  small.send(get("/hello?name=small"));
  EXPECT_EQ(small.next().body, "hello small");
  {
    raw_client b(s.port);  // 30 kB more would exceed the cap
    b.send("POST /echo/b HTTP/1.1\r\nContent-Length: 30000\r\n\r\n");
    auto r = b.next();
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(json::parse(r.body)["error"], "request_memory_exhausted");
    EXPECT_TRUE(b.closed_by_server());
  }
  a.send(std::string(80000, 'x'));
  auto r = a.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.size(), 80002u);
  raw_client b2(s.port);  // A's bytes were given back once it was answered
  b2.send("POST /echo/b HTTP/1.1\r\nContent-Length: 30000\r\n\r\n" + std::string(30000, 'y'));
  EXPECT_EQ(b2.next().status, 200);
}

TEST(HttpServer, AsyncReplyPastItsDeadlineIs503AndTheConnectionGoesOn) {
  beast_server_options o;
  o.async_reply_deadline_ms = 300;
  served s(o);
  raw_client c(s.port);
  auto t0 = steady::now();
  c.send(get("/held") + get("/hello?name=next"));
  auto r = c.next();
  EXPECT_EQ(r.status, 503);
  EXPECT_GE(steady::now() - t0, std::chrono::milliseconds(300));
  EXPECT_EQ(json::parse(r.body)["error"], "not_durable_yet");
  EXPECT_NE(r.head.find("Retry-After: "), std::string::npos) << r.head;
  EXPECT_EQ(r.head.find("Connection: close"), std::string::npos);
  EXPECT_EQ(c.next().body, "hello next");  // the pipelined request behind it, in order
  auto f = s.held.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  baton::http::response late;
  late.set_content("too late", "text/plain");
  f.get()(std::move(late));  // dropped: its request was already answered
  c.send(get("/hello?name=after"));
  EXPECT_EQ(c.next().body, "hello after");
}

TEST(HttpServer, AnEventStreamIsWrittenAtMostOncePerIntervalWithAllThatCameMeanwhile) {
  beast_server_options o;
  o.stream_write_interval_ms = 600;
  served s(o);
  auto made = s.stream.get_future();
  std::shared_ptr<baton::http::event_stream> stream;
  {
    raw_client c(s.port);
    ASSERT_TRUE(c.connected());
    const auto t0 = steady::now();
    c.send(get("/stream"));
    ASSERT_EQ(made.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    stream = made.get();
    ASSERT_TRUE(c.read_until("\r\n\r\n")) << c.received();  // the head: the first write
    EXPECT_NE(c.received().find("text/event-stream"), std::string::npos) << c.received();
    ASSERT_TRUE(stream->push("data: a\n\n"));
    ASSERT_TRUE(stream->push("data: b\n\n"));
    ASSERT_TRUE(c.read_until("data: b\n\n")) << c.received();
    EXPECT_GE(steady::now() - t0, std::chrono::milliseconds(600)) << "the write after the head waited for the interval";
    EXPECT_LT(c.received().find("data: a"), c.received().find("data: b"));
  }  // the client leaves while nothing is pending: the stream closes, its timer with it
  EXPECT_TRUE(wait_until([&] { return !stream->push("data: c\n\n"); }, within_5s, every_5ms));
}

TEST(ClientGroup, PerAddressLimitsCountIpv4ByAddressAndIpv6ByItsSlash64) {
  using baton::http::client_group;
  EXPECT_EQ(client_group("10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(client_group("::ffff:10.1.2.3"), "10.1.2.3") << "IPv4 on a dual-stack socket";
  EXPECT_EQ(client_group("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
  EXPECT_EQ(client_group("2001:db8:1:2::1"), client_group("2001:db8:1:2:ffff::9")) << "one host's /64";
  EXPECT_NE(client_group("2001:db8:1:2::1"), client_group("2001:db8:1:3::1"));
  EXPECT_EQ(client_group(""), "");
}

TEST(BeastMessage, RequestIsDecodedWithHeadersAsSent) {
  baton::http::beast_request in{boost::beast::http::verb::get, "/a%2Fb?x=1&x=2&y=%20", 11};
  in.insert("host", "x");
  auto req = baton::http::from_beast(std::move(in), "127.0.0.1");
  EXPECT_EQ(req.path, "/a/b");
  EXPECT_EQ(req.get_param_value_count("x"), 2u);
  EXPECT_EQ(req.get_param_value("y"), " ");
  EXPECT_EQ(req.get_header_value("Host"), "x");  // names case-insensitive
  EXPECT_EQ(req.remote_addr, "127.0.0.1");
}

std::string wire(baton::http::beast_response res) {
  std::ostringstream out;
  out << res;
  return out.str();
}

TEST(BeastMessage, ResponseComputesLengthAndLeavesBodyOffNoContent) {
  baton::http::response res;
  res.status = 204;
  res.set_header("Content-Length", "999");  // a stale header is replaced, not repeated
  res.body = "ignored";
  auto out = wire(baton::http::to_beast(baton::http::response(res)));
  EXPECT_EQ(out, "HTTP/1.1 204 No Content\r\n\r\n");
  res.status = 422;
  res.body = "{}";
  auto beast = baton::http::to_beast(std::move(res));
  beast.keep_alive(false);
  out = wire(std::move(beast));
  EXPECT_NE(out.find("HTTP/1.1 422 Unprocessable Entity\r\n"), std::string::npos);
  EXPECT_NE(out.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_EQ(out.find("999"), std::string::npos);
  EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 6), "\r\n\r\n{}");
}

}  // namespace
