// Trace language v2, CUDA graphs (R14, docs/TRACES.md "Graphs"): `capture
// begin S` ... `capture end S graph G` captures the work of S, and of every
// stream that waits on an event recorded in the capture, into G instead of
// running it (R14a); `launch graph G on S2` runs G's work in S2's order,
// each branch as it was captured (R14b); a graph's launches run one at a
// time (R14c). Each test is a litmus program with its exact number of
// executions (`explore --strategy dfs`) and its findings. Malformed capture
// statements are in malformed_traces.h.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/trace_litmus.h"
#include "tools/fix.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

// c captures a kernel writing X; s reads X afterwards.
const std::string kCapturedWrite =
    "stream s nonblocking\n"    // 1
    "stream c nonblocking\n"    // 2
    "buffer X 256 on s\n"       // 3
    "sync stream s\n"           // 4
    "capture begin c\n"         // 5
    "launch k on c writes X\n"  // 6
    "capture end c graph G\n";  // 7

TEST(TraceGraphs, CapturedWorkDoesNotRun) {
  // R14a: k is captured, not run: s's read races with nothing (1
  // execution, clean).
  const Report r = explore_text(kCapturedWrite + "launch r on s reads X\nsync stream s\nfree X on s\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_EQ(errors(r), 0u);
  EXPECT_TRUE(r.notes.empty());
}

TEST(TraceGraphs, ALaunchRunsTheGraphInItsStreamsOrder) {
  // R14b: launched on c, k runs as c's work: a read on s races with it (1
  // execution, line 6 -> line 9, the op named by its captured line and its
  // launch); launched on s, the read after it is ordered (clean).
  const Report other = explore_text(kCapturedWrite + "launch graph G on c\nlaunch r on s reads X\n");  // 8, 9
  EXPECT_EQ(other.coverage.explored, 1u);
  ASSERT_EQ(errors(other), 1u);
  const ReportFinding& race = first_of(other, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.origin->line, 6);
  EXPECT_EQ(race.first.origin->graph_launch, 8);
  EXPECT_EQ(race.first.origin->text, "launch k on c writes X; run by line 8: launch graph G on c");
  EXPECT_EQ(race.second->origin->line, 9);
  // The fix orders the whole launch: a record after line 8, on its stream.
  ASSERT_EQ(other.groups.size(), 2u);  // the race, and X's leak
  std::vector<TraceEdit> edits;
  for (const auto& g : other.groups) edits.insert(edits.end(), g.edits.begin(), g.edits.end());
  EXPECT_NE(std::find(edits.begin(), edits.end(), TraceEdit::insert_after(8, "record fix_1 on c")), edits.end());
  EXPECT_NE(std::find(edits.begin(), edits.end(), TraceEdit::insert_before(9, "wait fix_1 on s")), edits.end());
  const Report same = explore_text(kCapturedWrite + "launch graph G on s\nlaunch r on s reads X\nfree X on s\n");
  EXPECT_EQ(same.coverage.explored, 1u);
  EXPECT_EQ(errors(same), 0u);
}

TEST(TraceGraphs, LaunchesOfOneGraphRunOneAtATime) {
  // R14c: k reads and writes X; the launch on s2 waits for the launch on
  // s1, although nothing else orders the two streams: clean, 1 execution.
  const Report r = explore_text(
      "stream s1 nonblocking\n"
      "stream s2 nonblocking\n"
      "stream c nonblocking\n"
      "buffer X 256 on s1\n"
      "sync stream s1\n"
      "capture begin c\n"
      "launch k on c readwrites X\n"
      "capture end c graph G\n"
      "launch graph G on s1\n"
      "launch graph G on s2\n"
      "sync stream s2\n"
      "free X on s1\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_EQ(errors(r), 0u);
}

// A fork-join capture: side joins through `fork`, and is joined back
// through `back`; line 10 writes X on s, line 11 reads it on side.
const std::string kForkJoin =
    "stream s nonblocking\n"     // 1
    "stream side nonblocking\n"  // 2
    "event fork\n"               // 3
    "event back\n"               // 4
    "buffer X 256 on s\n"        // 5
    "sync stream s\n"            // 6
    "capture begin s\n"          // 7
    "record fork on s\n"         // 8
    "wait fork on side\n";       // 9

TEST(TraceGraphs, BranchesOfAGraphAreOrderedOnlyByItsEdges) {
  // R14b: side's node runs on a stream of its own (G/side), after the fork
  // only: the write on s and the read on side race at the launch (1
  // execution), and the fix is a record and a wait captured with them.
  const std::string tail =
      "record back on side\nwait back on s\ncapture end s graph G\nlaunch graph G on s\n"
      "sync stream s\nfree X on s\n";
  const Report r = explore_text(kForkJoin + "launch w on s writes X\nlaunch r on side reads X\n" + tail);
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(errors(r), 1u);
  const ReportFinding& race = first_of(r, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.origin->line, 10);
  EXPECT_EQ(race.second->origin->line, 11);
  EXPECT_EQ(race.second->stream, "G/side");
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].edits,
            (std::vector<TraceEdit>{TraceEdit::declare("event fix_1"), TraceEdit::insert_after(10, "record fix_1 on s"),
                                    TraceEdit::insert_before(11, "wait fix_1 on side")}));
  const Report fixed = explore_text(
      apply_edits(kForkJoin + "launch w on s writes X\nlaunch r on side reads X\n" + tail, r.groups[0].edits).text);
  EXPECT_EQ(errors(fixed), 0u);
  // Forked after the write: clean, 1 execution.
  const Report ordered = explore_text(
      "stream s nonblocking\nstream side nonblocking\nevent fork\nevent back\nbuffer X 256 on s\nsync stream s\n"
      "capture begin s\nlaunch w on s writes X\nrecord fork on s\nwait fork on side\nlaunch r on side reads X\n" +
      tail);
  EXPECT_EQ(ordered.coverage.explored, 1u);
  EXPECT_EQ(errors(ordered), 0u);
}

