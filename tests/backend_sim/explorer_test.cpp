// The exploration loop (backend_sim/explorer.h) with exact counts, on tiny
// "programs" that only make client choices.
#include "backend_sim/explorer.h"

#include <gtest/gtest.h>

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
