// Reports that point at the cause (issue 10 item 4): the bytes of a finding
// range by range, each named by its buffer, never their hull (S8b); near
// misses -- a record too early, a wait on a never-recorded event, a stale
// capture -- whose fix moves or completes THAT line (S9b); resource-mode
// fixes in resource calls (S9c). Every such fix, applied, removes its
// finding and adds none.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend_sim/byte_range.h"
#include "tests/tools/trace_generator.h"
#include "tools/explain.h"
#include "tools/fix.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

Report check_text(const std::string& text) { return check_trace(parse_trace(text, "t.trace"), TraceCheckOptions{}); }

/// Many schedules (DFS, every one for the small traces): a fix must hold in
/// all of them. Findings are judged by happens-before at enqueue, so the
/// schedules matter only where the pool or a query chooses.
Report explore_all(const std::string& text, std::uint64_t schedules = 3000) {
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  o.max_schedules = schedules;
  return explore_trace(parse_trace(text, "t.trace"), o);
}

const ReportFinding& only_error(const Report& r) {
  std::vector<const ReportFinding*> errors;
  for (const auto& f : r.findings)
    if (f.severity == Severity::Error) errors.push_back(&f);
  EXPECT_EQ(errors.size(), 1u) << report_text(r);
  return *errors.at(0);
}

/// A finding as "kind first-line -> second-line", its lines mapped by `line`.
std::string pair_of(const ReportFinding& f, const std::function<int(int)>& line) {
  const auto at = [&](const ReportOp& op) { return op.origin ? line(op.origin->line) : 0; };
  return fmt::format("{} {} -> {}", finding_label(f), at(f.first), f.second ? at(*f.second) : 0);
}

/// For every finding that has edits of its own (a near-miss move, a
/// resource call): applies them alone and checks the trace again: that
/// finding is gone, and every finding and error note left was there
/// before (none is new; a note the fix does not address, such as a
/// wrong-device record, R13d, stays).
void expect_own_fixes_remove_their_findings(const std::string& text, std::uint64_t schedules = 3000) {
  const Report before = explore_all(text, schedules);
  std::size_t own = 0;
  for (const auto& fixed : before.findings) {
    if (fixed.edits.empty()) continue;
    ++own;
    const EditedTrace edited = apply_edits(text, fixed.edits);
    const auto moved = [&](int l) { return edited.new_line.at(l); };
    std::multiset<std::string> expected;
    for (const auto& f : before.findings) expected.insert(pair_of(f, moved));
    const Report after = explore_all(edited.text, schedules);
    const std::string context = "fix: " + describe_fix(fixed) + "\nbefore:\n" + report_text(before) + "edited:\n" +
                                edited.text + "after:\n" + report_text(after);
    for (const auto& f : after.findings) {
      EXPECT_NE(pair_of(f, [](int l) { return l; }), pair_of(fixed, moved)) << context;
      EXPECT_TRUE(expected.contains(pair_of(f, [](int l) { return l; }))) << context;
    }
    std::multiset<std::pair<int, NoteKind>> notes_before;
    for (const auto& n : before.notes) notes_before.insert({moved(n.line), n.kind});
    for (const auto& n : after.notes) EXPECT_TRUE(notes_before.contains({n.line, n.kind})) << context;
  }
  EXPECT_GT(own, 0u) << report_text(before);
}

TEST(ByteRanges, AddKeepsTheUnionSortedNeverTheHull) {
  std::vector<sim::ByteRange> r;
  sim::add_range(r, {128, 192});
  sim::add_range(r, {0, 64});
  EXPECT_EQ(r, (std::vector<sim::ByteRange>{{0, 64}, {128, 192}}));
  sim::add_range(r, {64, 100});  // touches [0, 64): merged with it
  EXPECT_EQ(r, (std::vector<sim::ByteRange>{{0, 100}, {128, 192}}));
  sim::add_range(r, {90, 130});  // bridges both
  EXPECT_EQ(r, (std::vector<sim::ByteRange>{{0, 192}}));
  sim::add_range(r, {300, 300});  // empty: nothing
  EXPECT_EQ(sim::total_size(r), 192u);
}

