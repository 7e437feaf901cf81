#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "core/dag.hpp"
#include "core/decide.hpp"

namespace baton::test {

// The application layer with a fake clock and no actors: decide, then apply what was decided
// and its dependency fallout (and renew a registered worker's lease), as the scheduler actor does.
struct core_under_test {
  core::world w;
  core::lease_book leases;
  core::scheduler_settings s;
  core::time_us now = 1'000'000'000;
  std::vector<std::pair<core::decision, core::time_us>> log;  // what was applied, in order (for replays)

  core::outcome run(core::principal who, core::command cmd, std::optional<core::invalid_field_report> invalid = std::nullopt) {
    core::envelope e{who, who.actor(), "req", std::move(cmd), std::move(invalid)};
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
    if (auto* r = std::get_if<core::results::registered>(&o.answer.value)) leases.touch(r->worker_id, now);
    return o;
  }
};

}  // namespace baton::test
