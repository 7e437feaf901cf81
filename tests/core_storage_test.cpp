// The data plane's rules in the core (core/app/storage_decide.hpp): who may store and read which
// blob, the quota, file sets and the checkpoints a job keeps, what a prune and the collector
// release, and that a replay or a snapshot rebuilds the same book.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <algorithm>

#include "core/app/storage_decide.hpp"
#include "core/world/world_snapshot.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;
namespace R = core::results;

namespace {

core::blob_ref blob(char c, uint64_t size) { return {std::string(64, c), size}; }

struct storage_fixture : test::core_under_test {
  principal admin = principal::operator_named("admin");
  principal alice = principal::named_operator("alice", false);
  principal bob = principal::named_operator("bob", false);

  // An upload of `b` by `who` that the shell reports as arrived: the plan said "send it".
  void upload(const principal& who, const core::blob_ref& b) {
    auto plan = run(who, C::blob_upload{b});
    ASSERT_FALSE(plan.answer.error);
    ASSERT_EQ(std::get<R::storage_plan>(plan.answer.value).to_upload.size(), 1u);
    auto done = run(who, C::blob_uploaded{b});
    ASSERT_FALSE(done.answer.error) << done.answer.error->message;
  }
  core::outcome create(const principal& who, const std::string& name, const core::blob_ref& bundle) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle = bundle;
    return run(who, c);
  }
  // A job of alice's, stored bundle, assigned to worker w1; its id.
  std::string running_job(const core::blob_ref& bundle) {
    upload(alice, bundle);
    auto o = create(alice, "job", bundle);
    EXPECT_FALSE(o.answer.error);
    register_worker(test::uid("w1"));
    EXPECT_EQ(poll(test::uid("w1")), test::uid("job"));
    return test::uid("job");
  }
  core::outcome begin(const std::string& worker, const std::string& job, std::vector<core::stored_file> files,
                      uint32_t attempt = 1, const std::string& kind = "checkpoint") {
    return run(principal::of_worker(worker), C::files_begin{job, kind, attempt, std::move(files)});
  }
  core::outcome commit(const std::string& worker, const std::string& job, const std::string& set_id,
                       std::vector<core::stored_file> files, std::vector<core::blob_ref> verified, uint32_t attempt = 1,
                       const std::string& kind = "checkpoint") {
    return run(principal::of_worker(worker),
               C::files_commit{job, set_id, kind, attempt, std::move(files), std::move(verified), {}});
  }
  static std::vector<std::string> types(const core::outcome& o) {
    std::vector<std::string> t;
    for (const auto& e : o.events) t.push_back(std::string(e.type()));
    return t;
  }
};

TEST(core_storage, ABundleIsUploadedOnceAndHeldByItsUploaderOnly) {
  storage_fixture f;
  auto b = blob('a', 100);
  f.upload(f.alice, b);
  EXPECT_TRUE(core::holds_blob(f.w.storage, "alice", b.sha256));
  EXPECT_EQ(f.w.storage.used_by_user.at("alice"), 100u);
  auto again = f.run(f.alice, C::blob_upload{b});
  EXPECT_TRUE(std::get<R::storage_plan>(again.answer.value).to_upload.empty()) << "held already: nothing to send";
  // Bob knows the digest but not the bytes: he must send them (whoever names a digest proves it).
  auto bobs = f.run(f.bob, C::blob_upload{b});
  EXPECT_EQ(std::get<R::storage_plan>(bobs.answer.value).to_upload.size(), 1u);
  auto used = f.create(f.bob, "bobs", b);
  ASSERT_TRUE(used.answer.error);
  EXPECT_EQ(used.answer.error->code, "unknown_bundle") << "another user's blob is not his to use";
  EXPECT_EQ(used.answer.error->field, "input_bundle");
}

