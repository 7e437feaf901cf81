// A simulation written as a baton event log (replay/sim/sim_log.hpp): rederive decides every pass
// again on the machine folded from the log's facts and agrees at 100 % under each policy; a
// forged pass, a pass dropped from the log and a fact out of place are each reported at their
// sequence. Real RocksDB logs in temp dirs; the trace is KTH-SP2 from tests/data/swf.
#include <gtest/gtest.h>

#include <functional>

#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "replay/audit/rederive.hpp"
#include "replay/sim/sim_log.hpp"
#include "replay/sim/sim_machine.hpp"
#include "replay/sim/simulator.hpp"
#include "replay/sim/swf.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using namespace baton::replay;
using baton::test::temp_dir;

namespace {

const std::string data = SWF_DATA_DIR;

std::vector<sim_job> kth(size_t first_jobs) {
  auto trace = read_swf(data + "/KTH-SP2-1996-2-original.swf.gz");
  auto jobs = filter_jobs(trace, swf_filter::sc15, trace.max_procs);
  if (jobs.size() > first_jobs) jobs.resize(first_jobs);
  return jobs;
}

sim_settings machine(int64_t capacity, const std::string& policy) {
  sim_settings s;
  s.capacity = capacity;
  EXPECT_TRUE(sim_policy_from(policy, s)) << policy;
  return s;
}

// Writes through sim_log_writer, letting the test change or drop the n-th pass (1-based) on its
// way into the log; the simulation itself goes on as decided.
class tampering_writer : public sim_observer {
 public:
  using tamper_fn = std::function<bool(sim_pass&)>;  // false: leave the pass out of the log
  tampering_writer(sim_log_writer& w, uint64_t n, tamper_fn f) : w_(w), n_(n), f_(std::move(f)) {}
  void arrived(const sim_job& j) override { w_.arrived(j); }
  void refused(const sim_job& j, const std::string& why) override { w_.refused(j, why); }
  void ended(const sim_job& j, int64_t at) override { w_.ended(j, at); }
  void passed(const sim_pass& p, const sim_machine& m) override {
    if (++seen_ != n_) return w_.passed(p, m);
    sim_pass changed = p;
    if (f_(changed)) w_.passed(changed, m);
  }

 private:
  sim_log_writer& w_;
  uint64_t n_, seen_ = 0;
  tamper_fn f_;
};

// The simulation of `jobs` written to a new log in `dir`, its n-th pass changed (or dropped) by `f`.
std::unique_ptr<events::event_store> tampered_log(const temp_dir& dir, const std::vector<sim_job>& jobs, const sim_settings& s,
                                                  uint64_t n, tampering_writer::tamper_fn f) {
  auto store = events::event_store::open(dir.path());
  sim_log_writer writer(*store, s, {});
  tampering_writer tamper(writer, n, std::move(f));
  simulate(jobs, s, &tamper);
  writer.finish();
  return store;
}

// The sequence of the n-th event of `type` in the log.
uint64_t seq_of(const events::event_store& store, const std::string& type, uint64_t n) {
  uint64_t seen = 0, seq = 0;
  store.scan(1, 0, false, [&](const events::event_view& e) {
    if (e.type == type && ++seen == n) seq = e.seq;
    return seq == 0;
  });
  return seq;
}

// The index of the first pass with a reservation and of the first that starts two jobs or more.
struct landmarks {
  uint64_t with_reservation = 0, with_two_starts = 0;
};
landmarks find_landmarks(const std::vector<sim_job>& jobs, const sim_settings& s) {
  struct finder : sim_observer {
    landmarks l;
    uint64_t n = 0;
    void passed(const sim_pass& p, const sim_machine&) override {
      ++n;
      if (!l.with_reservation && !p.reservations.empty()) l.with_reservation = n;
      if (!l.with_two_starts && p.starts.size() >= 2) l.with_two_starts = n;
    }
  } f;
  simulate(jobs, s, &f);
  return f.l;
}

}  // namespace

TEST(sim_log, EveryPolicysPassesRederiveAtOneHundredPercent) {
  auto jobs = kth(3500);
  for (std::string policy : {"fifo", "easy", "conservative", "multifactor", "lattice:ml_training"}) {
    SCOPED_TRACE(policy);
    temp_dir dir;
    auto store = events::event_store::open(dir.path());
    auto s = machine(100, policy);
    sim_log_writer writer(*store, s, {{"policy", policy}});
    auto result = simulate(jobs, s, &writer);
    const uint64_t written = writer.finish();
    EXPECT_EQ(written, store->last_seq());
    EXPECT_GT(result.passes, 1000u);

    auto r = rederive_decisions(*store);
    EXPECT_EQ(r.mismatches, 0u) << (r.problems.empty() ? "" : r.problems[0]);
    EXPECT_EQ(r.sim_passes, result.passes) << "every pass that ran the planner is a checked decision";
    EXPECT_EQ(r.decisions, result.passes);
    EXPECT_EQ(r.events, written);
    if (policy == "multifactor" || policy == "lattice:ml_training") {
      EXPECT_GT(result.recalculations, 100u);
    }

    // Checked from the middle on, the passes before are folded in unchecked and the rest agree.
    auto half = rederive_decisions(*store, {store->last_seq() / 2, 0});
    EXPECT_EQ(half.mismatches, 0u) << (half.problems.empty() ? "" : half.problems[0]);
    EXPECT_GT(half.sim_passes, 0u);
    EXPECT_LT(half.sim_passes, result.passes);
  }
}

