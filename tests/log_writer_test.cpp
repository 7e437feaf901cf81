#include "actors/log_writer.hpp"

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <thread>

#include "events/event_store.hpp"
#include "support/commands.hpp"
#include "support/temp_dir.hpp"

using namespace baton;
using baton::test::command;

namespace {

using results = std::vector<events::append_result>;

results append(caf::actor_system& sys, const actors::log_writer_actor& log, std::vector<events::append_command> cmds) {
  caf::scoped_actor self{sys};
  results out;
  self->request(log, caf::infinite, actors::append_atom::value, std::move(cmds))
      .receive([&](results& r) { out = std::move(r); }, [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  return out;
}

actors::log_status status(caf::actor_system& sys, const actors::log_writer_actor& log) {
  caf::scoped_actor self{sys};
  actors::log_status out;
  self->request(log, caf::infinite, actors::status_atom::value)
      .receive([&](actors::log_status& s) { out = s; }, [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
  return out;
}

caf::actor_system_config two_threads() {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  return cfg;
}

}  // namespace

TEST(LogWriter, ConcurrentProducersGetDistinctDurableSequencesInFewerCommits) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  constexpr int producers = 32, per_producer = 40;
  std::vector<uint64_t> seqs[producers];
  {
    auto cfg = two_threads();
    caf::actor_system sys{cfg};
    auto log = actors::spawn_log_writer(sys, store);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p)
      threads.emplace_back([&, p] {
        for (int i = 0; i < per_producer; ++i) {
          auto r = append(sys, log, {command("p/" + std::to_string(p), "t", {{"i", i}}, static_cast<uint64_t>(i))});
          ASSERT_EQ(r.size(), 1u);
          ASSERT_EQ(r[0].status, events::append_status::appended) << r[0].message;
          seqs[p].push_back(r[0].first_seq);
        }
      });
    for (auto& t : threads) t.join();
    auto st = status(sys, log);
    EXPECT_EQ(st.events_written, static_cast<uint64_t>(producers * per_producer));
    EXPECT_LT(st.commits, st.events_written) << "no two appends ever shared a WriteBatch";
    caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
  }
  std::set<uint64_t> all;
  for (auto& v : seqs) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(producers * per_producer));
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), static_cast<uint64_t>(producers * per_producer));
  store.reset();
  auto reopened = events::event_store::open(dir.path());
  EXPECT_EQ(reopened->last_seq(), static_cast<uint64_t>(producers * per_producer));
  EXPECT_TRUE(reopened->verify().ok);
}

TEST(LogWriter, ConflictsAndDuplicatesComeBackPerCommand) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  auto cfg = two_threads();
  caf::actor_system sys{cfg};
  auto log = actors::spawn_log_writer(sys, store);
  auto r = append(sys, log,
                  {command("a", "t", {}, events::no_stream, "c1"), command("a", "t", {}, events::no_stream),
                   command("a", "t", {}, events::any_version, "c1")});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].status, events::append_status::appended);
  EXPECT_EQ(r[1].status, events::append_status::version_conflict);
  EXPECT_EQ(r[2].status, events::append_status::duplicate);
  EXPECT_EQ(store->last_seq(), 1u);
  caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
}

