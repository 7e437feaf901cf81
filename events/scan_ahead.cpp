#include "events/scan_ahead.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "events/bytes.hpp"
#include "events/payload.hpp"

namespace baton::events {

namespace {

constexpr size_t batch_size = 256;    // events handed over at once (one lock per batch)
constexpr size_t batches_ahead = 32;  // how far the reader may run ahead (~8,000 events)
// Loads what writing over a spent place will read, in two steps, so that the second finds
// the first's line in the cache: the event itself some places ahead, then, nearer, the
// memory of what `prepare` made of it (freed there).
constexpr size_t recycle_lead_event = 8, recycle_lead_prepared = 4;
void prefetch_event(const decoded_event& d) {
  for (size_t i = 0; i < sizeof(decoded_event); i += 64) __builtin_prefetch(reinterpret_cast<const char*>(&d) + i);
}
void prefetch_prepared(const decoded_event& d) {
  const auto* at = static_cast<const char*>(d.prepared_at);
  for (size_t i = 0; at && i < d.prepared_size; i += 64) __builtin_prefetch(at + i);
}

// The hand-over between the reading thread and the visiting one.
class handover {
 public:
  // Reader side. False when the visitor has stopped.
  bool put(std::vector<decoded_event>&& batch) {
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return full_.size() < batches_ahead || stopped_; });
    if (stopped_) return false;
    full_.push_back(std::move(batch));
    ready_.notify_one();
    return true;
  }
  void finish(std::exception_ptr error) {
    std::lock_guard lock(mu_);
    done_ = true;
    error_ = error;
    ready_.notify_one();
  }
  bool stopped() const { return stopped_flag_.load(std::memory_order_relaxed); }
  // A batch the visitor is done with, for the reader to write its next events over: its
  // events' strings keep their memory (a stream id and a payload's bytes are allocated once
  // per place in the batch, not once per event), and what they held (decoded payloads, a
  // tenth of a replay's time to free) is freed here on the reading thread as it is replaced.
  std::vector<decoded_event> spent() {
    std::vector<decoded_event> batch;
    {
      std::lock_guard lock(mu_);
      if (!spent_.empty()) {
        batch = std::move(spent_.front());
        spent_.pop_front();
      }
    }
    batch.reserve(batch_size);
    return batch;
  }

  // Visitor side. False at the end (then error() says whether reading failed).
  bool take(std::vector<decoded_event>& batch) {
    std::unique_lock lock(mu_);
    if (!batch.empty() && !done_) spent_.push_back(std::move(batch));
    ready_.wait(lock, [&] { return !full_.empty() || done_; });
    if (full_.empty()) return false;
    batch = std::move(full_.front());
    full_.pop_front();
    space_.notify_one();
    return true;
  }
  std::exception_ptr error() {
    std::lock_guard lock(mu_);
    return error_;
  }
  void stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    stopped_flag_.store(true, std::memory_order_relaxed);
    space_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<std::vector<decoded_event>> full_, spent_;
  bool done_ = false, stopped_ = false;
  std::atomic<bool> stopped_flag_{false};
  std::exception_ptr error_;
};

}  // namespace

const nlohmann::json& payload_of(decoded_event& e) {
  if (e.payload_deferred) {
    e.payload = from_payload(e.cbor);
    e.payload_deferred = false;
  }
  return e.payload;
}

void scan_decoded(const event_store& store, uint64_t from_seq, uint64_t to_seq, bool verify_chain,
                  const std::function<bool(decoded_event&)>& visit,
                  const std::function<bool(decoded_event&, std::string_view cbor)>& prepare, const look_ahead* ahead) {
  handover h;
  std::thread reader([&] {
    std::exception_ptr error;
    std::vector<decoded_event> batch = h.spent();
    size_t n = 0;  // events written into `batch`; places after them hold a spent batch's
    bool open = true;
    try {
      store.scan(from_seq, to_seq, verify_chain, [&](const event_view& e) {
        if (h.stopped()) return open = false;
        // (counts in the batch only once it decoded: an error stops the batch before it)
        if (n + recycle_lead_event < batch.size()) prefetch_event(batch[n + recycle_lead_event]);
        if (n + recycle_lead_prepared < batch.size()) prefetch_prepared(batch[n + recycle_lead_prepared]);
        decoded_event& d = n < batch.size() ? batch[n] : batch.emplace_back();
        d.seq = e.seq;
        copy_into(d.stream_id, e.stream_id);
        copy_into(d.type, e.type);
        d.recorded_at_us = e.recorded_at_us;
        d.schema_version = e.schema_version;
        d.prepared.reset();
        d.prepared_at = nullptr;
        if (prepare && prepare(d, e.payload)) {
          copy_into(d.cbor, e.payload);
          d.payload = nullptr;
          d.payload_deferred = true;
        } else {
          d.cbor.clear();
          d.payload = from_payload(e.payload);
          d.payload_deferred = false;
        }
        if (++n == batch_size) {
          open = h.put(std::move(batch));
          batch = h.spent();
          n = 0;
        }
        return open;
      });
    } catch (...) {
      error = std::current_exception();
    }
    batch.resize(n);
    if (open && !batch.empty()) h.put(std::move(batch));  // (the events before an error too)
    h.finish(error);
  });
  // Stops and joins the reader however the visiting ends (an exception from visit included).
  struct joiner {
    handover& h;
    std::thread& t;
    ~joiner() {
      h.stop();
      t.join();
    }
  } join_at_exit{h, reader};
  std::vector<decoded_event> batch;
  while (h.take(batch))
    for (size_t i = 0; i < batch.size(); ++i) {
      if (ahead) {  // (within the batch: its first events get less lead than the rest)
        // The event itself first, further on, so that its first stage reads it from the cache:
        // the reading thread wrote it on the other core.
        if (const size_t lead = ahead->leads.front() + 8; i + lead < batch.size()) prefetch_event(batch[i + lead]);
        for (size_t stage = 0; stage < ahead->leads.size(); ++stage)
          if (i + ahead->leads[stage] < batch.size()) ahead->hint(batch[i + ahead->leads[stage]], stage);
      }
      if (!visit(batch[i])) return;
    }
  if (auto error = h.error()) std::rethrow_exception(error);
}

}  // namespace baton::events
