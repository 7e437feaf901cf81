// The pieces behind the live stream and the dashboard's logins, without a daemon: the feed's
// filter and backlog (projections/live_feed.hpp), a stream's cap on what a slow client may
// hold (http/event_stream.hpp), the session store's expiry and bound (http/ui_sessions.hpp)
// and the Cookie header's reading (http/caller.hpp).
#include <gtest/gtest.h>

#include "events/payload.hpp"
#include "http/caller.hpp"
#include "http/event_stream.hpp"
#include "http/ui_sessions.hpp"
#include "projections/live_feed.hpp"

using namespace baton;

namespace {

events::event_envelope event(uint64_t seq, std::string stream, std::string type,
                             nlohmann::json payload = nlohmann::json::object()) {
  events::event_envelope e;
  e.seq = seq;
  e.stream_id = std::move(stream);
  e.type = std::move(type);
  e.recorded_at_us = static_cast<int64_t>(seq) * 1000;
  e.actor = "operator:x";
  e.payload = events::to_payload(payload);
  return e;
}

struct collected {
  std::string text;
  bool open = true;
  projections::live_feed::sink sink() {
    return [this](const projections::live_feed::shared_text& t) {
      text += *t;
      return open;
    };
  }
};

}  // namespace

TEST(live_feed, EachSubscriberGetsWhatItMaySee) {
  projections::live_feed feed({{"old-job", "ann"}}, 10);
  collected admin, ann, bob, worker;
  feed.subscribe(core::principal::operator_named("root"), 0, admin.sink());
  feed.subscribe(core::principal::named_operator("ann", false), 0, ann.sink());
  feed.subscribe(core::principal::named_operator("bob", false), 0, bob.sink());
  EXPECT_NE(admin.text.find("event: hello\ndata: {\"seq\":10}"), std::string::npos) << admin.text;
  ASSERT_TRUE(feed.apply_batch({event(11, "job/old-job", "job.held"), event(12, "job/new", "job.created", {{"user", "bob"}}),
                                event(13, "daemon", "daemon.started"), event(14, "job/new", "job.assigned")}));
  feed.flush();
  for (auto seq : {"id: 11\n", "id: 12\n", "id: 13\n", "id: 14\n"}) EXPECT_NE(admin.text.find(seq), std::string::npos) << seq;
  EXPECT_NE(ann.text.find("id: 11\n"), std::string::npos) << "a job in the log before the feed started is still ann's";
  EXPECT_EQ(ann.text.find("id: 12\n"), std::string::npos);
  EXPECT_EQ(ann.text.find("id: 13\n"), std::string::npos) << "events of no job are for admins";
  EXPECT_NE(bob.text.find("id: 12\n"), std::string::npos);
  EXPECT_NE(bob.text.find("id: 14\n"), std::string::npos) << "later events of bob's job follow its creation";
  EXPECT_EQ(bob.text.find("id: 11\n"), std::string::npos);
  EXPECT_NE(
      admin.text.find(
          R"(data: {"actor":"operator:x","job_id":"new","seq":12,"stream":"job/new","time_us":12000,"type":"job.created"})"),
      std::string::npos)
      << admin.text;
}

TEST(live_feed, ABatchReachesEachSubscriberInOnePushInOrder) {
  projections::live_feed feed({{"anns-job", "ann"}}, 0);
  std::vector<std::string> admin_pushes, ann_pushes, bob_pushes;
  auto counting = [](std::vector<std::string>& pushes) {
    return [&pushes](const projections::live_feed::shared_text& t) { return pushes.push_back(*t), true; };
  };
  feed.subscribe(core::principal::operator_named("root"), 0, counting(admin_pushes));
  feed.subscribe(core::principal::named_operator("ann", false), 0, counting(ann_pushes));
  feed.subscribe(core::principal::named_operator("bob", false), 0, counting(bob_pushes));
  admin_pushes.clear(), ann_pushes.clear(), bob_pushes.clear();  // (the hello)
  ASSERT_TRUE(feed.apply_batch(
      {event(1, "job/anns-job", "job.held"), event(2, "daemon", "daemon.started"), event(3, "job/anns-job", "job.released")}));
  feed.flush();
  ASSERT_EQ(admin_pushes.size(), 1u);
  EXPECT_LT(admin_pushes[0].find("id: 1\n"), admin_pushes[0].find("id: 2\n"));
  EXPECT_LT(admin_pushes[0].find("id: 2\n"), admin_pushes[0].find("id: 3\n"));
  ASSERT_EQ(ann_pushes.size(), 1u);
  EXPECT_EQ(ann_pushes[0].find("id: 2\n"), std::string::npos);
  EXPECT_NE(ann_pushes[0].find("id: 3\n"), std::string::npos);
  EXPECT_TRUE(bob_pushes.empty()) << "nothing bob may see: no push at all";
}

