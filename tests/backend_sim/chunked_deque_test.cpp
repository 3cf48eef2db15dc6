// ChunkedDeque: indexing across chunks, references that stay valid while it
// grows, pop_front dropping whole chunks, and a dropped deque's chunks
// serving the next one.
#include "backend_sim/chunked_deque.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace streamcheck::sim {
namespace {

// Chunks of 4 elements, so that a few pushes cross several chunk
// boundaries.
using Small = ChunkedDeque<std::string, 2>;

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

// A moved-from deque is empty and takes new elements as a fresh one; a copy
// holds the same elements and grows on its own.
TEST(ChunkedDeque, AMovedFromDequeIsEmptyAndACopyGrowsOnItsOwn) {
  Small d;
  for (int i = 0; i < 7; ++i) d.push_back("v" + std::to_string(i));
  d.pop_front();
  Small copy = d;
  Small moved = std::move(d);
  EXPECT_EQ(d.size(), 0u);  // NOLINT(bugprone-use-after-move): what a move leaves is the point
  EXPECT_TRUE(d.empty());
  d.push_back("again");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "again");
  ASSERT_EQ(moved.size(), 6u);
  EXPECT_EQ(moved.front(), "v1");
  EXPECT_EQ(moved.back(), "v6");
  for (int i = 7; i < 12; ++i) copy.push_back("v" + std::to_string(i));
  ASSERT_EQ(copy.size(), 11u);
  for (std::size_t i = 0; i < copy.size(); ++i) EXPECT_EQ(copy[i], "v" + std::to_string(i + 1)) << i;
  EXPECT_EQ(moved.size(), 6u);
  Small assigned;
  assigned.push_back("old");
  assigned = std::move(moved);
  EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move)
  ASSERT_EQ(assigned.size(), 6u);
  EXPECT_EQ(assigned.front(), "v1");
}

TEST(ChunkedDeque, ReferencesStayValidWhileItGrows) {
  Small d;
  d.push_back("first");
  const std::string* first = &d[0];
  for (int i = 0; i < 100; ++i) d.push_back(std::to_string(i));
  EXPECT_EQ(first, &d[0]);
  EXPECT_EQ(*first, "first");
}

TEST(ChunkedDeque, ACopysElementsStayWhereTheyAreWhileTheCopyGrows) {
  Small d;
  for (int i = 0; i < 5; ++i) d.push_back("v" + std::to_string(i));  // the last chunk holds one of four
  const auto stays_while_growing = [](Small& copy) {
    const std::string* last = &copy[4];
    for (int i = 5; i < 8; ++i) copy.push_back("v" + std::to_string(i));  // fills that chunk
    EXPECT_EQ(last, &copy[4]);
    EXPECT_EQ(*last, "v4");
  };
  Small copied(d);
  stays_while_growing(copied);
  Small assigned;
  assigned.push_back("old");
  assigned = d;
  stays_while_growing(assigned);
}

TEST(ChunkedDeque, PopFrontShiftsIndexesAndEmptiesCleanly) {
  Small d;
  for (int i = 0; i < 10; ++i) d.push_back(std::to_string(i));
  for (int i = 0; i < 5; ++i) d.pop_front();  // past the first chunk
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
  for (int i = 0; i < 8; ++i) d.push_back(std::to_string(i));  // two chunks of 4: both full
  while (!d.empty()) d.pop_front();                            // every chunk freed
  d.push_back("next");
  d.push_back("after");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "next");
  EXPECT_EQ(d[1], "after");
}

/// A deque holding every chunk earlier tests left in this thread's cache,
/// so that a test's counts of cached chunks start at 0.
Small take_every_cached_chunk() {
  Small hog;
  while (chunk_storage::Recycling<std::string, 4>::cached() > 0)
    for (int i = 0; i < 4; ++i) hog.push_back("hog");
  return hog;
}

