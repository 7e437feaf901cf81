#include "core/fair_tree.hpp"

#include <algorithm>
#include <limits>

namespace baton::core {

namespace {

// A node with its level figures, each relative to its own siblings (they stay so when tied
// accounts merge their children: merging changes the walk, not the figures).
struct level_entry {
  const share_node* node = nullptr;
  const std::string* parent = nullptr;  // the name of the account it sits under (in the input tree)
  int depth = 0;
  double usage = 0;    // subtree sum
  double shares_norm = 0;
  double effective_usage = 0;
  double level_fs = 0;
  std::vector<level_entry> children;
};

uint32_t count_users(const share_node& n) {
  if (n.user) return 1;
  uint32_t count = 0;
  for (const auto& c : n.children) count += count_users(c);
  return count;
}

size_t count_nodes(const share_node& n) {
  size_t count = 1;
  for (const auto& c : n.children) count += count_nodes(c);
  return count;
}

double level_fs_of(double shares_norm, double effective_usage) {
  if (shares_norm == 0) return 0;  // no shares: lowest, even with no usage
  if (effective_usage == 0) return std::numeric_limits<double>::infinity();
  return shares_norm / effective_usage;
}

std::vector<level_entry> level_children(const share_node& account, int depth) {
  std::vector<level_entry> out;
  out.reserve(account.children.size());
  double shares = 0, usage = 0;
  for (const auto& c : account.children) {
    level_entry e;
    e.node = &c;
    e.parent = &account.name;
    e.depth = depth;
    if (c.user) {
      e.usage = c.raw_usage;
    } else {
      e.children = level_children(c, depth + 1);
      for (const auto& child : e.children) e.usage += child.usage;  // the subtree's sum, from the level below
    }
    shares += c.raw_shares;
    usage += e.usage;
    out.push_back(std::move(e));
  }
  for (auto& e : out) {
    e.shares_norm = shares > 0 ? e.node->raw_shares / shares : 0;
    e.effective_usage = usage > 0 ? e.usage / usage : 0;
    e.level_fs = level_fs_of(e.shares_norm, e.effective_usage);
  }
  return out;
}

// Highest Level FS first. At equal Level FS users come before accounts: that is what lets
// a user tied with an account hand its rank down to the account's best user. Then names.
bool walks_before(const level_entry* a, const level_entry* b) {
  if (a->level_fs != b->level_fs) return a->level_fs > b->level_fs;
  if (a->node->user != b->node->user) return a->node->user;
  if (a->node->name != b->node->name) return a->node->name < b->node->name;
  return *a->parent < *b->parent;
}

class ranking_walk {
 public:
  ranking_walk(uint32_t users, size_t nodes) : users_(users), rank_(users), untied_rank_(users) { rows_.reserve(nodes); }

  // `starts_tied`: the account(s) these siblings came from tied with the sibling before them.
  void visit(std::vector<const level_entry*> siblings, bool starts_tied) {
    std::stable_sort(siblings.begin(), siblings.end(), walks_before);
    for (size_t i = 0; i < siblings.size(); ++i) {
      const level_entry& e = *siblings[i];
      bool tied = i == 0 ? starts_tied : siblings[i - 1]->level_fs == e.level_fs;
      if (e.node->user) {
        if (!tied) rank_ = untied_rank_;  // after a tie the next untied rank skips the shared ones
        --untied_rank_;
        rows_.push_back(row_of(e, static_cast<double>(rank_) / users_));
        continue;
      }
      // This account and the sibling accounts tied with it (they sort next to each other)
      // are walked as one: their children merged into a single ranking. That is Slurm's
      // documented rule; Slurm's own count of tied accounts stops at the first account it
      // meets, so it walks them one after another instead (docs/scheduling.md).
      std::vector<const level_entry*> merged;
      size_t last = i;
      while (last + 1 < siblings.size() && !siblings[last + 1]->node->user &&
             siblings[last + 1]->level_fs == e.level_fs)
        ++last;
      for (size_t k = i; k <= last; ++k) {
        rows_.push_back(row_of(*siblings[k], 0));
        for (const auto& c : siblings[k]->children) merged.push_back(&c);
      }
      visit(std::move(merged), tied);
      i = last;
    }
  }

  std::vector<fair_share_row> take() { return std::move(rows_); }

 private:
  static fair_share_row row_of(const level_entry& e, double fair_share) {
    fair_share_row r;
    r.account = e.node->user ? *e.parent : e.node->name;
    if (e.node->user) r.user = e.node->name;
    r.depth = e.depth;
    r.raw_shares = e.node->raw_shares;
    r.norm_shares = e.shares_norm;
    r.raw_usage = e.usage;
    r.effective_usage = e.effective_usage;
    r.level_fs = e.level_fs;
    r.fair_share = fair_share;
    return r;
  }

  uint32_t users_;
  uint32_t rank_;         // the rank users get while tied
  uint32_t untied_rank_;  // one less for every user ranked, tied or not
  std::vector<fair_share_row> rows_;
};

}  // namespace

std::vector<fair_share_row> fair_tree(const share_node& root) {
  if (root.user) return {};
  std::vector<level_entry> top = level_children(root, 0);
  std::vector<const level_entry*> siblings;
  for (const auto& e : top) siblings.push_back(&e);
  ranking_walk walk(count_users(root), count_nodes(root));
  walk.visit(std::move(siblings), false);
  return walk.take();
}

}  // namespace baton::core
