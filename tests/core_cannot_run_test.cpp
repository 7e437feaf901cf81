// A job that no site could ever run says so (pending_reason PartitionConfig and a sentence):
// more GPUs than the largest worker a configured cluster or any registered worker offers, or a
// time limit over every site's wall time for a job that does not checkpoint. Nothing is said
// while nothing is known of what the sites offer.
#include <gtest/gtest.h>

#include "core/world/priority.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;
namespace R = core::results;

namespace {

struct fixture : test::core_under_test {
  principal alice = principal::named_operator("alice", false);

  R::job_row create(const std::string& name, uint32_t gpus, std::optional<int64_t> limit = std::nullopt,
                    bool checkpoints = true) {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b/" + name;
    c.gpu_count = gpus;
    c.time_limit_seconds = limit;
    c.checkpoints = checkpoints;
    auto o = run(alice, c);
    EXPECT_FALSE(o.answer.error) << name;
    return std::get<R::job_row>(o.answer.value);
  }
  std::string reason(const std::string& name) { return core::pending_reason(w, *w.find_job(test::uid(name))); }
  std::string detail(const std::string& name) { return core::cannot_run_reason(w, *w.find_job(test::uid(name))); }
};

TEST(core_cannot_run, MoreGpusThanAnyWorkerEverOfferedIsSaid) {
  fixture f;
  auto before = f.create("big-early", 4);
  EXPECT_EQ(before.pending_reason, "Resources") << "nothing known yet of what the sites offer";
  EXPECT_EQ(before.pending_detail, "");

  auto w = f.register_worker(test::uid("w2"), 2);
  EXPECT_EQ(f.reason("big-early"), "PartitionConfig");
  EXPECT_EQ(f.detail("big-early"), "gpu_count 4 > largest offered 2");
  auto fits = f.create("fits", 2);
  EXPECT_EQ(fits.pending_detail, "") << "2 GPUs: the worker can run it";
  auto answer = f.create("big", 3);
  EXPECT_EQ(answer.pending_reason, "PartitionConfig") << "the submit answer says so";
  EXPECT_EQ(answer.pending_detail, "gpu_count 3 > largest offered 2");

  ASSERT_FALSE(f.run(principal::of_worker(w), C::deregister{w}).answer.error);
  EXPECT_EQ(f.detail("fits"), "") << "a worker gone still shows what a site offers";
  EXPECT_EQ(f.reason("fits"), "Priority") << "waits behind big-early, which might yet run";

  f.register_worker(test::uid("w8"), 8);
  EXPECT_EQ(f.detail("big-early"), "") << "a larger worker came";
  EXPECT_NE(f.reason("big-early"), "PartitionConfig");
}

TEST(core_cannot_run, AConfiguredClusterOffersWithoutAWorkerYet) {
  fixture f;
  f.s.priority.offered_gpu_count = 4;
  ASSERT_FALSE(f.run(principal::operator_named("admin"), C::recalculate_priorities{}).answer.error);
  EXPECT_EQ(f.create("eight", 8).pending_detail, "gpu_count 8 > largest offered 4");
  EXPECT_EQ(f.create("four", 4).pending_detail, "");
}

TEST(core_cannot_run, ATimeLimitOverEveryWallTimeOnlyMattersWithoutCheckpoints) {
  fixture f;
  f.s.priority.offered_wall_seconds = 86400;
  ASSERT_FALSE(f.run(principal::operator_named("admin"), C::recalculate_priorities{}).answer.error);
  EXPECT_EQ(f.create("long-no-ckpt", 1, 90000, false).pending_detail,
            "time_limit_seconds 90000 > longest wall time 86400 and the job does not checkpoint");
  EXPECT_EQ(f.create("long-ckpt", 1, 90000, true).pending_detail, "") << "handed on from its checkpoints";
  EXPECT_EQ(f.create("short", 1, 3600, false).pending_detail, "");
  EXPECT_EQ(f.create("no-limit", 1, std::nullopt, false).pending_detail, "");
}

}  // namespace
