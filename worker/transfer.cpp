#include "worker/transfer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "core/util/sha256.hpp"
#include "worker/backoff.hpp"
#include "worker/file_io.hpp"

namespace baton::xfer {

using nlohmann::json;

namespace {

constexpr size_t chunk = 1 << 20;
constexpr int max_renewals = 3;  // asking batond again for transfers that expired, per step

using worker::errno_text;
using worker::fd_guard;

uint64_t unsigned_field(const json& j, const char* key, const std::string& where, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw std::runtime_error(where + ": '" + key + "' is missing");
    return 0;
  }
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return static_cast<uint64_t>(it->get<int64_t>());
  throw std::runtime_error(where + ": '" + key + "' must be a non-negative integer");
}

std::string string_field(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) throw std::runtime_error(where + ": '" + key + "' must be a string");
  return it->get<std::string>();
}

// Where a transfer goes: a client for its host, the request target, and its headers.
struct prepared {
  std::unique_ptr<httplib::Client> client;
  std::string target;
  httplib::Headers headers;
};

std::unique_ptr<httplib::Client> client_for(const std::string& scheme_host_port, const std::string& ca_file, int read_timeout) {
  auto c = std::make_unique<httplib::Client>(scheme_host_port);
  if (scheme_host_port.rfind("https://", 0) == 0) {
    c->enable_server_certificate_verification(true);
    if (!ca_file.empty()) c->set_ca_cert_path(ca_file.c_str());
  }
  c->set_connection_timeout(10, 0);
  c->set_read_timeout(read_timeout, 0);
  c->set_write_timeout(60, 0);
  c->set_tcp_nodelay(true);
  c->set_url_encode(false);  // transfer URLs (presigned ones above all) come encoded; re-encoding breaks signatures
  return c;
}

prepared prepare(const link& l, const transfer& t) {
  prepared p;
  for (const auto& [k, v] : t.headers) p.headers.emplace(k, v);
  if (t.absolute()) {
    // A presigned store URL: its own host, and no baton credential.
    auto scheme_end = t.url.find("://") + 3;
    auto path_start = t.url.find('/', scheme_end);
    auto origin = path_start == std::string::npos ? t.url : t.url.substr(0, path_start);
    p.target = path_start == std::string::npos ? "/" : t.url.substr(path_start);
    p.client = client_for(origin, l.store_ca_file, l.read_timeout_seconds);
  } else {
    p.target = t.url;
    p.client = client_for(l.base_url, l.ca_file, l.read_timeout_seconds);
    for (const auto& [k, v] : l.credential) p.headers.emplace(k, v);
  }
  return p;
}

