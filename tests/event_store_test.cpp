#include "events/event_store.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "events/bytes.hpp"
#include "support/store_tampering.hpp"
#include "support/commands.hpp"
#include "support/temp_dir.hpp"

using namespace baton::events;
using baton::test::command;
using baton::test::temp_dir;

TEST(EventStore, AssignsGapFreeSequencesAcrossReopens) {
  temp_dir dir;
  for (int round = 0; round < 3; ++round) {
    auto store = event_store::open(dir.path());
    EXPECT_EQ(store->last_seq(), static_cast<uint64_t>(round * 10));
    for (int i = 0; i < 10; ++i) {
      auto r = store->append({command("s/" + std::to_string(i % 3), "t")});
      ASSERT_EQ(r[0].status, append_status::appended);
      EXPECT_EQ(r[0].first_seq, static_cast<uint64_t>(round * 10 + i + 1));
    }
  }
  auto store = event_store::open(dir.path());
  uint64_t expected = 1;
  store->scan(1, 0, true, [&](const event_view& v) {
    EXPECT_EQ(v.seq, expected++);
    return true;
  });
  EXPECT_EQ(expected, 31u);
  auto report = store->verify();
  EXPECT_TRUE(report.ok) << report.reason;
  EXPECT_EQ(report.events_checked, 30u);
}

TEST(EventStore, StreamVersionsAndOptimisticConcurrency) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  auto r = store->append({command("job/1", "job.created", {}, no_stream)});
  ASSERT_EQ(r[0].status, append_status::appended);
  EXPECT_EQ(r[0].stream_version, 1u);

  // Creating it again must fail: the stream exists.
  r = store->append({command("job/1", "job.created", {}, no_stream)});
  EXPECT_EQ(r[0].status, append_status::version_conflict);
  EXPECT_EQ(r[0].stream_version, 1u);
  EXPECT_NE(r[0].message.find("version 1"), std::string::npos);

  r = store->append({command("job/1", "job.started", {}, 1)});
  ASSERT_EQ(r[0].status, append_status::appended);
  r = store->append({command("job/1", "job.stale_write", {}, 1)});
  EXPECT_EQ(r[0].status, append_status::version_conflict);
  EXPECT_EQ(store->last_seq(), 2u);
  EXPECT_EQ(store->stream_version("job/1"), 2u);
  EXPECT_FALSE(store->stream_version("job/2"));

  // Within one batch the second command sees the first's version.
  r = store->append({command("job/3", "a", {}, no_stream), command("job/3", "b", {}, 1), command("job/3", "c", {}, 1)});
  EXPECT_EQ(r[0].status, append_status::appended);
  EXPECT_EQ(r[1].status, append_status::appended);
  EXPECT_EQ(r[2].status, append_status::version_conflict);

  // Versions survive a reopen.
  store.reset();
  store = event_store::open(dir.path());
  r = store->append({command("job/3", "d", {}, 1)});
  EXPECT_EQ(r[0].status, append_status::version_conflict);
  r = store->append({command("job/3", "d", {}, 2)});
  EXPECT_EQ(r[0].status, append_status::appended);
  auto stream = store->read_stream("job/3", 1, 100);
  ASSERT_EQ(stream.size(), 3u);
  EXPECT_EQ(stream[0].type, "a");
  EXPECT_EQ(stream[2].type, "d");
  EXPECT_EQ(stream[2].stream_version, 3u);
}

TEST(EventStore, DuplicateCommandIdIsAppendedOnce) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  auto first = store->append({command("job/1", "job.created", {}, any_version, "cmd-1")});
  ASSERT_EQ(first[0].status, append_status::appended);
  auto again = store->append({command("job/1", "job.created", {}, any_version, "cmd-1")});
  EXPECT_EQ(again[0].status, append_status::duplicate);
  EXPECT_EQ(again[0].first_seq, first[0].first_seq);
  EXPECT_EQ(store->last_seq(), 1u);

  // Twice in one batch, and again after a reopen.
  auto both = store->append({command("job/2", "x", {}, any_version, "cmd-2"), command("job/2", "x", {}, any_version, "cmd-2")});
  EXPECT_EQ(both[0].status, append_status::appended);
  EXPECT_EQ(both[1].status, append_status::duplicate);
  EXPECT_EQ(both[1].first_seq, both[0].first_seq);
  EXPECT_EQ(store->last_seq(), 2u);
  store.reset();
  store = event_store::open(dir.path());
  auto after = store->append({command("job/2", "x", {}, any_version, "cmd-2")});
  EXPECT_EQ(after[0].status, append_status::duplicate);
  EXPECT_EQ(after[0].first_seq, 2u);
  EXPECT_EQ(store->last_seq(), 2u);
  ASSERT_TRUE(store->find_command("cmd-1"));
  EXPECT_FALSE(store->find_command("cmd-3"));
}

