// The priority math, each formula against values worked out by hand: Fair Tree (Level FS,
// ranking, Slurm's three tie rules), decayed GPU-seconds, Slurm's multifactor priority
// under GWDG's weights, and Lattice's composite score for each weight profile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "core/policy/decayed_fair_tree.hpp"
#include "core/policy/fair_tree.hpp"
#include "core/policy/lattice.hpp"
#include "core/policy/multifactor.hpp"
#include "core/policy/usage.hpp"

using namespace baton::core;

namespace {

const double inf = std::numeric_limits<double>::infinity();

share_node user(std::string name, uint32_t shares, double usage) {
  share_node n;
  n.name = std::move(name);
  n.user = true;
  n.raw_shares = shares;
  n.raw_usage = usage;
  return n;
}

share_node account(std::string name, uint32_t shares, std::vector<share_node> children) {
  share_node n;
  n.name = std::move(name);
  n.raw_shares = shares;
  n.children = std::move(children);
  return n;
}

share_node root_of(std::vector<share_node> children) { return account("root", 0, std::move(children)); }

// "account" for an account row, "account/user" for a user row.
std::string key(const fair_share_row& r) { return r.user.empty() ? r.account : r.account + "/" + r.user; }

std::vector<std::string> order(const std::vector<fair_share_row>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(key(r));
  return out;
}

const fair_share_row& row(const std::vector<fair_share_row>& rows, const std::string& k) {
  for (const auto& r : rows)
    if (key(r) == k) return r;
  ADD_FAILURE() << "no row " << k;
  static fair_share_row none;
  return none;
}

using names = std::vector<std::string>;

}  // namespace

// ---------------------------------------------------------------------------------------
// Fair Tree
// ---------------------------------------------------------------------------------------

// root: chem (60 shares), phys (40), user eve (20). Siblings' shares 120, usage 150.
//   chem: S 60/120 = 0.5,  U 100/150 = 2/3 -> LF 0.75
//   phys: S 40/120 = 1/3,  U  20/150 = 2/15 -> LF 2.5
//   eve:  S 20/120 = 1/6,  U  30/150 = 0.2  -> LF 5/6
// chem: ann S 0.5 U 1 -> 0.5; bob U 0 -> inf.  phys: cy and di S 0.5 U 0.5 -> 1 (tied).
// Walk: phys (cy, di tied: rank 5), eve (rank 3: the tie used up 5 and 4), chem (bob 2, ann 1).
TEST(FairTree, WorkedExample) {
  auto rows = fair_tree(root_of({
      account("chem", 60, {user("ann", 1, 100), user("bob", 1, 0)}),
      account("phys", 40, {user("cy", 1, 10), user("di", 1, 10)}),
      user("eve", 20, 30),
  }));
  EXPECT_EQ(order(rows), (names{"phys", "phys/cy", "phys/di", "root/eve", "chem", "chem/bob", "chem/ann"}));

  EXPECT_DOUBLE_EQ(row(rows, "chem").level_fs, 0.75);
  EXPECT_DOUBLE_EQ(row(rows, "phys").level_fs, 2.5);
  EXPECT_DOUBLE_EQ(row(rows, "root/eve").level_fs, 5.0 / 6);
  EXPECT_DOUBLE_EQ(row(rows, "chem/ann").level_fs, 0.5);
  EXPECT_EQ(row(rows, "chem/bob").level_fs, inf);
  EXPECT_EQ(row(rows, "phys/cy").level_fs, 1.0);
  EXPECT_EQ(row(rows, "phys/di").level_fs, 1.0);

  EXPECT_EQ(row(rows, "phys/cy").fair_share, 1.0);
  EXPECT_EQ(row(rows, "phys/di").fair_share, 1.0);
  EXPECT_EQ(row(rows, "root/eve").fair_share, 3.0 / 5);
  EXPECT_EQ(row(rows, "chem/bob").fair_share, 2.0 / 5);
  EXPECT_EQ(row(rows, "chem/ann").fair_share, 1.0 / 5);
  EXPECT_EQ(row(rows, "chem").fair_share, 0.0) << "accounts carry no factor";

  const auto& chem = row(rows, "chem");
  EXPECT_EQ(chem.depth, 0);
  EXPECT_EQ(chem.raw_shares, 60u);
  EXPECT_DOUBLE_EQ(chem.norm_shares, 0.5);
  EXPECT_EQ(chem.raw_usage, 100.0) << "an account's usage is its subtree's";
  EXPECT_DOUBLE_EQ(chem.effective_usage, 2.0 / 3);
  const auto& ann = row(rows, "chem/ann");
  EXPECT_EQ(ann.depth, 1);
  EXPECT_EQ(ann.effective_usage, 1.0);
  EXPECT_EQ(row(rows, "root/eve").depth, 0);
}

