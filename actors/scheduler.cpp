#include "actors/scheduler.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "events/payload.hpp"

namespace baton::actors {
namespace {

struct scheduler_state {
  scheduler_state() = default;  // user-declared: see stack-notes C2
  core::world world;
  lease_book leases;
  scheduler_settings settings;
  clock_fn clock;
  log_writer_actor log;
  bool failed = false;  // the log refused a write: nothing more can be promised
  static inline const char* name = "scheduler";
};

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;

// Consecutive events of one stream become one append command: they land together.
std::vector<events::append_command> to_commands(const core::decision& d, core::time_us now, const std::string& actor,
                                                const std::string& correlation) {
  std::vector<events::append_command> out;
  for (const auto& e : d.events) {
    if (out.empty() || out.back().stream_id != e.stream) {
      events::append_command c;
      c.stream_id = e.stream;
      c.recorded_at_us = now;
      c.actor = actor;
      c.correlation_id = correlation;
      out.push_back(std::move(c));
    }
    out.back().events.push_back({e.type, 1, events::to_payload(e.payload)});
  }
  return out;
}

void track_leases(self_ptr self, const api_command& c, const api_reply& reply, core::time_us now) {
  auto& leases = self->state.leases;
  if (reply.status >= 300) return;
  if (c.kind == op::register_worker)
    leases.touch(reply.body.at("worker_id").get<std::string>(), now);
  else if (c.kind == op::heartbeat)
    leases.touch(c.target, now);
  else if (c.kind == op::deregister)
    leases.erase(c.target);
}

// Appends; on success delivers the reply, on failure stops deciding (the world would no
// longer match the log).
template <class Promise>
void persist(self_ptr self, const core::decision& d, core::time_us now, const std::string& actor,
             const std::string& correlation, Promise rp, api_reply reply) {
  auto cmds = to_commands(d, now, actor, correlation);
  self->request(self->state.log, caf::infinite, append_atom::value, std::move(cmds))
      .then(
          [self, rp, reply](std::vector<events::append_result>& results) mutable {
            for (const auto& r : results)
              if (!r.ok()) {
                spdlog::critical("event log refused a decided write ({}): {}; the scheduler stops deciding",
                                 events::to_string(r.status), r.message);
                self->state.failed = true;
                rp.deliver(api_reply{503, {{"error", "log_unavailable"}, {"message", r.message}}});
                return;
              }
            rp.deliver(std::move(reply));
          },
          [self, rp](caf::error& e) mutable {
            spdlog::critical("event log failed: {}; the scheduler stops deciding", self->system().render(e));
            self->state.failed = true;
            rp.deliver(api_reply{503, {{"error", "log_unavailable"}, {"message", self->system().render(e)}}});
          });
}

scheduler_actor::behavior_type scheduler(self_ptr self, log_writer_actor log, core::world world, lease_table leases,
                                         scheduler_settings settings, clock_fn clock) {
  auto& st = self->state;
  st.log = std::move(log);
  st.world = std::move(world);
  st.settings = settings;
  st.clock = std::move(clock);
  auto now = st.clock();
  for (const auto& [id, w] : st.world.workers)
    if (!w.gone && !w.placeholder) st.leases.touch(id, leases.count(id) ? leases.at(id) : now);
  self->delayed_send(self, std::chrono::microseconds(settings.reap_interval_us), reap_atom::value);
  return {
      [self](command_atom, api_command& c) -> caf::result<api_reply> {
        auto& st = self->state;
        if (st.failed) return api_reply{503, {{"error", "log_unavailable"}, {"message", "the event log failed earlier"}}};
        auto now = st.clock();
        core::decision all;
        handled h;
        for (int round = 0; round < 2; ++round) {
          h = handle(st.world, st.leases, st.settings, c, now);
          if (h.decision.error) break;
          core::apply(st.world, h.decision, now);
          all.events.insert(all.events.end(), h.decision.events.begin(), h.decision.events.end());
          if (!h.again) break;
        }
        if (h.decision.error && all.events.empty()) return h.reply;
        track_leases(self, c, h.reply, now);
        if (all.events.empty()) return h.reply;
        auto rp = self->make_response_promise<api_reply>();
        persist(self, all, now, c.actor, c.request_id, rp, h.reply);
        return rp;
      },
      [self](leases_atom) -> lease_table { return self->state.leases.all(); },
      [self](reap_atom) {
        auto& st = self->state;
        self->delayed_send(self, std::chrono::microseconds(st.settings.reap_interval_us), reap_atom::value);
        if (st.failed) return;
        auto now = st.clock();
        auto d = reap(st.world, st.leases, st.settings, now);
        if (d.events.empty()) return;
        core::apply(st.world, d, now);
        for (const auto& e : d.events)
          if (e.type == "worker.reaped") st.leases.erase(e.stream.substr(7));
        spdlog::info("reaper: {} events (stale workers and their jobs)", d.events.size());
        auto cmds = to_commands(d, now, "loop:reaper", "");
        self->request(st.log, caf::infinite, append_atom::value, std::move(cmds))
            .then([](std::vector<events::append_result>&) {},
                  [self](caf::error& e) {
                    spdlog::critical("event log failed: {}", self->system().render(e));
                    self->state.failed = true;
                  });
      },
  };
}

}  // namespace

scheduler_actor spawn_scheduler(caf::actor_system& sys, log_writer_actor log, core::world world, lease_table leases,
                                scheduler_settings settings, clock_fn clock) {
  return sys.spawn(scheduler, std::move(log), std::move(world), std::move(leases), settings, std::move(clock));
}

}  // namespace baton::actors
