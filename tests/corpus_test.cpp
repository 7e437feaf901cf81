// Logs written before events were typed (tests/data/corpus/README.md) read by today's code:
// each log is rebuilt from its audit export event by event, each event's hash must come out as
// recorded (so the payload bytes are the stored ones), every payload reads as its struct and
// writes those very bytes again, the log verifies, every decision re-derives identically and
// the world recovers. Together the files hold every event type of the catalogue.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/events/event_types.hpp"
#include "core/util/hex.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "replay/audit/log_verify.hpp"
#include "replay/audit/rederive.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using nlohmann::json;

namespace {

struct corpus {
  std::vector<json> events;
  json trailer;
};

corpus read_corpus(const std::string& name) {
  const std::string path = std::string(BATON_SOURCE_DIR) + "/tests/data/corpus/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.is_open()) << "cannot read " << path;
  corpus c;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json j = json::parse(line);
    if (j.contains("trailer"))
      c.trailer = j["trailer"];
    else
      c.events.push_back(std::move(j));
  }
  return c;
}

// The exported events appended again, in order: consecutive events of one command (one
// stream, one command id) as one command, since a command id is taken once.
void rebuild(events::event_store& store, const std::vector<json>& exported) {
  std::vector<events::append_command> cmds;
  for (const auto& e : exported) {
    const std::string stream = e.at("stream"), command_id = e.at("command_id");
    if (cmds.empty() || command_id.empty() || cmds.back().command_id != command_id || cmds.back().stream_id != stream) {
      events::append_command c;
      c.stream_id = stream;
      c.command_id = command_id;
      c.recorded_at_us = e.at("recorded_at_us");
      c.correlation_id = e.at("correlation_id");
      c.causation_id = e.at("causation_id");
      c.actor = e.at("actor");
      cmds.push_back(std::move(c));
    }
    cmds.back().events.push_back({e.at("type"), e.at("schema_version"), events::encode_cbor(e.at("payload"))});
  }
  for (const auto& r : store.append(cmds)) ASSERT_EQ(r.status, events::append_status::appended);
}

// What one corpus file holds and what today's code must make of it.
struct corpus_file {
  const char* file;
  const char* written_by;  // the test of the old code (151b61e) whose batond wrote it (README.md)
  size_t events;
  std::map<std::string, size_t> types;
  struct {
    uint64_t decisions, assignments, recalculations, plans, preemption_decisions, provisioning_plans, salad_targets, reaps,
        storage_decisions;
  } rederived;
  size_t jobs;              // in the world recovered at the log's end
  uint64_t mismatches = 0;  // decisions re-derived differently (none known)
};

void PrintTo(const corpus_file& f, std::ostream* os) { *os << f.file << " (" << f.written_by << ")"; }