TEST(core_storage, AJobBindsItsBundleAndTheUploadsOwnHoldGoes) {
  storage_fixture f;
  auto b = blob('a', 100);
  f.upload(f.alice, b);
  auto o = f.create(f.alice, "j", b);
  ASSERT_FALSE(o.answer.error);
  EXPECT_EQ(f.w.find_job(test::uid("j"))->input_bundle_path, core::blob_uri(b));
  EXPECT_TRUE(f.w.storage.unclaimed.empty()) << "the upload is used: its own hold went";
  EXPECT_EQ(f.w.storage.blobs.at(b.sha256).holds, 1u);
  EXPECT_EQ(f.w.storage.used_by_user.at("alice"), 100u);
  // An admin may use any stored blob, for anyone.
  C::create_job c;
  c.id = test::uid("for-bob");
  c.title = "t";
  c.input_bundle = b;
  c.user = "bob";
  ASSERT_FALSE(f.run(f.admin, c).answer.error);
  EXPECT_EQ(f.w.storage.used_by_user.at("bob"), 100u);
  EXPECT_EQ(f.w.storage.blobs.at(b.sha256).holds, 2u);
  auto missing = f.create(f.alice, "nothing", blob('f', 5));
  ASSERT_TRUE(missing.answer.error);
  EXPECT_EQ(missing.answer.error->code, "unknown_bundle");
}

TEST(core_storage, TheQuotaRefusesWithAnEventNamingIt) {
  storage_fixture f;
  f.s.storage.user_quota_bytes = 150;
  f.upload(f.alice, blob('a', 100));
  auto o = f.run(f.alice, C::blob_upload{blob('b', 60)});
  ASSERT_FALSE(o.answer.error) << "the refusal is a result: its event is recorded";
  const auto& plan = std::get<R::storage_plan>(o.answer.value);
  ASSERT_TRUE(plan.refused);
  EXPECT_EQ(plan.refused->kind, core::error_kind::no_space);
  EXPECT_EQ(plan.refused->details["quota"], "storage.user_quota_bytes");
  EXPECT_EQ(plan.refused->details["used_bytes"], 100);
  EXPECT_EQ(plan.refused->details["requested_bytes"], 60);
  ASSERT_EQ(o.events.size(), 1u);
  EXPECT_EQ(o.events[0].type(), "storage.quota_refused");
  EXPECT_TRUE(std::get<R::storage_plan>(f.run(f.bob, C::blob_upload{blob('b', 60)}).answer.value).to_upload.size() == 1)
      << "another user's quota is their own";
}

TEST(core_storage, OnlyTheAssignedWorkerInItsCurrentAttemptWritesFiles) {
  storage_fixture f;
  auto job = f.running_job(blob('a', 10));
  f.register_worker(test::uid("w2"));
  std::vector<core::stored_file> files{{"state.chk", blob('c', 7)}};
  auto other = f.begin(test::uid("w2"), job, files);
  ASSERT_TRUE(other.answer.error);
  EXPECT_EQ(other.answer.error->code, "job_not_assigned_to_worker");
  auto old = f.begin(test::uid("w1"), job, files, 7);
  ASSERT_TRUE(old.answer.error);
  EXPECT_EQ(old.answer.error->code, "attempt_finished");
  auto bad = f.begin(test::uid("w1"), job, {{"../escape", blob('c', 7)}});
  ASSERT_TRUE(bad.answer.error);
  EXPECT_EQ(bad.answer.error->field, "files[0].path");
  auto ok = f.begin(test::uid("w1"), job, files);
  ASSERT_FALSE(ok.answer.error);
  EXPECT_EQ(std::get<R::storage_plan>(ok.answer.value).to_upload, (std::vector<core::blob_ref>{blob('c', 7)}));
  // Committing before the bytes arrived names the file.
  auto early = f.commit(test::uid("w1"), job, test::uid("set1"), files, {});
  ASSERT_TRUE(early.answer.error);
  EXPECT_EQ(early.answer.error->code, "upload_incomplete");
  EXPECT_EQ(early.answer.error->details["path"], "state.chk");
}

