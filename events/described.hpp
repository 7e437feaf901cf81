#pragma once
// A payload struct described once, its fields named in the order the log writes them, and
// from that one description: the CBOR the log stores (byte for byte what encode_cbor writes
// for the same JSON value: keys in ascending byte order, integers and floats in the same
// forms, so logs written before payloads were typed verify and compare unchanged), a reader
// of those bytes that builds no JSON tree, the JSON people read, and equality.
//
// A described struct has
//   template <class Self, class F> static void describe(Self& x, F&& field) {
//     field("attempt", x.attempt);
//     field("gpu_count", x.gpu_count, events::omit_if{x.gpu_count == 1});
//     field("worker_id", x.worker_id);
//   }
// (Self is T or const T), or BATON_DESCRIBE(a, b) below when each field is a member as it is.
// Names come in ascending byte order (tests/event_types_test.cpp checks the whole catalogue).
// A std::optional member is written only when it holds a value; a nullable<T> is written as
// null when empty; omit_if leaves a field out when the condition holds, omit_unless while a
// flag is false (reading the field sets it); reading leaves a member at its default when its
// field is absent, unless the field is `required`. Integers are read leniently (integer_of),
// everything else strictly. Members may be bool, integers, double, std::string, nlohmann::json
// (a free-form part), std::vector, std::pair (a two-item array), std::map<std::string, V>,
// described structs, and optionals of those.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "events/cbor_cursor.hpp"
#include "events/cbor_decode.hpp"
#include "events/cbor_encode.hpp"

// describe() for a struct whose fields are its members, named as they are and written as they
// are (no omit rule, none required): BATON_DESCRIBE(by, reason) is f("by", x.by); f("reason",
// x.reason). nlohmann's NLOHMANN_JSON_PASTE (the same one its NLOHMANN_DEFINE_TYPE_* use)
// repeats the field macro over the names.
#define BATON_DESCRIBE_FIELD(m) f(#m, x.m);
#define BATON_DESCRIBE(...)                                                      \
  template <class S, class F>                                                    \
  static void describe(S& x, F&& f) {                                            \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(BATON_DESCRIBE_FIELD, __VA_ARGS__)) \
  }

namespace baton::events {

struct omit_if {
  bool omit = false;
};
// Written only while `flag` holds, and reading the field sets it: fields that exist together
// (a greedy walk's counts, written when it matched) without an optional each.
template <class B>
struct omit_unless {
  B& flag;
};
template <class B>
omit_unless(B&) -> omit_unless<B>;
// A field a payload of this type must have: reading one without it is an error.
struct required_t {};
inline constexpr required_t required{};

// An optional value that the log writes as null when empty (std::optional leaves the key out).
template <class T>
struct nullable : std::optional<T> {
  using std::optional<T>::optional;
  nullable& operator=(T v) {
    this->emplace(std::move(v));
    return *this;
  }
  nullable& operator=(std::nullopt_t) {
    this->reset();
    return *this;
  }
};

// A payload that does not read as its type's description says: the field and what was wrong.
struct payload_error : std::runtime_error {
  std::string field;
  payload_error(std::string f, const std::string& what) : std::runtime_error(what), field(std::move(f)) {}
};

namespace described_detail {

template <class T, class = void>
struct is_described : std::false_type {};
struct probe {
  template <class V, class... O>
  void operator()(const char*, V&&, const O&...) {}
};
template <class T>
struct is_described<T, std::void_t<decltype(T::describe(std::declval<T&>(), std::declval<probe&>()))>> : std::true_type {};

inline bool omitted() { return false; }
inline bool omitted(const omit_if& o) { return o.omit; }
inline bool omitted(const required_t&) { return false; }
template <class... O>
constexpr bool is_required() {
  return (std::is_same_v<O, required_t> || ...);
}
template <class B>
bool omitted(const omit_unless<B>& o) {
  return !o.flag;
}
inline void mark() {}
inline void mark(const omit_if&) {}
inline void mark(const required_t&) {}
template <class B>
void mark(const omit_unless<B>& o) {
  if constexpr (!std::is_const_v<B>) o.flag = true;
}

template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_nullable : std::false_type {};
template <class T>
struct is_nullable<nullable<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class V, class C, class A>
struct is_string_map<std::map<std::string, V, C, A>> : std::true_type {};

template <class T>
bool present(const T& v) {
  if constexpr (is_optional<T>::value)
    return v.has_value();
  else
    return true;
}

template <class T>
void write(const T& v, std::string& out);

inline void write_key(const char* name, std::string& out) { encode_cbor_text(name, out); }

template <class T>
void write_object(const T& x, std::string& out) {
  size_t n = 0;
  T::describe(x, [&](const auto&, const auto& v, const auto&... o) {
    if (!omitted(o...) && present(v)) ++n;
  });
  encode_cbor_head(0xA0, n, out);
  T::describe(x, [&](const auto& name, const auto& v, const auto&... o) {
    if (omitted(o...) || !present(v)) return;
    write_key(name, out);
    write(v, out);
  });
}

template <class T>
void write(const T& v, std::string& out) {
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(v ? '\xF5' : '\xF4');
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>)
      encode_cbor_integer(static_cast<int64_t>(v), out);
    else
      encode_cbor_unsigned(static_cast<uint64_t>(v), out);
  } else if constexpr (std::is_floating_point_v<T>) {
    encode_cbor_float(static_cast<double>(v), out);
  } else if constexpr (std::is_same_v<T, std::string>) {
    encode_cbor_text(v, out);
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    encode_cbor(v, out);
  } else if constexpr (is_optional<T>::value) {
    write(*v, out);
  } else if constexpr (is_nullable<T>::value) {
    if (v)
      write(*v, out);
    else
      out.push_back('\xF6');
  } else if constexpr (is_pair<T>::value) {
    encode_cbor_head(0x80, 2, out);
    write(v.first, out);
    write(v.second, out);
  } else if constexpr (is_vector<T>::value) {
    encode_cbor_head(0x80, v.size(), out);
    for (const auto& e : v) write(e, out);
  } else if constexpr (is_string_map<T>::value) {
    encode_cbor_head(0xA0, v.size(), out);
    for (const auto& [k, e] : v) {
      encode_cbor_text(k, out);
      write(e, out);
    }
  } else {
    static_assert(is_described<T>::value, "a payload member of a kind described.hpp does not know");
    write_object(v, out);
  }
}

