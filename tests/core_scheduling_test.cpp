#include <gtest/gtest.h>

#include "core/world/scheduling.hpp"

using namespace baton::core;

namespace {

struct pool {
  world w;
  time_us now = 1'700'000'000'000'000;

  void worker(const std::string& id, platform kind, int gpus, const std::string& model, double vram = 0,
              const std::string& image = "img", const std::string& provider = "") {
    register_worker r{id, kind, model, gpus, vram, image, provider, ""};
    now += 1000;
    apply(w, decide_register(nullptr, r, now), now);
  }
  void job(const std::string& id, const std::string& image = "img", std::vector<std::string> pins = {}) {
    create_job c{id, id, "/b", image, "", pins, 5};
    now += 1000;
    apply(w, decide_create(nullptr, c, now), now);
  }
  std::optional<std::string> poll(const std::string& worker_id, std::set<std::string> stale = {}) {
    return choose_job_for(w, worker_id, stale, {}, now).job_id;
  }
};

}  // namespace

TEST(Scheduling, RankOrderPlatformThenGpusThenVram) {
  pool p;
  p.worker("salad4", platform::salad, 4, "H100");
  p.worker("hpc1-a30", platform::hpc, 1, "A30");
  p.worker("hpc1-h100", platform::hpc, 1, "H100");
  p.worker("hpc2-a10", platform::hpc, 2, "A10");
  p.worker("hpc1-reported", platform::hpc, 1, "A30", 100);  // reported vram_gb wins over the model table
  std::vector<std::string> order;
  for (const auto& r : idle_workers(p.w)) order.emplace_back(r.id);
  EXPECT_EQ(order, (std::vector<std::string>{"hpc2-a10", "hpc1-reported", "hpc1-h100", "hpc1-a30", "salad4"}));
}

TEST(Scheduling, VramTableOrdersModelsAsTheSeedSays) {
  pool p;
  for (auto m : {"A30", "A10", "RTX 4090", "RTX A6000", "A100", "H100"}) p.worker(m, platform::hpc, 1, m);
  std::vector<std::string> order;
  for (const auto& r : idle_workers(p.w)) order.emplace_back(r.id);
  EXPECT_EQ(order, (std::vector<std::string>{"H100", "A100", "RTX A6000", "RTX 4090", "A10", "A30"}));
}

// Vendors' model strings rank by the table's longest name they contain ("A10G" is an A10,
// "A100-PCIE-40GB" an A100); unknown models rank last.
TEST(Scheduling, ModelStringsRankByTheLongestKnownNameTheyContain) {
  const std::vector<std::pair<std::string, int>> models = {{"NVIDIA H100 80GB HBM3", 6},
                                                           {"A100-SXM4-80GB", 5},
                                                           {"NVIDIA RTX A6000", 4},
                                                           {"GeForce RTX 4090", 3},
                                                           {"NVIDIA A10", 2},
                                                           {"A30", 1},
                                                           {"Tesla V100", 0},
                                                           {"A100-PCIE-40GB", 5},
                                                           {"H100 NVL", 6},
                                                           {"T4", 0},
                                                           {"L40S", 0},
                                                           {"NVIDIA A10G", 2}};
  for (const auto& [model, rank] : models) {
    worker w;
    w.id = "w";
    set_gpu_model(w, model);
    EXPECT_EQ(rank_of(w).model_rank, rank) << model;
  }
}

TEST(Scheduling, LowerRankedPollerGetsNothingWhileABetterWorkerIsIdle) {
  pool p;
  p.worker("small", platform::hpc, 1, "A10");
  p.worker("big", platform::hpc, 4, "A100");
  p.job("j1");
  EXPECT_FALSE(p.poll("small")) << "polling first must not win";
  EXPECT_EQ(p.poll("big"), "j1");
  p.job("j2");
  EXPECT_EQ(p.poll("small"), "j2") << "two jobs: the better worker takes the oldest, the poller the next";
}

