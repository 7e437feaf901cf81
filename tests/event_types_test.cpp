// The typed event catalogue (core/events/event_types.hpp) and its codec (events/described.hpp):
// every type writes what nlohmann writes for its JSON (the bytes existing logs hold), reads
// back what it wrote from CBOR and from JSON, names its fields in the log's order; the
// codec's edges (integer and float forms, null, absent and omitted fields, unknown fields,
// wrong types, newer schema versions, unknown types); and docs/events.md's catalogue names
// exactly the variant's types.
#include "core/events/event_types.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "events/bytes.hpp"
#include "events/cbor_encode.hpp"

using nlohmann::json;
namespace ev = baton::core::ev;
namespace events = baton::events;

namespace {

std::string nlohmann_bytes(const json& v) {
  auto b = json::to_cbor(v);
  return std::string(b.begin(), b.end());
}

// Gives every member a value unlike its default, so each field is written.
template <class T>
void fill(T& v, int salt);

template <class T>
void fill_object(T& x, int salt) {
  T::describe(x, [&](const char* name, auto& m, const auto&...) { fill(m, salt + static_cast<int>(std::string(name).size())); });
}

template <class T>
void fill(T& v, int salt) {
  namespace d = events::described_detail;
  if constexpr (std::is_same_v<T, bool>) {
    v = !v;
  } else if constexpr (std::is_integral_v<T>) {
    v = static_cast<T>(std::is_signed_v<T> ? -3 - salt : 300 + salt);
  } else if constexpr (std::is_floating_point_v<T>) {
    v = 0.1 * salt;  // not a float: written as a double
  } else if constexpr (std::is_same_v<T, std::string>) {
    v = "s" + std::to_string(salt);
  } else if constexpr (std::is_same_v<T, json>) {
    v = json{{"k", salt}, {"a", {1.5, "x", nullptr}}};
  } else if constexpr (d::is_optional<T>::value || d::is_nullable<T>::value) {
    typename T::value_type inner{};
    fill(inner, salt);
    v = inner;
  } else if constexpr (d::is_pair<T>::value) {
    fill(v.first, salt);
    fill(v.second, salt + 1);
  } else if constexpr (d::is_vector<T>::value) {
    v.resize(2);
    fill(v[0], salt);
    fill(v[1], salt + 1);
  } else if constexpr (d::is_string_map<T>::value) {
    fill(v["b-key"], salt);
    fill(v["a-key"], salt + 1);
  } else {
    fill_object(v, salt);
  }
}

template <class T>
void check_type(const T& x, const std::string& what) {
  const json j = events::to_json(x);
  const std::string bytes = events::to_cbor(x);
  EXPECT_EQ(bytes, nlohmann_bytes(j)) << what << " " << j.dump();
  EXPECT_EQ(bytes, events::encode_cbor(j)) << what;
  // Back from the bytes (the direct reader) and from the JSON: the same bytes again.
  auto back = ev::decode(T::type, T::schema, bytes);
  ASSERT_TRUE(std::holds_alternative<T>(back)) << what;
  EXPECT_EQ(ev::encode(back), bytes) << what;
  EXPECT_EQ(ev::encode(ev::from_json(T::type, j)), bytes) << what;
  EXPECT_EQ(ev::to_json(back), j) << what;
  EXPECT_EQ(ev::type_of(back), T::type);
  // worker_named gives the payload's own top-level worker_id, as its JSON holds it.
  const auto w = j.find("worker_id");
  const std::string in_json = w != j.end() && w->is_string() ? w->template get<std::string>() : "";
  EXPECT_EQ(ev::worker_named(back), in_json) << what;
}

template <size_t... I>
void check_catalogue(std::index_sequence<I...>) {
  (
      [] {
        using T = std::variant_alternative_t<I, ev::payload>;
        EXPECT_TRUE(events::names_in_order<T>()) << T::type << ": fields not in the log's (byte) order";
        check_type(T{}, std::string(T::type) + " (defaults)");
        T filled{};
        fill_object(filled, 1);
        check_type(filled, std::string(T::type) + " (filled)");
      }(),
      ...);
}

TEST(EventTypes, EveryTypeWritesWhatItsJsonWrote) {
  check_catalogue(std::make_index_sequence<std::variant_size_v<ev::payload> - 1>{});
}

TEST(EventTypes, NamesAreUniqueAndKnown) {
  std::set<std::string_view> seen;
  for (auto t : ev::known_types()) EXPECT_TRUE(seen.insert(t).second) << t;
  EXPECT_EQ(seen.size(), std::variant_size_v<ev::payload> - 1);
  EXPECT_TRUE(seen.count("job.created") && seen.count("scheduler.plan_made") && seen.count("daemon.stopped"));
  // A name's place in the variant is its struct's (known_types is in the variant's order).
  for (size_t i = 0; i < ev::known_types().size(); ++i) EXPECT_EQ(ev::index_of(ev::known_types()[i]), i);
  static_assert(ev::index_of_v<ev::job_created> == 0);
  EXPECT_EQ(ev::index_of(ev::plan_made::type), ev::index_of_v<ev::plan_made>);
  EXPECT_EQ(ev::index_of(ev::blob_removed::type), ev::index_of_v<ev::blob_removed>);
  for (const char* other : {"job.create", "", "scheduler.plan_made ", "sim.pass_decided"})
    EXPECT_EQ(ev::index_of(other), ev::index_of_v<ev::unknown_event>) << other;
}

// docs/events.md's "Event catalogue" table names every type of the variant, and nothing else:
// each row's first cell is a backquoted type name (| `job.created` | ...).
TEST(EventTypes, TheDocumentedCatalogueIsTheVariant) {
  const std::string path = std::string(BATON_SOURCE_DIR) + "/docs/events.md";
  std::ifstream file(path);
  ASSERT_TRUE(file.is_open()) << "cannot read " << path;
  std::set<std::string> documented;
  bool in_catalogue = false;
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("#", 0) == 0) {  // a heading: the catalogue is the section under "## Event catalogue"
      in_catalogue = line == "## Event catalogue";
      continue;
    }
    if (!in_catalogue || line.rfind("| `", 0) != 0) continue;
    const std::string first_cell = line.substr(1, line.find('|', 1) - 1);
    for (size_t open = first_cell.find('`'); open != std::string::npos;) {
      const size_t close = first_cell.find('`', open + 1);
      if (close == std::string::npos) break;
      documented.insert(first_cell.substr(open + 1, close - open - 1));
      open = first_cell.find('`', close + 1);
    }
  }
  ASSERT_FALSE(documented.empty()) << "no catalogue rows under \"## Event catalogue\" in " << path;
  std::set<std::string> known;
  for (auto t : ev::known_types()) known.insert(std::string(t));
  std::string undocumented, unknown;
  for (const auto& t : known)
    if (!documented.count(t)) undocumented += " " + t;
  for (const auto& t : documented)
    if (!known.count(t)) unknown += " " + t;
  EXPECT_TRUE(undocumented.empty()) << "in ev::payload but not in docs/events.md's catalogue:" << undocumented;
  EXPECT_TRUE(unknown.empty()) << "in docs/events.md's catalogue but not in ev::payload:" << unknown;
  EXPECT_EQ(documented, known);
}