template <class T>
nlohmann::json to_json_value(const T& v);

template <class T>
nlohmann::json object_json(const T& x) {
  nlohmann::json j = nlohmann::json::object();
  T::describe(x, [&](const char* name, const auto& v, const auto&... o) {
    if (!omitted(o...) && present(v)) j[name] = to_json_value(v);
  });
  return j;
}

template <class T>
nlohmann::json to_json_value(const T& v) {
  if constexpr (std::is_same_v<T, bool> || std::is_floating_point_v<T> || std::is_same_v<T, std::string>) {
    return nlohmann::json(v);
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>)
      return nlohmann::json(static_cast<int64_t>(v));
    else
      return nlohmann::json(static_cast<uint64_t>(v));
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return v;
  } else if constexpr (is_optional<T>::value) {
    return to_json_value(*v);
  } else if constexpr (is_nullable<T>::value) {
    return v ? to_json_value(*v) : nlohmann::json(nullptr);
  } else if constexpr (is_pair<T>::value) {
    return nlohmann::json::array({to_json_value(v.first), to_json_value(v.second)});
  } else if constexpr (is_vector<T>::value) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : v) a.push_back(to_json_value(e));
    return a;
  } else if constexpr (is_string_map<T>::value) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, e] : v) o[k] = to_json_value(e);
    return o;
  } else {
    return object_json(v);
  }
}

[[noreturn]] inline void wrong(const std::string& field, const char* expected) {
  throw payload_error(field, "payload field '" + field + "': expected " + expected);
}

// An integer field read leniently, as batond has always read the numbers of stored events: a
// log is a file, and a damaged or hand-made one must not make a
// read undefined. Not a number, or outside T's range: nothing (the field keeps its default);
// a float inside the range is truncated. Every other kind of field is read strictly.
template <class T>
std::optional<T> integer_of(const nlohmann::json& v) {
  using limits = std::numeric_limits<T>;
  if (!v.is_number() || v.is_boolean()) return std::nullopt;
  if (v.is_number_unsigned()) {
    const auto n = v.template get<uint64_t>();
    if (n <= static_cast<uint64_t>(limits::max())) return static_cast<T>(n);
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    const auto n = v.template get<int64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (n >= static_cast<int64_t>(limits::min()) && n <= static_cast<int64_t>(limits::max())) return static_cast<T>(n);
    } else {
      if (n >= 0 && static_cast<uint64_t>(n) <= static_cast<uint64_t>(limits::max())) return static_cast<T>(n);
    }
    return std::nullopt;
  }
  const double d = v.template get<double>();
  // Strictly inside the range: limits::max() of a 64-bit type rounds up to 2^63 or 2^64 as a double.
  if (!std::isfinite(d) || d < static_cast<double>(limits::min()) || d >= static_cast<double>(limits::max())) return std::nullopt;
  return static_cast<T>(d);
}

