// DAG job dependencies through the application layer (core::decide, apply and the dependency
// fallout, with a fake clock and no actors): a blocked job is not assigned and accrues no age
// until its parents let it run; each condition after success and failure; a child that can
// never run is cancelled (transitively) or, with kill_invalid_dependencies off, waits with
// DependencyNeverSatisfied; validation (another user's job is as unknown as one that does not
// exist); repeats collapsing in n log n; and a replay of the log rebuilding the same queue.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <cmath>

#include "core/world/dag.hpp"
#include "core/jobs/first_seen.hpp"
#include "core/world/priority.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::dependency_condition;
using core::principal;
namespace C = core::commands;

namespace {

constexpr core::time_us second = 1'000'000, hour = 3600 * second, day = 24 * hour;
const auto ok = dependency_condition::afterok, any = dependency_condition::afterany, notok = dependency_condition::afternotok;

struct dag_fixture : test::core_under_test {
  principal admin = principal::operator_named("admin");
  int workers = 0;

  C::create_job command(const std::string& name, std::vector<std::pair<std::string, dependency_condition>> deps) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b/" + name;
    for (const auto& [parent, cond] : deps) c.depends_on.push_back({test::uid(parent), cond});
    return c;
  }
  std::string job(const std::string& name, std::vector<std::pair<std::string, dependency_condition>> deps = {}) {
    auto o = run(admin, command(name, deps));
    EXPECT_FALSE(o.answer.error) << name << ": " << o.answer.error->message;
    return test::uid(name);
  }
  // A fresh worker (earlier ones may have gone stale while the clock jumped).
  std::string worker() { return register_worker(test::uid("worker-" + std::to_string(++workers))); }
  // A fresh worker takes `name` (it must be first in line), starts it, and completes or fails it.
  void finish(const std::string& name, bool success) {
    auto w = worker();
    ASSERT_EQ(poll(w), test::uid(name)) << name << " should be first in line";
    ASSERT_FALSE(run(principal::of_worker(w), C::start_job{test::uid(name)}).answer.error);
    auto r = success ? run(principal::of_worker(w), C::complete_job{test::uid(name)})
                     : run(principal::of_worker(w), C::fail_job{test::uid(name), std::string("payload_failed"), {}, {}});
    ASSERT_FALSE(r.answer.error);
    // Gone, so that it does not rank above the next test worker (a poll takes the k-th job).
    ASSERT_FALSE(run(principal::of_worker(w), C::deregister{w}).answer.error);
  }
  const core::job& get(const std::string& name) { return *w.find_job(test::uid(name)); }
  std::string status(const std::string& name) { return core::to_string(get(name).status); }
  std::string reason(const std::string& name) { return core::pending_reason(w, get(name)); }
  bool in_poll_index(const std::string& name) {
    auto it = w.queued_by_image.find("default");
    return it != w.queued_by_image.end() && it->second.find(core::queue_key_of(get(name))) != it->second.end();
  }
  // The job.cancelled payload the log holds for a job, or null.
  nlohmann::json cancellation(const std::string& name) {
    for (const auto& [d, at] : log)
      for (const auto& e : d.events)
        if (e.stream == "job/" + test::uid(name) && e.type() == "job.cancelled") return baton::core::payload_json(e);
    return nullptr;
  }
  core::domain_error refusal(const C::create_job& c) {
    auto o = run(admin, c);
    EXPECT_TRUE(o.answer.error);
    return o.answer.error.value_or(core::domain_error{});
  }
};

}  // namespace

TEST(dependencies, ABlockedChildIsNotAssignedUntilItsParentCompletes) {
  dag_fixture f;
  f.job("a");
  f.job("b", {{"a", ok}});
  EXPECT_TRUE(f.get("b").blocked);
  EXPECT_EQ(f.reason("b"), "Dependency");
  EXPECT_FALSE(f.in_poll_index("b")) << "polls and provisioning must not see it";
  auto w1 = f.worker();
  EXPECT_EQ(f.poll(w1), test::uid("a"));
  EXPECT_FALSE(f.run(principal::of_worker(w1), C::start_job{test::uid("a")}).answer.error);
  auto w2 = f.worker();
  EXPECT_FALSE(f.poll(w2)) << "b waits while a runs";
  EXPECT_FALSE(f.run(principal::of_worker(w1), C::complete_job{test::uid("a")}).answer.error);
  EXPECT_FALSE(f.get("b").blocked);
  EXPECT_TRUE(f.in_poll_index("b"));
  EXPECT_EQ(f.reason("b"), "Resources");
  // One idle worker left, so it is first in line whatever the two workers' ranks.
  EXPECT_FALSE(f.run(principal::of_worker(w2), C::deregister{w2}).answer.error);
  EXPECT_EQ(f.poll(w1), test::uid("b"));
  EXPECT_EQ(f.get("b").depends_on.size(), 1u);
}

