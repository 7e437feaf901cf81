// The attacks of an outside review on batond's HTTP server, each replayed against a real
// batond over loopback: callers without a credential announcing large bodies (the request
// budget), asking for 100 Continue, or holding connections open; one operator's many event
// streams; floods of dashboard logins, failed and successful; and the headers every answer
// carries. Clients from 127.0.0.2, 127.0.0.3, ... stand for other hosts (per-address limits).
// TLS's side (suites, HSTS, the key file's mode) is in tests/tls_test.cpp.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "support/batond_process.hpp"
#include "support/raw_client.hpp"
#include "support/wait_until.hpp"

using namespace baton;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string admin = std::string("X-API-Token: ") + test::test_token + "\r\n";

// A request head (and body) as it goes on the wire; extra: more header lines, each ending in CRLF.
std::string http(const std::string& method, const std::string& path, const std::string& extra, const std::string& body = "") {
  std::string length = body.empty() ? "" : "Content-Length: " + std::to_string(body.size()) + "\r\n";
  return method + " " + path + " HTTP/1.1\r\nHost: batond\r\n" + extra + length + "\r\n" + body;
}

std::string from(int host) { return "127.0.0." + std::to_string(host); }

json body_of(const test::raw_client::response& r) {
  auto j = json::parse(r.body, nullptr, false);
  return j.is_object() ? j : json::object();
}

struct worker {
  std::string id, token;
};

worker register_worker(const test::batond_process& d) {
  auto r = d.client()->Post("/workers/register", json{{"platform", "hpc"}}.dump(), "application/json");
  if (!r || r->status != 200) return {};
  auto b = json::parse(r->body);
  return {b.value("worker_id", ""), b.value("worker_token", "")};
}

int heartbeat(const test::batond_process& d, const worker& w) {
  httplib::Client c("127.0.0.1", d.port());
  auto r = c.Post(("/workers/" + w.id + "/heartbeat").c_str(), {{"X-Worker-Token", w.token}}, "{}", "application/json");
  return r ? r->status : 0;
}

std::string create_operator(const test::batond_process& d, const std::string& name) {
  auto r = d.client()->Post("/operators", json{{"name", name}, {"role", "user"}, {"accounts", json::array()}}.dump(),
                            "application/json");
  return r && r->status == 200 ? json::parse(r->body).value("token", "") : "";
}

test::raw_client::response login_from(const test::batond_process& d, int host, const std::string& token) {
  test::raw_client c(d.port(), 10, from(host).c_str());
  c.send(http("POST", "/ui/login", "Content-Type: application/json\r\n", json{{"token", token}}.dump()));
  return c.next();
}

}  // namespace

// Finding: the budget was reserved from Content-Length as soon as a head arrived, from anyone.
TEST(http_hardening, ACallerWithoutACredentialMayNotAnnounceALargeBodyNorAskToContinue) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  struct refused {
    std::string why, headers;
  };
  for (const auto& c : std::vector<refused>{
           {"no credential, 16 MiB announced", "Content-Length: 16777216\r\n"},
           {"a forged token, 16 MiB announced", "X-API-Token: forged\r\nContent-Length: 16777216\r\n"},
           {"a forged worker token, 64 KiB + 1 announced", "X-Worker-Token: w.forged\r\nContent-Length: 65537\r\n"},
           {"no credential, a small body after 100 Continue", "Content-Length: 10\r\nExpect: 100-continue\r\n"}}) {
    test::raw_client stranger(d.port());
    stranger.send(http("POST", "/jobs", "Content-Type: application/json\r\n" + c.headers));
    auto r = stranger.next();  // at once: no waiting for the body, no 100 Continue first
    EXPECT_EQ(r.status, 401) << c.why << "\n" << r.head;
    EXPECT_EQ(body_of(r).value("error", ""), "credential_required") << c.why << ": " << r.body;
    EXPECT_TRUE(stranger.closed_by_server()) << c.why;
  }

  // A caller with a credential gets the 100 Continue, and the answer after the body.
  const std::string job = json{{"title", "t"}, {"input_bundle_path", "/b"}}.dump();
  test::raw_client op(d.port());
  op.send(http("POST", "/jobs",
               admin + "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " + std::to_string(job.size()) +
                   "\r\n"));
  EXPECT_EQ(op.next().status, 100);
  op.send(job);
  EXPECT_EQ(op.next().status, 200);
  // A small body needs no credential: the dashboard's login is read and answered by its route.
  test::raw_client browser(d.port());
  browser.send(http("POST", "/ui/login", "Content-Type: application/json\r\n", json{{"token", test::test_token}}.dump()));
  EXPECT_EQ(browser.next().status, 200);
}