TEST(live_feed, BatchesReachTheSubscribersAtTheFlushInOnePushAndAClientJoiningBetweenGetsThemOnce) {
  projections::live_feed feed({}, 0);
  std::vector<std::string> early, late;
  feed.subscribe(core::principal::operator_named("root"), 0,
                 [&](const projections::live_feed::shared_text& t) { return early.push_back(*t), true; });
  early.clear();  // (the hello)
  ASSERT_TRUE(feed.apply_batch({event(1, "daemon", "a")}));
  ASSERT_TRUE(feed.apply_batch({event(2, "daemon", "b"), event(3, "daemon", "c")}));
  EXPECT_TRUE(early.empty()) << "nothing before the flush";
  EXPECT_TRUE(feed.pending());
  feed.subscribe(core::principal::operator_named("root"), 0,
                 [&](const projections::live_feed::shared_text& t) { return late.push_back(*t), true; });
  ASSERT_EQ(late.size(), 1u);
  EXPECT_NE(late[0].find("event: hello\ndata: {\"seq\":0}"), std::string::npos)
      << "the hello names the last event handed over, not the last applied: " << late[0];
  feed.flush();
  EXPECT_FALSE(feed.pending());
  ASSERT_EQ(early.size(), 1u) << "two batches, one push";
  EXPECT_EQ(early[0].rfind("id: 1\n", 0), 0u) << early[0];
  EXPECT_LT(early[0].find("id: 2\n"), early[0].find("id: 3\n"));
  for (auto id : {"id: 1\n", "id: 2\n", "id: 3\n"}) EXPECT_EQ(early[0].find(id), early[0].rfind(id)) << id << " once";
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(late[1], early[0]) << "the client that joined in between gets the same events, once";
  feed.flush();
  EXPECT_EQ(early.size(), 1u) << "nothing new: no push";
}

TEST(live_feed, AFullBacklogHandsItsEventsOverBeforeDroppingThem) {
  projections::live_feed feed({}, 0, 2);
  collected admin;
  feed.subscribe(core::principal::operator_named("root"), 0, admin.sink());
  ASSERT_TRUE(feed.apply_batch({event(1, "daemon", "a"), event(2, "daemon", "b"), event(3, "daemon", "c")}));
  for (auto id : {"id: 1\n", "id: 2\n"}) EXPECT_NE(admin.text.find(id), std::string::npos) << id;
  EXPECT_EQ(admin.text.find("id: 3\n"), std::string::npos) << "the last is kept for the flush";
  feed.flush();
  EXPECT_NE(admin.text.find("id: 3\n"), std::string::npos);
}

TEST(live_feed, SummariesAreTheJsonNlohmannWouldWriteWhateverTheNamesHold) {
  // Written by hand for speed: every escape, and text beyond ASCII, must come out as
  // nlohmann's dump() writes it (and still parse as the same strings).
  for (std::string name : {std::string("operator:x"), std::string("quote\" back\\slash"), std::string("tab\tnl\ncr\rbs\bff\f"),
                           std::string("ctl\x01\x1f\x7f"), std::string("caf\xc3\xa9 \xe2\x9c\x93"), std::string()}) {
    auto e = event(7, "job/" + name, "job." + name);
    e.actor = name;
    const std::string text = projections::live_feed::message_of(e, name);
    const nlohmann::json expected{{"seq", 7},        {"type", e.type}, {"stream", e.stream_id},
                                  {"time_us", 7000}, {"actor", name},  {"job_id", name}};
    EXPECT_EQ(text, "id: 7\ndata: " + expected.dump() + "\n\n") << name;
  }
}

