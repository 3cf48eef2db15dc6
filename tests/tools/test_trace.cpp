// The trace language: malformed input gives FILE:LINE:COL and runs nothing;
// well-formed traces give the verdicts of the HB rules; reports and JSON.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/explain.h"
#include "backend_sim/sim_backend.h"
#include "model/trace_keywords.h"
#include "tests/temp_dir.h"
#include "tests/tools/malformed_traces.h"
#include "tools/explain.h"
#include "tools/input_text.h"
#include "tools/schedule_io.h"
#include "tools/tool_protocols.h"
#include "tools/trace.h"
#include "tools/trace_check.h"
#include "tools/trace_interpreter.h"

namespace streamcheck::tools {
namespace {

class MalformedTrace : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedTrace, ReportsFileLineColumn) {
  const Malformed& m = GetParam();
  try {
    (void)parse_trace(m.text, "bad.trace");
    FAIL() << "accepted malformed trace " << m.name;
  } catch (const TraceError& e) {
    EXPECT_EQ(e.line(), m.line) << e.what();
    EXPECT_EQ(e.col(), m.col) << e.what();
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("bad.trace:" + std::to_string(m.line) + ":" + std::to_string(m.col) + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(m.message), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Trace, MalformedTrace, ::testing::ValuesIn(kMalformed),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TraceParse, CommentsBlankLinesNumbersAndRanges) {
  const Trace t = parse_trace(
      "# header\n\nstream s1   # the producer\nbuffer A 4K on s1\nbuffer B 0x100\n"
      "launch K on s1 reads A[0:1024], B writes A[1K:2K]\n",
      "ok.trace");
  ASSERT_EQ(t.statements.size(), 4u);
  EXPECT_EQ(std::get<ast::BufferDecl>(t.statements[1]).bytes, 4096u);
  EXPECT_EQ(std::get<ast::BufferDecl>(t.statements[2]).bytes, 256u);
  EXPECT_FALSE(std::get<ast::BufferDecl>(t.statements[2]).stream.has_value());
  const auto& k = std::get<ast::Launch>(t.statements[3]);
  EXPECT_EQ(k.kernel, "K");
  EXPECT_EQ(k.stream, "s1");
  EXPECT_EQ(k.text, "launch K on s1 reads A[0:1024], B writes A[1K:2K]");
  EXPECT_EQ(k.thread, "main");
  ASSERT_EQ(k.accesses.size(), 3u);  // A[0:1024], B, A[1K:2K], in the order written
  EXPECT_EQ(k.accesses[0].access, Access::Read);
  EXPECT_EQ(k.accesses[1].access, Access::Read);
  EXPECT_EQ(k.accesses[1].ref.buffer, "B");
  EXPECT_EQ(k.accesses[2].access, Access::Write);
  EXPECT_EQ(k.accesses[2].ref.lo, 1024u);
  EXPECT_EQ(*k.accesses[2].ref.hi, 2048u);
  EXPECT_EQ(k.line, 6);
}

/// The TraceError `text` raises, or a test failure.
TraceError refusal_of(const std::string& text) {
  try {
    (void)parse_trace(text, "t.trace");
  } catch (const TraceError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return TraceError(TraceError::Kind::NoStatements, "t.trace", "accepted");
}

TEST(TraceParse, StatementsAtALineAreFoundByIt) {
  const Trace t = parse_trace("stream s\n\n# a comment\nbuffer A 64 on s\nlaunch k on s writes A\nfree A on s\n", "t");
  for (const int line : {1, 4, 5, 6}) {
    const auto at = statements_at(t, line);
    ASSERT_EQ(at.size(), 1u) << line;
    EXPECT_EQ(source(at.front()).line, line);
  }
  for (const int line : {0, 2, 3, 7, -1}) EXPECT_TRUE(statements_at(t, line).empty()) << line;
  EXPECT_TRUE(std::holds_alternative<ast::Launch>(statements_at(t, 5).front()));
}

TEST(TraceParse, ARepeatedLineIsTheStatementItsFirstParseGaveAtItsOwnLine) {
  // The parser reuses what a line of the same text parsed to while nothing
  // since changed what the parser knows (LineMemo): a loop's lines are
  // parsed once. Each copy has its own line, the same text and accesses.
  const std::string loop = "buffer A 1K on s\nlaunch k on s reads B writes A[0:512]\nfree A on s\n";
  const Trace t = parse_trace("stream s\nbuffer B 64 on s\n" + loop + loop + loop + "free B on s\n", "t.trace");
  ASSERT_EQ(t.statements.size(), 12u);
  for (std::size_t i = 0; i < t.statements.size(); ++i)
    EXPECT_EQ(source(t.statements[i]).line, static_cast<int>(i) + 1) << "statement " << i;
  for (const std::size_t i : {6u, 9u}) {
    const auto& first = std::get<ast::Launch>(t.statements[3]);
    const auto& again = std::get<ast::Launch>(t.statements[i]);
    EXPECT_EQ(source(t.statements[i]).text, "launch k on s reads B writes A[0:512]");
    ASSERT_EQ(again.accesses.size(), first.accesses.size());
    for (std::size_t a = 0; a < first.accesses.size(); ++a) {
      EXPECT_EQ(again.accesses[a].access, first.accesses[a].access);
      EXPECT_EQ(again.accesses[a].ref.buffer, first.accesses[a].ref.buffer);
      EXPECT_EQ(again.accesses[a].ref.lo, first.accesses[a].ref.lo);
      EXPECT_EQ(again.accesses[a].ref.hi, first.accesses[a].ref.hi);
    }
  }
  // A message that quotes the buffer's declaration names its newest line.
  const TraceError quoted =
      refusal_of("stream s\nbuffer B 64 on s\n" + loop + loop + loop + "buffer A 1K on s\nsubfree A on s\n");
  EXPECT_EQ(quoted.line(), 13);
  EXPECT_NE(std::string(quoted.what()).find("(line 12)"), std::string::npos) << quoted.what();
  // Declared again smaller, the same launch line is parsed anew: past the end.
  const TraceError past_end = refusal_of("stream s\nbuffer B 64 on s\n" + loop + loop +
                                         "buffer A 256 on s\nlaunch k on s reads B writes A[0:512]\n");
  EXPECT_EQ(past_end.line(), 10);
  EXPECT_NE(std::string(past_end.what()).find("goes past the end"), std::string::npos) << past_end.what();
}

TEST(TraceParse, ARepeatedLineInsideACaptureIsParsedAgain) {
  // Inside a capture a statement's parse changes what is open (the streams
  // that joined the capture and joined back), with no new name: the same
  // launch on the branch after it joined back leaves it unjoined again, and
  // ending the capture is then CUDA's cudaErrorStreamCaptureUnjoined.
  const std::string text =
      "stream s\nstream side\nevent fork\nevent back\nbuffer X 64 on s\nbuffer Y 64 on s\n"
      "capture begin s\nlaunch scale on s writes X\nrecord fork on s\nwait fork on side\n"
      "launch bias on side writes Y\nrecord back on side\nwait back on s\n"
      "launch bias on side writes Y\ncapture end s graph G\n";
  const TraceError unjoined = refusal_of(text);
  EXPECT_EQ(unjoined.line(), 15) << unjoined.what();
  EXPECT_NE(std::string(unjoined.what()).find("Unjoined"), std::string::npos) << unjoined.what();
}

TEST(TextStore, EveryKeptTextStaysWhereItWasPutWhateverItsLength) {
  // Short texts share chunks; one longer than a quarter of a chunk, or than
  // a whole chunk, gets a block of its own while the chunk being filled
  // goes on being filled: each view must still read its own text.
  TextStore store;
  std::vector<std::pair<std::string, std::string_view>> kept;
  for (std::size_t i = 0; i < 3000; ++i) {
    const std::size_t bytes = i % 500 == 7 ? 70000 + i : i % 200 == 3 ? 20000 : 1 + i % 97;
    std::string text(bytes, static_cast<char>('a' + i % 26));
    text.front() = '<';
    text.back() = '>';
    kept.emplace_back(text, store.keep(text));
  }
  for (const auto& [text, view] : kept) ASSERT_EQ(view, text);
  EXPECT_TRUE(store.keep("").empty());
}

TEST(TextStore, KeptArraysAreAlignedAndKeepTheirItemsAmongTextsOfAnyLength) {
  // Texts of odd lengths between the arrays leave the next free byte at
  // any offset: each array must start aligned for its type and read back
  // what was put, in a shared chunk or (a large one) in a block of its own.
  TextStore store;
  std::vector<std::pair<std::vector<std::uint64_t>, std::span<const std::uint64_t>>> kept;
  for (std::size_t i = 0; i < 2000; ++i) {
    (void)store.keep(std::string(1 + i % 13, 'x'));
    std::vector<std::uint64_t> items(i % 700 == 5 ? 5000 : 1 + i % 9);
    for (std::size_t k = 0; k < items.size(); ++k) items[k] = i * 100000 + k;
    const std::span<const std::uint64_t> view = store.keep_array(std::span<const std::uint64_t>(items));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(view.data()) % alignof(std::uint64_t), 0u) << "array " << i;
    kept.emplace_back(std::move(items), view);
  }
  for (const auto& [items, view] : kept) ASSERT_TRUE(std::equal(items.begin(), items.end(), view.begin(), view.end()));
  EXPECT_TRUE(store.keep_array(std::span<const std::uint64_t>()).empty());
}

TEST(TraceParse, StatementTextsAndThreadsOutliveTheParserAndTheTraceCopiedFrom) {
  std::string text = "thread w\nstream s1\nbuffer A 64 on s1\n";
  for (int i = 0; i < 4000; ++i)
    text += fmt::format("@w launch K{} on s1 reads A[{}:{}]   # c\n", i, i % 32, i % 32 + 1);
  auto original = std::make_unique<Trace>(parse_trace(text, "t.trace"));
  const Trace copy = *original;
  original.reset();                          // the copy's texts are the store it shares
  std::fill(text.begin(), text.end(), '?');  // and none of them views the text parsed
  ASSERT_EQ(copy.statements.size(), 4003u);
  for (int i = 0; i < 4000; ++i) {
    const auto& k = std::get<ast::Launch>(copy.statements[static_cast<std::size_t>(i) + 3]);
    ASSERT_EQ(k.text, fmt::format("@w launch K{} on s1 reads A[{}:{}]", i, i % 32, i % 32 + 1));
    ASSERT_EQ(k.thread, "w");
    ASSERT_EQ(k.kernel, fmt::format("K{}", i));  // a view into the store too
  }
  EXPECT_EQ(source(copy.statements[1]).thread, "main");
}

TEST(TraceNames, OneNameIsInternedOnceAndNumberedInTheOrderOfFirstUse) {
  NameTable table;
  const Name a = table.intern("alpha");
  const Name b = table.intern("beta");
  const Name a_again = table.intern(std::string("alp") + "ha");
  EXPECT_EQ(a.id(), 0u);
  EXPECT_EQ(b.id(), 1u);
  EXPECT_EQ(a_again.id(), a.id());
  EXPECT_EQ(&a_again.str(), &a.str());  // the same entry, not a copy
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(a, a_again);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, "alpha");
  EXPECT_LT(a, b);
  EXPECT_EQ(fmt::format("[{:>6}]", b), "[  beta]");
  const Name none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.id(), Name::kNoId);
  EXPECT_EQ(none, "");
}

TEST(TraceNames, ACopiedTraceKeepsItsStatementsNamesAfterTheOriginalIsGone) {
  auto original = std::make_unique<Trace>(
      parse_trace("stream s\nevent e\nbuffer A 64 on s\nlaunch k on s writes A\nrecord e on s\n", "t.trace"));
  const Trace copy = *original;
  original.reset();
  const auto& launch = std::get<ast::Launch>(copy.statements[3]);
  EXPECT_EQ(launch.stream, "s");
  EXPECT_EQ(launch.accesses[0].ref.buffer, "A");
  const auto& record = std::get<ast::Record>(copy.statements[4]);
  EXPECT_EQ(record.event, "e");
  // One entry a name, however often the trace names it.
  EXPECT_EQ(record.stream.id(), launch.stream.id());
  EXPECT_EQ(&record.stream.str(), &std::get<ast::StreamDecl>(copy.statements[0]).name.str());
}

TEST(TraceParse, ACopiedStatementOwnsItsBoxedReferencesAndAMovedFromOneRefusesToBeRead) {
  const Trace t =
      parse_trace("stream s\nbuffer A 64 on s\nbuffer B 64 on s\ncopy c on s from A[0:8] to B[8:16]\n", "t.trace");
  const auto& original = std::get<ast::Copy>(t.statements[3]);
  ast::Copy copied = original;
  EXPECT_EQ(copied.from->buffer, "A");
  EXPECT_EQ(*copied.to->hi, 16u);
  copied.from->lo = 4;
  copied.to = BufferRef{original.from->buffer, 32, 40};
  EXPECT_EQ(original.from->lo, 0u);
  EXPECT_EQ(original.to->buffer, "B");
  EXPECT_EQ(*original.to->hi, 16u);
  copied = original;  // assigned back: equal again, still its own
  EXPECT_EQ(copied.to->buffer, "B");
  copied.to->lo = 9;
  EXPECT_EQ(original.to->lo, 8u);
  const ast::Copy moved = std::move(copied);
  EXPECT_EQ(moved.to->lo, 9u);
  EXPECT_THROW((void)copied.from->buffer, std::logic_error);  // NOLINT(bugprone-use-after-move): the point
  copied.from = BufferRef{original.to->buffer, 1, 2};  // a value assigned to a moved-from box gets a box of its own
  EXPECT_EQ(copied.from->lo, 1u);
  EXPECT_EQ(moved.from->lo, 0u);
}

TEST(TraceParse, AByteOrderMarkBeforeTheFirstLineIsNotAWord) {
  const Trace t = parse_trace("\xEF\xBB\xBFstream s1\nbuffer A 64 on s1\n", "bom.trace");
  ASSERT_EQ(t.statements.size(), 2u);
  EXPECT_EQ(std::get<ast::StreamDecl>(t.statements[0]).name, "s1");
  try {
    (void)parse_trace("\xEF\xBB\xBFstream 1s\n", "bom.trace");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.col(), 11) << e.what();  // columns count bytes, the mark's too
  }
}

