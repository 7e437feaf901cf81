#pragma once
// Fair Tree fair share, Slurm's default algorithm (priority/multifactor): associations form
// a tree of accounts with users as leaves; at each level a child's Level FS is its share of
// the siblings' shares over its share of the siblings' usage; a depth-first walk, highest
// Level FS first, ranks every user, and a user's fair-share factor is rank / users.
// Pure: usage is passed in (decayed GPU-seconds, core/policy/usage.hpp), nothing is read here.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace baton::core {

// One association: an account (children may be accounts or users) or a user (a leaf).
struct share_node {
  std::string name;
  bool user = false;
  uint32_t raw_shares = 1;
  double raw_usage = 0;              // users: decayed GPU-seconds; accounts: ignored (the subtree's sum is used)
  std::vector<share_node> children;  // accounts only; their order does not matter (ties break on name)
};

// One line of `sshare -l`, Fair Tree flavour.
struct fair_share_row {
  std::string account;  // an account row: the account; a user row: the account it sits under
  std::string user;     // empty for an account row
  int depth = 0;        // root's children are depth 0
  uint32_t raw_shares = 0;
  double norm_shares = 0;      // S: raw shares over the siblings' raw shares (self included)
  double raw_usage = 0;        // the subtree's usage
  double effective_usage = 0;  // U: raw usage over the siblings' raw usage (self included); 0 when all are 0
  double level_fs = 0;         // S / U; +infinity when U is 0 (and 0 when S is 0)
  double fair_share = 0;       // users: rank / number of users; accounts: 0
};

// Rows in the order of the ranking walk: depth-first, children by Level FS (highest first;
// at equal values users before accounts, as Slurm sorts them, then by name), each account row
// before its subtree (tied accounts: all their rows, then their merged children). Ties follow
// Slurm: sibling users with equal Level FS share one rank; a user tied with a sibling account
// takes the rank of that account's best user; tied sibling accounts have their children merged
// into one ranking. The root itself is not a row.
std::vector<fair_share_row> fair_tree(const share_node& root);
// The same walk without copying names, for callers that rank over and over (the trace
// simulator, through fair_tree_ranker below): each entry points at its node in `root` (valid
// while the tree is), and `out`'s storage is reused. fair_tree(root) above is these entries with the names filled in.
struct fair_share_rank {
  const share_node* node = nullptr;
  const share_node* parent = nullptr;  // the account it sits under (the root for depth 0)
  bool user = false;                   // node->user
  int depth = 0;
  double norm_shares = 0, raw_usage = 0, effective_usage = 0, level_fs = 0, fair_share = 0;
};
void fair_tree(const share_node& root, std::vector<fair_share_rank>& out);

// The same ranking over and over for one tree whose users' usage changes between rankings
// (the trace simulator ranks ~2,000 associations 100,000 times): the tree is laid out once,
// and each rank() reads every user's raw_usage again and starts each account's sort from its
// children's last order, which a change of usage seldom disturbs much. The result is
// fair_tree(root, out)'s, to the last bit. The tree must outlive the ranker and keep its
// shape, shares and names (only raw_usage may change); after any other change, make a new one.
class fair_tree_ranker {
 public:
  explicit fair_tree_ranker(const share_node& root);
  ~fair_tree_ranker();
  fair_tree_ranker(fair_tree_ranker&&) noexcept;
  fair_tree_ranker& operator=(fair_tree_ranker&&) noexcept;
  void rank(std::vector<fair_share_rank>& out);

  struct layout;  // (fair_tree.cpp)

 private:
  std::unique_ptr<layout> layout_;
};

}  // namespace baton::core