// An actor that is not UTF-8 (a log from before batond refused such headers) had stopped the
// feed for every client: it is sent with U+FFFD, counted, and the feed goes on.
TEST(live_feed, AnActorThatIsNotUtf8IsSentWithAReplacementAndCounted) {
  projections::live_feed feed({}, 0);
  collected admin;
  feed.subscribe(core::principal::operator_named("root"), 0, admin.sink());
  auto bad = event(1, "daemon", "a");
  bad.actor = "operator:\xff";
  ASSERT_TRUE(feed.apply_batch({bad, event(2, "daemon", "b")})) << feed.failure().value_or("");
  feed.flush();
  EXPECT_NE(admin.text.find("\"actor\":\"operator:\xef\xbf\xbd\""), std::string::npos) << admin.text;
  EXPECT_NE(admin.text.find("id: 2\n"), std::string::npos) << admin.text;
  EXPECT_EQ(feed.skipped().count, 1u);
  EXPECT_EQ(feed.skipped().last_seq, 1u);
}

TEST(live_feed, AGoneClientIsDroppedAndAResumeGetsTheBacklogOrAReset) {
  projections::live_feed feed({}, 0, 3);
  collected gone;
  feed.subscribe(core::principal::operator_named("root"), 0, gone.sink());
  gone.open = false;
  ASSERT_TRUE(feed.apply_batch({event(1, "daemon", "a"), event(2, "daemon", "b")}));
  feed.flush();
  EXPECT_EQ(feed.subscribers(), 0u);
  bool there = true;
  collected quiet;
  feed.subscribe(core::principal::named_operator("ann", false), 0, quiet.sink(), [&] { return there; });
  EXPECT_EQ(feed.subscribers(), 1u);
  there = false;
  EXPECT_EQ(feed.subscribers(), 0u) << "a client known to be gone is not counted, even before the next event";
  ASSERT_TRUE(feed.apply_batch({event(3, "daemon", "c"), event(4, "daemon", "d")}));
  feed.flush();
  collected resumed, too_late;
  feed.subscribe(core::principal::operator_named("root"), 2, resumed.sink());
  EXPECT_EQ(resumed.text.find("id: 2\n"), std::string::npos);
  EXPECT_NE(resumed.text.find("id: 3\n"), std::string::npos);
  EXPECT_LT(resumed.text.find("id: 4\n"), resumed.text.find("event: hello")) << resumed.text;
  ASSERT_TRUE(feed.apply_batch({event(5, "daemon", "e")}));  // the backlog of 3 now starts at event 3
  feed.flush();
  EXPECT_NE(resumed.text.find("id: 5\n"), std::string::npos);
  feed.subscribe(core::principal::operator_named("root"), 1, too_late.sink());
  EXPECT_EQ(too_late.text.rfind("event: reset\n", 0), 0u) << too_late.text;
  EXPECT_EQ(too_late.text.find("id: "), std::string::npos);
  EXPECT_EQ(feed.subscribers(), 2u);
}

TEST(event_stream, AClientThatDoesNotReadIsClosedAtTheCap) {
  http::event_stream s(100);
  int wakes = 0;
  s.attach([&] { ++wakes; });
  EXPECT_TRUE(s.push(std::string(60, 'a')));
  EXPECT_TRUE(s.push(std::string(30, 'b')));
  EXPECT_EQ(wakes, 1) << "a burst costs one wake until the connection takes";
  auto taken = s.take();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(*taken[0] + *taken[1], std::string(60, 'a') + std::string(30, 'b')) << "in order";
  EXPECT_TRUE(s.push(std::string(100, 'c'))) << "exactly at the cap";
  EXPECT_FALSE(s.push("d")) << "one byte beyond";
  EXPECT_TRUE(s.closed());
  EXPECT_TRUE(s.take().empty());
  EXPECT_FALSE(s.push("e"));
}