const std::vector<corpus_file>& corpus_files() {
  // clang-format off
  static const std::vector<corpus_file> files{
    {"before-typed-events-1.jsonl", "a batond of 2026-12-06, not a test (README.md)", 277,
     {{"daemon.started", 1}, {"job.created", 4}, {"scheduler.plan_made", 1}, {"scheduler.priorities_applied", 135},
      {"scheduler.priorities_recalculated", 136}},
     {137, 0, 136, 1, 0, 0, 0, 0, 0}, 4},
    {"before-typed-events-2.jsonl", "worker_e2e_test: KilledWorkerIsReapedAndTheNextResumesFromTheCheckpoint", 26,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.assigned", 2}, {"job.checkpointed", 4},
      {"job.completed", 1}, {"job.created", 1}, {"job.progress_reported", 7}, {"job.requeued_after_reap", 1},
      {"job.started", 2}, {"scheduler.plan_made", 1}, {"scheduler.priorities_recalculated", 1},
      {"worker.deregistered", 1}, {"worker.reaped", 1}, {"worker.registered", 2}},
     {5, 2, 1, 1, 0, 0, 0, 1, 0}, 1},
    {"before-typed-events-3.jsonl", "worker_e2e_test: TheAgentRotatesItsCredentialMidJobWithoutARefusedCall", 12,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.assigned", 1}, {"job.checkpointed", 1},
      {"job.completed", 1}, {"job.created", 1}, {"job.started", 1}, {"scheduler.priorities_recalculated", 1},
      {"worker.credential_rotated", 2}, {"worker.deregistered", 1}, {"worker.registered", 1}},
     {2, 1, 1, 0, 0, 0, 0, 0, 0}, 1},
    {"before-typed-events-4.jsonl", "api_test: DeregisterRequeuesAndRequeueResumesFromTheCheckpoint", 15,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.assigned", 2}, {"job.checkpointed", 1},
      {"job.created", 2}, {"job.failed", 1}, {"job.requeued_after_deregister", 1}, {"job.requeued_as", 1},
      {"job.started", 1}, {"scheduler.priorities_recalculated", 1}, {"worker.deregistered", 1},
      {"worker.registered", 2}},
     {3, 2, 1, 0, 0, 0, 0, 0, 0}, 2},
    {"before-typed-events-5.jsonl", "api_test: UnknownImagesAreRefusedAndOneWorkerPerAllocation", 12,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.assigned", 2}, {"job.created", 1},
      {"job.requeued_after_orphan", 1}, {"job.started", 1}, {"operator.created", 1},
      {"scheduler.priorities_recalculated", 1}, {"worker.deregistered", 1}, {"worker.registered", 2}},
     {3, 2, 1, 0, 0, 0, 0, 0, 0}, 1},
    {"before-typed-events-6.jsonl", "api_test: HandoffCompleteRequeuesWithTheNewCheckpoint", 9,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.assigned", 1}, {"job.created", 1},
      {"job.handoff_completed", 1}, {"job.handoff_started", 1}, {"job.started", 1},
      {"scheduler.priorities_recalculated", 1}, {"worker.registered", 1}},
     {2, 1, 1, 0, 0, 0, 0, 0, 0}, 1},
    {"before-typed-events-7.jsonl", "preemption_http_test: TheVictimsWorkerHearsItAndIsTakenBackWhenItsGraceEnds", 15,
     {{"daemon.started", 2}, {"daemon.stopped", 1}, {"job.assigned", 2}, {"job.created", 2}, {"job.preempted", 1},
      {"job.requeued_after_preempt", 1}, {"job.started", 2}, {"scheduler.preemptions_decided", 2},
      {"scheduler.priorities_recalculated", 1}, {"worker.registered", 1}},
     {5, 2, 1, 0, 2, 0, 0, 0, 0}, 2},
    {"before-typed-events-8.jsonl", "batch_http_test: AnArraysTasksAreListedByIndexAndRunWithIt", 22,
     {{"daemon.started", 1}, {"job.assigned", 1}, {"job.cancel_requested", 1}, {"job.cancelled", 4},
      {"job.created", 5}, {"job.held", 4}, {"job.released", 4}, {"scheduler.priorities_recalculated", 1},
      {"worker.registered", 1}},
     {2, 1, 1, 0, 0, 0, 0, 0, 0}, 5},
    {"before-typed-events-9.jsonl", "batch_http_test: AJobNoSiteCouldEverRunSaysWhy", 10,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.created", 4}, {"scheduler.priorities_applied", 1},
      {"scheduler.priorities_recalculated", 2}, {"worker.registered", 1}},
     {2, 0, 2, 0, 0, 0, 0, 0, 0}, 4},
    {"before-typed-events-10.jsonl", "operators_http_test: TokensRotateWithTheOldOneAcceptedUntilItsDeadline", 10,
     {{"daemon.started", 2}, {"daemon.stopped", 1}, {"operator.created", 2}, {"operator.revoked", 1},
      {"operator.token_rotated", 3}, {"scheduler.priorities_recalculated", 1}},
     {1, 0, 1, 0, 0, 0, 0, 0, 0}, 0},
    {"before-typed-events-11.jsonl", "pilot_token_test: TheCliRotatesItAndItsFileFollows", 4,
     {{"daemon.started", 1}, {"operator.created", 1}, {"pilot.token_rotated", 1},
      {"scheduler.priorities_recalculated", 1}},
     {1, 0, 1, 0, 0, 0, 0, 0, 0}, 0},
    {"before-typed-events-12.jsonl", "cli_test: WorkersClustersAndMonitor", 7,
     {{"cluster.disabled", 1}, {"cluster.enabled", 1}, {"daemon.started", 1}, {"job.created", 2},
      {"scheduler.priorities_recalculated", 1}, {"worker.registered", 1}},
     {1, 0, 1, 0, 0, 0, 0, 0, 0}, 2},
    {"before-typed-events-13.jsonl", "slurm_integration_test: SbatchFailureOnOnePartitionDoesNotStopAnother", 9,
     {{"cluster.submission_failed", 1}, {"daemon.started", 1}, {"job.assigned", 1}, {"job.completed", 1},
      {"job.created", 1}, {"job.started", 1}, {"scheduler.priorities_recalculated", 1},
      {"worker.placeholder_adopted", 1}, {"worker.placeholder_created", 1}},
     {3, 1, 1, 0, 0, 1, 0, 0, 0}, 1},
    {"before-typed-events-14.jsonl", "slurm_integration_test: SubmitsAndQueriesOverSshWithKeyAuth (its second batond)", 6,
     {{"daemon.started", 1}, {"daemon.stopped", 1}, {"job.created", 1}, {"scheduler.priorities_recalculated", 1},
      {"worker.placeholder_created", 1}, {"worker.placeholder_removed", 1}},
     {2, 0, 1, 0, 0, 1, 0, 0, 0}, 1},
    {"before-typed-events-15.jsonl", "salad_test: IdleHpcWorkersComeFirstAndApiFailuresAreRecordedOnce", 6,
     {{"cloud.scale_failed", 1}, {"cloud.scaled", 1}, {"daemon.started", 1}, {"job.created", 1},
      {"scheduler.priorities_recalculated", 1}, {"worker.registered", 1}},
     {2, 0, 1, 0, 0, 0, 1, 0, 0}, 1},
    {"before-typed-events-16.jsonl", "storage_http_test: AFinishedAttemptStoresNothingAndTheQuotaAnswers507", 14,
     {{"daemon.started", 1}, {"job.assigned", 1}, {"job.checkpointed", 1}, {"job.completed", 1}, {"job.created", 1},
      {"operator.created", 1}, {"scheduler.priorities_recalculated", 1}, {"storage.blob_stored", 2},
      {"storage.files_stored", 1}, {"storage.job_bound", 1}, {"storage.quota_refused", 1},
      {"storage.upload_held", 1}, {"worker.registered", 1}},
     {3, 1, 1, 0, 0, 0, 0, 0, 1}, 1},
    {"before-typed-events-17.jsonl", "storage_http_test: APrunedJobsBlobsAreCollectedAndADamagedBlobIsReported", 26,
     {{"daemon.started", 1}, {"job.assigned", 1}, {"job.checkpointed", 3}, {"job.completed", 1}, {"job.created", 1},
      {"job.pruned", 1}, {"operator.created", 1}, {"scheduler.priorities_recalculated", 1},
      {"storage.blob_corrupt", 1}, {"storage.blob_removed", 2}, {"storage.blob_removing", 2},
      {"storage.blob_stored", 4}, {"storage.files_stored", 3}, {"storage.job_bound", 1},
      {"storage.job_released", 1}, {"storage.upload_held", 1}, {"worker.registered", 1}},
     {9, 1, 1, 0, 0, 0, 0, 0, 7}, 0},  // its one job pruned: gone from the world
    {"before-typed-events-18.jsonl", "no test: two bundle uploads no job used, released by the collector (README.md)", 13,
     {{"daemon.started", 2}, {"daemon.stopped", 2}, {"scheduler.priorities_recalculated", 1},
      {"storage.blob_removed", 1}, {"storage.blob_removing", 1}, {"storage.blob_stored", 2},
      {"storage.upload_held", 2}, {"storage.upload_released", 2}},
     {3, 0, 1, 0, 0, 0, 0, 0, 2}, 0},
    {"before-typed-events-19.jsonl", "damaged_log_test: ATailThatFailsItsHashIsRefusedShownAndRepairedWithABackup", 8,
     {{"daemon.log_truncated", 1}, {"daemon.started", 2}, {"daemon.stopped", 1}, {"job.created", 3},
      {"scheduler.priorities_recalculated", 1}},
     {1, 0, 1, 0, 0, 0, 0, 0, 0}, 3},
  };
  // clang-format on
  return files;
}

}  // namespace