TEST(dependencies, AfterAnyRunsAfterAFailure) {
  dag_fixture f;
  f.job("a");
  f.job("b", {{"a", any}});
  f.finish("a", false);
  EXPECT_EQ(f.status("a"), "failed");
  EXPECT_EQ(f.status("b"), "queued");
  EXPECT_FALSE(f.get("b").blocked);
  f.finish("b", true);
}

TEST(dependencies, AfterNotOkRunsAfterAFailureAndIsCancelledAfterASuccess) {
  dag_fixture f;
  f.job("fails");
  f.job("cleanup", {{"fails", notok}});
  f.finish("fails", false);
  EXPECT_FALSE(f.get("cleanup").blocked);
  f.finish("cleanup", true);

  f.job("works");
  f.job("rescue", {{"works", notok}});
  EXPECT_EQ(f.reason("rescue"), "Dependency");
  f.finish("works", true);
  EXPECT_EQ(f.status("rescue"), "cancelled");
  EXPECT_EQ(f.get("rescue").failure_reason, "dependency_never_satisfied");
  EXPECT_EQ(
      f.cancellation("rescue"),
      (nlohmann::json{{"from_status", "queued"}, {"reason", "dependency_never_satisfied"}, {"dependency", test::uid("works")}}));
  EXPECT_TRUE(f.w.queued.empty());
}

TEST(dependencies, AChainIsCancelledTransitivelyInOneDecision) {
  dag_fixture f;
  f.job("a");
  f.job("b", {{"a", ok}});
  f.job("c", {{"b", ok}});
  f.job("d", {{"c", ok}});
  f.job("after-c-any", {{"c", any}});
  f.job("after-b-notok", {{"b", notok}});
  f.finish("a", false);
  size_t at = 0;  // the logged decision that failed a
  while (at < f.log.size() && !(f.log[at].first.events.size() == 1 && f.log[at].first.events[0].type() == "job.failed")) ++at;
  ASSERT_LT(at + 1, f.log.size());
  const auto& fallout = f.log[at + 1].first;
  ASSERT_EQ(fallout.events.size(), 3u) << "b, c and d, in one fallout decision right after a's failure";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(fallout.events[i].stream, "job/" + test::uid(std::string(1, "bcd"[i])));
  for (auto name : {"b", "c", "d"}) {
    EXPECT_EQ(f.status(name), "cancelled") << name;
    EXPECT_EQ(f.get(name).failure_reason, "dependency_never_satisfied") << name;
  }
  EXPECT_EQ(f.cancellation("b")["dependency"], test::uid("a"));
  EXPECT_EQ(f.cancellation("c")["dependency"], test::uid("b"));
  EXPECT_EQ(f.cancellation("d")["dependency"], test::uid("c"));
  // A cancelled parent satisfies afterany and afternotok: those children become eligible.
  for (auto name : {"after-c-any", "after-b-notok"}) {
    EXPECT_EQ(f.status(name), "queued") << name;
    EXPECT_FALSE(f.get(name).blocked) << name;
    EXPECT_TRUE(f.in_poll_index(name)) << name;
  }
}

TEST(dependencies, WithoutKillTheChildWaitsWithDependencyNeverSatisfied) {
  dag_fixture f;
  f.s.priority.kill_invalid_dependencies = false;
  f.job("a");
  f.job("b", {{"a", ok}});
  f.job("c", {{"b", ok}});
  f.finish("a", false);
  EXPECT_EQ(f.status("b"), "queued");
  EXPECT_TRUE(f.get("b").blocked);
  EXPECT_EQ(f.reason("b"), "DependencyNeverSatisfied");
  EXPECT_EQ(f.reason("c"), "Dependency") << "b has not ended";
  EXPECT_FALSE(f.poll(f.worker())) << "still blocked";
  // New jobs on the failed parent are accepted and wait the same way.
  f.job("late", {{"a", ok}});
  EXPECT_EQ(f.reason("late"), "DependencyNeverSatisfied");
  // Switching it on: the start-up sweep cancels what now can never run, transitively.
  f.s.priority.kill_invalid_dependencies = true;
  auto swept = core::dependency_sweep(f.w, f.s.priority, f.now);
  std::set<std::string> cancelled;
  for (const auto& e : swept.events) {
    EXPECT_EQ(e.type(), "job.cancelled");
    cancelled.insert(e.stream.substr(4));
  }
  EXPECT_EQ(cancelled, (std::set<std::string>{test::uid("b"), test::uid("c"), test::uid("late")}));
}