TEST(Scheduling, SaladOnlyWhenNoHpcWorkerCanRunIt) {
  pool p;
  p.worker("salad", platform::salad, 8, "H100");
  p.worker("hpc", platform::hpc, 1, "A10", 0, "img", "clusterA:1");
  p.job("j");
  EXPECT_FALSE(p.poll("salad"));
  EXPECT_EQ(p.poll("hpc"), "j");
  p.job("other-image", "img2");
  EXPECT_FALSE(p.poll("salad")) << "image must match";
}

TEST(Scheduling, PinsAreRespectedAndDoNotBlockOthers) {
  pool p;
  p.worker("a", platform::hpc, 4, "H100", 0, "img", "clusterA:1");
  p.worker("b", platform::hpc, 1, "A10", 0, "img", "clusterB:2");
  p.worker("s", platform::salad, 1, "A10");
  p.job("pinned-b", "img", {"clusterB"});
  p.job("free");
  EXPECT_EQ(p.poll("b"), "pinned-b");
  EXPECT_EQ(p.poll("a"), "free") << "the pinned older job does not block the better worker";
  EXPECT_FALSE(p.poll("s"));
}

TEST(Scheduling, StaleWorkersAreLeftOutAndRecorded) {
  pool p;
  p.worker("small", platform::hpc, 1, "A10");
  p.worker("big", platform::hpc, 4, "A100");
  p.job("j1");
  auto c = choose_job_for(p.w, "small", {"big"}, {}, p.now);
  EXPECT_EQ(c.job_id, "j1");
  EXPECT_EQ(c.record["stale_excluded"], nlohmann::json::array({"big"}));
  EXPECT_EQ(c.record["worker_score"], score_of(p.w.workers.at("small")));
}

TEST(Scheduling, OldestFirstTiesById) {
  pool p;
  p.worker("w", platform::hpc, 1, "A10");
  create_job b{"b", "b", "/b", "img", "", {}, 5}, a{"a", "a", "/b", "img", "", {}, 5};
  apply(p.w, decide_create(nullptr, b, 5), 5);
  apply(p.w, decide_create(nullptr, a, 5), 5);
  EXPECT_EQ(p.poll("w"), "a");
}

// A choice made into one reused by the choices before it (a re-derivation's way) is the
// choice made fresh: longer and shorter samples and stale lists after each other, a walk and
// the unpinned shortcut, an empty queue and an unknown poller (no record at all).
TEST(Scheduling, AChoiceMadeIntoAReusedOneIsTheFreshChoice) {
  pool p;
  for (int i = 0; i < 6; ++i) p.worker("w" + std::to_string(i), platform::hpc, 1 + i % 3, i % 2 ? "A100" : "H100");
  p.worker("lonely", platform::hpc, 2, "A10", 0, "empty-image");
  for (int i = 0; i < 8; ++i) p.job("j" + std::to_string(i));
  auto same = [&](const std::string& poller, const std::set<std::string>& stale, assignment_choice& reused) {
    choose_assignment_into(p.w, poller, stale, {}, p.now, reused);
    const auto fresh = choose_assignment(p.w, poller, stale, {}, p.now);
    EXPECT_EQ(reused.job_id, fresh.job_id) << poller;
    ASSERT_EQ(reused.record.has_value(), fresh.record.has_value()) << poller;
    if (fresh.record) {
      EXPECT_EQ(to_json(*reused.record), to_json(*fresh.record)) << poller;
    }
  };
  // (Each list grows and shrinks between neighbours: three samples, none, one, three with two
  // stale workers, three with none, one.)
  const std::vector<std::pair<std::string, std::set<std::string>>> polls = {{"w0", {}},     {"w5", {"w0", "w1", "w2"}},
                                                                            {"w4", {"w2"}}, {"w3", {"w0", "w4"}},
                                                                            {"w1", {}},     {"w5", {}},
                                                                            {"lonely", {}}, {"w0", {}},
                                                                            {"nobody", {}}, {"w3", {"w0", "w4"}}};
  assignment_choice reused;
  for (int round = 0; round < 2; ++round) {
    for (const auto& [poller, stale] : polls) same(poller, stale, reused);
    p.job("pinned", "img", {"nowhere"});  // a constrained job: the second round walks
  }
  EXPECT_FALSE(reused.record->taken_sample.empty() && reused.record->stale_excluded.empty())
      << "the last poll should have had something to write over";
}
