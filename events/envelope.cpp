#include "events/envelope.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

#include "core/util/hex.hpp"
#include "core/util/sha256.hpp"
#include "core/util/time.hpp"
#include "events/bytes.hpp"
#include "events/payload.hpp"

namespace baton::events {

std::string encode_body(const event_envelope& e) {
  std::string out;
  out.reserve(48 + e.stream_id.size() + e.type.size() + e.correlation_id.size() + e.causation_id.size() + e.actor.size() +
              e.command_id.size() + e.payload.size());
  out.push_back(static_cast<char>(envelope_format));
  put_varint(out, e.seq);
  put_bytes(out, e.stream_id);
  put_varint(out, e.stream_version);
  put_bytes(out, e.type);
  put_varint(out, e.schema_version);
  put_varint(out, zigzag(e.recorded_at_us));
  put_bytes(out, e.correlation_id);
  put_bytes(out, e.causation_id);
  put_bytes(out, e.actor);
  put_bytes(out, e.command_id);
  put_bytes(out, e.payload);
  return out;
}

std::string encode(const event_envelope& e) { return encode_body(e) + e.hash; }

std::optional<event_view> decode(std::string_view s) {
  if (s.size() < 1 + util::sha256_size || static_cast<uint8_t>(s[0]) != envelope_format) return std::nullopt;
  event_view v;
  v.body = s.substr(0, s.size() - util::sha256_size);
  v.hash = s.substr(s.size() - util::sha256_size);
  std::string_view b = v.body;
  size_t pos = 1;
  uint64_t schema = 0, time = 0;
  if (!get_varint(b, pos, v.seq) || !get_bytes(b, pos, v.stream_id) || !get_varint(b, pos, v.stream_version) ||
      !get_bytes(b, pos, v.type) || !get_varint(b, pos, schema) || !get_varint(b, pos, time) ||
      !get_bytes(b, pos, v.correlation_id) || !get_bytes(b, pos, v.causation_id) || !get_bytes(b, pos, v.actor) ||
      !get_bytes(b, pos, v.command_id) || !get_bytes(b, pos, v.payload) || pos != b.size() || schema > UINT32_MAX)
    return std::nullopt;
  v.schema_version = static_cast<uint32_t>(schema);
  v.recorded_at_us = unzigzag(time);
  return v;
}

event_view view_of(const event_envelope& e) {
  event_view v;
  v.seq = e.seq;
  v.stream_id = e.stream_id;
  v.stream_version = e.stream_version;
  v.type = e.type;
  v.schema_version = e.schema_version;
  v.recorded_at_us = e.recorded_at_us;
  v.correlation_id = e.correlation_id;
  v.causation_id = e.causation_id;
  v.actor = e.actor;
  v.command_id = e.command_id;
  v.payload = e.payload;
  v.hash = e.hash;
  return v;
}

event_envelope event_view::to_envelope() const {
  event_envelope e;
  e.seq = seq;
  e.stream_id = stream_id;
  e.stream_version = stream_version;
  e.type = type;
  e.schema_version = schema_version;
  e.recorded_at_us = recorded_at_us;
  e.correlation_id = correlation_id;
  e.causation_id = causation_id;
  e.actor = actor;
  e.command_id = command_id;
  e.payload = payload;
  e.hash = hash;
  return e;
}

std::string chain_hash(std::string_view previous_hash, std::string_view body) { return util::sha256(previous_hash, body); }

bool chain_hash_matches(std::string_view previous_hash, std::string_view body, std::string_view hash) {
  unsigned char h[util::sha256_size];
  util::sha256_into(previous_hash, body, h);
  return hash.size() == util::sha256_size && std::memcmp(h, hash.data(), util::sha256_size) == 0;
}

nlohmann::json to_json(const event_envelope& e) {
  nlohmann::json payload;
  try {
    payload = from_payload(e.payload);
  } catch (const nlohmann::json::exception&) {
    payload = {{"undecodable_payload_hex", util::to_hex(e.payload)}};
  }
  return {{"seq", e.seq},
          {"stream_id", e.stream_id},
          {"stream_version", e.stream_version},
          {"type", e.type},
          {"schema_version", e.schema_version},
          {"recorded_at", util::format_time_us(e.recorded_at_us)},
          {"recorded_at_us", e.recorded_at_us},
          {"correlation_id", e.correlation_id},
          {"causation_id", e.causation_id},
          {"actor", e.actor},
          {"command_id", e.command_id},
          {"payload", payload},
          {"hash", util::to_hex(e.hash)}};
}

}  // namespace baton::events