TEST(dependencies, ANewJobOnAParentThatEndedBadlyIsRefused) {
  dag_fixture f;
  f.job("a");
  f.finish("a", false);
  auto e = f.refusal(f.command("b", {{"a", ok}}));
  EXPECT_EQ(e.kind, core::error_kind::invalid);
  EXPECT_EQ(e.code, "dependency_never_satisfied");
  EXPECT_EQ(e.field, "depends_on");
  EXPECT_EQ(e.details["dependency_job_id"], test::uid("a"));
  EXPECT_EQ(e.details["dependency_status"], "failed");
  f.job("b-any", {{"a", any}});
  EXPECT_FALSE(f.get("b-any").blocked);
}

TEST(dependencies, UnknownIdsAndCyclesAreRefusedNamingTheField) {
  dag_fixture f;
  auto unknown = f.refusal(f.command("b", {{"nobody", ok}}));
  EXPECT_EQ(unknown.kind, core::error_kind::invalid);
  EXPECT_EQ(unknown.code, "unknown_dependency");
  EXPECT_EQ(unknown.field, "depends_on");
  EXPECT_EQ(unknown.details["dependency_job_id"], test::uid("nobody"));
  auto self = f.refusal(f.command("me", {{"me", ok}}));
  EXPECT_EQ(self.kind, core::error_kind::invalid);
  EXPECT_EQ(self.code, "dependency_cycle");
  EXPECT_EQ(self.field, "depends_on");
  EXPECT_TRUE(f.w.jobs.empty()) << "nothing was created";
  // Repeats collapse; the same parent under two conditions stays two entries.
  f.job("a");
  f.job("b", {{"a", ok}, {"a", ok}, {"a", any}});
  ASSERT_EQ(f.get("b").depends_on.size(), 2u);
  EXPECT_EQ(f.get("b").depends_on[1].condition, any);
}

// A user learns nothing of a job they may not see (core::may_see): depending on another
// user's job is refused exactly as depending on one that does not exist, whatever its state.
TEST(dependencies, AnotherUsersJobIsAnUnknownDependency) {
  dag_fixture f;
  const principal ann = principal::named_operator("ann", false), bob = principal::named_operator("bob", false);
  auto as = [&](const principal& who, const std::string& name, std::vector<std::pair<std::string, dependency_condition>> deps) {
    return f.run(who, f.command(name, deps)).answer.error;
  };
  ASSERT_FALSE(as(ann, "anns-failed", {}));
  f.finish("anns-failed", false);
  ASSERT_FALSE(as(ann, "anns", {}));
  auto nobody = as(bob, "b0", {{"nobody", ok}});
  ASSERT_TRUE(nobody);
  for (const char* parent : {"anns", "anns-failed"}) {
    auto e = as(bob, std::string("b-") + parent, {{parent, ok}});
    ASSERT_TRUE(e) << parent;
    EXPECT_EQ(e->kind, nobody->kind) << parent;
    EXPECT_EQ(e->code, "unknown_dependency") << parent;
    EXPECT_EQ(e->field, "depends_on");
    EXPECT_EQ(e->message, "depends_on names unknown job " + test::uid(parent)) << "as for a job that does not exist";
    EXPECT_EQ(e->details, nlohmann::json({{"dependency_job_id", test::uid(parent)}})) << "no status: " << e->details.dump();
  }
  EXPECT_FALSE(as(ann, "anns-child", {{"anns", ok}})) << "her own job";
  EXPECT_EQ(as(ann, "anns-late", {{"anns-failed", ok}})->code, "dependency_never_satisfied") << "she may know its fate";
  EXPECT_FALSE(f.run(f.admin, f.command("admins", {{"anns", ok}})).answer.error) << "an admin sees every job";
}

// Repeats collapse to their first place through an ordered set: n log n comparisons, where a
// search of the kept items for each one was quadratic (80,000 pins held a thread 6.5 s).
TEST(dependencies, FirstSeenKeepsOrderWithoutQuadraticWork) {
  std::vector<std::string> items;
  const size_t distinct = 20'000;
  for (size_t i = 0; i < distinct; ++i) items.push_back("c" + std::to_string((i * 7919) % distinct));
  for (size_t i = 0; i < distinct; i += 2) items.push_back("c" + std::to_string(i));  // repeats, later
  size_t comparisons = 0;
  auto out = core::first_seen(items, [&](const std::string& a, const std::string& b) {
    ++comparisons;
    return a < b;
  });
  ASSERT_EQ(out.size(), distinct);
  for (size_t i = 0; i < distinct; ++i) ASSERT_EQ(out[i], items[i]) << "first-seen order, at " << i;
  const double n = static_cast<double>(items.size());
  EXPECT_LT(static_cast<double>(comparisons), 4 * n * std::log2(n)) << "n log n, not n^2 / 2 (" << n * n / 2 << ")";
  EXPECT_EQ(core::first_seen(std::vector<std::string>{"b", "a", "b", "c", "a"}), (std::vector<std::string>{"b", "a", "c"}));
}

