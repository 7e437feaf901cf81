#include "core/events/event_types.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <utility>

namespace baton::core::ev {
namespace {

constexpr size_t known_count = std::variant_size_v<payload> - 1;  // all but unknown_event

struct entry {
  size_t index;  // in the variant
  std::string_view type;
  uint32_t schema;
  payload (*decode)(std::string_view bytes);
  payload (*from_json)(const nlohmann::json& j);
};

template <size_t I>
entry entry_of() {
  using T = std::variant_alternative_t<I, payload>;
  return {I, T::type, T::schema,
          [](std::string_view b) {
            payload p(std::in_place_index<I>);  // (read in place: a struct's strings are not moved again)
            events::read_cbor(b, std::get<I>(p));
            return p;
          },
          [](const nlohmann::json& j) { return payload(std::in_place_index<I>, events::from_json<T>(j)); }};
}

template <size_t... I>
std::array<entry, known_count> entries(std::index_sequence<I...>) {
  return {entry_of<I>()...};
}

// By type name, for lookups (built once; a lookup, never iterated). Hashed: a replay looks up
// every event's type, and a binary search by name cost ~340 instructions an event.
const entry* find(std::string_view type) {
  static const std::unordered_map<std::string_view, entry> table = [] {
    std::unordered_map<std::string_view, entry> t;
    for (const auto& e : entries(std::make_index_sequence<known_count>{})) t.emplace(e.type, e);
    return t;
  }();
  auto it = table.find(type);
  return it != table.end() ? &it->second : nullptr;
}

}  // namespace

size_t index_of(std::string_view type) {
  const entry* e = find(type);
  return e ? e->index : index_of_v<unknown_event>;
}

std::string_view type_of(const payload& p) {
  return std::visit(
      [](const auto& x) -> std::string_view {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, unknown_event>)
          return x.type;
        else
          return T::type;
      },
      p);
}

uint32_t schema_of(const payload& p) {
  return std::visit(
      [](const auto& x) -> uint32_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, unknown_event>)
          return x.schema;
        else
          return T::schema;
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
        if constexpr (std::is_same_v<T, unknown_event>)
          out.append(x.bytes);
        else
          events::write_cbor(x, out);
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
        if constexpr (std::is_same_v<T, unknown_event>)
          return x.bytes.empty() ? nlohmann::json::object() : events::decode_cbor(x.bytes);
        else
          return events::to_json(x);
      },
      p);
}

namespace {
template <class T, class = void>
struct has_worker_id : std::false_type {};
template <class T>
struct has_worker_id<T, std::void_t<decltype(std::declval<const T&>().worker_id)>> : std::true_type {};
}  // namespace

std::string_view worker_named(const payload& p) {
  return std::visit(
      [](const auto& x) -> std::string_view {
        using T = std::decay_t<decltype(x)>;
        if constexpr (has_worker_id<T>::value) {
          using W = std::decay_t<decltype(x.worker_id)>;
          if constexpr (std::is_same_v<W, std::string>)
            return x.worker_id;
          else if constexpr (std::is_same_v<W, std::optional<std::string>>)
            return x.worker_id ? std::string_view(*x.worker_id) : std::string_view();
          else
            static_assert(sizeof(T) == 0, "a worker_id that is not text");
        }
        return {};
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
