#pragma once
// The stubs of pruned jobs, packed. They accumulate for as long as a data dir lives (every
// world holds them: the scheduler's, the snapshot projection's, each SQL view's), so each
// costs ~150 bytes instead of the ~600 a map of strings took: a job id that is a canonical
// UUID (every id batond accepts) is kept as its 16 bytes, owners, images and non-UUID ids
// as indexes into a table of names that grows with the distinct names only.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/jobs/job.hpp"

namespace baton::core {

// What is kept of a pruned job: enough for access checks, list filters, dependencies and the
// id staying taken. Its whole record stays in its stream in the log.
struct pruned_job {
  job_status status = job_status::completed;
  time_us created_at = 0;
  std::string user, worker_image_key, assigned_worker_id;
  bool operator==(const pruned_job& o) const {
    return status == o.status && created_at == o.created_at && user == o.user && worker_image_key == o.worker_image_key &&
           assigned_worker_id == o.assigned_worker_id;
  }
};

class pruned_jobs {
 public:
  void add(const std::string& id, const pruned_job& stub);  // replaces a stub of the same id
  std::optional<pruned_job> find(const std::string& id) const;
  bool contains(std::string_view id) const;
  size_t size() const { return by_uuid_.size() + by_name_.size(); }
  bool empty() const { return size() == 0; }

  // Every stub in creation order, ties by id (the order the world lists jobs in):
  // f(id, stub). Oldest first, or newest first.
  template <class F>
  void for_each(bool newest_first, F&& f) const;
  bool operator==(const pruned_jobs& o) const;

 private:
  using uuid_bytes = std::array<uint8_t, 16>;
  struct uuid_hash {
    size_t operator()(const uuid_bytes& b) const;
  };
  // A name: a canonical UUID's bytes (name == 0), else 1 + its index in names_.
  struct name_ref {
    uuid_bytes uuid{};
    uint32_t name = 0;
  };
  struct packed {
    time_us created_at = 0;
    uint32_t user = 0, image = 0;
    name_ref worker;
    job_status status = job_status::completed;
  };

  static std::optional<uuid_bytes> parse_uuid(std::string_view s);
  static std::string format_uuid(const uuid_bytes& b);
  uint32_t intern(const std::string& s);
  name_ref ref_of(const std::string& s);
  std::string text_of(const name_ref& r) const;
  pruned_job unpack(const packed& p) const;
  std::unordered_map<uuid_bytes, packed, uuid_hash> by_uuid_;
  std::set<std::pair<time_us, uuid_bytes>> uuid_order_;
  std::map<std::string, packed, std::less<>> by_name_;  // ids that are not canonical UUIDs (logs from before ids were checked)
  std::set<std::pair<time_us, std::string>> name_order_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_index_;  // names_[i] -> i; never iterated
};

template <class F>
void pruned_jobs::for_each(bool newest_first, F&& f) const {
  // Two ordered sequences merged; a UUID's bytes order as its canonical text does, so ties on
  // the creation time compare the text only when the other side is not a UUID.
  auto visit = [&](auto u, auto u_end, auto n, auto n_end, auto before) {
    while (u != u_end || n != n_end) {
      bool take_uuid = n == n_end;
      std::string uuid_text;
      if (u != u_end) uuid_text = format_uuid(u->second);
      if (!take_uuid && u != u_end) take_uuid = before(std::make_pair(u->first, uuid_text), *n);
      if (take_uuid) {
        f(uuid_text, unpack(by_uuid_.at(u->second)));
        ++u;
      } else {
        f(n->second, unpack(by_name_.at(n->second)));
        ++n;
      }
    }
  };
  if (newest_first)
    visit(uuid_order_.rbegin(), uuid_order_.rend(), name_order_.rbegin(), name_order_.rend(),
          [](const auto& a, const auto& b) { return a > b; });
  else
    visit(uuid_order_.begin(), uuid_order_.end(), name_order_.begin(), name_order_.end(),
          [](const auto& a, const auto& b) { return a < b; });
}

}  // namespace baton::core
