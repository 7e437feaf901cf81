#include "replay/audit/audit_export.hpp"

#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "core/util/csv.hpp"
#include "core/util/hex.hpp"
#include "core/util/time.hpp"
#include "events/envelope.hpp"
#include "events/json_text.hpp"
#include "events/payload.hpp"

namespace baton::replay {

using nlohmann::json;

namespace {

const std::vector<std::string> csv_columns{"seq",         "stream",         "stream_version", "type",         "schema_version",
                                           "recorded_at", "recorded_at_us", "correlation_id", "causation_id", "actor",
                                           "command_id",  "payload",        "prev_hash",      "hash",         "exact"};
// Exports written before the "exact" column was added verify too.
const std::vector<std::string> csv_columns_before_exact(csv_columns.begin(), csv_columns.end() - 1);

// Whether the record's JSON holds every byte of the event: its texts are UTF-8. Else the JSON
// shows U+FFFD in their place (a log written before batond checked the headers it records),
// and the record carries the event's exact bytes beside it ("exact").
bool exact_as_text(const events::event_view& e) {
  for (std::string_view s : {e.stream_id, e.type, e.correlation_id, e.causation_id, e.actor, e.command_id})
    if (!events::is_utf8(s)) return false;
  std::string text;
  try {
    if (!events::append_json_of_cbor(text, e.payload)) events::append_json(text, events::from_payload(e.payload));
  } catch (const json::type_error&) {  // (316: a string that is not UTF-8)
    return false;
  }
  return true;
}

// A JSON value as the export writes it and reads it back: text that is not UTF-8 replaced.
json as_written(const json& v) { return json::parse(v.dump(-1, ' ', false, json::error_handler_t::replace)); }

json record_of(const events::event_view& e, const std::string& prev_hash) {
  return {{"seq", e.seq},
          {"stream", std::string(e.stream_id)},
          {"stream_version", e.stream_version},
          {"type", std::string(e.type)},
          {"schema_version", e.schema_version},
          {"recorded_at", util::format_time_us(e.recorded_at_us)},
          {"recorded_at_us", e.recorded_at_us},
          {"correlation_id", std::string(e.correlation_id)},
          {"causation_id", std::string(e.causation_id)},
          {"actor", std::string(e.actor)},
          {"command_id", std::string(e.command_id)},
          {"payload", events::from_payload(e.payload)},
          {"prev_hash", util::to_hex(prev_hash)},
          {"hash", util::to_hex(e.hash)}};
}

json exported_record(const events::event_view& e, const std::string& prev_hash) {
  json r = record_of(e, prev_hash);
  if (!exact_as_text(e)) r["exact"] = util::to_hex(std::string(e.body));  // the bytes the hash covers
  return r;
}

using util::csv_field;
std::string csv_cell(const json& v) {
  if (v.is_null()) return "";  // (the exact column of a record whose JSON is exact)
  return csv_field(v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace));
}

// One CSV record (RFC 4180: quoted fields may hold commas, quotes and newlines).
bool read_csv_record(std::istream& in, std::vector<std::string>& fields, size_t& lines) {
  fields.clear();
  std::string field;
  bool quoted = false, any = false;
  char c;
  while (in.get(c)) {
    any = true;
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') {
          in.get(c);
          field += '"';
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++lines;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      ++lines;
      fields.push_back(std::move(field));
      return true;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!any) return false;
  fields.push_back(std::move(field));
  return true;
}

std::string bytes_of_hex(const std::string& hex) {
  auto b = util::from_hex(hex);
  if (!b) throw std::runtime_error("prev_hash is not hex");
  return *b;
}

// The record's hash as it must be: the chain hash of its fields' encoding and the hash before.
// A record with its exact bytes: their hash, and its fields must be what those bytes read as.
std::string hash_of_fields(const json& r) {
  if (auto exact = r.find("exact"); exact != r.end() && !exact->is_null()) {
    auto body = util::from_hex(exact->get<std::string>());
    if (!body) return "exact is not hex";  // (never a hash: the record reads as changed)
    auto hash = util::from_hex(r.at("hash").get<std::string>());
    const std::string stored = hash ? *body + *hash : std::string();  // (the view points into it)
    auto view = hash ? events::decode(stored) : std::nullopt;
    if (!view) return "exact is not an event";
    json fields = r;
    fields.erase("exact");
    const std::string prev_hash = bytes_of_hex(r.at("prev_hash").get<std::string>());
    if (as_written(record_of(*view, prev_hash)) != as_written(fields)) return "its fields differ from its exact bytes";
    return util::to_hex(events::chain_hash(prev_hash, *body));
  }
  events::event_envelope e;
  e.seq = r.at("seq").get<uint64_t>();
  e.stream_id = r.at("stream").get<std::string>();
  e.stream_version = r.at("stream_version").get<uint64_t>();
  e.type = r.at("type").get<std::string>();
  e.schema_version = r.at("schema_version").get<uint32_t>();
  e.recorded_at_us = r.at("recorded_at_us").get<int64_t>();
  e.correlation_id = r.at("correlation_id").get<std::string>();
  e.causation_id = r.at("causation_id").get<std::string>();
  e.actor = r.at("actor").get<std::string>();
  e.command_id = r.at("command_id").get<std::string>();
  e.payload = events::to_payload(r.at("payload"));
  return util::to_hex(events::chain_hash(bytes_of_hex(r.at("prev_hash").get<std::string>()), events::encode_body(e)));
}

}  // namespace

