#pragma once
// Which pilot token batond accepts right now (core::pilot_accepts over the configured token
// and the rotations the log recorded), for the HTTP layer to tell a pilot from anyone else
// before it reads a request. Written in step by the scheduler, like operator_credentials, so
// the first registration with a freshly rotated token is recognised.
#include <shared_mutex>
#include <string>

#include "core/access/pilot_token.hpp"
#include "core/world/world.hpp"

namespace baton::caches {

class pilot_credential {
 public:
  explicit pilot_credential(core::pilot_configured configured) : configured_(std::move(configured)) {}

  bool accepts(const std::string& presented_sha256, core::time_us now) const;
  const core::pilot_configured& configured() const { return configured_; }

  void rebuild(const core::world& w);

 private:
  const core::pilot_configured configured_;
  mutable std::shared_mutex m_;
  core::rotating_secret recorded_;
};

}  // namespace baton::caches
