// The wall clock stepped under a running batond (tests/support/wall_clock_shim.cpp moves the clock
// batond's process reads, as an operator's `date -s` or a confused NTP would): nothing batond records goes back
// in time, and no lease expires because the clock jumped forward. batond/daemon_clock.hpp.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "core/util/time.hpp"
#include "events/event_store.hpp"
#include "support/batond_process.hpp"

using namespace baton;
using namespace baton::test;
using nlohmann::json;

namespace {

json get(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path.c_str());
  if (!r || r->status != 200) return nullptr;
  return json::parse(r->body, nullptr, false);
}

struct enrolled {
  std::string id, token;
};

}  // namespace

TEST(ClockStep, AWallClockSteppedBackOrForwardMovesNoRecordedTimeAndExpiresNoLease) {
  temp_dir dir;
  const std::string offset_file = dir / "wall-clock-offset";
  auto step_wall_clock = [&](const std::string& offset) { std::ofstream(offset_file) << offset << "\n"; };
  step_wall_clock("+0");
  // Stale after 3 s without a heartbeat, reaped within a second of that.
  batond_process d{dir,
                   "workers: {heartbeat_interval_seconds: 1, heartbeat_timeout_multiplier: 3, reaper_interval_seconds: 1}\n",
                   {std::string("LD_PRELOAD=") + WALL_CLOCK_SHIM_PATH, "BATON_TEST_WALL_CLOCK_OFFSET_FILE=" + offset_file,
                    "ASAN_OPTIONS=verify_asan_link_order=0"}};
  ASSERT_GT(d.port(), 0) << d.err();
  auto op = d.client();
  auto offset_now = [&] { return get(*op, "/healthz")["clock"].value("wall_clock_offset_seconds", 0.0); };
  EXPECT_LT(std::abs(offset_now()), 5.0);

  auto enroll = [&] {
    json body = {{"platform", "hpc"}, {"gpu_model", "A100"}, {"gpu_count", 1}};
    auto r = op->Post("/workers/register", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    auto j = json::parse(r->body);
    return enrolled{j["worker_id"], j["worker_token"]};
  };
  auto heartbeat = [&](const enrolled& w) {
    httplib::Client c("127.0.0.1", d.port());
    auto r = c.Post(("/workers/" + w.id + "/heartbeat").c_str(), {{"X-Worker-Token", w.token}}, "{}", "application/json");
    return r ? r->status : 0;
  };
  auto create = [&](const std::string& title) {
    auto r = op->Post("/jobs", json{{"title", title}, {"input_bundle_path", "/b"}}.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
    return json::parse(r->body)["created_at"].get<std::string>();
  };
  enrolled kept = enroll(), quiet = enroll();
  ASSERT_EQ(heartbeat(kept), 204);
  ASSERT_EQ(heartbeat(quiet), 204);
  const auto quiet_since = std::chrono::steady_clock::now();  // its last heartbeat
  const std::string before = create("before the step");
  const uint64_t seq_before = get(*op, "/healthz")["last_sequence"];

  step_wall_clock("-7200");  // two hours back
  EXPECT_LT(offset_now(), -7000) << "the step reached batond's wall clock";
  const std::string after_back = create("after stepping back");
  EXPECT_GE(after_back, before) << "a job created after the step is not recorded two hours earlier";

  step_wall_clock("+7200");  // and two hours forward of the real time
  EXPECT_GT(offset_now(), 7000);
  // The quiet worker goes stale by the monotonic clock (3 s after its heartbeat) and is reaped;
  // the one that keeps beating is not, though the wall clock says it has been silent for 2 h.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool quiet_reaped = false;
  while (!quiet_reaped && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(heartbeat(kept), 204) << "the beating worker lost its lease";
    for (auto& w : get(*op, "/workers?state=gone"))
      if (w["id"] == quiet.id) quiet_reaped = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the heartbeat period, not a wait for a result
  }
  ASSERT_TRUE(quiet_reaped) << "the reaper never reaped the silent worker";
  // By the wall clock it had been silent for two hours the moment the clock jumped; its lease
  // runs 3 s all the same.
  EXPECT_GE(std::chrono::steady_clock::now() - quiet_since, std::chrono::seconds(3)) << "reaped before its lease ran out";
  EXPECT_EQ(heartbeat(kept), 204);
  for (auto& w : get(*op, "/workers?state=gone")) EXPECT_NE(w["id"], kept.id);
  ASSERT_EQ(d.stop(), 0) << d.err();

  // In the log: nothing recorded after the steps is earlier than what was recorded before.
  int64_t latest_before = 0, earliest_after = INT64_MAX;
  auto store = events::event_store::open(dir / "data/eventlog");
  store->scan(1, 0, true, [&](const events::event_view& e) {
    if (e.seq <= seq_before)
      latest_before = std::max(latest_before, e.recorded_at_us);
    else
      earliest_after = std::min(earliest_after, e.recorded_at_us);
    return true;
  });
  EXPECT_GE(earliest_after, latest_before - 1'000'000)
      << util::format_time_us(earliest_after) << " after " << util::format_time_us(latest_before);
}
