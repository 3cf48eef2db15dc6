// A long run's memory (issue 16): a run whose ops execute as soon as they
// are enqueued (sim::DeviceProgress::AtOnce), and the retention pass that
// drops the records of executed ops nothing names (sim::DeviceModel::compact,
// backend_sim/retention.h). The pass must change nothing a run answers: the
// same findings with the same ops and bytes, the same notes, and every op a
// finding names still described, placed and given its accesses. Each
// program is run with a pass before every statement and without any, side
// by side, over the bundled examples and generated programs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backend_sim/explain.h"
#include "tests/test_scale.h"
#include "tests/tools/example_files.h"
#include "tests/tools/trace_generator.h"
#include "tools/trace.h"

namespace streamcheck::tools {
namespace {

TraceRunOptions at_once(const Trace& trace, bool retain_only_named,
                        sim::DeviceProgress progress = sim::DeviceProgress::AtOnce) {
  TraceRunOptions o;
  o.policy = trace.policy;
  o.progress = progress;
  o.retain_only_named = retain_only_named;
  o.compact_every = 1;  // a pass before every statement that follows an op
  return o;
}

/// Everything a report reads of a run's findings and notes, as text.
std::vector<std::string> answers(const Execution& run) {
  std::vector<std::string> out;
  const sim::DeviceModel& m = run.model();
  const auto op = [&](sim::OpRef r) {
    std::string s = fmt::format("{}#{} {} [{}]", m.stream_name(r.stream), r.index, sim::describe(m, r),
                                run.origin(r) ? fmt::format("{}: {}", run.origin(r)->line, run.origin(r)->text) : "-");
    for (const sim::OpAccess& a : m.accesses(r))
      s += fmt::format(" {}:{}-{}@{}", static_cast<int>(a.access), a.range.lo, a.range.hi, a.allocation.value);
    return s;
  };
  for (const sim::Finding& f : m.findings()) {
    std::string s = fmt::format("{} {} {}", sim::to_string(f.kind), f.definite, op(f.first));
    if (f.second) s += " / " + op(*f.second);
    for (const sim::ByteRange& b : f.bytes) s += fmt::format(" {}-{}", b.lo, b.hi);
    out.push_back(std::move(s));
  }
  for (const Note& n : run.notes())
    out.push_back(fmt::format("note {} {}: {}", n.line, static_cast<int>(n.kind), n.message));
  return out;
}

/// How many op records the run no longer holds in its streams' windows.
std::uint64_t dropped_ops(const Execution& run) {
  std::uint64_t n = 0;
  for (std::uint32_t s = 0; s < run.model().stream_count(); ++s)
    n += run.model().hb().dropped_count(sim::StreamIndex{s});
  return n;
}

/// Each choice the chooser took, as text.
std::vector<std::string> choices_of(const sim::Chooser& chooser) {
  std::vector<std::string> out;
  for (const sim::Choice& c : chooser.taken())
    out.push_back(fmt::format("{} {}/{}", static_cast<int>(c.kind), c.taken, c.options));
  return out;
}

void expect_same_answers(const Trace& trace, const std::string& what, std::uint64_t& dropped,
                         sim::DeviceProgress progress = sim::DeviceProgress::AtOnce) {
  sim::RandomChooser plain_chooser(7), retained_chooser(7);
  const Execution plain = run_on_simulator(trace, plain_chooser, at_once(trace, false, progress));
  const Execution retained = run_on_simulator(trace, retained_chooser, at_once(trace, true, progress));
  EXPECT_EQ(answers(plain), answers(retained)) << what;
  EXPECT_EQ(choices_of(plain_chooser), choices_of(retained_chooser)) << what;
  EXPECT_EQ(dropped_ops(plain), 0u) << what;
  dropped += dropped_ops(retained);
}

/// expect_same_answers over every example; the passes must have dropped
/// more than `least` ops, or the comparison checks no retention.
void expect_examples_keep_their_answers(sim::DeviceProgress progress, std::uint64_t least) {
  std::uint64_t dropped = 0;
  for (const std::string& file : example_files()) expect_same_answers(load_trace(file), file, dropped, progress);
  EXPECT_GT(dropped, least) << "the passes dropped (almost) nothing: the test checks no retention";
}

/// expect_same_answers over generated programs, at least one op dropped a
/// program on average.
void expect_generated_programs_keep_their_answers(sim::DeviceProgress progress) {
  std::uint64_t dropped = 0;
  const std::uint64_t programs = tests::sanitizer_scale() ? 60 : 300;
  for (std::uint64_t seed = 1; seed <= programs; ++seed) {
    const std::string text = generate_trace_program(seed);
    expect_same_answers(parse_trace(text, "generated.trace"), text, dropped, progress);
  }
  EXPECT_GT(dropped, programs) << "the passes dropped (almost) nothing: the test checks no retention";
}

TEST(Retention, DropsNothingAnExampleNeeds) { expect_examples_keep_their_answers(sim::DeviceProgress::AtOnce, 100); }

TEST(Retention, DropsNothingAGeneratedProgramNeeds) {
  expect_generated_programs_keep_their_answers(sim::DeviceProgress::AtOnce);
}

// `check` runs a trace's first execution streamed with the device
// progressing only where the host observes it once it makes a choice
// (clean_by_streaming): ops then wait, enqueued but not executed, across
// passes, and what the pass keeps must still give every pool reuse the
// options the whole run gives it. Fewer ops are dropped than at once: an op
// the host never observes is never executed.
TEST(Retention, DropsNothingAnExampleNeedsWhenTheDeviceRunsOnObservation) {
  expect_examples_keep_their_answers(sim::DeviceProgress::OnObservation, 50);
}

TEST(Retention, DropsNothingAGeneratedProgramNeedsWhenTheDeviceRunsOnObservation) {
  expect_generated_programs_keep_their_answers(sim::DeviceProgress::OnObservation);
}

/// `trace` run at once twice under one seed: with a retention pass once
/// 256 ops came since the last, and with none. The choosers outlive the
/// runs, whose models refer to them.
struct SideBySide {
  explicit SideBySide(const Trace& trace)
      : plain(run_on_simulator(trace, plain_chooser, every_256_ops(at_once(trace, false)))),
        retained(run_on_simulator(trace, retained_chooser, every_256_ops(at_once(trace, true)))) {}
  static TraceRunOptions every_256_ops(TraceRunOptions o) {
    o.compact_every = 256;
    return o;
  }
  sim::RandomChooser plain_chooser{1}, retained_chooser{1};
  Execution plain, retained;
};

TEST(Retention, KeepsOnlyWhatIsNamed) {
  // A long race-free loop: each kernel overwrites the last one's bytes, so
  // the shadow names one write at a time, and the run's records stay few.
  std::string text = "stream s\nbuffer A 256 on s\n";
  for (int i = 0; i < 5000; ++i) text += "launch k on s writes A\n";
  text += "free A on s\n";
  const Trace trace = parse_trace(text, "loop.trace");
  sim::RandomChooser chooser(1);
  TraceRunOptions o = at_once(trace, true);
  o.compact_every = 256;
  const Execution run = run_on_simulator(trace, chooser, o);
  EXPECT_TRUE(run.model().findings().empty());
  const sim::StreamIndex s{1};  // after the legacy stream
  ASSERT_EQ(run.model().stream_name(s), "s");
  EXPECT_EQ(run.model().op_count(s), 5002u);
  EXPECT_GE(run.model().hb().dropped_count(s), 4000u);
  EXPECT_LE(run.model().hb().kept_op_count(), 4u);                               // the alloc, the last write, the free
  EXPECT_THROW((void)run.model().hb().op(sim::OpRef{s, 10}), std::logic_error);  // dropped: an error, no answer
  EXPECT_THROW((void)run.model().log(), std::logic_error);                       // no log kept either
}

TEST(Retention, KeepsOnlyTheAllocationsSomethingNames) {
  // The caching allocator's shape: a block carved from a segment, written
  // and given back on every iteration, four names reused. Old's bytes are
  // handed out again at once, so only its name still names it when a
  // kernel on another stream reads it at the end: a use after free that
  // the run must still find (its record kept for the name's sake).
  std::string text =
      "stream s\nstream t\nbuffer Seg 1024 on s\nsuballoc Old 256 from Seg[0:256] on s\n"
      "launch k on s writes Old\nsubfree Old on s\n";
  for (int i = 0; i < 3000; ++i)
    text += fmt::format("suballoc X{0} 256 from Seg[{1}:{2}] on s\nlaunch k on s writes X{0}\nsubfree X{0} on s\n",
                        i % 4, i % 4 * 256, i % 4 * 256 + 256);
  text += "launch late on t reads Old\nfree Seg on s\n";
  const Trace trace = parse_trace(text, "loop.trace");
  const SideBySide runs(trace);
  const Execution &plain = runs.plain, &run = runs.retained;
  EXPECT_EQ(answers(plain), answers(run));
  const auto& findings = run.model().findings();
  EXPECT_TRUE(std::any_of(findings.begin(), findings.end(), [&](const sim::Finding& f) {
    return f.kind == sim::FindingKind::UseAfterFree && f.second && run.model().stream_name(f.second->stream) == "t";
  })) << fmt::format("{}", fmt::join(answers(run), "\n"));
  const sim::Pool& pool = run.model().pool();
  EXPECT_EQ(pool.count(), 3002u);
  EXPECT_GE(pool.dropped_count(), 2900u);
  // Seg, Old, the four names' blocks, what the shadow names, and those
  // made since the last pass (a pass waits for 256 ops: 86 blocks at most).
  EXPECT_LE(pool.count() - pool.dropped_count(), 100u);
  EXPECT_EQ(plain.model().pool().dropped_count(), 0u);
  EXPECT_THROW((void)pool.allocation(sim::AllocationIndex{100}), std::logic_error);  // dropped: an error
  EXPECT_THROW((void)pool.allocations(), std::logic_error);
}

TEST(Retention, KeepsOnlyTheFreeOfAFreedBlockItsNameStillNames) {
  // A fresh name for every block: each freed name still names its block (a
  // later use is a use after free, checked against the block's free), so
  // the block's record and its free stay. Its alloc op is asked about by
  // nothing once the block is freed (a leak report names only live ones):
  // it goes with the other executed ops.
  std::string text = "stream s\nstream t\n";
  for (int i = 0; i < 3000; ++i)
    text += fmt::format("buffer b{0} 256 on s\nlaunch k on s writes b{0}\nfree b{0} on s\n", i);
  text += "launch late on t reads b0\n";
  const Trace trace = parse_trace(text, "fresh_names.trace");
  const SideBySide runs(trace);
  const Execution &plain = runs.plain, &run = runs.retained;
  EXPECT_EQ(answers(plain), answers(run));
  EXPECT_FALSE(run.model().findings().empty());  // b0's late reader
  const sim::StreamIndex s{1};                   // after the legacy stream
  ASSERT_EQ(run.model().stream_name(s), "s");
  std::size_t kept_allocs = 0, kept_frees = 0;
  for (std::uint32_t i = 0; i < run.model().hb().dropped_count(s); ++i) {
    try {
      const sim::OpKind kind = run.model().hb().op(sim::OpRef{s, i}).kind;
      kept_allocs += kind == sim::OpKind::Alloc;
      kept_frees += kind == sim::OpKind::Free;
    } catch (const std::logic_error&) {  // dropped
    }
  }
  EXPECT_GE(run.model().hb().dropped_count(s), 3000u);
  EXPECT_GE(kept_frees, 1000u);  // the frees the names still name
  EXPECT_LE(kept_allocs, 10u);   // those the shadow still names (1,670 when the pool named them all)
}

TEST(Retention, DropsTheLabelsOfTheOpsItDrops) {
  // A kernel name of its own for every launch (a fresh label an op), over
  // 64 buffers in turn: the labels go with the records of the ops, those in
  // the streams' windows and those a pass kept for the shadow's sake (each
  // buffer's last write) and a later pass let go.
  constexpr int kBuffers = 64;
  std::string text = "stream s\n";
  for (int b = 0; b < kBuffers; ++b) text += fmt::format("buffer A{} 256 on s\n", b);
  for (int i = 0; i < 5000; ++i) text += fmt::format("launch k{} on s writes A{}\n", i, i % kBuffers);
  for (int b = 0; b < kBuffers; ++b) text += fmt::format("free A{} on s\n", b);
  const Trace trace = parse_trace(text, "fresh_labels.trace");
  const SideBySide runs(trace);
  const Execution& run = runs.retained;
  EXPECT_EQ(answers(runs.plain), answers(run));
  EXPECT_TRUE(run.model().findings().empty());
  const sim::StreamIndex s{1};  // after the legacy stream
  EXPECT_GE(run.model().hb().dropped_count(s), 4000u);
  EXPECT_GE(run.model().hb().kept_op_count(), 50u);  // the buffers' last writes
  // The ops since the last pass and the kept last writes: 392 here.
  EXPECT_LE(run.model().hb().label_count(), 600u) << "labels of dropped ops kept";
  EXPECT_EQ(run.model().hb().label(sim::OpRef{s, kBuffers + 4999}), "k4999");  // still held
}

TEST(Retention, KeepsTheParentsOfAKeptBlock) {
  // C's name keeps C; C's parent, the first A, is named by nothing else
  // once A's name and bytes belong to a second A: its record must stay for
  // C's sake (a use of C walks its parents, R10a).
  std::string text =
      "stream s\nstream t\nbuffer Seg 1024 on s\nsuballoc A 512 from Seg[0:512] on s\n"
      "suballoc C 256 from A[0:256] on s\nlaunch k on s writes C\nsubfree C on s\nsubfree A on s\n"
      "suballoc A 512 from Seg[0:512] on s\n";
  for (int i = 0; i < 100; ++i) text += "launch k on s writes A\n";
  text += "launch late on t reads C\nfree Seg on s\n";
  const Trace trace = parse_trace(text, "parents.trace");
  sim::RandomChooser plain_chooser(1), retained_chooser(1);
  const Execution plain = run_on_simulator(trace, plain_chooser, at_once(trace, false));
  const Execution run = run_on_simulator(trace, retained_chooser, at_once(trace, true));
  EXPECT_EQ(answers(plain), answers(run));
  EXPECT_FALSE(run.model().findings().empty());
  EXPECT_EQ(run.model().pool().dropped_count(), 0u);  // nothing to drop: each one is named
}

TEST(AtOnce, EveryOpHasExecutedWhenTheNextStatementRuns) {
  const Trace trace = parse_trace(
      "stream a\nstream b\nevent e\nbuffer A 256\nlaunch w on a writes A\nrecord e on a\n"
      "query e\nwait e on b\nlaunch r on b reads A\nsync device\nfree A\n",
      "t.trace");
  sim::RandomChooser chooser(1);
  const Execution run = run_on_simulator(trace, chooser, at_once(trace, false));
  const sim::DeviceModel& m = run.model();
  for (std::uint32_t s = 0; s < m.stream_count(); ++s)
    for (std::uint32_t i = 0; i < m.op_count(sim::StreamIndex{s}); ++i)
      EXPECT_TRUE(m.completed(sim::OpRef{sim::StreamIndex{s}, i}));
  // The query saw its capture done: no choice was asked for it.
  EXPECT_TRUE(chooser.taken().empty());
  EXPECT_TRUE(m.findings().empty());
  EXPECT_TRUE(m.value_mismatches().empty());
}

}  // namespace
}  // namespace streamcheck::tools
