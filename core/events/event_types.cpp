#include "core/events/event_types.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace baton::core::ev {
namespace {

constexpr size_t known_count = std::variant_size_v<payload> - 1;  // all but unknown_event

struct entry {
  std::string_view type;
  uint32_t schema;
  payload (*decode)(std::string_view bytes);
  payload (*from_json)(const nlohmann::json& j);
};

template <size_t I>
entry entry_of() {
  using T = std::variant_alternative_t<I, payload>;
  return {T::type, T::schema, [](std::string_view b) { return payload(std::in_place_index<I>, events::from_cbor<T>(b)); },
          [](const nlohmann::json& j) { return payload(std::in_place_index<I>, events::from_json<T>(j)); }};
}

template <size_t... I>
std::array<entry, known_count> entries(std::index_sequence<I...>) {
  return {entry_of<I>()...};
}

// By type name, for lookups (built once).
const std::vector<entry>& by_name() {
  static const std::vector<entry> table = [] {
    auto all = entries(std::make_index_sequence<known_count>{});
    std::vector<entry> v(all.begin(), all.end());
    std::sort(v.begin(), v.end(), [](const entry& a, const entry& b) { return a.type < b.type; });
    return v;
  }();
  return table;
}

const entry* find(std::string_view type) {
  const auto& t = by_name();
  auto it = std::lower_bound(t.begin(), t.end(), type, [](const entry& e, std::string_view n) { return e.type < n; });
  return it != t.end() && it->type == type ? &*it : nullptr;
}

}  // namespace

std::string_view type_of(const payload& p) {
  return std::visit(
      [](const auto& x) -> std::string_view {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, unknown_event>) return x.type;
        else return T::type;
      },
      p);
}

uint32_t schema_of(const payload& p) {
  return std::visit(
      [](const auto& x) -> uint32_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, unknown_event>) return x.schema;
        else return T::schema;
      },
      p);
}

payload decode(std::string_view type, uint32_t schema, std::string_view bytes) {
  const entry* e = find(type);
  if (!e) return unknown_event{std::string(type), schema, std::string(bytes)};
  if (schema > e->schema)
    throw events::payload_error("schema_version", std::string(type) + " schema version " + std::to_string(schema) +
                                                      " is newer than this build reads (" + std::to_string(e->schema) + ")");
  return e->decode(bytes);
}

payload from_json(std::string_view type, const nlohmann::json& j) {
  const entry* e = find(type);
  if (!e) return unknown_event{std::string(type), 1, events::encode_cbor(j)};
  return e->from_json(j);
}

void encode(const payload& p, std::string& out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, unknown_event>) out.append(x.bytes);
        else events::write_cbor(x, out);
      },
      p);
}

std::string encode(const payload& p) {
  std::string out;
  out.reserve(96);
  encode(p, out);
  return out;
}

nlohmann::json to_json(const payload& p) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, unknown_event>) return x.bytes.empty() ? nlohmann::json::object() : events::decode_cbor(x.bytes);
        else return events::to_json(x);
      },
      p);
}

bool same(const payload& a, const payload& b) {
  return a.index() == b.index() && type_of(a) == type_of(b) && encode(a) == encode(b);
}

const std::vector<std::string_view>& known_types() {
  static const std::vector<std::string_view> names = [] {
    auto all = entries(std::make_index_sequence<known_count>{});
    std::vector<std::string_view> v;
    for (const auto& e : all) v.push_back(e.type);
    return v;
  }();
  return names;
}

}  // namespace baton::core::ev
