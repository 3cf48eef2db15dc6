// Trace language v2, host code conditional on a query (R11, docs/TRACES.md
// "Branches on a query"): `if done E` ... `else` ... `end` runs one branch
// per answer of cudaEventQuery, both explored, and a finding says which
// branches its run took. Counts are executions of `explore --strategy dfs`,
// each reasoned in a comment. Malformed blocks are in malformed_traces.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/tools/trace_litmus.h"
#include "tools/report.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

// PyTorch's caching allocator, its own events written out: X, a block for
// s1, is read on s2; `used` is recorded after that read. The allocator
// reuses X's bytes for Y only when `used` is done, else it takes new memory.
const std::string kHead =
    "stream s1\n"                             // 1
    "stream s2\n"                             // 2
    "event ready\n"                           // 3
    "event used\n"                            // 4
    "buffer Seg 1024\n"                       // 5
    "suballoc X 256 from Seg[0:256] on s1\n"  // 6
    "launch fill on s1 writes X\n"            // 7
    "record ready on s1\n"                    // 8
    "wait ready on s2\n"                      // 9
    "launch use on s2 reads X\n"              // 10
    "record used on s2\n";                    // 11

std::string reuse_if_done(const std::string& event) {
  return kHead + "if done " + event +
         "\n"                                      // 12
         "subfree X on s1\n"                       // 13
         "suballoc Y 256 from Seg[0:256] on s1\n"  // 14
         "else\n"                                  // 15
         "buffer Y 256 on s1\n"                    // 16
         "end\n"                                   // 17
         "launch over on s1 writes Y\n";           // 18
}

TEST(TraceBranches, AReuseOnlyWhenTheLastUseIsDoneIsClean) {
  // R11 + R4: `use` has not run when the query asks: 2 executions, one per
  // answer. Done: the host is ordered after `use`, so the give-back and Y
  // are too. Not done: Y is new memory (X is left to the end: a leak
  // warning, no error).
  const Report r = explore_text(reuse_if_done("used"));
  EXPECT_EQ(r.coverage.explored, 2u);
  EXPECT_EQ(errors(r), 0u);
  EXPECT_TRUE(r.notes.empty());
  // Control: the same reuse made whatever the query answers (what the
  // trace language could say before R11) races in the "not done" execution.
  const Report unconditional = explore_text(kHead +
                                            "query used\nsubfree X on s1\nsuballoc Y 256 from Seg[0:256] on s1\n"
                                            "launch over on s1 writes Y\n");
  EXPECT_EQ(unconditional.coverage.explored, 2u);
  EXPECT_GE(errors(unconditional), 1u);
}

TEST(TraceBranches, AQueryOfTheWrongEventIsFoundInItsDoneBranch) {
  // `ready` is recorded before the read: its being done says nothing of
  // `use`. 2 executions; the done branch gives X back while `use` may run
  // (a use after free and reuse races), and each finding names the branch.
  const Report r = explore_text(reuse_if_done("ready"));
  EXPECT_EQ(r.coverage.explored, 2u);
  ASSERT_GE(errors(r), 1u);
  for (const ReportFinding& f : r.findings) {
    if (f.severity != Severity::Error) continue;
    EXPECT_EQ(f.branches, (std::vector<BranchTaken>{{12, true}}));
    EXPECT_EQ(f.schedules, 1u);
  }
  const std::string text = report_text(r);
  EXPECT_NE(text.find("branches: line 12 done"), std::string::npos) << text;
}

TEST(TraceBranches, WithoutElseTheNotDoneAnswerSkipsTheBlock) {
  // R11: 2 executions; only the done branch frees A, after its producer.
  const Report r = explore_text(
      "stream s1\nevent E\nbuffer A 256 on s1\nlaunch w on s1 writes A\nrecord E on s1\nif done E\nfree A\nend\n");
  EXPECT_EQ(r.coverage.explored, 2u);
  EXPECT_EQ(errors(r), 0u);
  // The leak is the not-done run's only (A is never freed there).
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, sim::FindingKind::Leak);
  EXPECT_EQ(r.findings[0].schedules, 1u);
  EXPECT_EQ(r.findings[0].branches, (std::vector<BranchTaken>{{6, false}}));
}

TEST(TraceBranches, EachAnswerRunsItsBranchOnly) {
  // R11: 2 executions. Done: A is freed and the else branch, which writes
  // A, does not run (else a use after free and a double free); not done:
  // only the else branch runs. A is freed once in both: nothing at all.
  const Report r = explore_text(
      "stream s1\nevent E\nbuffer A 256 on s1\nlaunch w on s1 writes A\nrecord E on s1\nif done E\nfree A on s1\n"
      "else\nlaunch k on s1 writes A\nfree A on s1\nend\n");
  EXPECT_EQ(r.coverage.explored, 2u);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_TRUE(r.notes.empty());
}

TEST(TraceBranches, NestedBlocksExploreEachAnswerPath) {
  // Two events of two streams, neither run when asked: outer not done (1),
  // or outer done and then the inner query either way (2): 3 executions.
  const Report r = explore_text(
      "stream s1\nstream s2\nevent E\nevent F\nbuffer A 256 on s1\nbuffer B 256 on s2\n"
      "launch a on s1 writes A\nrecord E on s1\nlaunch b on s2 writes B\nrecord F on s2\n"
      "if done E\nif done F\nfree A on s1\nelse\nfree B on s2\nend\nend\n");
  EXPECT_EQ(r.coverage.explored, 3u);
  EXPECT_EQ(errors(r), 0u);
}

TEST(TraceBranches, AQueryThatIsNotMadeTakesTheElseBranch) {
  // R9b: a destroyed event is not queried (a use after destroy note), and
  // cudaEventQuery's error is not cudaSuccess: the else branch runs.
  const Report r = explore_text(
      "stream s1\nevent E\nbuffer A 256 on s1\nrecord E on s1\ndestroy event E\nif done E\nfree A on s1\nelse\n"
      "launch late on s1 writes A\nfree A on s1\nend\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::UseAfterDestroy);
  EXPECT_EQ(r.notes[0].line, 6);
  EXPECT_EQ(errors(r), 0u);  // the launch then the free: no use after free
}

TEST(TraceBranches, ABufferEveryPathMakesIsThereAfterTheBlock) {
  // Malformed blocks are in malformed_traces.h; these are not malformed.
  const std::string head = "stream s1\nevent E\nbuffer A 64 on s1\nrecord E on s1\n";
  // Made in both branches, or before the `if`: there on every path.
  EXPECT_NO_THROW(parse_trace(head + "if done E\nbuffer B 64 on s1\nelse\nbuffer B 32 on s1\nend\nfree B\n", "t"));
  EXPECT_NO_THROW(parse_trace(head + "if done E\nbuffer A 64 on s1\nend\nfree A\n", "t"));
}

}  // namespace
}  // namespace streamcheck::tools