TEST(EventTypes, OmittedFieldsReadAsTheirDefaults) {
  // job.created of an older log: no checkpoints/requeue/gpu_count keys.
  json j = {{"title", "t"},       {"input_bundle_path", "/b"},
            {"comment", ""},      {"preferred_clusters", json::array()},
            {"max_attempts", 3},  {"worker_image_key", "default"},
            {"user", "alice"},    {"account", "root"},
            {"partition", "gpu"}, {"qos", "normal"}};
  auto p = ev::decode("job.created", 1, events::encode_cbor(j));
  const auto& c = std::get<ev::job_created>(p);
  EXPECT_TRUE(c.checkpoints);
  EXPECT_TRUE(c.requeue);
  EXPECT_EQ(c.gpu_count, 1u);
  EXPECT_EQ(c.nice, 0);
  EXPECT_EQ(c.max_attempts, 3u);
  EXPECT_FALSE(c.time_limit_seconds);
  EXPECT_EQ(ev::encode(p), events::encode_cbor(j));
  // Set, they are written; at their defaults, they are not.
  auto c2 = c;
  c2.gpu_count = 4;
  c2.requeue = false;
  EXPECT_EQ(events::to_json(c2).at("gpu_count"), 4);
  EXPECT_EQ(events::to_json(c2).at("requeue"), false);
  EXPECT_FALSE(events::to_json(c).contains("gpu_count"));
}