// url with its query's "offset" parameter set to n.
std::string with_offset(const std::string& url, uint64_t n) {
  auto q = url.find('?');
  std::string path = url.substr(0, q), kept;
  if (q != std::string::npos) {
    std::string query = url.substr(q + 1);
    size_t start = 0;
    while (start <= query.size()) {
      auto amp = query.find('&', start);
      auto param = query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
      if (!param.empty() && param.rfind("offset=", 0) != 0) kept += (kept.empty() ? "" : "&") + param;
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
  }
  return path + "?" + (kept.empty() ? "" : kept + "&") + "offset=" + std::to_string(n);
}

std::string path_of(const std::string& url) { return url.substr(0, url.find('?')); }

// What a store or batond answered, for messages.
std::string describe_status(int status, const std::string& body) {
  std::string text = body.substr(0, 300);
  return "HTTP " + std::to_string(status) + (text.empty() ? "" : ": " + text);
}

std::string where_of(const transfer& t) {
  return t.method + " " + (t.absolute() ? path_of(t.url) : t.url) +
         (t.part_number ? " (part " + std::to_string(t.part_number) + ")" : "");
}

bool wait_retry(const link& l, int failures, double at_least = 0) {
  double delay = std::max(worker::backoff_seconds(failures, l.base_seconds, l.max_seconds, worker::retry_jitter()), at_least);
  if (l.sleep) return l.sleep(delay);
  std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  return true;
}

double retry_after_of(const httplib::Result& r) {
  if (!r || r->status != 429) return 0;
  auto v = r->get_header_value("Retry-After");
  if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stod(v);
}

// An HTTP error answer that retrying will not fix: expired, refused or mismatch.
[[noreturn]] void throw_for_status(const transfer& t, int status, const std::string& body) {
  json b = json::parse(body, nullptr, false);
  if (b.is_discarded()) b = body.empty() ? json(nullptr) : json(body);
  auto what = where_of(t) + ": " + describe_status(status, body);
  const std::string code = b.is_object() ? b.value("error", "") : "";
  if (code == "blob_missing") throw transfer_error(failure::refused, what, status, b);  // asking again would not bring it
  if ((t.absolute() && status == 403) || (!t.absolute() && status == 404))
    throw transfer_error(failure::expired, what + " (the transfer expired or is unknown)", status, b);
  if (status == 422) throw transfer_error(failure::mismatch, what, status, b);
  throw transfer_error(failure::refused, what, status, b);
}

bool retryable_status(int status) { return status == 0 || status == 429 || status >= 500; }

// The "offset" an answer of batond's names, if it names one.
std::optional<uint64_t> offset_in(const json& b) {
  if (!b.is_object() || !b.contains("offset") || !b["offset"].is_number_unsigned()) return std::nullopt;
  return b["offset"].get<uint64_t>();
}

}  // namespace

// --- JSON ---

transfer transfer_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": a transfer must be an object");
  transfer t;
  t.url = string_field(j, "url", where);
  if (t.url.empty() || (t.url[0] != '/' && !t.absolute()))
    throw std::runtime_error(where + ": 'url' must be a path on batond or an http(s) URL, got '" + t.url + "'");
  t.method = j.contains("method") ? string_field(j, "method", where) : "GET";
  if (auto h = j.find("headers"); h != j.end() && !h->is_null()) {
    if (!h->is_object()) throw std::runtime_error(where + ": 'headers' must be an object");
    for (const auto& [k, v] : h->items()) {
      if (!v.is_string()) throw std::runtime_error(where + ": header '" + k + "' must be a string");
      t.headers.emplace_back(k, v.get<std::string>());
    }
  }
  t.offset = unsigned_field(j, "offset", where, false);
  t.size = unsigned_field(j, "size", where, false);
  t.part_number = static_cast<int>(std::min<uint64_t>(unsigned_field(j, "part_number", where, false), 1u << 20));
  return t;
}

upload_grant upload_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": an upload must be an object");
  upload_grant u;
  u.upload_id = string_field(j, "upload_id", where);
  u.sha256 = string_field(j, "sha256", where);
  u.size = unsigned_field(j, "size", where, true);
  auto parts = j.find("parts");
  if (parts == j.end() || !parts->is_array()) throw std::runtime_error(where + ": 'parts' must be a list");
  for (size_t i = 0; i < parts->size(); ++i)
    u.parts.push_back(transfer_from_json((*parts)[i], where + ": parts[" + std::to_string(i) + "]"));
  return u;
}

std::string answer::describe() const {
  if (status == 0) return "no answer (" + error + ")";
  return "HTTP " + std::to_string(status) + (body.is_null() ? "" : " " + body.dump());
}

answer call(const link& l, const std::string& method, const std::string& path, const json& body) {
  auto c = client_for(l.base_url, l.ca_file, l.read_timeout_seconds);
  c->set_url_encode(true);
  std::string text = body.is_null() ? "" : body.dump();
  answer a;
  for (int attempt = 1;; ++attempt) {
    httplib::Result r = method == "GET"      ? c->Get(path.c_str(), l.credential)
                        : method == "DELETE" ? c->Delete(path.c_str(), l.credential)
                                             : c->Post(path.c_str(), l.credential, text, "application/json");
    a = answer{};
    if (!r) {
      a.error = httplib::to_string(r.error());
    } else {
      a.status = r->status;
      if (!r->body.empty()) a.body = json::parse(r->body, nullptr, false);
      if (a.body.is_discarded()) a.body = r->body;
    }
    if (!a.retryable() || attempt >= l.attempts) return a;
    double after = a.status == 429 && a.body.is_object() ? a.body.value("retry_after_seconds", 0.0) : retry_after_of(r);
    if (!wait_retry(l, attempt, after)) return a;
  }
}

