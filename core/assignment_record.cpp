#include "core/assignment_record.hpp"

#include <cstring>
#include <string_view>

#include "events/cbor_encode.hpp"

namespace baton::core {

using nlohmann::json;

json to_json(const assignment_record& r) {
  json j(json::value_t::object);
  j["policy"] = r.policy;
  j["worker_id"] = r.worker_id;
  j["worker_score"] = r.worker_score;
  if (r.planned_at) j["planned_at"] = *r.planned_at;
  if (r.matched) {
    j["idle_ranked_above"] = r.idle_ranked_above;
    j["jobs_examined"] = r.jobs_examined;
    j["taken_by_better_workers"] = r.taken_by_better_workers;
    json sample(json::value_t::array);
    for (const auto& [job_id, worker_id] : r.taken_sample) {
      json pair(json::value_t::array);
      pair.push_back(job_id);
      pair.push_back(worker_id);
      sample.push_back(std::move(pair));
    }
    j["taken_by_better_workers_sample"] = std::move(sample);
    j["stale_excluded"] = r.stale_excluded;
  }
  if (r.deadline) j["deadline"] = *r.deadline;
  if (r.conformance_pin) j["conformance_pin"] = *r.conformance_pin;
  return j;
}

namespace {

// How many keys to_json(r) writes: three always, five more for a matched walk, one each for
// planned_at, deadline and conformance_pin.
size_t key_count(const assignment_record& r) {
  return 3 + (r.planned_at ? 1 : 0) + (r.matched ? 5 : 0) + (r.deadline ? 1 : 0) + (r.conformance_pin ? 1 : 0);
}

bool same_string(const json& v, const std::string& s) { return v.is_string() && v.get_ref<const std::string&>() == s; }

bool same_strings(const json& v, const std::vector<std::string>& list) {
  if (!v.is_array() || v.size() != list.size()) return false;
  for (size_t i = 0; i < list.size(); ++i)
    if (!same_string(v[i], list[i])) return false;
  return true;
}

bool same_sample(const json& v, const std::vector<std::pair<std::string, std::string>>& sample) {
  if (!v.is_array() || v.size() != sample.size()) return false;
  for (size_t i = 0; i < sample.size(); ++i) {
    const json& pair = v[i];
    if (!pair.is_array() || pair.size() != 2 || !same_string(pair[0], sample[i].first) || !same_string(pair[1], sample[i].second))
      return false;
  }
  return true;
}

}  // namespace

bool matches(const assignment_record& r, const json& recorded) {
  if (!recorded.is_object()) return false;
  if (recorded.size() != key_count(r)) return false;
  // Each of the recorded keys must be one to_json(r) writes, with its value; the keys of an
  // object are distinct, so with the count equal the two objects are equal. Numbers compare
  // as JSON compares them (by value across integer kinds).
  for (auto it = recorded.begin(); it != recorded.end(); ++it) {
    const std::string_view k = it.key();  // (compared by length first: no strlen per test)
    const json& v = it.value();
    bool same = false;
    if (k == "policy")
      same = same_string(v, r.policy);
    else if (k == "worker_id")
      same = same_string(v, r.worker_id);
    else if (k == "worker_score")
      same = v == json(r.worker_score);
    else if (k == "planned_at")
      same = r.planned_at && same_string(v, *r.planned_at);
    else if (k == "idle_ranked_above")
      same = r.matched && v == json(r.idle_ranked_above);
    else if (k == "jobs_examined")
      same = r.matched && v == json(r.jobs_examined);
    else if (k == "taken_by_better_workers")
      same = r.matched && v == json(r.taken_by_better_workers);
    else if (k == "taken_by_better_workers_sample")
      same = r.matched && same_sample(v, r.taken_sample);
    else if (k == "stale_excluded")
      same = r.matched && same_strings(v, r.stale_excluded);
    else if (k == "deadline")
      same = r.deadline && v == *r.deadline;
    else if (k == "conformance_pin")
      same = r.conformance_pin && same_string(v, *r.conformance_pin);
    if (!same) return false;
  }
  return true;
}

json to_json(const assigned_payload& p) {
  json j(json::value_t::object);
  j["worker_id"] = p.worker_id;
  j["attempt"] = p.attempt;
  j["decision"] = to_json(p.decision);
  return j;
}

namespace {

// The records' keys, as encoded (events/cbor_encode.hpp).
constexpr events::cbor_text_constant key_attempt("attempt");
constexpr events::cbor_text_constant key_conformance_pin("conformance_pin");
constexpr events::cbor_text_constant key_deadline("deadline");
constexpr events::cbor_text_constant key_decision("decision");
constexpr events::cbor_text_constant key_idle_ranked_above("idle_ranked_above");
constexpr events::cbor_text_constant key_jobs_examined("jobs_examined");
constexpr events::cbor_text_constant key_planned_at("planned_at");
constexpr events::cbor_text_constant key_policy("policy");
constexpr events::cbor_text_constant key_stale_excluded("stale_excluded");
constexpr events::cbor_text_constant key_taken_by_better_workers("taken_by_better_workers");
constexpr events::cbor_text_constant key_taken_by_better_workers_sample("taken_by_better_workers_sample");
constexpr events::cbor_text_constant key_worker_id("worker_id");
constexpr events::cbor_text_constant key_worker_score("worker_score");

// Where write_record puts the record's bytes: appended to a string (encode_cbor), or
// compared with bytes already written (encodes_to), piece by piece, without building them.
struct appending {
  std::string& out;
  void raw(std::string_view v) { out.append(v); }
  void head(uint8_t major, uint64_t n) { events::encode_cbor_head(major, n, out); }
  void text(std::string_view v) { events::encode_cbor_text(v, out); }
  void integer(int64_t n) { events::encode_cbor_integer(n, out); }
  void value(const json& v) { events::encode_cbor(v, out); }
};

struct comparing {
  explicit comparing(std::string_view bytes) : rest(bytes) {}
  std::string_view rest;  // the bytes not compared yet
  bool same = true;       // so far
  std::string scratch;    // a piece written by the encoder's own functions, then compared (rare)
  void raw(std::string_view v) {
    if (!same) return;
    same = rest.size() >= v.size() && std::memcmp(rest.data(), v.data(), v.size()) == 0;
    if (same) rest.remove_prefix(v.size());
  }
  void head(uint8_t major, uint64_t n) {
    if (n <= 0x17) {  // (encode_cbor_head's one-byte case, here without a string: through
                      // scratch, every head gave back what comparing in place saves)
      const char c = static_cast<char>(major + n);
      raw(std::string_view(&c, 1));
    } else {
      scratch.clear();
      events::encode_cbor_head(major, n, scratch);
      raw(scratch);
    }
  }
  void text(std::string_view v) {
    head(0x60, v.size());
    raw(v);
  }
  void integer(int64_t n) {
    scratch.clear();
    events::encode_cbor_integer(n, scratch);
    raw(scratch);
  }
  void value(const json& v) {
    scratch.clear();
    events::encode_cbor(v, scratch);
    raw(scratch);
  }
};

// The record's map, its keys in the order to_json's object (a std::map) keeps them: the one
// description of its bytes, for both sinks.
template <class Sink>
void write_record(const assignment_record& r, Sink& out) {
  out.head(0xA0, key_count(r));
  if (r.conformance_pin) {
    out.raw(key_conformance_pin.view());
    out.text(*r.conformance_pin);
  }
  if (r.deadline) {
    out.raw(key_deadline.view());
    out.value(*r.deadline);
  }
  if (r.matched) {
    out.raw(key_idle_ranked_above.view());
    out.head(0x00, r.idle_ranked_above);
    out.raw(key_jobs_examined.view());
    out.head(0x00, r.jobs_examined);
  }
  if (r.planned_at) {
    out.raw(key_planned_at.view());
    out.text(*r.planned_at);
  }
  out.raw(key_policy.view());
  out.text(r.policy);
  if (r.matched) {
    out.raw(key_stale_excluded.view());
    out.head(0x80, r.stale_excluded.size());
    for (const auto& id : r.stale_excluded) out.text(id);
    out.raw(key_taken_by_better_workers.view());
    out.head(0x00, r.taken_by_better_workers);
    out.raw(key_taken_by_better_workers_sample.view());
    out.head(0x80, r.taken_sample.size());
    for (const auto& [job_id, worker_id] : r.taken_sample) {
      out.head(0x80, 2);
      out.text(job_id);
      out.text(worker_id);
    }
  }
  out.raw(key_worker_id.view());
  out.text(r.worker_id);
  out.raw(key_worker_score.view());
  out.integer(r.worker_score);
}

}  // namespace

void encode_cbor(const assignment_record& r, std::string& out) {
  appending sink{out};
  write_record(r, sink);
}

bool encodes_to(const assignment_record& r, std::string_view bytes) {
  comparing sink(bytes);
  write_record(r, sink);
  return sink.same && sink.rest.empty();
}

void encode_cbor(const assigned_payload& p, std::string& out) {
  events::encode_cbor_head(0xA0, 3, out);
  out.append(key_attempt.view());
  events::encode_cbor_unsigned(p.attempt, out);
  out.append(key_decision.view());
  encode_cbor(p.decision, out);
  out.append(key_worker_id.view());
  events::encode_cbor_text(p.worker_id, out);
}

}  // namespace baton::core