TEST(EventTypes, NullableAndOptional) {
  // A nullable writes null when empty; an optional leaves the key out.
  ev::plan_row r;
  r.job_id = "j";
  r.worker_id = "w";
  EXPECT_EQ(events::to_json(r), (json{{"end", nullptr}, {"job_id", "j"}, {"worker_id", "w"}}));
  auto back = events::from_cbor<ev::plan_row>(events::to_cbor(r));
  EXPECT_FALSE(back.end);
  EXPECT_FALSE(back.start);
  r.end = std::string("2026-12-06T00:00:00Z");
  r.start = "2026-12-05T00:00:00Z";
  back = events::from_cbor<ev::plan_row>(events::to_cbor(r));
  EXPECT_EQ(*back.end, *r.end);
  EXPECT_EQ(*back.start, *r.start);
}

TEST(EventTypes, IntegerAndFloatForms) {
  ev::cloud_scaled c;
  c.from = -1;
  c.to = std::numeric_limits<int>::max();
  EXPECT_EQ(events::to_cbor(c), nlohmann_bytes(events::to_json(c)));
  ev::daemon_log_truncated t;
  t.kept_through_seq = std::numeric_limits<uint64_t>::max();
  t.anchors_removed = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(events::to_cbor(t), nlohmann_bytes(events::to_json(t)));
  auto back = std::get<ev::daemon_log_truncated>(ev::decode(t.type, 1, events::to_cbor(t)));
  EXPECT_EQ(back.kept_through_seq, t.kept_through_seq);
  EXPECT_EQ(back.anchors_removed, t.anchors_removed);
  // Doubles: one a float holds exactly is written as a float, others as doubles; an
  // integer-valued double stays a float item, as nlohmann writes it.
  for (double d : {0.5, 0.1, 3.0, -2.25, 1e300, 0.0}) {
    ev::worker_reaped r;
    r.silent_seconds = d;
    EXPECT_EQ(events::to_cbor(r), nlohmann_bytes(events::to_json(r))) << d;
    EXPECT_EQ(std::get<ev::worker_reaped>(ev::decode(r.type, 1, events::to_cbor(r))).silent_seconds, d);
  }
  // A double field recorded as an integer (a JSON writer's choice) reads as its value.
  auto r = std::get<ev::worker_reaped>(ev::decode("worker.reaped", 1, events::encode_cbor(json{{"silent_seconds", 90}})));
  EXPECT_EQ(r.silent_seconds, 90.0);
}

TEST(EventTypes, UnknownFieldsAreSkippedWrongTypesNamed) {
  auto p = ev::decode("job.requeued_as", 1, events::encode_cbor(json{{"new_job_id", "n"}, {"zz_later", {1, 2}}}));
  EXPECT_EQ(std::get<ev::job_requeued_as>(p).new_job_id, "n");
  try {
    ev::decode("job.held", 1, events::encode_cbor(json{{"admin", "yes"}}));  // (booleans and strings are read strictly)
    FAIL() << "a string read as a bool";
  } catch (const events::payload_error& e) {
    EXPECT_EQ(e.field, "admin");
    EXPECT_NE(std::string(e.what()).find("true or false"), std::string::npos) << e.what();
  }
  try {
    ev::decode("storage.files_stored", 1,
               events::encode_cbor(json{{"job_id", "j"}, {"set", {{"files", {{{"path", 5}, {"sha256", "x"}, {"size", 1}}}}}}}));
    FAIL() << "a number for a path";
  } catch (const events::payload_error& e) {
    EXPECT_EQ(e.field, "set.files[0].path");
  }
  // Integers are read as batond always read stored numbers: not a number, or out of range,
  // leaves the field at its default (events/described.hpp's integer_of); a float in range is truncated.
  auto created = std::get<ev::job_created>(ev::decode(
      "job.created", 1,
      events::encode_cbor(json{{"gpu_count", -3.0e12}, {"nice", 1e40}, {"time_limit_seconds", "soon"}, {"max_attempts", 2.9}})));
  EXPECT_EQ(created.gpu_count, 1u);
  EXPECT_EQ(created.nice, 0);
  EXPECT_FALSE(created.time_limit_seconds);
  EXPECT_EQ(created.max_attempts, 2u);
  // Not CBOR at all: nlohmann's own error.
  EXPECT_THROW(ev::decode("job.held", 1, std::string("\xFF\xFF", 2)), nlohmann::json::exception);
}

