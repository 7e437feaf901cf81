#include "core/util/time.hpp"

#include <cstdio>
#include <ctime>
#include <utility>

namespace baton::util {

namespace {

// v divided by unit rounded down, and what is left (0 to unit - 1), for any v (no negation
// that overflows at the most negative one).
std::pair<int64_t, int64_t> floor_divide(int64_t v, int64_t unit) {
  int64_t rest = v % unit;
  int64_t whole = v / unit;
  if (rest < 0) rest += unit, --whole;
  return {whole, rest};
}

bool basic(time_form f) { return f == time_form::basic; }

// What follows the seconds: the fraction the form keeps, then 'Z'.
void put_fraction(std::string& out, int64_t frac_us, time_form f) {
  char buf[16];
  if (f == time_form::micros)
    std::snprintf(buf, sizeof buf, ".%06lldZ", static_cast<long long>(frac_us));
  else if (f == time_form::millis)
    std::snprintf(buf, sizeof buf, ".%03lldZ", static_cast<long long>(frac_us / 1000));
  else
    std::snprintf(buf, sizeof buf, "Z");
  out += buf;
}

// The C library's rendering: any time gmtime_r takes (years before 1000 or after 9999 too).
std::string format_slowly(int64_t us, time_form f) {
  const auto [secs, frac] = floor_divide(us, 1000000);
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, basic(f) ? "%Y%m%dT%H%M%S" : "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  put_fraction(out, frac, f);
  return out;
}

char* put_digits(char* at, int64_t v, int width) {
  for (int i = width - 1; i >= 0; --i, v /= 10) at[i] = static_cast<char>('0' + v % 10);
  return at + width;
}

}  // namespace

// Years 1000 to 9999 written digit by digit (H. Hinnant's civil_from_days): every row of the
// SQL views carries several times, and gmtime_r, strftime and snprintf cost ~2,500
// instructions a time. The same text as the C library's, which renders the rest.
std::string format_time_us(int64_t us, time_form f) {
  constexpr int64_t first = -30610224000LL * 1000000, end = 253402300800LL * 1000000;  // 1000-01-01, 10000-01-01
  if (us < first || us >= end) return format_slowly(us, f);
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
  const bool b = basic(f);
  char buf[32];  // at most YYYY-MM-DDTHH:MM:SS.ffffffZ
  char* p = put_digits(buf, year, 4);
  if (!b) *p++ = '-';
  p = put_digits(p, month, 2);
  if (!b) *p++ = '-';
  p = put_digits(p, day, 2);
  *p++ = 'T';
  p = put_digits(p, of_day / 3600, 2);
  if (!b) *p++ = ':';
  p = put_digits(p, of_day / 60 % 60, 2);
  if (!b) *p++ = ':';
  p = put_digits(p, of_day % 60, 2);
  if (f == time_form::micros) {
    *p++ = '.';
    p = put_digits(p, frac, 6);
  } else if (f == time_form::millis) {
    *p++ = '.';
    p = put_digits(p, frac / 1000, 3);
  }
  *p++ = 'Z';
  return std::string(buf, p);
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

}  // namespace baton::util
