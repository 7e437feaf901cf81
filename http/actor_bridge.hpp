#pragma once
// Blocking request from an HTTP handler thread to an actor: spawn a short-lived actor that
// asks with an infinite CAF timeout, and wait on a future with our own deadline
// (the fastest bridge measured; no stale CAF timeouts to discard).
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace baton::http {

template <class Result>
struct bridge_reply {
  std::optional<Result> value;
  std::string error;  // set when value is empty: the actor's error or "timed out"
};

template <class Result, class Handle, class... Ts>
bridge_reply<Result> ask(caf::actor_system& sys, const Handle& target, std::chrono::milliseconds deadline, Ts... args) {
  auto promise = std::make_shared<std::promise<bridge_reply<Result>>>();
  auto future = promise->get_future();
  sys.spawn([=](caf::event_based_actor* self) {
    self->request(target, caf::infinite, args...)
        .then(
            [=](Result& r) {
              promise->set_value(bridge_reply<Result>{std::move(r), {}});
            },
            [=](caf::error& e) {
              promise->set_value(bridge_reply<Result>{std::nullopt, self->system().render(e)});
            });
  });
  if (future.wait_for(deadline) != std::future_status::ready) return {std::nullopt, "timed out"};
  return future.get();
}

}  // namespace baton::http