std::set<sim::FindingKind> kinds(const Report& r) {
  std::set<sim::FindingKind> out;
  for (const auto& f : r.findings) out.insert(f.kind);
  return out;
}

Report explore_text(const std::string& text, Strategy strategy = Strategy::Dfs) {
  TraceCheckOptions o;
  o.strategy = strategy;
  o.max_schedules = 5000;
  return explore_trace(parse_trace(text, "t.trace"), o);
}

// An op no statement enqueued (one the model made before any statement set
// an origin) has no line to name it: a report names it by the simulator's
// description, and by nothing else.
TEST(TraceReportOps, AnOpOfNoStatementIsNamedByTheSimulatorsDescription) {
  sim::ReplayChooser chooser("-");
  auto model = std::make_unique<sim::DeviceModel>(chooser);
  const sim::StreamIndex s = model->create_stream("s");
  const sim::OpRef op = model->launch(s, {}, "K");
  Execution run;
  run.set_model(std::move(model));
  const ReportOp named = report_op(run, op);
  EXPECT_FALSE(named.origin);
  EXPECT_EQ(named.stream, "s");
  EXPECT_EQ(describe(named), sim::describe(run.model(), op));
  EXPECT_NE(describe(named).find("\"K\""), std::string::npos) << describe(named);
  EXPECT_EQ(line_ref(named), describe(named));
}