TEST(EventStore, RejectsMalformedCommandsWithoutWriting) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  auto no_events = command("s", "t");
  no_events.events.clear();
  auto r =
      store->append({command("", "t"), command(std::string("a\0b", 3), "t"), no_events, command("s", ""), command("ok", "t")});
  EXPECT_EQ(r[0].status, append_status::invalid);
  EXPECT_EQ(r[1].status, append_status::invalid);
  EXPECT_EQ(r[2].status, append_status::invalid);
  EXPECT_EQ(r[3].status, append_status::invalid);
  EXPECT_EQ(r[4].status, append_status::appended);
  EXPECT_EQ(r[4].first_seq, 1u);
  EXPECT_EQ(store->last_seq(), 1u);
}

TEST(EventStore, MultiEventCommandIsContiguousAndAtomic) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  auto c = command("job/9", "one");
  c.events.push_back({"two", 2, to_payload({{"k", 1}})});
  c.correlation_id = "corr";
  c.causation_id = "cause";
  auto r = store->append({command("other", "x"), c});
  EXPECT_EQ(r[1].first_seq, 2u);
  EXPECT_EQ(r[1].last_seq, 3u);
  EXPECT_EQ(r[1].stream_version, 2u);
  auto evs = store->read(1, 10);
  ASSERT_EQ(evs.size(), 3u);
  EXPECT_EQ(evs[2].type, "two");
  EXPECT_EQ(evs[2].schema_version, 2u);
  EXPECT_EQ(evs[2].correlation_id, "corr");
  EXPECT_EQ(evs[2].causation_id, "cause");
  EXPECT_EQ(evs[2].actor, "test");
}

TEST(EventStore, TamperedEventIsReportedWithItsSequence) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  for (int i = 0; i < 50; ++i) store->append({command("s", "t", {{"i", i}})});
  ASSERT_TRUE(store->verify().ok);

  // Flip one payload byte of event 23 and leave its stored hash alone.
  auto raw = *baton::test::raw_event(*store, 23);
  auto view = *decode(raw);
  size_t payload_at = static_cast<size_t>(view.payload.data() - raw.data());
  raw[payload_at + view.payload.size() - 1] ^= 0x01;
  baton::test::overwrite_event(*store, 23, raw);
  auto report = store->verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.bad_seq, 23u);
  EXPECT_NE(report.reason.find("event 23"), std::string::npos) << report.reason;
  EXPECT_EQ(report.events_checked, 22u);
}

TEST(EventStore, RewrittenHashBreaksTheNextLink) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  for (int i = 0; i < 10; ++i) store->append({command("s", "t", {{"i", i}})});
  // A forger who changes event 4 and recomputes its hash still breaks event 5.
  auto e = decode(*baton::test::raw_event(*store, 4))->to_envelope();
  e.payload = to_payload({{"i", 999}});
  e.hash = chain_hash(decode(*baton::test::raw_event(*store, 3))->hash, encode_body(e));
  baton::test::overwrite_event(*store, 4, encode(e));
  auto report = store->verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.bad_seq, 5u);
}

TEST(EventStore, GapIsReportedWithTheMissingSequence) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  for (int i = 0; i < 5; ++i) store->append({command("s", "t")});
  baton::test::erase_event(*store, 4);
  auto report = store->verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.bad_seq, 4u);
  EXPECT_NE(report.reason.find("gap"), std::string::npos) << report.reason;
}

TEST(EventStore, MalformedRecordIsReported) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  for (int i = 0; i < 5; ++i) store->append({command("s", "t")});
  baton::test::overwrite_event(*store, 3, "garbage");
  auto report = store->verify();
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.bad_seq, 3u);
  EXPECT_NE(report.reason.find("malformed"), std::string::npos);
  EXPECT_THROW(store->read(1, 10), store_error);
}