// --- hashing ---

std::pair<std::string, uint64_t> hash_file(const std::string& path) {
  fd_guard in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) throw transfer_error(failure::local, errno_text("cannot open", path));
  util::sha256_stream h;
  std::unique_ptr<char[]> buf(new char[chunk]);
  uint64_t size = 0;
  while (true) {
    ssize_t n = ::read(in.fd, buf.get(), chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw transfer_error(failure::local, errno_text("cannot read", path));
    if (n == 0) break;
    h.update(buf.get(), static_cast<size_t>(n));
    size += static_cast<uint64_t>(n);
  }
  return {h.hex(), size};
}

// --- download ---

void download(const link& l, const transfer& t, const std::string& sha256, uint64_t size, const std::string& path,
              const progress_fn& progress) {
  fd_guard out{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (out.fd < 0) throw transfer_error(failure::local, errno_text("cannot create", path));
  auto fail_removing = [&](failure k, const std::string& what) -> transfer_error {
    ::unlink(path.c_str());
    return transfer_error(k, what);
  };
  util::sha256_stream h;
  uint64_t have = 0;  // bytes taken, written or in `pending`
  // httplib hands a body over in 4 KiB pieces (Debian builds it with CPPHTTPLIB_RECV_BUFSIZ
  // 4096): a write() for each made a 1 GiB download 1.3 - 1.6x slower than writes of 1 MiB. The
  // pieces gather here; whatever is pending is written before `have` names a resume offset.
  std::string pending;
  pending.reserve(chunk);
  auto flush = [&] {
    if (!worker::write_all(out.fd, pending.data(), pending.size())) return false;
    pending.clear();
    return true;
  };
  auto restart = [&] {  // the bytes so far are not trusted to continue: from the start again
    pending.clear();
    if (::ftruncate(out.fd, 0) != 0 || ::lseek(out.fd, 0, SEEK_SET) != 0) return false;
    h.reset();
    have = 0;
    return true;
  };
  int failures = 0;
  while (true) {
    auto p = prepare(l, t);
    if (have > 0)
      p.headers.emplace("Range", "bytes=" + std::to_string(t.offset + have) + "-" + std::to_string(t.offset + size - 1));
    int status = 0;
    bool from_start = false, too_long = false, write_failed = false;
    std::string error_body;
    const uint64_t before = have;
    auto r = p.client->Get(
        p.target.c_str(), p.headers,
        [&](const httplib::Response& res) {
          status = res.status;
          if (status == 206) {
            // "bytes A-B/C": resume only where we stopped.
            auto cr = res.get_header_value("Content-Range");
            auto dash = cr.find('-');
            auto sp = cr.find(' ');
            uint64_t a = 0;
            try {
              a = std::stoull(cr.substr(sp + 1, dash - sp - 1));
            } catch (...) {
              a = UINT64_MAX;
            }
            if (a != t.offset + have) {
              from_start = true;
              return false;
            }
          } else if (status == 200 && have > 0 && !restart()) {  // the whole blob again (the Range was ignored)
            write_failed = true;
            return false;
          }
          return true;
        },
        [&](const char* d, size_t n) {
          if (status != 200 && status != 206) {
            if (error_body.size() < 4096) error_body.append(d, std::min<size_t>(n, 4096));
            return true;
          }
          if (have + n > size) {
            too_long = true;
            return false;
          }
          pending.append(d, n);
          if (pending.size() >= chunk && !flush()) {
            write_failed = true;
            return false;
          }
          h.update(d, n);
          have += n;
          if (progress) progress(have, size);
          return true;
        });
    if (!write_failed && !flush()) write_failed = true;
    if (write_failed) throw transfer_error(failure::local, errno_text("cannot write", path));
    if (too_long)
      throw fail_removing(failure::mismatch,
                          where_of(t) + ": more than the " + std::to_string(size) + " bytes of blob " + sha256 + " arrived");
    if (r && (status == 200 || status == 206) && have == size) break;
    // batond found the stored bytes do not hash to their digest: no retry brings others.
    if (r && status >= 500 && !t.absolute() && error_body.find("\"blob_damaged\"") != std::string::npos)
      throw fail_removing(failure::mismatch, where_of(t) + ": " + describe_status(status, error_body));
    if ((from_start || (r && status == 416)) && !restart())  // a range the server cannot serve: all of it again
      throw transfer_error(failure::local, errno_text("cannot truncate", path));
    if (r && !retryable_status(status) && !(status >= 200 && status < 300) && status != 416) {
      ::unlink(path.c_str());
      throw_for_status(t, status, error_body);
    }
    // Cut (no answer, or a body shorter than the blob), 5xx or 429: again, from where it stopped.
    if (have > before) failures = 0;
    if (++failures >= l.attempts)
      throw fail_removing(failure::unavailable, where_of(t) + ": " +
                                                    (r ? describe_status(status, error_body) : httplib::to_string(r.error())) +
                                                    " after " + std::to_string(l.attempts) + " attempts (" +
                                                    std::to_string(have) + " of " + std::to_string(size) + " bytes arrived)");
    if (!wait_retry(l, failures, retry_after_of(r))) throw fail_removing(failure::unavailable, where_of(t) + ": given up");
  }
  if (::fsync(out.fd) != 0) throw transfer_error(failure::local, errno_text("cannot fsync", path));
  auto got = h.hex();
  if (got != sha256)
    throw fail_removing(failure::mismatch, "blob " + sha256 + " arrived with sha256 " + got + " (" + where_of(t) + ")");
}

// --- upload ---

// What names a store part in sent_parts; empty for a part that is not of a multipart upload.
static std::string sent_key(const transfer& t) {
  if (t.part_number <= 0 || !t.absolute()) return {};
  const auto q = t.url.find('?');
  std::string upload_id;
  for (size_t at = q; at != std::string::npos && at + 1 < t.url.size(); at = t.url.find('&', at + 1)) {
    const auto end = t.url.find('&', at + 1);
    const std::string pair = t.url.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    if (pair.compare(0, 9, "uploadId=") == 0) upload_id = pair.substr(9);
  }
  if (upload_id.empty()) return {};
  return path_of(t.url) + "?uploadId=" + upload_id + "#" + std::to_string(t.part_number) + "@" + std::to_string(t.offset) + "+" +
         std::to_string(t.size);
}

std::vector<part_etag> upload(const link& l, const upload_grant& u, const std::string& path, const progress_fn& progress,
                              sent_parts* sent) {
  fd_guard in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) throw transfer_error(failure::local, errno_text("cannot open", path));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) throw transfer_error(failure::local, errno_text("cannot stat", path));
  if (static_cast<uint64_t>(st.st_size) != u.size)
    throw transfer_error(failure::local, path + " has " + std::to_string(st.st_size) + " bytes, the upload " + u.upload_id +
                                             " is for " + std::to_string(u.size));
  std::vector<part_etag> etags;
  std::unique_ptr<char[]> buf(new char[chunk]);
  for (const auto& part : u.parts) {
    const uint64_t end = part.offset + part.size;
    if (end > u.size) throw transfer_error(failure::refused, where_of(part) + ": bytes past the end of " + path);
    const std::string key = sent ? sent_key(part) : std::string();
    if (!key.empty()) {
      if (auto done = sent->find(key); done != sent->end()) {
        etags.push_back({part.part_number, done->second});
        if (progress) progress(end, u.size);
        continue;
      }
    }
    uint64_t start = part.offset;
    int failures = 0;
    while (true) {
      auto p = prepare(l, part);
      if (!part.absolute()) p.target = with_offset(part.url, start);
      const uint64_t length = end - start;
      bool read_failed = false;
      auto provider = [&](size_t off, size_t len, httplib::DataSink& sink) {
        size_t want = std::min(len, chunk);
        ssize_t n;
        do n = ::pread(in.fd, buf.get(), want, static_cast<off_t>(start + off));
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
          read_failed = true;
          return false;
        }
        if (!sink.write(buf.get(), static_cast<size_t>(n))) return false;
        if (progress) progress(start + off + static_cast<uint64_t>(n), u.size);
        return true;
      };
      // An empty body goes as one (a provider is never asked for zero bytes).
      httplib::Result r = length == 0 ? (part.method == "POST" ? p.client->Post(p.target.c_str(), p.headers, "", 0, "")
                                                               : p.client->Put(p.target.c_str(), p.headers, "", 0, ""))
                          : part.method == "POST" ? p.client->Post(p.target.c_str(), p.headers, length, provider, "")
                                                  : p.client->Put(p.target.c_str(), p.headers, length, provider, "");
      if (read_failed) throw transfer_error(failure::local, errno_text("cannot read", path));
      if (r && r->status >= 200 && r->status < 300) {
        // batond answers a local PUT {"offset", "complete"}: not complete means bytes are still
        // missing (or held but not verified): go on from the offset it names.
        auto b = part.absolute() ? json() : json::parse(r->body, nullptr, false);
        if (b.is_object() && b.contains("complete") && b["complete"] == false) {
          start = std::clamp<uint64_t>(offset_in(b).value_or(start), part.offset, end);
          if (++failures >= l.attempts)
            throw transfer_error(failure::unavailable,
                                 where_of(part) + ": batond keeps answering incomplete: " + r->body.substr(0, 200));
          continue;
        }
        if (part.part_number > 0) {
          auto etag = r->get_header_value("ETag");
          if (etag.empty()) throw transfer_error(failure::refused, where_of(part) + ": the store answered without an ETag");
          etags.push_back({part.part_number, etag});
          if (!key.empty()) (*sent)[key] = etag;
        }
        break;
      }
      const uint64_t before = start;
      if (r && r->status == 409 && !part.absolute()) {
        // upload_offset: batond holds another number of bytes than we sent from; it names them.
        auto b = json::parse(r->body, nullptr, false);
        std::optional<uint64_t> named;
        if (b.is_object() && b.value("error", "") == "upload_offset") {
          named = offset_in(b);
          if (!named) {  // not in the answer: ask
            auto held = call(l, "GET", path_of(part.url));
            if (held.ok()) named = offset_in(held.body);
          }
        }
        if (named) {
          // From there; when it holds every byte, an empty PUT at the end has them verified.
          start = std::clamp<uint64_t>(*named, part.offset, end);
          if (++failures >= l.attempts)
            throw transfer_error(failure::unavailable, where_of(part) + ": offsets keep disagreeing: " + r->body.substr(0, 200));
          continue;
        }
      }
      // upload_busy: batond has not yet seen the end of our previous, cut connection.
      const bool busy = r && r->status == 409 && !part.absolute() && r->body.find("\"upload_busy\"") != std::string::npos;
      if (r && !busy && !retryable_status(r->status)) throw_for_status(part, r->status, r->body);
      if (part.absolute()) {
        start = part.offset;  // a store part is all or nothing: from its start again
      } else {
        // How much batond holds now: resume from there.
        auto held = call(l, "GET", path_of(part.url));
        if (auto at = held.ok() ? offset_in(held.body) : std::nullopt) {
          start = std::clamp<uint64_t>(*at, part.offset, end);
          if (held.body.value("complete", false)) break;  // (start == end: an empty PUT has them verified)
        } else if (held.status == 404) {
          throw transfer_error(failure::expired,
                               "GET " + path_of(part.url) + ": " + held.describe() + " (the upload expired or is unknown)", 404,
                               held.body);
        }
      }
      if (start > before) failures = 0;
      if (++failures >= l.attempts)
        throw transfer_error(failure::unavailable, where_of(part) + ": " +
                                                       (r ? describe_status(r->status, r->body) : httplib::to_string(r.error())) +
                                                       " after " + std::to_string(l.attempts) + " attempts");
      if (!wait_retry(l, failures, retry_after_of(r))) throw transfer_error(failure::unavailable, where_of(part) + ": given up");
    }
    if (progress) progress(end, u.size);
  }
  return etags;
}

