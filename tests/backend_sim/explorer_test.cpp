// The exploration loop (backend_sim/explorer.h) with exact counts, on tiny
// "programs" that only make client choices.
#include "backend_sim/explorer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
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
  EXPECT_EQ(r.pct->steps, probe.steps());
  EXPECT_DOUBLE_EQ(r.pct->per_run(), 1.0 / (3.0 * static_cast<double>(r.pct->steps * r.pct->steps)));
  EXPECT_LT(r.pct->missed(), 1.0);
}

// --- Sharded explorations (--shard I/N): disjoint parts that make the whole

/// A program whose tree of choices is irregular: how many options a choice
/// has, and whether the run goes on, depend on the answers so far and on
/// `seed`. Answers of 1 option are forced (not recorded).
void irregular(Chooser& c, std::uint64_t seed) {
  std::uint64_t h = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (int depth = 0; depth < 6; ++depth) {
    const auto options = static_cast<std::uint32_t>(1 + (h >> 7) % 4);
    h = (h ^ c.choose(ChoiceKind::Client, options)) * 0xbf58476d1ce4e5b9ULL + static_cast<std::uint64_t>(depth);
    if ((h >> 11) % 5 == 0) break;
  }
}

struct Part {
  std::vector<std::string> counted;  // in the order run
  std::uint64_t calls = 0;           // runs made, counted or not
  ExploreResult result;
};

Part explore_part(const Strategy& strategy, std::uint64_t seed, Shard shard, std::uint64_t bound = 100000) {
  Part p;
  p.result = explore(strategy, Bounds{bound, shard}, [&](Chooser& c) {
    irregular(c, seed);
    ++p.calls;
    if (!repeats_earlier_round(c) && c.counted()) p.counted.push_back(c.schedule());
    return false;
  });
  return p;
}

TEST(Shard, DfsPartsAreDisjointAndTogetherRunEveryScheduleOnce) {
  // For Dfs and DeviationDfs, on 60 irregular trees, split 1 to 7 ways:
  // every part is exhaustive, no schedule is counted by two parts, the
  // parts together count exactly the whole exploration's schedules, and
  // their `explored` add up to the whole's.
  std::size_t split_trees = 0;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    for (const Strategy& strategy : {Strategy{Dfs{}}, Strategy{DeviationDfs{}}}) {
      const Part whole = explore_part(strategy, seed, Shard{});
      ASSERT_TRUE(whole.result.exhaustive);
      const std::set<std::string> all(whole.counted.begin(), whole.counted.end());
      ASSERT_EQ(all.size(), whole.counted.size());
      for (std::uint32_t n = 1; n <= 7; ++n) {
        std::multiset<std::string> union_of_parts;
        std::uint64_t explored = 0, calls = 0;
        std::size_t nonempty = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
          const Part part = explore_part(strategy, seed, Shard{i, n});
          EXPECT_TRUE(part.result.exhaustive) << "seed " << seed << ", shard " << i << "/" << n;
          EXPECT_EQ(part.result.explored, part.counted.size());
          explored += part.result.explored;
          calls += part.calls;
          nonempty += part.counted.empty() ? 0 : 1;
          union_of_parts.insert(part.counted.begin(), part.counted.end());
        }
        EXPECT_EQ(union_of_parts, std::multiset<std::string>(all.begin(), all.end()))
            << "seed " << seed << ", " << n << " shards";
        EXPECT_EQ(explored, whole.result.explored);
        // A part enters only its own subtrees: the parts together run each
        // schedule about once, not n times (the runs that lead a part to
        // its subtrees are few).
        // (Each part runs at most 6 runs of others, one per choice of a path.)
        EXPECT_LE(calls, whole.calls + 6 * n) << "seed " << seed << ", " << n << " shards";
        if (n == 4 && nonempty >= 3) ++split_trees;
      }
    }
  }
  EXPECT_GE(split_trees, 40u) << "too few trees were split over at least 3 of 4 shards";
}

