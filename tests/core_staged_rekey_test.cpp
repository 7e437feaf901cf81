// A recalculation put in force in slices (core/world/staged_rekey.hpp) must leave the world exactly
// as a replay of the log leaves it, whatever happened between the slices: jobs created,
// assigned, finished, held, released, released by a parent's end, over a QOS limit. Seeded
// random campaigns interleave those with the slices and compare with a replay; a recalculation
// under a new policy is in force at once; the order stays the old one until the swap.
#include "core/events/event_payload.hpp"
#include <gtest/gtest.h>

#include <random>

#include "core/world/priority.hpp"
#include "core/world/staged_rekey.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;

namespace {

constexpr core::time_us second = 1'000'000, hour = 3600 * second;

struct staged_fixture : test::core_under_test {
  principal admin = principal::operator_named("admin");
  std::vector<std::string> jobs, workers;
  std::mt19937 rng;

  explicit staged_fixture(unsigned seed, const std::string& policy = "multifactor") : rng(seed) {
    s.priority.partitions = {{"normal", 1, 1}, {"test", 100, 10}};
    s.priority.qos = {{"normal", 0, 0}, {"short", 5, 2}};
    s.priority.accounts = {{"chem", "root", 1, {{"ann", 1}, {"bo", 2}}}, {"phys", "root", 3, {{"cy", 1}}}};
    EXPECT_TRUE(core::set_policy_name(s.priority, policy));
  }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

  void create() {
    C::create_job c;
    c.id = test::uid("j" + std::to_string(jobs.size()));
    c.title = "j";
    c.input_bundle_path = "/b";
    const char* users[] = {"ann", "bo", "cy", "dee"};
    c.user = users[pick(4)];
    c.account = c.user == "cy" ? "phys" : c.user == "dee" ? "" : "chem";
    c.nice = static_cast<int64_t>(pick(3)) * 50;
    c.partition = pick(5) == 0 ? "test" : "normal";
    c.qos = pick(3) == 0 ? "short" : "normal";
    c.gpu_count = pick(4) == 0 ? 2 : 1;
    c.hold = pick(10) == 0;
    if (!jobs.empty() && pick(6) == 0) c.depends_on.push_back({jobs[pick(jobs.size())], core::dependency_condition::afterany});
    if (!run(admin, c).answer.error) jobs.push_back(c.id);
  }
  // One random thing that changes the queue.
  void step() {
    now += static_cast<core::time_us>(1 + pick(120)) * second;
    switch (pick(8)) {
      case 0:
      case 1:
        create();
        break;
      case 2:
        workers.push_back(register_worker(test::uid("w" + std::to_string(workers.size())), 1 + static_cast<int>(pick(2))));
        break;
      case 3:
        if (!workers.empty()) poll(workers[pick(workers.size())]);
        break;
      case 4:
        if (!jobs.empty()) run(admin, C::hold_job{jobs[pick(jobs.size())]});
        break;
      case 5:
        if (!jobs.empty()) run(admin, C::release_job{jobs[pick(jobs.size())]});
        break;
      case 6:
        if (!jobs.empty()) run(admin, C::cancel_job{jobs[pick(jobs.size())], true});
        break;
      default:  // a running job ends (its dependents may become eligible, its QOS group may go)
        for (const auto& w : workers)
          if (const std::string* j = this->w.held_job(w)) {
            std::string id = *j;
            run(principal::of_worker(w), C::start_job{id});
            run(principal::of_worker(w), C::complete_job{id});
            break;
          }
    }
  }
  void recalculate_at_once() { EXPECT_FALSE(run(principal::loop(), C::recalculate_priorities{}).answer.error); }

  // The scheduler's way: the recalculation's first event now, slices of `slice` jobs with
  // `between` random steps after each, then the swap.
  void recalculate_staged(size_t slice, int between) {
    core::envelope e{principal::loop(), "loop:priority", "req", C::recalculate_priorities{}, std::nullopt};
    auto o = core::decide(w, leases, s, e, now);
    ASSERT_FALSE(o.answer.error);
    ASSERT_EQ(o.events.size(), 2u) << "an unchanged policy defers";
    core::decision decided;
    decided.events.push_back(o.events[0]);
    core::apply(w, decided, now);
    log.emplace_back(decided, now);
    ASSERT_TRUE(w.priority_pending);
    auto staged = core::begin_staging(w);
    while (!core::stage_some(w, staged, slice))
      for (int i = 0; i < between; ++i) step();
    now += second;
    auto applied = core::decide_priorities_applied(w);
    ASSERT_EQ(applied.events.size(), 1u);
    core::swap_in(w, std::move(staged), applied, now);
    log.emplace_back(applied, now);
    EXPECT_FALSE(w.priority_pending);
    EXPECT_FALSE(w.staging);
  }
};

// Every queued job's key and every index entry, as text, for comparing worlds.
std::vector<std::string> queue_state(const core::world& w) {
  std::vector<std::string> out;
  for (const auto& [image, keys] : w.queued_by_image)
    for (const auto& k : keys)
      out.push_back(image + " " + std::string(k.id) + " " + std::to_string(k.tier) + " " + std::to_string(k.priority));
  for (const auto& [image, n] : w.constrained_queued_by_image) out.push_back(image + " constrained " + std::to_string(n));
  for (const auto& [id, j] : w.jobs.by_id())
    out.push_back(id + " " + std::to_string(j.priority_tier) + " " + std::to_string(j.priority) + " " +
                  std::to_string(j.over_limit) + std::to_string(j.blocked) + std::to_string(j.held));
  return out;
}

core::world replay(const staged_fixture& f) {
  core::world replayed;
  for (const auto& [d, at] : f.log) core::apply(replayed, d, at);
  return replayed;
}

void campaign(unsigned seed, const std::string& policy) {
  staged_fixture f(seed, policy);
  f.recalculate_at_once();  // the policy's first record: in force at once
  for (int i = 0; i < 60; ++i) f.step();
  for (int round = 0; round < 4; ++round) {
    f.now += hour;
    f.recalculate_staged(1 + f.pick(9), static_cast<int>(f.pick(4)));
    for (int i = 0; i < 20; ++i) f.step();
  }
  auto replayed = replay(f);
  EXPECT_EQ(queue_state(replayed), queue_state(f.w)) << "seed " << seed << " " << policy;
  EXPECT_EQ(core::queue_in_evaluation_order(replayed), core::queue_in_evaluation_order(f.w));
}

}  // namespace

