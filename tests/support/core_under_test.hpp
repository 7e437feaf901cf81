#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/world/dag.hpp"
#include "core/app/decide.hpp"

namespace baton::test {

// The application layer with a fake clock and no actors: decide, then apply what was decided
// and its dependency fallout (and renew a registered worker's lease), as the scheduler actor does.
struct core_under_test {
  core::world w;
  core::lease_book leases;
  core::scheduler_settings s;
  core::time_us now = 1'000'000'000;
  std::vector<std::pair<core::decision, core::time_us>> log;  // what was applied, in order (for replays)

  // A command that asks to be decided again once its events are applied (a poll that first
  // closed its worker's cancelled job) is, as the scheduler does: the second answer counts.
  core::outcome run(core::principal who, core::command cmd, std::optional<core::invalid_field_report> invalid = std::nullopt) {
    core::envelope e{who, who.actor(), "req", std::move(cmd), std::move(invalid)};
    auto o = decide_and_apply(e);
    if (o.again) o = decide_and_apply(e);
    if (auto* r = std::get_if<core::results::registered>(&o.answer.value)) leases.touch(r->worker_id, now);
    return o;
  }

  core::outcome decide_and_apply(const core::envelope& e) {
    auto o = core::decide(w, leases, s, e, now);
    if (!o.answer.error) {
      core::decision d;
      d.events = o.events;
      core::apply(w, d, now);
      // As the scheduler does: the jobs that can never run once d's jobs ended, applied
      // and logged right after d.
      auto fallout = core::dependency_fallout(w, core::ended_jobs(d), s.priority, now);
      log.emplace_back(std::move(d), now);
      if (!fallout.events.empty()) {
        core::apply(w, fallout, now);
        log.emplace_back(std::move(fallout), now);
      }
    }
    return o;
  }

  // A worker registered now by an admin (an A100 with `gpus` GPUs): its id.
  std::string register_worker(const std::string& id, int gpus = 1) {
    core::commands::register_worker r;
    r.new_id = id;
    r.gpu_model = "A100";
    r.gpu_count = gpus;
    r.credential_sha256 = "00";
    auto o = run(core::principal::operator_named("admin"), r);
    if (o.answer.error) ADD_FAILURE() << "registration refused: " << o.answer.error->message;
    return id;
  }
  // The worker polls: the job it is given, if any.
  std::optional<std::string> poll(const std::string& worker_id) {
    auto o = run(core::principal::of_worker(worker_id), core::commands::request_job{worker_id});
    auto* a = std::get_if<core::results::poll_answer>(&o.answer.value);
    if (!a || !a->assigned) return std::nullopt;
    return a->assigned->job_id;
  }
};

}  // namespace baton::test
