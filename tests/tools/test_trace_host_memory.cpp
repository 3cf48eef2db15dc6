// Trace language v2, host memory (R12, docs/TRACES.md "Host memory"): host
// buffers made and freed by a host thread (R12a), the host's own reads and
// writes (R12b), host functions in stream order (R12c) and copies in every
// direction (R12d). Each test is a litmus program with its exact number of
// executions (`explore --strategy dfs`) and its findings, reasoned in a
// comment. Malformed host-memory statements are in malformed_traces.h.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/trace_litmus.h"
#include "tools/fix.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

// A result computed on s and copied to pinned host memory.
const std::string kDeviceToHost =
    "stream s\n"                   // 1
    "event E\n"                    // 2
    "buffer D 256 on s\n"          // 3
    "buffer H 256 pinned\n"        // 4
    "launch k on s writes D\n"     // 5
    "copy d2h on s from D to H\n"  // 6
    "record E on s\n";             // 7

TEST(TraceHostMemory, AHostReadOfACopysDestinationBeforeASyncRaces) {
  // R12d: the copy to pinned memory returns at once; R12b: the host's read
  // is ordered after nothing on s. One thread, no query: 1 execution, one
  // data race (copy -> host read), fixed by the host synchronizing s.
  const Report r = explore_text(kDeviceToHost + "host reads H\n");  // 8
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_TRUE(r.notes.empty());
  ASSERT_EQ(errors(r), 1u);
  const ReportFinding& race = first_of(r, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.origin->line, 6);
  EXPECT_EQ(race.second->origin->line, 8);
  EXPECT_EQ(race.second->stream, "host@main");
  EXPECT_EQ(race.fix, Fix::SyncBeforeHostUse);
  ASSERT_EQ(race.edits.size(), 1u);
  EXPECT_EQ(race.edits[0], TraceEdit::insert_before(8, "sync stream s"));
}

TEST(TraceHostMemory, EverySyncThatCoversTheCopyOrdersTheHostRead) {
  // R4: a stream sync, an event sync after the copy and a device sync each
  // order the host after the copy: clean, 1 execution each.
  for (const char* sync : {"sync stream s\n", "sync event E\n", "sync device\n"}) {
    const Report r = explore_text(kDeviceToHost + sync + "host reads H\n");
    EXPECT_EQ(r.coverage.explored, 1u) << sync;
    EXPECT_EQ(errors(r), 0u) << sync;
  }
}

TEST(TraceHostMemory, AReadInsideIfDoneIsOrderedAndOneAfterANotDoneQueryIsNot) {
  // R11 + R12b: `if done E` reads H only when the copy is done: 2
  // executions (done, not done), clean. A bare `query E` then a read:
  // 2 executions, and the read races in the one where E is not done.
  const Report guarded = explore_text(kDeviceToHost + "if done E\nhost reads H\nend\n");
  EXPECT_EQ(guarded.coverage.explored, 2u);
  EXPECT_EQ(errors(guarded), 0u);
  const Report unguarded = explore_text(kDeviceToHost + "query E\nhost reads H\n");
  EXPECT_EQ(unguarded.coverage.explored, 2u);
  ASSERT_EQ(errors(unguarded), 1u);
  EXPECT_EQ(unguarded.findings[0].schedules, 1u);
}

TEST(TraceHostMemory, AHostWriteOfACopysSourceBeforeTheCopyRanRaces) {
  // R12d: an upload from pinned or pageable memory may not have read its
  // source when cudaMemcpyAsync returns ("might be synchronous" is no
  // guarantee): the refill races with the copy (write after read). With an
  // event synchronized in between: clean. 1 execution each.
  for (const char* kind : {"pinned", "pageable"}) {
    const std::string head = std::string("stream s\nevent E\nbuffer D 256 on s\nbuffer H 256 ") + kind +
                             "\n"                                // 1-4
                             "host writes H\n"                   // 5
                             "copy up on s from H to D\n"        // 6
                             "record E on s\n";                  // 7
    const Report racy = explore_text(head + "host writes H\n");  // 8
    EXPECT_EQ(racy.coverage.explored, 1u) << kind;
    ASSERT_EQ(errors(racy), 1u) << kind;
    EXPECT_EQ(racy.findings[0].first.origin->line, 6) << kind;
    EXPECT_EQ(racy.findings[0].second->origin->line, 8) << kind;
    EXPECT_EQ(errors(explore_text(head + "sync event E\nhost writes H\n")), 0u) << kind;
  }
}