TEST(TraceInterpreter, MissingWaitIsADataRaceNamingBothLines) {
  const auto r = explore_text(
      "stream s1\nstream s2\nbuffer A 4096 on s1\nlaunch K1 on s1 writes A\nlaunch K2 on s2 reads A\nfree A on s1\n");
  EXPECT_TRUE(r.coverage.exhaustive);
  ASSERT_TRUE(kinds(r).contains(sim::FindingKind::DataRace));
  const auto& f = *std::find_if(r.findings.begin(), r.findings.end(),
                                [](const auto& f) { return f.kind == sim::FindingKind::DataRace; });
  EXPECT_EQ(f.first.origin->line, 4);
  EXPECT_EQ(f.second->origin->line, 5);
  EXPECT_EQ(op_name(f.first), "s1#1");  // the buffer's allocation is s1#0
  ASSERT_EQ(f.bytes.size(), 1u);
  ASSERT_TRUE(f.bytes[0].in_buffer);
  EXPECT_EQ(f.bytes[0].in_buffer->buffer, "A");
  EXPECT_EQ(f.bytes[0].in_buffer->lo, 0u);
  EXPECT_EQ(f.bytes[0].in_buffer->hi, 4096u);
  EXPECT_EQ(describe(f.bytes), "A[0:4096]");
  EXPECT_EQ(f.order, Ordering::MissingEdge);
  EXPECT_EQ(f.fix, Fix::RecordEventAndWait);
  const std::string fix = describe_fix(f);
  EXPECT_NE(fix.find("record an event on s1 after line 4"), std::string::npos) << fix;
  EXPECT_NE(fix.find("make s2 wait on it before line 5"), std::string::npos) << fix;
  EXPECT_EQ(r.verdict(), Verdict::Findings);
}

TEST(TraceInterpreter, FirstOpIsNamedByTheTracesStreamNameNotItsIndex) {
  // The simulator's stream indexes start with a hidden legacy stream; the
  // report (and the GPU replay's "held back" line) must use the trace's names.
  const auto r = explore_text(
      "stream h2d\nstream compute\nbuffer A 64 on h2d\nlaunch K2 on compute writes A\nlaunch K1 on h2d reads A\n"
      "free A on h2d\n");
  ASSERT_TRUE(kinds(r).contains(sim::FindingKind::DataRace)) << report_text(r);
  std::set<std::string> ops;
  for (const auto& f : r.findings) ops.insert(op_name(f.first));
  EXPECT_TRUE(ops.contains("compute#0") || ops.contains("h2d#1")) << report_text(r);
  for (const auto& op : ops) EXPECT_TRUE(op.starts_with("h2d#") || op.starts_with("compute#")) << op;
}

TEST(TraceInterpreter, EventWaitMakesItClean) {
  const auto r = explore_text(
      "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\nlaunch K1 on s1 writes A\nrecord e on s1\nwait e on s2\n"
      "launch K2 on s2 reads A\nrecord e on s2\nwait e on s1\nfree A on s1\n");
  EXPECT_TRUE(r.findings.empty()) << report_text(r);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(r.verdict(), Verdict::Clean);
}

TEST(TraceInterpreter, AKernelWithoutBuffersIsStillAnOpOnItsStream) {
  // `launch tick on legacy` touches nothing, but as an op on the legacy
  // stream it waits for s1's write and s2 waits for it (R8): clean. Without
  // it the read races.
  const std::string head = "stream s1\nstream s2\nbuffer A 256\nlaunch w on s1 writes A\n";
  const auto ordered = explore_text(head + "launch tick on legacy\nlaunch r on s2 reads A\n");
  EXPECT_EQ(ordered.verdict(), Verdict::Clean) << report_text(ordered);
  const auto racy = explore_text(head + "launch r on s2 reads A\n");
  EXPECT_EQ(racy.verdict(), Verdict::Findings) << report_text(racy);
  const Trace t = parse_trace(head + "launch tick on legacy\n", "t.trace");
  EXPECT_TRUE(std::get<ast::Launch>(t.statements.back()).accesses.empty());
}

TEST(TraceInterpreter, ResourceProgramThroughTheCoreAndItsMutant) {
  const std::string body =
      "stream s0\nstream s1\nallocate X 1024 on s0\nrun K1 on s1 writes X\nrun K2 on s0 reads X\ndeallocate X\nreap\n";
  EXPECT_TRUE(explore_text("resource\n" + body).findings.empty());
  // A sanitizer build has no M2 (tools/tool_protocols.h); examples 10 and 11 run M4 and M1 there.
  if (tools_have(MutantId::M2)) {
    EXPECT_TRUE(kinds(explore_text("resource mutant M2\n" + body)).contains(sim::FindingKind::DataRace));
  }
}

TEST(TraceInterpreter, AResourcePoolHandsFreedBlocksOutAgainInOrder) {
  // `resource pool`: B gets A's block back on s0 with no call (Q-same), C
  // on s1 after the pool's event (Q-steal), E behind destroyed s0's last
  // event (Q-dead); every schedule is clean and the cache is no leak.
  const std::string text =
      "resource pool\nstream s0\nstream s1\nallocate A 1000 on s0\nrun w on s0 writes A\ndeallocate A\n"
      "allocate B 700 on s0\nrun w2 on s0 writes B\ndeallocate B\nallocate C 1024 on s1\nrun r on s1 readwrites C\n"
      "deallocate C\nallocate D 300 on s0\nrun w3 on s0 writes D\ndeallocate D\ndestroy stream s0\n"
      "allocate E 300 on s1\nrun r2 on s1 readwrites E\ndeallocate E\nreap\n";
  const auto r = explore_text(text);
  EXPECT_EQ(r.verdict(), Verdict::Clean) << report_text(r);
  EXPECT_TRUE(r.notes.empty()) << report_text(r);
  sim::RandomChooser chooser(1);
  const Trace trace = parse_trace(text, "t.trace");  // outlives the run, which points into it
  const Execution run = run_on_simulator(trace, chooser, {}, {});
  EXPECT_EQ(run.buffers().at("B").ptr, run.buffers().at("A").ptr);
  EXPECT_EQ(run.buffers().at("C").ptr, run.buffers().at("A").ptr);
  EXPECT_EQ(run.buffers().at("E").ptr, run.buffers().at("D").ptr);
  EXPECT_NE(run.buffers().at("D").ptr, run.buffers().at("A").ptr);  // another bucket
}