// Three subscribers at once: each has every event once, in order, whole (live subscribers
// share one batch per delivery; one that went live later gets its part of it).
TEST(LogWriter, SubscriberSeesEveryEventOnceInOrderAcrossCatchUpAndLive) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  for (int i = 0; i < 2500; ++i) store->append({command("old", "t")});  // forces several catch-up chunks
  auto cfg = two_threads();
  caf::actor_system sys{cfg};
  auto log = actors::spawn_log_writer(sys, store, {4096, 1000});
  std::vector<std::unique_ptr<caf::scoped_actor>> subs;
  for (int s = 0; s < 3; ++s) {
    subs.push_back(std::make_unique<caf::scoped_actor>(sys));
    auto& sub = *subs.back();
    uint64_t at_subscribe = 0;
    sub->request(log, caf::infinite, actors::subscribe_atom::value, caf::actor_cast<caf::actor>(sub), uint64_t{1})
        .receive([&](uint64_t last) { at_subscribe = last; }, [&](caf::error& e) { FAIL() << sys.render(e); });
    EXPECT_EQ(at_subscribe, 2500u);
  }

  // Producers race the catch-up.
  std::vector<std::thread> producers;
  for (int p = 0; p < 8; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 50; ++i) append(sys, log, {command("new/" + std::to_string(p), "t", {{"i", i}})});
    });
  for (auto& t : producers) t.join();
  for (auto& sub : subs) {
    std::vector<events::event_envelope> seen;
    while (seen.size() < 2900) {
      bool got = false;
      (*sub)->receive(
          [&](actors::events_atom, actors::event_batch& evs) {
            for (const auto& e : *evs) seen.push_back(e);
            got = true;
          },
          caf::after(std::chrono::seconds(10)) >> [&] {});
      if (!got) break;
    }
    ASSERT_EQ(seen.size(), 2900u);
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].seq, i + 1) << "at index " << i;
    std::map<std::string, int> next_i;  // each producer's events, whole and in its order
    for (size_t i = 2500; i < seen.size(); ++i) {
      const auto& e = seen[i];
      ASSERT_EQ(e.stream_id.rfind("new/", 0), 0u) << e.stream_id;
      EXPECT_EQ(e.type, "t");
      EXPECT_EQ(events::from_payload(e.payload)["i"], next_i[e.stream_id]++) << e.stream_id;
      EXPECT_EQ(e.hash.size(), seen[0].hash.size());
    }
    EXPECT_EQ(next_i.size(), 8u);
  }
  caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
}

TEST(LogWriter, ExitFlushesParkedAppendsAndAnswersThem) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  int answered_ok = 0;
  {
    auto cfg = two_threads();
    caf::actor_system sys{cfg};
    auto log = actors::spawn_log_writer(sys, store, {16, 1024});  // small batches: many parked groups
    caf::scoped_actor self{sys};
    // Plain sends: each reply comes back to self as an ordinary message.
    for (int i = 0; i < 200; ++i)
      self->send(log, actors::append_atom::value, std::vector<events::append_command>{command("s", "t")});
    self->send_exit(log, caf::exit_reason::user_shutdown);
    for (int i = 0; i < 200; ++i)
      self->receive([&](results& r) { answered_ok += r[0].ok(); }, [&](caf::error&) {},
                    caf::after(std::chrono::seconds(10)) >> [&] { ADD_FAILURE() << "reply " << i << " missing"; });
  }
  EXPECT_EQ(store->last_seq(), static_cast<uint64_t>(answered_ok));
  EXPECT_EQ(answered_ok, 200);
}

namespace {
// A log writer with the given options and one subscriber from sequence 1, live (the log is
// empty, so its catch-up ends at once: an append answered after the status reply lands live).
struct subscribed_log {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  caf::actor_system_config cfg = two_threads();
  caf::actor_system sys{cfg};
  actors::log_writer_actor log;
  caf::scoped_actor sub{sys};

