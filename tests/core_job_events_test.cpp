// core/jobs/job_events: evolve() visits a job event's typed payload. The JSON form of evolve is
// the payload read as its struct, then that visit; these tests pin both (every field, the
// fallbacks that depend on the job, unknown types, a payload that does not read, the moving and
// the copying visit) so a replay that reads on another thread applies what batond applied.
#include "core/jobs/job_events.hpp"

#include <gtest/gtest.h>

#include "core/jobs/job.hpp"

using namespace baton::core;
using nlohmann::json;

namespace {

constexpr time_us t0 = 1'700'000'000'000'000;

job applied(job j, const std::string& type, const json& p, time_us at = t0) {
  evolve(j, type, p, at);
  return j;
}

}  // namespace

TEST(JobEvents, EveryJobEventTypeHasItsKindAndOthersAreUnknown) {
  const std::pair<const char*, job_event> names[] = {{"job.created", job_event::created},
                                                     {"job.assigned", job_event::assigned},
                                                     {"job.started", job_event::started},
                                                     {"job.checkpointed", job_event::checkpointed},
                                                     {"job.progress_reported", job_event::progress_reported},
                                                     {"job.handoff_started", job_event::handoff_started},
                                                     {"job.handoff_completed", job_event::handoff_completed},
                                                     {"job.requeued_after_deregister", job_event::requeued_after_deregister},
                                                     {"job.requeued_after_reap", job_event::requeued_after_reap},
                                                     {"job.requeued_after_orphan", job_event::requeued_after_orphan},
                                                     {"job.requeued_after_preempt", job_event::requeued_after_preempt},
                                                     {"job.completed", job_event::completed},
                                                     {"job.failed", job_event::failed},
                                                     {"job.cancel_requested", job_event::cancel_requested},
                                                     {"job.cancelled", job_event::cancelled},
                                                     {"job.requeued_as", job_event::requeued_as},
                                                     {"job.pruned", job_event::pruned},
                                                     {"job.held", job_event::held},
                                                     {"job.released", job_event::released},
                                                     {"job.preempted", job_event::preempted}};
  for (const auto& [name, kind] : names) EXPECT_EQ(job_event_of(name), kind) << name;
  for (const char* other : {"job.create", "job.created ", "worker.registered", "", "job.assigned.v2"})
    EXPECT_EQ(job_event_of(other), job_event::other) << other;

  // An unknown type changes nothing but the job's updated_at (forward compatibility).
  job j = applied(job{}, "job.created", {{"title", "t"}, {"gpu_count", 2}});
  job k = applied(j, "job.renamed", {{"title", "new"}}, t0 + 5);
  EXPECT_EQ(k.title, "t");
  EXPECT_EQ(k.gpu_count, 2u);
  EXPECT_EQ(k.updated_at, t0 + 5);
  EXPECT_EQ(k.status, job_status::queued);
}

