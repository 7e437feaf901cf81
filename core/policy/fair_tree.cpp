#include "core/policy/fair_tree.hpp"
#include "core/memory/text_order.hpp"

#include <algorithm>
#include <limits>

namespace baton::core {

namespace {

// A node with its level figures, each relative to its own siblings (they stay so when tied
// accounts merge their children: merging changes the walk, not the figures). All entries of
// one ranking live in one flat vector, each account's children side by side.
struct level_entry {
  const share_node* node = nullptr;
  const share_node* parent = nullptr;  // the account it sits under (in the input tree)
  bool user = false;                   // (the node's own fields, copied: the walk reads only entries)
  uint32_t raw_shares = 0;
  uint64_t name_prefix = 0;  // the name's first eight bytes, big-endian: compared before the name
  int depth = 0;
  double usage = 0;  // subtree sum
  double shares_norm = 0;
  double effective_usage = 0;
  double level_fs = 0;
  uint32_t first_child = 0, child_count = 0;  // accounts: their children's place in the flat vector
  uint32_t children_group = 0;                // accounts: their children's sibling group
};

// One account's children (the root's: group 0): where they sit in the flat vector.
struct sibling_group {
  uint32_t first = 0, count = 0;
};

double level_fs_of(double shares_norm, double effective_usage) {
  if (shares_norm == 0) return 0;  // no shares: lowest, even with no usage
  if (effective_usage == 0) return std::numeric_limits<double>::infinity();
  return shares_norm / effective_usage;
}

// Highest Level FS first. At equal Level FS users come before accounts: that is what lets
// a user tied with an account hand its rank down to the account's best user. Then names
// (and, for children merged from tied accounts, the accounts' names): a total order, so any
// correct sort gives the one answer.
bool walks_before(const level_entry* a, const level_entry* b) {
  if (a->level_fs != b->level_fs) return a->level_fs > b->level_fs;
  if (a->user != b->user) return a->user;
  if (a->name_prefix != b->name_prefix) return a->name_prefix < b->name_prefix;
  if (a->node->name != b->node->name) return a->node->name < b->node->name;
  return a->parent->name < b->parent->name;
}

// Sorts siblings by walks_before. A list in its last ranking's order is usually nearly sorted
// (usage changed for a few): insertion sort, linear then; when it has moved more than that
// allows, std::sort finishes the job. Either way the one total order.
void sort_siblings(std::vector<const level_entry*>& v) {
  const size_t budget = 8 * v.size() + 64;
  size_t moved = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    const level_entry* x = v[i];
    size_t j = i;
    for (; j > 0 && walks_before(x, v[j - 1]); --j) {
      v[j] = v[j - 1];
      if (++moved > budget) {
        v[j - 1] = x;  // (a permutation again) and the rest by std::sort
        std::sort(v.begin(), v.end(), walks_before);
        return;
      }
    }
    v[j] = x;
  }
}

}  // namespace

// The tree laid out once: entries, sibling groups, and each group's children in the order the
// last ranking sorted them.
struct fair_tree_ranker::layout {
  std::vector<level_entry> entries;
  std::vector<sibling_group> groups;
  std::vector<std::vector<const level_entry*>> orders;  // per group
  std::vector<std::vector<const level_entry*>> merged;  // per depth: the children of tied accounts, merged
  uint32_t users = 0;
  int depth_max = 0;

  // Lays out the account's children (and, after them, their subtrees): their group's index.
  uint32_t lay_out(const share_node& account, int depth) {
    depth_max = std::max(depth_max, depth);
    const auto first = static_cast<uint32_t>(entries.size());
    const auto n = static_cast<uint32_t>(account.children.size());
    const auto group = static_cast<uint32_t>(groups.size());
    groups.push_back({first, n});
    entries.resize(first + n);
    double shares = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const auto& c = account.children[i];
      {
        auto& e = entries[first + i];
        e.node = &c;
        e.parent = &account;
        e.user = c.user;
        e.raw_shares = c.raw_shares;
        e.name_prefix = order_prefix(c.name);
        e.depth = depth;
      }
      if (c.user) {
        ++users;
      } else {
        const uint32_t children = lay_out(c, depth + 1);  // (entries may move)
        auto& e = entries[first + i];
        e.children_group = children;
        e.first_child = groups[children].first;
        e.child_count = groups[children].count;
      }
      shares += c.raw_shares;
    }
    for (uint32_t i = first; i < first + n; ++i) entries[i].shares_norm = shares > 0 ? entries[i].raw_shares / shares : 0;
    return group;
  }

  // The users' usage read from the tree again, every subtree's sum and every level figure.
  void refresh() {
    // An account's children sit after it in the vector: from the back, sums come bottom-up.
    for (size_t i = entries.size(); i-- > 0;) {
      auto& e = entries[i];
      if (e.user) {
        e.usage = e.node->raw_usage;
        continue;
      }
      e.usage = 0;
      for (uint32_t k = e.first_child; k < e.first_child + e.child_count; ++k) e.usage += entries[k].usage;
    }
    for (const auto& g : groups) {
      double usage = 0;
      for (uint32_t i = g.first; i < g.first + g.count; ++i) usage += entries[i].usage;
      for (uint32_t i = g.first; i < g.first + g.count; ++i) {
        auto& e = entries[i];
        e.effective_usage = usage > 0 ? e.usage / usage : 0;
        e.level_fs = level_fs_of(e.shares_norm, e.effective_usage);
      }
    }
  }
};