// Slurm's fair_tree page has no numeric example (only the shape root => Acct1 => Acct12 /
// Acct16). This tree is Slurm's own Fair Tree regression test (test 24.4) without its
// Fairshare=parent account aD, which baton does not model. Below the root every figure is
// relative to siblings only, so the Level FS, Norm Shares and Effective Usage there are the
// ones Slurm's test expects (printed to 6 digits). Without aD the root has 158 shares and
// 130 usage among its children, and 15 users:
//   u1, aE, aF: U 0 -> inf        aB: (60/158)/(25/130) = 156/79 = 1.9747
//   u2: (10/158)/(10/130) = 65/79  aA: (40/158)/(45/130) = 520/711 = 0.7314
//   aG: (8/158)/(20/130) = 26/79   aC: no shares -> 0
// Walk (ranks out of 15):
//   u1 15; aE and aF tie with u1 (rule 3) and with each other (rule 2, merged):
//     aE1, aE2, uF1, uF2 all inf, tied (rule 1) -> 15. Slurm's test: all of these are 1.0.
//   aB: aBB (inf): uBB1 10; aBA: uBA1 9.   u2: 8.
//   aA: aAA (1.6875): uAA1 7; aAB (0.45): uAB2 (inf) 6, uAB1 (0.5) 5.
//   aG: uG1 (1.0) 4; aGA (1.0) ties with uG1 (rule 3): its best user uGA1 (1.25) 4;
//       uGA2 (0.8333) 2, as Slurm's test says: "uGA1 and uG1 equivalent, uGA2 not".
//   aC: uC1 1.
// With aD Slurm ranks the same users 21, 21, 16, 15, 14, 13, 12, 11, 4, 4, 2, 1: the same
// order, aD's six users taking the places between uAB1 and uG1.
TEST(FairTree, SlurmRegressionTreeWithoutFairshareParent) {
  auto rows = fair_tree(root_of({
      account("aA", 40,
              {account("aAA", 30, {user("uAA1", 1, 20)}), account("aAB", 10, {user("uAB1", 1, 25), user("uAB2", 1, 0)})}),
      account("aB", 60, {account("aBA", 25, {user("uBA1", 1, 25)}), account("aBB", 35, {user("uBB1", 1, 0)})}),
      account("aC", 0, {user("uC1", 0, 30)}),
      account("aE", 10, {user("aE1", 10, 0), user("aE2", 10, 0)}),
      user("u1", 10, 0),
      account("aF", 20, {user("uF1", 10, 0), user("uF2", 20, 0)}),
      account("aG", 8, {user("uG1", 10, 10), account("aGA", 10, {user("uGA1", 20, 4), user("uGA2", 20, 6)})}),
      user("u2", 10, 10),
  }));
  EXPECT_EQ(order(rows), (names{"root/u1", "aE",     "aF",       "aE/aE1",   "aE/aE2",   "aF/uF1",   "aF/uF2",  //
                                "aB",      "aBB",    "aBB/uBB1", "aBA",      "aBA/uBA1", "root/u2",             //
                                "aA",      "aAA",    "aAA/uAA1", "aAB",      "aAB/uAB2", "aAB/uAB1",            //
                                "aG",      "aG/uG1", "aGA",      "aGA/uGA1", "aGA/uGA2", "aC",       "aC/uC1"}));

  // Root level, without aD.
  EXPECT_EQ(row(rows, "root/u1").level_fs, inf);
  EXPECT_EQ(row(rows, "aE").level_fs, inf);
  EXPECT_EQ(row(rows, "aF").level_fs, inf);
  EXPECT_DOUBLE_EQ(row(rows, "aB").level_fs, 156.0 / 79);
  EXPECT_DOUBLE_EQ(row(rows, "root/u2").level_fs, 65.0 / 79);
  EXPECT_DOUBLE_EQ(row(rows, "aA").level_fs, 520.0 / 711);
  EXPECT_DOUBLE_EQ(row(rows, "aG").level_fs, 26.0 / 79);
  EXPECT_EQ(row(rows, "aC").level_fs, 0.0);
  EXPECT_EQ(row(rows, "aA").raw_usage, 45.0);
  EXPECT_EQ(row(rows, "aG").raw_usage, 20.0);

  // Below the root: Slurm's expected sshare columns (Norm Shares, Effective Usage, Level FS).
  struct slurm_line {
    const char* row;
    double norm_shares, effective_usage, level_fs;
  };
  const slurm_line slurm[] = {
      {"aAA", 0.750000, 0.444444, 1.687500},      {"aAA/uAA1", 1.000000, 1.000000, 1.000000},
      {"aAB", 0.250000, 0.555556, 0.450000},      {"aAB/uAB1", 0.500000, 1.000000, 0.500000},
      {"aAB/uAB2", 0.500000, 0.000000, inf},      {"aBA", 0.416667, 1.000000, 0.416667},
      {"aBA/uBA1", 1.000000, 1.000000, 1.000000}, {"aBB", 0.583333, 0.000000, inf},
      {"aBB/uBB1", 1.000000, 0.000000, inf},      {"aC/uC1", 0.000000, 1.000000, 0.000000},
      {"aE/aE1", 0.500000, 0.000000, inf},        {"aE/aE2", 0.500000, 0.000000, inf},
      {"aF/uF1", 0.333333, 0.000000, inf},        {"aF/uF2", 0.666667, 0.000000, inf},
      {"aG/uG1", 0.500000, 0.500000, 1.000000},   {"aGA", 0.500000, 0.500000, 1.000000},
      {"aGA/uGA1", 0.500000, 0.400000, 1.250000}, {"aGA/uGA2", 0.500000, 0.600000, 0.833333},
  };
  for (const auto& s : slurm) {
    const auto& r = row(rows, s.row);
    EXPECT_NEAR(r.norm_shares, s.norm_shares, 5e-7) << s.row;
    EXPECT_NEAR(r.effective_usage, s.effective_usage, 5e-7) << s.row;
    if (std::isinf(s.level_fs)) {
      EXPECT_EQ(r.level_fs, inf) << s.row;
    } else {
      EXPECT_NEAR(r.level_fs, s.level_fs, 5e-7) << s.row;
    }
  }

  struct ranked {
    const char* row;
    int rank;
  };
  const ranked ranks[] = {{"root/u1", 15},  {"aE/aE1", 15},  {"aE/aE2", 15},  {"aF/uF1", 15},  {"aF/uF2", 15},
                          {"aBB/uBB1", 10}, {"aBA/uBA1", 9}, {"root/u2", 8},  {"aAA/uAA1", 7}, {"aAB/uAB2", 6},
                          {"aAB/uAB1", 5},  {"aG/uG1", 4},   {"aGA/uGA1", 4}, {"aGA/uGA2", 2}, {"aC/uC1", 1}};
  for (const auto& r : ranks) EXPECT_EQ(row(rows, r.row).fair_share, r.rank / 15.0) << r.row;
}

// lab: x, y (1 share, 10 usage each) and z (2 shares, 10 usage): S 0.25, 0.25, 0.5, U 1/3
// each -> LF 0.75, 0.75, 1.5. root: lab (S 0.5, U 30/120 = 0.25 -> 2), w (S 0.5, U 90/120 ->
// 2/3). Ranks of 4: z 4; x and y tie at 3; w gets 1, not 2: the tie used up rank 2.
TEST(FairTree, SiblingUsersWithEqualLevelFsShareARank) {
  auto rows = fair_tree(root_of({
      account("lab", 1, {user("y", 1, 10), user("x", 1, 10), user("z", 2, 10)}),
      user("w", 1, 90),
  }));
  EXPECT_EQ(order(rows), (names{"lab", "lab/z", "lab/x", "lab/y", "root/w"}));
  EXPECT_DOUBLE_EQ(row(rows, "lab/x").level_fs, 0.75);
  EXPECT_EQ(row(rows, "lab/x").level_fs, row(rows, "lab/y").level_fs);
  EXPECT_EQ(row(rows, "lab/z").fair_share, 1.0);
  EXPECT_EQ(row(rows, "lab/x").fair_share, 0.75);
  EXPECT_EQ(row(rows, "lab/y").fair_share, 0.75);
  EXPECT_EQ(row(rows, "root/w").fair_share, 0.25);
}

// root: user zed (1 share, 10 usage), account grp (1 share, 10 usage), user last (2 shares,
// 80 usage): S 0.25, 0.25, 0.5, U 0.1, 0.1, 0.8 -> LF 2.5, 2.5, 0.625. zed and grp tie; the
// user walks first (though "zed" sorts after "grp") and grp's best user g1 (inf) takes zed's
// rank. Ranks of 4: zed 4, g1 4, g2 (0.5) 2, last 1.
TEST(FairTree, UserTiedWithSiblingAccountSharesRankWithItsBestUser) {
  auto rows = fair_tree(root_of({
      account("grp", 1, {user("g2", 1, 10), user("g1", 1, 0)}),
      user("zed", 1, 10),
      user("last", 2, 80),
  }));
  EXPECT_EQ(order(rows), (names{"root/zed", "grp", "grp/g1", "grp/g2", "root/last"}));
  EXPECT_DOUBLE_EQ(row(rows, "root/zed").level_fs, 2.5);
  EXPECT_EQ(row(rows, "grp").level_fs, row(rows, "root/zed").level_fs);
  EXPECT_EQ(row(rows, "root/zed").fair_share, 1.0);
  EXPECT_EQ(row(rows, "grp/g1").fair_share, 1.0);
  EXPECT_EQ(row(rows, "grp/g2").fair_share, 0.5);
  EXPECT_EQ(row(rows, "root/last").fair_share, 0.25);
}

