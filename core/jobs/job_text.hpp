#pragma once
// A job as the API shows it (RelayMD's JobRead and baton's fields), written as JSON text by hand:
// the one description of that shape. A create's answer and every row of GET /jobs are built
// here; building a JSON tree of some fifty keys only to dump it was about two fifths of a
// create's instructions. core::to_json(job) reads this text back for callers that want a value.
#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/jobs/job.hpp"
#include "events/json_text.hpp"

namespace baton::core {

// Writes "key":value pairs into an object being written, comma-separated. Keys are the
// caller's ASCII literals; text that is not UTF-8 is written with U+FFFD (as the API's replies
// are: an echo of bad input never takes a request down).
class json_fields {
 public:
  explicit json_fields(std::string& out) : out_(out) {}
  void key(std::string_view k) {
    if (!first_) out_ += ',';
    first_ = false;
    out_ += '"';
    out_.append(k);
    out_ += "\":";
  }
  void text(std::string_view k, std::string_view v) {
    key(k);
    events::append_json_string(out_, v, events::invalid_utf8::replace);
  }
  void text_or_null(std::string_view k, std::string_view v) { v.empty() ? null(k) : text(k, v); }
  void time(std::string_view k, time_us t);
  void time_or_null(std::string_view k, const std::optional<time_us>& t) { t ? time(k, *t) : null(k); }
  template <class I>
  void integer(std::string_view k, I v) {
    key(k);
    char buf[24];
    out_.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
  }
  template <class I>
  void integer_or_null(std::string_view k, const std::optional<I>& v) {
    v ? integer(k, *v) : null(k);
  }
  void number(std::string_view k, double v) {
    key(k);
    out_ += nlohmann::json(v).dump();  // nlohmann's shortest round-trip form, as a tree's dump
  }
  void number_or_null(std::string_view k, const std::optional<double>& v) { v ? number(k, *v) : null(k); }
  void boolean(std::string_view k, bool v) {
    key(k);
    out_ += v ? "true" : "false";
  }
  void null(std::string_view k) {
    key(k);
    out_ += "null";
  }
  void texts(std::string_view k, const std::vector<std::string>& v);
  void value(std::string_view k, const nlohmann::json& v) {
    key(k);
    events::append_json(out_, v, events::invalid_utf8::replace);
  }
  std::string& out() { return out_; }

 private:
  std::string& out_;
  bool first_ = true;
};

// The job's own fields (all but the row's: queue_blocked_reason, pending_reason, the plan's
// expected start, the array, ...; shapes/reply_json.cpp writes those after them).
void append_job_fields(json_fields& f, const job& j, time_us now);

}  // namespace baton::core
