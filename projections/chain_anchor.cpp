#include "projections/chain_anchor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "core/util/hex.hpp"
#include "core/util/time.hpp"

namespace baton::projections {

chain_anchor::chain_anchor(std::string path, int64_t interval_us, std::function<int64_t()> clock)
    : projection(projection_name), path_(std::move(path)), interval_us_(interval_us), clock_(std::move(clock)) {
  last_written_ = clock_();  // the first interval counts from start (the daemon anchors the head it found)
}

void chain_anchor::anchor(uint64_t seq, const std::string& hash, int64_t at) {
  std::lock_guard<std::mutex> lock(m_);
  if (seq == last_seq_) return;  // that head is anchored already
  std::string line = nlohmann::json{{"seq", seq}, {"hash", util::to_hex(hash)}, {"at", util::format_time_us(at)}}.dump() + "\n";
  // Appended and synced: an anchor that a crash could lose protects nothing.
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fdatasync(fd) == 0;
  int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) {
    spdlog::error("cannot write the chain anchor to {}: {}", path_, std::strerror(err));
    return;
  }
  last_written_ = at;
  last_seq_ = seq;
  spdlog::info("chain head anchored: event {} hash {}", seq, util::to_hex(hash));
}

void chain_anchor::apply(const std::vector<events::event_envelope>& batch) {
  if (batch.empty()) return;
  int64_t now = clock_();
  {
    std::lock_guard<std::mutex> lock(m_);
    if (now - last_written_ < interval_us_) return;
  }
  anchor(batch.back().seq, batch.back().hash, now);
}

}  // namespace baton::projections
