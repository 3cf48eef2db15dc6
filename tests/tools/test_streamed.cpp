// Streamed checks (issue 16, `check --stream`, docs/TRACES.md "Streamed
// checks"): a trace read and run a statement at a time must say what the
// same execution of the whole trace says -- the same findings, by stream
// name and op, with the same lines and texts, the same notes -- while what it
// holds stays bounded by what the trace holds at once. What it cannot stream
// is an input error at its line, never a partial check.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/temp_dir.h"
#include "tests/test_scale.h"
#include "tests/tools/example_files.h"
#include "tests/tools/trace_generator.h"
#include "tools/explain.h"
#include "tools/report.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

/// A finding as a report names it, without the run's stream numbering (a
/// streamed run makes a default stream when a statement first uses it).
std::string key(const ReportFinding& f) {
  const auto op = [](const ReportOp& o) {
    return fmt::format("{}#{} @{} {} ({})", o.stream, o.ref.index, o.origin ? o.origin->line : 0,
                       o.origin ? o.origin->text : "-", o.description.value_or(""));
  };
  std::string k = fmt::format("{} {} {} ", sim::to_string(f.kind), f.definite, op(f.first));
  if (f.second) k += "/ " + op(*f.second);
  return k + " " + describe(f.bytes);
}
std::set<std::string> keys(const Report& r) {
  std::set<std::string> out;
  for (const ReportFinding& f : r.findings) out.insert(key(f));
  return out;
}
std::vector<std::string> notes(const Report& r) {
  std::vector<std::string> out;
  for (const Note& n : r.notes) out.push_back(fmt::format("{} {}", n.line, n.message));
  return out;
}

/// The same execution of the whole trace: its ops run at once too, nothing dropped.
Report whole_at_once(const std::string& path, std::uint64_t seed) {
  TraceCheckOptions o;
  o.seed = seed;
  o.progress = sim::DeviceProgress::AtOnce;
  const Trace trace = load_trace(path);
  // check_trace's Collector writes a schedule header, which an AtOnce run
  // has none of: run it and report it as the streamed check does.
  sim::RandomChooser chooser(seed);
  TraceRunOptions run = run_options_of(trace, o);
  const Execution exec = run_on_simulator(trace, chooser, run);
  Report r;
  for (const sim::Finding& f : exec.model().findings()) {
    ReportFinding out;
    out.kind = f.kind;
    out.definite = f.definite;
    out.first = report_op(exec, f.first);
    if (f.second) out.second = report_op(exec, *f.second);
    // Bytes several buffers hold are named by the first op's (as reports do).
    for (const sim::ByteRange& b : f.bytes) {
      std::optional<std::uint32_t> prefer;
      for (const sim::OpAccess& a : exec.model().accesses(f.first))
        if (a.range.lo < b.hi && b.lo < a.range.hi) prefer = a.allocation.value;
      for (NamedBytes& piece : exec.name_bytes(b, prefer)) out.bytes.push_back(std::move(piece));
    }
    r.findings.push_back(std::move(out));
  }
  r.notes = exec.notes();
  return r;
}

/// Why a trace cannot be streamed, from its statements: what the reader must refuse.
bool unstreamable(const Trace& trace) {
  for (const Statement& st : trace.statements) {
    if (std::string_view(source(st).thread) != kMainThread) return true;
    if (std::holds_alternative<ast::ThreadDecl>(st) || std::holds_alternative<ast::MutexDecl>(st) ||
        std::holds_alternative<ast::ChannelDecl>(st) || std::holds_alternative<ast::IfDone>(st) ||
        std::holds_alternative<ast::CaptureBegin>(st))
      return true;
  }
  return false;
}

TEST(Streamed, FindsWhatTheWholeTraceFindsOnEveryExample) {
  std::size_t streamed = 0, refused = 0;
  for (const std::string& file : example_files()) {
    const Trace trace = load_trace(file);
    TraceCheckOptions o;
    o.seed = 3;
    Report r;
    try {
      r = check_streamed(file, o);
    } catch (const TraceError& e) {
      EXPECT_TRUE(unstreamable(trace)) << file << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("without --stream"), std::string::npos) << e.what();
      ++refused;
      continue;
    }
    EXPECT_FALSE(unstreamable(trace)) << file << " streamed";
    ++streamed;
    const Report whole = whole_at_once(file, 3);
    EXPECT_EQ(keys(r), keys(whole)) << file;
    EXPECT_EQ(notes(r), notes(whole)) << file;
    EXPECT_EQ(r.coverage.how, Coverage::How::Streamed);
    ASSERT_TRUE(r.coverage.streamed);
    EXPECT_EQ(r.coverage.streamed->statements, trace.statements.size()) << file;
    // With nothing observed, every schedule has the verdict: check's own
    // (the device progressing on observation) agrees.
    if (r.coverage.exhaustive) {
      const Report checked = check_trace(trace, o);
      EXPECT_TRUE(checked.coverage.exhaustive) << file;
      EXPECT_EQ(keys(r), keys(checked)) << file;
    }
  }
  EXPECT_GE(streamed, 40u);
  EXPECT_GE(refused, 5u);
}