TEST(TraceGraphs, AGraphKeepsUsingBytesGivenBackDuringItsCapture) {
  // The pool's bookkeeping runs at capture time: T is handed out and given
  // back before the capture ends, so the launch's kernel writes freed
  // bytes: a definite use after free (line 8 -> line 6, run by line 10),
  // 1 execution.
  const Report r = explore_text(
      "stream s nonblocking\n"                  // 1
      "buffer Pool 1024 on s\n"                 // 2
      "capture begin s\n"                       // 3
      "suballoc T 256 from Pool[0:256] on s\n"  // 4
      "launch k on s writes T\n"                // 5 (captured)
      "launch k2 on s reads T\n"                // 6 (captured)
      "sync stream legacy\n"                    // 7: legal, legacy is not captured
      "subfree T on s\n"                        // 8
      "capture end s graph G\n"                 // 9
      "launch graph G on s\n"                   // 10
      "free Pool on s\n");                      // 11
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(count_kind(r, sim::FindingKind::UseAfterFree), 2u);
  const ReportFinding& uaf = first_of(r, sim::FindingKind::UseAfterFree);
  EXPECT_TRUE(uaf.definite);
  EXPECT_EQ(uaf.first.origin->line, 8);
  EXPECT_EQ(uaf.second->origin->graph_launch, 10);
}

TEST(TraceGraphs, ACapturedRecordThatCudaRefusesLeavesItsWaitOrderingNothing) {
  // R13d inside a capture: e1 is device 1's, so its record on s is refused
  // (a wrong-device error, nothing captured) and the captured wait on it
  // orders nothing at each launch (R3); the launch still runs the rest of
  // the graph: 1 execution, the error and nothing else.
  const Report r = explore_text(
      "stream s nonblocking\n"       // 1
      "stream side nonblocking\n"    // 2
      "event back\n"                 // 3
      "device 1\n"                   // 4
      "event e1\n"                   // 5: device 1's
      "device 0\n"                   // 6
      "buffer X 256 on s\n"          // 7
      "sync stream s\n"              // 8
      "capture begin s\n"            // 9
      "record e1 on s\n"             // 10: refused
      "wait e1 on side\n"            // 11: captured, orders nothing
      "launch k on side writes X\n"  // 12
      "record back on side\n"        // 13
      "wait back on s\n"             // 14
      "capture end s graph G\n"      // 15
      "launch graph G on s\n"        // 16
      "sync stream s\n"              // 17
      "free X on s\n");              // 18
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::WrongDevice);
  EXPECT_EQ(r.notes[0].line, 10);
  EXPECT_EQ(errors(r), 0u);
}

TEST(TraceGraphs, TheParserMarksCapturedStatementsAndBranches) {
  const Trace t = parse_trace(kForkJoin +
                                  "launch w on side writes X\nrecord back on side\nwait back on s\n"
                                  "capture end s graph G\nlaunch graph G on s\n",
                              "graph.trace");
  EXPECT_EQ(source(t.statements[7]).captured_by, 7);  // record fork on s
  EXPECT_EQ(source(t.statements[8]).captured_by, 7);  // wait fork on side: side joins
  EXPECT_EQ(source(t.statements[9]).captured_by, 7);
  const auto& end = std::get<ast::CaptureEnd>(t.statements[12]);
  EXPECT_EQ(std::vector<std::string>(end.branches.begin(), end.branches.end()),
            (std::vector<std::string>{"s", "side"}));
  EXPECT_EQ(end.begin_line, 7);
  EXPECT_EQ(source(t.statements[13]).captured_by, 0);  // the launch runs
}

}  // namespace
}  // namespace streamcheck::tools
