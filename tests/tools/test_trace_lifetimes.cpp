// Trace language v2, stream and event lifetimes (R9, docs/TRACES.md
// "Lifetimes"): `destroy` orders nothing (R9a), a use after it is a finding
// that names both lines (R9b), and a name declared again is a new stream or
// event that reports call NAME'k and fixes call NAME. Counts are executions
// of `explore --strategy dfs`, each reasoned in a comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/tools/trace_litmus.h"
#include "tools/explain.h"
#include "tools/fix_plan.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

const ReportFinding& only_race(const Report& r) {
  EXPECT_EQ(count_kind(r, sim::FindingKind::DataRace), 1u);
  return *std::find_if(r.findings.begin(), r.findings.end(),
                       [](const ReportFinding& f) { return f.kind == sim::FindingKind::DataRace; });
}

TEST(TraceLifetimes, DestroyingAStreamDoesNotWaitForItsWork) {
  // R9a: cudaStreamDestroy returns at once; w still runs and races with r.
  // One stream of the host: 1 execution.
  const std::string racy =
      "stream s1\nstream s2\nbuffer A 256\nlaunch w on s1 writes A\ndestroy stream s1\nlaunch r on s2 reads A\n";
  const Report r = explore_text(racy);
  EXPECT_EQ(r.coverage.explored, 1u);
  const ReportFinding& race = only_race(r);
  EXPECT_EQ(race.first.stream, "s1");
  EXPECT_EQ(race.first.origin->line, 4);
  EXPECT_EQ(race.second->origin->line, 6);
  // Control: a sync before the destroy orders it.
  const Report synced = explore_text(
      "stream s1\nstream s2\nbuffer A 256\nlaunch w on s1 writes A\nsync stream s1\ndestroy stream s1\n"
      "launch r on s2 reads A\n");
  EXPECT_EQ(count_kind(synced, sim::FindingKind::DataRace), 0u);
  EXPECT_TRUE(synced.notes.empty());
}

TEST(TraceLifetimes, ACaptureOutlivesItsEvent) {
  // R9a: the wait was made before the destroy; the event's capture still
  // orders r after w.
  const Report r = explore_text(
      "stream s1\nstream s2\nevent E\nbuffer A 256\nlaunch w on s1 writes A\nrecord E on s1\nwait E on s2\n"
      "destroy event E\nlaunch r on s2 reads A\n");
  EXPECT_EQ(count_kind(r, sim::FindingKind::DataRace), 0u);
  EXPECT_TRUE(r.notes.empty());
}

TEST(TraceLifetimes, WaitingOnADestroyedEventIsAFindingAndIsNotMade) {
  // R9b: the wait is a use after destroy, reported at its line with the
  // destroy's; it is not made, so r also races with w.
  const Report r = explore_text(
      "stream s1\nstream s2\nevent E\nbuffer A 256\nlaunch w on s1 writes A\nrecord E on s1\ndestroy event E\n"
      "wait E on s2\nlaunch r on s2 reads A\n");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::UseAfterDestroy);
  EXPECT_EQ(r.notes[0].line, 8);
  EXPECT_NE(r.notes[0].message.find("event E was destroyed at line 7"), std::string::npos) << r.notes[0].message;
  EXPECT_EQ(only_race(r).second->origin->line, 9);
  EXPECT_EQ(r.verdict(), Verdict::Findings);
}

TEST(TraceLifetimes, RecordingAndDestroyingADestroyedNameAreFindingsToo) {
  const Report r = explore_text(
      "stream s1\nevent E\nbuffer A 256\ndestroy event E\nrecord E on s1\ndestroy event E\nlaunch w on s1 writes A\n"
      "destroy stream s1\nsync stream s1\n");
  std::vector<int> lines;
  for (const auto& n : r.notes) {
    EXPECT_EQ(n.kind, NoteKind::UseAfterDestroy) << n.message;
    lines.push_back(n.line);
  }
  EXPECT_EQ(lines, (std::vector<int>{5, 6, 9}));
}

