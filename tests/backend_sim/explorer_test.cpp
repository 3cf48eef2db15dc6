// The exploration loop (backend_sim/explorer.h) with exact counts, on tiny
// "programs" that only make client choices.
#include "backend_sim/explorer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"

namespace streamcheck::sim {
namespace {

// Three choices of 2, 3 and 2 options: 12 schedules.
void three_choices(Chooser& c) {
  c.choose(ChoiceKind::Client, 2);
  c.choose(ChoiceKind::Client, 3);
  c.choose(ChoiceKind::Client, 2);
}

TEST(Explorer, DfsRunsEveryScheduleOnceAndSaysItIsExhaustive) {
  std::set<std::string> seen;
  const ExploreResult r = explore(Dfs{}, Bounds{100}, [&](Chooser& c) {
    three_choices(c);
    seen.insert(c.schedule());
    return false;
  });
  EXPECT_EQ(r.explored, 12u);
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_TRUE(r.exhaustive);
  EXPECT_FALSE(r.stopped_early);
}

TEST(Explorer, DfsStopsAtTheBoundWithoutClaimingExhaustion) {
  const ExploreResult r = explore(Dfs{}, Bounds{5}, [&](Chooser& c) {
    three_choices(c);
    return false;
  });
  EXPECT_EQ(r.explored, 5u);
  EXPECT_FALSE(r.exhaustive);
  EXPECT_FALSE(r.stopped_early);
}

TEST(Explorer, TheRunCanStopTheExploration) {
  std::uint64_t runs = 0;
  const ExploreResult r = explore(Dfs{}, Bounds{100}, [&](Chooser& c) {
    three_choices(c);
    return ++runs == 4;
  });
  EXPECT_EQ(r.explored, 4u);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_FALSE(r.exhaustive);
}

TEST(Explorer, AProgramWithoutChoicesHasOneSchedule) {
  const ExploreResult r = explore(Dfs{}, Bounds{100}, [](Chooser&) { return false; });
  EXPECT_EQ(r.explored, 1u);
  EXPECT_TRUE(r.exhaustive);
}

// --- DeviationDfs: every schedule, fewest deviations (non-first options) first

/// Runs three_choices under DeviationDfs; the schedules reported (repeats of
/// an earlier round left out), in order.
std::vector<std::string> deviation_order(std::uint64_t bound, ExploreResult* result = nullptr) {
  std::vector<std::string> out;
  const ExploreResult r = explore(DeviationDfs{}, Bounds{bound}, [&](Chooser& c) {
    three_choices(c);
    if (!repeats_earlier_round(c)) out.push_back(c.schedule());
    return false;
  });
  if (result) *result = r;
  return out;
}

TEST(Explorer, DeviationDfsRunsEveryScheduleOnceLikeDfs) {
  ExploreResult r;
  const auto order = deviation_order(100, &r);
  EXPECT_EQ(r.explored, 12u);
  EXPECT_TRUE(r.exhaustive);
  EXPECT_EQ(std::set<std::string>(order.begin(), order.end()).size(), 12u);
}

TEST(Explorer, DeviationDfsRunsFewestDeviationsFirstDeviatingEarlyFirst) {
  const auto order = deviation_order(100);
  ASSERT_EQ(order.size(), 12u);
  // Round 0, then round 1 (one non-first option: 4 schedules), round 2 (5), round 3 (2).
  EXPECT_EQ(order[0], "000");
  EXPECT_EQ(std::vector<std::string>(order.begin() + 1, order.begin() + 5),
            (std::vector<std::string>{"100", "010", "020", "001"}));
  for (std::size_t i = 5; i < 10; ++i)
    EXPECT_EQ(std::count_if(order[i].begin(), order[i].end(), [](char c) { return c != '0'; }), 2) << order[i];
  EXPECT_EQ(std::vector<std::string>(order.begin() + 10, order.end()), (std::vector<std::string>{"111", "121"}));
}

TEST(Explorer, DeviationDfsStoppedByTheBoundSaysWhichRoundsItFinished) {
  ExploreResult r;
  const auto order = deviation_order(7, &r);
  EXPECT_EQ(r.explored, 7u);
  EXPECT_EQ(order.size(), 7u);
  EXPECT_FALSE(r.exhaustive);
  EXPECT_EQ(r.deviations_covered, 1u) << "every schedule with at most 1 deviation (5) was run, 2 of round 2";
}

TEST(Explorer, RandomRunsExactlyTheBoundAndIsDeterministicPerSeed) {
  auto schedules = [](std::uint64_t seed) {
    std::vector<std::string> out;
    const ExploreResult r = explore(Random{seed}, Bounds{50}, [&](Chooser& c) {
      three_choices(c);
      out.push_back(c.schedule());
      return false;
    });
    EXPECT_EQ(r.explored, 50u);
    EXPECT_FALSE(r.exhaustive);
    return out;
  };
  const auto a = schedules(7);
  EXPECT_EQ(a, schedules(7));
  EXPECT_NE(a, schedules(8));
  // Run k is seeded with the k-th value of SplitMix64(seed).
  SplitMix64 seeds(7);
  for (const auto& s : a) {
    RandomChooser c(seeds.next());
    three_choices(c);
    EXPECT_EQ(s, c.schedule());
  }
}

// --- PCT

/// Three agents (the host, s0, s1) offered one device step: with depth 1
/// (no change point) the agent of highest priority always wins, so one
/// chooser answers the same offer alike every time, and over many seeds
/// each agent wins about a third of the time.
TEST(Pct, TheReadyAgentOfHighestPriorityRuns) {
  const std::vector<StreamIndex> heads{StreamIndex{0}, StreamIndex{1}};
  std::vector<int> wins(3, 0);
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    PctChooser c(seed, 1, 0);
    c.offer_device_step(heads, true);
    const std::uint32_t first = c.choose(ChoiceKind::DeviceStep, 3);
    for (int again = 0; again < 5; ++again) {
      c.offer_device_step(heads, true);
      ASSERT_EQ(c.choose(ChoiceKind::DeviceStep, 3), first) << "seed " << seed;
    }
    ++wins.at(first);
    EXPECT_EQ(c.agents(), 3u);
    EXPECT_EQ(c.steps(), 6u);
  }
  for (int w : wins) EXPECT_GT(w, 800) << "each of 3 agents should win about 1000 times";
}

TEST(Pct, AChangePointDropsTheAgentThatJustRan) {
  // Depth 2 over 1 step: the change point is step 1, so whoever won step 1
  // is below every other agent from step 2 on.
  const std::vector<StreamIndex> heads{StreamIndex{0}, StreamIndex{1}};
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    PctChooser c(seed, 2, 1);
    c.offer_device_step(heads, true);
    const std::uint32_t first = c.choose(ChoiceKind::DeviceStep, 3);
    c.offer_device_step(heads, true);
    EXPECT_NE(c.choose(ChoiceKind::DeviceStep, 3), first) << "seed " << seed;
  }
}

