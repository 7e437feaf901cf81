#include "core/fair_tree.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace baton::core {

namespace {

// A node with its level figures, each relative to its own siblings (they stay so when tied
// accounts merge their children: merging changes the walk, not the figures). All entries of
// one ranking live in one flat vector, each account's children side by side.
struct level_entry {
  const share_node* node = nullptr;
  const share_node* parent = nullptr;   // the account it sits under (in the input tree)
  bool user = false;                    // (the node's own fields, copied: the walk reads only entries)
  uint32_t raw_shares = 0;
  uint64_t name_prefix = 0;             // the name's first eight bytes, big-endian: compared before the name
  int depth = 0;
  double usage = 0;    // subtree sum
  double shares_norm = 0;
  double effective_usage = 0;
  double level_fs = 0;
  uint32_t first_child = 0, child_count = 0;  // accounts: their children's place in the flat vector
};

// Scratch kept per thread between rankings, so a ranking allocates nothing once warm (the
// scheduler and the simulator rank thousands of associations many times over).
struct scratch {
  std::vector<level_entry> entries;
  std::vector<std::vector<const level_entry*>> lists;  // one sibling list per depth of the walk
};
thread_local scratch tls;

// The first eight bytes of a name as one number that orders as they do (unsigned, zero-padded):
// two names with different prefixes compare as their prefixes; equal prefixes say nothing.
uint64_t prefix_of(const std::string& name) {
  unsigned char bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(bytes, name.data(), std::min<size_t>(name.size(), 8));
  uint64_t p = 0;
  for (unsigned char b : bytes) p = p << 8 | b;
  return p;
}

double level_fs_of(double shares_norm, double effective_usage) {
  if (shares_norm == 0) return 0;  // no shares: lowest, even with no usage
  if (effective_usage == 0) return std::numeric_limits<double>::infinity();
  return shares_norm / effective_usage;
}

// Lays out the account's children (and, after them, their subtrees) and returns where they
// start. `users` counts the leaves met, `depth_max` the deepest level laid out.
uint32_t lay_out_children(const share_node& account, int depth, std::vector<level_entry>& out, uint32_t& users,
                          int& depth_max) {
  depth_max = std::max(depth_max, depth);
  const auto first = static_cast<uint32_t>(out.size());
  const auto n = static_cast<uint32_t>(account.children.size());
  out.resize(first + n);
  double shares = 0, usage = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const auto& c = account.children[i];
    {
      auto& e = out[first + i];
      e.node = &c;
      e.parent = &account;
      e.user = c.user;
      e.raw_shares = c.raw_shares;
      e.name_prefix = prefix_of(c.name);
      e.depth = depth;
      e.usage = 0;
      e.first_child = e.child_count = 0;
    }
    if (c.user) {
      out[first + i].usage = c.raw_usage;
      ++users;
    } else {
      const uint32_t children = lay_out_children(c, depth + 1, out, users, depth_max);  // (out may move)
      auto& e = out[first + i];
      e.first_child = children;
      e.child_count = static_cast<uint32_t>(c.children.size());
      for (uint32_t k = children; k < children + e.child_count; ++k) e.usage += out[k].usage;  // the subtree's sum, from the level below
    }
    shares += c.raw_shares;
    usage += out[first + i].usage;
  }
  for (uint32_t i = first; i < first + n; ++i) {
    auto& e = out[i];
    e.shares_norm = shares > 0 ? e.raw_shares / shares : 0;
    e.effective_usage = usage > 0 ? e.usage / usage : 0;
    e.level_fs = level_fs_of(e.shares_norm, e.effective_usage);
  }
  return first;
}

// Highest Level FS first. At equal Level FS users come before accounts: that is what lets
// a user tied with an account hand its rank down to the account's best user. Then names
// (and, for children merged from tied accounts, the accounts' names): a total order, so an
// unstable sort gives the one answer.
bool walks_before(const level_entry* a, const level_entry* b) {
  if (a->level_fs != b->level_fs) return a->level_fs > b->level_fs;
  if (a->user != b->user) return a->user;
  if (a->name_prefix != b->name_prefix) return a->name_prefix < b->name_prefix;
  if (a->node->name != b->node->name) return a->node->name < b->node->name;
  return a->parent->name < b->parent->name;
}

