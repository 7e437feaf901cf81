#pragma once
// The campaign log the replay and projection benchmarks read (docs/benchmarks.md): written
// through the core's own decide/apply, as batond would. A multifactor policy over 10 accounts
// x 10 users, `workers` workers that poll, start and complete jobs, new jobs submitted as the
// queue drains, a priority recalculation every 2,000 events and a planning cycle every 5,000.
#include <string>
#include <vector>

#include "bench/log_builder.hpp"
#include "core/world/plan_cycle.hpp"

namespace baton::bench {

// Writes about `target` events into b's log; the number of jobs created.
inline size_t write_campaign_log(log_builder& b, uint64_t target, size_t workers) {
  namespace C = core::commands;
  b.s.priority.max_jobs_per_user = 1u << 30;
  std::vector<std::string> users;
  for (int a = 0; a < 10; ++a) {
    core::account_def acc{"acct" + std::to_string(a), "root", static_cast<uint32_t>(1 + a), {}};
    for (int u = 0; u < 10; ++u) {
      users.push_back("u" + std::to_string(a) + "_" + std::to_string(u));
      acc.users[users.back()] = 1 + u % 3;
    }
    b.s.priority.accounts.push_back(std::move(acc));
  }
  auto admin = core::principal::operator_named("admin");
  b.run(core::principal::loop(), C::recalculate_priorities{});
  std::vector<std::string> worker_ids;
  for (size_t i = 0; i < workers; ++i) {
    C::register_worker reg;
    reg.new_id = uuid_of('w', i);
    reg.gpu_model = i % 2 ? "A100" : "H100";
    reg.gpu_count = 1 + static_cast<int>(i % 4);
    reg.credential_sha256 = "00";
    b.run(core::principal::operator_named("admin"), reg);
    worker_ids.push_back(reg.new_id);
  }
  std::vector<std::string> held(workers);
  size_t next_job = 0;
  uint64_t next_recalc = 2000, next_plan = 5000;
  while (b.written < target) {
    while (b.w.queued.size() < 2 * workers) {  // keep a queue: polls choose among many
      C::create_job c;
      c.id = uuid_of('j', next_job);
      c.title = "md";
      c.input_bundle_path = "/b";
      c.user = users[(next_job * 31) % users.size()];
      c.gpu_count = 1 + next_job % 3;
      c.time_limit_seconds = 600 + static_cast<int64_t>(next_job % 7) * 600;
      ++next_job;
      b.run(admin, c);
      b.now += 1000;
    }
    for (size_t i = 0; i < workers && b.written < target; ++i) {
      b.now += 5000;
      b.leases.touch(worker_ids[i], b.now);  // as its heartbeats would
      auto me = core::principal::of_worker(worker_ids[i]);
      if (!held[i].empty()) {
        b.run(me, C::complete_job{held[i]});
        held[i].clear();
        continue;
      }
      auto o = b.run(me, C::request_job{worker_ids[i]});
      auto* answer = std::get_if<core::results::poll_answer>(&o.answer.value);
      if (answer && answer->assigned) {
        held[i] = answer->assigned->job_id;
        b.run(me, C::start_job{held[i]});
      }
    }
    if (b.written >= next_recalc) {
      b.run(core::principal::loop(), C::recalculate_priorities{});
      next_recalc += 2000;
    }
    if (b.written >= next_plan) {
      b.record(core::plan_cycle(b.w, b.leases, b.s, b.now).events);
      next_plan += 5000;
    }
  }
  b.flush();
  return next_job;
}

}  // namespace baton::bench