  explicit subscribed_log(actors::log_writer_options o) : log(actors::spawn_log_writer(sys, store, o)) {
    sub->request(log, caf::infinite, actors::subscribe_atom::value, caf::actor_cast<caf::actor>(sub), uint64_t{1})
        .receive([&](uint64_t last) { EXPECT_EQ(last, 0u); }, [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
    status(sys, log);
  }
  ~subscribed_log() { caf::anon_send_exit(log, caf::exit_reason::user_shutdown); }
  void append_one(const std::string& stream) { ASSERT_EQ(append(sys, log, {command(stream, "t")}).size(), 1u); }
  // The sequences of the next message's events (none if nothing came within `wait`).
  std::vector<uint64_t> next_message(std::chrono::milliseconds wait) {
    std::vector<uint64_t> seqs;
    sub->receive(
        [&](actors::events_atom, actors::event_batch& evs) {
          for (const auto& e : *evs) seqs.push_back(e.seq);
        },
        caf::after(wait) >> [&] {});
    return seqs;
  }
};
}  // namespace

// A live subscriber gets what became durable in one message per delivery: nothing before the
// delivery is due, everything at once when max_batch_events wait, and what waits when the
// writer stops. (The delivery timer is an hour away here, so only those two hand anything over.)
TEST(LogWriter, LiveSubscriberGetsDurableBatchesTogetherAtTheCapAndAtShutdown) {
  actors::log_writer_options o;
  o.max_batch_events = 4;
  o.deliver_every = std::chrono::hours(1);
  subscribed_log l(o);
  for (int i = 0; i < 3; ++i) l.append_one("s/" + std::to_string(i));
  EXPECT_TRUE(l.next_message(std::chrono::milliseconds(200)).empty()) << "three durable batches, delivered before the cap";
  l.append_one("s/3");
  EXPECT_EQ(l.next_message(std::chrono::seconds(10)), (std::vector<uint64_t>{1, 2, 3, 4}));
  for (int i = 4; i < 6; ++i) l.append_one("s/" + std::to_string(i));
  EXPECT_TRUE(l.next_message(std::chrono::milliseconds(200)).empty());
  caf::anon_send_exit(l.log, caf::exit_reason::user_shutdown);
  EXPECT_EQ(l.next_message(std::chrono::seconds(10)), (std::vector<uint64_t>{5, 6}));
}

// With deliver_every zero, every durable batch is its own message, as it becomes durable.
TEST(LogWriter, LiveSubscriberGetsEachDurableBatchAtOnceWithoutADeliveryInterval) {
  actors::log_writer_options o;
  o.deliver_every = std::chrono::microseconds(0);
  subscribed_log l(o);
  for (uint64_t i = 1; i <= 3; ++i) {
    l.append_one("s/" + std::to_string(i));
    EXPECT_EQ(l.next_message(std::chrono::seconds(10)), std::vector<uint64_t>{i});
  }
}

// Live subscribers in step share one batch per delivery (not a copy each); one that went live
// while events waited for the others gets only the events after its catch-up.
TEST(LogWriter, LiveSubscribersShareOneBatchAndALateOneGetsOnlyItsPart) {
  test::temp_dir dir;
  std::shared_ptr<events::event_store> store = events::event_store::open(dir.path());
  auto cfg = two_threads();
  caf::actor_system sys{cfg};
  actors::log_writer_options o;
  o.deliver_every = std::chrono::hours(1);  // only the stop hands anything over
  auto log = actors::spawn_log_writer(sys, store, o);
  caf::scoped_actor a{sys}, b{sys}, late{sys};
  auto subscribe = [&](caf::scoped_actor& sub) {
    sub->request(log, caf::infinite, actors::subscribe_atom::value, caf::actor_cast<caf::actor>(sub), uint64_t{1})
        .receive([&](uint64_t) {}, [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
    status(sys, log);  // (the catch-up queued behind the subscription has run)
  };
  auto next = [&](caf::scoped_actor& sub) {
    actors::event_batch got;
    sub->receive([&](actors::events_atom, actors::event_batch& evs) { got = evs; },
                 caf::after(std::chrono::seconds(10)) >> [&] { ADD_FAILURE() << "no batch"; });
    return got;
  };
  auto seqs = [](const actors::event_batch& batch) {
    std::vector<uint64_t> out;
    if (batch)
      for (const auto& e : *batch) out.push_back(e.seq);
    return out;
  };
  subscribe(a);
  subscribe(b);
  append(sys, log, {command("s/1", "t")});
  append(sys, log, {command("s/2", "t")});
  subscribe(late);  // its catch-up reads 1 and 2, which still wait for a and b
  EXPECT_EQ(seqs(next(late)), (std::vector<uint64_t>{1, 2}));
  append(sys, log, {command("s/3", "t")});
  caf::anon_send_exit(log, caf::exit_reason::user_shutdown);
  auto to_a = next(a), to_b = next(b), to_late = next(late);
  EXPECT_EQ(seqs(to_a), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(to_a.get(), to_b.get()) << "a and b got a copy each";
  EXPECT_EQ(seqs(to_late), (std::vector<uint64_t>{3}));
}
