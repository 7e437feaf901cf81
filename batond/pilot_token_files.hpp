#pragma once
// Where batond keeps the pilot token it manages (no BATON_PILOT_TOKEN): <data_dir>/pilot_token
// (what Salad containers are given; Slurm pilots have one-time credentials of their own). A
// rotation writes the new secret aside first
// (pilot_token.next), is decided and made durable, and only then puts it in place; at start,
// a secret left aside is put in place if the log recorded its rotation and dropped if not.
#include <string>

#include "core/access/credential.hpp"

namespace baton::daemon {

class pilot_token_files {
 public:
  explicit pilot_token_files(const std::string& data_dir);

  // At start, before the token is read: settles a rotation a stop interrupted.
  void settle(const core::rotating_secret& recorded) const;
  void stage(const std::string& secret) const;  // throws naming the file if it cannot
  void commit() const;                          // logs (does not throw) if it cannot
  void discard() const;

 private:
  std::string token_path_, next_path_;
};

}  // namespace baton::daemon