TEST(TraceHostMemory, ACopyBetweenHostBuffersIsSynchronousWithTheHost) {
  // R12d: host to host, cudaMemcpyAsync is fully synchronous: the host's
  // read of the destination and write of the source after it are ordered:
  // clean, 1 execution (a copy between pinned buffers that did not make
  // the host wait would race with both).
  const Report h2h = explore_text(
      "stream s\nbuffer A 256 pageable\nbuffer B 256 pinned\nhost writes A\n"
      "copy h2h on s from A to B\nhost reads B\nhost writes A\n");
  EXPECT_EQ(h2h.coverage.explored, 1u);
  EXPECT_EQ(errors(h2h), 0u);
}

TEST(TraceHostMemory, FreeingHostMemoryADeviceOpUsesIsAUseAfterFree) {
  // R12a: cudaFreeHost orders nothing: freeing H while the copy may still
  // write it is a racing use after free (1 execution); synchronized first,
  // clean; a host read after the free is a definite one.
  const Report racing = explore_text(kDeviceToHost + "free H\n");  // 8
  EXPECT_EQ(racing.coverage.explored, 1u);
  ASSERT_EQ(errors(racing), 1u);
  const ReportFinding& uaf = first_of(racing, sim::FindingKind::UseAfterFree);
  EXPECT_FALSE(uaf.definite);
  EXPECT_EQ(uaf.first.origin->line, 6);
  EXPECT_EQ(uaf.second->origin->line, 8);
  EXPECT_EQ(errors(explore_text(kDeviceToHost + "sync stream s\nfree H\n")), 0u);
  const Report definite = explore_text(kDeviceToHost + "sync stream s\nfree H\nhost reads H\n");
  ASSERT_EQ(errors(definite), 1u);
  EXPECT_TRUE(first_of(definite, sim::FindingKind::UseAfterFree).definite);
}

TEST(TraceHostMemory, AHostFunctionIsOrderedByItsStreamOnly) {
  // R12c: `callback` on s after the copy reads H in stream order: clean.
  // On another stream it races with the copy until that stream waits on an
  // event recorded after it. 1 execution each.
  EXPECT_EQ(errors(explore_text(kDeviceToHost + "callback f on s reads H\n")), 0u);
  const Report other = explore_text("stream t\n" + kDeviceToHost + "callback f on t reads H\n");
  EXPECT_EQ(other.coverage.explored, 1u);
  ASSERT_EQ(errors(other), 1u);
  EXPECT_EQ(other.findings[0].fix, Fix::RecordEventAndWait);
  EXPECT_EQ(errors(explore_text("stream t\n" + kDeviceToHost + "wait E on t\ncallback f on t reads H\n")), 0u);
}

TEST(TraceHostMemory, AKernelMayTouchPinnedMemory) {
  // Mapped pinned memory: a kernel's write to it is ordered before the
  // host's read by a sync (clean), and races with it without one.
  const std::string head = "stream s\nbuffer H 256 pinned\nlaunch k on s writes H\n";
  EXPECT_EQ(errors(explore_text(head + "sync stream s\nhost reads H\n")), 0u);
  EXPECT_EQ(errors(explore_text(head + "host reads H\n")), 1u);
}

TEST(TraceHostMemory, HostThreadsAreOrderedOnlyByHostOrdering) {
  // R12b + R6: H is made before the worker starts (R6a orders that). The
  // worker's own write touches H as main's read and free do, so it runs
  // before the read, between the read and the free, or after the free: 3
  // executions. Nothing orders the threads: the write races with the read
  // (either way) and with the free (a racing use after free, either way),
  // 4 findings, each fixed by ordering the threads, with no edit. With a
  // join before the read: clean, 1 execution (the join waits for the end).
  const std::string head = "buffer H 256 pinned\nthread w\n@w host writes H\n";
  const Report racy = explore_text(head + "host reads H\nfree H\n");
  EXPECT_EQ(racy.coverage.explored, 3u);
  ASSERT_EQ(errors(racy), 4u);
  EXPECT_EQ(count_kind(racy, sim::FindingKind::DataRace), 2u);
  EXPECT_EQ(count_kind(racy, sim::FindingKind::UseAfterFree), 2u);
  for (const ReportFinding& f : racy.findings) {
    EXPECT_EQ(f.fix, Fix::OrderTheHostThreads);
    EXPECT_TRUE(f.edits.empty());
  }
  const Report joined = explore_text(head + "join w\nhost reads H\nfree H\n");
  EXPECT_EQ(joined.coverage.explored, 1u);
  EXPECT_TRUE(joined.findings.empty());
}

}  // namespace
}  // namespace streamcheck::tools
