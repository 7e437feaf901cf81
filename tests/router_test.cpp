// The router hands each route its path parameters as owned strings. It used to keep
// std::smatch iterators into the request's path; the request was then moved into a pool
// task, and for paths short enough to sit in the string's inline buffer the iterators
// pointed into the moved-from object: one job's data was served for another. These tests
// move and destroy the original request before the parameters are read (ASan sees any
// dangling read), and hammer a real batond with short names from two threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "http/router.hpp"
#include "support/batond_process.hpp"

using namespace baton;
using nlohmann::json;

TEST(router, PathParametersOutliveTheMatchedRequest) {
  http::router r;
  r.Get(R"(/jobs/([^/]+)/history)",
        [](const http::request& req, http::response& res) { res.set_content(req.path_params.at(0), "text/plain"); });
  std::vector<std::function<std::string()>> tasks;
  for (std::string id : {"a", "b", "c1", "short-id-15char"}) {
    auto req = std::make_unique<http::request>();
    req->method = "GET";
    req->path = "/jobs/" + id + "/history";
    const auto* route = r.match(*req);
    ASSERT_NE(route, nullptr);
    // As the server does: the request moves into a task that runs later, elsewhere.
    tasks.push_back([&r, route, moved = std::move(*req)] {
      http::response res;
      r.run_blocking(*route, moved, res);
      return res.body;
    });
    req.reset();  // the original (and its inline buffer) is gone
    std::string out;
    std::thread t([&] { out = tasks.back()(); });
    t.join();
    EXPECT_EQ(out, id);
  }
}

TEST(router, LiteralRoutesClearParametersOfAnEarlierMatch) {
  http::router r;
  r.Get("/clusters", [](const http::request& req, http::response& res) {
    res.set_content(std::to_string(req.path_params.size()), "text/plain");
  });
  http::request req;
  req.method = "GET";
  req.path = "/clusters";
  req.path_params = {"left over"};
  const auto* route = r.match(req);
  ASSERT_NE(route, nullptr);
  EXPECT_TRUE(req.path_params.empty());
}

// End to end: two clients ask about short names at once; every answer names its own.
TEST(router, ConcurrentRequestsWithShortIdsEachGetTheirOwnAnswer) {
  test::temp_dir dir;
  test::batond_process d(dir, "");
  ASSERT_GT(d.port(), 0) << d.err();
  std::atomic<int> wrong{0}, answered{0};
  auto client = [&](const std::string& name) {
    auto c = d.client();
    for (int i = 0; i < 200; ++i) {
      auto res = c->Post(("/clusters/" + name + "/enable").c_str(), "{}", "application/json");
      if (!res) continue;
      ++answered;
      auto body = json::parse(res->body, nullptr, false);
      if (res->status != 404 || body.value("id", "") != name) ++wrong;
    }
  };
  std::thread a(client, "a"), b(client, "b");
  a.join();
  b.join();
  EXPECT_EQ(answered.load(), 400);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(d.stop(), 0) << d.err();
}