namespace {

class ranking_walk {
 public:
  ranking_walk(fair_tree_ranker::layout& l, std::vector<fair_share_rank>& out)
      : l_(l), rank_(l.users), untied_rank_(l.users), out_(out) {}

  // Ranks one sibling list at `depth`. `starts_tied`: the account(s) these siblings came from
  // tied with the sibling before them.
  void visit(std::vector<const level_entry*>& siblings, size_t depth, bool starts_tied) {
    sort_siblings(siblings);
    for (size_t i = 0; i < siblings.size(); ++i) {
      const level_entry& e = *siblings[i];
      bool tied = i == 0 ? starts_tied : siblings[i - 1]->level_fs == e.level_fs;
      if (e.user) {
        if (!tied) rank_ = untied_rank_;  // after a tie the next untied rank skips the shared ones
        --untied_rank_;
        add_row(e, static_cast<double>(rank_) / l_.users);
        continue;
      }
      // This account and the sibling accounts tied with it (they sort next to each other)
      // are walked as one: their children merged into a single ranking. That is Slurm's
      // documented rule; Slurm's own count of tied accounts stops at the first account it
      // meets, so it walks them one after another instead (docs/scheduling.md).
      size_t last = i;
      while (last + 1 < siblings.size() && !siblings[last + 1]->user && siblings[last + 1]->level_fs == e.level_fs) ++last;
      if (last == i) {
        add_row(e, 0);
        visit(l_.orders[e.children_group], depth + 1, tied);
        continue;
      }
      auto& merged = l_.merged[depth + 1];
      merged.clear();
      for (size_t k = i; k <= last; ++k) {
        add_row(*siblings[k], 0);
        for (uint32_t c = siblings[k]->first_child; c < siblings[k]->first_child + siblings[k]->child_count; ++c)
          merged.push_back(&l_.entries[c]);
      }
      visit(merged, depth + 1, tied);
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

  fair_tree_ranker::layout& l_;
  uint32_t rank_;         // the rank users get while tied
  uint32_t untied_rank_;  // one less for every user ranked, tied or not
  std::vector<fair_share_rank>& out_;
  size_t count_ = 0;
};

}  // namespace

fair_tree_ranker::fair_tree_ranker(const share_node& root) : layout_(std::make_unique<layout>()) {
  if (root.user) return;  // nothing to rank
  layout_->lay_out(root, 0);
  layout_->orders.resize(layout_->groups.size());
  for (size_t g = 0; g < layout_->groups.size(); ++g) {
    const auto& group = layout_->groups[g];
    for (uint32_t i = group.first; i < group.first + group.count; ++i) layout_->orders[g].push_back(&layout_->entries[i]);
  }
  layout_->merged.resize(static_cast<size_t>(layout_->depth_max) + 2);
}

fair_tree_ranker::~fair_tree_ranker() = default;
fair_tree_ranker::fair_tree_ranker(fair_tree_ranker&&) noexcept = default;
fair_tree_ranker& fair_tree_ranker::operator=(fair_tree_ranker&&) noexcept = default;

void fair_tree_ranker::rank(std::vector<fair_share_rank>& out) {
  if (layout_->groups.empty()) {
    out.clear();
    return;
  }
  layout_->refresh();
  ranking_walk walk(*layout_, out);
  walk.visit(layout_->orders[0], 0, false);
  out.resize(walk.ranked());
}

void fair_tree(const share_node& root, std::vector<fair_share_rank>& out) { fair_tree_ranker(root).rank(out); }

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
