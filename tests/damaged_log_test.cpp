// A damaged tail, end to end with the real binaries: batond refuses to start (exit 2, naming
// the event), `baton-replay verify` shows it, `batond --truncate-after` (the repair in
// docs/operator-guide.md) keeps a backup, cuts the tail and records itself, and batond then
// starts and serves with every job the kept events hold.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "support/store_tampering.hpp"
#include "support/batond_process.hpp"
#include "support/replay_tool.hpp"

using namespace baton;
using namespace baton::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The log's events of a type, read with the store (batond stopped).
std::vector<json> events_of_type(const std::string& data_dir, const std::string& type) {
  std::vector<json> out;
  auto store = events::event_store::open(data_dir + "/eventlog");
  store->scan(1, 0, true, [&](const events::event_view& v) {
    if (v.type == type) {
      auto p = events::from_payload(v.payload);
      p["_seq"] = v.seq;
      p["_actor"] = std::string(v.actor);
      out.push_back(p);
    }
    return true;
  });
  return out;
}

// Damages event seq as a failing disk or a stray write would: a flipped body byte (the stored
// hash no longer follows) or a record cut short.
void damage(const std::string& data_dir, uint64_t seq, bool cut_short) {
  events::store_options o;
  o.allow_damaged_tail = true;
  auto store = events::event_store::open(data_dir + "/eventlog", o);
  auto raw = *baton::test::raw_event(*store, seq);
  if (cut_short)
    raw.resize(raw.size() / 2);
  else
    raw[raw.size() / 2] ^= 0x10;
  baton::test::overwrite_event(*store, seq, raw);
}

size_t job_count(const batond_process& d) {
  auto r = d.client()->Get("/jobs?limit=1000");
  return r && r->status == 200 ? json::parse(r->body).size() : 0;
}

}  // namespace

TEST(DamagedLog, ATailThatFailsItsHashIsRefusedShownAndRepairedWithABackup) {
  temp_dir dir;
  batond_process d{dir, ""};
  ASSERT_GT(d.port(), 0) << d.err();
  for (int i = 0; i < 3; ++i) {
    auto r = d.client()->Post("/jobs", json{{"title", "j" + std::to_string(i)}, {"input_bundle_path", "/b"}}.dump(),
                              "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no reply");
  }
  ASSERT_EQ(d.stop(), 0) << d.err();
  const std::string data = dir / "data";
  const uint64_t last = events::event_store::open(data + "/eventlog")->last_seq();  // daemon.stopped
  damage(data, last, false);

  d.start();
  EXPECT_EQ(d.port(), 0) << "batond served on a damaged log";
  EXPECT_EQ(d.stop(), 2);
  EXPECT_NE(d.err().find("event " + std::to_string(last)), std::string::npos) << d.err();
  EXPECT_NE(d.err().find("fails its hash check"), std::string::npos) << d.err();

  auto verify = replay_tool(dir, {"verify", "--data-dir", data});
  EXPECT_EQ(verify.code, 1) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("damaged at event " + std::to_string(last)), std::string::npos) << verify.out << verify.err;

  // Keeping the damaged event itself is refused, and changes nothing.
  auto too_far = batond_tool(dir, {"--truncate-after", std::to_string(last)}, {"USER=dana"});
  EXPECT_EQ(too_far.code, 1) << too_far.out << too_far.err;

  const std::string backup = dir / "backup";
  auto repair =
      batond_tool(dir, {"--truncate-after", std::to_string(last - 1), "--backup-dir", backup, "--reason", "disk fault on login1"},
                  {"USER=dana"});
  ASSERT_EQ(repair.code, 0) << repair.out << repair.err;
  EXPECT_NE(repair.out.find("removed events " + std::to_string(last) + ".." + std::to_string(last) + " (1)"), std::string::npos)
      << repair.out;
  // The backup is the log as it was, damaged event included: evidence, and a way back.
  auto kept = replay_tool(dir, {"verify", "--data-dir", backup});
  EXPECT_EQ(kept.code, 1);
  EXPECT_NE(kept.out.find("damaged at event " + std::to_string(last)), std::string::npos) << kept.out << kept.err;

  auto recorded = events_of_type(data, "daemon.log_truncated");
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0]["_seq"], last) << "the repair is the new event at the cut";
  EXPECT_EQ(recorded[0]["_actor"], "operator:dana");
  EXPECT_EQ(recorded[0]["kept_through_seq"], last - 1);
  EXPECT_EQ(recorded[0]["previous_last_seq"], last);
  EXPECT_EQ(recorded[0]["removed_events"], 1);
  EXPECT_EQ(recorded[0]["backup"], backup);
  EXPECT_EQ(recorded[0]["reason"], "disk fault on login1");

  EXPECT_TRUE(fs::exists(backup + "/views.sqlite")) << "the SQL view went with the backup: it held the cut events";
  EXPECT_FALSE(fs::exists(data + "/views.sqlite"));
  auto ok = replay_tool(dir, {"verify", "--data-dir", data});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err << "\nthe chain anchors beyond the cut went with the backup";

  d.start();
  ASSERT_GT(d.port(), 0) << d.err();
  EXPECT_EQ(job_count(d), 3u);
  EXPECT_NE(d.err().find("did not stop cleanly"), std::string::npos)
      << "its daemon.stopped was the damaged event: the run counts as unclean\n"
      << d.err();
  ASSERT_EQ(d.stop(), 0);
  EXPECT_EQ(replay_tool(dir, {"verify", "--data-dir", data}).code, 0);
}

TEST(DamagedLog, ARecordCutShortIsRefusedAndTruncatingPastAnotherDamagedEventIsNot) {
  temp_dir dir;
  batond_process d{dir, ""};
  ASSERT_GT(d.port(), 0) << d.err();
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(d.client()->Post("/jobs", json{{"title", "k"}, {"input_bundle_path", "/b"}}.dump(), "application/json")->status,
              200);
  ASSERT_EQ(d.stop(), 0) << d.err();
  const std::string data = dir / "data";
  const uint64_t last = events::event_store::open(data + "/eventlog")->last_seq();
  damage(data, last, true);
  damage(data, last - 2, false);

  d.start();
  EXPECT_EQ(d.port(), 0);
  EXPECT_EQ(d.stop(), 2);
  EXPECT_NE(d.err().find("event " + std::to_string(last) + " in "), std::string::npos) << d.err();
  EXPECT_NE(d.err().find("is malformed"), std::string::npos) << d.err();

  auto refused = batond_tool(dir, {"--truncate-after", std::to_string(last - 1)}, {"USER=dana"});
  EXPECT_EQ(refused.code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("truncate after event " + std::to_string(last - 3) + " or earlier"), std::string::npos)
      << refused.err;
  for (auto& e : fs::directory_iterator(data))
    EXPECT_NE(e.path().filename().string().rfind("eventlog.backup-", 0), 0u) << "nothing was copied: " << e.path();
}
