// The dashboard's server side against a real batond: its files with their security headers,
// logging in to a session cookie, the cookie as a credential with its CSRF token on every
// change, sessions ending at logout and at revocation, and the live event stream (who sees
// which events, resuming with Last-Event-ID, refusals). The browser itself is driven in
// tests/ui/ui_browser_test.py.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/batond_process.hpp"
#include "support/sse_reader.hpp"

using namespace baton;
using nlohmann::json;

namespace {

const char* config = R"(accounts:
  chem: {shares: 50, users: {ann: 1}}
  phys: {shares: 50, users: {bob: 1}}
)";
const char* pilot = "pilot-token-0123456789abcdef";

struct reply {
  int status = 0;
  json body;
  httplib::Headers headers;
};

struct fixture {
  test::temp_dir dir;
  test::batond_process d{dir, config, {"BATON_PILOT_TOKEN=" + std::string(pilot)}};

  reply call(const std::string& method, const std::string& path, const httplib::Headers& h, const json& body = nullptr) {
    httplib::Client c("127.0.0.1", d.port());
    c.set_read_timeout(30, 0);
    std::string text = body.is_null() ? "" : body.dump();
    httplib::Result r = method == "GET"      ? c.Get(path.c_str(), h)
                        : method == "DELETE" ? c.Delete(path.c_str(), h)
                                             : c.Post(path.c_str(), h, text, "application/json");
    if (!r) return {};
    return {r->status, json::parse(r->body, nullptr, false), r->headers};
  }
  httplib::Headers token(const std::string& t) { return {{"X-API-Token", t}}; }
  std::string create_operator(const std::string& name, const std::string& role, json accounts) {
    auto r = call("POST", "/operators", token(test::test_token), {{"name", name}, {"role", role}, {"accounts", accounts}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body.value("token", "");
  }
  std::string create_job(const std::string& t, const std::string& title) {
    auto r = call("POST", "/jobs", token(t), {{"title", title}, {"input_bundle_path", "/b"}});
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body.value("id", "");
  }
  struct session {
    std::string cookie, csrf;
    json who;
  };
  session login(const std::string& t, const std::string& name = "") {
    json body{{"token", t}};
    if (!name.empty()) body["name"] = name;
    auto r = call("POST", "/ui/login", {}, body);
    EXPECT_EQ(r.status, 200) << r.body.dump();
    auto set = r.headers.find("Set-Cookie");
    if (set == r.headers.end()) return {};
    return {set->second.substr(0, set->second.find(';')), r.body.value("csrf_token", ""), r.body};
  }
};

}  // namespace

TEST(ui_http, FilesComeWithAStrictContentSecurityPolicy) {
  fixture f;
  auto r = f.call("GET", "/ui/", {});
  EXPECT_EQ(r.status, 200);
  auto csp = r.headers.find("Content-Security-Policy");
  ASSERT_NE(csp, r.headers.end());
  EXPECT_NE(csp->second.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(csp->second.find("unsafe-inline"), std::string::npos);
  EXPECT_NE(csp->second.find("frame-ancestors 'none'"), std::string::npos);
  httplib::Client c("127.0.0.1", f.d.port());
  auto page = c.Get("/ui/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script type=\"module\""), std::string::npos) << "the page loads its code as a module";
  EXPECT_EQ(page->body.find("<script>"), std::string::npos) << "no inline script (the policy would block it)";
  auto js = c.Get("/ui/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(f.call("GET", "/ui/nothing-here.js", {}).status, 404);
  EXPECT_EQ(f.call("GET", "/ui/..%2Fbatond.yaml", {}).status, 404) << "only the compiled-in files, never the disk";
  auto moved = c.Get("/ui");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->status, 308);
  EXPECT_EQ(moved->get_header_value("Location"), "/ui/");
}

TEST(ui_http, LoginGivesAnHttpOnlyStrictCookieAndOnlyToOperators) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto r = f.call("POST", "/ui/login", {}, {{"token", ann}});
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["name"], "ann");
  EXPECT_EQ(r.body["admin"], false);
  EXPECT_EQ(r.body.value("csrf_token", "").size(), 64u);
  auto cookie = r.headers.find("Set-Cookie")->second;
  EXPECT_EQ(cookie.rfind("baton_session=", 0), 0u);
  for (auto attr : {"HttpOnly", "SameSite=Strict", "Path=/"}) EXPECT_NE(cookie.find(attr), std::string::npos) << attr;
  EXPECT_EQ(cookie.find(ann.substr(ann.find('.') + 1)), std::string::npos) << "the cookie never carries the token";

  EXPECT_EQ(f.call("POST", "/ui/login", {}, {{"token", "ann.0123"}}).status, 401) << "a forged token";
  EXPECT_EQ(f.call("POST", "/ui/login", {}, {{"token", "x"}}).status, 401);
  httplib::Client plain("127.0.0.1", f.d.port());
  auto as_form = plain.Post("/ui/login", json{{"token", ann}}.dump(), "text/plain");
  ASSERT_TRUE(as_form);
  EXPECT_EQ(as_form->status, 415) << "a cross-site form could send this: refused";
  EXPECT_FALSE(as_form->has_header("Set-Cookie"));
  auto missing = f.call("POST", "/ui/login", {}, json::object());
  EXPECT_EQ(missing.status, 422);
  EXPECT_EQ(missing.body.value("field", ""), "token");
  auto by_pilot = f.call("POST", "/ui/login", {}, {{"token", pilot}});
  EXPECT_EQ(by_pilot.status, 403) << "the pilot token registers workers, it opens no dashboard";
  EXPECT_EQ(by_pilot.body.value("error", ""), "operators_only");
  EXPECT_EQ(f.call("GET", "/ui/session", {}).status, 401);
  EXPECT_EQ(f.call("GET", "/ui/session", {{"Cookie", "baton_session=0123"}}).status, 401) << "a forged session id";
}