TEST(core_storage, ACommittedCheckpointIsTheJobsLatestAndTheOldestBeyondKeepAreReleased) {
  storage_fixture f;
  f.s.storage.keep_checkpoints = 2;
  auto job = f.running_job(blob('a', 10));
  const auto w1 = test::uid("w1");
  std::vector<std::string> sets;
  for (int i = 0; i < 3; ++i) {
    auto b = blob(static_cast<char>('1' + i), 10 + i);
    std::vector<core::stored_file> files{{"state.chk", b}, {"topology.pdb", blob('e', 5)}};
    auto set = test::uid("set" + std::to_string(i));
    std::vector<core::blob_ref> verified{b};
    if (i == 0) verified.push_back(blob('e', 5));
    auto o = f.commit(w1, job, set, files, verified);
    ASSERT_FALSE(o.answer.error) << o.answer.error->message;
    sets.push_back(set);
    EXPECT_EQ(f.w.find_job(job)->latest_checkpoint_manifest_path, core::set_uri(set));
    if (i == 2) {
      EXPECT_EQ(storage_fixture::types(o),
                (std::vector<std::string>{"storage.blob_stored", "storage.files_stored", "job.checkpointed"}));
      EXPECT_EQ(baton::core::payload_json(o.events[1])["released"], nlohmann::json::array({sets[0]}));
      EXPECT_EQ(baton::core::payload_json(o.events[1])["keep"], 2);
    }
  }
  const auto* js = core::job_files_of(f.w.storage, job);
  ASSERT_TRUE(js);
  ASSERT_EQ(js->checkpoints.size(), 2u);
  EXPECT_EQ(js->checkpoints[0].id, sets[1]);
  EXPECT_EQ(f.w.storage.unreferenced, (std::set<std::string>{blob('1', 10).sha256}))
      << "the first checkpoint's own file is held by nothing now; the unchanged topology still is";
  // The same commit again (its reply was lost): answered, nothing recorded twice.
  auto again = f.commit(w1, job, sets[2], {}, {});
  ASSERT_FALSE(again.answer.error);
  EXPECT_TRUE(again.events.empty());
}

// Re-derivation of what a commit released goes by the keep recorded with it; a record without
// one (a hand-made log: batond always writes it) reads as the default, three, as before typed events.
TEST(core_storage, ReleasedCheckpointsRederiveByTheRecordedKeepOrTheDefault) {
  storage_fixture f;
  f.s.storage.keep_checkpoints = 2;
  auto job = f.running_job(blob('a', 10));
  std::vector<std::string> sets;
  for (int i = 0; i < 3; ++i) {
    auto b = blob(static_cast<char>('1' + i), 10 + i);
    sets.push_back(test::uid("set" + std::to_string(i)));
    auto o = f.commit(test::uid("w1"), job, sets.back(), {{"state.chk", b}}, {b});
    ASSERT_FALSE(o.answer.error) << o.answer.error->message;
  }
  ASSERT_EQ(core::job_files_of(f.w.storage, job)->checkpoints.size(), 2u);
  core::ev::files_stored next;  // a fourth checkpoint's record
  next.job_id = job;
  next.set.kind = "checkpoint";
  next.keep = 2;
  next.released = {sets[1]};
  EXPECT_EQ(core::rederive_storage(f.w, next), std::nullopt);
  next.keep = 0;  // none recorded: three kept, nothing released
  EXPECT_NE(core::rederive_storage(f.w, next), std::nullopt);
  next.released.clear();
  EXPECT_EQ(core::rederive_storage(f.w, next), std::nullopt);
}

