#include "replay/job_payload_cbor.hpp"

#include <cstdint>
#include <string>
#include <utility>

#include "core/dependency.hpp"
#include "core/payload_numbers.hpp"
#include "events/cbor_cursor.hpp"

namespace baton::replay {
namespace {

using events::cbor_cursor;
using nlohmann::json;

// previous < key, for a map's keys: most neighbours differ in their first byte, which decides
// without a call to memcmp (one per key had shown among the reading thread's costs).
inline bool key_before(std::string_view previous, std::string_view key) {
  if (!previous.empty() && !key.empty() && previous[0] != key[0])
    return static_cast<unsigned char>(previous[0]) < static_cast<unsigned char>(key[0]);
  return previous < key;
}

// Visits a map's fields: `field(key)` reads the value (or skips it) and answers false to
// decline. Its keys must be sorted and distinct, as to_cbor writes a JSON object (so no
// repeated key can mean what the decoded object would make of it).
template <class Field>
bool each_entry(cbor_cursor& c, Field&& field) {
  uint64_t n = 0;
  if (!c.map_header(n)) return false;
  std::string_view previous;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!c.text(key) || (i > 0 && !key_before(previous, key)) || !field(key)) return false;
    previous = key;
  }
  return true;
}

// The same for the whole payload, which must be that one map.
template <class Field>
bool each_field(cbor_cursor& c, Field&& field) {
  return each_entry(c, std::forward<Field>(field)) && c.at_end();
}

// A number field as number_or / number_if read it: anything but a number gives the fallback.
template <class T>
bool number(cbor_cursor& c, std::optional<T>& out) {
  json v;
  if (!c.item(v)) return false;
  out = core::number_value<T>(v);
  return true;
}

// The same, with the fallback number_or gives.
template <class T>
bool number_or(cbor_cursor& c, T& out, T fallback) {
  std::optional<T> v;
  if (!number(c, v)) return false;
  out = v.value_or(fallback);
  return true;
}

// A field read with get<double>(): a number of any kind; anything else is a type error there.
bool real(cbor_cursor& c, std::optional<double>& out) {
  json v;
  if (!c.item(v) || !v.is_number()) return false;
  out = v.get<double>();
  return true;
}

bool text_list(cbor_cursor& c, std::vector<std::string>& out) {
  uint64_t n = 0;
  if (!c.array_header(n)) return false;
  out.resize(static_cast<size_t>(n));
  for (auto& s : out)
    if (!c.text(s)) return false;
  return true;
}

bool created(cbor_cursor& c, core::create_job& n) {
  // Every field's default as the ordinary reading leaves it when the field is absent.
  static const core::create_job defaults = *core::read_job_change("job.created", json::object()).created;
  n = defaults;
  return each_field(c, [&](std::string_view k) {
    if (k == "title") return c.text(n.title);
    if (k == "input_bundle_path") return c.text(n.input_bundle_path);
    if (k == "worker_image_key") return c.text(n.worker_image_key);
    if (k == "preferred_clusters") return text_list(c, n.preferred_clusters);
    if (k == "comment") return c.text(n.comment);
    if (k == "requeued_from") return c.text(n.requeued_from);
    if (k == "latest_checkpoint_manifest_path") return c.text(n.latest_checkpoint_manifest_path);
    if (k == "user") return c.text(n.user);
    if (k == "account") return c.text(n.account);
    if (k == "partition") return c.text(n.partition);
    if (k == "qos") return c.text(n.qos);
    if (k == "conformance") return c.text(n.conformance);
    if (k == "checkpoints") return c.boolean(n.checkpoints);
    if (k == "requeue") return c.boolean(n.requeue);
    if (k == "interactive") return c.boolean(n.interactive);
    if (k == "hold") return c.boolean(n.hold);
    if (k == "array_id") return c.text(n.array_id);
    if (k == "array_index") return number_or(c, n.array_index, defaults.array_index);
    if (k == "checkpoint_seconds") return real(c, n.checkpoint_seconds);
    if (k == "max_attempts") return number_or(c, n.max_attempts, defaults.max_attempts);
    if (k == "gpu_count") return number_or(c, n.gpu_count, defaults.gpu_count);
    if (k == "nice") return number_or(c, n.nice, defaults.nice);
    if (k == "last_checkpoint_at_us") return number_or(c, n.last_checkpoint_at.emplace(), core::time_us{0});  // present: its number, or 0
    if (k == "time_limit_seconds") {  // only a number counts; any number, 0 when out of range
      json v;
      if (!c.item(v)) return false;
      if (v.is_number()) n.time_limit_seconds = core::number_value<int64_t>(v).value_or(0);
      return true;
    }
    if (k == "depends_on") {
      json v;
      if (!c.item(v)) return false;
      try {
        n.depends_on = core::dependencies_from_json(v);
      } catch (const std::exception&) {
        return false;
      }
      return true;
    }
    return c.skip();
  });
}