// A map written by hand, keys in the order given (encode_cbor would sort them).
std::string map_in_order(const std::vector<std::pair<std::string, json>>& items) {
  std::string out(1, static_cast<char>(0xA0 + items.size()));  // (fewer than 24 items)
  for (const auto& [key, value] : items) {
    out += static_cast<char>(0x60 + key.size());  // (keys shorter than 24 bytes)
    out += key;
    out += nlohmann_bytes(value);
  }
  return out;
}

// The direct reader walks keys and fields side by side: keys out of byte order, repeated, or
// unknown ones between known ones must read as the JSON reading reads them.
TEST(EventTypes, KeysInAnyOrderReadAsTheirJson) {
  const std::vector<std::vector<std::pair<std::string, json>>> maps = {
      {{"title", "t"}, {"account", "a"}},                               // out of order
      {{"account", "a"}, {"account", "b"}},                             // repeated
      {{"account", "a"}, {"b_unknown", 1}, {"comment", "c"}},           // unknown between
      {{"a0", true}, {"account", "a"}, {"zz", 2}},                      // unknown first and last
      {{"account", "a"}, {"user", "u"}, {"title", "t"}},                // out of order at the end
      {{"user", "u"}, {"b_unknown", 1}, {"account", "a"}},              // an unknown key between two out of order
      {{"account", "a"}, {"b", 1}, {"a", 2}, {"comment", "c"}},         // unknown keys out of order
      {{"gpu_count", 2}, {"gpu_count", 3}, {"worker_image_key", "k"}},  // a repeated number
  };
  for (const auto& m : maps) {
    const std::string bytes = map_in_order(m);
    const json as_json = json::from_cbor(bytes);
    const auto direct = ev::decode("job.created", 1, bytes);
    const auto through_json = ev::from_json("job.created", as_json);
    EXPECT_EQ(ev::to_json(direct), ev::to_json(through_json)) << as_json.dump();
  }
}

TEST(EventTypes, NewerSchemaRefusedUnknownTypeKept) {
  try {
    ev::decode("job.held", 2, events::encode_cbor(json::object()));
    FAIL();
  } catch (const events::payload_error& e) {
    EXPECT_EQ(e.field, "schema_version");
    EXPECT_NE(std::string(e.what()).find("job.held schema version 2"), std::string::npos) << e.what();
  }
  const std::string bytes = events::encode_cbor(json{{"anything", 1}});
  auto p = ev::decode("job.teleported", 3, bytes);
  ASSERT_TRUE(std::holds_alternative<ev::unknown_event>(p));
  EXPECT_EQ(ev::type_of(p), "job.teleported");
  EXPECT_EQ(ev::schema_of(p), 3u);
  EXPECT_EQ(ev::encode(p), bytes);
  EXPECT_EQ(ev::to_json(p), (json{{"anything", 1}}));
}

TEST(EventTypes, EmptyPayloadReadsAsEmptyObject) {
  auto p = ev::decode("job.released", 1, "");
  EXPECT_TRUE(std::holds_alternative<ev::job_released>(p));
  EXPECT_EQ(ev::encode(p), events::encode_cbor(json::object()));
}

TEST(EventTypes, SameComparesStoredBytes) {
  ev::job_held a, b;
  EXPECT_TRUE(ev::same(a, b));
  b.admin = true;
  EXPECT_FALSE(ev::same(a, b));
  ev::cluster_enabled on;
  ev::cluster_disabled off;
  EXPECT_FALSE(ev::same(on, off));  // the same fields, another type
}

}  // namespace
