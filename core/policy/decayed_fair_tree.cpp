#include "core/policy/decayed_fair_tree.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/policy/usage.hpp"

namespace baton::core {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// log2(2^a + 2^b), either may be -inf.
double log2_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -inf) return a;
  return a + std::log1p(std::exp2(b - a)) / std::log(2.0);
}

// How far apart two keys (log2 units) must be for fair_tree()'s Level FS values to fall in
// the same order, strictly. fair_tree() sees each usage through a decay whose exponent
// (at most ~1,100 half-lives here, see the range guards) carries a relative error of
// 2^-53 of itself, sums of up to 2^24 positive terms, and two divisions; the keys carry
// the rounding of log2 and of as_of / half-life (|t| plus a little). All of it stays below
// 1e-10 in log2 units at 2^24 users and |t| up to 1e6 half-lives: the margin is a hundred
// times that, still far below any difference that real usage figures show.
double margin(double t) { return 1e-8 + 1e-14 * std::fabs(t); }

// Level FS values of double's normal range: usages within 2^1000 of one another (and of 1).
constexpr double range = 1000;

}  // namespace

decayed_fair_tree::decayed_fair_tree(time_us half_life) : half_life_(half_life) {}

uint32_t decayed_fair_tree::add_account(uint32_t raw_shares) {
  const auto a = static_cast<uint32_t>(accounts_.size());
  accounts_.emplace_back();
  accounts_.back().raw_shares = raw_shares;
  order_.push_back(a);
  dirty_.push_back(a);
  return a;
}

uint32_t decayed_fair_tree::add_user(uint32_t account, uint32_t raw_shares) {
  const auto u = static_cast<uint32_t>(users_.size());
  users_.emplace_back();
  users_.back().account = account;
  users_.back().raw_shares = raw_shares;
  users_.back().key = -inf;
  accounts_[account].users.push_back(u);
  return u;
}

void decayed_fair_tree::set_closed(uint32_t u, double usage, time_us as_of) {
  auto& x = users_[u];
  x.key = usage > 0 && half_life_ > 0 ? std::log2(usage) + static_cast<double>(as_of) / static_cast<double>(half_life_) : -inf;
  max_as_of_ = std::max(max_as_of_, as_of);
  auto& a = accounts_[x.account];
  if (!a.dirty) {
    a.dirty = true;
    dirty_.push_back(x.account);
  }
}

// A user's key at this asking: its closed usage's with its open segments added.
double decayed_fair_tree::now_key(const user& u, double t) const {
  if (u.stamp != stamp_ || u.open <= 0) return u.key;
  return log2_add(u.key, std::log2(u.open) + t);
}

// The account's key and sort key at this asking (its closed key again first when dirty).
double decayed_fair_tree::recompute_account(account& a, double t, bool live) {
  if (a.dirty) {
    a.dirty = false;
    double top = -inf;
    for (uint32_t u : a.users) top = std::max(top, users_[u].key);
    double sum = 0;
    if (top != -inf)
      for (uint32_t u : a.users) sum += std::exp2(users_[u].key - top);
    a.closed_key = top == -inf ? -inf : top + std::log2(sum);
  }
  a.key = live && a.open > 0 ? log2_add(a.closed_key, std::log2(a.open) + t) : a.closed_key;
  // Level FS = shares / usage (either normalised by its siblings' sum, the same for all):
  // no shares ranks last (0), no usage first (infinite), as fair_tree's level_fs_of has it.
  a.order_key = a.raw_shares == 0 ? -inf : a.key == -inf ? inf : std::log2(static_cast<double>(a.raw_shares)) - a.key;
  return a.key;
}