TEST(TraceInterpreter, TheDebugTierReportsAStaleWriteAsAWriteAfterFree) {
  // `resource debug`: a kernel writes A through a stale pointer after
  // `deallocate A`. The tier poisoned A and holds it in quarantine, so the
  // simulator sees no use after free (the bytes are still the tier's); the
  // tier's release check sees the changed poison (G-stale) and says so in a
  // GuardFinding note on the deallocate's line, in every execution. Under
  // the plain core the same program is a definite use after free.
  const std::string head = "stream s0\nallocate A 4096 on s0\nrun fill on s0 writes A\n";
  const std::string stale = head + "deallocate A\nlaunch late on s0 writes A\nreap\n";
  const auto r = explore_text("resource debug\n" + stale);
  EXPECT_TRUE(r.coverage.exhaustive);
  EXPECT_TRUE(r.findings.empty()) << report_text(r);
  ASSERT_EQ(r.notes.size(), 1u) << report_text(r);
  EXPECT_EQ(r.notes[0].kind, NoteKind::GuardFinding);
  EXPECT_EQ(r.notes[0].line, 5);
  EXPECT_NE(r.notes[0].message.find("write after free: 4096 byte(s) of A (freed on line 5) changed in quarantine"),
            std::string::npos)
      << r.notes[0].message;
  EXPECT_EQ(r.verdict(), Verdict::Errors);
  EXPECT_TRUE(kinds(explore_text("resource\n" + stale)).contains(sim::FindingKind::UseAfterFree));
  // On another stream the stale write also races the tier's poison: both
  // the race and the note.
  const auto other = explore_text("resource debug\nstream s1\n" + head + "deallocate A\nlaunch late on s1 writes A\n");
  EXPECT_TRUE(kinds(other).contains(sim::FindingKind::DataRace)) << report_text(other);
  EXPECT_EQ(other.notes.size(), 1u) << report_text(other);
  // A replayed schedule that runs out inside the tier's end-of-run checks
  // is a ScheduleMismatch (exit 2), as for any trace, not an abort.
  EXPECT_THROW((void)replay_trace(parse_trace("resource debug\n" + stale, "t.trace"), "v2,observed:-", {}),
               sim::ScheduleMismatch);
  // The tier's own work is no finding: written before the free, the
  // program is clean and the quarantine goes back at the end (no leak).
  const auto clean =
      explore_text("resource debug\nstream s1\n" + head + "run late on s1 writes A\ndeallocate A\nreap\n");
  EXPECT_EQ(clean.verdict(), Verdict::Clean) << report_text(clean);
  EXPECT_TRUE(clean.findings.empty()) << report_text(clean);
  EXPECT_TRUE(clean.notes.empty()) << report_text(clean);
}

TEST(TraceInterpreter, RefusedResourceCallIsANote) {
  const auto r = explore_text("stream s0\nresource budget 100\nallocate X 1024 on s0\n");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].line, 3);
  EXPECT_EQ(r.notes[0].kind, NoteKind::Refused);
  EXPECT_NE(describe(r.notes[0]).find("line 3: allocate refused: out of budget"), std::string::npos)
      << describe(r.notes[0]);
  // A note fails the run, but it is no finding: verdict errors (issue 10 S6).
  EXPECT_EQ(r.verdict(), Verdict::Errors);
}

TEST(TraceInterpreter, UsesOfABufferThatGotNoMemoryAreSkippedWithANote) {
  // The allocate is refused over budget: the launch, run, prepare and
  // deallocate that name X are skipped (a real program would not run them),
  // each with a note; nothing throws and nothing is enqueued on X.
  const auto r = explore_text(
      "stream s0\nstream s1\nresource budget 100\nallocate X 1024 on s0\nlaunch K on s1 writes X\n"
      "run R on s0 reads X\nprepare X on s1 read\ndeallocate X\nallocate Y 64 on s0\nrun R2 on s1 writes Y\n"
      "deallocate Y\n");
  ASSERT_EQ(r.notes.size(), 5u) << report_text(r);
  EXPECT_NE(describe(r.notes[0]).find("line 4: allocate refused: out of budget"), std::string::npos)
      << describe(r.notes[0]);
  EXPECT_EQ(r.notes[0].kind, NoteKind::Refused);
  for (std::size_t i = 1; i < 5; ++i) EXPECT_EQ(r.notes[i].kind, NoteKind::Skipped) << r.notes[i].message;
  for (std::size_t i = 1; i < 5; ++i)
    EXPECT_NE(r.notes[i].message.find("skipped: X has no memory (line 4: allocate refused)"), std::string::npos)
        << r.notes[i].message;
  EXPECT_TRUE(r.findings.empty()) << report_text(r);  // Y, which did get memory, is used safely
}

TEST(TraceInterpreter, LeakIsAWarningOnly) {
  const auto r = explore_text("stream s1\nbuffer A 64 on s1\n");
  ASSERT_EQ(kinds(r), std::set<sim::FindingKind>{sim::FindingKind::Leak});
  EXPECT_EQ(r.findings[0].severity, Severity::Warning);
  EXPECT_EQ(r.verdict(), Verdict::Clean);
  EXPECT_NE(report_text(r).find("verdict: clean (1 warning)"), std::string::npos) << report_text(r);
}

TEST(TraceInterpreter, ReplayReproducesTheReportedSchedule) {
  const Trace t = parse_trace(
      "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\nlaunch K1 on s1 writes A\nrecord e on s1\nquery e\n"
      "launch K2 on s2 reads A\nfree A on s1\n",
      "q.trace");
  TraceCheckOptions o;
  o.strategy = Strategy::Random;
  o.max_schedules = 50;
  const auto r = explore_trace(t, o);
  ASSERT_FALSE(r.findings.empty());
  for (const auto& f : r.findings) {
    const auto again = replay_trace(t, f.schedule, o);
    EXPECT_EQ(again.coverage.explored, 1u);
    bool seen = false;
    for (const auto& g : again.findings)
      seen = seen || (g.kind == f.kind && g.first.ref == f.first.ref && g.second.has_value() == f.second.has_value() &&
                      (!g.second || g.second->ref == f.second->ref));
    EXPECT_TRUE(seen) << finding_label(f) << " not reproduced by schedule " << f.schedule.str();
  }
}

// The findings one run shows first hold one copy of its schedule: a copy
// each grew with the square of a racy loop (tools/shared_text.h SharedText).
TEST(TraceInterpreter, TheFindingsARunShowedFirstShareOneCopyOfItsSchedule) {
  std::string loop = "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\n";
  for (int i = 0; i < 50; ++i) loop += "launch produce on s1 writes A\nrecord e on s1\nlaunch consume on s2 reads A\n";
  loop += "sync device\nfree A on s1\n";
  TraceCheckOptions o;
  o.strategy = Strategy::Random;
  o.max_schedules = 5;
  const auto r = explore_trace(parse_trace(loop, "loop.trace"), o);
  ASSERT_EQ(r.findings.size(), 99u);
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.schedule.str(), r.findings.front().schedule.str());
    EXPECT_TRUE(f.schedule.same_copy(r.findings.front().schedule)) << finding_label(f);
  }
}

