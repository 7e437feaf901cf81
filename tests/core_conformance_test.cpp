// Seed 002's hard conformance filter and checkpoint factor as baton reads them: under
// lattice:sensitive a job's first worker fixes the fingerprint (GPU model + driver) of every
// worker that may carry it later; a job may also ask for one at submission under any policy;
// f8 comes from the checkpoint times the job's workers measured.
#include <gtest/gtest.h>

#include "core/world/priority.hpp"
#include "support/core_under_test.hpp"
#include "support/ids.hpp"

using namespace baton;
using core::principal;
namespace C = core::commands;
namespace R = core::results;

namespace {

struct conformance_fixture : test::core_under_test, ::testing::Test {
  principal admin = principal::operator_named("admin");

  void use_policy(const std::string& name) {
    ASSERT_TRUE(core::set_policy_name(s.priority, name));
    run(principal::loop(), C::recalculate_priorities{});
  }
  std::string worker(const std::string& name, const std::string& model, const std::string& driver) {
    C::register_worker r;
    r.new_id = test::uid(name);
    r.gpu_model = model;
    r.gpu_count = 1;
    r.driver_version = driver;
    r.credential_sha256 = "00";
    auto o = run(principal::operator_named("admin"), r);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    return r.new_id;
  }
  std::string job(const std::string& name, const std::string& conformance = "") {
    C::create_job c;
    c.id = test::uid(name);
    c.title = name;
    c.input_bundle_path = "/b";
    c.conformance = conformance;
    auto o = run(admin, c);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    now += 1'000'000;
    return c.id;
  }
  void hand_back(const std::string& worker_id, const std::string& job_id, double checkpoint_seconds = 0) {
    ASSERT_FALSE(run(principal::of_worker(worker_id), C::start_job{job_id}).answer.error);
    C::handoff_start h;
    h.id = job_id;
    h.reason = "worker_shutdown";
    ASSERT_FALSE(run(principal::of_worker(worker_id), h).answer.error);
    C::handoff_complete done;
    done.id = job_id;
    done.report.manifest_path = "/ck/m.json";
    if (checkpoint_seconds > 0) done.report.seconds = checkpoint_seconds;
    ASSERT_FALSE(run(principal::of_worker(worker_id), done).answer.error);
  }
  const core::job& j(const std::string& id) { return *w.find_job(id); }
};

TEST_F(conformance_fixture, UnderTheSensitiveProfileAJobStaysOnItsFirstWorkersFingerprint) {
  use_policy("lattice:sensitive");
  auto first = worker("first", "A100", "535.104.05");
  auto id = job("md");
  ASSERT_EQ(poll(first), id);
  EXPECT_EQ(j(id).conformance, "A100/535.104.05") << "pinned by its first assignment";
  hand_back(first, id);
  ASSERT_FALSE(run(principal::of_worker(first), C::deregister{first}).answer.error);

  auto newer_driver = worker("newer", "A100", "550.54.14");
  auto other_model = worker("h100", "H100", "535.104.05");
  auto unknown_driver = worker("unknown", "A100", "");
  EXPECT_EQ(poll(newer_driver), std::nullopt) << "another driver version is another conformance group";
  EXPECT_EQ(poll(other_model), std::nullopt);
  EXPECT_EQ(poll(unknown_driver), std::nullopt) << "a driver it did not report is not a match";
  auto same = worker("same", "A100", "535.104.05");
  EXPECT_EQ(poll(same), id);
  // The pin is in the decision record: the assignment re-derives with it.
  core::world replayed;
  for (const auto& [d, at] : log) core::apply(replayed, d, at);
  EXPECT_EQ(replayed.find_job(id)->conformance, "A100/535.104.05");
}

TEST_F(conformance_fixture, OtherPoliciesPinNothing) {
  use_policy("multifactor");
  auto a = worker("a", "A100", "535.104.05");
  auto id = job("md");
  ASSERT_EQ(poll(a), id);
  EXPECT_EQ(j(id).conformance, "");
  hand_back(a, id);
  ASSERT_FALSE(run(principal::of_worker(a), C::deregister{a}).answer.error);
  auto b = worker("b", "A100", "550.54.14");
  EXPECT_EQ(poll(b), id);
}

TEST_F(conformance_fixture, AJobMayAskForAFingerprintUnderAnyPolicy) {
  use_policy("fifo");
  auto id = job("md", "H100/550.54.14");
  auto a100 = worker("a100", "A100", "550.54.14");
  EXPECT_EQ(poll(a100), std::nullopt);
  auto h100 = worker("h100", "H100", "550.54.14");
  EXPECT_EQ(poll(h100), id);
}

TEST_F(conformance_fixture, CheckpointTimesTheWorkersMeasuredFeedF8) {
  use_policy("lattice:hpc_batch");
  auto a = worker("a", "A100", "535.104.05");
  auto fast = job("fast"), unknown = job("unknown");
  ASSERT_EQ(poll(a), fast);
  hand_back(a, fast, 30);  // its checkpoint took half a minute
  EXPECT_EQ(j(fast).checkpoint_seconds, 30);
  auto f8 = [&](const std::string& id) { return core::explain_priority(w, j(id)).lattice.f[7]; };
  EXPECT_DOUBLE_EQ(f8(fast), 1.0 / 1.5);
  EXPECT_DOUBLE_EQ(f8(unknown), 0.5) << "no checkpoint measured yet: Lattice's unknown";
  // A requeue clone keeps what its original measured.
  ASSERT_EQ(poll(a), fast);
  ASSERT_FALSE(run(principal::of_worker(a), C::start_job{fast}).answer.error);
  ASSERT_FALSE(run(principal::of_worker(a), C::complete_job{fast}).answer.error);
  auto o = run(admin, C::requeue_job{fast, test::uid("fast-again")});
  ASSERT_FALSE(o.answer.error) << o.answer.error->message;
  EXPECT_EQ(j(test::uid("fast-again")).checkpoint_seconds, 30);
}

}  // namespace