TEST(ui_http, TheCookieIsACredentialAndEveryChangeNeedsItsCsrfToken) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto bob = f.create_operator("bob", "user", {"phys"});
  auto anns = f.create_job(ann, "ann's");
  auto bobs = f.create_job(bob, "bob's");
  auto s = f.login(ann);
  httplib::Headers cookie{{"Cookie", s.cookie}};

  auto me = f.call("GET", "/ui/session", cookie);
  EXPECT_EQ(me.status, 200);
  EXPECT_EQ(me.body["csrf_token"], s.csrf);
  auto jobs = f.call("GET", "/jobs", cookie);
  ASSERT_EQ(jobs.status, 200);
  ASSERT_EQ(jobs.body.size(), 1u) << "a user's session sees only their jobs: " << jobs.body.dump();
  EXPECT_EQ(jobs.body[0]["id"], anns);
  EXPECT_EQ(f.call("GET", "/jobs/" + bobs, cookie).status, 404) << "another user's job does not exist for ann";

  auto no_csrf = f.call("POST", "/jobs/" + anns + "/hold", cookie);
  EXPECT_EQ(no_csrf.status, 403);
  EXPECT_EQ(no_csrf.body.value("error", ""), "csrf_token_missing");
  auto wrong = f.call("POST", "/jobs/" + anns + "/hold", {{"Cookie", s.cookie}, {"X-CSRF-Token", std::string(64, 'a')}});
  EXPECT_EQ(wrong.status, 403);
  EXPECT_EQ(wrong.body.value("error", ""), "csrf_token_invalid");
  auto other = f.login(bob);
  EXPECT_EQ(f.call("POST", "/jobs/" + anns + "/hold", {{"Cookie", s.cookie}, {"X-CSRF-Token", other.csrf}}).status, 403)
      << "another session's CSRF token";
  EXPECT_EQ(f.call("GET", "/jobs/" + anns, cookie).body.value("held", true), false) << "nothing changed by the refusals";
  auto held = f.call("POST", "/jobs/" + anns + "/hold", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}});
  EXPECT_EQ(held.status, 200) << held.body.dump();
  EXPECT_EQ(f.call("POST", "/jobs/" + bobs + "/hold", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}}).status, 404);

  // The change is recorded as the operator's own.
  auto history = f.call("GET", "/jobs/" + anns + "/history", f.token(test::test_token));
  ASSERT_EQ(history.status, 200);
  bool by_ann = false;
  for (const auto& e : history.body["events"])
    if (e.value("event_type", "") == "job.held") by_ann = e.value("actor", "") == "operator:ann";
  EXPECT_TRUE(by_ann) << history.body.dump();

  // Admin routes stay admin routes.
  EXPECT_EQ(f.call("GET", "/metrics", cookie).status, 403);
  // Logging out needs the CSRF token too, then the cookie is worth nothing.
  EXPECT_EQ(f.call("POST", "/ui/logout", cookie).status, 403);
  EXPECT_EQ(f.call("POST", "/ui/logout", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}}).status, 200);
  EXPECT_EQ(f.call("GET", "/jobs", cookie).status, 401);
}

TEST(ui_http, RevokingAnOperatorEndsTheirSessions) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto s = f.login(ann);
  httplib::Headers cookie{{"Cookie", s.cookie}};
  ASSERT_EQ(f.call("GET", "/jobs", cookie).status, 200);
  ASSERT_EQ(f.call("DELETE", "/operators/ann", f.token(test::test_token)).status, 204);
  EXPECT_EQ(f.call("GET", "/jobs", cookie).status, 401);
  EXPECT_EQ(f.call("GET", "/ui/session", cookie).status, 401);
}