// root: A and B, 1 share and 10 usage each -> both LF 1, tied: their children are ranked as
// one list. A: a1 (S 0.5, U 0.2 -> 2.5), a2 (S 0.5, U 0.8 -> 0.625). B: b1 (3 shares, S 0.75,
// U 0.5 -> 1.5), b2 (S 0.25, U 0.5 -> 0.5). Merged: a1 4, b1 3, a2 2, b2 1. (Walking A's
// subtree before B's would give a1 4, a2 3, b1 3, b2 1 instead.)
TEST(FairTree, TiedSiblingAccountsHaveTheirChildrenMerged) {
  auto rows = fair_tree(root_of({
      account("B", 1, {user("b1", 3, 5), user("b2", 1, 5)}),
      account("A", 1, {user("a1", 1, 2), user("a2", 1, 8)}),
  }));
  EXPECT_EQ(order(rows), (names{"A", "B", "A/a1", "B/b1", "A/a2", "B/b2"}));
  EXPECT_EQ(row(rows, "A").level_fs, 1.0);
  EXPECT_EQ(row(rows, "B").level_fs, 1.0);
  EXPECT_DOUBLE_EQ(row(rows, "A/a1").level_fs, 2.5);
  EXPECT_DOUBLE_EQ(row(rows, "B/b1").level_fs, 1.5);
  EXPECT_DOUBLE_EQ(row(rows, "A/a2").level_fs, 0.625);
  EXPECT_DOUBLE_EQ(row(rows, "B/b2").level_fs, 0.5);
  EXPECT_EQ(row(rows, "A/a1").fair_share, 1.0);
  EXPECT_EQ(row(rows, "B/b1").fair_share, 0.75);
  EXPECT_EQ(row(rows, "A/a2").fair_share, 0.5);
  EXPECT_EQ(row(rows, "B/b2").fair_share, 0.25);
  EXPECT_EQ(row(rows, "B/b1").depth, 1);
}

// No usage anywhere: U is 0 for everyone, so every association with shares has Level FS
// inf and ties with its siblings; the ties carry down and every user gets 1.0 (Slurm's
// regression test expects exactly that of its unused accounts). An association without
// shares is the exception: its Level FS is 0, so its users rank after everyone else.
TEST(FairTree, AllZeroUsageTiesEveryoneAtTheTop) {
  auto rows = fair_tree(root_of({
      account("A", 2, {user("a1", 1, 0), user("a2", 5, 0)}),
      account("B", 1, {account("B1", 1, {user("b1", 1, 0)})}),
      user("u", 1, 0),
  }));
  EXPECT_EQ(order(rows), (names{"root/u", "A", "B", "A/a1", "A/a2", "B1", "B1/b1"}));
  for (const auto& r : rows) {
    EXPECT_EQ(r.level_fs, inf) << key(r);
    EXPECT_EQ(r.effective_usage, 0.0) << key(r);
    if (!r.user.empty()) {
      EXPECT_EQ(r.fair_share, 1.0) << key(r);
    }
  }

  auto with_unshared = fair_tree(root_of({
      account("A", 2, {user("a1", 1, 0), user("a2", 5, 0)}),
      account("Z", 0, {user("z", 1, 0)}),
      user("u", 1, 0),
  }));
  EXPECT_EQ(row(with_unshared, "Z").level_fs, 0.0);
  EXPECT_EQ(row(with_unshared, "Z/z").level_fs, inf) << "z has all of Z's shares";
  EXPECT_EQ(row(with_unshared, "A/a2").fair_share, 1.0);
  EXPECT_EQ(row(with_unshared, "Z/z").fair_share, 0.25);
}

TEST(FairTree, ChildOrderInTheInputDoesNotMatter) {
  auto a = fair_tree(root_of({account("p", 1, {user("m", 1, 3), user("n", 1, 3), user("o", 1, 0)}),
                              account("q", 1, {user("r", 1, 6)}), user("s", 1, 0)}));
  auto b = fair_tree(root_of({user("s", 1, 0), account("q", 1, {user("r", 1, 6)}),
                              account("p", 1, {user("o", 1, 0), user("n", 1, 3), user("m", 1, 3)})}));
  ASSERT_EQ(order(a), order(b));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].level_fs, b[i].level_fs) << key(a[i]);
    EXPECT_EQ(a[i].fair_share, b[i].fair_share) << key(a[i]);
  }
}