TEST(dependencies, AgeStartsWhenTheDependencyIsSatisfied) {
  dag_fixture f;
  EXPECT_FALSE(f.run(principal::loop(), C::recalculate_priorities{}).answer.error);
  f.job("a", {});
  f.job("b", {{"a", ok}});
  f.now += day;
  f.finish("a", true);
  f.now += 2 * day;
  EXPECT_FALSE(f.run(principal::loop(), C::recalculate_priorities{}).answer.error);
  auto e = core::explain_priority(f.w, f.get("b"));
  EXPECT_DOUBLE_EQ(e.multifactor.age.raw, 2 * 86400.0) << "the day spent blocked does not count";
  EXPECT_EQ(f.get("b").eligible_since, f.now - 2 * day);
}

TEST(dependencies, RequeueClonesKeepTheirDependencies) {
  dag_fixture f;
  f.job("a");
  f.job("b", {{"a", ok}});
  f.finish("a", true);
  f.finish("b", false);
  auto r = f.run(f.admin, C::requeue_job{test::uid("b"), test::uid("b2")});
  ASSERT_FALSE(r.answer.error) << r.answer.error->message;
  EXPECT_EQ(f.get("b2").depends_on, f.get("b").depends_on);
  EXPECT_FALSE(f.get("b2").blocked);
  // A clone that could never run is refused.
  EXPECT_FALSE(f.run(f.admin, C::cancel_job{test::uid("b2"), false}).answer.error);
  f.now += second;
  f.job("c");
  f.job("d", {{"c", ok}});
  f.finish("c", false);
  ASSERT_EQ(f.status("d"), "cancelled");
  auto refused = f.run(f.admin, C::requeue_job{test::uid("d"), test::uid("d2")}).answer;
  ASSERT_TRUE(refused.error);
  EXPECT_EQ(refused.error->kind, core::error_kind::conflict);
  EXPECT_EQ(refused.error->code, "dependency_never_satisfied");
}

TEST(dependencies, ReplayingTheLogGivesTheSameQueueAndBlockedSet) {
  dag_fixture f;
  EXPECT_FALSE(f.run(principal::loop(), C::recalculate_priorities{}).answer.error);
  // Roots first (so they lead the queue), then on each root a child under every condition,
  // and a grandchild.
  for (int i = 0; i < 4; ++i) {
    f.job("root" + std::to_string(i));
    f.now += hour;
  }
  for (int i = 0; i < 4; ++i) {
    auto n = std::to_string(i);
    f.job("ok" + n, {{"root" + n, ok}});
    f.job("any" + n, {{"root" + n, any}});
    f.job("notok" + n, {{"root" + n, notok}});
    f.job("grand" + n, {{"ok" + n, ok}, {"notok" + n, any}});
    f.now += hour;
  }
  f.finish("root0", true);
  f.now += hour;
  f.finish("root1", false);
  f.now += hour;
  EXPECT_FALSE(f.run(f.admin, C::cancel_job{test::uid("root2"), false}).answer.error);
  f.now += hour;
  EXPECT_FALSE(f.run(principal::loop(), C::recalculate_priorities{}).answer.error);

  core::world replayed;
  for (const auto& [d, at] : f.log) core::apply(replayed, d, at);
  EXPECT_EQ(core::queue_in_evaluation_order(replayed), core::queue_in_evaluation_order(f.w));
  size_t blocked = 0;
  for (const auto& [id, j] : f.w.jobs.by_id()) {
    const auto& r = *replayed.find_job(id);
    EXPECT_EQ(core::to_string(r.status), core::to_string(j.status)) << j.title;
    EXPECT_EQ(r.blocked, j.blocked) << j.title;
    EXPECT_EQ(r.eligible_since, j.eligible_since) << j.title;
    EXPECT_EQ(r.accrued_us, j.accrued_us) << j.title;
    EXPECT_EQ(core::pending_reason(replayed, r), core::pending_reason(f.w, j)) << j.title;
    blocked += j.status == core::job_status::queued && j.blocked;
  }
  // Queued and blocked: root0 completed, so grand0 waits for ok0. root1 failed and root2 was cancelled: their ok and
  // grand children were cancelled. root3 is queued: its four descendants wait.
  EXPECT_EQ(blocked, 5u);
  EXPECT_EQ(f.status("grand1"), "cancelled");
  EXPECT_TRUE(f.get("grand0").blocked);
  EXPECT_EQ(replayed.dependents, f.w.dependents);
}