class Corpus : public ::testing::TestWithParam<corpus_file> {};

TEST_P(Corpus, ALogWrittenBeforeTypedEventsReadsVerifiesAndRederivesUnchanged) {
  const corpus_file& f = GetParam();
  const corpus c = read_corpus(f.file);
  ASSERT_EQ(c.events.size(), f.events);
  ASSERT_EQ(c.trailer.at("count"), f.events);
  ASSERT_EQ(c.trailer.at("first_seq"), 1);
  ASSERT_EQ(c.trailer.at("last_seq"), f.events);
  test::temp_dir dir;
  auto store = events::event_store::open(dir / "eventlog");
  rebuild(*store, c.events);
  ASSERT_EQ(store->last_seq(), c.events.size());

  std::map<std::string, size_t> types;
  const auto stored = store->read(1, c.events.size());
  ASSERT_EQ(stored.size(), c.events.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    const auto& e = stored[i];
    SCOPED_TRACE("event " + std::to_string(e.seq) + " " + e.type);
    // The same hash: the same envelope and the same payload bytes as the log it came from.
    EXPECT_EQ(util::to_hex(e.hash), c.events[i].at("hash").get<std::string>());
    const auto typed = core::ev::decode(e.type, e.schema_version, e.payload);
    EXPECT_FALSE(std::holds_alternative<core::ev::unknown_event>(typed)) << "a type the catalogue knows";
    EXPECT_EQ(core::ev::encode(typed), e.payload) << "the struct writes the stored bytes";
    EXPECT_TRUE(core::ev::same(typed, core::ev::from_json(e.type, c.events[i].at("payload"))));
    ++types[e.type];
  }
  EXPECT_EQ(types, f.types);
  EXPECT_EQ(c.trailer.at("chain_head").at("seq"), store->last_seq());
  EXPECT_EQ(util::to_hex(store->read(store->last_seq(), 1).at(0).hash), c.trailer.at("chain_head").at("hash").get<std::string>());

  const auto verified = replay::verify_log(*store, {});
  EXPECT_TRUE(verified.ok) << verified.reason;
  EXPECT_EQ(verified.events, f.events);

  auto again = replay::rederive_decisions(*store);
  EXPECT_EQ(again.mismatches, f.mismatches) << (again.problems.empty() ? "" : again.problems.front());
  EXPECT_EQ(again.unchecked, 0u) << "every decision re-derived, none only replayed";
  EXPECT_EQ(again.decisions, f.rederived.decisions);
  EXPECT_EQ(again.assignments, f.rederived.assignments);
  EXPECT_EQ(again.recalculations, f.rederived.recalculations);
  EXPECT_EQ(again.plans, f.rederived.plans);
  EXPECT_EQ(again.preemption_decisions, f.rederived.preemption_decisions);
  EXPECT_EQ(again.provisioning_plans, f.rederived.provisioning_plans);
  EXPECT_EQ(again.salad_targets, f.rederived.salad_targets);
  EXPECT_EQ(again.reaps, f.rederived.reaps);
  EXPECT_EQ(again.storage_decisions, f.rederived.storage_decisions);
  replay::leave_world_to_exit(again);

  const auto recovered = replay::recover_world(*store);
  EXPECT_EQ(recovered.last_seq, f.events);
  EXPECT_EQ(recovered.world.jobs.size(), f.jobs);
}

