// Fuzz target: one HTTP/1.1 request as bytes, through what batond does before
// any actor sees it: Beast's parser with the server's limits, the conversion
// into batond's request (path and query decoding), route matching against
// batond's path patterns, and every builder that turns a request into a typed
// command. Each builder must either build its command or throw invalid_field (a
// 422 naming the field); anything else is a bug.
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "http/beast_message.hpp"
#include "http/request_commands.hpp"
#include "http/request_parsing.hpp"
#include "http/router.hpp"

namespace {

using namespace baton::http;
namespace b = baton::http::build;

// The shapes of batond's routes (http/api_routes.cpp, http/ui_routes.cpp) that
// have groups.
const router& routes() {
  static router r = [] {
    router x;
    auto none = [](const request&, response&) {};
    for (const char* p : {R"(/jobs/([^/]+))", R"(/jobs/([^/]+)/history)", R"(/jobs/([^/]+)/control)",
                          R"(/jobs/([^/]+)/checkpoint)", R"(/jobs/([^/]+)/fail)", R"(/workers/([^/]+)/heartbeat)",
                          R"(/config/slurm-clusters/([^/]+)/enable)", R"(/ui/([A-Za-z0-9][A-Za-z0-9._-]*))"}) {
      x.Get(p, none);
      x.Post(p, none);
    }
    x.Get("/jobs", none);
    x.Post("/jobs", none);
    return x;
  }();
  return r;
}

template <class F>
void expect_422_or_ok(F&& f) {
  try {
    f();
  } catch (const invalid_field& e) {
    if (e.field.empty()) std::abort();  // a 422 must name the field
    // as batond sends it (http/json_reply.hpp): invalid UTF-8 the client sent is replaced
    (void)validation_body(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  boost::beast::http::request_parser<boost::beast::http::string_body> parser;
  parser.header_limit(16 * 1024);  // batond's defaults (limits.max_header_bytes, max_body_bytes)
  parser.body_limit(1024 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;  // the server answers 400 and closes
  request req = from_beast(parser.release(), "127.0.0.1");
  const router::route* matched = routes().match(req);
  if (matched && !matched->pattern.empty() && req.path_params.empty() && !matched->literal) std::abort();
  expect_422_or_ok([&] { b::create_job(req, "3f2c1b9e-5a4d-4c3b-9a8f-7e6d5c4b3a21"); });
  expect_422_or_ok([&] { b::list_jobs(req); });
  expect_422_or_ok([&] { b::prune_jobs(req); });
  expect_422_or_ok([&] { b::list_workers(req); });
  expect_422_or_ok([&] { b::clusters_enabled(req); });
  expect_422_or_ok([&] { b::create_operator(req, std::string(64, 'a')); });
  expect_422_or_ok([&] { b::audit_export(req); });
  expect_422_or_ok([&] { b::register_worker(req, "3f2c1b9e-5a4d-4c3b-9a8f-7e6d5c4b3a22", std::string(64, 'b')); });
  expect_422_or_ok([&] { b::request_job(req); });
  expect_422_or_ok([&] { b::rotate_pilot_token(req, std::string(64, 'c'), {std::string(64, 'd'), false}); });
  if (!req.path_params.empty()) {
    expect_422_or_ok([&] { b::path_uuid(req); });
    expect_422_or_ok([&] { b::path_name(req); });
    expect_422_or_ok([&] { b::heartbeat(req); });
    expect_422_or_ok([&] { b::cluster_enabled(req, true); });
    auto fill_a = [&](auto command) { expect_422_or_ok([&] { b::fill(req, command); }); };
    fill_a(baton::core::commands::checkpoint_job{});
    fill_a(baton::core::commands::fail_job{});
    fill_a(baton::core::commands::handoff_start{});
    fill_a(baton::core::commands::handoff_complete{});
  }
  return 0;
}