TEST(Streamed, FindsWhatTheWholeTraceFindsOnGeneratedPrograms) {
  tests::FreshTempDir dir("streamed");
  const std::uint64_t programs = tests::sanitizer_scale() ? 40 : 200;
  std::size_t with_findings = 0;
  for (std::uint64_t seed = 1; seed <= programs; ++seed) {
    const std::string path = dir.write("p.trace", generate_trace_program(seed)).string();
    TraceCheckOptions o;
    o.seed = seed;
    const Report r = check_streamed(path, o);
    const Report whole = whole_at_once(path, seed);
    EXPECT_EQ(keys(r), keys(whole)) << generate_trace_program(seed);
    EXPECT_EQ(notes(r), notes(whole)) << seed;
    with_findings += r.findings.empty() ? 0 : 1;
  }
  EXPECT_GE(with_findings, programs / 4) << "the programs should race often";
}

/// A streamed check of `path` is an input error at `line` whose message
/// says `says`.
void expect_refused(const std::string& path, int line, std::string_view says) {
  try {
    (void)check_streamed(path, {});
    ADD_FAILURE() << path << " streamed; expected an error at line " << line << ": " << says;
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(Streamed, RefusesWhatItCannotRunAtItsLine) {
  tests::FreshTempDir dir("streamed-refused");
  struct Case {
    const char* text;
    int line;
    const char* says;
  };
  const Case cases[] = {
      {"stream s\nthread t\n@t launch k on s\n", 2, "host threads"},
      {"stream s\nevent e\nbuffer A 8 on s\nif done e\nend\n", 4, "'if done' block"},
      {"stream s\nbuffer A 8 on s\ncapture begin s\n", 3, "graph capture"},
      {"stream s\nbuffer A 8 on s\npolicy opportunistic = on\n", 3, "before the first statement that runs (line 2)"},
      {"stream s\nbuffer A 8 on s\nresource\n", 3, "before the first statement that runs"},
  };
  for (const Case& c : cases) {
    expect_refused(dir.write("r.trace", c.text).string(), c.line, c.says);
  }
  // Input errors of any trace stay what they are, at their line.
  const std::string bad = dir.write("bad.trace", "stream s\nlaunch k on nowhere writes A\n").string();
  EXPECT_THROW((void)check_streamed(bad, {}), TraceError);
  const std::string empty = dir.write("empty.trace", "# nothing\n\n").string();
  try {
    (void)check_streamed(empty, {});
    ADD_FAILURE() << "an empty trace streamed";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.kind(), TraceError::Kind::NoStatements);
  }
  EXPECT_THROW((void)check_streamed((dir.path() / "missing.trace").string(), {}), TraceError);
  TraceCheckOptions faults;
  faults.faults = true;
  EXPECT_THROW((void)check_streamed(bad, faults), std::invalid_argument);
}

TEST(Streamed, ALineParsedBeforeIsParsedAgainOnceANameChanged) {
  // The reader keeps the statements of lines it parsed (LineMemo): a
  // repeated line after a free, a redeclaration or a destroy must be parsed
  // again, and each repetition of a racy line reports its own line.
  tests::FreshTempDir dir("streamed-memo");
  const std::string loop = "launch k on s writes A\nlaunch r on t reads A\n";
  const std::string after_free = dir.write("freed.trace", "stream s\nstream t\nbuffer A 8 on s\n" + loop + loop +
                                                              "sync device\nfree A on s\nlaunch k on s writes A\n")
                                     .string();
  TraceCheckOptions o;
  o.seed = 1;
  const Report freed = check_streamed(after_free, o);
  EXPECT_EQ(keys(freed), keys(whole_at_once(after_free, 1)));
  bool use_after_free_at_10 = false;
  for (const ReportFinding& f : freed.findings)
    for (const ReportOp* op : {&f.first, f.second ? &*f.second : nullptr})
      if (op && op->origin && op->origin->line == 10 && f.kind == sim::FindingKind::UseAfterFree)
        use_after_free_at_10 = true;
  EXPECT_TRUE(use_after_free_at_10) << "the launch after the free, on line 10";
  const std::string smaller = dir.write("smaller.trace",
                                        "stream s\nbuffer A 64 on s\nlaunch k on s writes A[0:32]\n"
                                        "sync device\nfree A on s\nbuffer A 16 on s\n"
                                        "launch k on s writes A[0:32]\n")
                                  .string();
  expect_refused(smaller, 7, "goes past the end");
  // A declaration changes what the same line parses to next: never reused.
  const std::string twice = dir.write("twice.trace", "stream s\nevent e\nevent e\nrecord e on s\n").string();
  expect_refused(twice, 3, "already declared");
  const std::string racy =
      dir.write("racy.trace", "stream s\nstream t\nbuffer A 8 on s\n" + loop + loop + loop).string();
  const Report r = check_streamed(racy, o);
  std::set<int> lines;
  for (const ReportFinding& f : r.findings)
    for (const ReportOp* op : {&f.first, f.second ? &*f.second : nullptr})
      if (op && op->origin && op->origin->text.str().starts_with("launch")) lines.insert(op->origin->line);
  EXPECT_EQ(keys(r), keys(whole_at_once(racy, 1)));
  EXPECT_GE(lines.size(), 3u) << "each repeated racy line reports itself";
}

TEST(Streamed, ABufferGivenBackAndMadeAgainAsBeforeIsParsedOnceAndQuotedAtItsNewestLine) {
  // `buffer A 1K on s` after `free A` declares A as it was: the loop's
  // three lines are parsed once (LineMemo), but a message that quotes A's
  // declaration names the newest `buffer` line, as a parse of it would.
  tests::FreshTempDir dir("streamed-redeclared");
  const std::string loop = "buffer A 1K on s\nlaunch k on s writes A\nfree A on s\n";
  const std::string quoted =
      dir.write("quoted.trace", "stream s\n" + loop + loop + loop + "buffer A 1K on s\nsubfree A on s\n").string();
  expect_refused(quoted, 12, "(line 11)");
  // Made again larger, the buffer's ranges parse anew: the line past its
  // old end is no error now, and the one past the new end is.
  const std::string grown = dir.write("grown.trace", "stream s\n" + loop + loop +
                                                         "buffer A 2K on s\nlaunch k on s writes A[1024:2048]\n"
                                                         "free A on s\n" +
                                                         loop + "launch k on s writes A[1024:2048]\n")
                                .string();
  expect_refused(grown, 14, "goes past the end");
  TraceCheckOptions o;
  o.seed = 3;
  const std::string racy = dir.write("racy.trace", "stream s\nstream t\n" + loop + loop +
                                                       "buffer A 1K on s\nlaunch r on t reads A\nfree A on s\n" + loop)
                               .string();
  EXPECT_EQ(keys(check_streamed(racy, o)), keys(whole_at_once(racy, 3)));
  EXPECT_FALSE(check_streamed(racy, o).findings.empty());
}

TEST(Streamed, StatementTextsReadsTheLinesAskedForAndNoOthers) {
  // A streamed report's statements are read back from the file by line:
  // comments and blank lines hold none, and a line past the end is absent.
  tests::FreshTempDir dir("streamed-texts");
  const std::string path =
      dir.write("t.trace", "stream s   # the stream\n\nbuffer  A 1K on s\nlaunch k on s writes A\nfree A on s\n")
          .string();
  const std::vector<int> asked{1, 2, 3, 5, 9};
  const StatementTexts texts = statement_texts(path, asked);
  EXPECT_EQ(texts.size(), 3u);
  EXPECT_EQ(texts.find(1), std::optional<std::string_view>("stream s"));
  EXPECT_EQ(texts.find(2), std::nullopt);  // blank
  EXPECT_EQ(texts.find(3), std::optional<std::string_view>("buffer A 1K on s"));
  EXPECT_EQ(texts.find(4), std::nullopt);  // not asked for
  EXPECT_EQ(texts.find(5), std::optional<std::string_view>("free A on s"));
  EXPECT_EQ(texts.find(9), std::nullopt);  // past the end
  StatementTexts by_hand;
  by_hand.add(4, "a");
  EXPECT_THROW(by_hand.add(4, "b"), std::logic_error);  // lines ascend
  EXPECT_EQ(by_hand.find(4), std::optional<std::string_view>("a"));
}

TEST(Streamed, LinesAcrossBlocksAndALoopThatChangesCourseAreReadAsWritten) {
  // The reader holds the file a 64 KB block at a time and tries first the
  // line that followed the last one last time (LineMemo): lines cut by a
  // block's end, a line longer than a block, and a repeated line followed
  // by a different one than before must all read as the whole trace does.
  tests::FreshTempDir dir("streamed-blocks");
  std::string text = "stream s\nstream t\nevent e\nevent f\nbuffer A 64 on s\nbuffer B 64 on t\nrecord f on t\n";
  const std::string write_a = "launch k on s writes A  # a site comment, to make lines cross blocks at odd places\n";
  const std::string round =
      "wait f on s\n" + write_a + "record e on s\nwait e on t\nlaunch r on t reads A writes B\nrecord f on t\n";
  std::uint64_t rounds = 0;
  for (; text.size() < 3 * 65536; ++rounds) text += round;
  text += "# " + std::string(150000, 'x') + "\n";  // longer than a block
  // The same write, followed by another line than every time before: a race.
  text += "wait f on s\n" + write_a + "launch q on t writes A\n";
  const std::string path = dir.write("blocks.trace", text).string();
  TraceCheckOptions o;
  o.seed = 1;
  const Report r = check_streamed(path, o);
  EXPECT_EQ(keys(r), keys(whole_at_once(path, 1)));
  std::vector<const ReportFinding*> races;  // the rest are the two buffers' leaks
  for (const ReportFinding& f : r.findings)
    if (f.kind != sim::FindingKind::Leak) races.push_back(&f);
  ASSERT_EQ(races.size(), 1u) << "the last two writes race, nothing else does";
  EXPECT_EQ(races[0]->kind, sim::FindingKind::DataRace);
  const int last_line = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  std::set<int> lines;
  for (const ReportOp* op : {&races[0]->first, races[0]->second ? &*races[0]->second : nullptr})
    if (op && op->origin) lines.insert(op->origin->line);
  EXPECT_EQ(lines, (std::set<int>{last_line - 1, last_line}));
  EXPECT_EQ(r.coverage.streamed->ops, 2 * rounds + 2 + 2) << "every launch and the two buffers' allocations";
}

TEST(Streamed, WhatItHoldsDoesNotGrowWithTheTrace) {
  // The same race-free loop, 20,000 and 200,000 times: the records held at
  // the end stay within one retention window, whatever the length.
  tests::FreshTempDir dir("streamed-long");
  const auto held = [&](int iterations) {
    std::string text = "stream a\nstream b\nevent e\nevent f\nbuffer X 4096 on a\nbuffer Y 4096 on b\n";
    for (int i = 0; i < iterations; ++i)
      text +=
          "wait f on a\nlaunch produce on a writes X\nrecord e on a\nwait e on b\nlaunch consume on b reads X "
          "writes Y\nrecord f on b\n";
    text += "sync device\nfree X on a\nfree Y on b\n";
    const Report r = check_streamed(dir.write("loop.trace", text).string(), {});
    EXPECT_TRUE(r.findings.empty());
    EXPECT_TRUE(r.coverage.exhaustive);
    EXPECT_EQ(r.coverage.streamed->ops, 2u * iterations + 4);
    return r.coverage.streamed->held_ops;
  };
  const int longer = tests::sanitizer_scale() ? 40000 : 200000;
  const std::uint64_t short_run = held(10000), long_run = held(longer);
  EXPECT_LE(long_run, 2 * sim::DeviceModel::kCompactEvery + 64);
  EXPECT_LE(short_run, 2 * sim::DeviceModel::kCompactEvery + 64);
}

/// A loop of `iterations` that makes a pool choice (a `buffer` that could
/// reuse) and asks a query in most of them: more than a report lists.
std::string many_choices_trace(int iterations) {
  std::string text = "stream s\nstream t\nevent e\n";
  for (int i = 0; i < iterations; ++i)
    text += fmt::format("buffer A{} {}K on s\nlaunch k on s writes A{}\nrecord e on s\nquery e\nfree A{} on s\n", i % 3,
                        1 + i % 2, i % 3, i % 3);
  return text;
}

TEST(Streamed, ListsTheFirstChoicesAndQueriesWithTheirLinesAndCountsTheRest) {
  // A streamed run keeps none of its choices (one per `buffer` that could
  // reuse): it lists the first kMaxListedChoices of each kind as they are
  // made and counts the others. The listing must be the same execution's
  // (the whole trace run at once with the same seed), line for line.
  tests::FreshTempDir dir("streamed-choices");
  const int iterations = 3 * static_cast<int>(kMaxListedChoices);
  const std::string path = dir.write("choices.trace", many_choices_trace(iterations)).string();
  TraceCheckOptions o;
  o.seed = 5;
  const Report streamed = check_streamed(path, o);
  const ChoiceSummary& listed = streamed.coverage.unexplored;

  const Trace trace = load_trace(path);
  o.progress = sim::DeviceProgress::AtOnce;
  sim::RandomChooser chooser(o.seed);
  const Execution whole = run_on_simulator(trace, chooser, run_options_of(trace, o));
  std::vector<ChoicePoint> pool;
  std::uint64_t other_choices = 0;
  for (const ChoicePoint& c : whole.choices())
    if (c.kind == sim::ChoiceKind::PoolRange)
      pool.push_back(c);
    else
      ++other_choices;
  const auto& queries = whole.query_answers();
  ASSERT_GT(pool.size(), kMaxListedChoices) << "the trace must make more pool choices than a report lists";
  ASSERT_EQ(queries.size(), static_cast<std::size_t>(iterations));

  ASSERT_EQ(listed.pool_reuse.size(), kMaxListedChoices);
  for (std::size_t i = 0; i < kMaxListedChoices; ++i) {
    EXPECT_EQ(listed.pool_reuse[i].line, pool[i].line) << "pool choice " << i;
    EXPECT_EQ(listed.pool_reuse[i].options, pool[i].options) << "pool choice " << i;
    EXPECT_EQ(listed.pool_reuse[i].taken, pool[i].taken) << "pool choice " << i;
    EXPECT_EQ((pool[i].line - 4) % 5, 0) << "a `buffer` line asks the pool";
  }
  ASSERT_EQ(listed.queries.size(), kMaxListedChoices);
  for (std::size_t i = 0; i < kMaxListedChoices; ++i) {
    EXPECT_EQ(listed.queries[i].line, queries[i].line) << "query " << i;
    EXPECT_EQ(listed.queries[i].done, queries[i].done) << "query " << i;
    EXPECT_EQ(listed.queries[i].after_choices, queries[i].after_choices) << "query " << i;
  }
  EXPECT_EQ(listed.not_listed, pool.size() + queries.size() - 2 * kMaxListedChoices);
  EXPECT_EQ(listed.device_steps, other_choices);
  EXPECT_TRUE(listed.faults.empty());
  EXPECT_FALSE(streamed.coverage.exhaustive);
}

TEST(CheckReport, ListsTheFirstChoicesOfEachKindAndCountsTheRest) {
  // The whole-trace check keeps its run's choices, but its report lists the
  // first kMaxListedChoices of each kind, in the order the run made them,
  // and counts the others: a report of a long loop named every one of its
  // pool choices, megabytes on one line.
  const int iterations = 3 * static_cast<int>(kMaxListedChoices);
  const Trace trace = parse_trace(many_choices_trace(iterations), "choices.trace");
  TraceCheckOptions o;
  o.seed = 5;
  const Report report = check_trace(trace, o);
  const ChoiceSummary& listed = report.coverage.unexplored;

  o.progress = sim::DeviceProgress::OnObservation;  // as check runs it
  sim::RandomChooser chooser(o.seed);
  const Execution run = run_on_simulator(trace, chooser, run_options_of(trace, o));
  std::vector<ChoicePoint> pool;
  for (const ChoicePoint& c : run.choices())
    if (c.kind == sim::ChoiceKind::PoolRange) pool.push_back(c);
  const auto& queries = run.query_answers();
  ASSERT_GT(pool.size(), kMaxListedChoices) << "the trace must make more pool choices than a report lists";
  ASSERT_GT(queries.size(), kMaxListedChoices) << "and ask more queries than it lists";

  ASSERT_EQ(listed.pool_reuse.size(), kMaxListedChoices);
  for (std::size_t i = 0; i < kMaxListedChoices; ++i) {
    EXPECT_EQ(listed.pool_reuse[i].line, pool[i].line) << "pool choice " << i;
    EXPECT_EQ(listed.pool_reuse[i].taken, pool[i].taken) << "pool choice " << i;
  }
  ASSERT_EQ(listed.queries.size(), kMaxListedChoices);
  for (std::size_t i = 0; i < kMaxListedChoices; ++i) {
    EXPECT_EQ(listed.queries[i].line, queries[i].line) << "query " << i;
    EXPECT_EQ(listed.queries[i].done, queries[i].done) << "query " << i;
  }
  EXPECT_EQ(listed.not_listed, pool.size() + queries.size() - 2 * kMaxListedChoices);
  EXPECT_FALSE(report.coverage.exhaustive);

  const std::string text = report_text(report);
  EXPECT_NE(text.find(fmt::format("{} more choices not listed", listed.not_listed)), std::string::npos) << text;
  EXPECT_EQ(text.find(fmt::format("at line {}", pool[kMaxListedChoices].line)), std::string::npos)
      << "the first unlisted pool choice's line is in the report:\n"
      << text;
}

TEST(Streamed, AFixThatCouldChangeWhatAReadSeesSaysItIsUnchecked) {
  tests::FreshTempDir dir("streamed-producer");
  // k2 writes what r reads, unordered with r; r's producer today is k1 (an
  // earlier write ordered before it): the edge k2 -> r would replace it.
  const std::string path = dir.write("p.trace",
                                     "stream a\nstream b\nevent e\nbuffer A 64\n"
                                     "launch k1 on a writes A\nrecord e on a\nwait e on b\n"
                                     "launch k2 on a writes A\nlaunch r on b reads A\nsync device\nfree A\n")
                               .string();
  const Report streamed = check_streamed(path, {});
  ASSERT_EQ(streamed.findings.size(), 1u);
  EXPECT_TRUE(streamed.findings[0].producer_unchecked);
  EXPECT_EQ(streamed.findings[0].fix, Fix::RecordEventAndWait);
  // The whole trace knows: no edge keeps what r reads.
  const Report whole = check_trace(load_trace(path), {});
  ASSERT_EQ(whole.findings.size(), 1u);
  EXPECT_EQ(whole.findings[0].fix, Fix::ReorderOrDoubleBuffer);
  EXPECT_FALSE(whole.findings[0].producer_unchecked);
}

/// `got` says, in text and in JSON, what `whole` (check_trace's) says.
void expect_same_report(const Report& got, const Report& whole, const std::string& what) {
  EXPECT_EQ(report_text(got), report_text(whole)) << what;
  EXPECT_EQ(report_json(got), report_json(whole)) << what;
}

/// `check` of a file, as its report reads (text and JSON), and as the
/// whole trace's check says it.

void expect_checked_as_whole(const std::string& path, const TraceCheckOptions& o, const std::string& what) {
  expect_same_report(check_trace_file(path, o), check_trace(load_trace(path), o), what);
}

TEST(CheckFile, SaysWhatTheWholeTraceCheckSaysOnEveryExampleAndGeneratedProgram) {
  std::size_t by_streaming = 0, with_choices = 0, clean_examples = 0;
  const auto count_streamed = [&](const std::string& path, const TraceCheckOptions& o) {
    const std::optional<Report> streamed = clean_by_streaming(path, o);
    by_streaming += streamed ? 1 : 0;
    with_choices += streamed && !streamed->coverage.exhaustive ? 1 : 0;
  };
  for (const std::string& file : example_files()) {
    // Two seeds: a query (example 74's, asked by the debug tier's reap) may
    // be answered differently by each, and the streamed run must answer as
    // the whole one does under both.
    for (const std::uint64_t seed : {2u, 3u}) {
      TraceCheckOptions o;
      o.seed = seed;
      expect_checked_as_whole(file, o, fmt::format("{}, seed {}", file, seed));
      count_streamed(file, o);
      if (seed == 3) clean_examples += check_trace(load_trace(file), o).findings.empty() ? 1 : 0;
    }
  }
  // The clean examples that stream take the streamed run, those that make
  // pool choices among them: the comparison above is of both paths, not of
  // one twice.
  EXPECT_GE(by_streaming, 30u) << "of " << clean_examples << " clean examples, two seeds each";
  tests::FreshTempDir dir("check-file");
  const std::uint64_t programs = tests::sanitizer_scale() ? 40 : 200;
  for (std::uint64_t seed = 1; seed <= programs; ++seed) {
    TraceCheckOptions o;
    o.seed = seed;
    const std::string path = dir.write("p.trace", generate_trace_program(seed)).string();
    expect_checked_as_whole(path, o, generate_trace_program(seed));
    count_streamed(path, o);
  }
  EXPECT_GE(with_choices, 2u) << "of " << by_streaming << " streamed";
}

/// clean_by_streaming's report of `path` under `seed`, which must be
/// check_trace's of the whole trace, text and JSON; an empty report (and a
/// failure) when the trace did not stream.
Report streamed_as_whole(const std::string& path, std::uint64_t seed) {
  TraceCheckOptions o;
  o.seed = seed;
  std::optional<Report> streamed = clean_by_streaming(path, o);
  if (!streamed) {
    ADD_FAILURE() << path << " was not streamed, seed " << seed;
    return {};
  }
  expect_same_report(*streamed, check_trace(load_trace(path), o), fmt::format("seed {}", seed));
  return std::move(*streamed);
}

TEST(CheckFile, StreamsALongLoopOfPoolReusesToTheWholeChecksReport) {
  // A stream-ordered allocate/use/free loop on two streams: each `buffer`
  // may reuse a freed block (a pool choice), and past the first pass of the
  // retention (sim::DeviceModel::kCompactEvery ops) the streamed run holds
  // only what is named; its choices and report must stay the whole run's.
  std::string text = "stream a\nstream b\nevent e\n";
  for (int i = 0; i < 30000; ++i)
    text += fmt::format(
        "buffer X{0} 1K on a\nlaunch k on a writes X{0}\nrecord e on a\nwait e on b\nlaunch r on b reads X{0}\n"
        "record e on b\nwait e on a\nfree X{0} on a\n",
        i % 3);
  tests::FreshTempDir dir("check-file-loop");
  const std::string path = dir.write("loop.trace", text).string();
  for (const std::uint64_t seed : {1u, 2u}) {
    const Report streamed = streamed_as_whole(path, seed);
    EXPECT_FALSE(streamed.coverage.exhaustive);
    EXPECT_EQ(streamed.coverage.unexplored.pool_reuse.size(), kMaxListedChoices);
    EXPECT_GT(streamed.coverage.unexplored.not_listed, 1000u);
  }
}

TEST(CheckFile, StreamsALongLoopOfQueriesToTheWholeChecksReport) {
  // A producer/consumer loop that polls its event each iteration: each
  // query of work the host has not observed is a choice of check's run
  // (done or not done), and the streamed run must answer each as that run
  // does, past the retention pass, and list the answers as it does.
  std::string text = "stream a\nstream b\nevent e\nevent f\nbuffer A 1K on a\n";
  for (int i = 0; i < 20000; ++i)
    text +=
        "launch k on a writes A\nrecord e on a\nquery e\nwait e on b\nlaunch r on b reads A\nrecord f on b\n"
        "wait f on a\n";
  text += "free A on a\n";
  tests::FreshTempDir dir("check-file-queries");
  const std::string path = dir.write("loop.trace", text).string();
  for (const std::uint64_t seed : {1u, 2u}) {
    const Report streamed = streamed_as_whole(path, seed);
    EXPECT_FALSE(streamed.coverage.exhaustive);
    ASSERT_EQ(streamed.coverage.unexplored.queries.size(), kMaxListedChoices);
    // Both answers among the listed: the run answered as check's does, not
    // "done" throughout as a device executing each op at once would.
    const auto& listed = streamed.coverage.unexplored.queries;
    EXPECT_TRUE(std::any_of(listed.begin(), listed.end(), [](const QueryAnswer& q) { return !q.done; }));
    EXPECT_GT(streamed.coverage.unexplored.not_listed, 1000u);
  }
}

TEST(CheckFile, TakesTheStreamedRunOnlyWhenItStandsForTheWholeOne) {
  tests::FreshTempDir dir("check-file-when");
  const std::string head = "stream a\nstream b\nevent e\nbuffer A 64\n";
  const std::string clean = head +
                            "launch k on a writes A\nrecord e on a\nwait e on b\nlaunch r on b reads A\n"
                            "sync device\nfree A\n";
  const auto streamed = [&](const std::string& name, const std::string& text) {
    return clean_by_streaming(dir.write(name, text).string(), {});
  };
  const std::optional<Report> r = streamed("clean.trace", clean);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->findings.empty());
  EXPECT_TRUE(r->coverage.exhaustive);
  EXPECT_EQ(r->coverage.how, Coverage::How::OneSchedule);
  // A pool reuse is the whole run's choice too (the device progresses on
  // observation in both): the streamed run lists it as the whole check does.
  const std::string reuse =
      "stream a\nbuffer A 64 on a\nlaunch k on a writes A\nfree A on a\nbuffer B 64 on a\n"
      "launch k on a writes B\nfree B on a\n";
  const std::optional<Report> chose = streamed("reuse.trace", reuse);
  ASSERT_TRUE(chose);
  EXPECT_FALSE(chose->coverage.exhaustive);
  ASSERT_EQ(chose->coverage.unexplored.pool_reuse.size(), 1u);
  EXPECT_EQ(chose->coverage.unexplored.pool_reuse[0].line, 5);
  expect_checked_as_whole((dir.path() / "reuse.trace").string(), {}, "reuse");
  // A block freed on another stream: check's run has not run the free when
  // `buffer B` asks, and the pool gives B three options; a run that executes
  // each op at once has run it, and gives two.
  const std::string other_stream =
      "stream a\nstream b\nbuffer A 64 on a\nlaunch k on a writes A\nfree A on a\nbuffer B 64 on b\n"
      "launch r on b writes B\nfree B on b\n";
  const std::optional<Report> other = streamed("other-stream.trace", other_stream);
  ASSERT_TRUE(other);
  ASSERT_EQ(other->coverage.unexplored.pool_reuse.size(), 1u);
  EXPECT_EQ(other->coverage.unexplored.pool_reuse[0].options, 3u);
  expect_checked_as_whole((dir.path() / "other-stream.trace").string(), {}, "other stream");
  // A query is answered as check's run answers it (the device progressing
  // on observation): a query of work not yet observed is a choice, listed
  // with its answer as the whole check lists it; one of work the host
  // already waited for answers done in every schedule, and lists nothing.
  const std::string asked = head +
                            "launch k on a writes A\nrecord e on a\nquery e\nwait e on b\nlaunch r on b reads A\n"
                            "sync device\nfree A\n";
  for (const std::uint64_t seed : {1u, 2u, 3u, 4u}) {
    TraceCheckOptions o;
    o.seed = seed;
    const std::optional<Report> queried = clean_by_streaming(dir.write("query.trace", asked).string(), o);
    ASSERT_TRUE(queried) << "seed " << seed;
    EXPECT_FALSE(queried->coverage.exhaustive);
    ASSERT_EQ(queried->coverage.unexplored.queries.size(), 1u);
    EXPECT_EQ(queried->coverage.unexplored.queries[0].line, 7);
    expect_checked_as_whole((dir.path() / "query.trace").string(), o, fmt::format("query, seed {}", seed));
  }
  const std::optional<Report> answered = streamed("query-done.trace", clean + "query e\n");
  ASSERT_TRUE(answered);
  EXPECT_TRUE(answered->coverage.exhaustive) << report_text(*answered);
  EXPECT_TRUE(answered->coverage.unexplored.queries.empty());
  expect_checked_as_whole((dir.path() / "query-done.trace").string(), {}, "query done");
  // Each of these is what a clean streamed run cannot stand for.
  const std::vector<std::pair<std::string, std::string>> whole_only = {
      // A wait on an event no earlier line recorded: a statement near miss
      // (recorded later), in a trace that is otherwise clean.
      {"near-miss", head + "launch k on a writes A\nwait e on b\nrecord e on a\nsync device\nfree A\n"},
      // A note (a double free) and a finding.
      {"note", clean + "free A\n"},
      {"finding", head + "launch k on a writes A\nlaunch r on b reads A\nsync device\nfree A\n"},
      // Input the streamed read refuses (threads), and input no read takes.
      {"unstreamable", "thread t\n" + clean},
      {"malformed", clean + "launch\n"},
  };
  for (const auto& [name, text] : whole_only) {
    EXPECT_FALSE(streamed(name + ".trace", text)) << name;
    const std::string path = (dir.path() / (name + ".trace")).string();
    if (name == "malformed") {
      EXPECT_THROW((void)check_trace_file(path, {}), TraceError);
      continue;
    }
    expect_checked_as_whole(path, {}, name);
  }
  // The near miss is what the whole check adds to a clean report.
  EXPECT_FALSE(check_trace_file((dir.path() / "near-miss.trace").string(), {}).near_misses.empty());
  // A pipe is read once, by the whole read.
  const std::filesystem::path fifo = dir.path() / "fifo.trace";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << clean; });
  const bool pipe_streamed = clean_by_streaming(fifo.string(), {}).has_value();  // took what the writer wrote
  std::optional<Report> piped;
  if (!pipe_streamed) piped = check_trace_file(fifo.string(), {});
  writer.join();
  EXPECT_FALSE(pipe_streamed);
  ASSERT_TRUE(piped);
  EXPECT_TRUE(piped->findings.empty());
  EXPECT_TRUE(piped->coverage.exhaustive) << report_text(*piped);
  // Options that need the whole run.
  TraceCheckOptions redundant;
  redundant.redundant = true;
  EXPECT_FALSE(clean_by_streaming((dir.path() / "clean.trace").string(), redundant));
}

}  // namespace
}  // namespace streamcheck::tools