// S8b: two ops that overlap on A[0:64], A[128:192] and all of C were
// reported on their hull, [A+0, C+256) as raw addresses, naming the bytes
// A[64:128], A[192:256] and the whole of B that nobody races on.
constexpr const char* kStridedOverTwoBuffers =
    "stream s1\n"
    "stream s2\n"
    "buffer A 256 on s1\n"
    "buffer B 256 on s1\n"
    "buffer C 256 on s1\n"
    "sync device\n"
    "launch k1 on s1 writes A[0:64], A[128:192], C\n"
    "launch k2 on s2 reads A, C\n"
    "sync device\n"
    "free A on s1\nfree B on s1\nfree C on s1\n";

TEST(ByteRanges, DisjointRangesOfOnePairAreNamedOneByOneByTheirBuffers) {
  const Report r = check_text(kStridedOverTwoBuffers);
  const ReportFinding& f = only_error(r);
  ASSERT_EQ(f.bytes.size(), 3u) << describe(f.bytes);
  for (const auto& b : f.bytes) ASSERT_TRUE(b.in_buffer) << describe(f.bytes);
  EXPECT_EQ(f.bytes[0].in_buffer->buffer, "A");
  EXPECT_EQ(f.bytes[0].in_buffer->lo, 0u);
  EXPECT_EQ(f.bytes[0].in_buffer->hi, 64u);
  EXPECT_EQ(f.bytes[1].in_buffer->lo, 128u);
  EXPECT_EQ(f.bytes[1].in_buffer->hi, 192u);
  EXPECT_EQ(f.bytes[2].in_buffer->buffer, "C");
  EXPECT_EQ(describe(f.bytes), "A[0:64], A[128:192], C[0:256]");
  EXPECT_NE(report_text(r).find("  bytes:    A[0:64], A[128:192], C[0:256]\n"), std::string::npos) << report_text(r);

  const auto j = nlohmann::json::parse(report_json(r));
  const auto& ranges = j["findings"][0]["ranges"];
  ASSERT_EQ(ranges.size(), 3u) << j.dump();
  EXPECT_EQ(ranges[1]["buffer"], "A");
  EXPECT_EQ(ranges[1]["offsets"], nlohmann::json::array({128, 192}));
  EXPECT_EQ(ranges[1]["address"][1].get<std::uint64_t>() - ranges[1]["address"][0].get<std::uint64_t>(), 64u);
  EXPECT_EQ(j["findings"][0]["bytes"], "A[0:64], A[128:192], C[0:256]");
}

TEST(ByteRanges, ACopyRacesOnlyOnTheBytesTheWriterWrote) {
  // The copy reads all of X; the kernel wrote X's first and last quarter:
  // the race is on those two, not on X[64:192] between them.
  const Report r = check_text(
      "stream s1\nstream s2\nbuffer X 256 on s1\nbuffer Y 256 on s1\nsync device\n"
      "launch fill on s1 writes X[0:64], X[192:256]\n"
      "copy back on s2 from X to Y\n"
      "sync device\nfree X on s1\nfree Y on s1\n");
  EXPECT_EQ(describe(only_error(r).bytes), "X[0:64], X[192:256]") << report_text(r);
}

