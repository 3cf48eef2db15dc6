// Fixes as trace edits (tools/fix.h), findings grouped by root cause
// (tools/fix_plan.h) and fixes that keep every read's producer
// (tools/producers.h): issue 10 items 4 and 5, Seen S8a and S9a.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/tools/command.h"
#include "tools/fix.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

CommandResult run_command(const std::string& args) { return run_shell(std::string(STREAMCHECK_BIN) + " " + args); }

std::size_t errors(const Report& r) {
  std::size_t n = r.notes.size();
  for (const auto& f : r.findings) n += f.severity == Severity::Error;
  return n;
}

// ------------------------------------------------------------ apply_edits

TEST(FixEdits, InsertsMovesAndRemovesByTheOriginalLines) {
  const std::string original = "# head\nstream s1\nA\nB\nC\n";
  const std::vector<TraceEdit> edits{
      TraceEdit::declare("event fix_1"),
      TraceEdit::insert_after(3, "after A"),
      TraceEdit::insert_before(5, "before C"),
      TraceEdit::move_after(3, 4),
      TraceEdit::remove(2),
  };
  const EditedTrace t = apply_edits(original, edits);
  EXPECT_EQ(t.text, "# head\nevent fix_1\nB\nA\nafter A\nbefore C\nC\n");
  EXPECT_EQ(t.new_line, (std::vector<int>{0, 1, 0, 4, 3, 7}));
}

TEST(FixEdits, RefusesLinesOutsideTheFileAndMovesInACycle) {
  const std::string original = "a\nb\nc\n";
  for (const std::vector<TraceEdit>& edits : std::vector<std::vector<TraceEdit>>{
           {TraceEdit::insert_after(4, "x")},
           {TraceEdit::move_after(1, 0)},
           {TraceEdit::move_after(1, 1)},
           {TraceEdit::move_after(1, 2), TraceEdit::move_after(2, 1)},
           {TraceEdit::remove(2), TraceEdit::move_before(2, 1)},
       })
    EXPECT_THROW(apply_edits(original, edits), std::invalid_argument) << describe(edits);
}

TEST(FixEdits, DescribesEachEditByItsLines) {
  EXPECT_EQ(describe(TraceEdit::insert_after(7, "record fix_1 on s1")), "add `record fix_1 on s1` after line 7");
  EXPECT_EQ(describe(TraceEdit::move_after(21, 22)), "move line 21 after line 22");
}

// ------------------------------------------------------------ S8a: grouping

/// One producer stream writing `n` buffers, one consumer stream reading each,
/// and the one wait that would order them all missing.
std::string one_missing_edge(int n) {
  std::string t = "# S8a: one missing edge, many racing pairs\nstream s1\nstream s2\n";
  for (int i = 0; i < n; ++i) t += "buffer B" + std::to_string(i) + " 256\n";
  for (int i = 0; i < n; ++i) t += "launch fill" + std::to_string(i) + " on s1 writes B" + std::to_string(i) + "\n";
  for (int i = 0; i < n; ++i) t += "launch use" + std::to_string(i) + " on s2 reads B" + std::to_string(i) + "\n";
  t += "sync device\n";
  for (int i = 0; i < n; ++i) t += "free B" + std::to_string(i) + "\n";
  return t;
}

TEST(FixGroups, OneMissingEdgeIsOneGroupWithItsPairsAndCount) {
  const Trace trace = parse_trace(one_missing_edge(31), "s8a.trace");
  const Report r = check_trace(trace, {});
  ASSERT_EQ(r.findings.size(), 31u);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].findings.size(), 31u);
  // fill30 is on line 65, use0 on line 66: one record after the last write, one wait before the first read.
  EXPECT_EQ(r.groups[0].edits, (std::vector<TraceEdit>{TraceEdit::declare("event fix_1"),
                                                       TraceEdit::insert_after(65, "record fix_1 on s1"),
                                                       TraceEdit::insert_before(66, "wait fix_1 on s2")}));
  const EditedTrace fixed = apply_edits(one_missing_edge(31), r.groups[0].edits);
  EXPECT_EQ(errors(check_trace(parse_trace(fixed.text, "fixed.trace"), {})), 0u) << fixed.text;
}

TEST(FixGroups, S8aTheReportShowsOneCauseForThirtyOneFindings) {
  const tests::FreshTempDir dir("fix");
  const std::string trace = dir.write("s8a.trace", one_missing_edge(31)).string();
  const auto text = run_command("check " + trace);
  EXPECT_EQ(text.exit_code, 1) << text.out;
  EXPECT_NE(text.out.find("cause 1 of 1: 31 findings: nothing orders s1 before s2 (one missing edge)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("fix:      declare `event fix_1`; add `record fix_1 on s1` after line 65; add `wait "
                          "fix_1 on s2` before line 66"),
            std::string::npos)
      << text.out;
  const auto json = run_command("check " + trace + " --json");
  const auto j = nlohmann::json::parse(json.out);
  ASSERT_TRUE(j.contains("groups")) << json.out;
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["count"], 31);
  EXPECT_EQ(j["groups"][0]["findings"].size(), 31u);
  EXPECT_EQ(j["groups"][0]["edits"].size(), 3u);
}