/// Two streams of two kernels each, then the device drains.
void two_streams(Chooser& c) {
  DeviceModel m(c);
  m.create_stream("s0");
  m.create_stream("s1");
  const auto a = m.alloc(StreamIndex{0}, 512);
  m.sync_device();
  for (int k = 0; k < 2; ++k)
    for (std::uint32_t s = 0; s < 2; ++s) {
      m.device_steps();
      m.launch(StreamIndex{s}, {KernelAccess{a->ptr + 256 * s, 256, Access::Write, {}}}, "k");
    }
  m.finish();
}

TEST(Pct, TheProbeCountsTheStepsTheOtherRunsDrawFrom) {
  const ExploreResult r = explore(Pct{7, 3}, Bounds{50}, [](Chooser& c) {
    two_streams(c);
    return false;
  });
  EXPECT_EQ(r.explored, 50u);
  EXPECT_FALSE(r.exhaustive);
  ASSERT_TRUE(r.pct.has_value());
  EXPECT_EQ(r.pct->depth, 3u);
  EXPECT_EQ(r.pct->agents, 3u);  // the host, s0, s1
  EXPECT_EQ(r.pct->runs_at_depth, 49u);
  // The probe is run 0, seeded like Random's run 0, with depth 1.
  PctChooser probe(SplitMix64(7).next(), 1, 0);
  two_streams(probe);
  EXPECT_EQ(r.pct->steps_covered, probe.steps());
  EXPECT_GE(r.pct->steps_drawn, r.pct->steps_covered);
  EXPECT_DOUBLE_EQ(r.pct->per_run(), 1.0 / (3.0 * static_cast<double>(r.pct->steps_drawn * r.pct->steps_drawn)));
  EXPECT_LT(r.pct->missed(), 1.0);
}

}  // namespace
}  // namespace streamcheck::sim