// A loop's findings name the same few statement texts at other lines: each
// text is held once (tools/shared_text.h TextInterner), for the ops and the
// near misses alike, as a streamed check's ops read back from the file.
TEST(TraceInterpreter, TheFindingsOfALoopShareOneCopyOfEachStatementText) {
  std::string loop = "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\n";
  for (int i = 0; i < 50; ++i) loop += "launch produce on s1 writes A\nrecord e on s1\nlaunch consume on s2 reads A\n";
  loop += "sync device\nfree A on s1\n";
  const tests::FreshTempDir dir("shared-texts");
  const std::string path = dir.write("loop.trace", loop).string();
  for (const Report& r : {check_trace(parse_trace(loop, "loop.trace"), {}), check_streamed(path, {})}) {
    ASSERT_EQ(r.findings.size(), 99u);
    std::map<std::string, SharedText> first_of;  // each text's first copy
    std::size_t near_misses = 0;
    for (const auto& f : r.findings) {
      std::vector<const OpOrigin*> lines{&*f.first.origin, &*f.second->origin};
      if (f.near_miss) {
        ++near_misses;
        lines.push_back(&f.near_miss->statement);
      }
      for (const OpOrigin* o : lines) {
        const auto [it, fresh] = first_of.try_emplace(o->text.str(), o->text);
        EXPECT_TRUE(it->second.same_copy(o->text)) << "line " << o->line << ": " << o->text.str();
      }
    }
    EXPECT_EQ(first_of.size(), near_misses > 0 ? 3u : 2u);
  }
}

// A finding's rarely set fields live out of line (tools/out_of_line.h):
// a copied finding must own copies of them, as std::optional's would.
TEST(TraceReport, AFindingsOutOfLineFieldsCopyAsOptionalsDo) {
  ReportFinding f;
  EXPECT_FALSE(f.near_miss);
  EXPECT_EQ(f.same_handle.value_or("none"), "none");
  NearMiss early;
  early.kind = NearMiss::Kind::RecordTooEarly;
  early.statement = {.line = 3, .text = "record e on s", .graph_launch = 0};
  f.near_miss = early;
  f.same_handle = std::optional<std::string>("shared");
  ReportFinding copy = f;
  f.near_miss->statement.line = 4;
  f.same_handle.reset();
  ASSERT_TRUE(copy.near_miss);
  EXPECT_EQ(copy.near_miss->statement.line, 3);
  EXPECT_EQ(copy.same_handle.value(), "shared");
  EXPECT_FALSE(f.same_handle.has_value());
  EXPECT_THROW((void)f.same_handle.value(), std::bad_optional_access);
  copy = f;
  EXPECT_EQ(copy.near_miss->statement.line, 4);
  EXPECT_FALSE(copy.same_handle);
  EXPECT_TRUE(copy.near_miss == f.near_miss);
}

// save_long_schedules writes each schedule once and names its file in every
// finding that holds it, shared copy or equal text.
TEST(TraceReport, EachLongScheduleGoesToOneFileEveryFindingOfItNames) {
  const tests::FreshTempDir dir("long-schedules");
  const std::string first(kLongestInlineSchedule + 1, '0'), second(kLongestInlineSchedule + 1, '1');
  Report r;
  r.file = "t.trace";
  const SharedText one(first), other(second);
  for (const SharedText& s : {one, one, other, SharedText(first), SharedText("v2:0")}) {
    r.findings.push_back(ReportFinding{});
    r.findings.back().schedule = s;
  }
  save_long_schedules(r, dir.path().string());
  const auto file = [&](std::size_t i) { return r.findings[i].schedule_file.value_or(""); };
  EXPECT_EQ(file(0), (dir.path() / "t.trace.1.schedule").string());
  EXPECT_EQ(file(1), file(0));
  EXPECT_EQ(file(2), (dir.path() / "t.trace.2.schedule").string());
  EXPECT_EQ(file(3), file(0));
  EXPECT_FALSE(r.findings[4].schedule_file) << "a short schedule stays inline";
  EXPECT_EQ(read_schedule_file(file(0)), first);
  EXPECT_EQ(read_schedule_file(file(2)), second);
}