TEST(sim_log, ALaterReservationInTheLogIsReportedAtItsSequence) {
  auto jobs = kth(3000);
  auto s = machine(100, "easy");
  auto l = find_landmarks(jobs, s);
  ASSERT_GT(l.with_reservation, 0u);
  temp_dir dir;
  auto store = tampered_log(dir, jobs, s, l.with_reservation, [](sim_pass& p) {
    p.reservations[0].start += 60;  // the head's reservation a minute later than planned
    return true;
  });

  auto r = rederive_decisions(*store);
  ASSERT_EQ(r.mismatches, 1u) << "only the forged pass: the simulation went on as decided";
  const auto& d = r.divergences.at(0);
  EXPECT_EQ(d.seq, seq_of(*store, "sim.pass_decided", l.with_reservation));
  EXPECT_EQ(d.type, "sim.pass_decided");
  EXPECT_EQ(d.stream, "sim/run");
  ASSERT_EQ(d.diff.size(), 1u) << d.diff.dump();
  EXPECT_EQ(d.diff[0]["path"], "/reservations/0/start");
  const int64_t forged = d.recorded.at("reservations").at(0).at("start");
  EXPECT_EQ(d.diff[0]["value"], forged - 60);
}

TEST(sim_log, AStartLeftOutOfAPassIsReportedAtThatPass) {
  auto jobs = kth(3000);
  auto s = machine(100, "multifactor");
  auto l = find_landmarks(jobs, s);
  ASSERT_GT(l.with_two_starts, 0u);
  temp_dir dir;
  auto store = tampered_log(dir, jobs, s, l.with_two_starts, [](sim_pass& p) {
    p.starts.pop_back();
    return true;
  });

  auto r = rederive_decisions(*store);
  ASSERT_GE(r.mismatches, 1u);
  EXPECT_EQ(r.divergences.at(0).seq, seq_of(*store, "sim.pass_decided", l.with_two_starts));
  EXPECT_EQ(r.divergences.at(0).diff.at(0)["op"], "add") << r.divergences.at(0).diff.dump();
}

TEST(sim_log, APassMissingFromTheLogIsReportedAtTheNextFact) {
  auto jobs = kth(3000);
  auto s = machine(100, "easy");
  auto l = find_landmarks(jobs, s);
  temp_dir dir;
  auto store = tampered_log(dir, jobs, s, l.with_two_starts, [](sim_pass&) { return false; });

  auto r = rederive_decisions(*store);
  ASSERT_GE(r.mismatches, 1u);
  EXPECT_NE(r.divergences.at(0).what.find("none was logged"), std::string::npos) << r.divergences.at(0).what;
  EXPECT_TRUE(r.divergences.at(0).recorded.is_null());
  EXPECT_EQ(r.divergences.at(0).rederived["starts"].size(), 2u) << "the dropped pass, decided again";
}

// A forged pass that starts a job twice is reported at that pass and never put in force (the
// machine would count the job's processors twice).
TEST(sim_log, APassStartingAJobTwiceIsReportedNotApplied) {
  auto jobs = kth(3000);
  auto s = machine(100, "easy");
  auto l = find_landmarks(jobs, s);
  temp_dir dir;
  auto store = tampered_log(dir, jobs, s, l.with_two_starts, [](sim_pass& p) {
    p.starts.push_back(p.starts.front());
    return true;
  });
  auto r = rederive_decisions(*store);
  ASSERT_GE(r.mismatches, 1u);
  EXPECT_EQ(r.divergences.at(0).seq, seq_of(*store, "sim.pass_decided", l.with_two_starts));
  EXPECT_NE(r.divergences.at(0).what.find("which is not waiting"), std::string::npos) << r.divergences.at(0).what;
}

TEST(sim_log, RefusesToWriteIntoALogThatHoldsEvents) {
  temp_dir dir;
  auto store = events::event_store::open(dir.path());
  auto s = machine(4, "easy");
  {
    sim_log_writer first(*store, s, {});
    first.finish();
  }
  EXPECT_THROW(sim_log_writer(*store, s, {}), std::runtime_error);
}

