#pragma once
// Fair Tree's fair-share factors (core/policy/fair_tree.hpp) for a tree of two levels, accounts under
// the root and users under them, whose usage is decayed (core/policy/usage.hpp) to the time asked,
// without decaying every user's usage and ranking every user at each asking.
//
// Why: the trace simulator recalculates priorities ~100,000 times over ~2,000 users, and only
// the users with waiting jobs need a factor. A factor is rank / users, an integer's share, and
// a rank only depends on the order of Level FS values, which decay does not change: every
// user's closed usage shrinks by the same factor. So each user's usage is kept as a logarithm
// normalised to time zero (log2 usage + as_of / half-life), an account's likewise; an account
// without running jobs keeps its sort key from one asking to the next, and the accounts stay
// sorted from the last asking (an insertion sort moves the few that changed).
//
// The answer must be fair_tree()'s to the last bit, while these keys are not its figures: a
// comparison is trusted only when the two keys differ by far more than both computations'
// rounding (see margin() in the .cpp). When a waiting user's account or the user itself is that
// close to another (a near or exact tie), or usage has decayed near the end of double's range,
// fair_shares() returns false and the caller ranks the whole tree with fair_tree(). Exact ties
// it settles itself: accounts without usage (Level FS infinite, ranked first, their users
// merged and tied) and users without usage or without shares.
#include <cstdint>
#include <vector>

#include "core/events/domain.hpp"

namespace baton::core {

class decayed_fair_tree {
 public:
  explicit decayed_fair_tree(time_us half_life);

  uint32_t add_account(uint32_t raw_shares);                 // its index, from 0
  uint32_t add_user(uint32_t account, uint32_t raw_shares);  // its index, from 0 (users of all accounts)
  // A user's usage without its running jobs: `usage` GPU-seconds as of `as_of`, to be decayed
  // from there (what core::decay carries forward as segments close).
  void set_closed(uint32_t user, double usage, time_us as_of);

  struct open_segment {
    uint32_t user = 0;
    int64_t gpus = 0;
    time_us start = 0;
  };
  // The fair-share factor at `now` of each user in `wanted` (distinct users), into
  // fair_share[user] (resized to the users' count), as fair_tree() gives it for the tree whose
  // users' raw usage is decay(closed, as_of, max(as_of, now)) (0 when closed is 0) plus each
  // open segment's decayed_gpu_seconds(gpus, start, now, now). False when that could not be
  // certified (see above): fair_share then holds nothing meaningful.
  bool fair_shares(time_us now, const std::vector<open_segment>& open, const std::vector<uint32_t>& wanted,
                   std::vector<double>& fair_share);

 private:
  struct user {
    uint32_t account = 0;
    uint32_t raw_shares = 1;
    double key = 0;       // log2(closed usage) + as_of / half-life; -inf without closed usage
    double open = 0;      // this asking's open segments (scratch)
    uint32_t stamp = 0;   // the asking that last touched `open`
    double rank_key = 0;  // this asking's: log2 shares - log2 usage (scratch)
  };
  struct account {
    uint32_t raw_shares = 1;
    std::vector<uint32_t> users;
    double closed_key = 0;    // log2 of the users' closed usage summed, normalised as theirs
    double key = 0;           // this asking's log2 usage, normalised; -inf without usage
    double order_key = 0;     // what the ranking sorts on, highest first: log2 shares - key
    bool dirty = true;        // closed_key to compute again
    uint32_t live_stamp = 0;  // the asking whose open segments it has
    uint32_t before = 0;      // users ranked before its own (this asking)
    uint32_t pos = 0;         // its place in order_ (this asking)
    double open = 0;
  };

  double now_key(const user& u, double t) const;
  double recompute_account(account& a, double t, bool live);

  time_us half_life_;
  std::vector<user> users_;
  std::vector<account> accounts_;
  std::vector<uint32_t> order_;  // accounts, in the last asking's ranking order
  std::vector<uint32_t> live_, was_live_, dirty_;
  std::vector<double> keys_;      // scratch: one account's users' keys
  std::vector<uint32_t> wanted_;  // scratch: the wanted users by account
  uint32_t stamp_ = 0;
  time_us max_as_of_ = 0;
};

}  // namespace baton::core
