#pragma once
// Requests answered, by route (the pattern that matched, "unmatched" for none) and status,
// for GET /metrics. Counted as each answer leaves the server; any thread.
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace baton::http {

class request_counters {
 public:
  void count(const std::string& route, int status) {
    std::lock_guard<std::mutex> lock(m_);
    ++counts_[{route, status}];
  }
  std::map<std::pair<std::string, int>, uint64_t> read() const {
    std::lock_guard<std::mutex> lock(m_);
    return counts_;
  }

 private:
  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, uint64_t> counts_;
};

}  // namespace baton::http