template <class T>
void from_json_value(const nlohmann::json& j, T& v, const std::string& field);

template <class T>
void object_from_json(const nlohmann::json& j, T& x, const std::string& field) {
  if (!j.is_object()) wrong(field.empty() ? "(payload)" : field, "an object");
  T::describe(x, [&](const char* name, auto& v, const auto&... o) {
    auto it = j.find(name);
    if (it == j.end()) {
      if constexpr (is_required<std::decay_t<decltype(o)>...>())
        wrong(field.empty() ? std::string(name) : field + "." + name, "a value (it is required)");
      return;
    }
    from_json_value(*it, v, field.empty() ? std::string(name) : field + "." + name);
    mark(o...);
  });
}

template <class T>
void from_json_value(const nlohmann::json& j, T& v, const std::string& field) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) wrong(field, "true or false");
    v = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (auto n = integer_of<T>(j)) v = *n;  // (else the member keeps its default: see integer_of)
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) wrong(field, "a number");
    v = j.get<double>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) wrong(field, "a string");
    v = j.get<std::string>();
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    v = j;
  } else if constexpr (is_optional<T>::value || is_nullable<T>::value) {
    if constexpr (is_nullable<T>::value) {
      if (j.is_null()) {
        v.reset();
        return;
      }
    }
    using inner_type = typename T::value_type;
    if constexpr (std::is_integral_v<inner_type> && !std::is_same_v<inner_type, bool>) {
      if (auto n = integer_of<inner_type>(j))
        v.emplace(*n);
      else
        v.reset();
      return;
    } else {
      inner_type inner{};
      from_json_value(j, inner, field);
      v.emplace(std::move(inner));
    }
  } else if constexpr (is_pair<T>::value) {
    if (!j.is_array() || j.size() != 2) wrong(field, "a pair");
    from_json_value(j[0], v.first, field + "[0]");
    from_json_value(j[1], v.second, field + "[1]");
  } else if constexpr (is_vector<T>::value) {
    if (!j.is_array()) wrong(field, "an array");
    v.clear();
    v.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      v.emplace_back();
      from_json_value(j[i], v.back(), field + "[" + std::to_string(i) + "]");
    }
  } else if constexpr (is_string_map<T>::value) {
    if (!j.is_object()) wrong(field, "an object");
    v.clear();
    for (const auto& [k, e] : j.items()) from_json_value(e, v[k], field + "." + k);
  } else {
    object_from_json(j, v, field);
  }
}

// A field's name as a view, its length from its literal when it is one.
template <class N>
constexpr std::string_view name_view(const N& name) {
  if constexpr (std::is_array_v<N>)
    return std::string_view(name, std::extent_v<N> - 1);
  else
    return std::string_view(name);
}
// A key against a field's name, from the name's literal: its length known when compiling, so
// no strlen, and equality a few compares the compiler writes in place of a call to memcmp (both
// ran per field and event on a replay's reading thread, its main work).
template <class N>
bool is_name(std::string_view key, const N& name) {
  if constexpr (std::is_array_v<N>)
    return key.size() == std::extent_v<N> - 1 && std::memcmp(key.data(), name, std::extent_v<N> - 1) == 0;
  else
    return key == name;
}
// key < name, deciding by the first byte where they differ there (most do) before a compare.
template <class N>
bool before_name(std::string_view key, const N& name) {
  if (!key.empty() && key[0] != name[0]) return static_cast<unsigned char>(key[0]) < static_cast<unsigned char>(name[0]);
  return key < name_view(name);
}

// The direct reader: false where the bytes are not the common encodings (the caller then
// reads through the JSON tree, which gives the exact error or value).
template <class T>
bool read(cbor_cursor& c, T& v);

