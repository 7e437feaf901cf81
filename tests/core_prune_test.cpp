// Pruned jobs leave the world's memory (core/jobs/pruned_jobs.hpp): what stays of them, and
// that every rule still treats them as before: the id stays taken, a dependency on one still
// resolves by its final status, nothing more can happen to one, its owner alone sees it, and
// the world a replay or a snapshot rebuilds is the same.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/world/world_snapshot.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;
namespace R = core::results;

namespace {

constexpr core::time_us minute = 60'000'000;

struct prune_fixture : test::core_under_test {
  principal admin = principal::operator_named("admin");
  principal alice = principal::named_operator("alice", false);
  principal bob = principal::named_operator("bob", false);

  std::string create(const std::string& name, const principal& who, std::vector<core::dependency> deps = {}) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = "title " + name;
    c.input_bundle_path = "/b/" + name;
    c.depends_on = std::move(deps);
    auto o = run(who, c);
    EXPECT_FALSE(o.answer.error) << name << ": " << o.answer.error->message;
    return c.id;
  }
  void cancel(const std::string& id) { ASSERT_FALSE(run(admin, C::cancel_job{id, true}).answer.error); }
  size_t prune(int64_t older_than_seconds = 0) {
    auto o = run(admin, C::prune_jobs{{"completed", "failed", "cancelled"}, older_than_seconds});
    EXPECT_FALSE(o.answer.error);
    return std::get<R::pruned>(o.answer.value).count;
  }
  std::string refusal_code(const principal& who, core::command c) {
    auto o = run(who, std::move(c));
    return o.answer.error ? o.answer.error->code : "accepted";
  }
};

TEST(core_prune, APrunedJobLeavesEveryIndexForAStub) {
  prune_fixture f;
  auto gone = f.create("gone", f.alice);
  f.now += 1;  // created after, though its id sorts before: the listing goes by creation
  auto kept = f.create("kept", f.alice);
  ASSERT_LT(kept, gone);
  f.cancel(gone);
  f.now += minute;
  EXPECT_EQ(f.prune(30), 1u) << "ended over 30 s ago, and only that one";
  EXPECT_EQ(f.prune(30), 0u) << "a pruned job is not pruned twice";

  EXPECT_EQ(f.w.find_job(gone), nullptr);
  EXPECT_EQ(f.w.jobs.count(gone), 0u);
  ASSERT_TRUE(f.w.find_pruned(gone));
  EXPECT_EQ(f.w.find_pruned(gone)->status, core::job_status::cancelled);
  EXPECT_EQ(f.w.find_pruned(gone)->user, "alice");
  EXPECT_EQ(f.w.status_of_job(gone), core::job_status::cancelled);
  EXPECT_EQ(f.w.status_of_job(kept), core::job_status::queued);
  EXPECT_FALSE(f.w.status_of_job(test::uid("never")));
  EXPECT_EQ(f.w.by_created.size(), 1u) << "the live jobs' index";
  std::vector<std::string> listed;
  std::vector<bool> whole;
  core::for_each_job_by_created(f.w, false, [&](const std::string& id, const core::job* j) {
    listed.push_back(id);
    whole.push_back(j != nullptr);
    if (j) {
      EXPECT_EQ(j->id, id);
    }
  });
  EXPECT_EQ(listed, (std::vector<std::string>{gone, kept})) << "still listed on request, in creation order";
  EXPECT_EQ(whole, (std::vector<bool>{false, true})) << "the job handed with its id, none for the pruned one's stub";
  EXPECT_EQ(f.w.active_jobs_by_user.at("alice"), 1u);
}

TEST(core_prune, ThePrunedIdStaysTakenAndNothingMoreHappensToIt) {
  prune_fixture f;
  auto gone = f.create("gone", f.alice);
  f.cancel(gone);
  f.now += minute;
  ASSERT_EQ(f.prune(), 1u);

  C::create_job again;
  again.id = gone;
  again.title = "again";
  again.input_bundle_path = "/b";
  EXPECT_EQ(f.refusal_code(f.admin, again), "job_exists");
  EXPECT_EQ(f.refusal_code(f.alice, C::requeue_job{gone, test::uid("clone")}), "job_pruned");
  EXPECT_EQ(f.refusal_code(f.admin, C::cancel_job{gone, true}), "job_pruned");
  EXPECT_EQ(f.refusal_code(f.alice, C::hold_job{gone}), "job_pruned");
  EXPECT_EQ(f.refusal_code(f.alice, C::job_priority{gone}), "job_pruned");
  // Another user learns nothing of it; a worker reporting on it hears 409 (stop).
  EXPECT_EQ(f.refusal_code(f.bob, C::get_job{gone}), "not_found");
  EXPECT_EQ(f.refusal_code(f.bob, C::requeue_job{gone, test::uid("clone")}), "not_found");
  auto w = f.register_worker(test::uid("w1"));
  EXPECT_EQ(f.refusal_code(principal::of_worker(w), C::start_job{gone}), "job_pruned");
  EXPECT_EQ(f.refusal_code(principal::of_worker(w), C::complete_job{gone}), "job_pruned");
}

