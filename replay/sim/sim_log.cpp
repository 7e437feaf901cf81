#include "replay/sim/sim_log.hpp"

#include <algorithm>
#include <stdexcept>

#include "events/described.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

constexpr int64_t us = 1'000'000;
const std::string run_stream = "sim/run";

std::string job_stream(int64_t id) { return "sim/job/" + std::to_string(id); }

const char* order_name(sim_order o) {
  switch (o) {
    case sim_order::fifo:
      return "fifo";
    case sim_order::multifactor:
      return "multifactor";
    case sim_order::lattice:
      return "lattice";
  }
  return "fifo";
}

// A pass as sim.pass_decided records it: jobs by their ids.
sim_ev::pass_decided pass_event(const sim_pass& p, const sim_machine& m) {
  sim_ev::pass_decided e;
  e.at = p.at;
  e.recalculated = p.recalculated;
  for (uint32_t j : p.starts) e.starts.push_back(m.job(j).id);
  for (const auto& r : p.reservations) e.reservations.push_back({m.job(r.job).id, r.start});
  return e;
}

}  // namespace

sim_ev::settings_record to_record(const sim_settings& s) {
  sim_ev::settings_record r;
  r.capacity = s.capacity;
  r.order = order_name(s.order);
  r.backfill = to_string(s.backfill);
  r.policy = core::to_record(s.policy);
  r.bf_max_job_test = s.bf_max_job_test;
  for (const auto& [g, shares] : s.group_shares) r.group_shares.push_back({g, shares});
  for (const auto& [k, shares] : s.user_shares) r.user_shares.push_back({k.first, k.second, shares});
  return r;
}

sim_settings settings_of(const sim_ev::settings_record& r) {
  sim_settings s;
  s.capacity = r.capacity;
  bool known = false;
  for (sim_order each : {sim_order::fifo, sim_order::multifactor, sim_order::lattice})
    if (r.order == order_name(each)) s.order = each, known = true;
  if (!known)
    throw std::runtime_error("the simulation's settings: order '" + r.order + "' is none of fifo, multifactor, lattice");
  if (!sim_backfill_from(r.backfill, s.backfill))
    throw std::runtime_error("the simulation's settings: backfill '" + r.backfill + "' is none of none, easy, conservative");
  s.policy = core::policy_of(r.policy);
  s.bf_max_job_test = r.bf_max_job_test;
  auto shares_of = [](int64_t v, const char* what) {
    if (v < 0 || v > UINT32_MAX) throw std::runtime_error(std::string("the simulation's settings: ") + what + " out of range");
    return static_cast<uint32_t>(v);
  };
  for (const auto& g : r.group_shares) {
    if (g.size() != 2) throw std::runtime_error("the simulation's settings: a group_shares row is not [group, shares]");
    s.group_shares[g[0]] = shares_of(g[1], "group_shares");
  }
  for (const auto& u : r.user_shares) {
    if (u.size() != 3) throw std::runtime_error("the simulation's settings: a user_shares row is not [group, user, shares]");
    s.user_shares[{u[0], u[1]}] = shares_of(u[2], "user_shares");
  }
  return s;
}

// --- writing ---

sim_log_writer::sim_log_writer(events::event_store& store, const sim_settings& s, json about) : store_(store) {
  if (store_.last_seq() != 0) throw std::runtime_error("the log to write the simulation to is not empty");
  add(run_stream, 0, sim_ev::started{std::move(about), to_record(s)});
}

void sim_log_writer::add(std::string stream, int64_t at_seconds, const sim_ev::event& e) {
  events::append_command c;
  c.stream_id = std::move(stream);
  c.recorded_at_us = at_seconds * us;
  c.actor = "loop:simulator";
  c.events.push_back({std::string(sim_ev::type_of(e)), 1, sim_ev::encode(e)});
  batch_.push_back(std::move(c));
  if (batch_.size() >= 4096) flush();
}

void sim_log_writer::flush() {
  if (batch_.empty()) return;
  for (const auto& r : store_.append(batch_))
    if (!r.ok()) throw std::runtime_error("cannot write the simulation's log: " + r.message);
  written_ += batch_.size();
  batch_.clear();
}

void sim_log_writer::arrived(const sim_job& j) { add(job_stream(j.id), j.submit, sim_ev::job_arrived{{j}}); }

void sim_log_writer::refused(const sim_job& j, const std::string& why) {
  add(job_stream(j.id), j.submit, sim_ev::job_refused{{j}, why});
}

void sim_log_writer::ended(const sim_job& j, int64_t at) { add(job_stream(j.id), at, sim_ev::job_ended{at, j.id}); }

void sim_log_writer::passed(const sim_pass& p, const sim_machine& m) { add(run_stream, p.at, pass_event(p, m)); }

uint64_t sim_log_writer::finish() {
  flush();
  store_.sync_wal();
  store_.flush();
  return written_;
}

// --- the codec ---

namespace sim_ev {

std::optional<event> read(std::string_view type, const json& payload) {
  if (type.substr(0, 4) != "sim.") return std::nullopt;
  if (type == started::type) return events::from_json<started>(payload);
  if (type == pass_decided::type) return events::from_json<pass_decided>(payload);
  if (type == job_arrived::type) return events::from_json<job_arrived>(payload);
  if (type == job_refused::type) return events::from_json<job_refused>(payload);
  if (type == job_ended::type) return events::from_json<job_ended>(payload);
  throw std::runtime_error("unknown simulation event " + std::string(type));
}

std::string_view type_of(const event& e) {
  return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::type; }, e);
}