TEST(sim_log, SettingsRoundTripThroughTheirRecord) {
  auto s = machine(64, "lattice:ml_training");
  s.group_shares[7] = 3;
  s.user_shares[{7, 70}] = 5;
  s.bf_max_job_test = 12;
  auto back = settings_of(to_record(s));
  EXPECT_EQ(events::to_json(to_record(back)), events::to_json(to_record(s)));
  EXPECT_EQ(back.order, sim_order::lattice);
  EXPECT_EQ(back.user_shares.at({7, 70}), 5u);
  auto broken = to_record(s);
  broken.order = "random";
  EXPECT_THROW(settings_of(broken), std::runtime_error);
  broken = to_record(s);
  broken.user_shares[0].pop_back();  // [group, user] without its shares
  EXPECT_THROW(settings_of(broken), std::runtime_error);
  broken = to_record(s);
  broken.group_shares[0][1] = -1;
  EXPECT_THROW(settings_of(broken), std::runtime_error);
}

// The typed events store the bytes the JSON payloads of the simulator stored before they were
// typed, so an older simulation log reads and compares the same: each type, read from the JSON
// the old writer built and encoded again.
TEST(sim_log, TheTypedEventsStoreWhatTheirJsonPayloadsStored) {
  const auto s = machine(64, "multifactor");
  const nlohmann::json settings = events::to_json(to_record(s));
  const std::vector<std::pair<std::string, nlohmann::json>> old = {
      {"sim.started",
       {{"about", {{"trace", "KTH"}, {"jobs", 3}}},
        {"settings",
         {{"capacity", 64},
          {"order", "multifactor"},
          {"backfill", "easy"},
          {"policy", settings["policy"]},
          {"bf_max_job_test", 0},
          {"group_shares", {{-1, 1u}, {7, 3u}}},
          {"user_shares", {{7, 70, 5u}}}}}}},
      {"sim.pass_decided",
       {{"at", 120}, {"recalculated", true}, {"starts", {5, 9}}, {"reservations", {{{"job", 11}, {"start", 400}}}}}},
      {"sim.job_arrived", {{"id", 5}, {"submit", 100}, {"run", 30}, {"estimate", 60}, {"procs", 8}, {"user", -1}, {"group", 7}}},
      {"sim.job_refused",
       {{"id", 6}, {"submit", 100}, {"run", 30}, {"estimate", 60}, {"procs", 80}, {"user", 2}, {"group", 7}, {"why", "too big"}}},
      {"sim.job_ended", {{"id", 5}, {"at", 130}}},
  };
  for (const auto& [type, payload] : old) {
    const std::string stored = events::to_payload(payload);
    auto typed = sim_ev::read(type, events::from_payload(stored));
    ASSERT_TRUE(typed) << type;
    EXPECT_EQ(sim_ev::type_of(*typed), type);
    EXPECT_EQ(sim_ev::encode(*typed), stored) << type << ": " << sim_ev::to_json(*typed).dump();
  }
  EXPECT_FALSE(sim_ev::read("job.created", nlohmann::json::object())) << "batond's events are not the simulation's";
  EXPECT_THROW(sim_ev::read("sim.job_teleported", nlohmann::json::object()), std::runtime_error);
  EXPECT_THROW(sim_ev::read("sim.pass_decided", {{"at", 1}, {"recalculated", "yes"}}), events::payload_error);
}

// A "sim." event this build does not know, or one that does not read, is reported at its
// sequence; the rest of the log still re-derives.
TEST(sim_log, AnUnknownOrUnreadableSimulationEventIsReportedAtItsSequence) {
  auto jobs = kth(200);
  auto s = machine(100, "easy");
  temp_dir dir;
  auto store = events::event_store::open(dir.path());
  {
    sim_log_writer writer(*store, s, {});
    simulate(jobs, s, &writer);
    writer.finish();
  }
  const uint64_t before = store->last_seq();
  for (const auto& [type, payload] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"sim.job_teleported", {{"id", 1}}}, {"sim.pass_decided", {{"at", 1}, {"recalculated", "yes"}}}}) {
    events::append_command c;
    c.stream_id = "sim/run";
    c.recorded_at_us = 1'000'000'000'000;
    c.actor = "loop:simulator";
    c.events.push_back({type, 1, events::to_payload(payload)});
    ASSERT_TRUE(store->append({c}).at(0).ok());
  }
  auto r = rederive_decisions(*store);
  ASSERT_EQ(r.mismatches, 2u) << (r.problems.empty() ? "" : r.problems[0]);
  EXPECT_EQ(r.divergences.at(0).seq, before + 1);
  EXPECT_NE(r.divergences.at(0).what.find("unknown simulation event sim.job_teleported"), std::string::npos)
      << r.divergences.at(0).what;
  EXPECT_EQ(r.divergences.at(1).seq, before + 2);
  EXPECT_NE(r.divergences.at(1).what.find("payload field 'recalculated'"), std::string::npos) << r.divergences.at(1).what;
  EXPECT_GT(r.sim_passes, 0u);
}
