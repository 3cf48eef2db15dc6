// Trace language v2, user-space sub-allocators (R10, docs/TRACES.md
// "Sub-allocators"): `suballoc` hands out bytes of a live buffer as a block
// for a stream (R10a), `subfree` gives it back on a stream (R10b), and
// `record_stream` holds the bytes until another stream's work is done
// (R10c). Each test is a litmus program with its exact number of
// executions (`explore --strategy dfs`) and its findings, reasoned in a
// comment. Malformed sub-allocations are in malformed_traces.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/tools/trace_litmus.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

// PyTorch's caching allocator, written out: Seg is a segment it got with
// cudaMalloc; X is a block of it for s1, read on s2 after an event, given
// back on s1 and handed out again as Y on s1.
const std::string kSegment =
    "stream s1\n"                             // 1
    "stream s2\n"                             // 2
    "event E\n"                               // 3
    "buffer Seg 1024\n"                       // 4
    "suballoc X 256 from Seg[0:512] on s1\n"  // 5
    "launch fill on s1 writes X\n"            // 6
    "record E on s1\n"                        // 7
    "wait E on s2\n"                          // 8
    "launch use on s2 reads X\n";             // 9

TEST(TraceSuballoc, AReuseWithoutRecordStreamRacesTheOtherStreamsRead) {
  // R10b: the give-back on s1 is not ordered after `use` on s2 (a use after
  // free); Y's hand-out and its write on s1 are not either (reuse races).
  // One host thread, no query: 1 execution.
  const Report r = explore_text(kSegment +
                                "subfree X on s1\n"                       // 10
                                "suballoc Y 256 from Seg[0:512] on s1\n"  // 11
                                "launch over on s1 writes Y\n");          // 12
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(count_kind(r, sim::FindingKind::DataRace), 0u);
  ASSERT_EQ(count_kind(r, sim::FindingKind::UseAfterFree), 1u);
  const ReportFinding& uaf = first_of(r, sim::FindingKind::UseAfterFree);
  EXPECT_EQ(uaf.first.origin->line, 9);
  EXPECT_EQ(uaf.second->origin->line, 10);
  ASSERT_EQ(count_kind(r, sim::FindingKind::ReuseRace), 2u);
  for (const ReportFinding& f : r.findings)
    if (f.kind == sim::FindingKind::ReuseRace) {
      EXPECT_EQ(f.first.origin->line, 9);
      EXPECT_TRUE(f.second->origin->line == 11 || f.second->origin->line == 12) << f.second->origin->line;
    }
}

TEST(TraceSuballoc, RecordStreamHoldsTheBytesUntilTheOtherStreamIsDone) {
  // R10c: the give-back records an event on s2 (capturing `use`), and the
  // hand-out of the same bytes waits for it: clean, 1 execution. Said
  // before the use, as PyTorch programs often do, it covers it all the
  // same (the event is recorded at the give-back).
  for (const std::string where : {"after", "before"}) {
    const std::string record = "record_stream X on s2\n";
    std::string text = kSegment;
    if (where == "before")
      text.insert(text.find("launch use"), record);
    else
      text += record;
    text += "subfree X on s1\nsuballoc Y 256 from Seg[0:512] on s1\nlaunch over on s1 writes Y\n";
    const Report r = explore_text(text);
    EXPECT_EQ(r.coverage.explored, 1u) << where;
    EXPECT_EQ(errors(r), 0u) << where;
    EXPECT_TRUE(r.notes.empty()) << where;
  }
}

TEST(TraceSuballoc, RecordStreamCoversOnlyWhatWasEnqueuedBeforeTheGiveBack) {
  // R10c: a read on s2 enqueued after the give-back is a use after free
  // (definite: the give-back is ordered before it by the wait) and races
  // with Y's write. 1 execution.
  const Report r = explore_text(kSegment +
                                "record_stream X on s2\n"                 // 10
                                "record E on s1\n"                        // 11
                                "subfree X on s1\n"                       // 12
                                "wait E on s2\n"                          // 13
                                "launch late on s2 reads X\n"             // 14
                                "suballoc Y 256 from Seg[0:512] on s1\n"  // 15
                                "launch over on s1 writes Y\n");          // 16
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_EQ(count_kind(r, sim::FindingKind::DataRace), 0u);
  EXPECT_GE(count_kind(r, sim::FindingKind::ReuseRace), 1u);
  EXPECT_EQ(count_kind(r, sim::FindingKind::UseAfterFree), 1u);
  for (const ReportFinding& f : r.findings) {
    if (f.kind == sim::FindingKind::Leak) continue;
    EXPECT_TRUE(f.first.origin->line == 14 || f.second->origin->line == 14) << f.first.origin->line;
  }
}

TEST(TraceSuballoc, RecordStreamOrdersOnlyTheAllocatorsNextHandOut) {
  // R10c: the give-back waits for nothing on the device. A write of the
  // segment itself on s1 is no hand-out: nothing waited for s2's read, and
  // the two race (a data race: the segment holds X's bytes). 1 execution.
  const std::string given_back = kSegment + "record_stream X on s2\nsubfree X on s1\n";  // lines 10, 11
  const Report scrub = explore_text(given_back + "launch scrub on s1 writes Seg\n");     // 12
  EXPECT_EQ(scrub.coverage.explored, 1u);
  ASSERT_EQ(errors(scrub), 1u);
  ASSERT_EQ(count_kind(scrub, sim::FindingKind::DataRace), 1u);
  EXPECT_EQ(first_of(scrub, sim::FindingKind::DataRace).first.origin->line, 9);
  EXPECT_EQ(first_of(scrub, sim::FindingKind::DataRace).second->origin->line, 12);
  // R10b: a read of X enqueued after the give-back uses freed memory even
  // though nothing orders it after the give-back (racing). 1 execution.
  const Report late = explore_text(given_back + "launch late on s2 reads X\n");  // 12
  EXPECT_EQ(late.coverage.explored, 1u);
  ASSERT_EQ(errors(late), 1u);
  ASSERT_EQ(count_kind(late, sim::FindingKind::UseAfterFree), 1u);
  EXPECT_FALSE(first_of(late, sim::FindingKind::UseAfterFree).definite);
  EXPECT_EQ(first_of(late, sim::FindingKind::UseAfterFree).first.origin->line, 11);
  EXPECT_EQ(first_of(late, sim::FindingKind::UseAfterFree).second->origin->line, 12);
}

