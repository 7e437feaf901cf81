#include "projections/projection.hpp"

#include <exception>

#include <spdlog/spdlog.h>

namespace baton::projections {

uint64_t projection::applied_seq() const {
  std::lock_guard<std::mutex> lock(m_);
  return applied_;
}

bool projection::wait_applied(uint64_t seq, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(m_);
  return advanced_.wait_until(lock, deadline, [&] { return applied_ >= seq || failure_; }) && applied_ >= seq;
}

std::optional<std::string> projection::failure() const {
  std::lock_guard<std::mutex> lock(m_);
  return failure_;
}

bool projection::apply_batch(const std::vector<events::event_envelope>& batch) {
  if (batch.empty()) return !failure();
  if (failure()) return false;
  uint64_t expected = applied_seq() + 1;  // only this thread changes applied_
  for (const auto& e : batch) {
    if (e.seq != expected) {
      fail("projection " + name_ + ": expected event " + std::to_string(expected) + ", got " + std::to_string(e.seq));
      return false;
    }
    ++expected;
  }
  try {
    apply(batch);
  } catch (const std::exception& e) {
    // Its state may now be half-applied: stop serving it rather than answer from it (loudly:
    // /healthz and /metrics report it, the runner logs it). Events a projection can meet
    // and not apply are its apply()'s to skip().
    fail("projection " + name_ + " cannot apply events " + std::to_string(batch.front().seq) + ".." +
         std::to_string(batch.back().seq) + ": " + e.what());
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    applied_ = batch.back().seq;
  }
  advanced_.notify_all();
  return true;
}

void projection::fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (!failure_) failure_ = why;
  }
  advanced_.notify_all();
}

projection::skipped_events projection::skipped() const {
  std::lock_guard<std::mutex> lock(m_);
  return skipped_;
}

void projection::skip(uint64_t seq, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (seq <= skipped_.last_seq) return;
    ++skipped_.count;
    skipped_.last_seq = seq;
    skipped_.last_why = why;
  }
  spdlog::error("projection {}: event {} could not be applied as recorded ({}); the projection goes on", name_, seq, why);
}

void projection::restore_applied(uint64_t seq) {
  std::lock_guard<std::mutex> lock(m_);
  applied_ = seq;
}

}  // namespace baton::projections