TEST(core_storage, AWorkerReadsItsJobsBundleAndLatestCheckpointAnOperatorTheirOwnJobsFiles) {
  storage_fixture f;
  auto job = f.running_job(blob('a', 10));
  const auto w1 = test::uid("w1");
  ASSERT_FALSE(f.commit(w1, job, test::uid("s1"), {{"x", blob('1', 1)}}, {blob('1', 1)}).answer.error);
  ASSERT_FALSE(f.commit(w1, job, test::uid("s2"), {{"x", blob('2', 1)}}, {blob('2', 1)}).answer.error);
  auto mine = f.run(principal::of_worker(w1), C::job_files{job});
  ASSERT_FALSE(mine.answer.error);
  const auto& v = std::get<R::job_files>(mine.answer.value);
  ASSERT_TRUE(v.bundle);
  EXPECT_EQ(*v.bundle, blob('a', 10));
  ASSERT_EQ(v.checkpoints.size(), 1u);
  EXPECT_EQ(v.checkpoints[0].id, test::uid("s2"));
  f.register_worker(test::uid("w2"));
  EXPECT_TRUE(f.run(principal::of_worker(test::uid("w2")), C::job_files{job}).answer.error) << "another worker's job";
  auto bobs = f.run(f.bob, C::job_files{job});
  ASSERT_TRUE(bobs.answer.error);
  EXPECT_EQ(bobs.answer.error->kind, core::error_kind::not_found) << "another user's job does not exist for him";
  auto owner = f.run(f.alice, C::job_files{job});
  EXPECT_EQ(std::get<R::job_files>(owner.answer.value).checkpoints.size(), 2u);
  EXPECT_FALSE(f.run(f.admin, C::job_files{job}).answer.error);
  EXPECT_TRUE(f.run(principal::pilot_token(), C::job_files{job}).answer.error);
}

TEST(core_storage, OutputsOnlyWhileRunningAndTheyReplaceEarlierOnes) {
  storage_fixture f;
  auto job = f.running_job(blob('a', 10));
  const auto w1 = test::uid("w1");
  ASSERT_FALSE(f.commit(w1, job, test::uid("o1"), {{"out.dat", blob('5', 3)}}, {blob('5', 3)}, 1, "output").answer.error);
  ASSERT_FALSE(f.commit(w1, job, test::uid("o2"), {{"out.dat", blob('6', 3)}}, {blob('6', 3)}, 1, "output").answer.error);
  const auto* js = core::job_files_of(f.w.storage, job);
  ASSERT_TRUE(js && js->outputs);
  EXPECT_EQ(js->outputs->id, test::uid("o2"));
  EXPECT_TRUE(f.w.storage.unreferenced.count(blob('5', 3).sha256));
  ASSERT_FALSE(f.run(principal::of_worker(w1), C::complete_job{job}).answer.error);
  auto late = f.begin(w1, job, {{"late.dat", blob('7', 1)}}, 1, "output");
  ASSERT_TRUE(late.answer.error);
  EXPECT_EQ(late.answer.error->code, "job_not_accepting_files") << "a finished attempt's upload is refused";
}