// The attack as reported: 16 connections announce (nearly) 16 MiB each and send nothing; a
// worker's heartbeats and every other call had got 503 request_memory_exhausted.
TEST(http_hardening, StrangersAnnouncingLargeBodiesLeaveTheRequestBudgetToCallersWithACredential) {
  test::temp_dir dir;
  test::batond_process d(dir, "");  // http.max_buffered_request_bytes: 256 MiB, the default
  ASSERT_GT(d.port(), 0) << d.err();
  auto w = register_worker(d);
  ASSERT_FALSE(w.id.empty());
  auto head = [](size_t body) {
    return http("POST", "/jobs", "Content-Type: application/json\r\nContent-Length: " + std::to_string(body) + "\r\n");
  };
  // Every head is as long (8-digit lengths): 15 announce 16 MiB and the 16th all the budget
  // left but 8 bytes, as the server counted them (head and announced body).
  const size_t h = head(16 << 20).size(), last = (size_t{16} << 20) - 16 * h - 8;
  ASSERT_EQ(head(last).size(), h);
  std::vector<std::unique_ptr<test::raw_client>> strangers;
  for (int i = 0; i < 16; ++i) {
    strangers.push_back(std::make_unique<test::raw_client>(d.port(), 2));
    strangers.back()->send(head(i < 15 ? size_t{16} << 20 : last));
  }
  EXPECT_EQ(heartbeat(d, w), 204) << "the worker's heartbeat";
  auto jobs = d.client()->Get("/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200) << jobs->body;
  for (auto& s : strangers) EXPECT_EQ(s->next().status, 401) << "refused at their heads";
}

// Bodies a stranger may send (64 KiB) still add up: with the budget full of them, a caller
// with a credential makes room, the strangers' oldest connections closing first.
TEST(http_hardening, StrangersSmallBodiesYieldTheBudgetToACallerWithACredential) {
  test::temp_dir dir;
  test::batond_process d(dir, "http: {max_buffered_request_bytes: 16842752}\n");  // 16 MiB + 64 KiB, the least allowed
  ASSERT_GT(d.port(), 0) << d.err();
  // 261 heads announcing 64 KiB each (about 256 fit), from 9 addresses (29 each), bodies never sent.
  std::vector<std::unique_ptr<test::raw_client>> strangers;
  for (int host = 2; host <= 10; ++host)
    for (int i = 0; i < 29; ++i) {
      strangers.push_back(std::make_unique<test::raw_client>(d.port(), 5, from(host).c_str()));
      ASSERT_TRUE(strangers.back()->connected());
      strangers.back()->send(http("POST", "/ui/login", "Content-Type: application/json\r\nContent-Length: 65536\r\n"));
    }
  EXPECT_TRUE(strangers.front()->closed_by_server()) << "the oldest stranger made room for the newest";
  // A job whose body (70 kB) fits in no gap the strangers leave.
  std::string job = json{{"title", "t"}, {"input_bundle_path", "/b"}}.dump() + std::string(70000, ' ');
  auto made = d.client()->Post("/jobs", job, "application/json");
  ASSERT_TRUE(made);
  EXPECT_EQ(made->status, 200) << made->body;
}

// Finding: 200 idle connections without a credential held every slot of max_connections: 200.
TEST(http_hardening, IdleStrangersCannotHoldTheConnectionSlots) {
  test::temp_dir dir;
  test::batond_process d(dir, "http: {max_connections: 20}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  test::raw_client op(d.port());  // an operator's keep-alive connection, from before
  op.send(http("GET", "/jobs", admin));
  ASSERT_EQ(op.next().status, 200);
  std::vector<std::unique_ptr<test::raw_client>> idle;  // 40 from 8 addresses, saying nothing
  for (int host = 2; host < 10; ++host)
    for (int i = 0; i < 5; ++i) idle.push_back(std::make_unique<test::raw_client>(d.port(), 5, from(host).c_str()));
  test::raw_client late(d.port(), 5, from(2).c_str());  // a new caller, from one of their addresses
  late.send(http("GET", "/jobs", admin));
  EXPECT_EQ(late.next().status, 200);
  op.send(http("GET", "/jobs", admin));
  EXPECT_EQ(op.next().status, 200) << "an authenticated connection is never one that makes room";
}

TEST(http_hardening, AnAddressHoldsFewConnectionsWithoutACredentialTheOldestMakingRoom) {
  test::temp_dir dir;
  test::batond_process d(dir, "http: {max_unauthenticated_connections_per_address: 4, unauthenticated_timeout_seconds: 3600}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  std::vector<std::unique_ptr<test::raw_client>> idle;
  for (int i = 0; i < 6; ++i) idle.push_back(std::make_unique<test::raw_client>(d.port(), 5, from(2).c_str()));
  EXPECT_TRUE(idle[0]->closed_by_server()) << "closed to make room for the fifth";
  EXPECT_TRUE(idle[1]->closed_by_server()) << "closed to make room for the sixth";
  test::raw_client elsewhere(d.port(), 5, from(3).c_str());  // another address has its own places
  elsewhere.send(http("GET", "/healthz", ""));
  EXPECT_EQ(elsewhere.next().status, 200);
  idle[5]->send(http("GET", "/jobs", admin));  // the newest four are still open
  EXPECT_EQ(idle[5]->next().status, 200);
}

TEST(http_hardening, AConnectionWithoutACredentialHasAShortTimeout) {
  test::temp_dir dir;
  test::batond_process d(dir,
                         "http: {unauthenticated_timeout_seconds: 1, idle_timeout_seconds: 120, read_timeout_seconds: 60}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  test::raw_client op(d.port(), 10);
  op.send(http("GET", "/jobs", admin));
  ASSERT_EQ(op.next().status, 200);
  test::raw_client silent(d.port(), 10), slow(d.port(), 10), probe(d.port(), 10);
  slow.send("POST /ui/login HTTP/1.1\r\nHost: batond\r\n");  // a head that never ends
  probe.send(http("GET", "/healthz", ""));                   // a public answer does not authenticate its connection
  EXPECT_EQ(probe.next().status, 200);
  EXPECT_TRUE(silent.closed_by_server()) << "idle past 1 s before its first request";
  EXPECT_TRUE(slow.closed_by_server()) << "its head not whole within 1 s";
  EXPECT_TRUE(probe.closed_by_server()) << "idle past 1 s after a request without a credential";
  op.send(http("GET", "/jobs", admin));  // idle longer than any of them, and still open
  EXPECT_EQ(op.next().status, 200);
}

// Finding: one role-user's 200 live event streams held every connection slot.
TEST(http_hardening, AnOperatorsLiveEventStreamsAreCapped) {
  test::temp_dir dir;
  test::batond_process d(dir, "limits: {event_streams_per_operator: 2}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  const std::string ann = create_operator(d, "ann"), bob = create_operator(d, "bob");
  ASSERT_FALSE(ann.empty());
  // The stream's answer (its head; an error's body too), on a connection kept in `held`.
  std::vector<std::unique_ptr<test::raw_client>> held;
  auto follow = [&](const std::string& token) {
    held.push_back(std::make_unique<test::raw_client>(d.port()));
    held.back()->send(http("GET", "/events/stream", "X-API-Token: " + token + "\r\n"));
    return held.back()->next();
  };
  EXPECT_EQ(follow(ann).status, 200);
  EXPECT_EQ(follow(ann).status, 200);
  auto third = follow(ann);
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(body_of(third).value("error", ""), "too_many_streams") << third.body;
  EXPECT_EQ(body_of(third).value("limit", ""), "event_streams_per_operator") << third.body;
  EXPECT_EQ(follow(bob).status, 200) << "bob's streams are not ann's";
  held[0].reset();  // ann closes one: her place comes back once batond sees it closed
  EXPECT_TRUE(test::wait_until([&] { return follow(ann).status == 200; }, 10s));
  EXPECT_EQ(follow(ann).status, 429);
}

// Finding: wrong tokens were tried at ~4,300 logins a second.
TEST(http_hardening, FailedLoginsAreLimitedPerAddressAndPerOperator) {
  test::temp_dir dir;
  test::batond_process d(dir, "limits: {login_failures_burst: 3, login_failures_per_second: 0.01}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  const std::string ann = create_operator(d, "ann"), bob = create_operator(d, "bob");
  ASSERT_FALSE(ann.empty());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(login_from(d, 2, "wrong-" + std::to_string(i)).status, 401);
  auto limited = login_from(d, 2, ann);
  EXPECT_EQ(limited.status, 429) << "from that address, even the right token waits for the bucket";
  EXPECT_EQ(limited.header("Retry-After"), "100") << limited.head;
  EXPECT_EQ(body_of(limited).value("limit", ""), "login_failures_per_address") << limited.body;
  EXPECT_EQ(login_from(d, 3, ann).status, 200) << "another address";

  // Three addresses guessing ann's secret use up her name's bucket.
  for (int host = 4; host <= 6; ++host) EXPECT_EQ(login_from(d, host, "ann.guess-" + std::to_string(host)).status, 401);
  auto guessing = login_from(d, 7, "ann.guess-7");
  EXPECT_EQ(guessing.status, 429);
  EXPECT_EQ(body_of(guessing).value("limit", ""), "login_failures_per_operator") << guessing.body;
  EXPECT_EQ(login_from(d, 7, bob).status, 200) << "bob's logins are not ann's";
}

// Finding: 10,000 logins in 3 s ended another operator's session (the store holds 10,000).
TEST(http_hardening, OneOperatorsLoginsNeverEndAnothersSession) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  const std::string ann = create_operator(d, "ann"), bob = create_operator(d, "bob");
  ASSERT_FALSE(ann.empty());
  httplib::Client c("127.0.0.1", d.port());
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);  // (a request's head and body go in two writes)
  auto login = [&](const std::string& token) {
    auto r = c.Post("/ui/login", json{{"token", token}}.dump(), "application/json");
    if (!r || r->status != 200) return std::string();
    auto cookie = r->get_header_value("Set-Cookie");
    return cookie.substr(0, cookie.find(';'));
  };
  auto live = [&](const std::string& cookie) {
    auto r = c.Get("/ui/session", {{"Cookie", cookie}});
    return r && r->status == 200;
  };
  const std::string anns = login(ann), bobs_first = login(bob);
  ASSERT_FALSE(anns.empty());
  std::string bobs_last;
  for (int i = 0; i < 10000 && !HasFailure(); ++i) {
    bobs_last = login(bob);
    ASSERT_FALSE(bobs_last.empty()) << "login " << i;
  }
  EXPECT_TRUE(live(anns)) << "ann's session outlives bob's 10,000 logins";
  EXPECT_TRUE(live(bobs_last));
  EXPECT_FALSE(live(bobs_first)) << "bob's own oldest sessions made room";
}

// No answer may be sniffed into another type or kept by a cache: some carry a new token.
TEST(http_hardening, EveryAnswerIsNosniffAndNoStore) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  httplib::Client anonymous("127.0.0.1", d.port());
  std::vector<std::pair<std::string, httplib::Result>> answers;
  answers.emplace_back("a list", op->Get("/jobs"));
  answers.emplace_back(
      "a new token",
      op->Post("/operators", json{{"name", "ann"}, {"role", "user"}, {"accounts", json::array()}}.dump(), "application/json"));
  answers.emplace_back("a new worker's token",
                       op->Post("/workers/register", json{{"platform", "hpc"}}.dump(), "application/json"));
  answers.emplace_back("a login", anonymous.Post("/ui/login", json{{"token", test::test_token}}.dump(), "application/json"));
  answers.emplace_back("a 401", anonymous.Get("/jobs"));
  answers.emplace_back("a 404", op->Get("/nowhere"));
  answers.emplace_back("health", anonymous.Get("/healthz"));
  for (auto& [what, r] : answers) {
    ASSERT_TRUE(r) << what;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff") << what;
    EXPECT_EQ(r->get_header_value("Cache-Control"), "no-store") << what;
    EXPECT_FALSE(r->has_header("Strict-Transport-Security")) << what << ": not over plain HTTP";
  }
  test::raw_client stream(d.port());
  stream.send(http("GET", "/events/stream", admin));
  auto head = stream.next();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("X-Content-Type-Options"), "nosniff") << head.head;
  EXPECT_EQ(head.header("Cache-Control"), "no-store") << head.head;
  auto page = anonymous.Get("/ui/app.js");  // the dashboard's files keep their own caching rule
  ASSERT_TRUE(page);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(page->get_header_value("Cache-Control"), "no-cache");
}