TEST(FixGroups, PairsThatOneRecordAndWaitCannotCoverAreSeparateGroups) {
  // fill1 (line 7) is enqueued after use0 (line 6): no wait before line 6 can follow a record after line 7.
  const std::string text =
      "stream s1\nstream s2\nbuffer A 64\nbuffer B 64\nlaunch fill0 on s1 writes A\nlaunch use0 on s2 reads A\n"
      "launch fill1 on s1 writes B\nlaunch use1 on s2 reads B\nsync device\nfree A\nfree B\n";
  const Report r = check_trace(parse_trace(text, "two.trace"), {});
  ASSERT_EQ(r.findings.size(), 2u);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[1].edits[0].text, "event fix_2");
  std::vector<TraceEdit> all;
  for (const auto& g : r.groups) all.insert(all.end(), g.edits.begin(), g.edits.end());
  const EditedTrace fixed = apply_edits(text, all);
  EXPECT_EQ(errors(check_trace(parse_trace(fixed.text, "fixed.trace"), {})), 0u) << fixed.text;
}

// ------------------------------------------------------------ S9a: producers

/// The next batch's load is enqueued before the current batch's reader.
const char* const kNextBatchFirst =
    "# S9a: a write-after-read whose write is enqueued first\n"
    "stream load\n"
    "stream compute\n"
    "event loaded\n"
    "buffer A 4096\n"
    "launch load0 on load writes A      # batch 0\n"
    "record loaded on load\n"
    "launch load1 on load writes A      # batch 1, enqueued before compute0 reads batch 0\n"
    "wait loaded on compute\n"
    "launch compute0 on compute reads A # must read batch 0\n"
    "sync device\n"
    "free A\n";

TEST(FixProducers, S9aNoEdgeThatChangesWhatTheReaderReads) {
  const Report r = check_trace(parse_trace(kNextBatchFirst, "s9a.trace"), {});
  ASSERT_EQ(r.findings.size(), 1u);
  const ReportFinding& f = r.findings[0];
  EXPECT_EQ(f.fix, Fix::ReorderOrDoubleBuffer);
  ASSERT_TRUE(f.producer && f.producer->origin);
  EXPECT_EQ(f.producer->origin->line, 6);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_TRUE(r.groups[0].edits.empty());
}

TEST(FixProducers, S9aTheReportOffersReorderOrDoubleBufferNotTheEdge) {
  const tests::FreshTempDir dir("fix");
  const std::string trace = dir.write("s9a.trace", kNextBatchFirst).string();
  const auto text = run_command("check " + trace);
  EXPECT_EQ(text.exit_code, 1) << text.out;
  EXPECT_EQ(text.out.find("record an event on load after line 8"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("inverts the enqueue order"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Reorder the host code"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("double-buffer"), std::string::npos) << text.out;
  const auto j = nlohmann::json::parse(run_command("check " + trace + " --json").out);
  EXPECT_EQ(j["findings"][0]["producer"]["line"], 6);
}

// ------------------------------------------------------------ the fix verb

TEST(FixVerb, WritesTheFixedTraceAndChecksItAgain) {
  const tests::FreshTempDir dir("fix");
  const std::string fixed = dir.file("fixed.trace").string();
  const auto r = run_command("fix " + std::string(STREAMCHECK_EXAMPLES_DIR) + "/01_missing_wait.trace -o " + fixed);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("fixed cause 1 (1 findings): declare `event fix_1`"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 of 1 causes fixed; checked again: clean"), std::string::npos) << r.out;
  const auto again = run_command("explore " + fixed + " --strategy dfs");
  EXPECT_EQ(again.exit_code, 0) << again.out;
}

TEST(FixVerb, SaysWhichCausesItLeftAndWhyAndExits1) {
  const tests::FreshTempDir dir("fix");
  const std::string trace = dir.write("s9a.trace", kNextBatchFirst).string();
  const std::string fixed = dir.file("fixed.trace").string();
  const auto r = run_command("fix " + trace + " -o " + fixed);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("not fixed: cause 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("double-buffer"), std::string::npos) << r.out;
  const auto usage = run_command("fix " + trace);
  EXPECT_EQ(usage.exit_code, 2) << usage.out;
}

}  // namespace
}  // namespace streamcheck::tools
