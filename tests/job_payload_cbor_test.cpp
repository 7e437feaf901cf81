// replay::read_job_payload, a job event's payload read from its CBOR bytes without the JSON
// tree: wherever it answers, it answers what core::read_job_change gives on the decoded
// payload; wherever that reading fails (or the bytes do not decode), it declines. Checked on
// payloads as batond writes them, on fields of every other type, and on seeded damage to the
// bytes.
#include "replay/job_payload_cbor.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "events/payload.hpp"
#include "support/job_change_same.hpp"

using baton::replay::read_job_payload;
using nlohmann::json;

namespace {

// The property, on one payload's bytes. True when the fast reading answered.
bool check_bytes(const std::string& type, const std::string& bytes, const std::string& what) {
  bool answered = false;
  EXPECT_EQ(baton::test::fast_reading_difference(type, bytes, &answered), "") << what;
  return answered;
}

bool check(const std::string& type, const json& payload) { return check_bytes(type, baton::events::to_payload(payload), type + " " + payload.dump()); }

// Payloads as batond writes them (every field each type's reading looks at, and some it does not).
std::vector<std::pair<std::string, json>> as_written() {
  json decision = {{"policy", "greedy-rank-v1"}, {"worker_id", "w1"}, {"worker_score", 1200},
                   {"idle_ranked_above", 0}, {"jobs_examined", 3}, {"taken_by_better_workers", 1},
                   {"taken_by_better_workers_sample", {{"j9", "w0"}}}, {"stale_excluded", {"w7"}},
                   {"deadline", {{"rule", "margin"}, {"margin_seconds", 300}}}};
  json pinned = decision;
  pinned["conformance_pin"] = "h100-sm90";
  return {
      {"job.created", {{"title", "md"}, {"input_bundle_path", "/b"}, {"worker_image_key", "img"},
                       {"preferred_clusters", {"a", "b"}}, {"comment", "c"}, {"max_attempts", 3},
                       {"requeued_from", "j0"}, {"latest_checkpoint_manifest_path", "/m"}, {"last_checkpoint_at_us", 1700000000000000},
                       {"user", "u"}, {"account", "acct"}, {"partition", "gpu"}, {"qos", "high"}, {"nice", -5},
                       {"gpu_count", 4}, {"time_limit_seconds", 3600}, {"checkpoints", false}, {"requeue", false},
                       {"interactive", true}, {"conformance", "x"}, {"checkpoint_seconds", 12.5}, {"hold", true},
                       {"depends_on", {{{"job_id", "p1"}, {"condition", "afterany"}}, {{"job_id", "p2"}}}},
                       {"id", "j1"}, {"unknown_field", {{"nested", {1, 2.5, nullptr}}}}}},
      {"job.created", {{"title", "md"}, {"input_bundle_path", "/b"}, {"user", "u"}}},
      {"job.created", json::object()},
      {"job.assigned", {{"worker_id", "w1"}, {"attempt", 2}, {"decision", decision}}},
      {"job.assigned", {{"worker_id", "w1"}, {"decision", pinned}}},
      {"job.assigned", {{"worker_id", "w1"}, {"decision", nullptr}}},
      {"job.started", {{"worker_id", "w1"}}},
      {"job.started", json::object()},
      {"job.completed", {{"worker_id", "w1"}, {"at", "2026-11-27T00:00:00Z"}}},
      {"job.checkpointed", {{"checkpoint_manifest_path", "/c/1"}, {"progress", 0.25}, {"progress_codes", {{"step", 100}}},
                            {"checkpoint_cycle_status", "ok"}, {"checkpoint_cycle_failures", {"x"}}, {"checkpoint_seconds", 3}}},
      {"job.progress_reported", {{"progress", 1}}},
      {"job.handoff_completed", {{"checkpoint_manifest_path", "/c/2"}}},
      {"job.handoff_started", {{"worker_id", "w1"}}},
      {"job.cancel_requested", {{"by", "operator:admin"}}},
      {"job.released", json::object()},
  };
}

}  // namespace

TEST(JobPayloadCbor, ReadsPayloadsAsBatondWritesThemAsTheOrdinaryReadingDoes) {
  for (const auto& [type, payload] : as_written()) EXPECT_TRUE(check(type, payload)) << "declined " << type << " " << payload.dump();
}

TEST(JobPayloadCbor, DeclinesWhereTheOrdinaryReadingFailsOrAFieldHasAnotherShape) {
  const std::vector<std::pair<std::string, json>> others = {
      {"job.created", {{"title", 5}}},                      // a string field of another type: a type error there
      {"job.created", {{"checkpoints", "yes"}}},
      {"job.created", {{"preferred_clusters", {"a", 1}}}},
      {"job.created", {{"preferred_clusters", "a"}}},
      {"job.created", {{"checkpoint_seconds", "12"}}},
      {"job.created", {{"depends_on", {5}}}},
      {"job.assigned", {{"decision", json::object()}}},     // no worker_id: an error there
      {"job.assigned", {{"worker_id", "w1"}}},              // no decision: declined (a re-derivation needs it)
      {"job.assigned", {{"worker_id", 7}, {"decision", json::object()}}},
      {"job.assigned", {{"worker_id", "w1"}, {"decision", {{"conformance_pin", 3}}}}},
      {"job.checkpointed", {{"progress", "half"}}},
      {"job.checkpointed", {{"checkpoint_manifest_path", false}}},
      {"job.failed", {{"reason", "oom"}}},                  // rarer types: the ordinary way
      {"job.pruned", {{"priority", 5}}},
      {"job.created", json::array({1, 2})},
      {"job.started", "text"},
  };
  for (const auto& [type, payload] : others) EXPECT_FALSE(check(type, payload)) << "answered " << type << " " << payload.dump();
}

