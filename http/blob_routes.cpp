#include "http/blob_routes.hpp"

#include <limits>
#include <optional>
#include <string>

#include "http/body_transfer.hpp"
#include "http/caller.hpp"
#include "http/json_reply.hpp"

namespace baton::http {

namespace {

using nlohmann::json;
using storage::local_backend;

// A non-negative decimal that fits 64 bits, or nothing.
std::optional<uint64_t> parse_u64(const std::string& s) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

void reply(response& res, int status, const std::string& code, const std::string& message, json more = json::object()) {
  json body = {{"error", code}, {"message", message}};
  for (auto& [k, v] : more.items()) body[k] = v;
  reply_json(res, status, body);
}

// The caller, if the grant is theirs (a worker's credential for an operator's grant, or
// another worker's, is refused as no credential is); empty when res holds the refusal.
std::optional<std::string> caller_of(const api_context& ctx, const request& req, response& res) {
  auto who = identify(ctx, req, res);
  if (!who) return std::nullopt;
  // Transfers are for the callers that may read a job's files (core/access/access: operators and
  // workers); the pilot and scrape tokens are refused as on every other route of theirs.
  if (!allowed(ctx, *who, core::command_kind::job_files, "", res)) return std::nullopt;
  return who->actor();
}

core::time_us now_of(const api_context& ctx) { return ctx.clock ? ctx.clock() : 0; }

void upload_unknown(response& res, const std::string& id) {
  reply(res, 404, "upload_unknown", "no upload " + id + " (unknown or expired); ask for the upload again");
}

// The live upload `id` if `who` holds it; empty when res holds the 404 or 403.
std::optional<local_backend::grant_info> upload_of(local_backend& blobs, const std::string& id, const std::string& who,
                                                   core::time_us now, response& res) {
  auto u = blobs.find_upload(id, now);
  if (!u)
    upload_unknown(res, id);
  else if (u->who != who)
    reply(res, 403, "upload_forbidden", "this upload was granted to another caller");
  else
    return u;
  return std::nullopt;
}

class blob_sink : public body_sink {
 public:
  explicit blob_sink(std::unique_ptr<local_backend::upload_writer> w) : w_(std::move(w)) {}

  std::optional<response> write(const char* data, size_t n) override {
    std::string why;
    auto st = w_->write(data, n, why);
    if (st == local_backend::upload_writer::status::ok) return std::nullopt;
    response res;
    if (st == local_backend::upload_writer::status::no_space)
      reply(res, 507, "storage_full", why + "; the upload keeps the bytes it holds",
            {{"offset", w_->held()}, {"limit", "event_log.min_free_mb"}});
    else
      reply(res, 500, "storage_io_error", why, {{"offset", w_->held()}});
    w_.reset();  // the upload is free for a retry before the client hears the answer
    return res;
  }

  response finish() override {
    auto r = w_->finish();
    response res;
    switch (r.status) {
      case storage::finish_status::stored:
        reply_json(res, 200, {{"offset", w_->held()}, {"complete", true}});
        break;
      case storage::finish_status::digest_mismatch:
        reply(res, 422, "digest_mismatch", r.detail + "; the upload is discarded, send it again from offset 0",
              {{"offset", 0}, {"complete", false}, {"field", "sha256"}});
        break;
      case storage::finish_status::no_space:
        reply(res, 507, "storage_full", r.detail, {{"offset", w_->held()}, {"limit", "event_log.min_free_mb"}});
        break;
      case storage::finish_status::incomplete:
        reply_json(res, 200, {{"offset", w_->held()}, {"complete", false}});
        break;
      default:
        reply(res, 503, "storage_unavailable", r.detail + "; retry", {{"offset", w_->held()}});
    }
    w_.reset();  // the upload is free for a retry before the client hears the answer
    return res;
  }

 private:
  std::unique_ptr<local_backend::upload_writer> w_;
};

class blob_source : public body_source {
 public:
  explicit blob_source(std::unique_ptr<local_backend::blob_reader> r) : r_(std::move(r)) {}
  uint64_t size() const override { return r_->count(); }
  int64_t read(char* buf, size_t max) override { return r_->read(buf, max); }