// --- protocol steps ---

namespace {

[[noreturn]] void throw_answer(const std::string& what, const answer& a) {
  throw transfer_error(a.retryable() ? failure::unavailable : failure::refused, what + ": " + a.describe(), a.status, a.body);
}

json etags_json(const std::vector<part_etag>& etags) {
  json parts = json::array();
  for (const auto& e : etags) parts.push_back({{"part_number", e.part_number}, {"etag", e.etag}});
  return parts;
}

}  // namespace

bool store_bundle(const link& l, const std::string& path, const std::string& sha256, uint64_t size, const progress_fn& progress) {
  sent_parts sent;  // across renewals: a part the store holds is not sent again
  for (int renewal = 0;; ++renewal) {
    auto a = call(l, "POST", "/blobs/uploads", {{"purpose", "bundle"}, {"sha256", sha256}, {"size", size}});
    if (!a.ok()) throw_answer("POST /blobs/uploads", a);
    if (a.body.is_object() && a.body.value("status", "") == "stored") return true;
    upload_grant g;
    try {
      g = upload_from_json(a.body, "POST /blobs/uploads's answer");
    } catch (const std::runtime_error& e) {
      throw transfer_error(failure::refused, e.what(), a.status, a.body);
    }
    try {
      auto etags = upload(l, g, path, progress, &sent);
      auto done = call(l, "POST", "/blobs/uploads/" + g.upload_id + "/complete", {{"parts", etags_json(etags)}});
      if (done.ok()) return false;
      if ((done.status != 404 && done.error_code() != "blob_being_removed") || renewal >= max_renewals)
        throw_answer("POST /blobs/uploads/" + g.upload_id + "/complete", done);
    } catch (const transfer_error& e) {
      if (e.kind != failure::expired || renewal >= max_renewals) throw;
    }
  }
}

