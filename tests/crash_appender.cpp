// Test helper for crash_test: appends through the log writer actor from several producer
// threads, forever, and prints "<command id> <seq>" to stdout after each acknowledged
// append. The test kills it with SIGKILL and checks every printed append survived.
#include <caf/all.hpp>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "actors/log_writer.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"

using namespace baton;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crash_appender DATA_DIR RUN_ID\n");
    return 2;
  }
  std::shared_ptr<events::event_store> store = events::event_store::open(argv[1]);
  std::string run = argv[2];
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  caf::actor_system sys{cfg};
  auto log = actors::spawn_log_writer(sys, store);
  std::vector<std::thread> producers;
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&, p] {
      caf::scoped_actor self{sys};
      for (uint64_t i = 0;; ++i) {
        events::append_command c;
        c.stream_id = "crash/" + std::to_string(p);
        c.command_id = run + "-" + std::to_string(p) + "-" + std::to_string(i);
        c.recorded_at_us = static_cast<int64_t>(i);
        c.actor = "crash_appender";
        c.events.push_back({"crash.tick", 1, events::to_payload({{"i", i}})});
        if (i % 5 == 0) c.events.push_back({"crash.extra", 1, events::to_payload({{"i", i}})});
        self->request(log, caf::infinite, actors::append_atom::value, std::vector<events::append_command>{c})
            .receive(
                [&](std::vector<events::append_result>& r) {
                  if (!r.empty() && r[0].ok()) {
                    // One write(2) per line: atomic on a pipe or file, never torn by the kill.
                    auto line = c.command_id + " " + std::to_string(r[0].first_seq) + "\n";
                    if (::write(1, line.data(), line.size()) < 0) _exit(3);
                  }
                },
                [&](caf::error&) { _exit(4); });
      }
    });
  for (auto& t : producers) t.join();
}
