// POST /jobs/batch and job arrays in the core: a batch is all or nothing with each refusal
// naming its index, counts against the per-user cap with the jobs before it, may depend on its
// own earlier jobs; an array's tasks carry their index to the poll, list by index, and are
// cancelled, held and released as one; a snapshot and a prune keep the arrays right.
#include <gtest/gtest.h>

#include "core/world/world_snapshot.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;
namespace R = core::results;

namespace {

struct batch_fixture : test::core_under_test {
  principal alice = principal::named_operator("alice", false);
  principal bob = principal::named_operator("bob", false);
  principal admin = principal::operator_named("admin");

  static C::create_job job(const std::string& name) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = "title " + name;
    c.input_bundle_path = "/b/" + name;
    return c;
  }
  static C::create_jobs array_of(const std::string& array_name, std::vector<uint32_t> indices) {
    C::create_jobs b;
    b.array_id = test::uid(array_name);
    for (auto i : indices) {
      auto c = job(array_name + "-" + std::to_string(i));
      c.array_id = b.array_id;
      c.array_index = i;
      b.jobs.push_back(std::move(c));
    }
    return b;
  }
  size_t events_logged() const {
    size_t n = 0;
    for (const auto& [d, at] : log) n += d.events.size();
    return n;
  }
};

TEST(core_batch, ABatchIsOneDecisionWithEveryJobInItsOrder) {
  batch_fixture f;
  C::create_jobs b;
  for (int i = 0; i < 50; ++i) b.jobs.push_back(f.job("j" + std::to_string(i)));
  auto o = f.run(f.alice, b);
  ASSERT_FALSE(o.answer.error) << o.answer.error->message;
  const auto& made = std::get<R::jobs_created>(o.answer.value);
  ASSERT_EQ(made.items.size(), 50u);
  EXPECT_EQ(made.items[7].id, test::uid("j7"));
  EXPECT_FALSE(made.items[7].array_index);
  EXPECT_EQ(f.log.size(), 1u) << "one decision: one durable commit";
  EXPECT_EQ(f.events_logged(), 50u);
  for (int i = 0; i < 50; ++i) {
    const auto* j = f.w.find_job(test::uid("j" + std::to_string(i)));
    ASSERT_TRUE(j);
    EXPECT_EQ(j->user, "alice");
    EXPECT_EQ(j->status, core::job_status::queued);
    EXPECT_EQ(made.items[i].priority, j->priority) << "the reply's priority is the job's";
  }
}

TEST(core_batch, ARefusedEntryRefusesTheBatchAndNamesItsIndex) {
  batch_fixture f;
  ASSERT_FALSE(f.run(f.alice, f.job("there")).answer.error);
  C::create_jobs b;
  b.jobs.push_back(f.job("ok"));
  b.jobs.push_back(f.job("there"));  // exists already
  auto bad = f.job("bad");
  bad.partition = "nowhere";
  b.jobs.push_back(bad);
  b.jobs.push_back(f.job("ok"));  // twice in the batch
  auto o = f.run(f.alice, b);
  ASSERT_TRUE(o.answer.error);
  EXPECT_EQ(o.answer.error->code, "batch_refused");
  EXPECT_EQ(o.answer.error->field, "jobs");
  EXPECT_EQ(o.answer.error->kind, core::error_kind::invalid) << "mixed refusals: a 422";
  const auto& refused = o.answer.error->details["refused"];
  ASSERT_EQ(refused.size(), 3u) << refused.dump();
  EXPECT_EQ(refused[0]["index"], 1);
  EXPECT_EQ(refused[0]["error"], "job_exists");
  EXPECT_EQ(refused[1]["index"], 2);
  EXPECT_EQ(refused[1]["error"], "unknown_partition");
  EXPECT_EQ(refused[1]["field"], "partition");
  EXPECT_TRUE(refused[1].contains("known")) << "the names the policy knows";
  EXPECT_EQ(refused[2]["index"], 3);
  EXPECT_EQ(refused[2]["error"], "job_exists");
  EXPECT_FALSE(f.w.find_job(test::uid("ok"))) << "none was created";
  EXPECT_EQ(f.log.size(), 1u) << "only the first job's creation";
}