TEST(ui_http, TheAdminTokensSessionActsUnderTheNameGivenAtLogin) {
  fixture f;
  auto s = f.login(test::test_token, "night-shift");
  EXPECT_EQ(s.who["name"], "night-shift");
  EXPECT_EQ(s.who["admin"], true);
  auto made =
      f.call("POST", "/jobs", {{"Cookie", s.cookie}, {"X-CSRF-Token", s.csrf}}, {{"title", "t"}, {"input_bundle_path", "/b"}});
  ASSERT_EQ(made.status, 200) << made.body.dump();
  auto history = f.call("GET", "/jobs/" + made.body.value("id", "") + "/history", f.token(test::test_token));
  EXPECT_EQ(history.body["events"][0].value("actor", ""), "operator:night-shift") << history.body.dump();
}

TEST(ui_http, TheLiveStreamCarriesWhatEachCallerMaySee) {
  fixture f;
  auto ann = f.create_operator("ann", "user", {"chem"});
  auto bob = f.create_operator("bob", "user", {"phys"});
  test::sse_reader admin(f.d.port(), f.token(test::test_token));
  test::sse_reader anns_stream(f.d.port(), f.token(ann));
  auto s = f.login(bob);
  test::sse_reader bobs_browser(f.d.port(), {{"Cookie", s.cookie}});
  for (auto* r : {&admin, &anns_stream, &bobs_browser}) ASSERT_TRUE(r->wait_for("event: hello")) << r->text();
  EXPECT_EQ(admin.content_type(), "text/event-stream");

  f.create_operator("carol", "user", json::array());  // an event of no job
  auto bobs = f.create_job(bob, "bob's");
  auto anns = f.create_job(ann, "ann's");
  ASSERT_TRUE(admin.wait_for(anns)) << admin.text();
  EXPECT_NE(admin.text().find(bobs), std::string::npos) << "an admin sees every event";
  ASSERT_TRUE(anns_stream.wait_for(anns)) << anns_stream.text();
  ASSERT_TRUE(bobs_browser.wait_for(bobs)) << bobs_browser.text();
  // Events arrive in log order, so bob's job.created came to ann's stream before ann's, if at all.
  EXPECT_EQ(anns_stream.text().find(bobs), std::string::npos) << "a user sees only their own jobs' events";
  EXPECT_NE(anns_stream.text().find("\"type\":\"job.created\""), std::string::npos);
  EXPECT_NE(anns_stream.text().find("\"actor\":\"operator:ann\""), std::string::npos);
  EXPECT_EQ(anns_stream.text().find("operator.created"), std::string::npos) << "events of no job are an admin's";
  EXPECT_NE(admin.text().find("operator.created"), std::string::npos) << admin.text();

  // A client that reconnects with Last-Event-ID gets what it missed, and only that: here it
  // last saw carol's creation, which came before both jobs.
  const auto& seen = admin.text();
  const auto carol = seen.find("\"stream\":\"operator/carol\"");
  ASSERT_NE(carol, std::string::npos) << seen;
  const auto seq_at = seen.rfind("\"seq\":", carol) + 6;
  const auto last_seen = std::stoull(seen.substr(seq_at));
  test::sse_reader resumed(f.d.port(), {{"X-API-Token", ann}, {"Last-Event-ID", std::to_string(last_seen)}});
  ASSERT_TRUE(resumed.wait_for("event: hello")) << resumed.text();
  EXPECT_NE(resumed.text().find(anns), std::string::npos) << resumed.text();
  EXPECT_EQ(resumed.text().find(bobs), std::string::npos);
  EXPECT_LT(resumed.text().find(anns), resumed.text().find("event: hello")) << "the missed events come first";
}

TEST(ui_http, TheLiveStreamRefusesWhoMayNotFollowIt) {
  fixture f;
  auto reg = f.call("POST", "/workers/register", f.token(test::test_token), {{"platform", "hpc"}});
  ASSERT_EQ(reg.status, 200);
  struct cell {
    httplib::Headers h;
    int status;
  };
  for (const auto& c : std::vector<cell>{{{}, 401},
                                         {{{"X-API-Token", "x.y"}}, 401},
                                         {{{"X-Worker-Token", "x.y"}}, 401},
                                         {{{"X-Worker-Token", reg.body.value("worker_token", "")}}, 403},
                                         {{{"X-API-Token", pilot}}, 403},
                                         {{{"Cookie", "baton_session=abc"}}, 401},
                                         {{{"X-API-Token", test::test_token}, {"Last-Event-ID", "12x"}}, 422}}) {
    test::sse_reader r(f.d.port(), c.h);
    ASSERT_TRUE(r.wait_ended()) << "a refusal ends the answer";
    EXPECT_EQ(r.status(), c.status) << r.text();
  }
}
