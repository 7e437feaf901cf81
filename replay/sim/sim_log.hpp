#pragma once
// A simulation as a baton event log (`baton-replay simulate --log DIR`), and the re-derivation
// of every pass recorded in one. Streams and events, each recorded at its simulated time (the
// trace's seconds, as microseconds):
//   sim/run        sim.started      {settings, about}: first, once
//                  sim.pass_decided {at, recalculated, starts: [job ids], reservations: [{job, start}]}
//   sim/job/<id>   sim.job_arrived  {id, submit, run, estimate, procs, user, group}
//                  sim.job_refused  {the same, why}: more processors than the machine
//                  sim.job_ended    {id, at}
// A pass is recorded when it ran the planner. Re-derivation folds the simulated machine
// (replay/sim/sim_machine.hpp) from the facts, decides every recorded pass again on it, and checks
// that no pass the machine would have run at a timestamp is missing from the log.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "events/event_store.hpp"
#include "replay/sim/sim_events.hpp"
#include "replay/sim/sim_machine.hpp"
#include "replay/sim/simulator.hpp"

namespace baton::replay {

sim_ev::settings_record to_record(const sim_settings& s);
// Throws std::runtime_error naming what is wrong.
sim_settings settings_of(const sim_ev::settings_record& r);

// Appends a simulation's facts and passes to an empty log as they happen, in batches.
class sim_log_writer : public sim_observer {
 public:
  // `about`: what the result records of the run (trace, filter, policy name), kept in sim.started.
  sim_log_writer(events::event_store& store, const sim_settings& s, nlohmann::json about);
  void arrived(const sim_job& j) override;
  void refused(const sim_job& j, const std::string& why) override;
  void ended(const sim_job& j, int64_t at) override;
  void passed(const sim_pass& p, const sim_machine& m) override;
  // Appends what is buffered and makes the log durable. The events written.
  uint64_t finish();

 private:
  void add(std::string stream, int64_t at_seconds, const sim_ev::event& e);
  void flush();

  events::event_store& store_;
  std::vector<events::append_command> batch_;
  uint64_t written_ = 0;
};

// Re-derives a simulation log's passes, fed every event of the log in order.
class sim_rederiver {
 public:
  struct verdict {
    bool decision = false;            // a pass was checked
    std::optional<std::string> what;  // set when it (or the log around it) did not re-derive
    nlohmann::json recorded, rederived;
  };
  // `check`: compare (else only fold the event in, as before a --from).
  // Throws std::runtime_error for settings that do not read.
  verdict on(const sim_ev::event& e, int64_t at_us, bool check);
  // After the last event: the last timestamp's pass, if one was due, must be in the log.
  verdict at_end();

 private:
  verdict missing_pass_check();

  std::optional<sim_machine> machine_;
  std::unordered_map<int64_t, uint32_t> index_of_;  // job id -> machine index (looked up, never walked)
  int64_t now_ = 0;                                 // the timestamp of the facts folded last
  bool facts_ = false;                              // any fact folded yet
  bool passed_now_ = false;                         // a pass was recorded at now_
  bool checking_ = false;                           // the facts at now_ were within the checked range
};

}  // namespace baton::replay
