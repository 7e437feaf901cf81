#include "batond/log_tools.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

#include "events/event_store.hpp"
#include "replay/recovery/open_log.hpp"
#include "replay/audit/rederive.hpp"

namespace baton::daemon {
namespace {

// Opens the log read-only and runs fn on it; an E thrown ends the command with exit 2 and why.
template <class E, class Fn>
int on_log(const std::string& data_dir, Fn fn) {
  try {
    return fn(*replay::open_log_read_only(data_dir));
  } catch (const E& e) {
    std::cerr << "batond: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

int verify_log(const std::string& data_dir) {
  return on_log<events::store_error>(data_dir, [](events::event_store& store) {
    auto r = store.verify();
    if (!r.ok) {
      std::cerr << "batond: event log damaged at event " << r.bad_seq << ": " << r.reason << "\n";
      return 2;
    }
    std::cout << "ok: " << r.events_checked << " events, no gaps, hash chain verified\n";
    return 0;
  });
}

int dump_log(const std::string& data_dir, uint64_t from, uint64_t limit) {
  return on_log<events::store_error>(data_dir, [&](events::event_store& store) {
    uint64_t n = 0;
    store.scan(from, 0, false, [&](const events::event_view& v) {
      std::cout << to_json(v.to_envelope()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return limit == 0 || ++n < limit;
    });
    return 0;
  });
}

int rederive_log(const std::string& data_dir) {
  return on_log<std::exception>(data_dir, [](events::event_store& store) {
    auto r = replay::rederive_decisions(store);
    replay::leave_world_to_exit(r);  // (batond --rederive exits next)
    for (const auto& p : r.problems) std::cerr << "mismatch: " << p << "\n";
    if (r.mismatches) {
      std::cerr << "batond: " << r.mismatches << " of " << r.decisions << " decisions did not re-derive\n";
      return 2;
    }
    std::cout << "ok: " << r.assignments << " assignment decisions, " << r.recalculations << " priority recalculations, "
              << r.plans << " plans, " << r.preemption_decisions << " preemption decisions (" << r.preemptions
              << " preemptions), " << r.provisioning_plans << " Slurm submission plans, " << r.salad_targets
              << " Salad targets and " << r.reaps << " reaps in " << r.events << " events re-derived identically\n";
    return 0;
  });
}

}  // namespace baton::daemon
