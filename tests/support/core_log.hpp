#pragma once
// A log written through the core, as batond writes one: each command decided on the world by
// core::decide, its events appended to a real RocksDB log in a temp dir (one append command
// per event, recorded at the decision's time) and applied to the world.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/app/decide.hpp"
#include "core/events/event_payload.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "support/temp_dir.hpp"

namespace baton::test {

struct core_log {
  temp_dir dir;
  std::unique_ptr<events::event_store> store = events::event_store::open(dir.path());
  core::world w;
  core::lease_book leases;
  core::scheduler_settings s;

  // Appends the events, recorded at `at`, and applies them.
  void record(const std::vector<core::domain_event>& evs, core::time_us at) {
    if (evs.empty()) return;
    std::vector<events::append_command> cmds;
    for (const auto& e : evs) {
      events::append_command c;
      c.stream_id = e.stream;
      c.recorded_at_us = at;
      c.events.push_back({std::string(e.type()), core::ev::schema_of(e.payload), core::payload_bytes(e)});
      cmds.push_back(std::move(c));
    }
    for (const auto& r : store->append(cmds)) EXPECT_TRUE(r.ok());
    core::decision d;
    d.events = evs;
    core::apply(w, d, at);
  }
  // Decides a command at `now` (a refusal fails the test), records and applies its events.
  core::outcome run(core::principal who, core::command cmd, core::time_us now) {
    core::envelope e{who, who.actor(), "test", std::move(cmd), std::nullopt};
    auto o = core::decide(w, leases, s, e, now);
    EXPECT_FALSE(o.answer.error) << o.answer.error->message;
    record(o.events, now);
    return o;
  }
};

}  // namespace baton::test
