// baton-replay whatif on a log written through the core with known times: the recorded
// workload (submits, run times, GPUs, accounts), what happened, and the same workload under
// FIFO and under multifactor with the config's shares.
#include <gtest/gtest.h>

#include "core/app/decide.hpp"
#include "replay/sim/whatif.hpp"
#include "support/core_log.hpp"

using namespace baton;
namespace C = core::commands;
using nlohmann::json;

namespace {

constexpr core::time_us s_ = 1'000'000;
const core::time_us t0 = 1'700'000'000 * s_;

std::string uuid_of(char kind, size_t n) {
  char buf[64];  // (room for any size_t in both fields)
  std::snprintf(buf, sizeof buf, "%08zx-0000-4000-8000-%012zx", n, static_cast<size_t>(kind));
  return buf;
}

using logged = test::core_log;

core::priority_policy shares_policy() {
  core::priority_policy p;
  p.accounts = {{"chem", "root", 3, {{"ann", 1}}}, {"phys", "root", 1, {{"bob", 1}}}};
  return p;
}

// One 1-GPU worker; bob submits three jobs, then ann three (10 s apart); the worker, first
// polling at 100 s, runs each for 600 s in submit order (no recalculation is recorded: FIFO).
void fifo_campaign(logged& log) {
  log.s.priority = shares_policy();
  C::register_worker reg;
  reg.new_id = uuid_of('w', 0);
  reg.gpu_model = "A100";
  reg.credential_sha256 = "00";
  log.run(core::principal::operator_named("admin"), reg, t0);
  std::vector<std::string> users = {"bob", "bob", "bob", "ann", "ann", "ann"};
  for (size_t i = 0; i < users.size(); ++i) {
    C::create_job c;
    c.id = uuid_of('j', i);
    c.title = "md";
    c.input_bundle_path = "/b";
    c.user = users[i];
    c.time_limit_seconds = 1000;
    log.run(core::principal::operator_named("admin"), c, t0 + static_cast<core::time_us>(i) * 10 * s_);
  }
  auto me = core::principal::of_worker(reg.new_id);
  core::time_us now = t0 + 100 * s_;
  for (size_t i = 0; i < users.size(); ++i) {
    log.leases.touch(reg.new_id, now);
    auto o = log.run(me, C::request_job{reg.new_id}, now);
    auto* a = std::get_if<core::results::poll_answer>(&o.answer.value);
    ASSERT_TRUE(a && a->assigned);
    EXPECT_EQ(a->assigned->job_id, uuid_of('j', i)) << "submit order";
    log.run(me, C::start_job{a->assigned->job_id}, now);
    now += 600 * s_;
    log.leases.touch(reg.new_id, now);
    log.run(me, C::complete_job{a->assigned->job_id}, now);
  }
}

}  // namespace

TEST(Whatif, TheRecordedWorkloadIsWhatTheLogSays) {
  logged log;
  fifo_campaign(log);
  auto r = replay::workload_of(*log.store, std::nullopt, std::nullopt);
  ASSERT_EQ(r.jobs.size(), 6u);
  EXPECT_EQ(r.capacity_gpus, 1);
  EXPECT_EQ(r.never_ran, 0u);
  EXPECT_EQ(r.account_names, (std::vector<std::string>{"phys", "chem"}));  // in submit order
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.jobs[i].submit, static_cast<int64_t>(i) * 10);
    EXPECT_EQ(r.jobs[i].run, 600);
    EXPECT_EQ(r.jobs[i].estimate, 1000);
    EXPECT_EQ(r.happened[i].start, 100 + static_cast<int64_t>(i) * 600);
  }
  // A window: only ann's jobs.
  auto ann = replay::workload_of(*log.store, t0 + 30 * s_, std::nullopt);
  EXPECT_EQ(ann.jobs.size(), 3u);
  EXPECT_EQ(ann.account_names, (std::vector<std::string>{"chem"}));
}

