// Logs written before events were typed (tests/data/corpus/README.md) read by today's code:
// the log is rebuilt from its audit export event by event, each event's hash must come out as
// recorded (so the payload bytes are the stored ones), every payload reads as its struct and
// writes those very bytes again, the log verifies, and every decision re-derives identically.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/events/event_types.hpp"
#include "core/util/hex.hpp"
#include "events/event_store.hpp"
#include "events/payload.hpp"
#include "replay/audit/log_verify.hpp"
#include "replay/audit/rederive.hpp"
#include "replay/recovery/world_recovery.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using nlohmann::json;

namespace {

struct corpus {
  std::vector<json> events;
  json trailer;
};

corpus read_corpus(const std::string& name) {
  const std::string path = std::string(BATON_SOURCE_DIR) + "/tests/data/corpus/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.is_open()) << "cannot read " << path;
  corpus c;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json j = json::parse(line);
    if (j.contains("trailer")) c.trailer = j["trailer"];
    else c.events.push_back(std::move(j));
  }
  return c;
}

// The exported events appended again, in order: consecutive events of one command (one
// stream, one command id) as one command, since a command id is taken once.
void rebuild(events::event_store& store, const std::vector<json>& exported) {
  std::vector<events::append_command> cmds;
  for (const auto& e : exported) {
    const std::string stream = e.at("stream"), command_id = e.at("command_id");
    if (cmds.empty() || command_id.empty() || cmds.back().command_id != command_id || cmds.back().stream_id != stream) {
      events::append_command c;
      c.stream_id = stream;
      c.command_id = command_id;
      c.recorded_at_us = e.at("recorded_at_us");
      c.correlation_id = e.at("correlation_id");
      c.causation_id = e.at("causation_id");
      c.actor = e.at("actor");
      cmds.push_back(std::move(c));
    }
    cmds.back().events.push_back({e.at("type"), e.at("schema_version"), events::encode_cbor(e.at("payload"))});
  }
  for (const auto& r : store.append(cmds)) ASSERT_EQ(r.status, events::append_status::appended);
}

}  // namespace

TEST(Corpus, ALogWrittenBeforeTypedEventsReadsVerifiesAndRederivesUnchanged) {
  const corpus c = read_corpus("before-typed-events-1.jsonl");
  ASSERT_EQ(c.events.size(), 277u);
  ASSERT_EQ(c.trailer.at("count"), 277);
  test::temp_dir dir;
  auto store = events::event_store::open(dir / "eventlog");
  rebuild(*store, c.events);
  ASSERT_EQ(store->last_seq(), c.events.size());

  std::map<std::string, size_t> types;
  const auto stored = store->read(1, c.events.size());
  ASSERT_EQ(stored.size(), c.events.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    const auto& e = stored[i];
    SCOPED_TRACE("event " + std::to_string(e.seq) + " " + e.type);
    // The same hash: the same envelope and the same payload bytes as the log it came from.
    EXPECT_EQ(util::to_hex(e.hash), c.events[i].at("hash").get<std::string>());
    const auto typed = core::ev::decode(e.type, e.schema_version, e.payload);
    EXPECT_FALSE(std::holds_alternative<core::ev::unknown_event>(typed)) << "a type the catalogue knows";
    EXPECT_EQ(core::ev::encode(typed), e.payload) << "the struct writes the stored bytes";
    EXPECT_TRUE(core::ev::same(typed, core::ev::from_json(e.type, c.events[i].at("payload"))));
    ++types[e.type];
  }
  EXPECT_EQ(types, (std::map<std::string, size_t>{{"daemon.started", 1},
                                                   {"job.created", 4},
                                                   {"scheduler.plan_made", 1},
                                                   {"scheduler.priorities_applied", 135},
                                                   {"scheduler.priorities_recalculated", 136}}));
  EXPECT_EQ(util::to_hex(store->read(store->last_seq(), 1).at(0).hash),
            c.trailer.at("chain_head").at("hash").get<std::string>());

  const auto verified = replay::verify_log(*store, {});
  EXPECT_TRUE(verified.ok) << verified.reason;
  EXPECT_EQ(verified.events, 277u);

  auto again = replay::rederive_decisions(*store);
  EXPECT_EQ(again.mismatches, 0u) << (again.problems.empty() ? "" : again.problems.front());
  EXPECT_EQ(again.decisions, 137u);
  EXPECT_EQ(again.recalculations, 136u);
  EXPECT_EQ(again.plans, 1u);
  replay::leave_world_to_exit(again);

  const auto recovered = replay::recover_world(*store);
  EXPECT_EQ(recovered.world.jobs.size(), 4u);
}