bool decayed_fair_tree::fair_shares(time_us now, const std::vector<open_segment>& open, const std::vector<uint32_t>& wanted,
                                    std::vector<double>& fair_share) {
  fair_share.resize(users_.size());
  if (half_life_ <= 0 || max_as_of_ > now || users_.size() >= (1u << 24)) return false;
  ++stamp_;
  const double t = static_cast<double>(now) / static_cast<double>(half_life_);
  const double delta = margin(t);

  // Open segments: each user's and each account's this asking.
  live_.clear();
  for (const auto& s : open) {
    const double v = decayed_gpu_seconds(static_cast<int>(s.gpus), s.start, now, now, half_life_);
    auto& u = users_[s.user];
    if (u.stamp != stamp_) u.stamp = stamp_, u.open = 0;
    u.open += v;
    auto& a = accounts_[u.account];
    if (a.live_stamp != stamp_) a.live_stamp = stamp_, a.open = 0, live_.push_back(u.account);
    a.open += v;
  }
  // Sort keys again only where they moved: accounts with open segments now or at the last
  // asking, and accounts whose closed usage changed.
  for (uint32_t a : dirty_) recompute_account(accounts_[a], t, accounts_[a].live_stamp == stamp_);
  for (uint32_t a : was_live_) recompute_account(accounts_[a], t, accounts_[a].live_stamp == stamp_);
  for (uint32_t a : live_) recompute_account(accounts_[a], t, true);
  dirty_.clear();
  was_live_.swap(live_);

  // The accounts by sort key, highest first, from the last asking's order (insertion sort:
  // few moved; ties in any order, since a tie is settled below or refused).
  for (size_t i = 1; i < order_.size(); ++i) {
    const uint32_t x = order_[i];
    const double k = accounts_[x].order_key;
    size_t j = i;
    for (; j > 0 && accounts_[order_[j - 1]].order_key < k; --j) order_[j] = order_[j - 1];
    order_[j] = x;
  }
  // Users ranked before each account's, and usage inside double's range everywhere.
  double low = inf, high = -inf;
  uint32_t before = 0, free_users = 0;  // free_users: users with shares in accounts without usage
  for (uint32_t i = 0; i < order_.size(); ++i) {
    auto& a = accounts_[order_[i]];
    a.before = before;
    a.pos = i;
    before += static_cast<uint32_t>(a.users.size());
    if (a.key != -inf) {
      low = std::min(low, a.key);
      high = std::max(high, a.key);
    } else if (a.raw_shares > 0) {
      for (uint32_t u : a.users) free_users += users_[u].raw_shares > 0;
    }
  }
  if (high != -inf && (low - t < -range || high - t > range || high - low + std::log2(order_.size()) > range)) return false;

  // Each wanted user's rank: the users ranked before its account, then those before it in
  // its account. Wanted users are taken account by account.
  const auto n = static_cast<uint32_t>(users_.size());
  wanted_.assign(wanted.begin(), wanted.end());
  std::sort(wanted_.begin(), wanted_.end(), [&](uint32_t x, uint32_t y) {
    return users_[x].account != users_[y].account ? users_[x].account < users_[y].account : x < y;
  });
  for (size_t i = 0; i < wanted_.size();) {
    const uint32_t id = users_[wanted_[i]].account;
    size_t end = i;
    while (end < wanted_.size() && users_[wanted_[end]].account == id) ++end;
    const account& a = accounts_[id];
    if (a.order_key == -inf) return false;  // no shares: tied at Level FS 0 with any like it
    if (a.order_key == inf) {
      // Accounts without usage tie at the top and their users are ranked together: those
      // with shares tied first (Level FS infinite), then those without (0), tied too.
      for (; i < end; ++i) {
        const uint32_t w = wanted_[i];
        fair_share[w] = static_cast<double>(users_[w].raw_shares > 0 ? n : n - free_users) / static_cast<double>(n);
      }
      continue;
    }
    // Clearly below the account before it and above the one after it: not tied, and its
    // place the same in fair_tree()'s order.
    if (a.pos > 0 && !(accounts_[order_[a.pos - 1]].order_key - a.order_key > delta)) return false;
    if (a.pos + 1 < order_.size() && !(a.order_key - accounts_[order_[a.pos + 1]].order_key > delta)) return false;
    keys_.clear();
    for (uint32_t v : a.users) {
      auto& x = users_[v];
      if (x.raw_shares == 0) {
        x.rank_key = -inf;  // Level FS 0
      } else {
        const double k = now_key(x, t);
        if (k == -inf) {
          x.rank_key = inf;  // no usage: Level FS infinite
        } else {
          if (k - t < -range || k - a.key < -range) return false;
          x.rank_key = std::log2(static_cast<double>(x.raw_shares)) - k;
        }
      }
      keys_.push_back(x.rank_key);
    }
    std::sort(keys_.begin(), keys_.end(), std::greater<>());
    for (; i < end; ++i) {
      const uint32_t w = wanted_[i];
      const double k = users_[w].rank_key;
      // Users with a higher Level FS walk first; equal infinite or zero ones share the rank
      // of the first of them, which is this count's too.
      const auto above = static_cast<uint32_t>(std::lower_bound(keys_.begin(), keys_.end(), k, std::greater<>()) - keys_.begin());
      if (std::isfinite(k)) {
        const auto near_from = std::lower_bound(keys_.begin(), keys_.end(), k + delta, std::greater<>());
        const auto near_to = std::upper_bound(keys_.begin(), keys_.end(), k - delta, std::greater<>());
        if (near_to - near_from != 1) return false;  // another user as close as rounding could bring
      }
      fair_share[w] = static_cast<double>(n - a.before - above) / static_cast<double>(n);
    }
  }
  return true;
}

}  // namespace baton::core
