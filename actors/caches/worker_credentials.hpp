#pragma once
// Which credential each registered worker holds (the SHA-256 of its token; the token itself
// is never stored), so the HTTP layer can tell who is calling before it reads a request.
// A worker that is gone (deregistered, reaped, replaced) has no credential: its token is 401,
// as a forged one, also after a restart; the worker registers again.
//
// Written in step by the scheduler, not fed from the log like chain_anchor: a worker's first
// call after registering must be recognised, and a log-fed view would apply the
// registration only after the projection actor got its batch, a moment after the reply went
// out (a 401 window). The scheduler refreshes the workers a step touched, from its world,
// before that step's replies. Rebuilt at start-up from the world recovered from the log.
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/access/credential.hpp"
#include "core/events/domain.hpp"
#include "core/world/world.hpp"

namespace baton::caches {

class worker_credentials {
 public:
  // True when worker_id is registered and secret_sha256 is its credential, or the one it
  // replaced before that one's deadline (core::accepts; constant time).
  bool verify(const std::string& worker_id, const std::string& secret_sha256, core::time_us now) const;
  // True when placeholder_id is a live placeholder whose one-time registration credential
  // hashes to secret_sha256 (constant time). Gone once the placeholder is adopted or ended.
  bool verify_registration(const std::string& placeholder_id, const std::string& secret_sha256) const;

  // Scheduler side: everything at start-up, then the workers a step touched (as the idle
  // view: their state is read from the world, never from event payloads a second time).
  void rebuild(const core::world& w);
  void update(const core::world& w, const std::vector<std::string>& touched);

 private:
  mutable std::shared_mutex m_;
  std::unordered_map<std::string, core::rotating_secret> by_worker_;          // lookups only, never iterated
  std::unordered_map<std::string, std::string> registration_by_placeholder_;  // likewise
};

}  // namespace baton::caches
