// The exploration loop (backend_sim/explorer.h) with exact counts, on tiny
// "programs" that only make client choices.
#include "backend_sim/explorer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace streamcheck::sim
