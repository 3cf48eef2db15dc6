// IntervalMap: splitting on demand, gap filling, and read-only visits.
#include "backend_sim/interval_map.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace streamcheck::sim