TEST(TraceSuballoc, AnotherStreamsHandOutNeedsAnEventAsRmmsPoolRecords) {
  // R10a/R10b: bytes given back on s1 and handed out for s2 race with s1's
  // write unless s2 waits on an event recorded at the give-back (what
  // RMM's pool does when it takes a block from another stream's free
  // list). 1 execution each.
  const std::string head =
      "stream s1\nstream s2\nevent F\nbuffer Seg 1024\nsuballoc X 256 from Seg[0:256] on s1\n"
      "launch fill on s1 writes X\nsubfree X on s1\n";
  const Report racy = explore_text(head + "suballoc Y 256 from Seg[0:256] on s2\nlaunch over on s2 writes Y\n");
  EXPECT_EQ(racy.coverage.explored, 1u);
  EXPECT_GE(count_kind(racy, sim::FindingKind::ReuseRace), 1u);
  // The give-back is the bytes' last write on s1 (fill is ordered before it).
  EXPECT_EQ(first_of(racy, sim::FindingKind::ReuseRace).first.origin->line, 7);
  const Report fixed = explore_text(head +
                                    "record F on s1\nwait F on s2\nsuballoc Y 256 from Seg[0:256] on s2\n"
                                    "launch over on s2 writes Y\n");
  EXPECT_EQ(fixed.coverage.explored, 1u);
  EXPECT_EQ(errors(fixed), 0u);
}

TEST(TraceSuballoc, AUseAfterTheGiveBackIsADefiniteUseAfterFree) {
  // R10b: the give-back is ordered before the launch on its own stream.
  const Report r = explore_text(
      "stream s1\nbuffer Seg 1024\nsuballoc X 256 from Seg[0:256] on s1\nlaunch fill on s1 writes X\n"
      "subfree X on s1\nlaunch late on s1 reads X\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(count_kind(r, sim::FindingKind::UseAfterFree), 1u);
  const ReportFinding& uaf = first_of(r, sim::FindingKind::UseAfterFree);
  EXPECT_TRUE(uaf.definite);
  EXPECT_EQ(uaf.second->origin->line, 6);
}

TEST(TraceSuballoc, ABlockAndItsParentShareBytesAsOneBuffer) {
  // R10a: a write of the parent and a read of the block on another stream,
  // unordered, are a data race (not a reuse race: both are live), and the
  // report names the bytes by the block. Freeing the parent makes a later
  // use of the block a use after free.
  const Report r = explore_text(
      "stream s1\nstream s2 nonblocking\nbuffer Seg 1024\nsuballoc X 128 from Seg[256:512] on s1\n"
      "launch whole on s1 writes Seg\nlaunch part on s2 reads X\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(count_kind(r, sim::FindingKind::DataRace), 1u);
  EXPECT_EQ(count_kind(r, sim::FindingKind::ReuseRace), 0u);
  const std::string text = report_text(r);
  EXPECT_NE(text.find("X[0:128]"), std::string::npos) << text;

  const Report after_free = explore_text(
      "stream s1\nbuffer Seg 1024 on s1\nsuballoc X 128 from Seg[256:512] on s1\nfree Seg on s1\n"
      "launch late on s1 reads X\n");
  EXPECT_EQ(after_free.coverage.explored, 1u);
  ASSERT_EQ(count_kind(after_free, sim::FindingKind::UseAfterFree), 1u);
  EXPECT_TRUE(first_of(after_free, sim::FindingKind::UseAfterFree).definite);
}

TEST(TraceSuballoc, BytesHandedOutTwiceAreANote) {
  // R10a: the allocator gave X's bytes to Y while X was still held.
  const Report r = explore_text(
      "stream s1\nbuffer Seg 1024\nsuballoc X 256 from Seg[0:256] on s1\nsuballoc Y 64 from Seg[128:192] on s1\n"
      "launch k on s1 writes Y\n");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::DoubleHandOut);
  EXPECT_EQ(r.notes[0].line, 4);
  EXPECT_NE(r.notes[0].message.find("handed out at line 3"), std::string::npos) << r.notes[0].message;
  EXPECT_EQ(r.verdict(), Verdict::Errors);
}

TEST(TraceSuballoc, GivingBackTwiceOrFromAFreedParentIsANote) {
  const Report twice =
      explore_text("stream s1\nbuffer Seg 1024\nsuballoc X 256 from Seg on s1\nsubfree X on s1\nsubfree X on s1\n");
  ASSERT_EQ(twice.notes.size(), 1u);
  EXPECT_EQ(twice.notes[0].kind, NoteKind::NotLive);
  EXPECT_EQ(twice.notes[0].line, 5);
  const Report freed =
      explore_text("stream s1\nbuffer Seg 1024\nfree Seg\nsuballoc X 256 from Seg on s1\nlaunch k on s1 writes X\n");
  ASSERT_GE(freed.notes.size(), 1u);
  EXPECT_EQ(freed.notes[0].kind, NoteKind::NotLive);
  EXPECT_EQ(freed.notes[0].line, 4);
}

}  // namespace
}  // namespace streamcheck::tools
