// model/address_map.h: the resource's live-block table. Random sequences of
// inserts, lookups and erases agree with std::map; the cases written out
// are the ones open addressing gets wrong first (an erase in the middle of
// a probe run, a run that wraps past the last slot, growth).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "model/address_map.h"

namespace streamcheck {
namespace {

using Map = AddressMap<int>;

/// The map's contents, read by iterating it: each key once.
std::map<std::uint64_t, int> contents(const Map& map) {
  std::map<std::uint64_t, int> out;
  for (const auto& [key, value] : map) EXPECT_TRUE(out.emplace(key, value).second) << "key " << key << " twice";
  return out;
}

/// `count` keys (aligned addresses) whose home is `home` in a map of 16
/// slots: where each one lands alone in a fresh map.
std::vector<std::uint64_t> keys_with_home(std::size_t home, std::size_t count) {
  std::vector<std::uint64_t> keys;
  for (std::uint64_t key = 0x7f00'0000'0000ULL; keys.size() < count; key += 0x200) {
    Map alone;
    alone.try_emplace(key, 0);
    if (alone.slot_count() != 16) throw std::logic_error("a fresh map no longer starts with 16 slots");
    if (alone.slot_of(key) == home) keys.push_back(key);
  }
  return keys;
}

/// Block `i` of a burst of allocations, 512 bytes apart, and its value i.
std::uint64_t burst_key(int i) { return 0x7f0000000000ULL + 512ULL * static_cast<std::uint64_t>(i); }
void insert_burst(Map& map, int count) {
  for (int i = 0; i < count; ++i) ASSERT_TRUE(map.try_emplace(burst_key(i), i).second) << "block " << i;
}
/// Blocks [from, to) of the burst are found with their values.
void expect_burst_found(const Map& map, int from, int to) {
  for (int i = from; i < to; ++i) {
    auto it = map.find(burst_key(i));
    ASSERT_NE(it, map.end()) << "block " << i;
    EXPECT_EQ(it->second, i);
  }
}

/// Inserts `run` in order, erases each one in turn (in a fresh map each
/// time) and checks the others are still found with their values.
void expect_every_other_key_found_after_each_erase(const std::vector<std::uint64_t>& run) {
  for (std::size_t erased = 0; erased < run.size(); ++erased) {
    Map map;
    for (std::size_t i = 0; i < run.size(); ++i) ASSERT_TRUE(map.try_emplace(run[i], static_cast<int>(i)).second);
    ASSERT_EQ(map.slot_count(), 16u);
    EXPECT_EQ(map.erase(run[erased]), 1u);
    for (std::size_t i = 0; i < run.size(); ++i) {
      if (i == erased) {
        EXPECT_FALSE(map.contains(run[i]));
        continue;
      }
      auto it = map.find(run[i]);
      ASSERT_NE(it, map.end()) << "key " << i << " lost after erasing key " << erased;
      EXPECT_EQ(it->second, static_cast<int>(i));
    }
    EXPECT_EQ(map.size(), run.size() - 1);
    EXPECT_EQ(contents(map).size(), run.size() - 1);
  }
}

TEST(AddressMap, AnEraseInsideAProbeRunLeavesTheEntriesAfterItFindable) {
  const std::vector<std::uint64_t> run = keys_with_home(3, 5);
  {
    Map map;
    for (std::uint64_t key : run) map.try_emplace(key, 0);
    for (std::size_t i = 0; i < run.size(); ++i) ASSERT_EQ(map.slot_of(run[i]), 3 + i) << "not one probe run";
  }
  expect_every_other_key_found_after_each_erase(run);
}

TEST(AddressMap, AProbeRunThatWrapsPastTheLastSlotSurvivesErases) {
  // Home 14 of 16: the run takes slots 14, 15, 0, 1, 2.
  const std::vector<std::uint64_t> run = keys_with_home(14, 5);
  {
    Map map;
    for (std::uint64_t key : run) map.try_emplace(key, 0);
    ASSERT_EQ(map.slot_of(run[2]), 0u) << "the run does not wrap";
  }
  expect_every_other_key_found_after_each_erase(run);
  // A key of another home caught in the wrapped run: its home (slot 1) is
  // inside the run, so it sits after the run's end and must move back only
  // as far as its home.
  std::vector<std::uint64_t> mixed = run;
  mixed.push_back(keys_with_home(1, 1).front());
  expect_every_other_key_found_after_each_erase(mixed);
}

TEST(AddressMap, GrowthKeepsEveryEntry) {
  Map map;
  ASSERT_NO_FATAL_FAILURE(insert_burst(map, 5000));
  EXPECT_EQ(map.size(), 5000u);
  expect_burst_found(map, 0, 5000);
}

TEST(AddressMap, ATableGrownByABurstShrinksOnceMostEntriesAreGone) {
  Map map;
  ASSERT_NO_FATAL_FAILURE(insert_burst(map, 5000));
  const std::size_t grown = map.slot_count();
  ASSERT_GE(grown, 10000u);
  for (int i = 0; i < 4990; ++i) ASSERT_EQ(map.erase(burst_key(i)), 1u);
  EXPECT_LE(map.slot_count(), 64u) << "the burst's " << grown << " slots are still held";
  expect_burst_found(map, 4990, 5000);
  EXPECT_EQ(contents(map).size(), 10u);
}

TEST(AddressMap, TryEmplaceOfAPresentKeyChangesNothing) {
  AddressMap<std::unique_ptr<int>> map;
  ASSERT_TRUE(map.try_emplace(0x2000, std::make_unique<int>(1)).second);
  auto again = std::make_unique<int>(2);
  auto [it, inserted] = map.try_emplace(0x2000, std::move(again));
  EXPECT_FALSE(inserted);
  EXPECT_EQ(*it->second, 1);
  // Not moved from: try_emplace takes nothing when the key is there.
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(*again, 2);
}

TEST(AddressMap, AConstIteratorMadeMutableNamesTheSameEntry) {
  Map map;
  map.try_emplace(0x3000, 7);
  const Map& view = map;
  Map::const_iterator found = view.find(0x3000);
  map.mutable_iterator(found)->second = 8;
  EXPECT_EQ(map.find(0x3000)->second, 8);
}

/// One step of a random sequence: insert (try_emplace), assign
/// (insert_or_assign), erase by key, or look up.
struct Step {
  int kind = 0;  // 0 try_emplace, 1 insert_or_assign, 2 erase, 3 find, 4 erase through find
  std::uint64_t key = 0;
  int value = 0;
};

/// Random steps of kinds [0, kinds), on keys from a small pool (up to
/// `max_keys`) of aligned addresses, as the driver hands out: the same keys
/// come back after their erase, runs form and wrap. Inside a property only.
std::vector<Step> random_steps(int kinds, std::uint64_t max_keys) {
  const auto pool_size = *rc::gen::inRange<std::uint64_t>(1, max_keys);
  return *rc::gen::container<std::vector<Step>>(rc::gen::build<Step>(
      rc::gen::set(&Step::kind, rc::gen::inRange(0, kinds)),
      rc::gen::set(&Step::key, rc::gen::map(rc::gen::inRange<std::uint64_t>(0, pool_size),
                                            [](std::uint64_t i) { return 0x7f00'0000'0000ULL + (i << 9); })),
      rc::gen::set(&Step::value, rc::gen::arbitrary<int>())));
}

RC_GTEST_PROP(AddressMap, AgreesWithStdMapOverRandomSequences, ()) {
  const auto steps = random_steps(5, 200);
  Map map;
  std::map<std::uint64_t, int> oracle;
  for (const Step& step : steps) {
    switch (step.kind) {
      case 0: {
        const bool inserted = map.try_emplace(step.key, step.value).second;
        RC_ASSERT(inserted == oracle.try_emplace(step.key, step.value).second);
        break;
      }
      case 1: {
        const auto [it, inserted] = map.insert_or_assign(step.key, step.value);
        RC_ASSERT(it->second == step.value);
        RC_ASSERT(inserted == oracle.insert_or_assign(step.key, step.value).second);
        break;
      }
      case 2:
        RC_ASSERT(map.erase(step.key) == oracle.erase(step.key));
        break;
      case 3: {
        auto it = map.find(step.key);
        auto expected = oracle.find(step.key);
        RC_ASSERT((it == map.end()) == (expected == oracle.end()));
        if (expected != oracle.end()) RC_ASSERT(it->second == expected->second);
        break;
      }
      default: {
        auto it = map.find(step.key);
        if (it != map.end()) map.erase(it);
        oracle.erase(step.key);
        break;
      }
    }
    RC_ASSERT(map.size() == oracle.size());
  }
  RC_ASSERT(contents(map) == oracle);
  for (const auto& [key, value] : oracle) RC_ASSERT(map.contains(key));
}

/// FrontedAddressMap's contents, read by for_each: each key once.
template <class Fronted>
std::map<std::uint64_t, int> fronted_contents(const Fronted& map) {
  std::map<std::uint64_t, int> out;
  map.for_each([&](std::uint64_t key, int value) { EXPECT_TRUE(out.emplace(key, value).second) << "key " << key; });
  return out;
}

// A front of two slots, so that short sequences fill it and move entries
// behind: an entry found, assigned and erased wherever it sits.
RC_GTEST_PROP(FrontedAddressMap, AgreesWithStdMapOverRandomSequences, ()) {
  const auto steps = random_steps(3, 40);
  FrontedAddressMap<int, 2> map;
  std::map<std::uint64_t, int> oracle;
  for (const Step& step : steps) {
    switch (step.kind) {
      case 0:
        map.insert_or_assign(step.key, step.value);
        oracle.insert_or_assign(step.key, step.value);
        break;
      case 1:
        RC_ASSERT(map.erase(step.key) == (oracle.erase(step.key) == 1));
        break;
      default: {
        const int* found = map.find(step.key);
        auto expected = oracle.find(step.key);
        RC_ASSERT((found == nullptr) == (expected == oracle.end()));
        if (found) RC_ASSERT(*found == expected->second);
        break;
      }
    }
    RC_ASSERT(map.size() == oracle.size());
  }
  RC_ASSERT(fronted_contents(map) == oracle);
}

TEST(FrontedAddressMap, TheOldestEntryMovesBehindWhenTheFrontIsFull) {
  FrontedAddressMap<int, 2> map;
  map.insert_or_assign(0x1000, 1);
  map.insert_or_assign(0x2000, 2);
  map.insert_or_assign(0x3000, 3);  // 0x1000 goes behind
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(*map.find(0x1000), 1);
  map.insert_or_assign(0x1000, 10);  // assigned where it is, not inserted again
  EXPECT_EQ(map.size(), 3u);
  EXPECT_TRUE(map.erase(0x2000));  // from the front
  EXPECT_TRUE(map.erase(0x1000));  // from behind
  EXPECT_FALSE(map.erase(0x1000));
  EXPECT_EQ(fronted_contents(map), (std::map<std::uint64_t, int>{{0x3000, 3}}));
}

}  // namespace
}  // namespace streamcheck