TEST(JobEvents, ACreatedEventReadsEveryFieldAndTheDefaultsOfAbsentOnes) {
  json p = {{"title", "md"},
            {"input_bundle_path", "/b"},
            {"worker_image_key", "img"},
            {"preferred_clusters", {"a", "b"}},
            {"comment", "c"},
            {"max_attempts", 9},
            {"requeued_from", "old"},
            {"latest_checkpoint_manifest_path", "/m"},
            {"last_checkpoint_at_us", 0},
            {"user", "u"},
            {"account", "acc"},
            {"partition", "gpu"},
            {"qos", "high"},
            {"nice", -5},
            {"gpu_count", 4},
            {"time_limit_seconds", 3600},
            {"checkpoints", false},
            {"requeue", false},
            {"interactive", true},
            {"conformance", "fp"},
            {"checkpoint_seconds", 12.5},
            {"hold", true},
            {"depends_on", {{{"job_id", "p"}, {"condition", "afterok"}}}}};
  job j = applied(job{}, "job.created", p);
  EXPECT_EQ(j.title, "md");
  EXPECT_EQ(j.input_bundle_path, "/b");
  EXPECT_EQ(j.worker_image_key, "img");
  EXPECT_EQ(j.preferred_clusters, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(j.comment, "c");
  EXPECT_EQ(j.max_attempts, 9u);
  EXPECT_EQ(j.requeued_from, "old");
  EXPECT_EQ(j.latest_checkpoint_manifest_path, "/m");
  EXPECT_EQ(j.last_checkpoint_at, time_us{0}) << "present, even as 0";
  EXPECT_EQ(j.user, "u");
  EXPECT_EQ(j.account, "acc");
  EXPECT_EQ(j.partition, "gpu");
  EXPECT_EQ(j.qos, "high");
  EXPECT_EQ(j.nice, -5);
  EXPECT_EQ(j.gpu_count, 4u);
  EXPECT_EQ(j.time_limit_seconds, int64_t{3600});
  EXPECT_FALSE(j.checkpoints);
  EXPECT_FALSE(j.requeue);
  EXPECT_TRUE(j.interactive);
  EXPECT_EQ(j.conformance, "fp");
  EXPECT_EQ(j.checkpoint_seconds, 12.5);
  EXPECT_TRUE(j.held);
  ASSERT_EQ(j.depends_on.size(), 1u);
  EXPECT_EQ(j.depends_on[0].job_id, "p");
  EXPECT_EQ(j.created_at, t0);
  EXPECT_EQ(j.status, job_status::queued);

  job d = applied(job{}, "job.created", {{"time_limit_seconds", "long"}, {"gpu_count", -1}});
  EXPECT_EQ(d.max_attempts, 5u);
  EXPECT_EQ(d.gpu_count, 1u) << "not a count: the default";
  EXPECT_FALSE(d.time_limit_seconds) << "not a number: no limit";
  EXPECT_FALSE(d.last_checkpoint_at);
  EXPECT_TRUE(d.checkpoints);
  EXPECT_TRUE(d.requeue);
  EXPECT_FALSE(d.held);
}

TEST(JobEvents, FallbacksThatDependOnTheJobAreTakenFromTheJobItIsAppliedTo) {
  job j = applied(job{}, "job.created", {{"title", "t"}});
  j.attempts = 3;
  EXPECT_EQ(applied(j, "job.assigned", {{"worker_id", "w"}}).attempts, 4u) << "no attempt recorded: the next one";
  EXPECT_EQ(applied(j, "job.assigned", {{"worker_id", "w"}, {"attempt", "x"}}).attempts, 4u);
  EXPECT_EQ(applied(j, "job.assigned", {{"worker_id", "w"}, {"attempt", 7}}).attempts, 7u);
  job a = applied(j, "job.assigned", {{"worker_id", "w"}, {"decision", {{"conformance_pin", "fp"}}}}, t0 + 9);
  EXPECT_EQ(a.assigned_worker_id, "w");
  EXPECT_EQ(a.conformance, "fp");
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_EQ(a.segments[0].worker_id, "w");
  EXPECT_EQ(a.segments[0].started_at, t0 + 9);

  j.priority = 11;
  j.priority_tier = 2;
  job p = applied(j, "job.pruned", json::object());
  EXPECT_TRUE(p.pruned);
  EXPECT_EQ(p.priority, 11) << "none recorded: the job keeps its own";
  EXPECT_EQ(p.priority_tier, 2);
  p = applied(j, "job.pruned", {{"priority", 40}, {"priority_tier", 1}});
  EXPECT_EQ(p.priority, 40);
  EXPECT_EQ(p.priority_tier, 1);

  job running = applied(applied(j, "job.assigned", {{"worker_id", "w"}}), "job.started", json::object());
  job pre = applied(running, "job.preempted", {{"by", "vip"}, {"grace_until", "not a time"}}, t0 + 77);
  EXPECT_EQ(pre.preempted_by, "vip");
  EXPECT_EQ(pre.preempt_mode, "requeue");
  EXPECT_EQ(pre.preempt_grace_until, t0 + 77) << "unreadable: the event's own time";
  EXPECT_EQ(pre.preemptions, 1u);
  job cancel = applied(running, "job.preempted", {{"by", "vip"}, {"mode", "cancel"}}, t0 + 78);
  EXPECT_EQ(cancel.status, job_status::cancelling);
  EXPECT_EQ(cancel.failure_reason, "preempted");
  job back = applied(pre, "job.requeued_after_reap", {{"checkpoint_manifest_path", "/ck"}, {"progress", 0.5}}, t0 + 80);
  EXPECT_EQ(back.status, job_status::queued);
  EXPECT_EQ(back.lost_workers, 1u);
  EXPECT_EQ(back.latest_checkpoint_manifest_path, "/ck");
  EXPECT_EQ(back.last_checkpoint_at, t0 + 80);
  EXPECT_EQ(back.progress, 0.5);
  EXPECT_TRUE(back.assigned_worker_id.empty());
  EXPECT_TRUE(back.preempted_by.empty()) << "it left its worker: the preemption is over";
  EXPECT_EQ(back.segments.back().ended_at, t0 + 80);
  EXPECT_EQ(applied(pre, "job.requeued_after_deregister", json::object()).lost_workers, 0u);

  job failed = applied(running, "job.failed", {{"failure_artifact_path", "/f"}});
  EXPECT_EQ(failed.failure_reason, "") << "no reason recorded";
  EXPECT_EQ(failed.latest_failure_artifact_path, "/f");
  job cancelled = applied(j, "job.cancelled", json::object());
  EXPECT_EQ(cancelled.status, job_status::cancelled);
  EXPECT_EQ(cancelled.failure_reason, "") << "no reason: the job's own (none)";
}

TEST(JobEvents, APayloadThatDoesNotReadThrowsAndLeavesTheJobAsItWas) {
  job j = applied(job{}, "job.created", {{"title", "t"}});
  job before = j;
  using baton::events::payload_error;
  EXPECT_THROW(ev::from_json("job.assigned", {{"worker_id", 5}}), payload_error);
  EXPECT_THROW(evolve(j, "job.assigned", {{"worker_id", 5}}, t0 + 1), payload_error);
  EXPECT_THROW(evolve(j, "job.assigned", json::object(), t0 + 1), payload_error) << "worker_id is required";
  EXPECT_THROW(evolve(j, "job.checkpointed", {{"progress", "half"}}, t0 + 1), payload_error);
  try {
    evolve(j, "job.requeued_as", json::object(), t0 + 1);
    ADD_FAILURE() << "new_job_id is required";
  } catch (const payload_error& e) {
    EXPECT_EQ(e.field, "new_job_id");
  }
  EXPECT_EQ(j.updated_at, before.updated_at);
  EXPECT_EQ(j.status, before.status);
  EXPECT_TRUE(j.segments.empty());
}

// The moving visit (a replay's, the payload read on another thread) and the copying one
// (batond's, the decision's events kept for the append) leave the same job, event by event,
// and a payload kept as its bytes (ev::unknown_event) applies as what its bytes say.
TEST(JobEvents, MovingCopyingAndKeptAsBytesApplyTheSame) {
  const std::vector<std::pair<std::string, json>> events = {
      {"job.created",
       {{"title", "t"},
        {"input_bundle_path", "/b"},
        {"preferred_clusters", {"a"}},
        {"depends_on", {{{"job_id", "p"}, {"condition", "afterany"}}}}}},
      {"job.assigned", {{"worker_id", "w"}, {"attempt", 1}, {"decision", {{"conformance_pin", "fp"}}}}},
      {"job.started", {{"worker_id", "w"}}},
      {"job.checkpointed",
       {{"worker_id", "w"}, {"checkpoint_manifest_path", "/m1"}, {"progress", 0.25}, {"progress_codes", {1, 2}}}},
      {"job.progress_reported", {{"worker_id", "w"}, {"progress", 0.3}}},
      {"job.handoff_started", {{"worker_id", "w"}, {"reason", "walltime"}}},
      {"job.handoff_completed", {{"worker_id", "w"}, {"checkpoint_manifest_path", "/m2"}, {"checkpoint_cycle_status", "ok"}}},
      {"job.held", {{"admin", true}}},
      {"job.released", json::object()},
      {"job.assigned", {{"worker_id", "v"}}},
      {"job.preempted", {{"by", "vip"}, {"grace_until", "2026-12-06T10:00:00Z"}, {"mode", "requeue"}, {"worker_id", "v"}}},
      {"job.requeued_after_preempt", {{"worker_id", "v"}, {"from_status", "assigned"}, {"by", "vip"}}},
      {"job.assigned", {{"worker_id", "u"}}},
      {"job.requeued_after_orphan", {{"worker_id", "u"}, {"from_status", "assigned"}}},
      {"job.assigned", {{"worker_id", "x"}}},
      {"job.failed", {{"worker_id", "x"}, {"reason", "exit 3"}, {"failure_artifact_path", "/f"}}},
      {"job.requeued_as", {{"new_job_id", "n"}}},
      {"job.pruned", {{"priority", 5}, {"priority_tier", 1}}},
      {"job.renamed", {{"title", "other"}}}};
  job moved, copied, from_bytes;
  time_us at = t0;
  for (const auto& [type, p] : events) {
    SCOPED_TRACE(type);
    at += 1'000'000;
    const ev::payload typed = ev::from_json(type, p);
    evolve(moved, ev::payload(typed), at);
    evolve(copied, typed, at);
    const auto cbor = json::to_cbor(p);
    evolve(from_bytes, ev::payload(ev::unknown_event{type, 1, std::string(cbor.begin(), cbor.end())}), at);
    EXPECT_EQ(to_json(moved, at), to_json(copied, at));
    EXPECT_EQ(to_json(moved, at), to_json(from_bytes, at));
  }
  EXPECT_EQ(moved.status, job_status::failed);
  EXPECT_EQ(moved.attempts, 4u);
  EXPECT_EQ(moved.lost_workers, 1u);
  EXPECT_EQ(moved.preemptions, 1u);
  EXPECT_EQ(moved.conformance, "fp");
  EXPECT_EQ(moved.latest_checkpoint_manifest_path, "/m2");
  EXPECT_EQ(moved.requeued_to, std::vector<std::string>{"n"});
  EXPECT_EQ(moved.priority, 5);
  EXPECT_TRUE(moved.pruned);
  EXPECT_EQ(job_event_of(ev::from_json("job.pruned", json::object())), job_event::pruned);
  EXPECT_EQ(job_event_of(ev::payload(ev::unknown_event{"job.held", 1, ""})), job_event::held);
  EXPECT_EQ(job_event_of(ev::payload(ev::unknown_event{"job.renamed", 1, ""})), job_event::other);
}
