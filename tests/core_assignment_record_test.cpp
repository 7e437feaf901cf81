// core/events/assignment_record: a poll's typed job.assigned payload must be logged and applied as its
// JSON would be, and read back from the log as the same record.
#include "core/events/assignment_record.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/jobs/job.hpp"

using namespace baton::core;
using nlohmann::json;

namespace {

assignment_record random_record(std::mt19937_64& rng) {
  auto coin = [&] { return rng() % 2 == 0; };
  auto id = [&] { return "w" + std::to_string(rng() % 5); };
  assignment_record r;
  r.policy = coin() ? "greedy-rank-v1" : "plan";
  r.worker_id = id();
  r.worker_score = static_cast<int64_t>(rng() % 3) - 1;  // -1, 0, 1: signed and unsigned JSON numbers
  if (coin()) r.planned_at = "2026-11-27T07:00:00.000000Z";
  r.matched = coin();
  if (r.matched) {
    r.idle_ranked_above = rng() % 3;
    r.jobs_examined = rng() % 3;
    r.taken_by_better_workers = rng() % 3;
    for (size_t i = rng() % 3; i > 0; --i) r.taken_sample.emplace_back("j" + std::to_string(rng() % 3), id());
    for (size_t i = rng() % 3; i > 0; --i) r.stale_excluded.push_back(id());
  }
  if (coin()) {
    auto& d = r.deadline.emplace();
    if (coin()) d.remaining_seconds = 60;
    if (coin()) d.rule = "fits", d.time_limit_seconds = 3600;
    if (coin()) d.min_useful_seconds = 900;
    if (coin()) d.default_time_limit_seconds = 86400;
  }
  if (coin()) r.conformance_pin = "fp" + std::to_string(rng() % 2);
  return r;
}

}  // namespace

TEST(AssignmentRecord, ItsJsonIsTheRecordAnAssignmentEventCarries) {
  assignment_record r;
  r.policy = "greedy-rank-v1";
  r.worker_id = "w1";
  r.worker_score = 1'001'008'006;
  r.matched = true;
  r.idle_ranked_above = 2;
  r.jobs_examined = 3;
  r.taken_by_better_workers = 2;
  r.taken_sample = {{"j1", "w0"}, {"j2", "w2"}};
  r.stale_excluded = {"w9"};
  EXPECT_EQ(to_json(r), json::parse(R"({"policy":"greedy-rank-v1","worker_id":"w1","worker_score":1001008006,
      "idle_ranked_above":2,"jobs_examined":3,"taken_by_better_workers":2,
      "taken_by_better_workers_sample":[["j1","w0"],["j2","w2"]],"stale_excluded":["w9"]})"));
  assignment_record plan;
  plan.policy = "plan";
  plan.worker_id = "w1";
  plan.planned_at = "2026-11-27T07:00:00.000000Z";
  plan.conformance_pin = "fp";
  EXPECT_EQ(to_json(plan), json::parse(R"({"policy":"plan","worker_id":"w1","worker_score":0,
      "planned_at":"2026-11-27T07:00:00.000000Z","conformance_pin":"fp"})"));
}

namespace {

// A payload with the edges of each CBOR encoding in its numbers and strings.
assigned_payload random_payload(std::mt19937_64& rng) {
  static const std::vector<uint64_t> edges = {0,     23,    24,          255,         256,
                                              65535, 65536, 4294967295u, 4294967296u, std::numeric_limits<uint64_t>::max()};
  auto edge = [&] { return edges[rng() % edges.size()]; };
  auto text = [&] { return std::string(rng() % 2 ? 36 : rng() % 300, static_cast<char>('a' + rng() % 26)); };
  assigned_payload p;
  p.decision = random_record(rng);
  p.worker_id = rng() % 2 ? p.decision.worker_id : text();
  p.attempt = static_cast<uint32_t>(rng() % 3 ? rng() % 7 : edge());
  auto& r = p.decision;
  if (rng() % 2) r.worker_score = rng() % 2 ? static_cast<int64_t>(edge() >> 1) : -static_cast<int64_t>(edge() >> 1) - 1;
  if (rng() % 2) r.worker_id = text();
  if (r.matched && rng() % 2) {
    r.idle_ranked_above = edge();
    r.jobs_examined = edge();
    r.taken_by_better_workers = edge();
    for (auto& [job, worker] : r.taken_sample) job = text(), worker = text();
    for (size_t i = rng() % 30; i > 0; --i) r.stale_excluded.push_back(text());
  }
  if (r.deadline && rng() % 2)
    r.deadline->remaining_seconds = -static_cast<int64_t>(edge() >> 1) - 1;  // an allocation that ended
  return p;
}

}  // namespace