// decayed_fair_tree (the simulator's incremental ranking) against a fresh fair_tree() over the
// same usage, decayed the simulator's way, bit for bit wherever it answers: a seeded random
// history of accounts and users joining, jobs starting and ending, time passing (once for
// 2,000 half-lives, past the keys' range). Twin users and twin accounts run identical jobs, so
// exact ties come up; new accounts and users wait before their first job (no usage: tied at
// the top); a few have no shares. Where it cannot certify (a near tie) it must say so, never
// answer wrong, and it must answer almost always.
TEST(FairTree, ADecayedTreeRanksAsAFreshWalkWhereverItAnswers) {
  std::mt19937 rng(20261206);
  const time_us h = default_decay_half_life, hour = 3600LL * 1000000;
  auto pick = [&](std::initializer_list<uint32_t> from) { return *(from.begin() + rng() % from.size()); };
  decayed_fair_tree fast(h);
  struct user_state {
    uint32_t account = 0, shares = 1;
    double usage = 0;
    time_us as_of = 0;
  };
  std::vector<uint32_t> account_shares;
  std::vector<user_state> users;
  std::vector<decayed_fair_tree::open_segment> running;
  auto add_account = [&](uint32_t shares) {
    account_shares.push_back(shares);
    EXPECT_EQ(fast.add_account(shares), account_shares.size() - 1);
    return static_cast<uint32_t>(account_shares.size() - 1);
  };
  auto add_user = [&](uint32_t a, uint32_t shares) {
    users.push_back({a, shares});
    EXPECT_EQ(fast.add_user(a, shares), users.size() - 1);
    return static_cast<uint32_t>(users.size() - 1);
  };
  const uint32_t twin_account = add_account(1);
  const uint32_t twin_a = add_user(twin_account, 1), twin_b = add_user(twin_account, 1);
  const uint32_t twin_c = add_user(add_account(2), 1), twin_d = add_user(add_account(2), 1);
  // Near twins: the same GPU-seconds as one job of 3 GPUs or as two of 1 and 2, whose sums
  // round apart by an ulp or so (a comparison of keys alone could put them either way).
  const uint32_t near_account = add_account(1);
  const uint32_t near_a = add_user(near_account, 1), near_b = add_user(near_account, 1);
  const uint32_t near_c = add_user(add_account(1), 1), near_d = add_user(add_account(1), 1);
  time_us now = 0;
  size_t answered = 0, refused = 0, answered_unused = 0, answered_ties = 0;
  std::vector<double> got;
  for (int round = 0; round < 3000; ++round) {
    now += static_cast<time_us>(rng() % 48) * hour + static_cast<time_us>(rng() % 3600) * 1000000;
    if (round % 700 == 699) now += 200 * 24 * hour;  // a long quiet spell
    if (round == 2800) now += 2000 * h;              // everything decays out of the keys' range
    if (users.size() < 400 && rng() % 100 < 4) {
      const uint32_t a = add_account(rng() % 40 ? pick({1, 1, 1, 2, 5}) : 0);
      for (int k = 0, n = 1 + static_cast<int>(rng() % 6); k < n; ++k) add_user(a, rng() % 25 ? pick({1, 1, 3}) : 0);
    }
    if (users.size() < 400 && rng() % 100 < 5) add_user(static_cast<uint32_t>(rng() % account_shares.size()), pick({1, 2}));
    // Jobs end (their usage closes as the simulator closes it), others start.
    for (size_t i = 0; i < running.size();) {
      if (rng() % 100 >= 30 && !(round == 2800)) {
        ++i;
        continue;
      }
      const auto s = running[i];
      auto& u = users[s.user];
      u.usage = decay(u.usage, u.as_of, std::max(u.as_of, now), h) +
                decayed_gpu_seconds(static_cast<int>(s.gpus), s.start, now, now, h);
      u.as_of = std::max(u.as_of, now);
      fast.set_closed(s.user, u.usage, u.as_of);
      running.erase(running.begin() + static_cast<long>(i));
    }
    for (int k = 0, n = static_cast<int>(rng() % 4); k < n && round < 2800 && users.size() > 8; ++k) {
      const uint32_t u = static_cast<uint32_t>(8 + rng() % (users.size() - 8));
      if (rng() % 3) running.push_back({u, static_cast<int64_t>(pick({1, 2, 4, 8})), now});
    }
    if (round % 3 == 0 && round < 2800) {  // the twins, alike
      const auto gpus = static_cast<int64_t>(pick({1, 4}));
      for (uint32_t t : {twin_a, twin_b, twin_c, twin_d}) running.push_back({t, gpus, now});
    }
    if (round % 4 == 1 && round < 2800) {
      for (uint32_t t : {near_a, near_c}) running.push_back({t, 3, now});
      for (uint32_t t : {near_b, near_d}) running.push_back({t, 1, now}), running.push_back({t, 2, now});
    }
    std::vector<uint32_t> wanted;
    for (uint32_t u = 0; u < users.size(); ++u)
      if (u < 4 || account_shares[users[u].account] == 0 ? rng() % 100 < 2 : rng() % 100 < (u < 8 ? 50 : 30)) wanted.push_back(u);
    // The fresh walk over the same usage, as the simulator's share book builds it.
    share_node root = root_of({});
    for (uint32_t a = 0; a < account_shares.size(); ++a)
      root.children.push_back(account("a" + std::to_string(a), account_shares[a], {}));
    for (uint32_t u = 0; u < users.size(); ++u) {
      const auto& x = users[u];
      double usage = x.usage == 0 ? 0 : decay(x.usage, x.as_of, std::max(x.as_of, now), h);
      for (const auto& s : running)
        if (s.user == u) usage += decayed_gpu_seconds(static_cast<int>(s.gpus), s.start, now, now, h);
      root.children[x.account].children.push_back(user("u" + std::to_string(u), x.shares, usage));
    }
    std::vector<fair_share_rank> ranks;
    fair_tree(root, ranks);
    std::vector<double> fresh(users.size(), -1);
    for (const auto& r : ranks)
      if (r.user) fresh[static_cast<size_t>(std::stoul(r.node->name.substr(1)))] = r.fair_share;
    if (!fast.fair_shares(now, running, wanted, got)) {
      ++refused;
      continue;
    }
    ++answered;
    for (uint32_t w : wanted) {
      SCOPED_TRACE("round " + std::to_string(round) + ", user " + std::to_string(w));
      ASSERT_EQ(std::memcmp(&got[w], &fresh[w], sizeof(double)), 0) << got[w] << " vs " << fresh[w];
      double account_usage = 0;
      for (const auto& c : root.children[users[w].account].children) account_usage += c.raw_usage;
      answered_unused += account_usage == 0;
      for (uint32_t v = 0; v < users.size(); ++v) answered_ties += v != w && fresh[v] == fresh[w];
    }
  }
  std::printf("[ info ] decayed tree: %zu askings answered, %zu refused; %zu answers in accounts without usage, %zu ties\n",
              answered, refused, answered_unused, answered_ties);
  EXPECT_GT(answered, 2300u) << "it must answer almost always";
  EXPECT_GT(refused, 10u) << "the twins' exact ties and the long decay must be refused";
  EXPECT_GT(answered_unused, 500u) << "users in accounts without usage, ranked without the walk";
  EXPECT_GT(answered_ties, 500u) << "users sharing a rank";
}

// Two users whose usage is the same to the last bits (c, and c·2^(d/h) as of d before c's
// time): rounding alone orders them in fair_tree(), one way or the other or tied as `now`
// moves, so decayed_fair_tree must refuse to rank them (its keys are within the margin).
TEST(FairTree, ADecayedTreeRefusesUsersOnlyRoundingOrders) {
  const time_us h = default_decay_half_life;
  decayed_fair_tree fast(h);
  const uint32_t a = fast.add_account(1);
  const uint32_t x = fast.add_user(a, 1), y = fast.add_user(a, 1);
  const double c = 123456.789;
  const time_us t = 40 * h + 12345;
  const time_us d = h / 3;
  const double cy = c * std::exp2(static_cast<double>(d) / static_cast<double>(h));
  fast.set_closed(x, c, t);
  fast.set_closed(y, cy, t - d);
  size_t below = 0, above = 0, tied = 0;
  std::vector<double> got;
  for (int k = 0; k < 400; ++k) {
    const time_us now = t + k * 7919 * 1000000LL;
    const double ux = decay(c, t, now, h), uy = decay(cy, t - d, now, h);
    (ux < uy ? below : ux > uy ? above : tied) += 1;
    EXPECT_FALSE(fast.fair_shares(now, {}, {x}, got)) << "at " << now;
  }
  std::printf("[ info ] rounding put x's usage below y's %zu times, above %zu, equal %zu\n", below, above, tied);
  EXPECT_GT(below + above, 0u) << "rounding must set them apart sometimes, or the case shows nothing";
}