TEST(core_prune, ItsOwnerGetsAStubRowTheHttpLayerFillsFromTheLog) {
  prune_fixture f;
  auto gone = f.create("gone", f.alice);
  auto live = f.create("live", f.alice);
  f.create("bobs", f.bob);
  f.cancel(gone);
  f.now += minute;
  ASSERT_EQ(f.prune(), 1u);

  auto got = f.run(f.alice, C::get_job{gone});
  ASSERT_FALSE(got.answer.error);
  const auto& row = std::get<R::job_row>(got.answer.value);
  EXPECT_TRUE(row.archived);
  EXPECT_TRUE(row.j.pruned);
  EXPECT_EQ(row.j.id, gone);
  EXPECT_EQ(row.j.status, core::job_status::cancelled);
  EXPECT_FALSE(std::get<R::job_row>(f.run(f.alice, C::get_job{live}).answer.value).archived);

  auto ids = [&](const principal& who, bool include_pruned, std::set<std::string> statuses = {}) {
    C::list_jobs q;
    q.include_pruned = include_pruned;
    q.statuses = std::move(statuses);
    auto o = f.run(who, q);
    std::vector<std::string> out;
    for (const auto& r : std::get<R::job_page>(o.answer.value).items) out.push_back(r.j.id + (r.archived ? " archived" : ""));
    return out;
  };
  EXPECT_EQ(ids(f.alice, false), std::vector<std::string>({live}));
  EXPECT_EQ(ids(f.alice, true), std::vector<std::string>({live, gone + " archived"})) << "newest first";
  EXPECT_EQ(ids(f.alice, true, {"cancelled"}), std::vector<std::string>({gone + " archived"}));
  EXPECT_EQ(ids(f.alice, true, {"queued"}), std::vector<std::string>({live}));
  EXPECT_EQ(ids(f.bob, true).size(), 1u) << "bob's own job only";
  EXPECT_EQ(ids(f.admin, true).size(), 3u);
}

TEST(core_prune, DependenciesOnAPrunedJobResolveByItsFinalStatus) {
  prune_fixture f;
  f.s.priority.kill_invalid_dependencies = true;
  auto parent = f.create("parent", f.admin);
  f.cancel(parent);
  f.now += minute;
  ASSERT_EQ(f.prune(), 1u);

  f.create("after-any", f.admin, {{parent, core::dependency_condition::afterany}});
  EXPECT_FALSE(f.w.find_job(test::uid("after-any"))->blocked) << "afterany on an ended job: free to run";
  C::create_job never;
  never.id = test::uid("after-ok");
  never.title = "never";
  never.input_bundle_path = "/b";
  never.depends_on = {{parent, core::dependency_condition::afterok}};
  auto o = f.run(f.admin, never);
  ASSERT_TRUE(o.answer.error);
  EXPECT_EQ(o.answer.error->code, "dependency_never_satisfied");
  EXPECT_EQ(o.answer.error->details["dependency_status"], "cancelled");
}

TEST(core_prune, AChildWaitingOnAParentThatIsPrunedStillSeesItsStatus) {
  prune_fixture f;
  f.s.priority.kill_invalid_dependencies = false;  // a child that can never run waits
  auto parent = f.create("parent", f.admin);
  auto child = f.create("child", f.admin, {{parent, core::dependency_condition::afterok}});
  f.cancel(parent);
  f.now += minute;
  ASSERT_EQ(f.prune(), 1u);
  ASSERT_NE(f.w.find_job(child), nullptr);
  EXPECT_TRUE(f.w.find_job(child)->blocked);
  EXPECT_EQ(core::dependencies_state(f.w, *f.w.find_job(child)), core::dependency_state::never);
  EXPECT_TRUE(core::dependency_sweep(f.w, f.s.priority, f.now).events.empty()) << "kill_invalid_dependencies is off";
  f.s.priority.kill_invalid_dependencies = true;
  EXPECT_EQ(core::dependency_sweep(f.w, f.s.priority, f.now).events.size(), 1u) << "the sweep still finds the pruned parent";
}