// The last event is checked at every open (decodes, and its hash follows from the one before):
// a damaged tail is refused naming it, unless opened for the repair.
TEST(EventStore, OpenChecksTheTailAndNamesADamagedLastEvent) {
  temp_dir dir;
  {
    auto store = event_store::open(dir.path());
    for (int i = 0; i < 6; ++i) store->append({command("s", "t", {{"i", i}})});
    auto raw = *baton::test::raw_event(*store, 6);
    raw[raw.size() - 40] ^= 0x01;  // a body byte; the stored hash stays
    baton::test::overwrite_event(*store, 6, raw);
  }
  try {
    event_store::open(dir.path());
    ADD_FAILURE() << "a tail that fails its hash was opened";
  } catch (const store_error& e) {
    EXPECT_EQ(e.seq(), 6u);
    EXPECT_NE(std::string(e.what()).find("event 6"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hash"), std::string::npos) << e.what();
  }
  store_options repair;
  repair.allow_damaged_tail = true;
  auto store = event_store::open(dir.path(), repair);
  EXPECT_EQ(store->last_seq(), 6u);
  EXPECT_EQ(store->verify().bad_seq, 6u);
  baton::test::overwrite_event(*store, 6, "x");  // and a malformed one
  store.reset();
  EXPECT_THROW(event_store::open(dir.path()), store_error);
  EXPECT_EQ(event_store::open(dir.path(), repair)->last_seq(), 6u);
}

TEST(EventStore, TruncateAfterRemovesTheTailAndEverythingThatIndexesIt) {
  temp_dir dir;
  store_options repair;
  repair.allow_damaged_tail = true;
  auto store = event_store::open(dir.path(), repair);
  for (int i = 0; i < 10; ++i)
    store->append({command(i % 2 ? "odd" : "even", "t", {{"i", i}}, any_version, "cmd-" + std::to_string(i))});
  store->put_snapshot("world", {4, "at four"});
  store->put_snapshot("world", {8, "at eight"});
  store->set_projection_offset("early", 3);
  store->set_projection_offset("late", 9);
  baton::test::overwrite_event(*store, 10, "damaged");
  auto before_backup = dir / "copy";
  store->checkpoint(before_backup);
  EXPECT_THROW(store->checkpoint(before_backup), store_error) << "a copy never overwrites";

  baton::test::overwrite_event(*store, 7, "damaged too");
  try {
    store->truncate_after(8);
    ADD_FAILURE() << "kept a damaged event";
  } catch (const store_error& e) {
    EXPECT_EQ(e.seq(), 7u) << e.what();
  }
  auto t = store->truncate_after(6);
  EXPECT_EQ(t.previous_last_seq, 10u);
  EXPECT_EQ(t.removed_events, 4u);
  EXPECT_EQ(t.previous_last_value_sha256.size(), 64u);
  EXPECT_EQ(store->last_seq(), 6u);
  EXPECT_EQ(store->stream_version("even"), 3u);  // events 1, 3, 5
  EXPECT_EQ(store->stream_version("odd"), 3u);   // events 2, 4, 6
  EXPECT_TRUE(store->find_command("cmd-5"));
  EXPECT_FALSE(store->find_command("cmd-6")) << "its event is gone: the command may run again";
  EXPECT_EQ(store->snapshot_seqs("world"), std::vector<uint64_t>{4});
  EXPECT_EQ(store->projection_offset("early"), 3u);
  EXPECT_FALSE(store->projection_offset("late"));
  // The log goes on from there, chained to event 6, and survives a reopen.
  auto r = store->append({command("odd", "t", {{"after", "repair"}}, 3)});
  ASSERT_EQ(r[0].status, append_status::appended) << r[0].message;
  EXPECT_EQ(r[0].first_seq, 7u);
  EXPECT_EQ(r[0].stream_version, 4u);
  store.reset();
  store = event_store::open(dir.path());
  EXPECT_TRUE(store->verify().ok) << store->verify().reason;
  EXPECT_EQ(store->last_seq(), 7u);
  // The copy taken before is the log as it was, damaged event and all.
  auto copy = event_store::open(before_backup, repair);
  EXPECT_EQ(copy->last_seq(), 10u);
  EXPECT_EQ(copy->verify().bad_seq, 10u);
}

TEST(EventStore, OpenRefusesWhatIsNotAnEventLog) {
  temp_dir dir;
  std::ofstream(dir / "file") << "x";
  EXPECT_THROW(event_store::open(dir / "file"), store_error);
  std::filesystem::create_directories(dir / "other");
  std::ofstream(dir / "other/notes.txt") << "mine";
  try {
    event_store::open(dir / "other");
    FAIL() << "opened a directory with foreign files";
  } catch (const store_error& e) {
    EXPECT_NE(std::string(e.what()).find("no event log"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir / "logs");
  std::ofstream(dir / "logs/app.log") << "an application's log, not RocksDB's";
  EXPECT_THROW(event_store::open(dir / "logs"), store_error) << "only RocksDB's own numbered WAL files pass";
  // A damaged CURRENT file.
  { event_store::open(dir / "log")->append({command("s", "t")}); }
  std::ofstream(dir / "log/CURRENT", std::ios::trunc) << "MANIFEST-999999\n";
  EXPECT_THROW(event_store::open(dir / "log"), store_error);
}

// A process killed while RocksDB created the log leaves its files without CURRENT: nothing
// was committed, so the next open creates the log (it used to refuse the directory).
TEST(EventStore, OpensOverAnInterruptedCreation) {
  temp_dir dir;
  std::filesystem::create_directories(dir / "log");
  for (auto name : {"LOCK", "IDENTITY", "LOG", "MANIFEST-000001", "000001.dbtmp"})
    std::ofstream(dir / (std::string("log/") + name)) << "";
  {
    auto store = event_store::open(dir / "log");
    EXPECT_EQ(store->append({command("s", "t")})[0].first_seq, 1u);
  }
  EXPECT_EQ(event_store::open(dir / "log")->last_seq(), 1u);
  // A WAL without CURRENT is a damaged log, not an interrupted creation.
  std::filesystem::create_directories(dir / "damaged");
  for (auto name : {"LOCK", "IDENTITY", "MANIFEST-000001", "000003.log"})
    std::ofstream(dir / (std::string("damaged/") + name)) << "";
  EXPECT_THROW(event_store::open(dir / "damaged"), store_error);
}

TEST(EventStore, SnapshotsAndProjectionOffsets) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  EXPECT_FALSE(store->latest_snapshot("jobs"));
  store->put_snapshot("jobs", {5, "five"});
  store->put_snapshot("jobs", {300, "three hundred"});
  store->put_snapshot("jobs2", {900, "other name"});
  store->put_snapshot("job", {1000, "prefix of another name"});
  auto s = store->latest_snapshot("jobs");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->seq, 300u);
  EXPECT_EQ(s->data, "three hundred");
  EXPECT_FALSE(store->projection_offset("ui"));
  store->set_projection_offset("ui", 42);
  store.reset();
  store = event_store::open(dir.path());
  EXPECT_EQ(store->projection_offset("ui"), 42u);
  EXPECT_EQ(store->latest_snapshot("job")->seq, 1000u);
}

TEST(EventStore, ScanFromTheMiddleChecksTheChainFromThere) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  for (int i = 0; i < 20; ++i) store->append({command("s", "t")});
  std::vector<uint64_t> seen;
  store->scan(7, 12, true, [&](const event_view& v) {
    seen.push_back(v.seq);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<uint64_t>{7, 8, 9, 10, 11, 12}));
}

// Below its free-space reserve the store writes nothing: appends are refused as no_space
// (naming the reserve), snapshots and offsets throw, and the log is as it was. A reserve of
// 2^62 bytes stands for a full disk (no filesystem has that much free).
TEST(EventStore, ShortOfItsFreeSpaceReserveItRefusesEveryWriteWhole) {
  temp_dir dir;
  {
    auto store = event_store::open(dir.path());
    ASSERT_EQ(store->append({command("s/1", "t")})[0].status, append_status::appended);
    EXPECT_FALSE(store->short_of_space());  // no reserve: never short
  }
  store_options full;
  full.min_free_bytes = uint64_t{1} << 62;
  auto store = event_store::open(dir.path(), full);
  ASSERT_TRUE(store->short_of_space());
  EXPECT_NE(store->short_of_space()->find("event_log.min_free_mb"), std::string::npos);
  auto r = store->append({command("s/2", "t"), command("s/1", "t", nlohmann::json::object(), 1)});
  ASSERT_EQ(r.size(), 2u);
  for (const auto& one : r) {
    EXPECT_EQ(one.status, append_status::no_space);
    EXPECT_NE(one.message.find(dir.path()), std::string::npos) << one.message;
  }
  EXPECT_EQ(store->last_seq(), 1u);
  EXPECT_THROW(store->put_snapshot("world", {1, "x"}), store_error);
  EXPECT_THROW(store->set_projection_offset("views", 1), store_error);
  EXPECT_FALSE(store->latest_snapshot("world"));
  EXPECT_EQ(store->stream_version("s/2"), std::nullopt);
  EXPECT_EQ(store->read(1, 10).size(), 1u);  // reads go on
}

// The writer's cache of stream heads stays under its bound however many streams there are,
// and versions stay right across the times it is emptied.
// A stream's head is read back from the index when the writer has not cached it: after a
// reopen, and for a stream a truncation removed whole (it starts again at version 1).
TEST(EventStore, StreamHeadsReadBackFromTheIndexAfterReopenAndTruncation) {
  temp_dir dir;
  store_options repair;
  repair.allow_damaged_tail = true;
  auto store = event_store::open(dir.path(), repair);
  for (int v = 0; v < 3; ++v) ASSERT_EQ(store->append({command("job/kept", "t", {{"v", v}})})[0].status, append_status::appended);
  for (int v = 0; v < 2; ++v) ASSERT_EQ(store->append({command("job/gone", "t", {{"v", v}})})[0].status, append_status::appended);
  ASSERT_EQ(store->append({command("job/kept-too", "t", nlohmann::json::object())})[0].status, append_status::appended);
  store.reset();
  store = event_store::open(dir.path(), repair);
  EXPECT_EQ(store->stream_version("job/kept"), 3u);
  EXPECT_EQ(store->stream_version("job/gone"), 2u);
  EXPECT_EQ(store->stream_version("job/kept-too"), 1u);
  EXPECT_FALSE(store->stream_version("job/kep")) << "a prefix of a stream's name is no stream";
  EXPECT_FALSE(store->stream_version("job/never"));
  auto cold = store->append({command("job/kept", "t", nlohmann::json::object(), 2)});
  EXPECT_EQ(cold[0].status, append_status::version_conflict) << "the head is 3, read back after the reopen";
  EXPECT_EQ(cold[0].stream_version, 3u);
  store->truncate_after(3);
  EXPECT_EQ(store->stream_version("job/kept"), 3u);
  EXPECT_FALSE(store->stream_version("job/gone")) << "both its events were after 3";
  auto again = store->append({command("job/gone", "t", nlohmann::json::object(), 0)});
  ASSERT_EQ(again[0].status, append_status::appended) << again[0].message;
  EXPECT_EQ(again[0].stream_version, 1u);
}

// The stream index's memtable is hashed by stream (events/event_store.cpp): heads of every
// length (the search doubles, then halves), entries half in a flushed table and half in the
// memtable, and enough streams that some share a bucket; reads within a stream and across
// streams see every entry in order.
TEST(EventStore, StreamHeadsAndReadsAcrossTheHashedIndexAndItsFlushedPart) {
  temp_dir dir;
  constexpr int streams = 3000, longest = 70;
  auto name = [](int i) { return "job/" + std::to_string(i); };
  auto head_of = [&](int i) { return i < longest ? i + 1 : 1 + i % 3; };  // 1..70, then 1..3
  {
    auto store = event_store::open(dir.path());
    auto append_versions = [&](int from, int to) {  // versions from..to of every stream that has them
      std::vector<append_command> batch;
      for (int i = 0; i < streams; ++i)
        for (int v = from; v <= std::min(to, head_of(i)); ++v) batch.push_back(command(name(i), "t", {{"v", v}}));
      ASSERT_FALSE(batch.empty());
      for (const auto& r : store->append(batch)) ASSERT_EQ(r.status, append_status::appended) << r.message;
    };
    append_versions(1, 20);
    store->flush();  // versions 1..20 in a table, the rest in the memtable
    append_versions(21, longest);
    for (int i : {0, 1, 2, 3, 6, 7, 8, 15, 16, 19, 20, 31, 32, 63, 64, 69, 70, streams - 1})
      EXPECT_EQ(store->stream_version(name(i)), static_cast<uint64_t>(head_of(i))) << name(i);
  }
  auto store = event_store::open(dir.path());  // (the memtable's part now comes back from the WAL)
  size_t total = 0;
  for (int i = 0; i < streams; ++i) {
    ASSERT_EQ(store->stream_version(name(i)), static_cast<uint64_t>(head_of(i))) << name(i);
    auto events = store->read_stream(name(i), 1, 1000);
    ASSERT_EQ(events.size(), static_cast<size_t>(head_of(i))) << name(i);
    for (size_t v = 0; v < events.size(); ++v) {
      EXPECT_EQ(events[v].stream_id, name(i));
      EXPECT_EQ(events[v].stream_version, v + 1);
    }
    total += events.size();
  }
  EXPECT_FALSE(store->stream_version("job/" + std::to_string(streams)));
  auto tail = store->read_stream(name(50), 40, 5);
  ASSERT_EQ(tail.size(), 5u);
  EXPECT_EQ(tail.front().stream_version, 40u);
  // Across streams: each stream's first event, every stream of the prefix, once.
  auto firsts = store->first_events_of_streams("job/");
  EXPECT_EQ(firsts.size(), static_cast<size_t>(streams));
  std::set<uint64_t> distinct(firsts.begin(), firsts.end());
  EXPECT_EQ(distinct.size(), firsts.size());
  for (uint64_t seq : firsts) EXPECT_EQ(store->read(seq, 1).at(0).stream_version, 1u);
  EXPECT_EQ(store->last_seq(), total);
  // The next append continues each stream's versions, wherever its head was read from.
  auto next =
      store->append({command(name(69), "t", nlohmann::json::object(), 70), command(name(5), "t", nlohmann::json::object(), 5)});
  EXPECT_EQ(next[0].status, append_status::appended) << next[0].message;
  EXPECT_EQ(next[0].stream_version, 71u);
  EXPECT_EQ(next[1].status, append_status::version_conflict) << "the head of job/5 is 6";
  EXPECT_EQ(next[1].stream_version, 6u);
}

TEST(EventStore, TheStreamHeadCacheIsBoundedAndVersionsStayRight) {
  temp_dir dir;
  store_options o;
  o.stream_head_cache_max = 10;
  auto store = event_store::open(dir.path(), o);
  for (int round = 1; round <= 3; ++round)
    for (int s = 0; s < 50; ++s) {
      auto r =
          store->append({command("job/" + std::to_string(s), "t", nlohmann::json::object(), static_cast<uint64_t>(round - 1))});
      ASSERT_EQ(r[0].status, append_status::appended) << r[0].message;
      EXPECT_EQ(r[0].stream_version, static_cast<uint64_t>(round));
      EXPECT_LE(baton::test::cached_stream_heads(*store), 10u);
    }
  auto conflict = store->append({command("job/7", "t", nlohmann::json::object(), 1)});
  EXPECT_EQ(conflict[0].status, append_status::version_conflict);
  EXPECT_EQ(conflict[0].stream_version, 3u);
}

TEST(EventStore, ADoneStreamLeavesTheHeadCacheAndItsNextAppendStillGetsTheRightVersion) {
  temp_dir dir;
  auto store = event_store::open(dir.path());
  for (const char* s : {"job/a", "job/b"})
    ASSERT_EQ(store->append({command(s, "job.created", nlohmann::json::object())})[0].status, append_status::appended);
  ASSERT_EQ(baton::test::cached_stream_heads(*store), 2u);
  auto last = command("job/a", "job.pruned", nlohmann::json::object(), 1);
  last.stream_done = true;
  auto refused = last;
  refused.expected_version = 7;  // a conflict writes nothing: the head stays
  refused.stream_id = "job/b";
  auto r = store->append({last, refused});
  ASSERT_EQ(r[0].status, append_status::appended);
  EXPECT_EQ(r[0].stream_version, 2u);
  EXPECT_EQ(r[1].status, append_status::version_conflict);
  EXPECT_EQ(baton::test::cached_stream_heads(*store), 1u) << "job/a's head dropped, job/b's kept";
  auto again = store->append({command("job/a", "job.requeued", nlohmann::json::object(), 2)});
  ASSERT_EQ(again[0].status, append_status::appended) << again[0].message;
  EXPECT_EQ(again[0].stream_version, 3u) << "read back from the stream index";
  EXPECT_EQ(baton::test::cached_stream_heads(*store), 2u);
}