TEST(core_batch, EachJobCountsAgainstItsUsersCapWithTheOnesBeforeIt) {
  batch_fixture f;
  f.s.priority.max_jobs_per_user = 3;
  ASSERT_FALSE(f.run(f.alice, f.job("first")).answer.error);
  C::create_jobs b;
  for (int i = 0; i < 3; ++i) b.jobs.push_back(f.job("more" + std::to_string(i)));
  auto o = f.run(f.alice, b);
  ASSERT_TRUE(o.answer.error);
  EXPECT_EQ(o.answer.error->kind, core::error_kind::over_limit) << "every refusal the cap's: a 429";
  const auto& refused = o.answer.error->details["refused"];
  ASSERT_EQ(refused.size(), 1u) << refused.dump();
  EXPECT_EQ(refused[0]["index"], 2);
  EXPECT_EQ(refused[0]["error"], "max_jobs_per_user");
  b.jobs.pop_back();
  EXPECT_FALSE(f.run(f.alice, b).answer.error) << "three in all: at the cap, not past it";
  EXPECT_EQ(f.w.active_jobs_by_user.at("alice"), 3u);
}

TEST(core_batch, AJobMayDependOnAnEarlierJobOfItsBatchNotALaterOne) {
  batch_fixture f;
  C::create_jobs b;
  b.jobs.push_back(f.job("parent"));
  auto child = f.job("child");
  child.depends_on = {{test::uid("parent"), core::dependency_condition::afterok}};
  b.jobs.push_back(child);
  ASSERT_FALSE(f.run(f.alice, b).answer.error);
  EXPECT_TRUE(f.w.find_job(test::uid("child"))->blocked) << "waits for its parent, made in the same decision";
  EXPECT_FALSE(f.w.find_job(test::uid("parent"))->blocked);

  C::create_jobs later;
  auto early = f.job("early");
  early.depends_on = {{test::uid("late"), core::dependency_condition::afterok}};
  later.jobs.push_back(early);
  later.jobs.push_back(f.job("late"));
  auto o = f.run(f.alice, later);
  ASSERT_TRUE(o.answer.error);
  EXPECT_EQ(o.answer.error->details["refused"][0]["error"], "unknown_dependency");
  EXPECT_EQ(o.answer.error->details["refused"][0]["index"], 0);
}

TEST(core_batch, AnArraysTaskGetsItsIndexWithItsAssignment) {
  batch_fixture f;
  auto b = f.array_of("arr", {0, 5, 9});
  auto o = f.run(f.alice, b);
  ASSERT_FALSE(o.answer.error) << o.answer.error->message;
  const auto& made = std::get<R::jobs_created>(o.answer.value);
  EXPECT_EQ(made.array_id, test::uid("arr"));
  ASSERT_EQ(made.items.size(), 3u);
  EXPECT_EQ(made.items[1].array_index, 5u);

  auto w = f.register_worker(test::uid("w1"));
  auto polled = f.run(principal::of_worker(w), C::request_job{w});
  const auto& answer = std::get<R::poll_answer>(polled.answer.value);
  ASSERT_TRUE(answer.assigned);
  ASSERT_TRUE(answer.assigned->array) << "the payload's BATON_ARRAY_INDEX comes from here";
  EXPECT_EQ(answer.assigned->array->array_id, test::uid("arr"));
  EXPECT_EQ(answer.assigned->array->index, f.w.array_of(answer.assigned->job_id)->index);

  C::list_jobs q;
  q.array_id = test::uid("arr");
  auto listed = f.run(f.alice, q);
  const auto& page = std::get<R::job_page>(listed.answer.value);
  ASSERT_EQ(page.items.size(), 3u);
  EXPECT_EQ(page.items[0].array->index, 0u) << "by index";
  EXPECT_EQ(page.items[2].array->index, 9u);
  EXPECT_EQ(page.items[2].j.id, test::uid("arr-9"));
  C::list_jobs none;
  none.array_id = test::uid("no-such-array");
  EXPECT_TRUE(std::get<R::job_page>(f.run(f.alice, none).answer.value).items.empty());
}

