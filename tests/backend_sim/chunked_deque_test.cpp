// ChunkedDeque: indexing across chunks, references that stay valid while it
// grows, and pop_front dropping whole chunks.
#include "backend_sim/chunked_deque.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace streamcheck::sim {
namespace {

// Chunks of 1, 1, 2 and then 4 elements, so that a few pushes cross
// several chunk boundaries of both kinds.
using Small = ChunkedDeque<std::string, 2, 0>;

TEST(ChunkedDeque, IndexesAndIteratesInPushOrderAcrossChunks) {
  Small d;
  std::vector<std::string> expected;
  for (int i = 0; i < 19; ++i) {
    d.push_back("v" + std::to_string(i));
    expected.push_back("v" + std::to_string(i));
  }
  ASSERT_EQ(d.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(d[i], expected[i]) << i;
  EXPECT_TRUE(std::equal(d.begin(), d.end(), expected.begin(), expected.end()));
  EXPECT_EQ(d.front(), "v0");
  EXPECT_EQ(d.back(), "v18");
  EXPECT_THROW((void)d.at(19), std::out_of_range);
}

TEST(ChunkedDeque, ReferencesStayValidWhileItGrows) {
  Small d;
  d.push_back("first");
  const std::string* first = &d[0];
  for (int i = 0; i < 100; ++i) d.push_back(std::to_string(i));
  EXPECT_EQ(first, &d[0]);
  EXPECT_EQ(*first, "first");
}

TEST(ChunkedDeque, PopFrontShiftsIndexesAndEmptiesCleanly) {
  Small d;
  for (int i = 0; i < 10; ++i) d.push_back(std::to_string(i));
  for (int i = 0; i < 5; ++i) d.pop_front();  // past the first three chunks
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0], "5");
  EXPECT_EQ(d.back(), "9");
  d.push_back("10");
  EXPECT_EQ(d[5], "10");
  while (!d.empty()) d.pop_front();
  EXPECT_THROW(d.pop_front(), std::out_of_range);
  d.push_back("again");
  EXPECT_EQ(d.size(), 1u);
  EXPECT_EQ(d.front(), "again");
}

TEST(ChunkedDeque, EmptiedAtAChunkBoundaryTakesNewElementsInTheNextChunk) {
  Small d;
  for (int i = 0; i < 8; ++i) d.push_back(std::to_string(i));  // chunks of 1, 1, 2 and 4: all full
  while (!d.empty()) d.pop_front();                            // every chunk freed
  d.push_back("next");
  d.push_back("after");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "next");
  EXPECT_EQ(d[1], "after");
}

}  // namespace
}  // namespace streamcheck::sim