TEST(staged_rekey, SlicesWithChangesBetweenThemEndAsAReplayUnderMultifactor) {
  for (unsigned seed = 1; seed <= 40; ++seed) campaign(seed, "multifactor");
}

TEST(staged_rekey, SlicesWithChangesBetweenThemEndAsAReplayUnderLattice) {
  // Lattice also reads the workers' GPU counts: a registration during the slices re-keys all.
  for (unsigned seed = 1; seed <= 40; ++seed) campaign(seed, "lattice:ml_training");
}

TEST(staged_rekey, TheOrderStaysTheOldOneUntilTheSwap) {
  staged_fixture f(7);
  f.s.priority.multifactor.weights = {};
  f.s.priority.multifactor.weights.fairshare = 1000;  // only fair share counts
  f.recalculate_at_once();
  auto job_of = [&](const std::string& name, const std::string& user, const std::string& account) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b";
    c.user = user;
    c.account = account;
    EXPECT_FALSE(f.run(f.admin, c).answer.error);
    return c.id;
  };
  auto ran = job_of("ran", "ann", "chem");
  auto w1 = f.register_worker(test::uid("w1"));
  ASSERT_EQ(f.poll(w1), ran);
  f.run(principal::of_worker(w1), C::start_job{ran});
  f.now += 10 * hour;
  f.run(principal::of_worker(w1), C::complete_job{ran});  // ann has used ten GPU-hours
  auto anns = job_of("anns", "ann", "chem"), cys = job_of("cys", "cy", "phys");
  f.recalculate_at_once();
  int64_t ann_before = f.w.find_job(anns)->priority, cy_before = f.w.find_job(cys)->priority;
  ASSERT_LT(ann_before, cy_before);
  // Sixty hours on cy's account (phys has 3 of 4 shares): at the next recalculation cy falls below ann.
  auto cy_ran = job_of("cyran", "cy", "phys");
  f.run(f.admin, C::hold_job{anns});
  f.run(f.admin, C::hold_job{cys});
  f.leases.touch(w1, f.now);  // as its heartbeats would
  ASSERT_EQ(f.poll(w1), cy_ran);
  f.run(principal::of_worker(w1), C::start_job{cy_ran});
  f.now += 60 * hour;
  f.run(principal::of_worker(w1), C::complete_job{cy_ran});
  f.run(f.admin, C::release_job{anns});
  f.run(f.admin, C::release_job{cys});
  core::envelope e{principal::loop(), "loop:priority", "req", C::recalculate_priorities{}, std::nullopt};
  auto o = core::decide(f.w, f.leases, f.s, e, f.now);
  ASSERT_EQ(o.events.size(), 2u);
  EXPECT_EQ(o.events[1].type(), "scheduler.priorities_applied");
  core::decision decided;
  decided.events.push_back(o.events[0]);
  core::apply(f.w, decided, f.now);
  ASSERT_TRUE(f.w.priority_pending);
  EXPECT_EQ(f.w.find_job(anns)->priority, ann_before) << "decided, not yet in force";
  EXPECT_EQ(f.w.find_job(cys)->priority, cy_before);
  EXPECT_EQ(core::queue_in_evaluation_order(f.w), (std::vector<std::string>{cys, anns}));
  core::decision applied;
  applied.events.push_back(o.events[1]);
  f.now += second;
  core::apply(f.w, applied, f.now);
  EXPECT_FALSE(f.w.priority_pending);
  EXPECT_EQ(core::queue_in_evaluation_order(f.w), (std::vector<std::string>{anns, cys})) << "in force at the swap";
}

TEST(staged_rekey, ANewPolicyIsInForceAtOnce) {
  staged_fixture f(3);
  f.recalculate_at_once();
  for (int i = 0; i < 10; ++i) f.create();
  f.s.priority.multifactor.weights.age = 1;  // the configuration changed
  core::envelope e{principal::loop(), "loop:priority", "req", C::recalculate_priorities{}, std::nullopt};
  auto o = core::decide(f.w, f.leases, f.s, e, f.now);
  ASSERT_EQ(o.events.size(), 1u);
  EXPECT_FALSE(baton::core::payload_json(o.events[0]).value("deferred", true));
  core::decision d;
  d.events = o.events;
  core::apply(f.w, d, f.now);
  EXPECT_FALSE(f.w.priority_pending);
  EXPECT_EQ(f.w.priority.policy.multifactor.weights.age, 1);
}

TEST(staged_rekey, AnEmptyQueueSwapsAtOnce) {
  staged_fixture f(4);
  f.recalculate_at_once();
  f.recalculate_staged(100, 0);
  EXPECT_TRUE(f.w.queued_by_image.empty());
}