// Ties break on the whole name, also where names share their first eight bytes (compared
// first, as one number) or one is the other's prefix.
TEST(FairTree, TiesBreakOnWholeNamesBeyondTheirFirstEightBytes) {
  auto rows = fair_tree(root_of(
      {account("p", 1, {user("longname_b", 1, 0), user("longname", 1, 0), user("longname_a", 1, 0), user("longnamf", 1, 0)})}));
  EXPECT_EQ(order(rows), (names{"p", "p/longname", "p/longname_a", "p/longname_b", "p/longnamf"}));
}

// The ranker lays a tree out once and ranks it again after each change of usage, starting
// each sort from the last order: after every change its ranking is the fresh one, to the bit.
// A seeded random tree of three levels whose shares and usages come from small sets, so
// Level FS ties (users with users, users with accounts, accounts with accounts) are common.
TEST(FairTree, ARankerRanksAsAFreshWalkAfterEveryChangeOfUsage) {
  std::mt19937 rng(20261126);
  auto pick = [&](std::initializer_list<double> from) { return *(from.begin() + rng() % from.size()); };
  std::vector<share_node*> users;
  share_node root = root_of({});
  for (int a = 0; a < 12; ++a) {
    std::vector<share_node> subs;
    for (int b = 0; b < 1 + static_cast<int>(rng() % 4); ++b) {
      std::vector<share_node> leaves;
      for (int u = 0; u < 1 + static_cast<int>(rng() % 9); ++u)
        leaves.push_back(user("u" + std::to_string(a) + "_" + std::to_string(b) + "_" + std::to_string(u),
                              static_cast<uint32_t>(pick({0, 1, 1, 2})), pick({0, 0, 1, 2, 4})));
      if (rng() % 3 == 0) subs.push_back(user("solo" + std::to_string(a) + "_" + std::to_string(b), 1, pick({0, 1, 2})));
      subs.push_back(
          account("s" + std::to_string(a) + "_" + std::to_string(b), static_cast<uint32_t>(pick({1, 1, 2})), std::move(leaves)));
    }
    root.children.push_back(account("a" + std::to_string(a), static_cast<uint32_t>(pick({1, 1, 2, 3})), std::move(subs)));
  }
  std::function<void(share_node&)> collect = [&](share_node& n) {
    for (auto& c : n.children) c.user ? users.push_back(&c) : collect(c);
  };
  collect(root);
  ASSERT_GT(users.size(), 80u);

  fair_tree_ranker ranker(root);
  std::vector<fair_share_rank> kept, fresh;
  size_t ties_seen = 0;
  for (int round = 0; round < 300; ++round) {
    // A few users' usage changes (as running jobs add to it), or everyone's decays alike, or
    // everything changes at once (the order is then far from the last one's).
    if (round % 50 == 49) {
      for (auto* u : users) u->raw_usage = pick({0, 1, 2, 3, 4, 8, 100});
    } else if (round % 10 == 9) {
      for (auto* u : users) u->raw_usage *= 0.5;
    } else {
      for (int k = 0; k < 1 + round % 5; ++k) users[rng() % users.size()]->raw_usage = pick({0, 1, 2, 3, 4, 8, 100});
    }
    ranker.rank(kept);
    fair_tree(root, fresh);
    ASSERT_EQ(kept.size(), fresh.size());
    for (size_t i = 0; i < fresh.size(); ++i) {
      SCOPED_TRACE("round " + std::to_string(round) + ", row " + std::to_string(i));
      ASSERT_EQ(kept[i].node, fresh[i].node);
      ASSERT_EQ(kept[i].parent, fresh[i].parent);
      ASSERT_EQ(kept[i].depth, fresh[i].depth);
      ASSERT_EQ(std::memcmp(&kept[i].level_fs, &fresh[i].level_fs, sizeof(double)), 0);
      ASSERT_EQ(std::memcmp(&kept[i].fair_share, &fresh[i].fair_share, sizeof(double)), 0);
      ASSERT_EQ(std::memcmp(&kept[i].raw_usage, &fresh[i].raw_usage, sizeof(double)), 0);
      ASSERT_EQ(std::memcmp(&kept[i].effective_usage, &fresh[i].effective_usage, sizeof(double)), 0);
      ASSERT_EQ(std::memcmp(&kept[i].norm_shares, &fresh[i].norm_shares, sizeof(double)), 0);
      ties_seen += i > 0 && fresh[i].depth == fresh[i - 1].depth && fresh[i].level_fs == fresh[i - 1].level_fs;
    }
  }
  EXPECT_GT(ties_seen, 300u) << "the rounds must exercise ties";
}

// The ranking without names, into a vector used again and again (the simulator's way): the
// same figures as the rows, each entry pointing at its node, and a smaller tree after a larger
// one leaves no stale entries behind.
TEST(FairTree, RankingIntoAReusedVectorMatchesTheRows) {
  auto big = root_of({account("A", 2, {user("a1", 1, 3), user("a2", 5, 1)}),
                      account("B", 1, {account("B1", 1, {user("b1", 1, 7)})}), user("u", 1, 2)});
  auto small = root_of({account("C", 1, {user("c1", 1, 1), user("c2", 1, 1)})});
  std::vector<fair_share_rank> ranks;
  for (const auto* tree : {&big, &small}) {
    fair_tree(*tree, ranks);
    auto rows = fair_tree(*tree);
    ASSERT_EQ(ranks.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(ranks[i].user, !rows[i].user.empty());
      EXPECT_EQ(ranks[i].node->name, ranks[i].user ? rows[i].user : rows[i].account);
      if (ranks[i].user) {
        EXPECT_EQ(ranks[i].parent->name, rows[i].account);
      }
      EXPECT_EQ(ranks[i].depth, rows[i].depth);
      EXPECT_EQ(ranks[i].level_fs, rows[i].level_fs);
      EXPECT_EQ(ranks[i].fair_share, rows[i].fair_share);
      EXPECT_EQ(ranks[i].raw_usage, rows[i].raw_usage);
      EXPECT_EQ(ranks[i].norm_shares, rows[i].norm_shares);
    }
  }
  EXPECT_EQ(ranks.size(), 3u);
}

TEST(FairTree, NoUsersNoRows) {
  EXPECT_TRUE(fair_tree(root_of({})).empty());
  auto rows = fair_tree(root_of({account("empty", 1, {})}));
  EXPECT_EQ(order(rows), (names{"empty"}));
}

// ---------------------------------------------------------------------------------------
// Decayed usage
// ---------------------------------------------------------------------------------------

namespace {
constexpr time_us second = 1'000'000;
constexpr time_us hour = 3600 * second;
constexpr time_us week = 7 * 24 * hour;
constexpr time_us t0 = 1'700'000'000 * second;
}  // namespace