class ranking_walk {
 public:
  ranking_walk(uint32_t users, const std::vector<level_entry>& entries, std::vector<fair_share_rank>& out)
      : users_(users), rank_(users), untied_rank_(users), entries_(entries), out_(out) {}

  // Ranks the sibling list at `depth` of the scratch lists. `starts_tied`: the account(s)
  // these siblings came from tied with the sibling before them.
  void visit(size_t depth, bool starts_tied) {
    auto& siblings = tls.lists[depth];
    std::sort(siblings.begin(), siblings.end(), walks_before);
    for (size_t i = 0; i < siblings.size(); ++i) {
      const level_entry& e = *siblings[i];
      bool tied = i == 0 ? starts_tied : siblings[i - 1]->level_fs == e.level_fs;
      if (e.user) {
        if (!tied) rank_ = untied_rank_;  // after a tie the next untied rank skips the shared ones
        --untied_rank_;
        add_row(e, static_cast<double>(rank_) / users_);
        continue;
      }
      // This account and the sibling accounts tied with it (they sort next to each other)
      // are walked as one: their children merged into a single ranking. That is Slurm's
      // documented rule; Slurm's own count of tied accounts stops at the first account it
      // meets, so it walks them one after another instead (docs/scheduling.md).
      auto& merged = tls.lists[depth + 1];
      merged.clear();
      size_t last = i;
      while (last + 1 < siblings.size() && !siblings[last + 1]->user &&
             siblings[last + 1]->level_fs == e.level_fs)
        ++last;
      for (size_t k = i; k <= last; ++k) {
        add_row(*siblings[k], 0);
        for (uint32_t c = siblings[k]->first_child; c < siblings[k]->first_child + siblings[k]->child_count; ++c)
          merged.push_back(&entries_[c]);
      }
      visit(depth + 1, tied);
      i = last;
    }
  }

  size_t ranked() const { return count_; }

 private:
  void add_row(const level_entry& e, double fair_share) {
    if (count_ == out_.size()) out_.emplace_back();
    fair_share_rank& r = out_[count_++];
    r.node = e.node;
    r.user = e.user;
    r.parent = e.parent;
    r.depth = e.depth;
    r.norm_shares = e.shares_norm;
    r.raw_usage = e.usage;
    r.effective_usage = e.effective_usage;
    r.level_fs = e.level_fs;
    r.fair_share = fair_share;
  }

  uint32_t users_;
  uint32_t rank_;         // the rank users get while tied
  uint32_t untied_rank_;  // one less for every user ranked, tied or not
  const std::vector<level_entry>& entries_;
  std::vector<fair_share_rank>& out_;
  size_t count_ = 0;
};

}  // namespace

void fair_tree(const share_node& root, std::vector<fair_share_rank>& out) {
  if (root.user) {
    out.clear();
    return;
  }
  auto& entries = tls.entries;
  entries.clear();
  uint32_t users = 0;
  int depth_max = 0;
  const uint32_t top = lay_out_children(root, 0, entries, users, depth_max);
  // One sibling list per depth, sized now: the walk holds references into them while it recurses.
  if (tls.lists.size() < static_cast<size_t>(depth_max) + 2) tls.lists.resize(static_cast<size_t>(depth_max) + 2);
  auto& siblings = tls.lists[0];
  siblings.clear();
  for (uint32_t k = top; k < top + root.children.size(); ++k) siblings.push_back(&entries[k]);
  ranking_walk walk(users, entries, out);
  walk.visit(0, false);
  out.resize(walk.ranked());
}

std::vector<fair_share_row> fair_tree(const share_node& root) {
  std::vector<fair_share_rank> ranks;
  fair_tree(root, ranks);
  std::vector<fair_share_row> rows;
  rows.reserve(ranks.size());
  for (const auto& k : ranks) {
    fair_share_row r;
    r.account = k.node->user ? k.parent->name : k.node->name;
    if (k.node->user) r.user = k.node->name;
    r.depth = k.depth;
    r.raw_shares = k.node->raw_shares;
    r.norm_shares = k.norm_shares;
    r.raw_usage = k.raw_usage;
    r.effective_usage = k.effective_usage;
    r.level_fs = k.level_fs;
    r.fair_share = k.fair_share;
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace baton::core