TEST(Whatif, FifoOnTheSameMachineAndMultifactorWithTheConfigsShares) {
  logged log;
  fifo_campaign(log);
  replay::whatif_options o;
  auto fifo = replay::run_whatif(*log.store, shares_policy(), "fifo", o);
  EXPECT_EQ(fifo["capacity_gpus"], 1);
  // Happened: waits 100, 690, 1280, 1870, 2460, 3050. FIFO from each submit: 0, 590, ... 2950.
  EXPECT_DOUBLE_EQ(fifo["happened"]["mean_wait_seconds"].get<double>(), 1575.0);
  EXPECT_DOUBLE_EQ(fifo["simulated"]["mean_wait_seconds"].get<double>(), 1475.0);
  EXPECT_DOUBLE_EQ(fifo["happened"]["per_account"]["chem"]["target_share"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(fifo["happened"]["per_account"]["phys"]["share"].get<double>(), 0.5);

  // Multifactor: once bob's first job has run, ann's account (3 shares, no usage) comes first.
  auto r = replay::workload_of(*log.store, std::nullopt, std::nullopt);
  replay::sim_settings s;
  s.policy = shares_policy();
  ASSERT_TRUE(replay::sim_policy_from("multifactor", s));
  s.capacity = 1;
  s.group_shares = {{0, 1}, {1, 3}};  // phys, chem (as run_whatif takes them from the config)
  auto sim = replay::simulate(r.jobs, s);
  std::vector<int64_t> order(6);
  for (size_t i = 0; i < 6; ++i) order[static_cast<size_t>(sim.jobs[i].start / 600)] = sim.jobs[i].id;
  EXPECT_EQ(order, (std::vector<int64_t>{1, 4, 5, 6, 2, 3})) << "bob's first, then ann's three, then bob's";
  auto mf = replay::run_whatif(*log.store, shares_policy(), "multifactor", o);
  EXPECT_LT(mf["simulated"]["mean_wait_seconds"].get<double>(), fifo["happened"]["mean_wait_seconds"].get<double>());
  EXPECT_EQ(mf["policy"], "multifactor");
  EXPECT_THROW(replay::run_whatif(*log.store, shares_policy(), "nonsense", o), std::runtime_error);
}

// Jobs shorter than a second, back to back on one GPU: what happened used the GPU at most all
// the time, so its utilization is at most 1. Here the three 0.6 s runs fall in seconds 0-0,
// 0-1 and 1-2 from the first submit (rounded down): 2 GPU-seconds over a 2-second makespan.
// (Each run rounded on its own to at least a second had made it 3 GPU-seconds: 1.5.)
TEST(Whatif, UtilizationOfWhatHappenedIsAtMostOneWithSubSecondJobs) {
  logged log;
  log.s.priority = shares_policy();
  C::register_worker reg;
  reg.new_id = uuid_of('w', 0);
  reg.gpu_model = "A100";
  reg.credential_sha256 = "00";
  log.run(core::principal::operator_named("admin"), reg, t0);
  for (size_t i = 0; i < 3; ++i) {
    C::create_job c;
    c.id = uuid_of('j', i);
    c.title = "md";
    c.input_bundle_path = "/b";
    c.user = "ann";
    c.time_limit_seconds = 60;
    log.run(core::principal::operator_named("admin"), c, t0);
  }
  auto me = core::principal::of_worker(reg.new_id);
  core::time_us now = t0 + s_ / 10;
  for (size_t i = 0; i < 3; ++i) {
    log.leases.touch(reg.new_id, now);
    auto o = log.run(me, C::request_job{reg.new_id}, now);
    auto* a = std::get_if<core::results::poll_answer>(&o.answer.value);
    ASSERT_TRUE(a && a->assigned);
    log.run(me, C::start_job{a->assigned->job_id}, now);
    now += 6 * s_ / 10;
    log.leases.touch(reg.new_id, now);
    log.run(me, C::complete_job{a->assigned->job_id}, now);
    now += s_ / 10;
  }
  replay::whatif_options o;
  auto r = replay::run_whatif(*log.store, shares_policy(), "fifo", o);
  EXPECT_EQ(r["workload"]["jobs"], 3);
  EXPECT_EQ(r["happened"]["makespan_seconds"], 2);
  EXPECT_DOUBLE_EQ(r["happened"]["utilization"].get<double>(), 1.0);
  EXPECT_LE(r["simulated"]["utilization"].get<double>(), 1.0);
  // The simulation still runs each job for the second it needed (at least 1 s).
  auto w = replay::workload_of(*log.store, std::nullopt, std::nullopt);
  for (const auto& j : w.jobs) EXPECT_EQ(j.run, 1);
}