TEST(core_storage, PruningReleasesAndTheCollectorRemovesWhatNothingHolds) {
  storage_fixture f;
  auto job = f.running_job(blob('a', 10));
  const auto w1 = test::uid("w1");
  ASSERT_FALSE(f.commit(w1, job, test::uid("s1"), {{"x", blob('1', 4)}}, {blob('1', 4)}).answer.error);
  ASSERT_FALSE(f.run(principal::of_worker(w1), C::complete_job{job}).answer.error);
  f.now += 3600'000'000LL;
  ASSERT_EQ(std::get<R::pruned>(f.run(f.admin, C::prune_jobs{{"completed"}, 60}).answer.value).count, 1u);
  EXPECT_FALSE(core::job_files_of(f.w.storage, job));
  EXPECT_EQ(f.w.storage.unreferenced.size(), 2u);
  EXPECT_EQ(f.w.storage.used_by_user.count("alice"), 0u);
  auto collect = f.run(principal::loop(), C::storage_collect{});
  ASSERT_FALSE(collect.answer.error);
  auto list = std::get<R::blobs_to_remove>(collect.answer.value).items;
  EXPECT_EQ(list.size(), 2u);
  EXPECT_TRUE(f.w.storage.unreferenced.empty());
  EXPECT_TRUE(f.w.storage.blobs.at(blob('a', 10).sha256).removing);
  // While it is being removed, nobody stores it as held: it is sent again.
  auto re = f.run(f.alice, C::blob_upload{blob('a', 10)});
  EXPECT_EQ(std::get<R::storage_plan>(re.answer.value).to_upload.size(), 1u);
  EXPECT_EQ(f.run(f.alice, C::blob_uploaded{blob('a', 10)}).answer.error->code, "blob_being_removed");
  ASSERT_FALSE(f.run(principal::loop(), C::storage_removed{{blob('a', 10).sha256, blob('1', 4).sha256}}).answer.error);
  EXPECT_TRUE(f.w.storage.blobs.empty());
  EXPECT_EQ(f.w.storage.stored_bytes, 0u);
  EXPECT_EQ(f.run(f.alice, C::storage_collect{}).answer.error->code, "internal_only");
}

TEST(core_storage, UnclaimedUploadsAreReleasedAfterTheirTime) {
  storage_fixture f;
  f.upload(f.alice, blob('a', 10));
  ASSERT_TRUE(std::get<R::blobs_to_remove>(f.run(principal::loop(), C::storage_collect{}).answer.value).items.empty());
  f.now += f.s.storage.unclaimed_upload_seconds * 1'000'000;
  f.run(principal::loop(), C::storage_collect{});
  EXPECT_TRUE(f.w.storage.unclaimed.empty());
  auto second = f.run(principal::loop(), C::storage_collect{});
  EXPECT_EQ(std::get<R::blobs_to_remove>(second.answer.value).items.size(), 1u);
}

TEST(core_storage, AReplayAndASnapshotRebuildTheSameBook) {
  storage_fixture f;
  f.s.storage.keep_checkpoints = 2;
  auto job = f.running_job(blob('a', 10));
  const auto w1 = test::uid("w1");
  for (int i = 0; i < 4; ++i) {
    auto b = blob(static_cast<char>('1' + i), 3);
    ASSERT_FALSE(f.commit(w1, job, test::uid("s" + std::to_string(i)), {{"x", b}}, {b}).answer.error);
  }
  f.upload(f.bob, blob('b', 9));
  C::requeue_job rq{job, test::uid("clone")};
  ASSERT_FALSE(f.run(principal::of_worker(w1), C::complete_job{job}).answer.error);
  ASSERT_FALSE(f.run(f.alice, rq).answer.error);
  ASSERT_TRUE(core::job_files_of(f.w.storage, test::uid("clone")));
  EXPECT_EQ(core::job_files_of(f.w.storage, test::uid("clone"))->checkpoints.size(), 1u) << "the clone resumes from the latest";

  core::world replayed;
  for (const auto& [d, at] : f.log) core::apply(replayed, d, at);
  EXPECT_EQ(core::to_json(replayed.storage), core::to_json(f.w.storage));
  EXPECT_EQ(replayed.storage.used_by_user, f.w.storage.used_by_user);
  EXPECT_EQ(replayed.storage.unreferenced, f.w.storage.unreferenced);

  auto snap = core::decode_world_snapshot(core::encode_world_snapshot(f.w, "h"));
  EXPECT_EQ(core::to_json(snap.w.storage), core::to_json(f.w.storage));
  EXPECT_EQ(snap.w.storage.holds, f.w.storage.holds);
  EXPECT_EQ(snap.w.storage.used_by_user, f.w.storage.used_by_user);
  EXPECT_EQ(snap.w.storage.unreferenced, f.w.storage.unreferenced);
  EXPECT_EQ(snap.w.storage.stored_bytes, f.w.storage.stored_bytes);
}

}  // namespace