TEST(TraceReport, SameSeedSameBytes) {
  const Trace t =
      parse_trace("stream s1\nstream s2\nbuffer A 64 on s1\nlaunch K on s2 reads A\nfree A on s1\n", "d.trace");
  TraceCheckOptions o;
  o.strategy = Strategy::Random;
  o.max_schedules = 30;
  o.seed = 7;
  EXPECT_EQ(report_text(explore_trace(t, o)), report_text(explore_trace(t, o)));
  EXPECT_EQ(report_json(explore_trace(t, o)), report_json(explore_trace(t, o)));
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A loop's bug is a finding an iteration, on the same statements: the text
// shows the first of each shape and counts the rest (`repeats:`); the JSON
// and the verdict keep every one.
TEST(TraceReport, FindingsOnTheSameStatementsFoldIntoTheFirst) {
  std::string loop = "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\n";
  for (int i = 0; i < 3; ++i) loop += "launch produce on s1 writes A\nrecord e on s1\nlaunch consume on s2 reads A\n";
  loop += "sync device\nfree A on s1\n";
  const Report r = check_trace(parse_trace(loop, "loop.trace"), {});
  ASSERT_EQ(r.findings.size(), 5u);  // produce -> consume in each iteration, consume -> the next produce
  const std::string text = report_text(r);
  EXPECT_EQ(count(text, "\ndata race "), 2u) << text;
  EXPECT_TRUE(contains(text,
                       "  repeats:  2 more like it, the same statements at other lines (--json lists each): line 8 "
                       "-> line 10, line 11 -> line 13\n"))
      << text;
  EXPECT_TRUE(contains(
      text, "  repeats:  1 more like it, the same statements at other lines (--json lists each): line 10 -> line 11\n"))
      << text;
  EXPECT_EQ(count(text, "\ncause "), 2u) << text;
  EXPECT_TRUE(contains(text, "\ncause 1 of 5: ")) << text;
  EXPECT_TRUE(contains(text,
                       "  repeats:  2 more causes like it, the same fix at the lines of their pairs (--json lists "
                       "each): line 8 -> line 10, line 11 -> line 13\n"))
      << text;
  EXPECT_TRUE(contains(text, "\nverdict: 5 findings\n")) << text;
  EXPECT_EQ(nlohmann::json::parse(report_json(r)).at("findings").size(), 5u);
}

// Only findings whose blocks say the same but for lines fold: another
// writer, another reader, or another event to wait on is a block of its own.
TEST(TraceReport, FindingsThatSayAnythingElseDoNotFold) {
  // Two iterations on a fresh buffer A each; the second's writer, reader
  // and event as given.
  const auto twice = [](const std::string& writer, const std::string& reader, const std::string& event) {
    const auto iteration = [](const std::string& w, const std::string& r, const std::string& e) {
      return "buffer A 4096 on s1\nlaunch " + w + " on s1 writes A\nrecord " + e + " on s1\nlaunch " + r +
             " on s2 reads A\nsync device\nfree A on s1\n";
    };
    return report_text(
        check_trace(parse_trace("stream s1\nstream s2\nevent e\nevent e2\n" + iteration("produce", "consume", "e") +
                                    iteration(writer, reader, event),
                                "t.trace"),
                    {}));
  };
  const std::string same = twice("produce", "consume", "e");
  EXPECT_EQ(count(same, "\ndata race "), 1u) << same;
  EXPECT_TRUE(contains(same, "repeats:  1 more like it")) << same;
  for (const std::string& text :
       {twice("produce2", "consume", "e"), twice("produce", "consume2", "e"), twice("produce", "consume", "e2")}) {
    EXPECT_EQ(count(text, "\ndata race "), 2u) << text;
    EXPECT_FALSE(contains(text, "repeats:")) << text;
  }
}

TEST(TraceReport, JsonHasTheDocumentedFields) {
  const auto r = explore_text("stream s1\nstream s2\nbuffer A 64 on s1\nlaunch K on s2 reads A\nfree A on s1\n");
  const std::string j = report_json(r);
  for (const char* key : {"\"tool\":\"streamcheck\"", "\"schema_version\":3", "\"file\":", "\"verdict\":\"findings\"",
                          "\"coverage\":{\"strategy\":\"dfs\"", "\"schedules\":", "\"exhaustive\":true",
                          "\"policy\":", "\"findings\":[", "\"kind\":\"use before ready\"", "\"severity\":\"error\"",
                          "\"first\":{", "\"second\":{", "\"line\":4", "\"order\":{\"kind\":\"missing edge\"",
                          "\"fix\":{\"kind\":", "\"schedule\":0", "\"schedule_texts\":[\"v2", "\"notes\":[]"})
    EXPECT_NE(j.find(key), std::string::npos) << key << " missing in " << j;
  const auto parsed = nlohmann::json::parse(j);  // throws on malformed JSON
  const auto& finding = parsed.at("findings").at(0);
  EXPECT_EQ(finding.at("second").at("line"), 4);
  EXPECT_EQ(finding.at("second").at("stream"), "s2");
  EXPECT_EQ(finding.at("second").at("statement"), "launch K on s2 reads A");
  EXPECT_EQ(finding.at("bytes"), "A[0:64]");
  EXPECT_EQ(finding.at("ranges").at(0).at("buffer"), "A");
  EXPECT_EQ(finding.at("ranges").at(0).at("offsets"), nlohmann::json::parse("[0, 64]"));
  EXPECT_EQ(parsed.at("notes"), nlohmann::json::array());
  EXPECT_EQ(parsed.at("coverage").at("to_finish"), nlohmann::json::array()) << "exhaustive: nothing left to explore";
  EXPECT_FALSE(parsed.contains("gpu"));
}

// Schema version 3: each schedule once in `schedule_texts`, findings naming
// it by index; equal schedules of two runs (two copies of one text) once
// too, and a finding with no schedule (a streamed check's) null.
TEST(TraceReport, JsonListsEachScheduleTextOnce) {
  auto r = explore_text("stream s1\nstream s2\nbuffer A 64 on s1\nlaunch K on s2 reads A\nfree A on s1\n");
  ASSERT_FALSE(r.findings.empty());
  const std::string text = r.findings.front().schedule.str();
  ASSERT_FALSE(text.empty());
  ReportFinding again = r.findings.front();
  again.schedule = SharedText(std::string(text));  // another run's copy of the same text
  ASSERT_FALSE(again.schedule.same_copy(r.findings.front().schedule));
  r.findings.push_back(again);
  ReportFinding other = r.findings.front();
  other.schedule = SharedText(text + "0");  // not the same schedule
  r.findings.push_back(other);
  ReportFinding streamed = r.findings.front();
  streamed.schedule = SharedText();
  r.findings.push_back(streamed);
  const auto j = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(j.at("schedule_texts"), nlohmann::json::parse(fmt::format("[\"{0}\", \"{0}0\"]", text)));
  const auto& findings = j.at("findings");
  ASSERT_EQ(findings.size(), r.findings.size());
  for (std::size_t i = 0; i + 3 < findings.size(); ++i) EXPECT_EQ(findings[i].at("schedule"), 0) << i;
  EXPECT_EQ(findings[findings.size() - 3].at("schedule"), 0);
  EXPECT_EQ(findings[findings.size() - 2].at("schedule"), 1);
  EXPECT_TRUE(findings.back().at("schedule").is_null());
}

// S6: a run whose only problems are notes (a refused resource call) has the
// verdict "errors", never "findings" with an empty findings array; the notes
// are typed objects.
TEST(TraceReport, NotesAloneAreTheVerdictErrorsWithTypedNotes) {
  const auto r = explore_text("resource budget 100\nstream s1\nallocate A 4096 on s1\n");
  ASSERT_TRUE(r.findings.empty()) << report_text(r);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.verdict(), Verdict::Errors);
  const auto parsed = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(parsed.at("verdict"), "errors");
  EXPECT_EQ(parsed.at("findings"), nlohmann::json::array());
  const auto& note = parsed.at("notes").at(0);
  EXPECT_EQ(note.at("line"), 3);
  EXPECT_EQ(note.at("kind"), "refused");
  EXPECT_EQ(note.at("severity"), "error");
  EXPECT_NE(note.at("message").get<std::string>().find("allocate refused"), std::string::npos) << note;
  const std::string text = report_text(r);
  EXPECT_NE(text.find("\nverdict: 1 error\n"), std::string::npos) << text;
}

TEST(TraceReport, GpuReplayIsItsOwnSectionOfTheReport) {
  Report r = explore_text("stream s1\nstream s2\nbuffer A 64 on s1\nlaunch K on s2 reads A\nfree A on s1\n");
  r.gpu = GpuReplay{"Test GPU", 10, 3, 42, 2, 7, {"line 2: allocate refused"}};
  const auto parsed = nlohmann::json::parse(report_json(r));
  EXPECT_EQ(parsed.at("gpu"), nlohmann::json::parse(R"({"runs":10,"runs_with_mismatches":3,"mismatching_words":42,)"
                                                    R"("runs_with_wrong_final_contents":2,"wrong_final_words":7})"));
  const auto in_order = nlohmann::ordered_json::parse(report_json(r));
  EXPECT_EQ(in_order.begin().key(), "tool");
  EXPECT_EQ((--in_order.end()).key(), "gpu");
  const std::string text = report_text(r);
  EXPECT_NE(text.find("GPU replay on Test GPU: 10 runs (held back: " + held_back(r) +
                      "), runs with mismatching reads: 3, mismatching words: 42; runs whose final contents are "
                      "not the last writes': 2, such words: 7\n  on the GPU: line 2: allocate refused\n"),
            std::string::npos)
      << text;
  r.findings.clear();
  // Issue 10 (S6): a verdict of findings has findings; corrupted reads with
  // none held back are errors of the run (exit 1 as before).
  EXPECT_EQ(r.verdict(), Verdict::Errors) << "corrupted reads on the GPU fail the run";
  r.gpu->mismatching_words = 0;
  EXPECT_EQ(r.verdict(), Verdict::Errors) << "a final write that did not land last fails the run too";
  r.gpu->wrong_final_words = 0;
  EXPECT_EQ(r.verdict(), Verdict::Clean);
}

TEST(TraceParse, EveryKeywordOfTheOneTableIsReserved) {
  // The parser and LoggingResource read the same table (model/trace_keywords.h).
  for (const auto& w : trace_language::kStatementWords) {
    EXPECT_THROW((void)parse_trace("stream " + std::string(w.word) + "\n", "k.trace"), TraceError) << w.word;
    EXPECT_EQ(trace_language::statement_keyword(w.word), w.keyword);
    EXPECT_EQ(trace_language::keyword(w.keyword), w.word);
  }
  for (auto w : trace_language::kInnerWords)
    EXPECT_THROW((void)parse_trace("stream " + std::string(w) + "\n", "k.trace"), TraceError) << w;
}

