#include "replay/audit/rederive.hpp"

#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "core/provisioning/cloud.hpp"
#include "core/app/decide.hpp"
#include "core/events/event_payload.hpp"
#include "core/world/plan_cycle.hpp"
#include "core/app/storage_decide.hpp"
#include "core/world/preemption.hpp"
#include "core/world/priority.hpp"
#include "core/provisioning/provisioning_basis.hpp"
#include "core/world/scheduling.hpp"
#include "core/events/streams.hpp"
#include "events/payload.hpp"
#include "events/scan_ahead.hpp"
#include "replay/recovery/prepared_event.hpp"
#include "replay/sim/sim_log.hpp"

namespace baton::replay {

using nlohmann::json;

json to_json(const divergence& d) {
  return {{"seq", d.seq},           {"stream", d.stream},       {"type", d.type}, {"what", d.what},
          {"recorded", d.recorded}, {"rederived", d.rederived}, {"diff", d.diff}};
}

namespace {

namespace ev = core::ev;

// The decisions re-derived here, by their struct's place in the catalogue's variant.
constexpr size_t placeholder_created = ev::index_of_v<ev::worker_placeholder_created>,
                 cloud_scaled = ev::index_of_v<ev::cloud_scaled>, plan_made = ev::index_of_v<ev::plan_made>,
                 preemptions_decided = ev::index_of_v<ev::preemptions_decided>, worker_reaped = ev::index_of_v<ev::worker_reaped>,
                 job_assigned = ev::index_of_v<ev::job_assigned>,
                 priorities_recalculated = ev::index_of_v<ev::priorities_recalculated>,
                 unknown_kind = ev::index_of_v<ev::unknown_event>;  // (a simulation's events among them)

bool is_provisioning(size_t kind) { return kind == placeholder_created || kind == cloud_scaled; }

// A provisioning decision as compared: its record's bytes without the basis (what it was
// decided on, not what was decided) and, for a Salad target, without the provider's from and to.
std::string decided_bytes(ev::placeholder_plan_record r) {
  r.basis.reset();
  return events::to_cbor(r);
}
std::string decided_bytes(ev::cloud_scaled t) {
  t.basis.reset();
  t.from = t.to = 0;
  return events::to_cbor(t);
}
// Such bytes as a report shows them (null: nothing decided).
json decided_json(const std::optional<std::string>& bytes, bool salad) {
  if (!bytes) return nullptr;
  json j = events::from_payload(*bytes);
  if (salad) j.erase("from"), j.erase("to");
  return j;
}

// What a provisioning event records as decided (a placeholder's submission plan, none for a
// placeholder submitted without one, or the Salad target) and the point it was decided at.
struct provisioning_decided {
  std::optional<std::string> bytes;
  std::optional<uint64_t> point;
};
provisioning_decided provisioning_decided_of(const ev::payload& p) {
  if (const auto* s = std::get_if<ev::cloud_scaled>(&p)) return {decided_bytes(*s), core::basis_point(s->basis)};
  const auto& plan = std::get<ev::worker_placeholder_created>(p).plan;
  if (!plan) return {};
  return {decided_bytes(*plan), core::basis_point(plan->basis)};
}

// An event's place in the variant: from the struct read on the reading thread, else by its name.
size_t kind_of(const events::decoded_event& e) {
  if (const auto* p = prepared_job(e)) return p->typed.index();
  if (const auto* p = prepared_typed(e)) return p->typed.index();
  return ev::index_of(e.type);
}

}  // namespace

void leave_world_to_exit(rederive_report& r) {
  static auto* left = new std::vector<core::world*>;  // (never destroyed: reachable at exit)
  if (r.world) left->push_back(r.world.release());
}

rederive_report rederive_decisions(const events::event_store& store, rederive_range range, const progress_fn& progress) {
  rederive_report r;
  const uint64_t to = range.to;
  // A plan was made on a snapshot of the world taken some events before it was recorded
  // (core/world/plan_cycle.hpp: "based_on" counts the events applied then). A first pass finds
  // those points; the replay takes each snapshot there, with the inputs the plan recorded.
  std::map<uint64_t, std::vector<std::pair<uint64_t, core::recorded_plan_inputs>>> snapshot_at;  // applied -> (seq, inputs)
  // Provisioning decisions likewise name the point they were decided at (their record's
  // basis): they are decided again there, and compared when their event comes.
  struct provisioning_record {
    uint64_t seq = 0;
    ev::payload recorded;  // a worker.placeholder_created or a cloud.scaled
  };
  std::map<uint64_t, std::vector<provisioning_record>> provisioning_at;  // applied -> the records decided there
  std::set<uint64_t> found_provisioning;                                 // the provisioning events found so (seq)
  const uint64_t first = std::max<uint64_t>(range.from, 1), last = to == 0 ? UINT64_MAX : to;
  auto note = [&](uint64_t seq, std::string_view type, uint32_t schema, std::string_view bytes) {
    if (seq < first || seq > last) return;
    const size_t kind = ev::index_of(type);
    if (kind == plan_made) {
      auto in = core::plan_inputs_of(std::get<ev::plan_made>(ev::decode(type, schema, bytes)));
      snapshot_at[in.based_on].emplace_back(seq, std::move(in));
    } else if (is_provisioning(kind)) {
      auto recorded = ev::decode(type, schema, bytes);
      if (auto point = provisioning_decided_of(recorded).point) {
        provisioning_at[*point].push_back({seq, std::move(recorded)});
        found_provisioning.insert(seq);
      }
    }
  };
  // Found through the stream index instead of a pass over the whole log: plans are on the
  // scheduler's stream, Salad targets on the cloud's, and a placeholder is its worker
  // stream's first event (core/provisioning/provisioning.cpp creates it for a worker id no event has
  // named). The main pass checks that none was missed (a damaged index).
  for (const std::string stream : {core::scheduler_stream, core::salad_stream})
    for (uint64_t version = 1;;) {
      auto batch = store.read_stream(stream, version, 4096);
      for (const auto& e : batch) note(e.seq, e.type, e.schema_version, e.payload);
      if (batch.size() < 4096) break;
      version += batch.size();
    }
  for (uint64_t seq : store.first_events_of_streams("worker/"))
    if (seq >= first && seq <= last)
      for (const auto& e : store.read(seq, 1)) note(e.seq, e.type, e.schema_version, e.payload);  // (only a placeholder is noted)
  std::map<uint64_t, core::plan_snapshot> snapshots;         // plan event seq -> its snapshot
  std::map<uint64_t, std::optional<std::string>> redecided;  // provisioning event seq -> decided_bytes again (nullopt: nothing)
  r.world = std::make_unique<core::world>();
  core::world& w = *r.world;
  auto take_snapshots = [&] {
    if (auto due = snapshot_at.find(w.applied); due != snapshot_at.end()) {
      for (const auto& [seq, in] : due->second) {
        auto snap = core::snapshot_for_plan(w, in.stale, in.rule, in.settings, in.planned_at);
        snapshots.emplace(seq, std::move(snap));
      }
      snapshot_at.erase(due);
    }
    if (auto due = provisioning_at.find(w.applied); due != provisioning_at.end()) {
      for (const auto& p : due->second) {
        std::optional<std::string> again;
        if (const auto* s = std::get_if<ev::cloud_scaled>(&p.recorded)) {
          again = decided_bytes(core::retarget_salad(w, *s));
        } else if (auto plan = core::replan_submission(w, *std::get<ev::worker_placeholder_created>(p.recorded).plan)) {
          again = decided_bytes(std::move(*plan));
        }
        redecided.emplace(p.seq, std::move(again));
      }
      provisioning_at.erase(due);
    }
  };
  auto mismatch = [&](const events::decoded_event& e, const std::string& what, const json& recorded, const json& again) {
    ++r.mismatches;
    if (r.problems.size() >= 10) return;
    r.problems.push_back("event " + std::to_string(e.seq) + ": " + what);
    r.divergences.push_back(
        {e.seq, std::string(e.stream_id), std::string(e.type), what, recorded, again, json::diff(recorded, again)});
  };
  // A decision made again differently: shown by its first event's payload, or `nothing` when
  // it made no event.
  auto differently = [&](const events::decoded_event& e, const char* decision, const core::decision& again, const json& recorded,
                         const json& rederived, const char* nothing = "nothing") {
    mismatch(
        e, std::string(decision) + " re-derived differently: " + (again.events.empty() ? std::string(nothing) : rederived.dump()),
        recorded, rederived);
  };
  // Whether a plan or a recalculation decided again (one event) is the recorded one: the same
  // bytes as the reading thread kept, or (another writer's encoding of the same values) the
  // same JSON. JSON is built only for those and for a report.
  auto same_as_recorded = [&](events::decoded_event& e, const core::decision& again) {
    if (again.events.size() != 1) return false;
    if (prepared_typed(e) && core::ev::encode(again.events[0].payload) == e.cbor) return true;
    return core::payload_json(again.events[0]) == events::payload_of(e);
  };
  // The job events a re-derived preemption decision says must come next, in order.
  std::deque<core::domain_event> expected;
  // The policy the last recalculation recorded, read once: almost every recalculation records
  // the one before's, and reading it cost more than comparing its bytes.
  std::string last_policy_bytes;  // its record as logged ("" before the first)
  core::priority_policy last_policy;
  sim_rederiver sim;
  core::assignment_choice choice;  // each assignment's, made again over the last one's (choose_assignment_into)
  std::string remade;              // each re-made decision record's bytes, in one buffer
  // Prefetches for the job events coming (no effect on any result): most of this thread's
  // time went to cache misses on memory the reading thread wrote or that an event finds by
  // hashing (the job table's slot, then the job). In stages, some events ahead, each stage
  // loading only what the one before brought into the cache.
  const events::look_ahead ahead{{24, 16, 8, 4}, [&w](const events::decoded_event& next, size_t stage) {
                                   const prepared_job_event* p = prepared_job(next);
                                   if (!p) return;
                                   switch (stage) {
                                     case 0:  // the prepared change and the payload's bytes
                                       for (size_t at = 0; at < sizeof(prepared_job_event); at += 64)
                                         __builtin_prefetch(reinterpret_cast<const char*>(p) + at);
                                       for (size_t at = 0; at < next.cbor.size(); at += 64)
                                         __builtin_prefetch(next.cbor.data() + at);
                                       break;
                                     case 1:
                                       w.jobs.prefetch_slot(p->job_id_hash);
                                       __builtin_prefetch(next.stream_id.data());  // (the job's id is in it)
                                       break;
                                     case 2:
                                       w.jobs.prefetch_entry(p->job_id_hash);
                                       break;
                                     default:
                                       w.jobs.prefetch_id(p->job_id_hash);
                                   }
                                 }};
  // (events read, hash-checked and decoded on a second thread, ahead of this one)
  events::scan_decoded(
      store, 1, to, true,
      [&](events::decoded_event& e) {
        if (progress) progress(e.seq);
        const bool check = e.seq >= range.from;
        if (check) ++r.events;
        take_snapshots();  // the world as it was before this event: w.applied events in
        // (null for a job event read from its bytes on the reading thread: payload_of decodes it)
        const json& payload = e.payload;
        const std::string &stream = e.stream_id, &type = e.type;
        const size_t kind = kind_of(e);
        if (kind == unknown_kind) {  // perhaps a simulation's log (baton-replay simulate --log)
          std::optional<sim_ev::event> simulated;
          std::optional<std::string> unread;
          try {
            simulated = sim_ev::read(type, events::payload_of(e));
            if (simulated) {
              auto v = sim.on(*simulated, e.recorded_at_us, check);
              if (v.decision) ++r.decisions, ++r.sim_passes;
              if (v.what) mismatch(e, *v.what, v.recorded, v.rederived);
            }
          } catch (const std::exception& x) {
            unread = x.what();
          }
          if (unread) mismatch(e, "a simulation event that does not read: " + *unread, events::payload_of(e), nullptr);
          if (simulated || unread) {
            apply_decoded(w, e);
            return true;
          }
        }
        if (!check) {
          apply_decoded(w, e);
          return true;
        }
        if (!expected.empty() && to == 0) {  // (a range may end inside a decision's events)
          auto want = std::move(expected.front());
          expected.pop_front();
          const json& logged = events::payload_of(e);
          const std::string want_type(want.type());
          const json want_payload = core::payload_json(want);
          if (want.stream != stream || want_type != type || want_payload != logged)
            mismatch(e,
                     "the decision's event re-derived as " + want_type + " on " + want.stream + " " + want_payload.dump() +
                         ", logged " + type + " on " + stream + " " + logged.dump(),
                     {{"stream", stream}, {"type", type}, {"payload", logged}},
                     {{"stream", want.stream}, {"type", want_type}, {"payload", want_payload}});
        }
        if (kind == preemptions_decided) {
          ++r.decisions;
          ++r.preemption_decisions;
          const auto recorded = std::get<ev::preemptions_decided>(ev::from_json(type, payload));
          auto in = core::preemption_inputs_of(recorded);
          auto again = core::decide_preemptions(w, in.stale, in.rule, e.recorded_at_us);
          json rederived = again.events.empty() ? json(nullptr) : core::payload_json(again.events[0]);
          if (rederived != payload) {
            differently(e, "preemption decision", again, payload, rederived);
          } else {
            r.preemptions += recorded.preemptions.size() + recorded.expired.size();
            expected.assign(std::make_move_iterator(again.events.begin() + 1), std::make_move_iterator(again.events.end()));
          }
        }
        if (is_provisioning(kind)) {
          const bool salad = kind == cloud_scaled;
          const auto recorded = provisioning_decided_of(ev::from_json(type, payload));
          auto again = redecided.find(e.seq);
          if (again == redecided.end() && !found_provisioning.count(e.seq) && recorded.point) {
            mismatch(e,
                     "a provisioning decision with a basis that the stream index did not lead to (it is not its worker "
                     "stream's first event, or the index is damaged)",
                     decided_json(recorded.bytes, salad), json(nullptr));
          } else if (again == redecided.end()) {
            ++r.unchecked;  // no basis recorded (an older log)
          } else {
            ++r.decisions;
            ++(salad ? r.salad_targets : r.provisioning_plans);
            if (again->second != recorded.bytes) {
              json want = decided_json(recorded.bytes, salad), got = decided_json(again->second, salad);
              mismatch(e,
                       std::string(salad ? "Salad replica target" : "Slurm submission plan") +
                           " re-derived differently: " + got.dump(),
                       want, got);
            }
            redecided.erase(again);
          }
        }
        if (kind == worker_reaped) {
          const auto recorded = std::get<ev::worker_reaped>(ev::from_json(type, payload));
          if (!recorded.lease) {
            ++r.unchecked;
          } else {
            ++r.decisions;
            ++r.reaps;
            auto again = core::rereap(w, stream.substr(7), recorded, e.recorded_at_us);
            json rederived = again.events.empty() ? json(nullptr) : core::payload_json(again.events[0]);
            if (rederived != payload)
              differently(e, "reap", again, payload, rederived, "no reap: the worker was not stale under the recorded facts");
            else
              expected.insert(expected.end(), std::make_move_iterator(again.events.begin() + 1),
                              std::make_move_iterator(again.events.end()));
          }
        }
        if (kind == job_assigned) {
          ++r.decisions;
          ++r.assignments;
          // The decision's time is the event's; the deadline rule in force is the one it recorded.
          // (Its record and inputs were read on the reading thread, unless the payload did not
          // read there.)
          const prepared_job_event* ready = prepared_job(e);
          json decoded_here;  // the recorded record's JSON, read only when needed (a report, or records that differ)
          auto recorded_json = [&]() -> const json& {
            if (decoded_here.is_null()) decoded_here = events::payload_of(e).value("decision", json());
            return decoded_here;
          };
          const bool prepared = ready && ready->decision_inputs;
          // (Not read on the reading thread: read here, where an error stops the pass at this event.)
          std::optional<core::ev::job_assigned> read_here;
          if (!prepared) read_here = std::get<core::ev::job_assigned>(core::ev::from_json(type, events::payload_of(e)));
          assignment_inputs inputs_here;
          if (read_here) inputs_here = assignment_inputs_of(read_here->decision);
          const assignment_inputs& in = prepared ? *ready->decision_inputs : inputs_here;
          const std::string& worker_id =
              prepared ? std::get<core::ev::job_assigned>(ready->typed).worker_id : read_here->worker_id;
          core::choose_assignment_into(w, worker_id, in.stale, in.rule, e.recorded_at_us, choice);
          // The record decided again is the same record when it writes the bytes the recorded one
          // writes; otherwise (another writer's encoding of the same values, or a divergence) the
          // two are compared as JSON. JSON is built only for those and for a report.
          bool same_record;
          if (ready && ready->decision_at && choice.record) {
            remade.clear();
            events::write_cbor(*choice.record, remade);
            const size_t at = *ready->decision_at;
            same_record = (e.cbor.size() >= at + remade.size() && e.cbor.compare(at, remade.size(), remade) == 0) ||
                          events::to_json(*choice.record) == recorded_json();
          } else {
            same_record = choice.record ? events::to_json(*choice.record) == recorded_json() : recorded_json().is_null();
          }
          const std::string_view job_id = std::string_view(stream).substr(4);
          if (!choice.job_id || *choice.job_id != job_id || !same_record) {
            const json& recorded = recorded_json();
            json again = choice.record ? core::to_json(*choice.record) : json(nullptr);
            mismatch(e,
                     "logged " + std::string(job_id) + " for worker " + worker_id + ", re-derived " +
                         choice.job_id.value_or("nothing") + (!same_record ? " (decision record differs)" : ""),
                     {{"job_id", job_id}, {"decision", recorded}},
                     {{"job_id", choice.job_id ? json(*choice.job_id) : json(nullptr)}, {"decision", std::move(again)}});
          }
        }
        if (kind == priorities_recalculated) {
          ++r.decisions;
          ++r.recalculations;
          const auto* ready = prepared_typed(e);
          std::optional<ev::priorities_recalculated> read_here;  // (not read on the reading thread)
          if (!ready) read_here = std::get<ev::priorities_recalculated>(ev::from_json(type, payload));
          const auto& recorded = ready ? std::get<ev::priorities_recalculated>(ready->typed) : *read_here;
          static const ev::policy_record no_policy;
          std::string policy_bytes = events::to_cbor(recorded.policy ? *recorded.policy : no_policy);
          if (policy_bytes != last_policy_bytes) {
            last_policy = core::policy_of(recorded.policy ? *recorded.policy : no_policy);
            last_policy_bytes = std::move(policy_bytes);
          }
          auto again = core::decide_recalculation(w, last_policy, e.recorded_at_us);
          if (!same_as_recorded(e, again)) {
            json rederived = again.events.size() == 1 ? core::payload_json(again.events[0]) : json(nullptr);
            differently(e, "priority recalculation", again, events::payload_of(e), rederived);
          }
        }
        if (core::is_storage_decision(kind)) {
          ++r.decisions;
          ++r.storage_decisions;
          if (auto why = core::rederive_storage(w, ev::from_json(type, payload))) mismatch(e, *why, payload, json(nullptr));
        }
        if (kind == plan_made) {
          ++r.decisions;
          ++r.plans;
          auto snap = snapshots.find(e.seq);
          auto again =
              snap == snapshots.end() ? core::decision{} : core::decide_plan(w, snap->second, core::run_planner(snap->second));
          if (snap != snapshots.end()) snapshots.erase(snap);
          if (!same_as_recorded(e, again)) {
            json rederived = again.events.size() == 1 ? core::payload_json(again.events[0]) : json(nullptr);
            differently(e, "plan", again, events::payload_of(e), rederived);
          }
        }
        apply_decoded(w, e);
        return true;
      },
      [](events::decoded_event& e, std::string_view cbor) { return prepare_rederived_event(e, cbor); }, &ahead);
  if (to == 0) {  // the simulation's last timestamp: its pass, if one was due, must be logged
    auto v = sim.at_end();
    if (v.decision) ++r.decisions, ++r.sim_passes;
    if (v.what) {
      ++r.mismatches;
      r.problems.push_back("at the log's end: " + *v.what);
      r.divergences.push_back({store.last_seq(), "sim/run", "sim.pass_decided", *v.what, v.recorded, v.rederived,
                               json::diff(v.recorded, v.rederived)});
    }
  }
  if (!expected.empty() && to == 0) {  // (a range may end inside a decision's events)
    ++r.mismatches;
    r.problems.push_back("event " + std::to_string(r.events) + ": the log ends before the preemption decision's " +
                         std::string(expected.front().type()));
  }
  return r;
}

}  // namespace baton::replay