TEST(TraceLifetimes, AStreamDeclaredAgainIsANewStreamNamedApartInReportsAndAsTheTraceDoesInFixes) {
  // The handle of a destroyed stream may come back for a new one, but the
  // new stream is not ordered after the old one's work: r races with w.
  const std::string text =
      "stream s\nbuffer A 256\nlaunch w on s writes A\ndestroy stream s\nstream s\nlaunch r on s reads A\n";
  const Report r = explore_text(text);
  const ReportFinding& race = only_race(r);
  EXPECT_EQ(race.first.stream, "s");
  EXPECT_EQ(race.second->stream, "s'2");
  EXPECT_NE(describe(*race.second).find("s'2"), std::string::npos) << describe(*race.second);
  // `streamcheck fix` names the streams as the trace does: at line 3 `s`
  // is the first stream, at line 6 the second.
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  const Trace trace = parse_trace(text, "t.trace");
  Report grouped = r;
  group_findings(trace, grouped, o);
  const AppliedFixes fixed = apply_fixes(text, trace, grouped, o);
  ASSERT_EQ(fixed.applied.size(), 1u);
  EXPECT_NE(fixed.trace.text.find("record fix_1 on s\n"), std::string::npos) << fixed.trace.text;
  EXPECT_NE(fixed.trace.text.find("wait fix_1 on s\n"), std::string::npos) << fixed.trace.text;
  const Report after = explore_text(fixed.trace.text);
  EXPECT_EQ(count_kind(after, sim::FindingKind::DataRace), 0u) << fixed.trace.text;
}

TEST(TraceLifetimes, AnEventDeclaredAgainIsANewEvent) {
  // E'2 is recorded after the destroy; the wait on it orders r after w.
  const Report r = explore_text(
      "stream s1\nstream s2\nevent E\nbuffer A 256\ndestroy event E\nevent E\nlaunch w on s1 writes A\n"
      "record E on s1\nwait E on s2\nlaunch r on s2 reads A\n");
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(count_kind(r, sim::FindingKind::DataRace), 0u);
}

TEST(TraceLifetimes, AnotherThreadsUseAfterTheDestroyIsFoundInTheExecutionThatRunsIt) {
  // main: w (line 5), destroy (line 7); t: r (line 6). r conflicts with w
  // and with the destroy (stream s): r before w, between them, or after the
  // destroy -- 3 executions, the last one with the finding.
  const Report r = explore_text(
      "stream s\nbuffer A 256\nbuffer B 256\nthread t\nlaunch w on s writes A\n@t launch r on s reads B\n"
      "destroy stream s\n");
  EXPECT_EQ(r.coverage.explored, 3u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::UseAfterDestroy);
  EXPECT_EQ(r.notes[0].line, 6);
}

TEST(TraceLifetimes, AStreamWithADestroyedStreamsHandleIsOrderedAfterNothingOfIt) {
  // R9c: b got a's handle; that orders nothing (1 execution, a data race
  // a#0 -> b#0), and the report says the two shared a handle, through a
  // stream between them too (c got b's).
  const std::string text =
      "stream a\nbuffer A 256\nsync device\nlaunch w on a writes A\ndestroy stream a\n"  // 1-5
      "stream b handle a\n";                                                             // 6
  const Report r = explore_text(text + "launch r on b reads A\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(errors(r), 1u);
  const ReportFinding& race = first_of(r, sim::FindingKind::DataRace);
  ASSERT_TRUE(race.same_handle.has_value());
  EXPECT_EQ(*race.same_handle,
            "b was created with the handle a had (line 6): code keyed by the handle (an allocator's per-stream free "
            "list, a per-stream event cache) takes the two for one stream, but nothing orders b after a's work "
            "(R9c)");
  const Report chained = explore_text(text + "destroy stream b\nstream c handle b\nlaunch r on c reads A\n");
  ASSERT_EQ(errors(chained), 1u);
  ASSERT_TRUE(first_of(chained, sim::FindingKind::DataRace).same_handle.has_value());
  EXPECT_NE(first_of(chained, sim::FindingKind::DataRace).same_handle->find("c was created with the handle a had"),
            std::string::npos);
  // Without the handle the race is the same, with no word on handles.
  const Report plain = explore_text(
      "stream a\nbuffer A 256\nsync device\nlaunch w on a writes A\ndestroy stream a\nstream b\n"
      "launch r on b reads A\n");
  ASSERT_EQ(errors(plain), 1u);
  EXPECT_FALSE(first_of(plain, sim::FindingKind::DataRace).same_handle.has_value());
}

}  // namespace
}  // namespace streamcheck::tools