// A decision record read in place (job_payload::decision_at): a map whose "stale_excluded"
// is a list of strings, whose "conformance_pin" is a string (job.assigned applies it), and
// whose "deadline" decodes; false for anything else, which is then decoded whole.
bool decision_in_place(cbor_cursor& c, job_payload& out, size_t payload_size) {
  const size_t before = c.remaining();
  job_payload::decision_bytes d;
  std::optional<std::string> pin;
  bool ok = each_entry(c, [&](std::string_view k) {
    if (k == "stale_excluded") return text_list(c, d.stale_excluded);
    if (k == "conformance_pin") return c.text(pin.emplace());
    if (k == "deadline") return c.item(d.deadline.emplace());
    return c.skip();
  });
  if (!ok) return false;
  d.offset = payload_size - before;
  d.size = before - c.remaining();
  out.decision_at = std::move(d);
  out.change.conformance_pin = std::move(pin);
  return true;
}

bool assigned(cbor_cursor& c, job_payload& out, size_t payload_size) {
  core::job_change& ch = out.change;
  bool has_worker = false, has_decision = false;
  bool ok = each_field(c, [&](std::string_view k) {
    if (k == "worker_id") return has_worker = c.text(ch.worker_id);
    if (k == "attempt") return number(c, ch.attempt);
    if (k == "decision") {
      if (cbor_cursor in_place = c; decision_in_place(in_place, out, payload_size)) {
        c = in_place;
        return has_decision = true;
      }
      return has_decision = c.item(out.decision);
    }
    return c.skip();
  });
  if (!ok || !has_worker || !has_decision) return false;
  if (out.decision.is_object())
    if (auto pin = out.decision.find("conformance_pin"); pin != out.decision.end()) {
      if (!pin->is_string()) return false;
      ch.conformance_pin = pin->get<std::string>();
    }
  return true;
}

bool checkpoint_fields(cbor_cursor& c, core::checkpoint_report& r) {
  return each_field(c, [&](std::string_view k) {
    if (k == "checkpoint_manifest_path") return c.text(r.manifest_path.emplace());
    if (k == "progress") return real(c, r.progress);
    if (k == "progress_codes") return c.item(r.progress_codes.emplace());
    if (k == "checkpoint_cycle_status") return c.text(r.cycle_status.emplace());
    if (k == "checkpoint_cycle_failures") return c.item(r.cycle_failures.emplace());
    if (k == "checkpoint_seconds") return real(c, r.seconds);
    return c.skip();
  });
}

}  // namespace

std::optional<job_payload> read_job_payload(std::string_view type, std::string_view cbor) {
  std::optional<job_payload> out(std::in_place);
  if (!read_job_payload(type, cbor, *out)) out.reset();
  return out;
}

bool read_job_payload(std::string_view type, std::string_view cbor, job_payload& out) {
  core::job_change& ch = out.change;
  ch.kind = core::job_event_of(type);
  cbor_cursor c(cbor);
  bool ok = false;
  switch (ch.kind) {
    case core::job_event::created:
      ok = created(c, ch.created.emplace());
      break;
    case core::job_event::assigned:
      ok = assigned(c, out, cbor.size());
      break;
    case core::job_event::checkpointed:
    case core::job_event::progress_reported:
    case core::job_event::handoff_completed:
      ok = checkpoint_fields(c, ch.checkpoint);
      break;
    case core::job_event::started:  // (the change reads nothing of these: the bytes need only be a payload)
    case core::job_event::completed:
    case core::job_event::handoff_started:
    case core::job_event::cancel_requested:
    case core::job_event::released:
      ok = each_field(c, [&](std::string_view) { return c.skip(); });
      break;
    default:  // the rarer events are read the ordinary way
      break;
  }
  return ok;
}

}  // namespace baton::replay
