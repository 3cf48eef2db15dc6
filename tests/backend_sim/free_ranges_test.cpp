// FreeRanges: the pool's freed ranges in freed order, with the counts and
// sizes that find the n-th range an allocation fits, checked against a
// plain list of the same ranges.
#include "backend_sim/free_ranges.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

namespace streamcheck::sim {
namespace {

FreeRange range_of(std::uint64_t lo, std::uint64_t bytes, std::uint32_t free_index) {
  return FreeRange{ByteRange{lo, lo + bytes}, OpRef{StreamIndex{0}, free_index}};
}

std::vector<ByteRange> held(const FreeRanges& ranges) {
  std::vector<ByteRange> out;
  ranges.for_each([&](FreeRanges::Slot, const FreeRange& r) { out.push_back(r.range); });
  return out;
}

TEST(FreeRanges, TheNthFittingRangeIsCountedInFreedOrderNotByAddressOrSize) {
  FreeRanges ranges;
  ranges.push_back(range_of(4096, 512, 0));   // fits 512
  ranges.push_back(range_of(8192, 256, 1));   // too small
  ranges.push_back(range_of(1024, 2048, 2));  // fits
  ranges.push_back(range_of(0, 1024, 3));     // fits
  ASSERT_EQ(ranges.count_fitting(512), 3u);
  EXPECT_EQ(ranges[ranges.nth_fitting(512, 0)].range.lo, 4096u);
  EXPECT_EQ(ranges[ranges.nth_fitting(512, 1)].range.lo, 1024u);
  EXPECT_EQ(ranges[ranges.nth_fitting(512, 2)].range.lo, 0u);
  EXPECT_EQ(ranges.count_fitting(1025), 1u);
  EXPECT_EQ(ranges[ranges.nth_fitting(1025, 0)].range.lo, 1024u);
  EXPECT_EQ(ranges.count_fitting(4096), 0u);
  EXPECT_THROW((void)ranges.nth_fitting(512, 3), std::logic_error);
}

TEST(FreeRanges, ARangeTakenFromKeepsItsPlaceAndOneTakenWholeGoes) {
  FreeRanges ranges;
  ranges.push_back(range_of(0, 1024, 0));
  ranges.push_back(range_of(4096, 512, 1));
  ranges.take_front(ranges.nth_fitting(256, 0), 256);  // [256, 1024) stays first
  EXPECT_EQ(held(ranges), (std::vector<ByteRange>{{256, 1024}, {4096, 4608}}));
  ranges.take_front(ranges.nth_fitting(512, 1), 512);  // the second, whole
  EXPECT_EQ(held(ranges), (std::vector<ByteRange>{{256, 1024}}));
  EXPECT_EQ(ranges.size(), 1u);
  EXPECT_THROW(ranges.erase(1), std::logic_error);  // nothing is held there now
  EXPECT_THROW(ranges.take_front(0, 1024), std::logic_error);
}

// Random pushes, takes and erases, mostly of alike sizes (the shape that
// a loop leaves) and some of others; after each, every count and every
// n-th fitting range agrees with a scan of a plain list. Enough ranges
// come and go that the tree is rebuilt and packed many times.
TEST(FreeRanges, AgreesWithAPlainListOverRandomSequences) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    FreeRanges ranges;
    std::vector<FreeRange> list;
    std::uint64_t next_lo = 0;
    const std::vector<std::uint64_t> sizes{256, 256, 256, 512, 1024, 4096};
    for (std::uint32_t step = 0; step < 3000; ++step) {
      const std::uint64_t roll = rng() % 10;
      if (list.empty() || roll < 4 + (list.size() < 40 ? 2 : 0)) {
        const FreeRange r = range_of(next_lo, sizes[rng() % sizes.size()], step);
        next_lo += 8192;
        ranges.push_back(r);
        list.push_back(r);
      } else {
        const std::uint64_t bytes = sizes[rng() % sizes.size()];
        std::vector<std::size_t> fitting;
        for (std::size_t i = 0; i < list.size(); ++i)
          if (list[i].range.size() >= bytes) fitting.push_back(i);
        if (fitting.empty()) continue;
        const std::size_t n = rng() % fitting.size();
        const FreeRanges::Slot slot = ranges.nth_fitting(bytes, n);
        ASSERT_EQ(ranges[slot].range, list[fitting[n]].range) << "seed " << seed << " step " << step;
        ASSERT_EQ(ranges[slot].free_op, list[fitting[n]].free_op);
        if (roll == 9) {
          ranges.erase(slot);
          list.erase(list.begin() + static_cast<std::ptrdiff_t>(fitting[n]));
        } else {
          ranges.take_front(slot, bytes);
          FreeRange& r = list[fitting[n]];
          r.range.lo += bytes;
          if (r.range.lo == r.range.hi) list.erase(list.begin() + static_cast<std::ptrdiff_t>(fitting[n]));
        }
      }
      ASSERT_EQ(ranges.size(), list.size());
      for (const std::uint64_t bytes : {std::uint64_t{1}, std::uint64_t{256}, std::uint64_t{257}, std::uint64_t{768},
                                        std::uint64_t{1024}, std::uint64_t{4096}}) {
        std::size_t expected = 0;
        for (const FreeRange& r : list) expected += r.range.size() >= bytes ? 1 : 0;
        ASSERT_EQ(ranges.count_fitting(bytes), expected) << "seed " << seed << " step " << step;
      }
    }
    std::vector<ByteRange> expected;
    for (const FreeRange& r : list) expected.push_back(r.range);
    EXPECT_EQ(held(ranges), expected) << "seed " << seed;
  }
}

}  // namespace
}  // namespace streamcheck::sim
