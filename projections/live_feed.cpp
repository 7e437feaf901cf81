#include "projections/live_feed.hpp"

#include <iterator>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "events/json_text.hpp"
#include "core/events/event_types.hpp"
#include "core/jobs/job_events.hpp"

namespace baton::projections {

namespace {
// Summaries are written by hand: a JSON object built and dumped per event cost more than the
// feed's lookups.
using events::append_json_string;
constexpr std::string_view job_prefix = "job/";

std::string job_of(const std::string& stream) {
  return stream.compare(0, job_prefix.size(), job_prefix) == 0 ? stream.substr(job_prefix.size()) : std::string();
}

}  // namespace

live_feed::live_feed(std::unordered_map<std::string, std::string> owners, uint64_t head, size_t backlog)
    : projection("live_feed"), owners_(std::move(owners)), backlog_(backlog) {
  restore_applied(head);
  sent_ = head;
}

std::string live_feed::message_of(const events::event_envelope& e, const std::string& job_id) {
  // The keys in nlohmann's order (sorted), as the feed wrote them before.
  std::string seq = std::to_string(e.seq);
  std::string out;
  out.reserve(160 + e.stream_id.size() + e.actor.size() + job_id.size());
  out += "id: ";
  out += seq;
  out += "\ndata: {\"actor\":";
  append_json_string(out, e.actor, events::invalid_utf8::replace);
  out += ",\"job_id\":";
  append_json_string(out, job_id, events::invalid_utf8::replace);
  out += ",\"seq\":";
  out += seq;
  out += ",\"stream\":";
  append_json_string(out, e.stream_id, events::invalid_utf8::replace);
  out += ",\"time_us\":";
  out += std::to_string(e.recorded_at_us);
  out += ",\"type\":";
  append_json_string(out, e.type, events::invalid_utf8::replace);
  out += "}\n\n";
  return out;
}

void live_feed::apply(const std::vector<events::event_envelope>& batch) {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& e : batch) {
    std::string job = job_of(e.stream_id);
    kept k{e.seq, {}, !job.empty(), {}};
    if (k.of_job) {
      const core::job_event kind = core::job_event_of(e.type);
      if (kind == core::job_event::created) {
        try {
          const auto p = core::ev::decode(e.type, e.schema_version, e.payload);
          const auto* created = std::get_if<core::ev::job_created>(&p);
          owners_[job] = created ? created->user : "";
        } catch (const std::exception&) {
          owners_[job] = "";  // unreadable: admins only
        }
      }
      auto it = owners_.find(job);
      if (it != owners_.end()) k.owner = it->second;
      if (kind == core::job_event::pruned && it != owners_.end()) owners_.erase(it);
    }
    // Text that is not UTF-8 (a log from before batond checked the headers it records) is sent
    // with U+FFFD in its place, counted: it had stopped the feed for every client.
    for (const auto* text : {&e.actor, &e.stream_id, &e.type})
      if (!events::is_utf8(*text)) {
        skip(e.seq, "its actor, stream or type is not UTF-8: sent with U+FFFD in its place");
        break;
      }
    k.text = message_of(e, job);
    // Never drop an event from the backlog before the subscribers have it.
    if (!recent_.empty() && recent_.size() >= backlog_ && recent_.front().seq > sent_) deliver();
    recent_.push_back(std::move(k));
    if (recent_.size() > backlog_) recent_.pop_front();
  }
}

bool live_feed::pending() const {
  std::lock_guard<std::mutex> g(mu_);
  return !recent_.empty() && recent_.back().seq > sent_;
}

void live_feed::flush() {
  std::lock_guard<std::mutex> g(mu_);
  deliver();
}

void live_feed::deliver() {
  if (recent_.empty() || recent_.back().seq <= sent_) return;
  // The events not yet sent are the backlog's last ones; each text is built once for every
  // client that may see all of them, and once per user for the others.
  auto first = recent_.end();
  while (first != recent_.begin() && std::prev(first)->seq > sent_) --first;
  shared_text all;
  std::map<std::string, shared_text> of_user;
  auto text_for = [&](const core::principal& who) -> const shared_text& {
    if (sees_all(who)) {
      if (!all) {
        std::string t;
        for (auto it = first; it != recent_.end(); ++it) t += it->text;
        all = std::make_shared<const std::string>(std::move(t));
      }
      return all;
    }
    auto [at, fresh] = of_user.try_emplace(who.name);
    if (fresh) {
      std::string t;
      for (auto it = first; it != recent_.end(); ++it)
        if (visible(who, *it)) t += it->text;
      at->second = std::make_shared<const std::string>(std::move(t));
    }
    return at->second;
  };
  size_t kept = 0;
  for (size_t i = 0; i < subscribers_.size(); ++i) {
    auto& s = subscribers_[i];
    if (s.gone()) continue;  // dropped
    const shared_text& text = text_for(s.who);
    if (!text->empty() && !s.s(text)) continue;
    if (kept != i) subscribers_[kept] = std::move(s);
    ++kept;
  }
  subscribers_.erase(subscribers_.begin() + static_cast<std::ptrdiff_t>(kept), subscribers_.end());
  sent_ = recent_.back().seq;
}

void live_feed::subscribe(const core::principal& who, uint64_t after, sink s, liveness alive) {
  std::lock_guard<std::mutex> g(mu_);
  const uint64_t at = sent_;  // (events after it reach this client at the next flush)
  std::string first;
  if (after > 0 && after < at) {
    if (recent_.empty() || recent_.front().seq > after + 1) {
      first = "event: reset\ndata: {}\n\n";  // some were dropped from the backlog: reload
    } else {
      for (const auto& k : recent_)
        if (k.seq > after && k.seq <= at && visible(who, k)) first += k.text;
    }
  }
  first += "retry: 2000\nevent: hello\ndata: {\"seq\":" + std::to_string(at) + "}\n\n";
  if (s(std::make_shared<const std::string>(std::move(first)))) subscribers_.push_back({who, std::move(s), std::move(alive)});
}

size_t live_feed::subscribers() const {
  std::lock_guard<std::mutex> g(mu_);
  size_t n = 0;
  for (const auto& s : subscribers_) n += !s.gone();
  return n;
}

}  // namespace baton::projections
