#pragma once
// The events of a simulation's log (`baton-replay simulate --log DIR`; replay/sim/sim_log.hpp):
// one struct each, described once (events/described.hpp) like batond's own catalogue, which
// they are not part of (batond never writes or reads them). Names in ascending byte order, as
// the log writes them; the CBOR is what these events' JSON payloads wrote before they were
// typed, so older simulation logs read the same.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/events/event_types.hpp"
#include "replay/sim/swf.hpp"

namespace baton::replay::sim_ev {

// The settings a simulation ran with (replay/sim/simulator.hpp's sim_settings, less its test
// switches). Shares are [group, shares] and [group, user, shares] rows.
struct settings_record {
  std::string backfill;  // none, easy, conservative
  uint32_t bf_max_job_test = 0;
  int64_t capacity = 1;
  std::vector<std::vector<int64_t>> group_shares;
  std::string order;  // fifo, multifactor, lattice
  core::ev::policy_record policy;
  std::vector<std::vector<int64_t>> user_shares;
  BATON_DESCRIBE(backfill, bf_max_job_test, capacity, group_shares, order, policy, user_shares)
};

struct started {
  static constexpr std::string_view type = "sim.started";
  nlohmann::json about;  // what the result records of the run (trace, filter, policy name): for people
  settings_record settings;
  BATON_DESCRIBE(about, settings)
};

struct reservation_record {
  int64_t job = 0;  // the job's id in the trace
  int64_t start = 0;
  BATON_DESCRIBE(job, start)
  bool operator==(const reservation_record& o) const { return job == o.job && start == o.start; }
};

// A pass that ran the planner; jobs by their ids in the trace.
struct pass_decided {
  static constexpr std::string_view type = "sim.pass_decided";
  int64_t at = 0;
  bool recalculated = false;
  std::vector<reservation_record> reservations;
  std::vector<int64_t> starts;
  BATON_DESCRIBE(at, recalculated, reservations, starts)
  bool operator==(const pass_decided& o) const {
    return at == o.at && recalculated == o.recalculated && reservations == o.reservations && starts == o.starts;
  }
};

// A job of the trace (replay/sim/swf.hpp's sim_job), as its fields.
struct job_record : sim_job {
  BATON_DESCRIBE(estimate, group, id, procs, run, submit, user)
};

struct job_arrived : job_record {
  static constexpr std::string_view type = "sim.job_arrived";
};

// More processors than the machine has.
struct job_refused : job_record {
  static constexpr std::string_view type = "sim.job_refused";
  std::string why;
  template <class S, class F>
  static void describe(S& x, F&& f) {
    job_record::describe(x, f);
    f("why", x.why);
  }
};

struct job_ended {
  static constexpr std::string_view type = "sim.job_ended";
  int64_t at = 0;
  int64_t id = 0;
  BATON_DESCRIBE(at, id)
};

using event = std::variant<started, pass_decided, job_arrived, job_refused, job_ended>;

// A simulation event by its type's name; nullopt for a type outside "sim." (batond's events).
// Throws events::payload_error naming the field that does not read, std::runtime_error for a
// "sim." type this build does not know.
std::optional<event> read(std::string_view type, const nlohmann::json& payload);
// The type's name and the bytes the log stores.
std::string_view type_of(const event& e);
std::string encode(const event& e);
nlohmann::json to_json(const event& e);

}  // namespace baton::replay::sim_ev