export_summary export_log(const events::event_store& store, const export_filter& f, export_format format, std::ostream& out,
                          const progress_fn& progress) {
  export_summary s;
  std::string prev;
  uint64_t head_seq = 0;
  if (format == export_format::csv) {
    for (size_t i = 0; i < csv_columns.size(); ++i) out << (i ? "," : "") << csv_columns[i];
    out << "\n";
  }
  store.scan(1, 0, true, [&](const events::event_view& e) {
    if (progress) progress(e.seq);
    if (f.matches(e)) {
      auto r = exported_record(e, prev);
      if (format == export_format::jsonl) {
        out << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      } else {
        for (size_t i = 0; i < csv_columns.size(); ++i) out << (i ? "," : "") << csv_cell(r.value(csv_columns[i], json()));
        out << "\n";
      }
      if (s.count++ == 0) s.first_seq = e.seq;
      s.last_seq = e.seq;
    }
    prev.assign(e.hash);
    head_seq = e.seq;
    return true;
  });
  json trailer = {{"count", s.count},
                  {"first_seq", s.first_seq},
                  {"last_seq", s.last_seq},
                  {"chain_head", {{"seq", head_seq}, {"hash", util::to_hex(prev)}}},
                  {"filters", to_json(f)}};
  if (format == export_format::jsonl)
    out << json{{"trailer", trailer}}.dump() << "\n";
  else
    out << "trailer," << csv_field(trailer.dump()) << "\n";
  return s;
}

