// IntervalMap: splitting on demand, gap filling, and read-only visits.
#include "backend_sim/interval_map.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

namespace streamcheck::sim {
namespace {

using Seg = std::tuple<std::uint64_t, std::uint64_t, int>;

std::vector<Seg> all(const IntervalMap<int>& m, std::uint64_t lo = 0, std::uint64_t hi = 1000) {
  std::vector<Seg> out;
  m.visit(lo, hi, [&](std::uint64_t a, std::uint64_t b, const int& v) { out.emplace_back(a, b, v); });
  return out;
}

TEST(IntervalMap, ForRangeOnEmptyMapFillsOneSegment) {
  IntervalMap<int> m;
  std::vector<Seg> seen;
  m.for_range(10, 20, 7, [&](std::uint64_t a, std::uint64_t b, int& v) { seen.emplace_back(a, b, v); });
  EXPECT_EQ(seen, (std::vector<Seg>{{10, 20, 7}}));
  EXPECT_EQ(m.segment_count(), 1u);
}

TEST(IntervalMap, InnerRangeSplitsIntoThree) {
  IntervalMap<int> m;
  m.for_range(0, 100, 0, [](std::uint64_t, std::uint64_t, int& v) { v = 1; });
  m.for_range(25, 75, 0, [](std::uint64_t, std::uint64_t, int& v) { v += 10; });
  EXPECT_EQ(all(m), (std::vector<Seg>{{0, 25, 1}, {25, 75, 11}, {75, 100, 1}}));
  EXPECT_EQ(m.segment_count(), 3u);
}

TEST(IntervalMap, RangeOverGapsFillsThemInAddressOrder) {
  IntervalMap<int> m;
  m.for_range(10, 20, 0, [](std::uint64_t, std::uint64_t, int& v) { v = 1; });
  m.for_range(30, 40, 0, [](std::uint64_t, std::uint64_t, int& v) { v = 2; });
  std::vector<Seg> seen;
  m.for_range(5, 35, 9, [&](std::uint64_t a, std::uint64_t b, int& v) { seen.emplace_back(a, b, v); });
  EXPECT_EQ(seen, (std::vector<Seg>{{5, 10, 9}, {10, 20, 1}, {20, 30, 9}, {30, 35, 2}}));
  EXPECT_EQ(all(m), (std::vector<Seg>{{5, 10, 9}, {10, 20, 1}, {20, 30, 9}, {30, 35, 2}, {35, 40, 2}}));
}

TEST(IntervalMap, EmptyOrInvertedRangeDoesNothing) {
  IntervalMap<int> m;
  int calls = 0;
  m.for_range(5, 5, 0, [&](std::uint64_t, std::uint64_t, int&) { ++calls; });
  m.for_range(9, 3, 0, [&](std::uint64_t, std::uint64_t, int&) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(m.segment_count(), 0u);
}

TEST(IntervalMap, VisitClipsAndNeverSplits) {
  IntervalMap<int> m;
  m.for_range(0, 100, 3, [](std::uint64_t, std::uint64_t, int&) {});
  m.for_range(200, 300, 4, [](std::uint64_t, std::uint64_t, int&) {});
  EXPECT_EQ(all(m, 50, 250), (std::vector<Seg>{{50, 100, 3}, {200, 250, 4}}));
  EXPECT_EQ(all(m, 100, 200), std::vector<Seg>{});  // the gap, half-open ends
  EXPECT_EQ(all(m, 99, 101), (std::vector<Seg>{{99, 100, 3}}));
  EXPECT_EQ(m.segment_count(), 2u);
}

TEST(IntervalMap, SplitAtExistingBoundaryAddsNoSegment) {
  IntervalMap<int> m;
  m.for_range(0, 10, 1, [](std::uint64_t, std::uint64_t, int&) {});
  m.for_range(10, 20, 2, [](std::uint64_t, std::uint64_t, int&) {});
  m.for_range(0, 20, 0, [](std::uint64_t, std::uint64_t, int&) {});
  EXPECT_EQ(m.segment_count(), 2u);
  m.clear();
  EXPECT_EQ(m.segment_count(), 0u);
}

// for_range against a byte array, over random ranges that start and end
// inside segments, on their boundaries and in gaps: it visits [lo, hi) once,
// in address order, as whole pieces that meet end to end; a byte keeps
// what it was given last (never-given bytes read `fill` when first
// visited); and no segment ever crosses lo or hi afterwards.
TEST(IntervalMap, ForRangeMatchesAByteArrayOverRandomRanges) {
  constexpr std::uint64_t kBytes = 64;
  constexpr int kNever = -1;
  std::mt19937 random(20261128);
  for (int run = 0; run < 200; ++run) {
    IntervalMap<int> m;
    std::vector<int> bytes(kBytes, kNever);
    for (int step = 0; step < 30; ++step) {
      std::uint64_t lo = random() % (kBytes + 1), hi = random() % (kBytes + 1);
      if (lo > hi) std::swap(lo, hi);
      const int fill = 1000 + step, value = step;
      std::uint64_t at = lo;
      m.for_range(lo, hi, fill, [&](std::uint64_t a, std::uint64_t b, int& v) {
        ASSERT_EQ(a, at) << "pieces meet end to end, in order (run " << run << ", step " << step << ")";
        ASSERT_LT(a, b);
        ASSERT_LE(b, hi);
        for (std::uint64_t x = a; x < b; ++x)
          ASSERT_EQ(v, bytes[x] == kNever ? fill : bytes[x]) << "byte " << x << " (run " << run << ")";
        v = value;
        at = b;
      });
      ASSERT_EQ(at, std::max(lo, hi == lo ? lo : hi)) << "the whole range is visited";
      for (std::uint64_t x = lo; x < hi; ++x) bytes[x] = value;
      for (const auto& [a, b, v] : all(m, 0, kBytes)) {
        for (std::uint64_t x = a; x < b; ++x) ASSERT_EQ(v, bytes[x]) << "byte " << x << " (run " << run << ")";
        if (lo < hi) {
          ASSERT_FALSE(a < lo && lo < b) << "a segment crosses lo";
          ASSERT_FALSE(a < hi && hi < b) << "a segment crosses hi";
        }
      }
    }
  }
}

std::vector<Seg> set(IntervalMap<int>& m, std::uint64_t lo, std::uint64_t hi, int value, int fill = 0) {
  std::vector<Seg> before;
  m.for_range(lo, hi, fill, [&](std::uint64_t a, std::uint64_t b, int& v) {
    before.emplace_back(a, b, v);
    v = value;
  });
  return before;
}

// A map remembers where its recent ranges start (their tree nodes); a copy,
// an assigned-to map, a moved-from one and a cleared one must not act on
// nodes that are not theirs (or are gone: the ASan run catches that).
TEST(IntervalMap, CopiesMovesAndClearsForgetTheStartsTheyRemembered) {
  IntervalMap<int> original;
  set(original, 10, 20, 1);
  IntervalMap<int> copy(original);
  EXPECT_EQ(set(copy, 10, 20, 2), (std::vector<Seg>{{10, 20, 1}}));
  EXPECT_EQ(all(original), (std::vector<Seg>{{10, 20, 1}})) << "a copy changes its own segments";

  IntervalMap<int> assigned;
  set(assigned, 30, 40, 3);  // a start the assigned map no longer has (its node may now hold another)
  assigned = original;
  EXPECT_EQ(set(assigned, 30, 40, 4, 9), (std::vector<Seg>{{30, 40, 9}}));
  EXPECT_EQ(set(assigned, 10, 20, 4), (std::vector<Seg>{{10, 20, 1}}));
  EXPECT_EQ(all(original), (std::vector<Seg>{{10, 20, 1}})) << "an assigned-to map changes its own segments";

  IntervalMap<int> moved(std::move(original));
  EXPECT_EQ(set(original, 10, 20, 5, 9), (std::vector<Seg>{{10, 20, 9}})) << "a moved-from map starts empty";
  EXPECT_EQ(all(moved), (std::vector<Seg>{{10, 20, 1}})) << "the moved-from map keeps nothing of the moved-to";

  set(moved, 10, 20, 1);  // remembers 10, a node the next move hands over
  IntervalMap<int> move_assigned;
  set(move_assigned, 10, 20, 6);
  move_assigned = std::move(moved);
  EXPECT_EQ(set(move_assigned, 10, 20, 7), (std::vector<Seg>{{10, 20, 1}}));
  EXPECT_EQ(set(moved, 10, 20, 8, 9), (std::vector<Seg>{{10, 20, 9}}));
  EXPECT_EQ(all(move_assigned), (std::vector<Seg>{{10, 20, 7}}));

  move_assigned.clear();
  EXPECT_EQ(set(move_assigned, 10, 20, 1, 9), (std::vector<Seg>{{10, 20, 9}})) << "a cleared map starts empty";
  EXPECT_EQ(move_assigned.segment_count(), 1U);
}

// A remembered start is the segment that still starts there: ranges that
// split it, cover it whole or begin just before it see the bytes as they are.
TEST(IntervalMap, ARememberedStartSeesLaterSplitsAroundIt) {
  IntervalMap<int> m;
  set(m, 10, 20, 1);
  set(m, 15, 30, 2);  // splits [10, 20) at 15
  EXPECT_EQ(set(m, 10, 20, 3), (std::vector<Seg>{{10, 15, 1}, {15, 20, 2}}));
  set(m, 5, 12, 4);  // splits [10, 15) at 12
  EXPECT_EQ(set(m, 10, 12, 5), (std::vector<Seg>{{10, 12, 4}}));
  EXPECT_EQ(all(m), (std::vector<Seg>{{5, 10, 4}, {10, 12, 5}, {12, 15, 3}, {15, 20, 3}, {20, 30, 2}}));
}

}  // namespace
}  // namespace streamcheck::sim