// A segment one half-life long, ending at `at`: gpus·h/ln2·(1 - 1/2). Two half-lives: ·3/4.
TEST(DecayedUsage, ClosedFormOverWholeHalfLives) {
  EXPECT_EQ(default_decay_half_life, week);
  double h = static_cast<double>(week) / second;
  EXPECT_DOUBLE_EQ(decayed_gpu_seconds(4, t0, t0 + week, t0 + week, week), 4 * h / std::log(2.0) * 0.5);
  EXPECT_DOUBLE_EQ(decayed_gpu_seconds(4, t0, t0 + 2 * week, t0 + 2 * week, week), 4 * h / std::log(2.0) * 0.75);
}

TEST(DecayedUsage, SegmentInThePastHalvesAfterOneHalfLife) {
  double now = decayed_gpu_seconds(2, t0, t0 + hour, t0 + hour, week);
  EXPECT_EQ(decayed_gpu_seconds(2, t0, t0 + hour, t0 + hour + week, week), now / 2);
  EXPECT_EQ(decayed_gpu_seconds(2, t0, t0 + hour, t0 + hour + 2 * week, week), now / 4);
  EXPECT_EQ(decay(now, t0 + hour, t0 + hour + week, week), now / 2);
  // An hour is 1/168 of a week: on average it has decayed by about ln2 / 336, some 0.2 %.
  EXPECT_LT(now, 2.0 * 3600 * 0.998);
  EXPECT_GT(now, 2.0 * 3600 * 0.997);
}

TEST(DecayedUsage, SegmentClippedAtTheMeasuringTime) {
  time_us at = t0 + hour;
  EXPECT_EQ(decayed_gpu_seconds(3, t0, t0 + 5 * hour, at, week), decayed_gpu_seconds(3, t0, at, at, week));
  EXPECT_EQ(decayed_gpu_seconds(3, t0, t0 + 5 * hour, t0, week), 0.0) << "nothing of it before `at`";
  EXPECT_EQ(decayed_gpu_seconds(3, t0, t0 + 5 * hour, t0 - hour, week), 0.0);
  EXPECT_EQ(decayed_gpu_seconds(3, t0, t0 + 5 * hour, at, 0), 3.0 * 3600);
}

TEST(DecayedUsage, NoHalfLifeMeansPlainGpuSeconds) {
  EXPECT_EQ(decayed_gpu_seconds(4, t0, t0 + hour, t0 + 10 * week, 0), 4.0 * 3600);
  EXPECT_EQ(decayed_gpu_seconds(4, t0, t0 + hour, t0 + 10 * week, -week), 4.0 * 3600);
  EXPECT_EQ(decayed_gpu_seconds(4, t0, t0 + 1500 * 1000, t0 + hour, 0), 6.0) << "µs resolution";
  EXPECT_EQ(decay(123.5, t0, t0 + 10 * week, 0), 123.5);
  EXPECT_EQ(decayed_gpu_seconds(0, t0, t0 + hour, t0 + hour, week), 0.0);
  EXPECT_EQ(decayed_gpu_seconds(4, t0 + hour, t0, t0 + week, week), 0.0) << "an empty segment";
}

TEST(DecayedUsage, SplittingASegmentKeepsTheSum) {
  time_us at = t0 + 3 * week + 17 * second;
  for (time_us h : {week, 2 * hour, time_us{0}}) {
    double whole = decayed_gpu_seconds(8, t0, t0 + 5 * week, at, h);
    double parts =
        decayed_gpu_seconds(8, t0, t0 + week + 123, at, h) + decayed_gpu_seconds(8, t0 + week + 123, t0 + 5 * week, at, h);
    EXPECT_NEAR(parts, whole, whole * 1e-12) << h;
  }
  // A segment's usage decayed to a later time equals measuring it then.
  double then = decayed_gpu_seconds(8, t0, t0 + week, t0 + week, week);
  EXPECT_NEAR(decay(then, t0 + week, at, week), decayed_gpu_seconds(8, t0, t0 + week, at, week), then * 1e-12);
}

TEST(DecayedUsage, ShortSegmentKeepsItsDigits) {
  // 1 µs on one GPU, measured at its end: 1e-6 GPU-seconds less ~ln2/2 · (1 µs / week).
  EXPECT_NEAR(decayed_gpu_seconds(1, t0, t0 + 1, t0 + 1, week), 1e-6, 1e-18);
}

// ---------------------------------------------------------------------------------------
// Multifactor
// ---------------------------------------------------------------------------------------

namespace {

constexpr time_us day = 24 * hour;

// Age 2.5 of 5 days, fair share 0.6, 2 of 8 GPUs, partition 1 of 10, QOS 100 of 1000.
multifactor_inputs gwdg_job() {
  multifactor_inputs in;
  in.accrued_age = 5 * day / 2;
  in.fair_share = 0.6;
  in.gpu_count = 2;
  in.max_gpu_count = 8;
  in.partition_factor = 1;
  in.max_partition_factor = 10;
  in.qos_factor = 100;
  in.max_qos_factor = 1000;
  return in;
}

void expect_factor(const priority_factor& f, double raw, double normalized, double weighted, const char* what) {
  EXPECT_DOUBLE_EQ(f.raw, raw) << what;
  EXPECT_DOUBLE_EQ(f.normalized, normalized) << what;
  EXPECT_DOUBLE_EQ(f.weighted, weighted) << what;
}

}  // namespace

TEST(Multifactor, DefaultsAreGwdgWeights) {
  multifactor_settings s;
  EXPECT_EQ(s.weights.age, 10000u);
  EXPECT_EQ(s.weights.fairshare, 100000u);
  EXPECT_EQ(s.weights.job_size, 1000u);
  EXPECT_EQ(s.weights.partition, 1000000u);
  EXPECT_EQ(s.weights.qos, 10000u);
  EXPECT_EQ(s.max_age, 5 * day);
  EXPECT_FALSE(s.favor_small);
}

// 0.5·10,000 + 0.6·100,000 + 0.25·1,000 + 0.1·1,000,000 + 0.1·10,000 = 5,000 + 60,000 + 250
// + 100,000 + 1,000 = 166,250.
TEST(Multifactor, GwdgWorkedJob) {
  auto r = multifactor_priority(gwdg_job(), {});
  expect_factor(r.age, 216000, 0.5, 5000, "age");
  expect_factor(r.fairshare, 0.6, 0.6, 60000, "fairshare");
  expect_factor(r.job_size, 2, 0.25, 250, "job size");
  expect_factor(r.partition, 1, 0.1, 100000, "partition");
  expect_factor(r.qos, 100, 0.1, 1000, "qos");
  EXPECT_EQ(r.nice, 0);
  EXPECT_EQ(r.priority, 166250);
}

TEST(Multifactor, TopPartitionAddsItsWholeWeight) {
  auto in = gwdg_job();
  in.partition_factor = 10;
  auto r = multifactor_priority(in, {});
  expect_factor(r.partition, 10, 1, 1000000, "partition");
  EXPECT_EQ(r.priority, 1066250);
}