// A chunk's storage is recycled (chunk_storage::Recycling): a dropped
// deque's chunks go to the thread's cache, the next deque takes them from
// there, and sees only its own elements in them.
TEST(ChunkedDeque, ChunksOfADroppedDequeServeTheNextOneWithItsOwnElements) {
  using Storage = chunk_storage::Recycling<std::string, 4>;
  // Under AddressSanitizer every chunk goes back to the heap, for it to see.
#if defined(__SANITIZE_ADDRESS__)
  const auto cached = [](std::size_t) { return std::size_t{0}; };
#else
  const auto cached = [](std::size_t n) { return n; };
#endif
  const Small hog = take_every_cached_chunk();  // the counts below start at 0
  {
    Small d;
    for (int i = 0; i < 12; ++i) d.push_back("an old value long enough for the heap " + std::to_string(i));
  }
  EXPECT_EQ(Storage::cached(), cached(3));  // its three chunks
  Small d;
  for (int i = 0; i < 6; ++i) d.push_back("new " + std::to_string(i));  // two chunks, from the cache
  EXPECT_EQ(Storage::cached(), cached(1));
  ASSERT_EQ(d.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(d[i], "new " + std::to_string(i));
  while (!d.empty()) d.pop_front();  // the first chunk, all popped, goes back; the second is still the front's
  EXPECT_EQ(Storage::cached(), cached(2));
  d.push_back("after");
  EXPECT_EQ(d.front(), "after");
}

// Every freed chunk is kept, however many (a cache of 64 gave a million-op
// run's chunks back to the heap, to be faulted in again by the next run).
TEST(ChunkedDeque, EveryChunkOfADroppedDequeIsKeptForTheNextOne) {
  using Storage = chunk_storage::Recycling<std::string, 4>;
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under AddressSanitizer every chunk goes back to the heap, for it to see";
#endif
  const Small hog = take_every_cached_chunk();  // the counts below start at 0
  {
    Small d;
    for (int i = 0; i < 4 * 200; ++i) d.push_back("x");  // 200 full chunks of 4
  }
  EXPECT_EQ(Storage::cached(), 200u);
  Small next;
  for (int i = 0; i < 4 * 200; ++i) next.push_back("y");  // all from the kept chunks
  EXPECT_EQ(Storage::cached(), 0u);
  EXPECT_TRUE(std::all_of(next.begin(), next.end(), [](const std::string& v) { return v == "y"; }));
}

// A retention pass (backend_sim/retention.h) frees whole chunks from the
// front: the rest move down by whole chunks and stay where they are.
TEST(ChunkedDeque, DroppingFrontChunksMovesTheRestDownByWholeChunks) {
  Small d;
  for (int i = 0; i < 11; ++i) d.push_back("v" + std::to_string(i));
  const std::string* v9 = &d[9];
  d.drop_front_chunks(2);  // v0 .. v7
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], "v8");
  EXPECT_EQ(d[2], "v10");
  EXPECT_EQ(&d[1], v9);  // not moved
  d.push_back("v11");
  d.push_back("v12");
  EXPECT_EQ(d[4], "v12");
  EXPECT_THROW(d.drop_front_chunks(2), std::out_of_range);  // 5 elements: one whole chunk
  d.drop_front_chunks(1);
  EXPECT_EQ(d.front(), "v12");
  d.pop_front();
  EXPECT_THROW(d.drop_front_chunks(1), std::logic_error);  // a deque that popped
}

// A queue that pops for a long run forgets the places of its emptied chunks.
TEST(ChunkedDeque, ForgettingPoppedChunksKeepsTheElementsLeft) {
  Small d;
  for (int i = 0; i < 10; ++i) d.push_back("v" + std::to_string(i));
  for (int i = 0; i < 9; ++i) d.pop_front();
  d.forget_popped_chunks();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.front(), "v9");
  for (int i = 10; i < 14; ++i) d.push_back("v" + std::to_string(i));
  EXPECT_EQ(d[4], "v13");
  d.pop_front();
  d.forget_popped_chunks();
  EXPECT_EQ(d.front(), "v10");
  EXPECT_EQ(d.back(), "v13");
}

}  // namespace
}  // namespace streamcheck::sim