std::string encode(const event& e) {
  return std::visit([](const auto& x) { return events::to_cbor(x); }, e);
}

json to_json(const event& e) {
  return std::visit([](const auto& x) { return events::to_json(x); }, e);
}

}  // namespace sim_ev

// --- re-deriving ---

// The timestamp now_ is over: if no pass was recorded at it, the machine must agree that none ran.
sim_rederiver::verdict sim_rederiver::missing_pass_check() {
  verdict v;
  if (!facts_ || passed_now_ || !checking_) return v;  // (before the checked range the log says no pass ran)
  auto again = machine_->decide_pass(now_);
  if (again) {  // (a timestamp without a pass is not counted as a decision; a pass missing from the log is)
    v.decision = true;
    v.rederived = events::to_json(pass_event(*again, *machine_));
    v.recorded = nullptr;
    v.what = "a pass at " + std::to_string(now_) + " s re-derived as " + v.rederived.dump() + ", none was logged";
    machine_->apply_pass(*again);
  }
  return v;
}

sim_rederiver::verdict sim_rederiver::on(const sim_ev::event& e, int64_t at_us, bool check) {
  verdict v;
  const int64_t at = at_us / us;
  const std::string type(sim_ev::type_of(e));
  if (const auto* s = std::get_if<sim_ev::started>(&e)) {
    if (machine_) return v.what = "a second sim.started", v;
    machine_.emplace(settings_of(s->settings));
    return v;
  }
  if (!machine_) return v.what = type + " before sim.started", v;
  if (const auto* logged = std::get_if<sim_ev::pass_decided>(&e)) {
    if (!facts_ || at != now_ || passed_now_) {
      v.what = "a pass at " + std::to_string(at) + " s that follows no fact of its timestamp";
      return v;
    }
    passed_now_ = true;
    sim_pass recorded;
    recorded.at = logged->at;
    recorded.recalculated = logged->recalculated;
    for (const int64_t id : logged->starts) {
      auto i = index_of_.find(id);
      if (i == index_of_.end()) return v.what = "the pass starts job " + std::to_string(id) + ", which never arrived", v;
      // Only a waiting job can start, once: a log that says otherwise is reported, never put in force.
      if (machine_->start_of(i->second) >= 0 ||
          std::find(recorded.starts.begin(), recorded.starts.end(), i->second) != recorded.starts.end())
        return v.what = "the pass starts job " + std::to_string(id) + ", which is not waiting", v;
      recorded.starts.push_back(i->second);
    }
    if (!check) {
      machine_->decide_pass(now_);  // (priorities due now are recalculated as they were)
      machine_->apply_pass(recorded);
      return v;
    }
    v.decision = true;
    auto again = machine_->decide_pass(now_);
    std::optional<sim_ev::pass_decided> rederived;
    if (again) rederived = pass_event(*again, *machine_);
    if (!rederived || !(*rederived == *logged)) {
      v.recorded = events::to_json(*logged);
      v.rederived = rederived ? events::to_json(*rederived) : json(nullptr);
      v.what = "simulation pass re-derived differently: " + v.rederived.dump();
    }
    machine_->apply_pass(recorded);  // the log's pass stays in force, so later checks stand on what happened
    return v;
  }
  // A fact: it may open a new round (the simulator's loop: ends, arrivals, one pass), which
  // closes the one before. A round follows a pass at the same time when that pass started a
  // job that runs for 0 s.
  if (facts_ && at < now_)
    return v.what = type + " at " + std::to_string(at) + " s, before the facts of " + std::to_string(now_) + " s", v;
  if (facts_ && at > now_) v = missing_pass_check();
  if (!facts_ || at > now_ || passed_now_) {
    now_ = at;
    passed_now_ = false;
    checking_ = check;
    facts_ = true;
  }
  if (v.what) return v;
  if (const auto* a = std::get_if<sim_ev::job_arrived>(&e)) {
    const sim_job& j = *a;
    auto i = machine_->arrive(j);
    if (!i) return v.what = "job " + std::to_string(j.id) + " arrived but asks for more processors than the machine", v;
    if (!index_of_.emplace(j.id, *i).second) return v.what = "job " + std::to_string(j.id) + " arrives twice", v;
  } else if (const auto* r = std::get_if<sim_ev::job_refused>(&e)) {
    if (r->procs <= machine_->settings().capacity)
      return v.what = "job " + std::to_string(r->id) + " refused though it fits the machine", v;
  } else if (const auto* ended = std::get_if<sim_ev::job_ended>(&e)) {
    const int64_t id = ended->id;
    auto i = index_of_.find(id);
    if (i == index_of_.end() || !machine_->end(i->second, at))
      return v.what = "job " + std::to_string(id) + " ends at " + std::to_string(at) + " s but was not running", v;
    const auto& j = machine_->job(i->second);
    if (machine_->start_of(i->second) + j.run != at)
      return v.what = "job " + std::to_string(id) + " ends at " + std::to_string(at) + " s, not after its run of " +
                      std::to_string(j.run) + " s",
             v;
  }
  return v;
}

sim_rederiver::verdict sim_rederiver::at_end() { return missing_pass_check(); }

}  // namespace baton::replay