std::string store_file_set(const link& l, const std::string& job_id, const std::string& kind, int attempt,
                           const std::vector<set_file>& files, const json& extra) {
  std::map<std::string, const set_file*> by_digest;
  json manifest = json::array();
  for (const auto& f : files) {
    manifest.push_back({{"path", f.path}, {"sha256", f.sha256}, {"size", f.size}});
    by_digest[f.sha256] = &f;
  }
  const std::string base = "/jobs/" + job_id + "/files";
  sent_parts sent;  // across renewals (a set lost by batond's restart): parts the store holds stay
  for (int renewal = 0;; ++renewal) {
    json body = extra.is_object() ? extra : json::object();
    body["kind"] = kind;
    body["attempt"] = attempt;
    body["files"] = manifest;
    auto a = call(l, "POST", base, body);
    if (!a.ok()) throw_answer("POST " + base, a);
    if (!a.body.is_object() || !a.body.contains("set_id") || !a.body["set_id"].is_string())
      throw transfer_error(failure::refused, "POST " + base + ": the answer has no set_id: " + a.body.dump().substr(0, 300),
                           a.status, a.body);
    const std::string set_id = a.body["set_id"].get<std::string>();
    std::vector<upload_grant> grants;
    try {
      if (auto ups = a.body.find("uploads"); ups != a.body.end() && !ups->is_null()) {
        if (!ups->is_array()) throw std::runtime_error("POST " + base + ": 'uploads' must be a list");
        for (size_t i = 0; i < ups->size(); ++i)
          grants.push_back(upload_from_json((*ups)[i], "POST " + base + ": uploads[" + std::to_string(i) + "]"));
      }
    } catch (const std::runtime_error& e) {
      throw transfer_error(failure::refused, e.what(), a.status, a.body);
    }
    auto local_of = [&](const upload_grant& g) {
      auto it = by_digest.find(g.sha256);
      if (it == by_digest.end())
        throw transfer_error(failure::refused, "POST " + base + " asked for blob " + g.sha256 + ", which is not in the set");
      return it->second->local;
    };
    try {
      std::vector<std::vector<part_etag>> etags(grants.size());
      for (size_t i = 0; i < grants.size(); ++i) etags[i] = upload(l, grants[i], local_of(grants[i]), {}, &sent);
      for (int commits = 0;; ++commits) {
        json ups = json::array();
        for (size_t i = 0; i < grants.size(); ++i)
          ups.push_back({{"upload_id", grants[i].upload_id}, {"parts", etags_json(etags[i])}});
        auto c = call(l, "POST", base + "/" + set_id + "/commit", {{"uploads", ups}});
        if (c.ok()) return set_id;
        // The set is gone (404: batond restarted, or it expired), or a blob of it raced the
        // collector (409 blob_being_removed: its bytes are wanted again): post it again.
        if ((c.status == 404 || c.error_code() == "blob_being_removed") && renewal < max_renewals) break;
        if (c.status != 409 || c.error_code() != "upload_incomplete" || commits >= max_renewals)
          throw_answer("POST " + base + "/" + set_id + "/commit", c);
        // Send again what batond lacks: the upload it names, else all (a complete local upload
        // costs one GET; its answer says it is whole).
        std::string named = c.body.is_object() ? c.body.value("sha256", c.body.value("upload_id", "")) : "";
        for (size_t i = 0; i < grants.size(); ++i)
          if (named.empty() || named == grants[i].sha256 || named == grants[i].upload_id) {
            for (const auto& part : grants[i].parts) sent.erase(sent_key(part));  // the store lacks some: all again
            etags[i] = upload(l, grants[i], local_of(grants[i]), {}, &sent);
          }
      }
    } catch (const transfer_error& e) {
      if (e.kind != failure::expired || renewal >= max_renewals) throw;
    }
  }
}