INSTANTIATE_TEST_SUITE_P(logs, Corpus, ::testing::ValuesIn(corpus_files()), [](const auto& info) {
  std::string name = info.param.file;  // before-typed-events-N.jsonl -> file_N
  name = name.substr(name.rfind('-') + 1);
  return "file_" + name.substr(0, name.find('.'));
});

// The files together hold each of these types, read from the files themselves (not from the
// expectations above): the whole catalogue. No catalogue type is missing from the old logs; no
// test of the old code wrote storage.upload_released, so before-typed-events-18 is a batond of
// that code driven by hand (README.md).
TEST(Corpus, TheFilesTogetherHoldEveryTypeOfTheCatalogue) {
  const std::set<std::string> covered{"job.created",
                                      "job.assigned",
                                      "job.started",
                                      "job.checkpointed",
                                      "job.progress_reported",
                                      "job.handoff_started",
                                      "job.handoff_completed",
                                      "job.completed",
                                      "job.failed",
                                      "job.cancel_requested",
                                      "job.cancelled",
                                      "job.requeued_after_deregister",
                                      "job.requeued_after_reap",
                                      "job.requeued_after_orphan",
                                      "job.requeued_after_preempt",
                                      "job.requeued_as",
                                      "job.pruned",
                                      "job.held",
                                      "job.released",
                                      "job.preempted",
                                      "worker.registered",
                                      "worker.placeholder_adopted",
                                      "worker.deregistered",
                                      "worker.credential_rotated",
                                      "worker.reaped",
                                      "worker.placeholder_created",
                                      "worker.placeholder_removed",
                                      "cluster.submission_failed",
                                      "cluster.enabled",
                                      "cluster.disabled",
                                      "cloud.scaled",
                                      "cloud.scale_failed",
                                      "operator.created",
                                      "operator.revoked",
                                      "operator.token_rotated",
                                      "pilot.token_rotated",
                                      "scheduler.priorities_recalculated",
                                      "scheduler.priorities_applied",
                                      "scheduler.plan_made",
                                      "scheduler.preemptions_decided",
                                      "storage.blob_stored",
                                      "storage.upload_held",
                                      "storage.upload_released",
                                      "storage.job_bound",
                                      "storage.quota_refused",
                                      "storage.files_stored",
                                      "storage.blob_removing",
                                      "storage.blob_removed",
                                      "storage.blob_corrupt",
                                      "storage.job_released",
                                      "daemon.started",
                                      "daemon.stopped",
                                      "daemon.log_truncated"};
  std::set<std::string> in_files;
  for (const auto& f : corpus_files())
    for (const auto& e : read_corpus(f.file).events) in_files.insert(e.at("type").get<std::string>());
  EXPECT_EQ(in_files, covered);
  // A type the catalogue gains later cannot be in a log written before typed events: it goes
  // here, so that the catalogue is the covered types and these.
  const std::set<std::string> newer_than_the_corpus{};
  std::set<std::string> catalogue, expected = covered;
  for (auto t : core::ev::known_types()) catalogue.insert(std::string(t));
  expected.insert(newer_than_the_corpus.begin(), newer_than_the_corpus.end());
  EXPECT_EQ(catalogue, expected);
}
