#include "http/router.hpp"

#include <atomic>
#include <stdexcept>

namespace baton::http {

namespace {
// The exception being handled, as a 500 through the exception handler.
response failed(const exception_handler& on_exception, const request& req) {
  response res;
  res.status = 500;
  if (on_exception) on_exception(req, res, std::current_exception());
  return res;
}
}  // namespace

router& router::add(const std::string& method, const std::string& pattern, blocking_handler b, async_handler a) {
  auto r = std::make_unique<route>();
  r->method = method;
  r->pattern = pattern;
  r->literal = pattern.find_first_of("()[]*+?.\\^$|{}") == std::string::npos;
  if (!r->literal) r->re = std::regex(pattern);
  r->blocking = std::move(b);
  r->async = std::move(a);
  if (r->literal) literal_.emplace(method + " " + pattern, r.get());
  routes_.push_back(std::move(r));
  return *this;
}

router& router::upload(const std::string& method, const std::string& pattern, upload_handler h) {
  add(method, pattern, nullptr, nullptr);
  routes_.back()->upload = std::move(h);
  upload_methods_.push_back(method);
  return *this;
}

bool router::has_upload(const std::string& method) const {
  for (const auto& m : upload_methods_)
    if (m == method) return true;
  return false;
}

upload_start router::run_upload(const route& r, const request& head) const {
  upload_start s;
  try {
    s = r.upload(head);
    if (!s.refusal && !s.sink) throw std::logic_error("an upload route answered neither a refusal nor a sink");
  } catch (...) {
    s.sink.reset();
    s.refusal = failed(on_exception_, head);
  }
  if (s.refusal) finish(head, *s.refusal);
  return s;
}

const router::route* router::match(request& req) const {
  if (auto it = literal_.find(req.method + " " + req.path); it != literal_.end()) {
    req.path_params.clear();
    return it->second;
  }
  std::smatch m;  // iterators into req.path: copied out before anything can move the request
  for (const auto& r : routes_)
    if (!r->literal && r->method == req.method && std::regex_match(req.path, m, r->re)) {
      req.path_params.clear();
      for (size_t i = 1; i < m.size(); ++i) req.path_params.push_back(m[i].str());
      return r.get();
    }
  return nullptr;
}

void router::finish(const request& req, response& res) const {
  if (res.status == -1) res.status = 200;
  if (res.status >= 400 && res.body.empty() && on_error_) {
    try {
      on_error_(req, res);
    } catch (...) {  // the error handler must not become the error
      res.set_content(R"({"error":"http_error","message":"request failed"})", "application/json");
    }
  }
}

void router::run_blocking(const route& r, const request& req, response& res) const {
  try {
    r.blocking(req, res);
  } catch (...) {
    res = failed(on_exception_, req);
  }
  finish(req, res);
}

void router::run_async(const route& r, const request& req, respond_fn respond) const {
  // Shared so that an exception after the handler has already answered does not answer twice.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto once = [answered, respond, this, method = req.method, path = req.path](response res) {
    if (answered->exchange(true)) return;
    if (res.render) return respond(std::move(res));  // (rendered on the I/O thread, with a status)
    if (res.status == -1) res.status = 200;
    if (res.status >= 400 && res.body.empty()) {  // the error handler needs the request line only
      request line;
      line.method = method;
      line.path = path;
      finish(line, res);
    }
    respond(std::move(res));
  };
  try {
    r.async(req, once);
  } catch (...) {
    if (answered->load()) return;
    once(failed(on_exception_, req));
  }
}

response router::not_found(const request& req) const {
  response res;
  res.status = 404;
  finish(req, res);
  return res;
}

}  // namespace baton::http