TEST(JobPayloadCbor, NumbersOfEveryKindReadAsTheOrdinaryReadingReadsThem) {
  // Numbers fall back (out of range, negative for a count, not a number) the way number_or
  // does; a float is read by value where the ordinary reading reads it.
  const std::vector<json> values = {0, 1, 4294967295ull, 4294967296ull, -1, -9223372036854775807ll - 1, 2.0, 2.5, -0.5,
                                    1e30, nullptr, true, "3", json::array(), json::object()};
  int answered = 0;
  for (const auto& v : values)
    for (const char* key : {"max_attempts", "gpu_count", "nice", "last_checkpoint_at_us", "time_limit_seconds", "checkpoint_seconds"}) {
      answered += check("job.created", {{"title", "t"}, {key, v}});
      answered += check("job.assigned", {{"worker_id", "w"}, {"attempt", v}, {"decision", json::object()}});
      answered += check("job.checkpointed", {{"progress", v}, {"checkpoint_seconds", v}});
    }
  EXPECT_GT(answered, 150) << "the numbers' common shapes are read, not declined";
}

// A decision record as batond writes it stays bytes (a re-derivation compares bytes first);
// one whose fields a re-derivation reads have another shape is decoded whole, and still read.
TEST(JobPayloadCbor, LeavesTheDecisionRecordAsBytesOnlyWhenItsInputsReadInPlace) {
  const auto written = as_written();
  for (const auto& [type, payload] : written) {
    if (type != "job.assigned" || !payload.at("decision").is_object()) continue;
    auto read = read_job_payload(type, baton::events::to_payload(payload));
    ASSERT_TRUE(read);
    ASSERT_TRUE(read->decision_at) << payload.dump();
    EXPECT_TRUE(read->decision.is_null());
    EXPECT_EQ(read->decision_at->stale_excluded, std::vector<std::string>{"w7"});
    EXPECT_EQ(read->decision_at->deadline, payload.at("decision").at("deadline"));
  }
  for (const json& decision : {json{{"stale_excluded", nullptr}}, json{{"stale_excluded", "w7"}}, json{{"stale_excluded", {1}}},
                               json(nullptr), json::array(), json("plan")}) {
    const json payload = {{"worker_id", "w1"}, {"decision", decision}};
    EXPECT_TRUE(check("job.assigned", payload)) << decision.dump();
    auto read = read_job_payload("job.assigned", baton::events::to_payload(payload));
    ASSERT_TRUE(read) << decision.dump();
    EXPECT_FALSE(read->decision_at) << decision.dump();
    EXPECT_EQ(read->decision, decision);
  }
}

TEST(JobPayloadCbor, KeysOutOfOrderOrRepeatedAreDeclined) {
  // {"worker_id": "a", "decision": {}} in that order, then "worker_id" twice: to_cbor never
  // writes either, and a repeated key's meaning is the decoded object's to decide.
  const std::string out_of_order = "\xA2\x69worker_id\x61" "a\x68" "decision\xA0";
  EXPECT_FALSE(read_job_payload("job.assigned", out_of_order));
  const std::string repeated = "\xA3\x68" "decision\xA0\x69worker_id\x61" "a\x69worker_id\x61" "b";
  EXPECT_FALSE(read_job_payload("job.assigned", repeated));
  const std::string sorted = "\xA2\x68" "decision\xA0\x69worker_id\x61" "a";
  ASSERT_TRUE(read_job_payload("job.assigned", sorted));
  EXPECT_EQ(read_job_payload("job.assigned", sorted)->change.worker_id, "a");
  EXPECT_FALSE(read_job_payload("job.assigned", sorted + std::string(1, '\0'))) << "trailing bytes";
  EXPECT_FALSE(read_job_payload("job.assigned", sorted.substr(0, sorted.size() - 1))) << "truncated";
  EXPECT_FALSE(read_job_payload("job.assigned", "")) << "empty";
}

TEST(JobPayloadCbor, DamagedBytesAreReadAsTheOrdinaryReadingReadsThemOrDeclined) {
  std::mt19937_64 rng(20261127);  // seeded: the same damage every run
  int answered = 0, cases = 0;
  for (const auto& [type, payload] : as_written()) {
    const std::string bytes = baton::events::to_payload(payload);
    for (int round = 0; round < 400; ++round) {
      std::string damaged = bytes;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips && !damaged.empty(); ++f) damaged[rng() % damaged.size()] ^= static_cast<char>(1u << (rng() % 8));
      if (rng() % 5 == 0) damaged.resize(rng() % (damaged.size() + 1));
      ++cases;
      answered += check_bytes(type, damaged, type + " damaged, round " + std::to_string(round));
    }
  }
  // Many damaged payloads still read (a changed letter in a value); some do not.
  EXPECT_GT(answered, cases / 10);
  EXPECT_LT(answered, cases);
}