std::string example(const std::string& name) {
  std::ifstream in(std::string(STREAMCHECK_EXAMPLES_DIR) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

bool has_near_miss(const Report& r, NearMiss::Kind kind, int line) {
  return std::any_of(r.near_misses.begin(), r.near_misses.end(),
                     [&](const NearMiss& n) { return n.kind == kind && n.statement.line == line; });
}

/// A finding whose fix is a near miss's: its fix, edits, and the near
/// miss's kind and lines (statement, op, seen_by).
void expect_near_miss_fix(const ReportFinding& f, Fix fix, const std::vector<TraceEdit>& edits, NearMiss::Kind kind,
                          int statement, int op, int seen_by) {
  EXPECT_EQ(f.fix, fix);
  EXPECT_EQ(f.edits, edits);
  ASSERT_TRUE(f.near_miss);
  EXPECT_EQ(f.near_miss->kind, kind);
  EXPECT_EQ(f.near_miss->statement.line, statement);
  ASSERT_TRUE(f.near_miss->op && f.near_miss->seen_by);
  EXPECT_EQ(f.near_miss->op->line, op);
  EXPECT_EQ(f.near_miss->seen_by->line, seen_by);
}

// S9b (a): the record is one op too early on its stream. The tool proposed a
// new event (record after line 9, wait before line 11) instead of moving the
// program's own record.
constexpr const char* kRecordOneOpTooEarly =
    "stream s1\n"
    "stream s2\n"
    "event ready\n"
    "buffer A 256 on s1\n"
    "buffer B 256 on s1\n"
    "sync device\n"
    "launch fill_B on s1 writes B\n"
    "record ready on s1\n"  // line 8: one op too early
    "launch fill_A on s1 writes A\n"
    "wait ready on s2\n"
    "launch use on s2 reads A, B\n"
    "sync device\n"
    "free A on s1\nfree B on s1\n";

TEST(NearMiss, RecordOneOpTooEarlyIsMovedAfterTheRacingOp) {
  const Report r = check_text(kRecordOneOpTooEarly);
  const ReportFinding& f = only_error(r);
  EXPECT_EQ(f.fix, Fix::MoveRecordAfterFirst);
  EXPECT_EQ(f.edits, (std::vector<TraceEdit>{TraceEdit::move_after(8, 9)}));
  ASSERT_TRUE(f.near_miss);
  EXPECT_EQ(f.near_miss->kind, NearMiss::Kind::RecordTooEarly);
  EXPECT_EQ(f.near_miss->seen_by->line, 10);
  EXPECT_TRUE(has_near_miss(r, NearMiss::Kind::RecordTooEarly, 8));
  EXPECT_EQ(describe_fix(f).rfind("move line 8 after line 9: ", 0), 0u) << describe_fix(f);
  EXPECT_EQ(r.verdict(), Verdict::Findings);
  expect_own_fixes_remove_their_findings(kRecordOneOpTooEarly);
}

TEST(NearMiss, WaitOnANeverRecordedEventOrdersNothingAndIsMovedAfterTheRecord) {
  const std::string text = example("02_wait_before_record.trace");
  const Report r = check_text(text);
  const ReportFinding& f = only_error(r);
  EXPECT_EQ(f.fix, Fix::MoveWaitAfterRecord);
  EXPECT_EQ(f.edits, (std::vector<TraceEdit>{TraceEdit::move_after(8, 9)}));
  EXPECT_TRUE(has_near_miss(r, NearMiss::Kind::WaitNeverRecorded, 8));
  EXPECT_NE(report_text(r).find("line 8 (wait ready on s2) orders nothing"), std::string::npos) << report_text(r);
  expect_own_fixes_remove_their_findings(text);
}

TEST(NearMiss, StaleCaptureAfterAReRecordWaitsBeforeTheReRecord) {
  const std::string text = example("03_rerecorded_event.trace");
  const Report r = check_text(text);
  // The wait (14) saw the re-record (13) that replaced the capture it needed (11).
  expect_near_miss_fix(only_error(r), Fix::WaitBeforeReRecord, {TraceEdit::insert_after(11, "wait ready on s3")},
                       NearMiss::Kind::StaleCapture, 14, 11, 13);
  expect_own_fixes_remove_their_findings(text);
}

// (e) The bug of a producer/consumer loop: the producer's stream records an
// event after the write, and the consumer's stream never waits on it. The
// tool declared an event of its own and recorded it beside the trace's; the
// fix is the missing wait.
constexpr const char* kRecordNeverWaited =
    "stream s1\n"
    "stream s2\n"
    "event e\n"
    "buffer A 4096 on s1\n"
    "launch produce on s1 writes A\n"  // line 5
    "record e on s1\n"                 // line 6: nothing on s2 waits on it
    "launch consume on s2 reads A\n"   // line 7
    "sync device\n"
    "free A on s1\n";

TEST(NearMiss, ARecordNothingWaitsOnGetsTheMissingWait) {
  const Report r = check_text(kRecordNeverWaited);
  const ReportFinding& f = only_error(r);
  // The record (6) captures the write (5) that the read (7) needed.
  expect_near_miss_fix(f, Fix::WaitOnTheRecord, {TraceEdit::insert_before(7, "wait e on s2")},
                       NearMiss::Kind::RecordNeverWaited, 6, 5, 7);
  EXPECT_TRUE(r.near_misses.empty()) << report_text(r);  // the finding's fix says it
  EXPECT_EQ(describe_fix(f).rfind("add `wait e on s2` before line 7: the record at line 6 captures line 5", 0), 0u)
      << describe_fix(f);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(describe_cause(r, r.groups[0]), "s2 never waits on the record at line 6 (record never waited)");
  expect_own_fixes_remove_their_findings(kRecordNeverWaited);
}

// In a loop each iteration's read waits on its own iteration's record (the
// consumer's write-after-read has no record on s2 to wait on: a new event);
// of two records after the write, the nearer is waited on.
TEST(NearMiss, EachReadWaitsOnTheNearestRecordAfterItsWrite) {
  std::string loop = "stream s1\nstream s2\nevent e\nevent later\nbuffer A 4096 on s1\nbuffer B 4096 on s1\n";
  for (int i = 0; i < 3; ++i)
    loop +=
        "launch produce on s1 writes A\nrecord e on s1\nlaunch other on s1 writes B\nrecord later on s1\n"
        "launch consume on s2 reads A\n";
  loop += "sync device\nfree A on s1\nfree B on s1\n";
  const Report r = check_text(loop);
  std::size_t waits = 0;
  for (const ReportFinding& f : r.findings) {
    if (f.first.stream != "s1") {
      EXPECT_EQ(f.fix, Fix::RecordEventAndWait) << describe_fix(f);
      continue;
    }
    ++waits;
    EXPECT_EQ(f.fix, Fix::WaitOnTheRecord) << describe_fix(f);
    EXPECT_EQ(f.edits, (std::vector<TraceEdit>{TraceEdit::insert_before(f.second->origin->line, "wait e on s2")}));
    EXPECT_EQ(f.near_miss->statement.line, f.first.origin->line + 1);
  }
  EXPECT_EQ(waits, 3u) << report_text(r);
  expect_own_fixes_remove_their_findings(loop);
}

// The wait names the read's stream as the trace does at its line: `legacy`
// of the current device (reported as legacy:1, R13).
TEST(NearMiss, TheMissingWaitNamesTheReadsStreamAsTheTraceDoes) {
  const std::string text =
      "device 1\nevent e\nstream t nonblocking\nbuffer A 4096 on t\nsync device\n"
      "launch produce on t writes A\nrecord e on t\nlaunch consume on legacy reads A\nsync device\nfree A on t\n";
  const Report r = check_text(text);
  const ReportFinding& f = only_error(r);
  EXPECT_EQ(f.fix, Fix::WaitOnTheRecord) << report_text(r);
  EXPECT_EQ(f.edits, (std::vector<TraceEdit>{TraceEdit::insert_before(8, "wait e on legacy")}));
  expect_own_fixes_remove_their_findings(text);
}

// Where the wait would not see the record (another record of the event in
// between, a record before the write, a destroy of the event or of the
// write's stream, a record another thread or an untaken branch may move, a
// record on another device's `legacy`, a capture that takes the write, the
// record or the read), the fix stays a new event.
TEST(NearMiss, ARecordTheWaitWouldNotSeeKeepsTheNewEvent) {
  const std::string head = "stream s1\nstream s2\nstream s3\nevent e\nevent f\nbuffer A 4096 on s1\n";
  const std::string tail = "launch consume on s2 reads A\nsync device\nfree A on s1\n";
  const std::string captured_head =
      "stream s1 nonblocking\nstream s2 nonblocking\nevent e\nevent f\nbuffer A 4096 on s1\nsync device\n";
  const std::map<std::string, std::string> traces = {
      {"re-recorded", head + "launch produce on s1 writes A\nrecord e on s1\nrecord e on s3\n" + tail},
      {"before the write", head + "record e on s1\nlaunch produce on s1 writes A\n" + tail},
      {"destroyed", head + "launch produce on s1 writes A\nrecord e on s1\ndestroy event e\n" + tail},
      {"thread", head + "thread worker\n@worker record e on s3\nlaunch produce on s1 writes A\nrecord e on s1\n" +
                     tail + "join worker\n"},
      {"branch", head + "launch produce on s1 writes A\nif done f\nrecord e on s1\nend\n" + tail},
      {"stream destroyed",
       head + "launch produce on s1 writes A\ndestroy stream s1\nstream s1\nrecord e on s1\n" + tail},
      {"write captured", captured_head +
                             "capture begin s1\nlaunch produce on s1 writes A\ncapture end s1 graph G\n"
                             "record e on s1\nlaunch graph G on s1\n" +
                             tail},
      {"record captured", captured_head +
                              "launch produce on s1 writes A\ncapture begin s1\nrecord e on s1\n"
                              "capture end s1 graph G\n" +
                              tail},
      {"read captured", captured_head + "launch produce on s1 writes A\nrecord e on s1\ncapture begin s2\n"
                                        "launch consume on s2 reads A\ncapture end s2 graph G\nlaunch graph G on s2\n"
                                        "sync device\nfree A on s1\n"},
      {"device",
       "device 1\nevent e1\ndevice 0\nstream s2 nonblocking\nbuffer A 4096 on s2\nsync device\n"
       "launch produce on legacy writes A\ndevice 1\nrecord e1 on legacy\ndevice 0\n"
       "launch consume on s2 reads A\nsync device\nfree A on s2\n"},
  };
  for (const auto& [name, text] : traces) {
    const Report r = check_text(text);
    ASSERT_FALSE(r.findings.empty()) << name << "\n" << report_text(r);
    for (const ReportFinding& f : r.findings) EXPECT_NE(f.fix, Fix::WaitOnTheRecord) << name << "\n" << report_text(r);
  }
}

// (c) needs a record of the first op's stream AFTER the first op: one before
// it captured none of it, and a wait placed after that record would leave
// the race (near_miss.cpp searches only the records after the first op).
TEST(NearMiss, ARecordBeforeTheFirstOpIsNoCaptureToWaitFor) {
  const std::string text =
      "stream s1\nstream s2\nstream s3\nevent ready\n"
      "buffer A 4096 on s1\nbuffer B 4096 on s2\n"
      "record ready on s1\n"  // line 7: before fill_A, captures nothing of it
      "launch fill_A on s1 writes A\n"
      "launch fill_B on s2 writes B\n"
      "record ready on s2\n"
      "wait ready on s3\n"
      "launch combine on s3 reads A, B\n"  // line 12: races with fill_A
      "sync device\nfree A on s1\nfree B on s2\n";
  const Report r = check_text(text);
  const ReportFinding& f = only_error(r);
  EXPECT_EQ(f.fix, Fix::RecordEventAndWait) << report_text(r);
  EXPECT_FALSE(f.near_miss);
}

TEST(NearMiss, AWaitThatOrdersNothingIsANoteNotAFinding) {
  const Report r = check_text(
      "stream s1\nstream s2\nevent e\nbuffer A 256 on s1\n"
      "wait e on s2\n"  // line 5: e is never recorded
      "sync device\nlaunch k on s2 writes A\nsync device\nfree A on s1\n");
  EXPECT_EQ(r.verdict(), Verdict::Clean) << report_text(r);
  ASSERT_EQ(r.near_misses.size(), 1u);
  EXPECT_EQ(r.near_misses[0].kind, NearMiss::Kind::WaitNeverRecorded);
  EXPECT_FALSE(r.near_misses[0].op);
  const auto j = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(j["near_misses"][0]["kind"], "wait never recorded");
  EXPECT_EQ(j["near_misses"][0]["line"], 5);
}

// The one-pass check of waits (near_miss.cpp): only a wait before every
// record of its event is one, and the record after it is named.
TEST(NearMiss, OnlyAWaitBeforeItsEventsFirstRecordOrdersNothing) {
  const Report r = check_text(
      "stream s1\nstream s2\nevent e\nbuffer A 256 on s1\n"
      "wait e on s2\n"  // line 5: e is recorded only later
      "launch k on s1 writes A\n"
      "record e on s1\n"  // line 7
      "wait e on s2\n"    // line 8: sees line 7's capture
      "launch k2 on s2 reads A\nsync device\nfree A on s1\n");
  EXPECT_EQ(r.verdict(), Verdict::Clean) << report_text(r);
  ASSERT_EQ(r.near_misses.size(), 1u) << report_text(r);
  EXPECT_EQ(r.near_misses[0].kind, NearMiss::Kind::WaitNeverRecorded);
  EXPECT_EQ(r.near_misses[0].statement.line, 5);
  ASSERT_TRUE(r.near_misses[0].op);
  EXPECT_EQ(r.near_misses[0].op->line, 7);
}

// S9c: the forgotten finish of examples/21. The tool gave raw-CUDA advice
// (record an event on s1 after line 9, make s0 wait on it before line 11).
TEST(ResourceFix, AForgottenFinishIsAddedInResourceTerms) {
  const std::string text = example("21_resource_forgotten_finish.trace");
  const Report r = check_text(text);
  const ReportFinding& f = only_error(r);
  EXPECT_EQ(f.fix, Fix::FinishTheUse);
  EXPECT_EQ(f.edits, (std::vector<TraceEdit>{TraceEdit::insert_after(9, "finish A on s1 read")}));
  EXPECT_EQ(describe_fix(f).rfind("add `finish A on s1 read` after line 9: ", 0), 0u) << describe_fix(f);
  EXPECT_TRUE(has_near_miss(r, NearMiss::Kind::PrepareWithoutFinish, 8));
  expect_own_fixes_remove_their_findings(text);
}

constexpr const char* kRawLaunchOnABlock =
    "resource\n"
    "stream s0\n"
    "stream s1\n"
    "allocate A 4096 on s0\n"
    "run fill on s0 writes A\n"
    "launch peek on s1 reads A\n"  // line 6: the resource never hears of it
    "deallocate A\n"
    "reap\n";

TEST(ResourceFix, ARawLaunchOnABlockIsBracketedWithPrepareAndFinish) {
  const Report r = check_text(kRawLaunchOnABlock);
  ASSERT_FALSE(r.findings.empty());
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.fix, Fix::PrepareAndFinishTheLaunch) << describe_fix(f);
    EXPECT_EQ(f.edits, (std::vector<TraceEdit>{TraceEdit::insert_before(6, "prepare A on s1 read"),
                                               TraceEdit::insert_after(6, "finish A on s1 read")}));
  }
  expect_own_fixes_remove_their_findings(kRawLaunchOnABlock);
}

