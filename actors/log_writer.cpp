#include "actors/log_writer.hpp"
#include "actors/thread_name.hpp"
#include "events/event_store.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <string>
#include <utility>

namespace baton::actors {
namespace {

using results = std::vector<events::append_result>;
using promise_type = caf::typed_response_promise<results>;

struct pending_append {
  std::vector<events::append_command> commands;
  promise_type promise;
  std::chrono::steady_clock::time_point received;
};

// A batch written to the WAL, waiting for its fsync.
struct written_batch {
  uint64_t id = 0;
  uint64_t first_seq = 0;  // sequences this batch wrote: first_seq..last_seq (none if first > last)
  uint64_t last_seq = 0;
  bool has_events = false;  // committed was collected (there were subscribers when it was written)
  std::vector<std::pair<promise_type, results>> replies;
  std::vector<std::chrono::steady_clock::time_point> received;  // each reply's append, when it arrived
  std::vector<events::event_envelope> committed;                // for live subscribers
};

struct subscriber {
  caf::actor handle;
  uint64_t next_seq = 1;
  bool live = false;       // caught up: receives batches as they become durable
  uint64_t owed_from = 0;  // live: the first event of the writer's live_unsent not yet handed to it (0: none)
};

// The syncer: one fdatasync at a time, each covering every batch written before it began.
using syncer_actor = caf::typed_actor<caf::reacts_to<sync_atom>>;

struct syncer_state {
  syncer_state() = default;  // user-declared: CAF builds a state constructible from its actor pointer from `this`
  uint64_t synced_through = 0;
  static inline const char* name = "log_syncer";
};

struct log_writer_state {
  log_writer_state() = default;
  std::shared_ptr<events::event_store> store;
  log_writer_options opts;
  std::deque<pending_append> pending;
  bool commit_scheduled = false;
  std::deque<written_batch> unsynced;
  uint64_t next_batch_id = 1;
  bool sync_requested = false;
  std::shared_ptr<std::atomic<uint64_t>> written_through;  // last batch id handed to RocksDB
  syncer_actor syncer;
  std::vector<subscriber> subscribers;
  // Durable events not yet handed to the live subscribers, consecutive: one batch for all of
  // them at the next delivery.
  std::vector<events::event_envelope> live_unsent;
  bool delivery_scheduled = false;
  log_status stats;
  bool fenced = false;  // a write was refused for want of space: refuse all until unfence
  std::string fenced_why;
  static inline const char* name = "log_writer";
};

using self_ptr = log_writer_actor::stateful_pointer<log_writer_state>;

syncer_actor::behavior_type syncer(syncer_actor::stateful_pointer<syncer_state> self, std::shared_ptr<events::event_store> store,
                                   std::shared_ptr<std::atomic<uint64_t>> written_through, log_writer_actor writer,
                                   std::shared_ptr<log_metrics> metrics) {
  name_this_thread("log_syncer");  // (a detached actor: its behaviour is made on its own thread)
  // One request at a time: the writer asks again when this one is answered, so batches
  // written meanwhile group into the next sync (back-to-back syncs measured slower: smaller groups).
  return {
      [=](sync_atom) {
        uint64_t through = written_through->load(std::memory_order_acquire);
        if (through <= self->state.synced_through) return;
        try {
          const auto started = std::chrono::steady_clock::now();
          store->sync_wal();
          if (metrics) metrics->fsync.observe(std::chrono::steady_clock::now() - started);
        } catch (const std::exception& e) {
          // Events are in the WAL but not known durable: the log cannot promise anything more.
          self->send_exit(writer, caf::make_error(caf::sec::runtime_error, e.what()));
          return;
        }
        self->state.synced_through = through;
        caf::anon_send(writer, synced_atom::value, through);
      },
  };
}

size_t event_count(const std::vector<events::append_command>& cmds) {
  size_t n = 0;
  for (const auto& c : cmds) n += c.events.size();
  return n;
}

// Hands each live subscriber what waits for it, in one message: every subscriber that has
// waited since the first waiting event gets the same shared batch; one that went live after
// that (its catch-up read the rest) a batch of its own with its part.
// (anon_send: typed actors may only send() to typed ones.)
void deliver_unsent(self_ptr self) {
  auto& st = self->state;
  if (st.live_unsent.empty()) return;
  auto all = std::make_shared<const std::vector<events::event_envelope>>(std::exchange(st.live_unsent, {}));
  const uint64_t first = all->front().seq;
  for (auto& s : st.subscribers) {
    const uint64_t from = std::exchange(s.owed_from, 0);
    if (!from) continue;
    if (from == first) {
      caf::anon_send(s.handle, events_atom::value, event_batch(all));
      continue;
    }
    auto part = std::make_shared<const std::vector<events::event_envelope>>(all->begin() + (from - first), all->end());
    caf::anon_send(s.handle, events_atom::value, event_batch(std::move(part)));
  }
}

// A durable batch joins what waits for the live subscribers whose next event it starts with.
// It is handed over by the delivery timer, or at once when deliver_every is zero or
// max_batch_events wait.
void notify_live(self_ptr self, std::vector<events::event_envelope>&& committed) {
  if (committed.empty()) return;
  auto& st = self->state;
  const uint64_t first = committed.front().seq, next = committed.back().seq + 1;
  // (Kept consecutive, so a subscriber's part is a suffix; batches are, so this never hands early.)
  if (!st.live_unsent.empty() && st.live_unsent.back().seq + 1 != first) deliver_unsent(self);
  bool owed = false;
  for (auto& s : st.subscribers) {
    if (!s.live || s.next_seq != first) continue;
    s.next_seq = next;
    if (!s.owed_from) s.owed_from = first;
    owed = true;
  }
  if (!owed) return;
  if (st.live_unsent.empty())
    st.live_unsent = std::move(committed);
  else
    st.live_unsent.insert(st.live_unsent.end(), std::make_move_iterator(committed.begin()),
                          std::make_move_iterator(committed.end()));
  if (st.opts.deliver_every.count() <= 0 || st.live_unsent.size() >= st.opts.max_batch_events) return deliver_unsent(self);
  if (!st.delivery_scheduled) {
    st.delivery_scheduled = true;
    self->delayed_send(self, st.opts.deliver_every, deliver_atom::value);
  }
}

void request_sync(self_ptr self) {
  auto& st = self->state;
  if (st.sync_requested || st.unsynced.empty()) return;
  st.sync_requested = true;
  self->send(st.syncer, sync_atom::value);
}

// Answers every batch up to `through` (they are durable) and tells live subscribers.
void release_synced(self_ptr self, uint64_t through) {
  auto& st = self->state;
  while (!st.unsynced.empty() && st.unsynced.front().id <= through) {
    auto& b = st.unsynced.front();
    for (auto& [promise, res] : b.replies) promise.deliver(std::move(res));
    if (st.opts.metrics) {
      const auto now = std::chrono::steady_clock::now();
      for (auto t : b.received) st.opts.metrics->append.observe(now - t);
    }
    notify_live(self, std::move(b.committed));
    st.unsynced.pop_front();
  }
}

// Answers every append still waiting (written but not synced, then parked) with err.
void fail_waiting(self_ptr self, const caf::error& err) {
  auto& st = self->state;
  for (auto& b : st.unsynced)
    for (auto& r : b.replies) r.first.deliver(err);
  for (auto& p : st.pending) p.promise.deliver(err);
  st.unsynced.clear();
  st.pending.clear();
}

// The log failed: everyone waiting learns why, and the writer quits with it.
void fail_fatally(self_ptr self, const std::string& why) {
  auto err = caf::make_error(caf::sec::runtime_error, why);
  fail_waiting(self, err);
  self->quit(err);
}

// Every appended command in cmds refused as no_space (nothing is written).
results refused(const std::vector<events::append_command>& cmds, const std::string& why) {
  results out(cmds.size());
  for (auto& r : out) {
    r.status = events::append_status::no_space;
    r.message = why;
  }
  return out;
}

// Writes one group to the WAL: as many parked appends as fit under the cap (at least one).
void write_some(self_ptr self, bool sync_now) {
  auto& st = self->state;
  if (st.fenced) {
    // Refused now: every append that would write. An empty one (a reply that waits for what
    // was written before it) goes on below, answered once that is durable.
    std::deque<pending_append> waiting;
    for (auto& p : st.pending)
      if (p.commands.empty())
        waiting.push_back(std::move(p));
      else
        p.promise.deliver(refused(p.commands, st.fenced_why));
    st.pending = std::move(waiting);
    if (st.pending.empty()) return;
  }
  std::vector<events::append_command> batch;
  std::vector<std::pair<promise_type, size_t>> owners;  // promise, command count
  written_batch wb;
  size_t events_in_batch = 0;
  while (!st.pending.empty()) {
    auto& p = st.pending.front();
    size_t n = event_count(p.commands);
    if (!batch.empty() && events_in_batch + n > st.opts.max_batch_events) break;
    events_in_batch += n;
    owners.emplace_back(std::move(p.promise), p.commands.size());
    wb.received.push_back(p.received);
    for (auto& c : p.commands) batch.push_back(std::move(c));
    st.pending.pop_front();
  }
  wb.id = st.next_batch_id++;
  wb.has_events = !st.subscribers.empty();
  wb.first_seq = st.store->last_seq() + 1;
  results all;
  try {
    all = st.store->append(batch, wb.has_events ? &wb.committed : nullptr, sync_now);
  } catch (const std::exception& e) {
    // A read inside append failed (corrupt index, I/O). Nothing was written; every caller learns why.
    for (auto& [promise, n] : owners) promise.deliver(caf::make_error(caf::sec::runtime_error, e.what()));
    return;
  }
  bool refused_whole = false;  // one WriteBatch: refused for want of space, nothing of it written
  for (const auto& r : all) {
    if (r.status == events::append_status::io_error) {
      for (auto& [promise, n] : owners) promise.deliver(caf::make_error(caf::sec::runtime_error, r.message));
      return fail_fatally(self, r.message);
    }
    if (r.status == events::append_status::no_space) {
      refused_whole = true;
      if (!st.fenced) {
        st.fenced = true;
        st.fenced_why = r.message;
      }
    }
  }
  size_t offset = 0;
  std::vector<std::pair<promise_type, results>> replies;
  for (auto& [promise, n] : owners) {
    results mine(std::make_move_iterator(all.begin() + offset), std::make_move_iterator(all.begin() + offset + n));
    for (const auto& r : mine)
      if (r.status == events::append_status::appended) st.stats.events_written += r.last_seq - r.first_seq + 1;
    offset += n;
    replies.emplace_back(std::move(promise), std::move(mine));
  }
  if (refused_whole) {  // the refused are answered now; an empty append still waits for the sync
    std::vector<std::pair<promise_type, results>> waiting;
    for (auto& [promise, res] : replies)
      if (res.empty())
        waiting.emplace_back(std::move(promise), std::move(res));
      else
        promise.deliver(std::move(res));
    if (waiting.empty()) return;
    replies = std::move(waiting);
    wb.received.clear();  // (append latencies are measured for written events only)
  }
  ++st.stats.commits;
  wb.last_seq = st.store->last_seq();
  wb.replies = std::move(replies);
  st.unsynced.push_back(std::move(wb));
  st.written_through->store(st.unsynced.back().id, std::memory_order_release);
}

subscriber* find_subscriber(self_ptr self, const caf::actor& who) {
  for (auto& s : self->state.subscribers)
    if (s.handle == who) return &s;
  return nullptr;
}

void remove_subscriber(self_ptr self, const caf::actor_addr& who) {
  auto& subs = self->state.subscribers;
  subs.erase(std::remove_if(subs.begin(), subs.end(), [&](auto& s) { return s.handle.address() == who; }), subs.end());
}

log_writer_actor::behavior_type log_writer(self_ptr self, std::shared_ptr<events::event_store> store, log_writer_options opts) {
  name_this_thread("log_writer");
  auto& st = self->state;
  st.store = std::move(store);
  st.opts = opts;
  st.written_through = std::make_shared<std::atomic<uint64_t>>(0);
  st.syncer = self->spawn<caf::detached + caf::linked>(syncer, st.store, st.written_through,
                                                       caf::actor_cast<log_writer_actor>(self), opts.metrics);
  // Before quitting: write and sync what is parked, answer everyone, so no append is dropped.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    if (msg.reason != caf::exit_reason::user_shutdown && msg.reason != caf::exit_reason::normal) {
      fail_waiting(self, msg.reason);
    } else {
      while (!st.pending.empty()) write_some(self, false);
      try {
        st.store->sync_wal();
        release_synced(self, st.next_batch_id);
      } catch (const std::exception& e) {
        fail_waiting(self, caf::make_error(caf::sec::runtime_error, e.what()));  // (nothing is parked any more)
      }
    }
    deliver_unsent(self);
    st.subscribers.clear();
    self->send_exit(st.syncer, msg.reason);
    st.syncer = nullptr;
    self->quit(msg.reason);
  });
  self->set_down_handler([self](caf::down_msg& msg) { remove_subscriber(self, msg.source); });
  return {
      [self](append_atom, std::vector<events::append_command>& cmds) -> caf::result<results> {
        auto rp = self->make_response_promise<results>();
        self->state.pending.push_back(pending_append{std::move(cmds), rp, std::chrono::steady_clock::now()});
        if (!self->state.commit_scheduled) {
          self->state.commit_scheduled = true;
          self->send(self, commit_atom::value);
        }
        return rp;
      },
      [self](commit_atom) {
        auto& st = self->state;
        st.commit_scheduled = false;
        write_some(self, false);
        request_sync(self);
        if (!st.pending.empty()) {
          st.commit_scheduled = true;
          self->send(self, commit_atom::value);
        }
      },
      [self](synced_atom, uint64_t through) {
        self->state.sync_requested = false;
        ++self->state.stats.syncs;
        release_synced(self, through);
        request_sync(self);  // batches written while that sync ran
      },
      [self](status_atom) -> log_status {
        auto s = self->state.stats;
        s.last_seq = self->state.store->last_seq();
        s.subscribers = self->state.subscribers.size();
        return s;
      },
      [self](read_atom, uint64_t from, uint64_t max) -> caf::result<std::vector<events::event_envelope>> {
        try {
          return self->state.store->read(from, max);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, e.what());
        }
      },
      [self](subscribe_atom, caf::actor who, uint64_t from) -> uint64_t {
        if (!find_subscriber(self, who)) {
          self->monitor(who);
          self->state.subscribers.push_back(subscriber{who, std::max<uint64_t>(from, 1), false, 0});
          self->send(self, catchup_atom::value, who);
        }
        return self->state.store->last_seq();
      },
      [self](unsubscribe_atom, caf::actor who) {
        self->demonitor(who);
        remove_subscriber(self, who.address());
      },
      [self](deliver_atom) {
        self->state.delivery_scheduled = false;
        deliver_unsent(self);
      },
      [self](unfence_atom) {
        auto& st = self->state;
        if (!st.fenced) return;
        st.fenced = false;
        st.fenced_why.clear();
      },
      [self](catchup_atom, caf::actor who) {
        auto& st = self->state;
        auto* s = find_subscriber(self, who);
        if (!s || s->live) return;
        // Catch up only to what is durable: unsynced batches reach live subscribers when synced.
        uint64_t durable = st.unsynced.empty() ? st.store->last_seq() : st.unsynced.front().first_seq - 1;
        std::vector<events::event_envelope> chunk;
        try {
          if (s->next_seq <= durable)
            chunk = st.store->read(s->next_seq, std::min<uint64_t>(st.opts.catchup_chunk, durable - s->next_seq + 1));
        } catch (const std::exception& e) {
          // The subscriber cannot see a consistent log; tell it and drop it.
          self->send_exit(who, caf::make_error(caf::sec::runtime_error, e.what()));
          remove_subscriber(self, who.address());
          return;
        }
        if (!chunk.empty()) {
          s->next_seq = chunk.back().seq + 1;
          caf::anon_send(who, events_atom::value,
                         event_batch(std::make_shared<const std::vector<events::event_envelope>>(std::move(chunk))));
        }
        // Go live once caught up, unless a batch written before anyone subscribed is still
        // unsynced (it kept no events to forward): then retry after its sync.
        bool forwardable = std::all_of(st.unsynced.begin(), st.unsynced.end(), [](auto& b) { return b.has_events; });
        if (s->next_seq > durable && forwardable)
          s->live = true;
        else
          self->send(self, catchup_atom::value, who);
      },
  };
}

}  // namespace

std::string log_error_text(const caf::error& e) {
  const auto& context = e.context();
  if (context.size() == 1 && context.match_element<std::string>(0)) return context.get_as<std::string>(0);
  return to_string(e);
}

log_writer_actor spawn_log_writer(caf::actor_system& sys, std::shared_ptr<events::event_store> store, log_writer_options opts) {
  return sys.spawn<caf::detached>(log_writer, std::move(store), opts);
}

}  // namespace baton::actors