TEST(TraceParse, WordsThatOnlyLookLikeKeywordsAreNone) {
  // The keyword tables are found by a hash of a word's length and its first
  // and last bytes (model/trace_keywords.h): a word sharing those with a
  // keyword, a prefix, an extension or another case must still be none.
  for (std::string_view w : {"", "launc", "launchx", "Launch", "record_", "lauXch", "recXrd", "strXam", "devic",
                             "devXce", "evenT", "waiT", "s", "l", "e"}) {
    EXPECT_FALSE(trace_language::statement_keyword(w).has_value()) << '"' << w << '"';
    EXPECT_FALSE(trace_language::is_keyword(w)) << '"' << w << '"';
  }
  for (auto w : trace_language::kInnerWords) {
    EXPECT_TRUE(trace_language::is_keyword(w)) << w;
    // Only "device" is both (`sync device`, `device ...`).
    const bool starts_statement =
        std::any_of(trace_language::kStatementWords.begin(), trace_language::kStatementWords.end(),
                    [&](const auto& s) { return s.word == w; });
    EXPECT_EQ(trace_language::statement_keyword(w).has_value(), starts_statement) << w;
  }
  for (const auto& w : trace_language::kStatementWords) EXPECT_TRUE(trace_language::is_keyword(w.word)) << w.word;
}

TEST(TraceParse, OneStructPerStatementKind) {
  const Trace t = parse_trace(
      "thread h1\nstream s1\nevent e\nresource budget 4096\nallocate X 64 on s1\n@h1 prepare X on s1 write\n"
      "record e on s1\nwait e on s1\ncopy C on s1 from X[0:32] to X[32:64]\nsync device\n",
      "kinds.trace");
  ASSERT_EQ(t.statements.size(), 10u);
  EXPECT_EQ(std::get<ast::ThreadDecl>(t.statements[0]).name, "h1");
  EXPECT_EQ(std::get<ast::Allocate>(t.statements[4]).bytes, 64u);
  const auto& prepare = std::get<ast::Prepare>(t.statements[5]);
  EXPECT_EQ(prepare.thread, "h1");
  EXPECT_EQ(prepare.access, Access::Write);
  EXPECT_EQ(std::get<ast::Wait>(t.statements[7]).event, "e");
  const auto& copy = std::get<ast::Copy>(t.statements[8]);
  EXPECT_EQ(copy.from->lo, 0u);
  EXPECT_EQ(copy.to->lo, 32u);
  EXPECT_EQ(*copy.to->hi, 64u);
  EXPECT_EQ(source(t.statements[9]).line, 10);
  EXPECT_EQ(*t.budget, 4096u);
}

TEST(Execution, NotesAreTypedAndBuffersAndOriginsAreNamed) {
  const Trace t = parse_trace(
      "stream s1\nresource\nbuffer A 64 on s1\nallocate X 64 on s1\nlaunch K on s1 writes A, X\ndeallocate A\n"
      "free A on s1\nfree A on s1\ndeallocate X\n",
      "e.trace");
  sim::RandomChooser chooser(1);
  const Execution run = run_on_simulator(t, chooser, TraceRunOptions{t.policy, false});
  std::vector<NoteKind> kinds;
  for (const auto& n : run.notes()) kinds.push_back(n.kind);
  EXPECT_EQ(kinds, (std::vector<NoteKind>{NoteKind::NotAResourceBlock, NoteKind::NotLive}));
  EXPECT_EQ(run.notes()[0].line, 6);
  EXPECT_EQ(run.notes()[1].line, 8);
  ASSERT_TRUE(run.buffers().contains("A"));
  ASSERT_TRUE(run.buffers().contains("X"));
  EXPECT_EQ(run.buffers().at("X").bytes, 64u);
  const TraceBuffer& a = run.buffers().at("A");
  ASSERT_TRUE(a.allocation.has_value());
  EXPECT_EQ(run.model().allocation_range(sim::AllocationIndex{*a.allocation}).lo, a.ptr);
  // s1 is the model's stream 1 (0 is the hidden legacy stream): its ops are
  // the buffer's allocation (line 3), the resource's (line 4), the launch (5).
  const auto op_line = [&](std::uint32_t index) { return run.origin(sim::OpRef{sim::StreamIndex{1}, index})->line; };
  EXPECT_EQ(op_line(0), 3);
  EXPECT_EQ(op_line(1), 4);
  EXPECT_EQ(op_line(2), 5);
  EXPECT_EQ(run.origin(sim::OpRef{sim::StreamIndex{1}, 2})->text, "launch K on s1 writes A, X");
  const auto bytes = run.name_bytes(sim::ByteRange{a.ptr, a.ptr + 32});
  ASSERT_EQ(bytes.size(), 1u);
  ASSERT_TRUE(bytes[0].in_buffer.has_value());
  EXPECT_EQ(bytes[0].in_buffer->buffer, "A");
  EXPECT_EQ(bytes[0].in_buffer->lo, 0u);
  EXPECT_EQ(bytes[0].in_buffer->hi, 32u);
}

// A backend that cannot create events: what it cannot do must come back as
// typed notes, never as a silent skip or an exception.
class NoEventsBackend : public sim::SimBackend {
 public:
  using sim::SimBackend::SimBackend;
  Result<Event> create_event() { return ResourceError::driver("no events on this device"); }
};
static_assert(ReplayBackend<NoEventsBackend>);

TEST(TraceInterpreter, WhatTheBackendCannotDoIsATypedNote) {
  const Trace t = parse_trace(
      "stream s1\nstream s2\nevent e\nbuffer A 64 on s1\nrecord e on s1\nwait e on s2\nsync event e\n"
      "free A on s1\n",
      "n.trace");
  sim::RandomChooser chooser(1);
  sim::DeviceModel model(chooser, t.policy);
  NoEventsBackend backend(model);
  const Execution run = TraceInterpreter<NoEventsBackend>(t, backend).run();
  std::vector<std::pair<int, NoteKind>> notes;
  for (const auto& n : run.notes()) notes.emplace_back(n.line, n.kind);
  EXPECT_EQ(notes,
            (std::vector<std::pair<int, NoteKind>>{
                {3, NoteKind::BackendFailed}, {5, NoteKind::Skipped}, {6, NoteKind::Skipped}, {7, NoteKind::Skipped}}));
  EXPECT_EQ(run.notes()[1].message, "skipped: e was not created (line 3)");
  EXPECT_FALSE(run.has_model());  // the caller owns this model
}

// S2: an empty or comment-only input used to be "verdict: clean", exit 0.
TEST(TraceParse, AnInputWithoutAStatementIsAnErrorOfTheWholeFile) {
  for (const std::string& text : {std::string(), std::string("# nothing here\n\n  \t\r\n"), std::string("\n\n")}) {
    try {
      (void)parse_trace(text, "none.trace");
      FAIL() << "accepted an input without a statement: '" << text << "'";
    } catch (const TraceError& e) {
      EXPECT_EQ(e.kind(), TraceError::Kind::NoStatements);
      EXPECT_FALSE(e.has_position());
      EXPECT_EQ(std::string(e.what()),
                "none.trace: the trace has no statements (the file is empty or holds only comments and blank lines)");
    }
  }
}

