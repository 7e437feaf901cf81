#include "replay/sim/sim_log.hpp"

#include <algorithm>
#include <stdexcept>

#include "events/payload.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

constexpr int64_t us = 1'000'000;
const std::string run_stream = "sim/run";

std::string job_stream(int64_t id) { return "sim/job/" + std::to_string(id); }

json job_json(const sim_job& j) {
  return {{"id", j.id},       {"submit", j.submit}, {"run", j.run},    {"estimate", j.estimate},
          {"procs", j.procs}, {"user", j.user},     {"group", j.group}};
}

sim_job job_from(const json& j) {
  sim_job out;
  out.id = j.at("id").get<int64_t>();
  out.submit = j.at("submit").get<int64_t>();
  out.run = j.at("run").get<int64_t>();
  out.estimate = j.at("estimate").get<int64_t>();
  out.procs = j.at("procs").get<int64_t>();
  out.user = j.at("user").get<int64_t>();
  out.group = j.at("group").get<int64_t>();
  return out;
}

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
json pass_json(const sim_pass& p, const sim_machine& m) {
  json starts = json::array(), reservations = json::array();
  for (uint32_t j : p.starts) starts.push_back(m.job(j).id);
  for (const auto& r : p.reservations) reservations.push_back({{"job", m.job(r.job).id}, {"start", r.start}});
  return {{"at", p.at}, {"recalculated", p.recalculated}, {"starts", starts}, {"reservations", reservations}};
}

}  // namespace

json to_json(const sim_settings& s) {
  json groups = json::array(), users = json::array();
  for (const auto& [g, shares] : s.group_shares) groups.push_back({g, shares});
  for (const auto& [k, shares] : s.user_shares) users.push_back({k.first, k.second, shares});
  return {{"capacity", s.capacity},
          {"order", order_name(s.order)},
          {"backfill", to_string(s.backfill)},
          {"policy", core::to_json(s.policy)},
          {"bf_max_job_test", s.bf_max_job_test},
          {"group_shares", groups},
          {"user_shares", users}};
}

sim_settings sim_settings_from_json(const json& j) {
  sim_settings s;
  try {
    s.capacity = j.at("capacity").get<int64_t>();
    const auto order = j.at("order").get<std::string>();
    if (order == "fifo")
      s.order = sim_order::fifo;
    else if (order == "multifactor")
      s.order = sim_order::multifactor;
    else if (order == "lattice")
      s.order = sim_order::lattice;
    else
      throw std::runtime_error("order '" + order + "' is none of fifo, multifactor, lattice");
    const auto backfill = j.at("backfill").get<std::string>();
    if (backfill == "none")
      s.backfill = sim_backfill::none;
    else if (backfill == "easy")
      s.backfill = sim_backfill::easy;
    else if (backfill == "conservative")
      s.backfill = sim_backfill::conservative;
    else
      throw std::runtime_error("backfill '" + backfill + "' is none of none, easy, conservative");
    s.policy = core::policy_from_json(j.at("policy"));
    s.bf_max_job_test = j.at("bf_max_job_test").get<uint32_t>();
    for (const auto& g : j.at("group_shares")) s.group_shares[g.at(0).get<int64_t>()] = g.at(1).get<uint32_t>();
    for (const auto& u : j.at("user_shares"))
      s.user_shares[{u.at(0).get<int64_t>(), u.at(1).get<int64_t>()}] = u.at(2).get<uint32_t>();
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("the simulation's settings do not read: ") + e.what());
  }
  return s;
}

// --- writing ---

sim_log_writer::sim_log_writer(events::event_store& store, const sim_settings& s, json about) : store_(store) {
  if (store_.last_seq() != 0) throw std::runtime_error("the log to write the simulation to is not empty");
  add(run_stream, 0, "sim.started", {{"settings", to_json(s)}, {"about", std::move(about)}});
}