TEST(AssignmentRecord, ATypedPayloadIsWrittenAsItsJsonWouldBe) {
  // The log stores what encode_cbor writes from the struct: the bytes nlohmann's to_cbor
  // writes for to_json(payload), and so the same hash chain and the same reading.
  std::mt19937_64 rng(20261128);
  for (int i = 0; i < 5'000; ++i) {
    const auto p = random_payload(rng);
    const json as_json = to_json(p);
    const auto want = json::to_cbor(as_json);
    const std::string got = baton::events::to_cbor(p);
    ASSERT_EQ(got, std::string(want.begin(), want.end())) << as_json.dump().substr(0, 400);
    // What applying it changes is what the JSON's reading would change.
    job typed, read;
    typed.attempts = read.attempts = 3;
    evolve(typed, ev::payload(p), 7);
    evolve(read, "job.assigned", as_json, 7);
    EXPECT_EQ(typed.assigned_worker_id, read.assigned_worker_id);
    EXPECT_EQ(typed.attempts, read.attempts);
    EXPECT_EQ(typed.conformance, read.conformance);
    EXPECT_EQ(typed.status, job_status::assigned);
  }
  EXPECT_EQ(to_json(assigned_payload{2, {}, "w1"})["attempt"], 2);
}

// The bytes read back (events/described.hpp's reader) are the same record: the walk's
// fields present set `matched` again, and the record writes the very bytes it was read from.
TEST(AssignmentRecord, ReadBackFromItsBytesItIsTheSameRecord) {
  std::mt19937_64 rng(20261129);
  for (int i = 0; i < 5'000; ++i) {
    const auto p = random_payload(rng);
    const std::string bytes = baton::events::to_cbor(p);
    const auto back = baton::events::from_cbor<assigned_payload>(bytes);
    ASSERT_EQ(baton::events::to_cbor(back), bytes);
    EXPECT_EQ(back.decision.matched, p.decision.matched);
    EXPECT_EQ(back.decision.taken_sample, p.decision.matched ? p.decision.taken_sample : decltype(p.decision.taken_sample){});
    EXPECT_EQ(back.attempt, p.attempt);
    // And through the JSON tree (a record another writer encoded otherwise).
    ASSERT_EQ(baton::events::to_cbor(baton::events::from_json<assigned_payload>(json::from_cbor(bytes))), bytes);
  }
}

// A deadline fit in a log this code did not write (a float where it writes whole seconds)
// reads as numbers always read from a log (events/described.hpp's integer_of): truncated.
TEST(AssignmentRecord, ADeadlineFitWithAFloatReadsTruncated) {
  const json hand = {{"decision",
                      {{"policy", "greedy-rank-v1"},
                       {"worker_id", "w1"},
                       {"worker_score", 0},
                       {"deadline", {{"remaining_seconds", -1.5}, {"rule", "fits"}, {"time_limit_seconds", 60.9}}}}},
                     {"worker_id", "w1"}};
  const auto bytes = json::to_cbor(hand);
  const auto p =
      baton::events::from_cbor<assigned_payload>(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  ASSERT_TRUE(p.decision.deadline);
  EXPECT_EQ(p.decision.deadline->remaining_seconds, -1);
  EXPECT_EQ(p.decision.deadline->time_limit_seconds, 60);
  EXPECT_EQ(p.decision.deadline->rule, "fits");
  const json null_remaining = {
      {"decision", {{"policy", "plan"}, {"worker_id", "w1"}, {"deadline", {{"remaining_seconds", nullptr}}}}},
      {"worker_id", "w1"}};
  const auto nb = json::to_cbor(null_remaining);
  const auto q =
      baton::events::from_cbor<assigned_payload>(std::string_view(reinterpret_cast<const char*>(nb.data()), nb.size()));
  ASSERT_TRUE(q.decision.deadline);
  EXPECT_FALSE(q.decision.deadline->remaining_seconds);
  EXPECT_EQ(baton::events::to_json(q)["decision"]["deadline"], json({{"remaining_seconds", nullptr}}));
}