TEST(Multifactor, NiceIsSubtracted) {
  auto in = gwdg_job();
  in.nice = 250;
  auto r = multifactor_priority(in, {});
  EXPECT_EQ(r.nice, 250);
  EXPECT_EQ(r.priority, 166000);
}

TEST(Multifactor, AgeCapsAtMaxAge) {
  auto in = gwdg_job();
  in.accrued_age = 7 * day;
  auto r = multifactor_priority(in, {});
  expect_factor(r.age, 604800, 1, 10000, "age");
  EXPECT_EQ(r.priority, 171250);
  in.accrued_age = 5 * day;
  EXPECT_EQ(multifactor_priority(in, {}).age.normalized, 1.0) << "max_age itself is 1.0";
  in.accrued_age = -day;
  EXPECT_EQ(multifactor_priority(in, {}).age.normalized, 0.0) << "not yet eligible";
  multifactor_settings no_max;
  no_max.max_age = 0;
  in.accrued_age = 1;
  EXPECT_EQ(multifactor_priority(in, no_max).age.normalized, 1.0) << "Slurm: age < max_age never holds";
}

TEST(Multifactor, ZeroEverythingClampsToOne) {
  multifactor_inputs in;
  in.gpu_count = 0;
  in.max_gpu_count = 8;
  in.partition_factor = 0;
  in.max_partition_factor = 10;
  auto r = multifactor_priority(in, {});
  for (const auto* f : {&r.age, &r.fairshare, &r.job_size, &r.partition, &r.qos}) EXPECT_EQ(f->weighted, 0.0);
  EXPECT_EQ(r.priority, 1) << "0 is Slurm's held";
  in = gwdg_job();
  in.nice = 1000000;
  EXPECT_EQ(multifactor_priority(in, {}).priority, 1) << "a large nice cannot go below 1";
}

TEST(Multifactor, SumIsTruncatedNotRounded) {
  multifactor_inputs in;
  in.gpu_count = 0;
  in.partition_factor = 0;
  in.fair_share = 0.0000375;  // 3.75
  EXPECT_EQ(multifactor_priority(in, {}).priority, 3);
  in.fair_share = 0.5 / 100000;  // 0.5 below 1: clamped up
  EXPECT_EQ(multifactor_priority(in, {}).priority, 1);
}

TEST(Multifactor, PriorityStaysWithinSlurmsThirtyTwoBits) {
  multifactor_settings s;
  s.weights = {4294967295u, 4294967295u, 4294967295u, 4294967295u, 4294967295u};
  auto in = gwdg_job();
  in.partition_factor = 10;
  EXPECT_EQ(multifactor_priority(in, s).priority, 4294967295);
}

TEST(Multifactor, JobSizeFavoringLargeOrSmall) {
  auto in = gwdg_job();
  multifactor_settings small;
  small.favor_small = true;
  expect_factor(multifactor_priority(in, small).job_size, 2, 0.75, 750, "2 of 8, favor small");
  in.gpu_count = 8;
  expect_factor(multifactor_priority(in, {}).job_size, 8, 1, 1000, "8 of 8");
  expect_factor(multifactor_priority(in, small).job_size, 8, 0, 0, "8 of 8, favor small");
  in.gpu_count = 12;
  expect_factor(multifactor_priority(in, {}).job_size, 12, 1, 1000, "more than the max clamps");
  expect_factor(multifactor_priority(in, small).job_size, 12, 0, 0, "more than the max, favor small");
  in.max_gpu_count = 0;
  EXPECT_EQ(multifactor_priority(in, {}).job_size.normalized, 0.0) << "nothing to normalise by";
}

TEST(Multifactor, PartitionAndQosWithoutAMaximumCountZero) {
  auto in = gwdg_job();
  in.max_partition_factor = 0;
  in.max_qos_factor = 0;
  auto r = multifactor_priority(in, {});
  expect_factor(r.partition, 1, 0, 0, "partition");
  expect_factor(r.qos, 100, 0, 0, "qos");
  EXPECT_EQ(r.priority, 65250);
  in.fair_share = 1.5;
  EXPECT_EQ(multifactor_priority(in, {}).fairshare.normalized, 1.0);
}

// ---------------------------------------------------------------------------------------
// Lattice
// ---------------------------------------------------------------------------------------

namespace {

// f1 = 5/10 = 0.5          f2 = ln(1 + 3600/3600) = ln 2     f3 = (0.4 - 0.1)/0.4 = 0.75
// f4 = 0.8                 f5 = 0.5 (unknown)                 f6 = 10/40 = 0.25
// f7 = 1 - 0.3 = 0.7       f8 = 1/(1 + 4) = 0.2               f9 = 1
lattice_inputs worked_job() {
  lattice_inputs in;
  in.priority_class = 5;
  in.wait_seconds = 3600;
  in.target_share = 0.4;
  in.actual_share = 0.1;
  in.topology_fitness = 0.8;
  in.queued_gpu_hours = 10;
  in.running_gpu_hours = 40;
  in.normalized_energy_price = 0.3;
  in.checkpoint_minutes = 4;
  in.conformance = 1;
  return in;
}

const double ln2 = std::log(2.0);

}  // namespace

TEST(Lattice, WorkedJobFactors) {
  auto r = lattice_score(worked_job(), weights_of(lattice_profile::balanced));
  const std::array<double, 9> f = {0.5, ln2, 0.75, 0.8, 0.5, 0.25, 0.7, 0.2, 1};
  for (size_t i = 0; i < 9; ++i) EXPECT_NEAR(r.f[i], f[i], 1e-12) << "f" << i + 1;
}

// Σ wᵢ·fᵢ with the factors above:
//   balanced:    .2·.5 + .2·ln2 + .2·.75 + .15·.8 + .1·.5 + .05·.25 + 0 + 0 + .1·1
//                = .1 + .15 + .12 + .05 + .0125 + .1 + .2·ln2          = .5325 + .2·ln2
//   hpc_batch:   .075 + .15 + .12 + .05 + .0125 + .05·.2 (.01) + .1    = .5175 + .2·ln2
//   ml_training: .05 + .075 + .25·.8 (.2) + .15·.5 (.075) + .0125 + .05·.7 (.035) + .1·.2 (.02) + .1
//                                                                        = .5675 + .1·ln2
//   service:     .075 + .075 + .04 + .05 + .0125 + .07 + .02 + .3      = .6425 + .05·ln2
//   sensitive:   .9·.5 + .1·1                                          = .55
//   interactive: .05 + .1·.75 (.075) + .05·.5 (.025) + .15·.25 (.0375) + .3
//                                                                        = .4875 + .3·ln2
TEST(Lattice, EachProfileScoresTheWorkedJob) {
  struct expected {
    lattice_profile p;
    double score;
  };
  const expected cases[] = {
      {lattice_profile::balanced, 0.5325 + 0.2 * ln2},
      {lattice_profile::hpc_batch, 0.5175 + 0.2 * ln2},
      {lattice_profile::ml_training, 0.5675 + 0.1 * ln2},
      {lattice_profile::service, 0.6425 + 0.05 * ln2},
      {lattice_profile::sensitive, 0.55},
      {lattice_profile::interactive, 0.4875 + 0.3 * ln2},
  };
  for (const auto& c : cases) {
    auto r = lattice_score(worked_job(), weights_of(c.p));
    EXPECT_NEAR(r.score, c.score, 1e-12) << to_string(c.p);
    double sum = 0;
    for (size_t i = 0; i < 9; ++i) {
      EXPECT_NEAR(r.weighted[i], weights_of(c.p)[i] * r.f[i], 1e-15);
      sum += r.weighted[i];
    }
    EXPECT_NEAR(sum, r.score, 1e-15);
  }
}