void sim_log_writer::add(std::string stream, int64_t at_seconds, const char* type, const json& payload) {
  events::append_command c;
  c.stream_id = std::move(stream);
  c.recorded_at_us = at_seconds * us;
  c.actor = "loop:simulator";
  c.events.push_back({type, 1, events::to_payload(payload)});
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

void sim_log_writer::arrived(const sim_job& j) { add(job_stream(j.id), j.submit, "sim.job_arrived", job_json(j)); }

void sim_log_writer::refused(const sim_job& j, const std::string& why) {
  json p = job_json(j);
  p["why"] = why;
  add(job_stream(j.id), j.submit, "sim.job_refused", p);
}

void sim_log_writer::ended(const sim_job& j, int64_t at) {
  add(job_stream(j.id), at, "sim.job_ended", {{"id", j.id}, {"at", at}});
}

void sim_log_writer::passed(const sim_pass& p, const sim_machine& m) {
  add(run_stream, p.at, "sim.pass_decided", pass_json(p, m));
}

uint64_t sim_log_writer::finish() {
  flush();
  store_.sync_wal();
  store_.flush();
  return written_;
}

// --- re-deriving ---

// The timestamp now_ is over: if no pass was recorded at it, the machine must agree that none ran.
sim_rederiver::verdict sim_rederiver::missing_pass_check() {
  verdict v;
  if (!facts_ || passed_now_ || !checking_) return v;  // (before the checked range the log says no pass ran)
  auto again = machine_->decide_pass(now_);
  if (again) {  // (a timestamp without a pass is not counted as a decision; a pass missing from the log is)
    v.decision = true;
    v.rederived = pass_json(*again, *machine_);
    v.recorded = nullptr;
    v.what = "a pass at " + std::to_string(now_) + " s re-derived as " + v.rederived.dump() + ", none was logged";
    machine_->apply_pass(*again);
  }
  return v;
}

sim_rederiver::verdict sim_rederiver::on(const std::string& type, const json& payload, int64_t at_us, bool check) {
  verdict v;
  const int64_t at = at_us / us;
  if (type == "sim.started") {
    if (machine_) return v.what = "a second sim.started", v;
    machine_.emplace(sim_settings_from_json(payload.at("settings")));
    return v;
  }
  if (!machine_) return v.what = type + " before sim.started", v;
  if (type == "sim.pass_decided") {
    if (!facts_ || at != now_ || passed_now_) {
      v.what = "a pass at " + std::to_string(at) + " s that follows no fact of its timestamp";
      return v;
    }
    passed_now_ = true;
    sim_pass recorded;
    recorded.at = payload.at("at").get<int64_t>();
    recorded.recalculated = payload.at("recalculated").get<bool>();
    for (const auto& id : payload.at("starts")) {
      auto i = index_of_.find(id.get<int64_t>());
      if (i == index_of_.end()) return v.what = "the pass starts job " + id.dump() + ", which never arrived", v;
      // Only a waiting job can start, once: a log that says otherwise is reported, never put in force.
      if (machine_->start_of(i->second) >= 0 ||
          std::find(recorded.starts.begin(), recorded.starts.end(), i->second) != recorded.starts.end())
        return v.what = "the pass starts job " + id.dump() + ", which is not waiting", v;
      recorded.starts.push_back(i->second);
    }
    if (!check) {
      machine_->decide_pass(now_);  // (priorities due now are recalculated as they were)
      machine_->apply_pass(recorded);
      return v;
    }
    v.decision = true;
    auto again = machine_->decide_pass(now_);
    json rederived = again ? pass_json(*again, *machine_) : json(nullptr);
    if (rederived != payload) {
      v.recorded = payload;
      v.rederived = rederived;
      v.what = "simulation pass re-derived differently: " + rederived.dump();
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
  if (type == "sim.job_arrived") {
    auto j = job_from(payload);
    auto i = machine_->arrive(j);
    if (!i) return v.what = "job " + std::to_string(j.id) + " arrived but asks for more processors than the machine", v;
    if (!index_of_.emplace(j.id, *i).second) return v.what = "job " + std::to_string(j.id) + " arrives twice", v;
  } else if (type == "sim.job_refused") {
    auto j = job_from(payload);
    if (j.procs <= machine_->settings().capacity)
      return v.what = "job " + std::to_string(j.id) + " refused though it fits the machine", v;
  } else if (type == "sim.job_ended") {
    const int64_t id = payload.at("id").get<int64_t>();
    auto i = index_of_.find(id);
    if (i == index_of_.end() || !machine_->end(i->second, at))
      return v.what = "job " + std::to_string(id) + " ends at " + std::to_string(at) + " s but was not running", v;
    const auto& j = machine_->job(i->second);
    if (machine_->start_of(i->second) + j.run != at)
      return v.what = "job " + std::to_string(id) + " ends at " + std::to_string(at) + " s, not after its run of " +
                      std::to_string(j.run) + " s",
             v;
  } else {
    return v.what = "unknown simulation event " + type, v;
  }
  return v;
}

sim_rederiver::verdict sim_rederiver::at_end() { return missing_pass_check(); }

}  // namespace baton::replay
