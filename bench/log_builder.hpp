#pragma once
// Builds a large event log through the core, as batond would write it: each command decided
// by core::decide at `now`, its events applied to the world and appended (in batches, the
// store opened without fsync: building is not what the benchmarks measure). Shared by
// rederive_bench and restart_bench.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/app/decide.hpp"
#include "core/events/event_payload.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"

namespace baton::bench {

inline std::string uuid_of(char kind, size_t n) {
  char buf[64];  // room for any size_t, though ids stay 36 characters
  std::snprintf(buf, sizeof buf, "%08zx-0000-4000-8000-%012zx", n, static_cast<size_t>(kind));
  return buf;
}

struct log_builder {
  std::unique_ptr<events::event_store> store;
  core::world w;
  core::lease_book leases;
  core::scheduler_settings s;
  core::time_us now = 1'700'000'000'000'000;
  std::vector<events::append_command> pending;
  uint64_t written = 0;

  explicit log_builder(const std::string& dir) {
    events::store_options fast;
    fast.sync = false;
    store = events::event_store::open(dir, fast);
  }
  void record(std::vector<core::domain_event> evs) {
    if (evs.empty()) return;
    core::decision d;
    d.events = std::move(evs);
    for (const auto& e : d.events) {
      events::append_command c;
      c.stream_id = e.stream;
      c.recorded_at_us = now;
      c.events.push_back({std::string(e.type()), core::ev::schema_of(e.payload), core::payload_bytes(e)});
      pending.push_back(std::move(c));
    }
    written += d.events.size();
    core::apply(w, d, now);
    if (pending.size() >= 5000) flush();
  }
  void flush() {
    if (pending.empty()) return;
    for (const auto& r : store->append(pending))
      if (!r.ok()) {
        std::fprintf(stderr, "append failed\n");
        std::exit(1);
      }
    pending.clear();
  }
  core::outcome run(core::principal who, core::command cmd) {
    core::envelope e{who, who.actor(), "bench", std::move(cmd), std::nullopt};
    auto o = core::decide(w, leases, s, e, now);
    if (o.answer.error) {
      std::fprintf(stderr, "refused: %s\n", o.answer.error->message.c_str());
      std::exit(1);
    }
    record(std::move(o.events));
    return o;
  }
};

}  // namespace baton::bench