TEST(Shard, DeviationDfsOrderPutsTheRunsOfTheShardsBackInTheWholeOrder) {
  // streamcheck merge sorts the shards' runs with deviation_dfs_before: that
  // gives exactly the order one DeviationDfs exploration runs them in.
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    std::vector<std::vector<Choice>> whole;
    (void)explore(DeviationDfs{}, Bounds{100000}, [&](Chooser& c) {
      irregular(c, seed);
      if (!repeats_earlier_round(c)) whole.push_back(c.taken());
      return false;
    });
    std::vector<std::vector<Choice>> parts;
    for (std::uint32_t i = 0; i < 3; ++i)
      (void)explore(DeviationDfs{}, Bounds{100000, Shard{i, 3}}, [&](Chooser& c) {
        irregular(c, seed);
        if (!repeats_earlier_round(c) && c.counted()) parts.push_back(c.taken());
        return false;
      });
    std::sort(parts.begin(), parts.end(), deviation_dfs_before);
    ASSERT_EQ(parts.size(), whole.size()) << "seed " << seed;
    for (std::size_t k = 0; k < parts.size(); ++k)
      EXPECT_EQ(encode_schedule(parts[k]), encode_schedule(whole[k])) << "seed " << seed << ", run " << k;
  }
}

TEST(Shard, ABoundedDfsShardCountsAtMostItsBound) {
  const Part part = explore_part(Dfs{}, 3, Shard{1, 2}, 2);
  EXPECT_LE(part.result.explored, 2u);
  EXPECT_EQ(part.result.explored, part.counted.size());
}

TEST(Shard, RandomAndPctShardsRunTheWholeExplorationsRunsSeededAlike) {
  for (const Strategy& strategy : {Strategy{Random{5}}, Strategy{Pct{5, 2}}}) {
    std::map<std::uint64_t, std::string> whole;
    (void)explore(strategy, Bounds{40}, [&](Chooser& c) {
      irregular(c, 9);
      if (c.counted()) whole[c.run_number()] = c.schedule();
      return false;
    });
    ASSERT_EQ(whole.size(), 40u);
    std::map<std::uint64_t, std::string> parts;
    for (std::uint32_t i = 0; i < 3; ++i)
      (void)explore(strategy, Bounds{40, Shard{i, 3}}, [&](Chooser& c) {
        irregular(c, 9);
        if (!c.counted()) return false;
        EXPECT_EQ(c.run_number() % 3, i);
        EXPECT_TRUE(parts.emplace(c.run_number(), c.schedule()).second) << "run " << c.run_number() << " twice";
        return false;
      });
    EXPECT_EQ(parts, whole);
  }
}

TEST(Shard, ShardSetNarrowsToOneOwnerPerOption) {
  // 5 shards, a choice of 2: options 0 and 1 split them {0, 2, 4} and {1, 3};
  // a choice of 3 under {0, 2, 4}: one shard each. 2 shards, a choice of 3:
  // option 2 goes to shard 0 (2 % 2).
  const ShardSet all = ShardSet::all(5);
  const ShardSet even = all.narrow(2, 0), odd = all.narrow(2, 1);
  EXPECT_EQ(even.size, 3u);
  EXPECT_TRUE(even.contains(0) && even.contains(2) && even.contains(4) && !even.contains(1));
  EXPECT_EQ(odd.size, 2u);
  EXPECT_TRUE(odd.contains(1) && odd.contains(3) && !odd.contains(0) && !odd.contains(5));
  for (std::uint32_t j = 0; j < 3; ++j) {
    const ShardSet one = even.narrow(3, j);
    EXPECT_EQ(one.size, 1u);
    EXPECT_EQ(one.owner(), 2u * j);
  }
  EXPECT_EQ(ShardSet::all(2).narrow(3, 2).owner(), 0u);
  DfsEnumerator::RunChooser c(std::vector<std::uint32_t>{});
  EXPECT_THROW(c.set_shard(Shard{2, 2}), std::invalid_argument);
}

}  // namespace
}  // namespace streamcheck::sim