TEST(ui_sessions, ExpireAndStayBounded) {
  http::ui_sessions store(2, 1000);
  store.open("a", "o:ann", "tok-a", "", "csrf-a", 0);
  store.open("b", "o:ann", "tok-b", "", "csrf-b", 10);
  ASSERT_TRUE(store.find("a", 999));
  EXPECT_EQ(store.find("a", 999)->credential, "tok-a");
  EXPECT_FALSE(store.find("a", 1000)) << "ends ttl after login";
  store.open("a", "o:ann", "tok-a", "", "csrf-a", 20);
  store.open("c", "o:ann", "tok-c", "", "csrf-c", 30);  // full: ann's oldest (b) goes
  EXPECT_EQ(store.size(), 2u);
  EXPECT_FALSE(store.find("b", 30));
  EXPECT_TRUE(store.find("a", 30));
  EXPECT_FALSE(store.open("d", "o:bob", "tok-d", "", "csrf-d", 40)) << "full of ann's: bob ends none of them";
  EXPECT_TRUE(store.find("a", 40));
  store.close("a");
  EXPECT_FALSE(store.find("a", 30));
  EXPECT_TRUE(store.open("d", "o:bob", "tok-d", "", "csrf-d", 40));
}

TEST(ui_sessions, AnOperatorsOwnLoginsEndOnlyTheirOwnOldest) {
  http::ui_sessions store(100, 1000, 2);
  store.open("ann-1", "o:ann", "tok-a", "", "c", 0);
  for (int i = 1; i <= 5; ++i) store.open("bob-" + std::to_string(i), "o:bob", "tok-b", "", "c", i);
  EXPECT_TRUE(store.find("ann-1", 10));
  EXPECT_FALSE(store.find("bob-3", 10)) << "bob keeps his 2 newest";
  EXPECT_TRUE(store.find("bob-4", 10));
  EXPECT_TRUE(store.find("bob-5", 10));
  EXPECT_EQ(store.size(), 3u);
}

TEST(ui_sessions, TheCookieIsReadByItsExactName) {
  http::request req;
  req.headers = {{"cookie", "x=1; baton_session_old=no; baton_session=yes; z=2"}};
  EXPECT_EQ(http::cookie_value(req, "baton_session"), "yes");
  EXPECT_EQ(http::cookie_value(req, "z"), "2");
  EXPECT_EQ(http::cookie_value(req, "missing"), "");
}

// A flush's text is built once for every client who sees all events and handed to each as the
// same object (a stream queues the pointer: no copy per client).
TEST(live_feed, ClientsWhoSeeAllEventsShareOneTextPerFlush) {
  projections::live_feed feed({{"anns-job", "ann"}}, 0);
  std::vector<projections::live_feed::shared_text> root, admin, ann;
  auto keeping = [](std::vector<projections::live_feed::shared_text>& got) {
    return [&got](const projections::live_feed::shared_text& t) { return got.push_back(t), true; };
  };
  feed.subscribe(core::principal::operator_named("root"), 0, keeping(root));
  feed.subscribe(core::principal::named_operator("boss", true), 0, keeping(admin));
  feed.subscribe(core::principal::named_operator("ann", false), 0, keeping(ann));
  root.clear(), admin.clear(), ann.clear();  // (the hellos)
  ASSERT_TRUE(feed.apply_batch({event(1, "job/anns-job", "job.held"), event(2, "daemon", "daemon.started")}));
  feed.flush();
  ASSERT_EQ(root.size(), 1u);
  ASSERT_EQ(admin.size(), 1u);
  ASSERT_EQ(ann.size(), 1u);
  EXPECT_EQ(root[0].get(), admin[0].get()) << "one text for both";
  EXPECT_NE(root[0]->find("id: 2\n"), std::string::npos);
  EXPECT_NE(ann[0].get(), root[0].get());
  EXPECT_EQ(ann[0]->find("id: 2\n"), std::string::npos) << "ann's own text, without the daemon's event";
}