export_verify_report verify_export(const std::string& path, const events::event_store* store,
                                   const std::vector<chain_anchor_line>& anchors) {
  export_verify_report rep;
  auto problem = [&](size_t line, uint64_t seq, std::string what) {
    rep.ok = false;
    if (rep.problems.size() < 20) rep.problems.push_back({line, seq, std::move(what)});
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  bool csv = in.peek() != '{';
  std::vector<std::pair<size_t, json>> records;  // (line, record)
  std::optional<json> trailer;
  size_t line = 0;
  if (csv) {
    std::vector<std::string> fields;
    read_csv_record(in, fields, line);
    const bool with_exact = fields == csv_columns;
    if (!with_exact && fields != csv_columns_before_exact)
      throw std::runtime_error(path + " is neither an audit export in JSON lines nor in CSV");
    const auto& columns = with_exact ? csv_columns : csv_columns_before_exact;
    while (true) {
      size_t at = line + 1;
      if (!read_csv_record(in, fields, line)) break;
      for (auto& f : fields) f = util::csv_text(std::move(f));
      if (fields.size() == 2 && fields[0] == "trailer") {
        trailer = json::parse(fields[1], nullptr, false);
        continue;
      }
      if (fields.size() != columns.size()) {
        problem(at, 0, "a record of " + std::to_string(fields.size()) + " fields");
        continue;
      }
      json r;
      try {
        for (size_t i = 0; i < fields.size(); ++i) {
          const auto& name = columns[i];
          if (name == "exact" && fields[i].empty()) continue;
          bool number = name == "seq" || name == "stream_version" || name == "schema_version" || name == "recorded_at_us";
          r[name] = (name == "payload" || number) ? json::parse(fields[i]) : json(fields[i]);
        }
      } catch (const std::exception& e) {
        problem(at, 0, std::string("a record that does not parse: ") + e.what());
        continue;
      }
      records.emplace_back(at, std::move(r));
    }
  } else {
    std::string text;
    while (std::getline(in, text)) {
      ++line;
      if (text.empty()) continue;
      auto j = json::parse(text, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        problem(line, 0, "a line that is not JSON");
        continue;
      }
      if (j.contains("trailer")) {
        trailer = j["trailer"];
        continue;
      }
      records.emplace_back(line, std::move(j));
    }
  }
  if (trailer && !trailer->is_object()) trailer.reset();  // (as good as none)
  rep.records = records.size();
  bool filtered = !trailer || !trailer->value("filters", json::object()).empty();
  std::map<uint64_t, std::string> hash_at;  // seq -> hash, as exported
  const json* before = nullptr;
  for (const auto& [at, r] : records) {
    uint64_t seq = r.value("seq", uint64_t{0});
    try {
      if (hash_of_fields(r) != r.at("hash").get<std::string>())
        problem(at, seq, "record " + std::to_string(seq) + " was changed: its hash does not match its fields");
    } catch (const std::exception& e) {
      problem(at, seq, std::string("record lacks a field: ") + e.what());
      continue;
    }
    if (before) {
      uint64_t prev_seq = before->value("seq", uint64_t{0});
      if (seq <= prev_seq) problem(at, seq, "record " + std::to_string(seq) + " comes after record " + std::to_string(prev_seq));
      if (!filtered && seq != prev_seq + 1)
        problem(at, seq, "records " + std::to_string(prev_seq + 1) + ".." + std::to_string(seq - 1) + " are missing");
      if (!filtered && r.value("prev_hash", "") != before->value("hash", ""))
        problem(at, seq, "record " + std::to_string(seq) + " does not chain to the record before it");
    }
    hash_at[seq] = r.value("hash", "");
    before = &r;
  }
  if (!trailer) {
    problem(line, 0, "the trailer is missing: the end of the export may be cut off");
  } else {
    uint64_t first = records.empty() ? 0 : records.front().second.value("seq", uint64_t{0});
    uint64_t last = records.empty() ? 0 : records.back().second.value("seq", uint64_t{0});
    if (trailer->value("count", uint64_t{0}) != records.size())
      problem(line, 0,
              "the trailer counts " + std::to_string(trailer->value("count", uint64_t{0})) + " records, the file holds " +
                  std::to_string(records.size()));
    if (trailer->value("first_seq", uint64_t{0}) != first || trailer->value("last_seq", uint64_t{0}) != last)
      problem(line, 0, "the trailer's first and last sequences do not match the records");
  }
  if (store) {
    rep.checked_against_log = true;
    auto f = events::event_filter_from_json(trailer ? trailer->value("filters", json::object()) : json::object());
    uint64_t last = trailer ? trailer->value("last_seq", uint64_t{0}) : 0;
    store->scan(1, last, true, [&](const events::event_view& e) {
      auto it = hash_at.find(e.seq);
      if (it != hash_at.end() && it->second != util::to_hex(e.hash))
        problem(0, e.seq, "record " + std::to_string(e.seq) + " differs from the log's event");
      if (f.matches(e) && it == hash_at.end())
        problem(0, e.seq, "the log's event " + std::to_string(e.seq) + " matches the export's filters but is missing");
      return true;
    });
  }
  for (const auto& a : anchors) {
    auto it = hash_at.find(a.seq);
    if (it == hash_at.end()) continue;
    ++rep.anchors_checked;
    if (it->second != a.hash_hex)
      problem(0, a.seq, "record " + std::to_string(a.seq) + " differs from the chain anchor written at " + a.at);
  }
  return rep;
}

json to_json(const export_verify_report& r) {
  json problems = json::array();
  for (const auto& p : r.problems) problems.push_back({{"line", p.line}, {"seq", p.seq}, {"what", p.what}});
  return {{"ok", r.ok},
          {"records", r.records},
          {"checked_against_log", r.checked_against_log},
          {"anchors_checked", r.anchors_checked},
          {"problems", problems}};
}

}  // namespace baton::replay
