#include "events/envelope.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <ctime>
#include <utility>

#include "events/bytes.hpp"
#include "events/payload.hpp"
#include "events/sha256.hpp"

namespace baton::events {

std::string encode_body(const event_envelope& e) {
  std::string out;
  out.reserve(48 + e.stream_id.size() + e.type.size() + e.correlation_id.size() + e.causation_id.size() +
              e.actor.size() + e.command_id.size() + e.payload.size());
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
  if (s.size() < 1 + hash_size || static_cast<uint8_t>(s[0]) != envelope_format) return std::nullopt;
  event_view v;
  v.body = s.substr(0, s.size() - hash_size);
  v.hash = s.substr(s.size() - hash_size);
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

std::string chain_hash(std::string_view previous_hash, std::string_view body) { return sha256(previous_hash, body); }

bool chain_hash_matches(std::string_view previous_hash, std::string_view body, std::string_view hash) {
  unsigned char h[hash_size];
  sha256_into(previous_hash, body, h);
  return hash.size() == hash_size && std::memcmp(h, hash.data(), hash_size) == 0;
}

namespace {

// v divided by unit rounded down, and what is left (0 to unit - 1), for any v (no negation
// that overflows at the most negative one).
std::pair<int64_t, int64_t> floor_divide(int64_t v, int64_t unit) {
  int64_t rest = v % unit;
  int64_t whole = v / unit;
  if (rest < 0) rest += unit, --whole;
  return {whole, rest};
}

// The C library's rendering: any time gmtime_r takes (years before 1000 or after 9999 too).
std::string format_time_us_slowly(int64_t us) {
  const auto [secs, frac] = floor_divide(us, 1000000);
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%06lldZ", buf, static_cast<long long>(frac));
  return out;
}

void put_digits(char* at, int64_t v, int width) {
  for (int i = width - 1; i >= 0; --i, v /= 10) at[i] = static_cast<char>('0' + v % 10);
}

}  // namespace

// Years 1000 to 9999 written digit by digit (H. Hinnant's civil_from_days): every row of the
// SQL views carries several times, and gmtime_r, strftime and snprintf cost ~2,500
// instructions a time. The same text as the C library's, which renders the rest.
std::string format_time_us(int64_t us) {
  constexpr int64_t first = -30610224000LL * 1000000, end = 253402300800LL * 1000000;  // 1000-01-01, 10000-01-01
  if (us < first || us >= end) return format_time_us_slowly(us);
  const auto [secs, frac] = floor_divide(us, 1000000);
  const auto [days, of_day] = floor_divide(secs, 86400);
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  std::string out(27, '\0');  // YYYY-MM-DDTHH:MM:SS.ffffffZ
  char* p = out.data();
  put_digits(p, year, 4);
  p[4] = '-';
  put_digits(p + 5, month, 2);
  p[7] = '-';
  put_digits(p + 8, day, 2);
  p[10] = 'T';
  put_digits(p + 11, of_day / 3600, 2);
  p[13] = ':';
  put_digits(p + 14, of_day / 60 % 60, 2);
  p[16] = ':';
  put_digits(p + 17, of_day % 60, 2);
  p[19] = '.';
  put_digits(p + 20, frac, 6);
  p[26] = 'Z';
  return out;
}

namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// n digits at text[pos..], advancing pos; -1 if they are not all digits.
int64_t digits(std::string_view text, size_t& pos, size_t n) {
  if (pos + n > text.size()) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool expect(std::string_view text, size_t& pos, std::string_view one_of) {
  if (pos >= text.size() || one_of.find(text[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

}  // namespace

std::optional<int64_t> parse_time_us(std::string_view text) {
  size_t pos = 0;
  int64_t y = digits(text, pos, 4);
  if (y < 0 || !expect(text, pos, "-")) return std::nullopt;
  int64_t mo = digits(text, pos, 2);
  if (mo < 1 || mo > 12 || !expect(text, pos, "-")) return std::nullopt;
  int64_t d = digits(text, pos, 2);
  static const int month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t max_day = month_days[mo - 1] + (mo == 2 && leap(y) ? 1 : 0);
  if (d < 1 || d > max_day || !expect(text, pos, "Tt ")) return std::nullopt;
  int64_t h = digits(text, pos, 2);
  if (h < 0 || h > 23 || !expect(text, pos, ":")) return std::nullopt;
  int64_t mi = digits(text, pos, 2);
  if (mi < 0 || mi > 59 || !expect(text, pos, ":")) return std::nullopt;
  int64_t s = digits(text, pos, 2);
  if (s < 0 || s > 59) return std::nullopt;
  int64_t frac_us = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100000;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      frac_us += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
  }
  int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos++] == '-' ? -1 : 1;
    int64_t oh = digits(text, pos, 2);
    if (oh < 0 || oh > 23 || !expect(text, pos, ":")) return std::nullopt;
    int64_t om = digits(text, pos, 2);
    if (om < 0 || om > 59) return std::nullopt;
    offset_s = sign * (oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
  return secs * 1000000 + frac_us;
}

nlohmann::json to_json(const event_envelope& e) {
  nlohmann::json payload;
  try {
    payload = from_payload(e.payload);
  } catch (const nlohmann::json::exception&) {
    payload = {{"undecodable_payload_hex", to_hex(e.payload)}};
  }
  return {{"seq", e.seq},
          {"stream_id", e.stream_id},
          {"stream_version", e.stream_version},
          {"type", e.type},
          {"schema_version", e.schema_version},
          {"recorded_at", format_time_us(e.recorded_at_us)},
          {"recorded_at_us", e.recorded_at_us},
          {"correlation_id", e.correlation_id},
          {"causation_id", e.causation_id},
          {"actor", e.actor},
          {"command_id", e.command_id},
          {"payload", payload},
          {"hash", to_hex(e.hash)}};
}

}  // namespace baton::events
