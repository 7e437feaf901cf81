#pragma once
// Which token each named operator holds (its SHA-256; the token itself is never stored) and
// their role, so the HTTP layer can tell who is calling before it reads a request. Revoked
// operators have no entry: their token is refused (401) from the step that revoked it.
// Written in step by the scheduler, like worker_credentials, for the same reason: the first
// call with a new token must be recognised.
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/world/world.hpp"

namespace baton::caches {

class operator_credentials {
 public:
  struct who {
    std::string name;
    bool admin = false;
  };
  // The operator when name is a live operator and secret_sha256 their token's hash, or the
  // hash of the token it replaced before that one's deadline (core::accepts; constant time).
  std::optional<who> verify(const std::string& name, const std::string& secret_sha256, core::time_us now) const;

  void rebuild(const core::world& w);
  void update(const core::world& w, const std::vector<std::string>& names);

 private:
  struct entry {
    core::rotating_secret token;
    bool admin = false;
  };
  mutable std::shared_mutex m_;
  std::unordered_map<std::string, entry> by_name_;  // lookups only, never iterated
};

}  // namespace baton::caches
