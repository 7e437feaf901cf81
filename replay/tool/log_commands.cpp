#include "replay/tool/log_commands.hpp"

#include <fstream>
#include <iostream>

#include "replay/tool/job_story.hpp"
#include "replay/audit/log_verify.hpp"
#include "replay/recovery/open_log.hpp"
#include "replay/audit/rederive.hpp"
#include "replay/tool/simulate_command.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

std::vector<chain_anchor_line> anchors_of(const std::string& data_dir) { return read_anchors(data_dir + "/anchors.jsonl"); }

// Runs a command, turning an exception into exit code 2 with one line for people.
template <class Fn>
int guarded(Fn fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    std::cerr << "baton-replay: " << e.what() << "\n";
    return 2;
  }
}

// Runs a pass with a progress bar up to `total`, cleared before anything is printed.
template <class Pass>
auto with_progress(const char* what, uint64_t total, Pass pass) {
  progress_bar bar(what, total);
  return pass(bar.fn());
}

}  // namespace

int verify_command(const log_options& o) {
  return guarded([&] {
    auto store = open_log_read_only(o.data_dir);
    auto r = with_progress("verify", store->last_seq(),
                           [&](const progress_fn& p) { return verify_log(*store, anchors_of(o.data_dir), p); });
    if (o.json) {
      std::cout << to_json(r).dump(2) << "\n";
    } else if (r.ok) {
      std::cout << "ok: " << r.events << " events, no gaps, every payload decodes, hash chain verified, " << r.anchors_checked
                << " chain anchors match\n";
    } else {
      std::cout << "damaged at event " << r.bad_seq << ": " << r.reason << "\n";
    }
    return r.ok ? 0 : 1;
  });
}

int rederive_command(const log_options& o, uint64_t from, uint64_t to) {
  return guarded([&] {
    auto store = open_log_read_only(o.data_dir);
    auto r = with_progress("rederive", to ? to : store->last_seq(), [&](const progress_fn& p) {
      return rederive_decisions(*store, {from, to}, p);
    });
    leave_world_to_exit(r);  // (this command exits next)
    if (o.json) {
      json out = {{"ok", r.mismatches == 0},
                  {"events", r.events},
                  {"decisions", r.decisions},
                  {"assignments", r.assignments},
                  {"priority_recalculations", r.recalculations},
                  {"plans", r.plans},
                  {"preemption_decisions", r.preemption_decisions},
                  {"provisioning_plans", r.provisioning_plans},
                  {"salad_targets", r.salad_targets},
                  {"reaps", r.reaps},
                  {"storage_decisions", r.storage_decisions},
                  {"simulation_passes", r.sim_passes},
                  {"unchecked", r.unchecked},
                  {"mismatches", r.mismatches}};
      if (!r.divergences.empty()) out["first_divergence"] = to_json(r.divergences.front());
      std::cout << out.dump(2) << "\n";
    } else if (r.mismatches == 0) {
      std::cout << "ok: " << r.decisions << " decisions in " << r.events << " events re-derived identically (" << r.assignments
                << " assignments, " << r.recalculations << " priority recalculations, " << r.plans << " plans, "
                << r.preemption_decisions << " preemption decisions, " << r.provisioning_plans << " Slurm submission plans, "
                << r.salad_targets << " Salad targets, " << r.reaps << " reaps, " << r.storage_decisions << " storage decisions";
      if (r.sim_passes) std::cout << ", " << r.sim_passes << " simulation passes";
      std::cout << ")";
      if (r.unchecked) std::cout << "; " << r.unchecked << " older records carry no basis and were replayed unchecked";
      std::cout << "\n";
    } else {
      std::cout << r.mismatches << " of " << r.decisions << " decisions did not re-derive\n";
      if (!r.divergences.empty()) {
        const auto& d = r.divergences.front();
        std::cout << "first divergence: event " << d.seq << " (" << d.type << " on " << d.stream << "): " << d.what
                  << "\nrecorded -> re-derived, field by field:\n";
        for (const auto& op : d.diff) std::cout << "  " << op.dump() << "\n";
      }
    }
    return r.mismatches == 0 ? 0 : 1;
  });
}

int state_command(const log_options& o, const state_query& q) {
  return guarded([&] {
    auto store = open_log_read_only(o.data_dir);
    auto state =
        with_progress("state", q.seq.value_or(store->last_seq()), [&](const progress_fn& p) { return state_at(*store, q, p); });
    std::cout << state.dump(2) << "\n";
    return 0;
  });
}

int history_command(const log_options& o, const std::string& job_id) {
  return guarded([&] {
    auto store = open_log_read_only(o.data_dir);
    auto story = with_progress("history", store->last_seq(), [&](const progress_fn& p) { return job_story(*store, job_id, p); });
    if (o.json)
      std::cout << story.dump(2) << "\n";
    else
      std::cout << format_story(story);
    return story.value("found", false) ? 0 : 1;
  });
}

int whatif_command(const log_options& o, const whatif_options& w) {
  return guarded([&] {
    const auto policy = load_policy(w.config_path);
    auto store = open_log_read_only(o.data_dir);
    auto r = run_whatif(*store, policy, w.policy.empty() ? core::policy_name(policy) : w.policy, w);
    if (o.json)
      std::cout << r.dump(2) << "\n";
    else
      print_whatif(std::cout, r);
    return 0;
  });
}

int export_command(const log_options& o, const export_filter& f, export_format format, const std::string& out_path) {
  return guarded([&] {
    auto store = open_log_read_only(o.data_dir);
    if (out_path.empty() || out_path == "-") {
      export_log(*store, f, format, std::cout);
      return 0;
    }
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + out_path);
    auto s =
        with_progress("export", store->last_seq(), [&](const progress_fn& p) { return export_log(*store, f, format, out, p); });
    out.close();
    if (!out) throw std::runtime_error("cannot write " + out_path);
    std::cerr << "exported " << s.count << " events (" << s.first_seq << ".." << s.last_seq << ") to " << out_path << "\n";
    return 0;
  });
}

int verify_export_command(const log_options& o, const std::string& path) {
  return guarded([&] {
    std::unique_ptr<events::event_store> store;
    std::vector<chain_anchor_line> anchors;
    if (!o.data_dir.empty()) {
      store = open_log_read_only(o.data_dir);
      anchors = anchors_of(o.data_dir);
    }
    auto r = verify_export(path, store.get(), anchors);
    if (o.json) {
      std::cout << to_json(r).dump(2) << "\n";
    } else if (r.ok) {
      std::cout << "ok: " << r.records << " records, each hash verified"
                << (r.checked_against_log ? ", every one matches the log" : "") << ", " << r.anchors_checked
                << " chain anchors match\n";
    } else {
      for (const auto& p : r.problems)
        std::cout << (p.line ? "line " + std::to_string(p.line) + ": " : std::string()) << p.what << "\n";
    }
    return r.ok ? 0 : 1;
  });
}

}  // namespace baton::replay