 private:
  std::unique_ptr<local_backend::blob_reader> r_;
};

upload_start refused(response res) {
  upload_start s;
  s.refusal = std::move(res);
  return s;
}

// PUT /blobs/uploads/{id}?offset=N, on the head alone: every refusal comes before a body
// byte is read.
upload_start open_upload(const api_context& ctx, local_backend& blobs, const request& head) {
  response res;
  auto who = caller_of(ctx, head, res);
  if (!who) return refused(std::move(res));
  const std::string& id = head.path_params.at(0);
  const core::time_us now = now_of(ctx);
  auto u = upload_of(blobs, id, *who, now, res);
  if (!u) return refused(std::move(res));
  auto offset = parse_u64(head.get_param_value("offset"));
  if (!offset) {
    reply(res, 400, "invalid_field", "offset: the first byte this request carries, a non-negative integer",
          {{"field", "offset"}});
    return refused(std::move(res));
  }
  auto length = parse_u64(head.get_header_value("Content-Length"));
  if (!length) {
    reply(res, 411, "length_required", "this upload needs a Content-Length header", {{"field", "Content-Length"}});
    return refused(std::move(res));
  }
  auto wrong_length = [&] {
    reply(res, 422, "upload_length", "offset + Content-Length must be the blob's size (" + std::to_string(u->size) + " bytes)",
          {{"field", "Content-Length"}, {"size", u->size}});
  };
  if (*offset > u->size || *length > u->size - *offset) {
    wrong_length();
    return refused(std::move(res));
  }
  if (blobs.proven(id, u->sha256, u->size)) {  // this upload's bytes arrived already (its answer was lost)
    reply_json(res, 200, {{"offset", u->size}, {"complete", true}});
    return refused(std::move(res));  // (answered on the head: a body sent anyway is not read)
  }
  if (auto why = blobs.short_of_space()) {
    reply(res, 507, "storage_full", *why, {{"offset", blobs.held(id, *u)}, {"limit", "event_log.min_free_mb"}});
    return refused(std::move(res));
  }
  auto opened = blobs.open_upload(id, *offset, *length, now);
  switch (opened.status) {
    case local_backend::open_status::ok: {
      upload_start s;
      s.sink = std::make_shared<blob_sink>(std::move(opened.writer));
      return s;
    }
    case local_backend::open_status::unknown:
      upload_unknown(res, id);
      break;
    case local_backend::open_status::busy:
      reply(res, 409, "upload_busy", "another connection is sending this upload; retry once it has ended");
      break;
    case local_backend::open_status::offset:
      reply(res, 409, "upload_offset", "batond holds " + std::to_string(opened.held) + " bytes of this upload; send from there",
            {{"offset", opened.held}, {"field", "offset"}});
      break;
    case local_backend::open_status::length:
      wrong_length();
      break;
    case local_backend::open_status::io_error:
      reply(res, 500, "storage_io_error", opened.detail);
      break;
  }
  return refused(std::move(res));
}

// "bytes=a-b", "bytes=a-", "bytes=-n" against a blob of `size` bytes: [first, count), or
// nothing when unsatisfiable (several ranges included: one range per request).
struct byte_range {
  uint64_t first = 0, count = 0;
};
std::optional<byte_range> parse_range(const std::string& h, uint64_t size) {
  if (h.compare(0, 6, "bytes=") != 0) return std::nullopt;
  const std::string spec = h.substr(6);
  auto dash = spec.find('-');
  if (dash == std::string::npos || spec.find(',') != std::string::npos) return std::nullopt;
  const std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
  if (a.empty()) {  // the last n bytes
    auto n = parse_u64(b);
    if (!n || *n == 0 || size == 0) return std::nullopt;
    const uint64_t count = std::min(*n, size);
    return byte_range{size - count, count};
  }
  auto first = parse_u64(a);
  if (!first || *first >= size) return std::nullopt;
  uint64_t last = size - 1;
  if (!b.empty()) {
    auto l = parse_u64(b);
    if (!l || *l < *first) return std::nullopt;
    last = std::min(*l, size - 1);
  }
  return byte_range{*first, last - *first + 1};
}

void download(const api_context& ctx, local_backend& blobs, const request& req, response& res) {
  auto who = caller_of(ctx, req, res);
  if (!who) return;
  auto d = blobs.find_download(req.path_params.at(0), now_of(ctx));
  if (!d) return reply(res, 404, "download_unknown", "no such download (unknown or expired); ask for it again");
  if (d->who != *who) return reply(res, 403, "download_forbidden", "this download was granted to another caller");
  byte_range range{0, d->size};
  const std::string asked = req.get_header_value("Range");
  if (!asked.empty()) {
    auto r = parse_range(asked, d->size);
    if (!r) {
      reply(res, 416, "range_not_satisfiable",
            "Range: one range of bytes=a-b, a- or -n within the blob's " + std::to_string(d->size) + " bytes",
            {{"field", "Range"}, {"size", d->size}});
      res.set_header("Content-Range", "bytes */" + std::to_string(d->size));
      return;
    }
    range = *r;
  }
  auto opened = blobs.open_blob(d->sha256, d->size, range.first, range.count);
  if (opened.status == local_backend::blob_status::missing)
    return reply(res, 404, "blob_missing", "blob " + d->sha256 + " is not stored here");
  if (opened.status == local_backend::blob_status::damaged)
    return reply(res, 500, "blob_damaged", "blob " + d->sha256 + " is damaged on disk and is not served");
  res.status = asked.empty() ? 200 : 206;
  res.content_type = "application/octet-stream";
  res.set_header("Accept-Ranges", "bytes");
  res.set_header("ETag", "\"" + d->sha256 + "\"");
  if (!asked.empty())
    res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" + std::to_string(range.first + range.count - 1) +
                                        "/" + std::to_string(d->size));
  res.source = std::make_shared<blob_source>(std::move(opened.reader));
}

}  // namespace

void add_blob_routes(router& server, const api_context& ctx, std::shared_ptr<local_backend> blobs) {
  const std::string upload_path = R"(/blobs/uploads/([A-Za-z0-9_-]{1,128}))";
  server.upload("PUT", upload_path, [ctx, blobs](const request& head) { return open_upload(ctx, *blobs, head); });
  server.Get(upload_path, [ctx, blobs](const request& req, response& res) {
    auto who = caller_of(ctx, req, res);
    if (!who) return;
    const std::string& id = req.path_params.at(0);
    auto u = upload_of(*blobs, id, *who, now_of(ctx), res);
    if (!u) return;
    reply_json(res, 200, {{"offset", blobs->held(id, *u)}, {"size", u->size}});
  });
  server.Get(R"(/blobs/downloads/([0-9a-f]{32}))",
             [ctx, blobs](const request& req, response& res) { download(ctx, *blobs, req, res); });
}

}  // namespace baton::http