TEST(core_prune, AReplayAndASnapshotRebuildTheSameWorld) {
  prune_fixture f;
  for (int i = 0; i < 6; ++i) f.create("j" + std::to_string(i), i % 2 ? f.alice : f.bob);
  for (int i = 0; i < 3; ++i) f.cancel(test::uid("j" + std::to_string(i)));
  f.now += minute;
  ASSERT_EQ(f.prune(), 3u);
  // An older log may requeue a job after its prune: the stub takes no more events.
  core::decision late;
  late.events.push_back({core::job_stream(test::uid("j0")), core::ev::job_requeued_as{"x"}});
  f.log.push_back({late, f.now});
  core::apply(f.w, f.log.back().first, f.now);

  core::world replayed;
  for (const auto& [d, at] : f.log) core::apply(replayed, d, at);
  EXPECT_EQ(core::encode_world(replayed), core::encode_world(f.w));
  EXPECT_EQ(replayed.by_created, f.w.by_created);
  EXPECT_TRUE(replayed.pruned == f.w.pruned);

  auto decoded = core::decode_world(core::encode_world(f.w));
  core::rebuild_indexes(decoded);
  EXPECT_EQ(decoded.pruned.size(), 3u);
  EXPECT_EQ(decoded.by_created, f.w.by_created);
  EXPECT_TRUE(decoded.pruned == f.w.pruned);
  EXPECT_EQ(core::encode_world(decoded), core::encode_world(f.w));
  EXPECT_EQ(decoded.find_pruned(test::uid("j1"))->user, "alice");
}

// The packed stubs give back exactly what went in, whatever the ids look like (UUIDs pack
// into 16 bytes; ids from logs older than the UUID rule, upper-case text and empty worker
// ids do not), and list in creation order with ties by id across both kinds.
TEST(core_prune, PackedStubsReadBackAsTheyWereStored) {
  core::pruned_jobs stubs;
  const std::string a = test::uid("a"), b = test::uid("b"), upper = "ABCDEF01-2345-6789-ABCD-EF0123456789";
  core::pruned_job pa{core::job_status::completed, 100, "alice", "md", test::uid("w1")};
  core::pruned_job pb{core::job_status::failed, 100, "bob", "md", ""};
  core::pruned_job odd{core::job_status::cancelled, 100, "alice", "fep", "worker-7"};
  core::pruned_job early{core::job_status::completed, 50, "carol", "", upper};
  stubs.add(a, pa);
  stubs.add(b, pb);
  stubs.add("job-1", odd);
  stubs.add(upper, early);
  EXPECT_EQ(stubs.size(), 4u);
  EXPECT_EQ(stubs.find(a), pa);
  EXPECT_EQ(stubs.find(b), pb);
  EXPECT_EQ(stubs.find("job-1"), odd);
  EXPECT_EQ(stubs.find(upper), early);
  EXPECT_FALSE(stubs.find(test::uid("c")));
  EXPECT_FALSE(stubs.contains("job-2"));
  EXPECT_FALSE(stubs.contains(upper.substr(0, 35)));

  std::vector<std::string> oldest_first, newest_first;
  stubs.for_each(false, [&](const std::string& id, const core::pruned_job&) { oldest_first.push_back(id); });
  stubs.for_each(true, [&](const std::string& id, const core::pruned_job&) { newest_first.push_back(id); });
  std::vector<std::string> expected{upper, a, b, "job-1"};
  std::sort(expected.begin() + 1, expected.end());  // same creation time: by id text
  EXPECT_EQ(oldest_first, expected);
  std::reverse(expected.begin(), expected.end());
  EXPECT_EQ(newest_first, expected);

  core::pruned_job replaced = pa;
  replaced.created_at = 10;
  stubs.add(a, replaced);
  EXPECT_EQ(stubs.size(), 4u);
  EXPECT_EQ(stubs.find(a), replaced);
  oldest_first.clear();
  stubs.for_each(false, [&](const std::string& id, const core::pruned_job&) { oldest_first.push_back(id); });
  EXPECT_EQ(oldest_first.front(), a) << "a replaced stub moves to its new place";
  EXPECT_EQ(oldest_first.size(), 4u);
}

}  // namespace
