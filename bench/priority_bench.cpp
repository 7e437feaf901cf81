// Priority recalculation benchmark (docs/benchmarks.md):
//   priority_bench [QUEUED_JOBS] [USERS] [POLICY]   default 100000 1000 multifactor
// Builds a world through the core's own decide/apply: an account tree three levels deep
// (10 top accounts × 10 sub-accounts × USERS/100 users each), one finished run per user so
// that every association has usage, and QUEUED_JOBS queued jobs spread over the users. Then
// times the recalculation as the scheduler runs it: decide (Fair Tree over the usage) and
// apply (every queued job's priority, the queue re-keyed). Five rounds; best and median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/app/decide.hpp"
#include "core/world/priority.hpp"
#include "core/world/staged_rekey.hpp"

using namespace baton;
namespace C = core::commands;
using clock_type = std::chrono::steady_clock;

namespace {

std::string uuid_of(const char* kind, size_t n) {
  char buf[64];  // room for any size_t
  std::snprintf(buf, sizeof buf, "%08zx-0000-4000-8000-%012zx", n, static_cast<size_t>(kind[0]));
  return buf;
}

struct bench_world {
  core::world w;
  core::lease_book leases;
  core::scheduler_settings s;
  core::time_us now = 1'700'000'000'000'000;

  core::outcome run(core::principal who, core::command cmd) {
    core::envelope e{who, who.actor(), "bench", std::move(cmd), std::nullopt};
    auto o = core::decide(w, leases, s, e, now);
    if (o.answer.error) {
      std::fprintf(stderr, "refused: %s\n", o.answer.error->message.c_str());
      std::exit(1);
    }
    core::decision d;
    d.events = std::move(o.events);
    core::apply(w, d, now);
    return o;
  }
};

double ms_since(clock_type::time_point t) { return std::chrono::duration<double, std::milli>(clock_type::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  size_t jobs = argc > 1 ? std::stoul(argv[1]) : 100000, users = argc > 2 ? std::stoul(argv[2]) : 1000;
  std::string policy = argc > 3 ? argv[3] : "multifactor";
  bench_world b;
  if (!core::set_policy_name(b.s.priority, policy)) {
    std::fprintf(stderr, "unknown policy %s\n", policy.c_str());
    return 2;
  }
  b.s.priority.max_jobs_per_user = 1u << 30;
  size_t per_sub = std::max<size_t>(1, users / 100);
  std::vector<std::string> user_names;
  for (int top = 0; top < 10; ++top) {
    b.s.priority.accounts.push_back({"top" + std::to_string(top), "root", static_cast<uint32_t>(10 + top), {}});
    for (int sub = 0; sub < 10; ++sub) {
      core::account_def a{"top" + std::to_string(top) + "-" + std::to_string(sub),
                          "top" + std::to_string(top),
                          static_cast<uint32_t>(1 + sub),
                          {}};
      for (size_t u = 0; u < per_sub; ++u) {
        std::string name = "u" + std::to_string(user_names.size());
        a.users[name] = static_cast<uint32_t>(1 + u % 3);
        user_names.push_back(name);
      }
      b.s.priority.accounts.push_back(std::move(a));
    }
  }
  auto admin = core::principal::operator_named("admin");
  b.run(core::principal::loop(), C::recalculate_priorities{});
  // One finished run per user, of varying length: every association has usage.
  C::register_worker reg;
  reg.new_id = uuid_of("w", 0);
  reg.gpu_model = "A100";
  reg.gpu_count = 8;
  reg.credential_sha256 = "00";
  b.run(core::principal::operator_named("admin"), reg);
  auto worker = core::principal::of_worker(reg.new_id);
  for (size_t u = 0; u < user_names.size(); ++u) {
    C::create_job c;
    c.id = uuid_of("r", u);
    c.title = "run";
    c.input_bundle_path = "/b";
    c.user = user_names[u];
    c.gpu_count = 1 + u % 8;
    b.run(admin, c);
    b.leases.touch(reg.new_id, b.now);  // as its heartbeats would
    b.run(worker, C::request_job{reg.new_id});
    b.run(worker, C::start_job{c.id});
    b.now += static_cast<core::time_us>(1 + (u * 7919) % 3600) * 1'000'000;
    b.run(worker, C::complete_job{c.id});
  }
  auto t0 = clock_type::now();
  for (size_t i = 0; i < jobs; ++i) {
    C::create_job c;
    c.id = uuid_of("q", i);
    c.title = "queued";
    c.input_bundle_path = "/b";
    c.user = user_names[(i * 31) % user_names.size()];
    c.nice = static_cast<int64_t>(i % 5) * 10;
    c.gpu_count = 1 + i % 4;
    b.run(admin, c);
    b.now += 1000;
  }
  std::printf("setup: %zu users in %zu accounts, %zu queued jobs created in %.0f ms\n", user_names.size(),
              b.s.priority.accounts.size(), jobs, ms_since(t0));
  std::vector<double> decide_ms, apply_ms;
  for (int round = 0; round < 5; ++round) {
    b.now += 60'000'000;
    auto t = clock_type::now();
    core::envelope e{core::principal::loop(), "loop:priority", "bench", C::recalculate_priorities{}, std::nullopt};
    auto o = core::decide(b.w, b.leases, b.s, e, b.now);
    decide_ms.push_back(ms_since(t));
    t = clock_type::now();
    core::decision d;
    d.events = std::move(o.events);
    core::apply(b.w, d, b.now);
    apply_ms.push_back(ms_since(t));
  }
  // As the scheduler actor runs it: the first event, then slices of 1,000 jobs (polls are
  // answered between them), then the swap. What a poll can wait for is one slice or the swap.
  std::vector<double> slice_max_ms, swap_ms, retire_ms, staged_total_ms;
  for (int round = 0; round < 5; ++round) {
    b.now += 60'000'000;
    core::envelope e{core::principal::loop(), "loop:priority", "bench", C::recalculate_priorities{}, std::nullopt};
    auto t0 = clock_type::now();
    auto o = core::decide(b.w, b.leases, b.s, e, b.now);
    core::decision decided;
    decided.events.push_back(o.events.front());
    core::apply(b.w, decided, b.now);
    double longest = ms_since(t0);

    auto staged = core::begin_staging(b.w);
    for (bool done = false; !done;) {
      auto t = clock_type::now();
      done = core::stage_some(b.w, staged, 1000);
      longest = std::max(longest, ms_since(t));
    }
    auto t = clock_type::now();
    auto retired = core::swap_in(b.w, std::move(staged), core::decide_priorities_applied(b.w), b.now);
    swap_ms.push_back(ms_since(t));
    t = clock_type::now();
    retired.clear();  // batond frees it on another thread
    retire_ms.push_back(ms_since(t));
    slice_max_ms.push_back(longest);
    staged_total_ms.push_back(ms_since(t0));
  }
  auto report = [](const char* what, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::printf("%-32s best %7.1f ms  median %7.1f ms\n", what, v.front(), v[v.size() / 2]);
  };
  std::printf("policy %s, %zu queued jobs, %zu users\n", policy.c_str(), b.w.queued.size(), user_names.size());
  report("recalculate: decide (Fair Tree)", decide_ms);
  report("recalculate: apply (re-key)", apply_ms);
  std::vector<double> total;
  for (size_t i = 0; i < decide_ms.size(); ++i) total.push_back(decide_ms[i] + apply_ms[i]);
  report("recalculate: total", total);
  report("staged: longest step (decide or slice)", slice_max_ms);
  report("staged: swap", swap_ms);
  report("staged: freeing the old index", retire_ms);
  report("staged: total work", staged_total_ms);
  return 0;
}
