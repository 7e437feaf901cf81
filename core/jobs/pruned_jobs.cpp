#include "core/jobs/pruned_jobs.hpp"

#include <cstring>

#include "core/util/hex.hpp"

namespace baton::core {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case too: only the canonical text packs, so it unpacks to the same text
}

bool dash_at(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

}  // namespace

size_t pruned_jobs::uuid_hash::operator()(const uuid_bytes& b) const {
  uint64_t lo, hi;
  std::memcpy(&lo, b.data(), 8);
  std::memcpy(&hi, b.data() + 8, 8);
  return static_cast<size_t>((lo * 0x9e3779b97f4a7c15ULL) ^ hi);
}

std::optional<pruned_jobs::uuid_bytes> pruned_jobs::parse_uuid(std::string_view s) {
  if (s.size() != 36) return std::nullopt;
  uuid_bytes b{};
  size_t nibble = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (dash_at(i)) {
      if (s[i] != '-') return std::nullopt;
      continue;
    }
    int v = hex_value(s[i]);
    if (v < 0) return std::nullopt;
    b[nibble / 2] = static_cast<uint8_t>(b[nibble / 2] | (nibble % 2 ? v : v << 4));
    ++nibble;
  }
  return b;
}

std::string pruned_jobs::format_uuid(const uuid_bytes& b) {
  return util::uuid_text(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

uint32_t pruned_jobs::intern(const std::string& s) {
  auto [it, added] = name_index_.emplace(s, static_cast<uint32_t>(names_.size()));
  if (added) names_.push_back(s);
  return it->second;
}

pruned_jobs::name_ref pruned_jobs::ref_of(const std::string& s) {
  name_ref r;
  if (auto b = parse_uuid(s))
    r.uuid = *b;
  else
    r.name = intern(s) + 1;
  return r;
}

std::string pruned_jobs::text_of(const name_ref& r) const { return r.name ? names_[r.name - 1] : format_uuid(r.uuid); }

pruned_job pruned_jobs::unpack(const packed& p) const {
  return {p.status, p.created_at, names_[p.user], names_[p.image], text_of(p.worker)};
}

void pruned_jobs::add(const std::string& id, const pruned_job& stub) {
  packed p;
  p.created_at = stub.created_at;
  p.user = intern(stub.user);
  p.image = intern(stub.worker_image_key);
  p.worker = ref_of(stub.assigned_worker_id);
  p.status = stub.status;
  if (auto b = parse_uuid(id)) {
    if (auto it = by_uuid_.find(*b); it != by_uuid_.end()) uuid_order_.erase({it->second.created_at, *b});
    by_uuid_[*b] = p;
    uuid_order_.insert({p.created_at, *b});
  } else {
    if (auto it = by_name_.find(id); it != by_name_.end()) name_order_.erase({it->second.created_at, id});
    by_name_[id] = p;
    name_order_.insert({p.created_at, id});
  }
}

std::optional<pruned_job> pruned_jobs::find(const std::string& id) const {
  if (auto b = parse_uuid(id)) {
    auto it = by_uuid_.find(*b);
    if (it == by_uuid_.end()) return std::nullopt;
    return unpack(it->second);
  }
  auto it = by_name_.find(id);
  if (it == by_name_.end()) return std::nullopt;
  return unpack(it->second);
}

bool pruned_jobs::contains(std::string_view id) const {
  if (empty()) return false;  // (asked for every new job: most campaigns prune nothing for a while)
  if (auto b = parse_uuid(id)) return by_uuid_.count(*b) > 0;
  return by_name_.count(id) > 0;
}

bool pruned_jobs::operator==(const pruned_jobs& o) const {
  if (size() != o.size()) return false;
  std::vector<std::pair<std::string, pruned_job>> mine, theirs;
  for_each(false, [&](const std::string& id, pruned_job p) { mine.emplace_back(id, std::move(p)); });
  o.for_each(false, [&](const std::string& id, pruned_job p) { theirs.emplace_back(id, std::move(p)); });
  return mine == theirs;
}

}  // namespace baton::core