TEST(core_batch, AnArrayIsCancelledHeldAndReleasedAsOne) {
  batch_fixture f;
  ASSERT_FALSE(f.run(f.alice, f.array_of("arr", {0, 1, 2, 3})).answer.error);
  auto w = f.register_worker(test::uid("w1"));
  auto running = f.poll(w);
  ASSERT_TRUE(running);
  ASSERT_FALSE(f.run(principal::of_worker(w), C::start_job{*running}).answer.error);

  auto held = f.run(f.alice, C::hold_job{test::uid("arr")});
  ASSERT_FALSE(held.answer.error) << held.answer.error->message;
  const auto& h = std::get<R::array_acted>(held.answer.value);
  EXPECT_EQ(h.changed, 3u) << "the queued tasks";
  EXPECT_EQ(h.unchanged.at("running"), 1u);
  EXPECT_TRUE(f.w.find_job(test::uid("arr-3"))->held || *running == test::uid("arr-3"));
  EXPECT_EQ(f.log.back().first.events.size(), 3u) << "one decision for the array";

  EXPECT_EQ(f.run(f.bob, C::hold_job{test::uid("arr")}).answer.error->code, "not_found") << "another user's array";
  EXPECT_EQ(f.run(f.bob, C::cancel_job{test::uid("arr"), true}).answer.error->code, "not_found");

  auto released = f.run(f.alice, C::release_job{test::uid("arr")});
  EXPECT_EQ(std::get<R::array_acted>(released.answer.value).changed, 3u);

  auto cancelled = f.run(f.alice, C::cancel_job{test::uid("arr"), false});
  const auto& c = std::get<R::array_acted>(cancelled.answer.value);
  EXPECT_EQ(c.changed, 3u);
  EXPECT_EQ(c.unchanged.at("running"), 1u) << "a running task needs force, as a job does";
  auto forced = f.run(f.admin, C::cancel_job{test::uid("arr"), true});
  EXPECT_EQ(std::get<R::array_acted>(forced.answer.value).changed, 1u) << "an admin acts on anyone's array";
  EXPECT_EQ(f.w.find_job(*running)->status, core::job_status::cancelling);
}

TEST(core_batch, ASnapshotKeepsTheArraysAndAPruneLetsTheTaskGo) {
  batch_fixture f;
  ASSERT_FALSE(f.run(f.alice, f.array_of("arr", {3, 4})).answer.error);
  auto copy = core::decode_world(core::encode_world(f.w));
  ASSERT_TRUE(copy.array_of(test::uid("arr-4")));
  EXPECT_EQ(copy.array_of(test::uid("arr-4"))->index, 4u);
  EXPECT_EQ(copy.arrays.at(test::uid("arr")).at(3), test::uid("arr-3"));
  EXPECT_EQ(core::encode_world(copy), core::encode_world(f.w));

  ASSERT_FALSE(f.run(f.alice, C::cancel_job{test::uid("arr-3"), false}).answer.error);
  f.now += 60'000'000;
  ASSERT_FALSE(f.run(f.admin, C::prune_jobs{{"cancelled"}, 0}).answer.error);
  EXPECT_FALSE(f.w.array_of(test::uid("arr-3")));
  EXPECT_EQ(f.w.arrays.at(test::uid("arr")).size(), 1u);
  ASSERT_FALSE(f.run(f.alice, C::cancel_job{test::uid("arr-4"), false}).answer.error);
  f.now += 60'000'000;
  ASSERT_FALSE(f.run(f.admin, C::prune_jobs{{"cancelled"}, 0}).answer.error);
  EXPECT_TRUE(f.w.arrays.empty()) << "an array whose tasks are all pruned is gone";
}

}  // namespace
