#pragma once
// The daemon's route table over batond's own request/response (http/message.hpp), served by
// the HTTP server.
//
// Two kinds of route:
// - blocking: fn(req, res), run on the server's handler pool; may wait on actors.
// - async: fn(req, respond), run on the event loop itself; must not block. It answers by
//   calling respond(res) exactly once, from any thread, now or later (e.g. from the
//   scheduler once a decision is durable), so no thread is parked while a reply is pending.
// - upload: fn(head) on the handler pool, with the head alone (req.body empty), before any
//   body byte is read: a refusal, or a sink the body is streamed into (http/body_transfer.hpp).
//   Only these routes take bodies over the server's max_body_bytes.
#include "http/body_transfer.hpp"
#include "http/message.hpp"

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace baton::http {

using respond_fn = std::function<void(response)>;
using blocking_handler = std::function<void(const request&, response&)>;
using async_handler = std::function<void(const request&, respond_fn)>;
using upload_handler = std::function<upload_start(const request& head)>;
// Runs after a handler that left status >= 400 with an empty body (e.g. 404 no route).
using error_handler = std::function<void(const request&, response&)>;
using exception_handler = std::function<void(const request&, response&, std::exception_ptr)>;

class router {
 public:
  router& Get(const std::string& pattern, blocking_handler h) { return add("GET", pattern, std::move(h), nullptr); }
  router& Post(const std::string& pattern, blocking_handler h) { return add("POST", pattern, std::move(h), nullptr); }
  router& Put(const std::string& pattern, blocking_handler h) { return add("PUT", pattern, std::move(h), nullptr); }
  router& Delete(const std::string& pattern, blocking_handler h) { return add("DELETE", pattern, std::move(h), nullptr); }
  router& async(const std::string& method, const std::string& pattern, async_handler h) {
    return add(method, pattern, nullptr, std::move(h));
  }
  router& upload(const std::string& method, const std::string& pattern, upload_handler h);
  // Whether some upload route takes this method (the server looks for one only then).
  bool has_upload(const std::string& method) const;
  void set_error_handler(error_handler h) { on_error_ = std::move(h); }
  void set_exception_handler(exception_handler h) { on_exception_ = std::move(h); }

  struct route {
    std::string method;
    std::string pattern;
    bool literal = false;  // no regex syntax: compared as a string
    std::regex re;
    blocking_handler blocking;
    async_handler async;
    upload_handler upload;
  };

  // The route for req (method + path), with req.path_params filled (owned copies of the
  // pattern's groups); nullptr when none matches.
  // Literal paths are looked up first; patterns are tried in the order they were added.
  const route* match(request& req) const;

  // Runs a blocking handler with the error and exception handlers around it.
  void run_blocking(const route& r, const request& req, response& res) const;
  // Runs an upload route's opener; an exception becomes the refusal.
  upload_start run_upload(const route& r, const request& head) const;
  // Runs an async handler; an exception thrown before it answered becomes the response.
  void run_async(const route& r, const request& req, respond_fn respond) const;
  // The answer when no route matches (404 through the error handler).
  response not_found(const request& req) const;
  // Applies the error handler to a finished response (status >= 400, empty body).
  void finish(const request& req, response& res) const;

 private:
  router& add(const std::string& method, const std::string& pattern, blocking_handler b, async_handler a);
  std::vector<std::unique_ptr<route>> routes_;
  std::unordered_map<std::string, const route*> literal_;  // "METHOD path" -> route
  std::vector<std::string> upload_methods_;
  error_handler on_error_;
  exception_handler on_exception_;
};

}  // namespace baton::http