json job_files(const link& l, const std::string& job_id) {
  auto a = call(l, "GET", "/jobs/" + job_id + "/files");
  if (!a.ok()) throw_answer("GET /jobs/" + job_id + "/files", a);
  if (!a.body.is_object())
    throw transfer_error(failure::refused, "GET /jobs/" + job_id + "/files: not a JSON object", a.status, a.body);
  return a.body;
}

void download_listed(const link& l, const std::string& job_id, const json& entry, const std::function<json(const json&)>& pick,
                     const std::string& path, const progress_fn& progress) {
  json e = entry;
  for (int renewal = 0;; ++renewal) {
    const std::string what = e.is_object() && e.contains("path") && e["path"].is_string() ? e["path"].get<std::string>() : "blob";
    transfer t;
    std::string sha;
    uint64_t size = 0;
    try {
      if (!e.is_object()) throw std::runtime_error("not an object");
      sha = string_field(e, "sha256", what);
      size = unsigned_field(e, "size", what, true);
      t = transfer_from_json(e.contains("download") ? e["download"] : json(), what + ": download");
    } catch (const std::runtime_error& err) {
      throw transfer_error(failure::refused, "GET /jobs/" + job_id + "/files: " + err.what());
    }
    try {
      download(l, t, sha, size, path, progress);
      return;
    } catch (const transfer_error& err) {
      if (err.kind != failure::expired || renewal >= max_renewals) throw;
    }
    e = pick(job_files(l, job_id));
    if (e.is_null()) throw transfer_error(failure::refused, "GET /jobs/" + job_id + "/files no longer lists " + what);
  }
}

}  // namespace baton::xfer