// One pass over the description beside the keys (both in ascending byte order, as the log
// writes them): a key before the field in hand is one this version does not know, a key after
// it means the field is absent. An unknown key is skipped (forward compatible) when it lies
// after the last field passed; one that does not (keys out of order, or repeated) declines.
// (One comparison per field and key: this is a replay's reading thread's main work.)
template <class T>
bool read_object(cbor_cursor& c, T& x) {
  uint64_t n = 0;
  if (!c.map_header(n)) return false;
  std::string_view key, passed;  // the key in hand; the name of the last field passed
  bool have = false, ok = true, complete = true, any_passed = false;
  auto next_key = [&] {
    have = n > 0;
    if (!have) return;
    --n;
    if (!c.text(key)) ok = have = false;
  };
  auto skip_unknown = [&] {
    if (any_passed && !(passed < key)) {
      ok = false;
      return;
    }
    ok = c.skip();
    if (ok) next_key();
  };
  next_key();
  T::describe(x, [&](const auto& name, auto& v, const auto&... o) {
    // The key in hand against this field's name: equal first (the common case, and a cheaper
    // test than the ordering), else before or after it.
    bool equal = false;
    while (ok && have && !(equal = is_name(key, name)) && before_name(key, name)) skip_unknown();
    if (!ok) return;
    if (have && equal) {
      ok = read(c, v);
      mark(o...);
      if (ok) next_key();
    } else if constexpr (is_required<std::decay_t<decltype(o)>...>()) {
      complete = false;  // (missing a required field: the JSON reading names it)
    }
    passed = name_view(name);
    any_passed = true;
  });
  while (ok && have) skip_unknown();  // keys after the last field's name
  return ok && complete;
}

template <class T>
bool read(cbor_cursor& c, T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return c.boolean(v);
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      int64_t n = 0;
      if (!c.integer(n) || n < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          n > static_cast<int64_t>(std::numeric_limits<T>::max()))
        return false;
      v = static_cast<T>(n);
    } else {
      uint64_t n = 0;
      if (!c.unsigned_integer(n) || n > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
      v = static_cast<T>(n);
    }
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    double d = 0;
    if (!c.number(d)) return false;
    v = static_cast<T>(d);
    return true;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return c.text(v);
  } else if constexpr (std::is_same_v<T, nlohmann::json>) {
    return c.item(v);
  } else if constexpr (is_optional<T>::value || is_nullable<T>::value) {
    if constexpr (is_nullable<T>::value) {
      if (c.null()) {
        v.reset();
        return true;
      }
    }
    typename T::value_type inner{};
    if (!read(c, inner)) return false;
    v.emplace(std::move(inner));
    return true;
  } else if constexpr (is_pair<T>::value) {
    uint64_t n = 0;
    return c.array_header(n) && n == 2 && read(c, v.first) && read(c, v.second);
  } else if constexpr (is_vector<T>::value) {
    uint64_t n = 0;
    if (!c.array_header(n)) return false;
    v.clear();
    v.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) {
      v.emplace_back();
      if (!read(c, v.back())) return false;
    }
    return true;
  } else if constexpr (is_string_map<T>::value) {
    uint64_t n = 0;
    if (!c.map_header(n)) return false;
    v.clear();
    std::string key;
    for (uint64_t i = 0; i < n; ++i)
      if (!c.text(key) || !read(c, v[key])) return false;
    return true;
  } else {
    return read_object(c, v);
  }
}

}  // namespace described_detail

template <class T>
void write_cbor(const T& x, std::string& out) {
  described_detail::write_object(x, out);
}
template <class T>
std::string to_cbor(const T& x) {
  std::string out;
  out.reserve(64);
  write_cbor(x, out);
  return out;
}

template <class T>
nlohmann::json to_json(const T& x) {
  return described_detail::object_json(x);
}

// Throws payload_error naming the field that does not read.
template <class T>
T from_json(const nlohmann::json& j) {
  T x{};
  described_detail::object_from_json(j, x, "");
  return x;
}

// Reads stored bytes into x, a default-made T (an empty payload reads as {}). Throws
// payload_error, or what decode_cbor throws for bytes that are not CBOR.
template <class T>
void read_cbor(std::string_view bytes, T& x) {
  if (bytes.empty()) return;
  cbor_cursor c(bytes);
  if (described_detail::read_object(c, x) && c.at_end()) return;
  x = from_json<T>(decode_cbor(bytes));  // (whatever the direct reading left is replaced)
}
template <class T>
T from_cbor(std::string_view bytes) {
  T x{};
  read_cbor(bytes, x);
  return x;
}

// Whether the description names its fields in ascending byte order, as the log writes them
// (tests hold every payload type to it).
template <class T>
bool names_in_order() {
  T x{};
  std::string last;
  bool first = true, ok = true;
  T::describe(x, [&](const char* name, auto&, const auto&...) {
    if (!first && !(last < std::string(name))) ok = false;
    first = false;
    last = name;
  });
  return ok;
}

}  // namespace baton::events