// S2, S7: a directory or a missing file used to be `FILE:0:0: cannot read the file`, no reason.
TEST(TraceLoad, AFileThatCannotBeReadSaysTheOsReasonWithoutAPosition) {
  const tests::FreshTempDir temp("trace-load");
  const auto& dir = temp.path();
  const std::pair<std::string, int> cases[] = {{dir.string(), EISDIR}, {(dir / "missing.trace").string(), ENOENT}};
  for (const auto& [path, error] : cases) {
    try {
      (void)load_trace(path);
      FAIL() << "loaded " << path;
    } catch (const TraceError& e) {
      EXPECT_EQ(e.kind(), TraceError::Kind::Unreadable);
      EXPECT_FALSE(e.has_position());
      EXPECT_EQ(std::string(e.what()), path + ": cannot read the trace: " + std::strerror(error));
    }
  }
  try {
    (void)load_trace("/dev/null");
    FAIL() << "loaded /dev/null";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.kind(), TraceError::Kind::NoStatements) << e.what();
  }
}

TEST(TraceParse, ATraceOfDeclarationsOnlyHasNothingToCheck) {
  try {
    (void)parse_trace("stream s0\nevent e\nthread h\npolicy opportunistic = off\nresource budget 64\n", "decl.trace");
    FAIL() << "accepted a trace with nothing that runs";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.kind(), TraceError::Kind::NoStatements);
    EXPECT_FALSE(e.has_position());
    EXPECT_NE(std::string(e.what()).find("decl.trace: the trace has no statement that runs"), std::string::npos)
        << e.what();
  }
}

// S1: the largest size is accepted and runs (out of the simulated pool's
// memory, a finding, not a wrap); one byte more is an input error.
TEST(TraceParse, TheLargestBufferIsAcceptedAndRunsWithoutWrapping) {
  const std::string size = std::to_string(kMaxBufferBytes);
  const Trace t =
      parse_trace("stream s0\nresource\nbuffer A " + size + " on s0\nallocate X " + size + " on s0\n", "largest.trace");
  EXPECT_EQ(std::get<ast::BufferDecl>(t.statements[2]).bytes, kMaxBufferBytes);
  EXPECT_EQ(std::get<ast::Allocate>(t.statements[3]).bytes, kMaxBufferBytes);
  const Report r = check_trace(t, TraceCheckOptions{});
  ASSERT_EQ(r.notes.size(), 2u) << report_text(r);
  EXPECT_EQ(r.notes[0].kind, NoteKind::OutOfMemory);
  EXPECT_EQ(r.notes[1].kind, NoteKind::Refused);
  EXPECT_EQ(r.verdict(), Verdict::Errors);  // notes alone: errors, not findings (issue 10 S6)
  EXPECT_THROW((void)parse_trace("buffer A " + std::to_string(kMaxBufferBytes + 1) + "\n", "over.trace"), TraceError);
}

TEST(TraceParse, NumbersAreCheckedAtEveryStep) {
  EXPECT_EQ(parse_number("0x10K").value, 16u * 1024);
  EXPECT_EQ(parse_number("18446744073709551615").value, UINT64_MAX);
  EXPECT_EQ(parse_number("18446744073709551616").problem, NumberProblem::TooLarge);
  EXPECT_EQ(parse_number("0x10000000000000000").problem, NumberProblem::TooLarge);
  EXPECT_EQ(parse_number("17592186044416M").problem, NumberProblem::TooLarge);  // 2^44 M = 2^64
  EXPECT_EQ(parse_number("17592186044415M").value, 17592186044415ull * 1048576u);
  EXPECT_EQ(parse_number("256", 255).problem, NumberProblem::TooLarge);
  EXPECT_EQ(parse_number("9", 5).problem, NumberProblem::TooLarge);
  EXPECT_EQ(parse_number(std::string(40, '9'), 5).problem, NumberProblem::TooLarge);
  EXPECT_EQ(parse_number("5", 5).value, 5u);
  for (const char* bad : {"", "K", "0x", "-1", "+1", " 1", "1k", "0x1g", "1.5"})
    EXPECT_EQ(parse_number(bad).problem, NumberProblem::NotANumber) << bad;
}

// S7: a NUL used to cut the message, a 100 kB token was echoed whole.
TEST(TraceParse, MessagesEscapeNonPrintableBytesAndCutLongTokens) {
  try {
    (void)parse_trace(std::string("stream a\0b\x1b[31m\n", 16), "nul.trace");
    FAIL();
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\0'), std::string::npos);
    EXPECT_EQ(what.find('\x1b'), std::string::npos);
    EXPECT_NE(what.find("'a\\x00b\\x1B[31m' is not a valid name"), std::string::npos) << what;
  }
  const std::string token(100000, 'z');
  for (const std::string& text :
       {"lanuch" + token + "\n", "stream s0\nbuffer A 1" + token + " on s0\n", "stream " + token + "\n"}) {
    try {
      (void)parse_trace(text, "long.trace");
      FAIL();
    } catch (const TraceError& e) {
      const std::string what = e.what();
      EXPECT_LT(what.size(), 300u) << what.substr(0, 300);
      EXPECT_NE(what.find("... (100"), std::string::npos) << what;
    }
  }
}

TEST(ShownInput, EscapesWhatATerminalWouldNotShowAndCutsLongInput) {
  EXPECT_EQ(shown_input("A[0:8] #x"), "A[0:8] #x");
  EXPECT_EQ(shown_input(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(shown_input("\t\r\n\x7f\\"), "\\x09\\x0D\\x0A\\x7F\\\\");
  EXPECT_EQ(shown_input("caf\xc3\xa9 \xe2\x86\x92"), "caf\xc3\xa9 \xe2\x86\x92");  // well-formed UTF-8 stays
  EXPECT_EQ(shown_input("\xc3(\xff\xc0\xaf\xed\xa0\x80"), "\\xC3(\\xFF\\xC0\\xAF\\xED\\xA0\\x80");
  EXPECT_EQ(shown_input(std::string(kShownInputBytes, 'x')), std::string(kShownInputBytes, 'x'));
  EXPECT_EQ(shown_input(std::string(100000, 'x')), std::string(kShownInputBytes, 'x') + "... (100000 bytes)");
  // A UTF-8 sequence that would cross the cut is left out whole.
  const std::string crossing = std::string(kShownInputBytes - 1, 'x') + "\xc3\xa9";
  EXPECT_EQ(shown_input(crossing), std::string(kShownInputBytes - 1, 'x') + "... (65 bytes)");
}

TEST(TracePolicy, OverridesAreValidated) {
  EXPECT_THROW(apply_policy_overrides({}, {{"opportunistic", "maybe"}}), std::invalid_argument);
  EXPECT_THROW(apply_policy_overrides({}, {{"bogus", "on"}}), std::invalid_argument);
  EXPECT_FALSE(apply_policy_overrides({}, {{"opportunistic", "off"}}).opportunistic);
  EXPECT_EQ(apply_policy_overrides({}, {{"release_threshold", "4096"}}).release_threshold, 4096u);
  // The trace's number grammar: a negative number does not wrap to 2^64-1.
  EXPECT_THROW(apply_policy_overrides({}, {{"release_threshold", "-1"}}), std::invalid_argument);
  EXPECT_EQ(apply_policy_overrides({}, {{"release_threshold", "4K"}}).release_threshold, 4096u);
}

}  // namespace
}  // namespace streamcheck::tools