TEST(Lattice, ProfileWeightTables) {
  using W = lattice_weights;
  EXPECT_EQ(weights_of(lattice_profile::balanced), (W{0.20, 0.20, 0.20, 0.15, 0.10, 0.05, 0.00, 0.00, 0.10}));
  EXPECT_EQ(weights_of(lattice_profile::hpc_batch), (W{0.15, 0.20, 0.20, 0.15, 0.10, 0.05, 0.00, 0.05, 0.10}));
  EXPECT_EQ(weights_of(lattice_profile::ml_training), (W{0.10, 0.10, 0.10, 0.25, 0.15, 0.05, 0.05, 0.10, 0.10}));
  EXPECT_EQ(weights_of(lattice_profile::service), (W{0.15, 0.05, 0.10, 0.05, 0.10, 0.05, 0.10, 0.10, 0.30}));
  EXPECT_EQ(weights_of(lattice_profile::sensitive), (W{0.90, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.00, 0.10}));
  EXPECT_EQ(weights_of(lattice_profile::interactive), (W{0.10, 0.30, 0.10, 0.00, 0.05, 0.15, 0.00, 0.00, 0.30}));
  for (auto p : {lattice_profile::balanced, lattice_profile::hpc_batch, lattice_profile::ml_training, lattice_profile::service,
                 lattice_profile::sensitive, lattice_profile::interactive}) {
    double sum = 0;
    for (double w : weights_of(p)) sum += w;
    EXPECT_NEAR(sum, 1.0, 1e-12) << to_string(p);
    EXPECT_EQ(lattice_profile_from(to_string(p)), p);
  }
  EXPECT_STREQ(to_string(lattice_profile::hpc_batch), "hpc_batch");
  EXPECT_EQ(lattice_profile_from("ml-training"), std::nullopt);
  EXPECT_EQ(lattice_profile_from(""), std::nullopt);
}

TEST(Lattice, WaitFactorIsLogarithmic) {
  auto f2 = [](double wait, double reference = 3600) {
    lattice_inputs in;
    in.wait_seconds = wait;
    in.reference_wait_seconds = reference;
    return lattice_score(in, {}).f[1];
  };
  EXPECT_EQ(f2(0), 0.0);
  EXPECT_NEAR(f2(3600), ln2, 1e-15);
  EXPECT_NEAR(f2(3 * 3600), 2 * ln2, 1e-15) << "ln 4";
  EXPECT_NEAR(f2((std::exp(1.0) - 1) * 3600), 1.0, 1e-15);
  EXPECT_NEAR(f2(60, 60), ln2, 1e-15) << "scales with the reference";
  EXPECT_GT(f2(100 * 3600), 1.0) << "not capped at 1";
  EXPECT_LT(f2(2 * 3600) - f2(3600), f2(3600) - f2(0)) << "each further hour counts less";
  EXPECT_EQ(f2(-5), 0.0);
  EXPECT_EQ(f2(3600, 0), 0.0) << "no reference, no factor";
}

TEST(Lattice, FairShareDeficitEdges) {
  auto f3 = [](double target, double actual) {
    lattice_inputs in;
    in.target_share = target;
    in.actual_share = actual;
    return lattice_score(in, {}).f[2];
  };
  EXPECT_EQ(f3(0, 0), 0.0) << "no target";
  EXPECT_EQ(f3(0, 0.3), 0.0);
  EXPECT_EQ(f3(0.25, 0.5), 0.0) << "over its share";
  EXPECT_EQ(f3(0.25, 0.25), 0.0) << "exactly at its share";
  EXPECT_EQ(f3(0.25, 0), 1.0) << "nothing used yet";
  EXPECT_EQ(f3(0.5, 0.125), 0.75);
  EXPECT_EQ(f3(0.5, -1), 1.0) << "clamped";
}

TEST(Lattice, BacklogEdges) {
  auto f6 = [](double queued, double running) {
    lattice_inputs in;
    in.queued_gpu_hours = queued;
    in.running_gpu_hours = running;
    return lattice_score(in, {}).f[5];
  };
  EXPECT_EQ(f6(0, 0), 0.0);
  EXPECT_EQ(f6(5, 0), 1.0);
  EXPECT_EQ(f6(0, 5), 0.0);
  EXPECT_EQ(f6(10, 40), 0.25);
  EXPECT_EQ(f6(40, 40), 1.0);
  EXPECT_EQ(f6(80, 40), 1.0) << "capped at 1";
}

TEST(Lattice, CheckpointFactorAndUnknowns) {
  lattice_inputs in;
  auto r = lattice_score(in, {});
  EXPECT_EQ(r.f[7], 0.5) << "checkpoint cost unknown";
  EXPECT_EQ(r.f[4], 0.5) << "data readiness defaults to unknown";
  EXPECT_EQ(r.f[6], 0.5) << "energy price defaults to the middle";
  in.checkpoint_minutes = 0;
  EXPECT_EQ(lattice_score(in, {}).f[7], 1.0);
  in.checkpoint_minutes = 1;
  EXPECT_EQ(lattice_score(in, {}).f[7], 0.5);
  in.checkpoint_minutes = 9;
  EXPECT_DOUBLE_EQ(lattice_score(in, {}).f[7], 0.1);
}

TEST(Lattice, ZeroToOneFactorsAreClamped) {
  lattice_inputs in;
  in.priority_class = 15;
  in.topology_fitness = 1.5;
  in.data_readiness = -0.2;
  in.normalized_energy_price = 1.4;
  in.conformance = 2;
  auto r = lattice_score(in, {});
  EXPECT_EQ(r.f[0], 1.0);
  EXPECT_EQ(r.f[3], 1.0);
  EXPECT_EQ(r.f[4], 0.0);
  EXPECT_EQ(r.f[6], 0.0);
  EXPECT_EQ(r.f[8], 1.0);
  in.priority_class = -3;
  in.normalized_energy_price = -1;
  r = lattice_score(in, {});
  EXPECT_EQ(r.f[0], 0.0);
  EXPECT_EQ(r.f[6], 1.0);
}
