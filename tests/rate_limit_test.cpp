// Request budgets: the token bucket itself (pure, time driven by the test), then against a
// real batond: an operator over budget gets 429 with Retry-After, one busy worker is
// limited while another is not, and batond's own answers carry on.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "core/access/rate_limit.hpp"
#include "support/batond_process.hpp"

using namespace baton;
using nlohmann::json;

TEST(token_bucket, SeedValuesBurstThenRefillAtTwoPerSecond) {
  core::bucket_rule rule{1000, 2};
  core::token_bucket b;
  core::time_us t = 5'000'000;
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(core::take_token(b, rule, t)) << "request " << i << " of the burst";
  auto wait = core::take_token(b, rule, t);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 500'000) << "the next token comes in half a second";
  EXPECT_TRUE(core::take_token(b, rule, t + 499'999));
  EXPECT_FALSE(core::take_token(b, rule, t + 500'000));
  EXPECT_TRUE(core::take_token(b, rule, t + 500'000)) << "one token, taken";
  EXPECT_FALSE(core::take_token(b, rule, t + 10'000'000'000)) << "refilled (to the cap) after a long pause";
  core::token_bucket back;
  EXPECT_FALSE(core::take_token(back, {1, 1}, 10'000'000));
  EXPECT_TRUE(core::take_token(back, {1, 1}, 9'000'000)) << "a clock stepping back refills nothing";
  core::token_bucket off;
  for (int i = 0; i < 10000; ++i) ASSERT_FALSE(core::take_token(off, {1, 0}, 0)) << "rate 0: no limit";
}

TEST(rate_limits_http, OperatorsAndWorkersEachHaveTheirOwnBudget) {
  test::temp_dir dir;
  test::batond_process d(dir,
                         "limits: {operator_requests_burst: 5, operator_requests_per_second: 0.01,\n"
                         "         worker_requests_burst: 3, worker_requests_per_second: 0.01}\n");
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  std::vector<json> workers;
  for (int i = 0; i < 2; ++i) {
    auto r = op->Post("/workers/register", json{{"platform", "hpc"}}.dump(), "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "");
    workers.push_back(json::parse(r->body));
  }
  for (int i = 0; i < 3; ++i) ASSERT_EQ(op->Get("/jobs")->status, 200) << "within the burst of 5";
  auto over = op->Get("/jobs");
  ASSERT_EQ(over->status, 429);
  auto body = json::parse(over->body);
  EXPECT_EQ(body["error"], "rate_limited");
  EXPECT_EQ(body["limit"], "operator_requests");
  EXPECT_EQ(over->get_header_value("Retry-After"), "100") << "one token per 100 s";
  EXPECT_EQ(body["retry_after_seconds"], 100);
  EXPECT_EQ(op->Get("/jobs", {{"X-Baton-Operator", "someone-else"}})->status, 429)
      << "the admin token's budget is the token's, whatever name it declares";
  // The operator's calls do not use up the workers' budgets, nor one worker's another's.
  auto poll = [&](const json& w) {
    httplib::Client c("127.0.0.1", d.port());
    return c
        .Post(("/jobs/request?worker_id=" + w["worker_id"].get<std::string>()).c_str(),
              {{"X-Worker-Token", w["worker_token"].get<std::string>()}}, "", "application/json")
        ->status;
  };
  for (int i = 0; i < 3; ++i) EXPECT_EQ(poll(workers[0]), 200);
  EXPECT_EQ(poll(workers[0]), 429) << "a worker polling in a loop";
  EXPECT_EQ(poll(workers[1]), 200) << "does not starve the others";
  httplib::Client anon("127.0.0.1", d.port());
  EXPECT_EQ(anon.Get("/healthz")->status, 200) << "health is never limited";
}
