// Two helpers of the world's indexes: held_jobs (which job each worker holds; entries stay
// once made and hold nothing while their worker is free) and text_order (texts compared by
// their first eight bytes before the rest, in the same order as comparing them whole).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/memory/held_jobs.hpp"
#include "core/memory/text_order.hpp"

using baton::core::held_jobs;
using baton::core::order_prefix;
using baton::core::text_less;

namespace {

std::vector<std::pair<std::string, std::string>> listed(const held_jobs& h) {
  std::vector<std::pair<std::string, std::string>> out;
  h.for_each([&](const std::string& worker, const std::string& job) { out.emplace_back(worker, job); });
  return out;
}

}  // namespace

TEST(HeldJobs, AWorkerHoldsItsJobUntilClearedAndItsEntryServesTheNextOne) {
  held_jobs h;
  EXPECT_EQ(h.find("w1"), nullptr);
  EXPECT_TRUE(listed(h).empty());
  h.set("w2", "j2");
  h.set("w1", "j1");
  ASSERT_NE(h.find("w1"), nullptr);
  EXPECT_EQ(*h.find("w1"), "j1");
  EXPECT_EQ(listed(h).size(), 2u);
  EXPECT_EQ(listed(h), (std::vector<std::pair<std::string, std::string>>{{"w1", "j1"}, {"w2", "j2"}})) << "in worker id order";

  h.clear("w1");
  EXPECT_EQ(h.find("w1"), nullptr) << "a free worker holds nothing";
  EXPECT_EQ(listed(h).size(), 1u);
  EXPECT_EQ(listed(h), (std::vector<std::pair<std::string, std::string>>{{"w2", "j2"}})) << "free workers are not listed";
  h.clear("w1");  // twice: nothing more
  h.clear("never-seen");
  EXPECT_EQ(listed(h).size(), 1u);

  h.set("w1", "j3");
  EXPECT_EQ(*h.find("w1"), "j3");
  h.set("w1", "j4");  // a second job over the first: still one held
  EXPECT_EQ(*h.find("w1"), "j4");
  EXPECT_EQ(listed(h).size(), 2u);
  h.set("w2", "");  // an empty job id frees the worker
  EXPECT_EQ(h.find("w2"), nullptr);
  EXPECT_EQ(listed(h).size(), 1u);
}

TEST(HeldJobs, ACopyAndAMoveFindWhatTheOriginalHeld) {
  held_jobs h;
  for (int i = 0; i < 50; ++i) h.set("w" + std::to_string(i), "j" + std::to_string(i));
  h.clear("w7");
  held_jobs copy = h;
  h.set("w3", "changed");  // the copy is its own
  held_jobs moved = std::move(h);
  for (const held_jobs* x : {&copy, &moved}) {
    EXPECT_EQ(listed(*x).size(), 49u);
    EXPECT_EQ(x->find("w7"), nullptr);
    ASSERT_NE(x->find("w12"), nullptr);
    EXPECT_EQ(*x->find("w12"), "j12");
  }
  EXPECT_EQ(*copy.find("w3"), "j3");
  EXPECT_EQ(*moved.find("w3"), "changed");
  held_jobs assigned;
  assigned.set("other", "x");
  assigned = copy;
  EXPECT_EQ(assigned.find("other"), nullptr);
  EXPECT_EQ(*assigned.find("w49"), "j49");
  EXPECT_EQ(listed(assigned), listed(copy));
}

TEST(TextOrder, OrdersAsTheWholeTextsDo) {
  // Short, equal-prefixed, empty, bytes above 0x7F and zero bytes: the cases where a prefix
  // alone would be wrong.
  std::vector<std::string> texts = {"",
                                    "a",
                                    "ab",
                                    std::string("ab\0", 3),
                                    "abcdefgh",
                                    "abcdefghi",
                                    "abcdefgg",
                                    "abcdefgh\x01",
                                    "\xff",
                                    "\x80zzzzzzzz",
                                    "00000001-0000-4000-8000-000000000077",
                                    "00000002-0000-4000-8000-000000000077",
                                    "00000001-0000-4000-8000-000000000078"};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string s(rng() % 12, '\0');
    for (auto& c : s) c = static_cast<char>("ab\0\xff"[rng() % 4]);
    texts.push_back(s);
  }
  for (const auto& a : texts)
    for (const auto& b : texts) {
      EXPECT_EQ(text_less(a, b), std::string_view(a) < std::string_view(b)) << '"' << a << "\" \"" << b << '"';
      if (order_prefix(a) < order_prefix(b)) {
        EXPECT_LT(std::string_view(a), std::string_view(b)) << "a smaller prefix, a smaller text";
      }
    }
}