TEST(ResourceFix, UnderAMutantNoEditOfTheTraceIsOffered) {
  const Report r = check_text(example("10_resource_mutant_m4.trace"));
  const ReportFinding& f = only_error(r);
  EXPECT_EQ(f.fix, Fix::ResourceOrdersThem);
  EXPECT_TRUE(f.edits.empty());
}

TEST(NearMiss, EveryExampleWithAFixOfItsOwnLosesThoseFindingsAndGainsNone) {
  std::size_t with_own_fix = 0;
  for (const auto& entry : std::filesystem::directory_iterator(STREAMCHECK_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".trace") continue;
    const std::string text = example(entry.path().filename().string());
    const Report r = check_text(text);
    if (std::none_of(r.findings.begin(), r.findings.end(), [](const auto& f) { return !f.edits.empty(); })) continue;
    SCOPED_TRACE(entry.path().filename().string());
    ++with_own_fix;
    expect_own_fixes_remove_their_findings(text);
  }
  EXPECT_GE(with_own_fix, 3u);  // 02, 03 and 21 at least
}

TEST(NearMiss, GeneratedProgramsFixesOfTheirOwnLoseThoseFindingsAndGainNone) {
  std::size_t programs_with_own_fix = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const std::string text = generate_trace_program(seed);
    const Report r = check_text(text);
    if (std::none_of(r.findings.begin(), r.findings.end(), [](const auto& f) { return !f.edits.empty(); })) continue;
    SCOPED_TRACE(text);
    ++programs_with_own_fix;
    expect_own_fixes_remove_their_findings(text, 200);
  }
  EXPECT_GE(programs_with_own_fix, 15u) << programs_with_own_fix;
}

}  // namespace
}  // namespace streamcheck::tools
