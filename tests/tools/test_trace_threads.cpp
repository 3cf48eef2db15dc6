// Host threads in traces (R6a-R6d, docs/TRACES.md "Host threads"): which
// thread runs its next statement is a choice, `spawn`/`join`, `lock`/
// `unlock` and `send`/`receive` order host threads, and sleep sets explore
// one order of the statements that touch no common object.
//
// Litmus counts are executions of `explore --strategy dfs` (GenMC style:
// each count is reasoned in a comment). Two statements of different threads
// conflict when they touch a common stream, event, buffer (unless both
// read it), mutex or channel, or when one observes the device or runs the
// resource; an execution is one order of the conflicting pairs (plus one
// outcome of every query, pool reuse and fault).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "backend_sim/explorer.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

Report explore_text(const std::string& text, Strategy strategy = Strategy::Dfs) {
  TraceCheckOptions o;
  o.strategy = strategy;
  o.max_schedules = 200000;
  return explore_trace(parse_trace(text, "t.trace"), o);
}

/// The number of executions of `text`, which dfs must exhaust.
std::uint64_t executions(const std::string& text) {
  const Report r = explore_text(text);
  EXPECT_TRUE(r.coverage.exhaustive) << text;
  return r.coverage.explored;
}

std::size_t races(const Report& r) {
  return static_cast<std::size_t>(std::count_if(r.findings.begin(), r.findings.end(), [](const ReportFinding& f) {
    return f.kind == sim::FindingKind::DataRace;
  }));
}

const std::string kHeader = "stream s1\nstream s2\nevent E\nbuffer A 256\nbuffer B 256\n";

TEST(TraceThreads, IndependentThreadsHaveOneExecution) {
  // Main and t each launch twice on their own stream and buffer: no pair of
  // statements touches a common object, so the 6 interleavings of the four
  // launches are one execution (the schedule enumeration runs them all).
  const std::string t = kHeader +
                        "thread t\nlaunch k1 on s1 writes A\n@t launch k2 on s2 writes B\n"
                        "launch k3 on s1 writes A\n@t launch k4 on s2 writes B\n";
  EXPECT_EQ(executions(t), 1u);
  EXPECT_GE(explore_text(t, Strategy::DfsSchedules).coverage.explored, 6u);
  EXPECT_EQ(explore_text(t).verdict(), Verdict::Clean);  // the plain buffers' leak warnings only
}

TEST(TraceThreads, TwoCriticalSectionsHaveTwoExecutions) {
  // lock, launch, unlock on each thread: the lock of one thread and the
  // other's lock and unlock conflict (mutex M), the launches do not; the
  // two orders of the critical sections are the two executions. The mutex
  // orders the host only: the kernels race in both.
  const std::string t = kHeader +
                        "thread t\nmutex M\nlock M\nlaunch k1 on s1 writes A\nunlock M\n"
                        "@t lock M\n@t launch k2 on s2 writes A\n@t unlock M\n";
  const Report r = explore_text(t);
  EXPECT_EQ(r.coverage.explored, 2u);
  ASSERT_EQ(races(r), 2u);  // k1 before k2, and k2 before k1: one execution each
  for (const auto& f : r.findings)
    if (f.kind == sim::FindingKind::DataRace) {
      EXPECT_EQ(f.schedules, 1u);
    }
}

TEST(TraceThreads, CriticalSectionsOnUnrelatedWorkStillHaveTwoExecutions) {
  // The same with each thread on its own stream and buffer: nothing but
  // the mutex relates the two critical sections, and two locks of one mutex
  // never commute (each disables the other), so both orders are explored.
  const std::string t = kHeader +
                        "thread t\nmutex M\nlock M\nlaunch k1 on s1 writes A\nunlock M\n"
                        "@t lock M\n@t launch k2 on s2 writes B\n@t unlock M\n";
  EXPECT_EQ(executions(t), 2u);
}

TEST(TraceThreads, LegacyWorkDoesNotCommuteWithABlockingStreamsWork) {
  // R8: main launches on s1, t on legacy. With s1 blocking, whichever is
  // enqueued first, the other is ordered after it: neither order races,
  // but the two orders differ, so they are 2 executions even on unrelated
  // buffers. With s1 non-blocking the launches are unordered: on one buffer
  // they race in both orders (2 executions), on two buffers they commute (1).
  const auto program = [](const char* kind, const char* legacy_buffer) {
    return fmt::format(
        "stream s1{}\nbuffer A 256\nbuffer B 256\nthread t\nlaunch k1 on s1 writes A\n"
        "@t launch k2 on legacy reads {}\n",
        kind, legacy_buffer);
  };
  const Report blocking = explore_text(program("", "A"));
  EXPECT_EQ(blocking.coverage.explored, 2u);
  EXPECT_EQ(races(blocking), 0u);
  EXPECT_EQ(executions(program("", "B")), 2u);
  const Report nonblocking = explore_text(program(" nonblocking", "A"));
  EXPECT_EQ(nonblocking.coverage.explored, 2u);
  EXPECT_EQ(races(nonblocking), 2u);
  EXPECT_EQ(executions(program(" nonblocking", "B")), 1u);
}

TEST(TraceThreads, EachThreadHasItsOwnPerThreadStream) {
  // R8: `per_thread` names the stream of the thread that runs the
  // statement: main's and t's are two blocking streams, so their writes
  // race (the statements touch a common buffer: 2 executions, a race in
  // each); both are ordered with legacy work between them.
  const std::string racy =
      "buffer A 256\nthread t\nlaunch w1 on per_thread writes A\n@t launch w2 on per_thread writes A\n";
  const Report r = explore_text(racy);
  EXPECT_EQ(r.coverage.explored, 2u);
  EXPECT_EQ(races(r), 2u);
  std::set<std::string> streams;
  for (const auto& f : r.findings)
    if (f.kind == sim::FindingKind::DataRace) streams.insert({f.first.stream, f.second->stream});
  EXPECT_EQ(streams, (std::set<std::string>{"per_thread@main", "per_thread@t"}));
  const Report ordered = explore_text(
      "buffer A 256\nthread t\nchannel C\nlaunch w1 on per_thread writes A\nlaunch tick on legacy\nsend C\n"
      "@t receive C\n@t launch w2 on per_thread writes A\n");
  EXPECT_EQ(races(ordered), 0u);
}

TEST(TraceThreads, AChannelOrdersTheWaitAfterTheRecord) {
  // R6d: main writes A on s1, records E and sends; t receives, makes s2 wait
  // on E and reads A. The receive is ordered after the send, so the wait
  // sees the record: clean, and the receive waits for the send, so the
  // host order is fixed up to commuting statements: one execution.
  const std::string with = kHeader +
                           "thread t\nchannel C\nlaunch w on s1 writes A\nrecord E on s1\nsend C\n"
                           "@t receive C\n@t wait E on s2\n@t launch r on s2 reads A\n";
  const Report r = explore_text(with);
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_EQ(r.verdict(), Verdict::Clean);
  // Without the hand-off the wait and the record conflict (event E) and so
  // do the write and the read (buffer A): record before wait (then the
  // write precedes the read: clean), or wait before record with the write
  // before or after the read (two racing executions). Three executions.
  const std::string without = kHeader +
                              "thread t\nlaunch w on s1 writes A\nrecord E on s1\n"
                              "@t wait E on s2\n@t launch r on s2 reads A\n";
  const Report w = explore_text(without);
  EXPECT_EQ(w.coverage.explored, 3u);
  ASSERT_EQ(races(w), 2u);
  for (const auto& f : w.findings)
    if (f.kind == sim::FindingKind::DataRace) {
      EXPECT_EQ(f.schedules, 1u);
    }
}

TEST(TraceThreads, JoinOrdersEverythingTheThreadDid) {
  // R6b: t reads A on s2 and records E; main joins t, makes s1 wait on E
  // and frees A on s1. The join orders the record before the wait: clean,
  // one execution. Without the join: the wait before the record is a use
  // after free.
  const std::string body = "@t launch r on s2 reads A\n@t record E on s2\n";
  const std::string header = "stream s1\nstream s2\nevent E\nbuffer A 256 on s1\nsync device\nthread t\n";
  const Report joined = explore_text(header + body + "join t\nwait E on s1\nfree A on s1\n");
  EXPECT_EQ(joined.coverage.explored, 1u);
  EXPECT_TRUE(joined.findings.empty());
  const Report unjoined = explore_text(header + body + "wait E on s1\nfree A on s1\n");
  EXPECT_GT(unjoined.coverage.explored, 1u);
  EXPECT_TRUE(std::any_of(unjoined.findings.begin(), unjoined.findings.end(),
                          [](const ReportFinding& f) { return f.kind == sim::FindingKind::UseAfterFree; }));
}

TEST(TraceThreads, SpawnOrdersTheChildAfterTheSpawnersPast) {
  // R6a: the child starts at `spawn`, after main's record: its wait sees
  // the record (clean, one execution). Started at its declaration instead
  // (no `spawn`), the child may wait before the record: a race.
  const std::string body = "launch w on s1 writes A\nrecord E on s1\n";
  const std::string child = "@t wait E on s2\n@t launch r on s2 reads A\n";
  const Report spawned = explore_text(kHeader + "thread t\n" + body + "spawn t\n" + child);
  EXPECT_EQ(spawned.coverage.explored, 1u);
  EXPECT_EQ(spawned.verdict(), Verdict::Clean);
  const Report declared = explore_text(kHeader + "thread t\n" + body + child);
  EXPECT_EQ(races(declared), 2u);
}

TEST(TraceThreads, ALockOrderInversionDeadlocksInOneExecution) {
  // main locks M then N, t locks N then M. Three executions: main takes
  // both first, t takes both first, or each takes its first mutex and both
  // wait (a Deadlock note naming who waits for what).
  const std::string t =
      "stream s1\nthread t\nmutex M\nmutex N\nlock M\nlock N\nunlock N\nunlock M\n"
      "@t lock N\n@t lock M\n@t unlock M\n@t unlock N\n";
  const Report r = explore_text(t);
  EXPECT_EQ(r.coverage.explored, 3u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::Deadlock);
  EXPECT_NE(r.notes[0].message.find("main waits at line 6 (lock N, held by t since line 9)"), std::string::npos)
      << r.notes[0].message;
  EXPECT_NE(r.notes[0].message.find("t waits at line 10 (lock M, held by main since line 5)"), std::string::npos)
      << r.notes[0].message;
  EXPECT_EQ(r.verdict(), Verdict::Errors);
}

TEST(TraceThreads, AStatementWaitsForTheBufferAnotherThreadMakes) {
  // t makes A; main's launch names A, so it waits until A exists whichever
  // thread the schedule picks first: one execution, no Skipped note.
  const Report r = explore_text("stream s1\nthread t\n@t buffer A 256 on s1\nlaunch r on s1 reads A\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(r.verdict(), Verdict::Clean);
}

TEST(TraceThreads, ReceiveWithNoSendIsADeadlockNote) {
  const Report r = explore_text("stream s1\nchannel C\nthread t\n@t receive C\nsync stream s1\n");
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].message.find("t waits at line 4 (receive C: nothing left to receive)"), std::string::npos)
      << r.notes[0].message;
}

TEST(TraceThreads, TheFirstExecutionRunsTheFileOrder) {
  // The first run of dfs takes every choice's first option, which for host
  // threads is the thread whose next statement comes first in the file.
  // This trace is clean in file order only.
  const std::string t = kHeader +
                        "thread t\nlaunch w on s1 writes A\nrecord E on s1\n"
                        "@t wait E on s2\n@t launch r on s2 reads A\n";
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  o.max_schedules = 1;
  const Report first = explore_trace(parse_trace(t, "t.trace"), o);
  EXPECT_EQ(first.coverage.explored, 1u);
  EXPECT_EQ(first.verdict(), Verdict::Clean);
  EXPECT_EQ(races(explore_text(t)), 2u);
}

// --- sleep sets keep the verdict

/// A random program of main and two threads over three streams (blocking
/// s1, non-blocking s2 and the legacy stream: R8), one event, two buffers,
/// a mutex and a channel (sends balanced by receives).
std::string generated_threads_program(std::uint32_t seed) {
  std::mt19937 rng(seed);
  const auto pick = [&](std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); };
  std::string t = "stream s1\nstream s2 nonblocking\nevent E\nbuffer A 256\nbuffer B 256\nmutex M\nchannel C\n";
  t += "thread t1\nthread t2\n";
  const std::string threads[] = {"", "@t1 ", "@t2 "};
  int sends = 0;
  for (int i = 0; i < 3 + static_cast<int>(pick(4)); ++i) {
    const std::string& th = threads[pick(3)];
    const std::string s = std::array<const char*, 3>{"s1", "s2", "legacy"}[pick(3)];
    const std::string b = pick(2) ? "A" : "B";
    switch (pick(6)) {
      case 0:
        t += th + "launch k" + std::to_string(i) + " on " + s + (pick(2) ? " reads " : " writes ") + b + "\n";
        break;
      case 1:
        t += th + "record E on " + s + "\n";
        break;
      case 2:
        t += th + "wait E on " + s + "\n";
        break;
      case 3:
        t += th + "lock M\n" + th + "launch c" + std::to_string(i) + " on " + s + " writes " + b + "\n" + th +
             "unlock M\n";
        break;
      case 4:
        t += th + "send C\n";
        ++sends;
        break;
      case 5:
        t += th + "query E\n";
        break;
    }
  }
  for (; sends > 0; --sends) t += threads[pick(3)] + "receive C\n";
  return t;
}

using Outcome = std::tuple<sim::FindingKind, bool, sim::OpRef, std::optional<sim::OpRef>>;

struct Seen {
  std::set<Outcome> findings;
  std::set<std::pair<int, std::string>> notes;
  std::uint64_t runs = 0;
  bool exhaustive = false;
};

Seen seen(const Trace& trace, bool sleep_sets) {
  Seen out;
  TraceRunOptions options{trace.policy, false, sim::DeviceProgress::OnObservation, sleep_sets};
  const auto result = sim::explore(sim::DeviationDfs{}, sim::Bounds{20000}, [&](sim::Chooser& chooser) {
    const Execution run = run_on_simulator(trace, chooser, options);
    if (sim::repeats_earlier_round(chooser) || !chooser.counted()) return false;
    for (const auto& f : run.model().findings()) out.findings.emplace(f.kind, f.definite, f.first, f.second);
    for (const auto& n : run.notes()) out.notes.emplace(n.line, n.message);
    ++out.runs;
    return false;
  });
  out.exhaustive = result.exhaustive;
  return out;
}

TEST(TraceThreads, SleepSetsFindWhatEveryHostOrderFinds) {
  // On 200 generated three-thread programs: the executions sleep sets keep
  // give the same findings and notes as every host-thread order, in fewer
  // runs.
  std::uint64_t reduced = 0, full = 0;
  int compared = 0;
  for (std::uint32_t seed = 1; compared < 200 && seed < 1000; ++seed) {
    const std::string text = generated_threads_program(seed);
    const Trace trace = parse_trace(text, "generated.trace");
    const Seen all = seen(trace, false);
    if (!all.exhaustive) continue;
    const Seen kept = seen(trace, true);
    ASSERT_TRUE(kept.exhaustive) << text;
    EXPECT_EQ(kept.findings, all.findings) << text;
    EXPECT_EQ(kept.notes, all.notes) << text;
    EXPECT_LE(kept.runs, all.runs) << text;
    reduced += kept.runs;
    full += all.runs;
    ++compared;
  }
  EXPECT_EQ(compared, 200);
  EXPECT_LT(reduced, full);
  std::printf("%d programs: %llu executions with sleep sets, %llu without\n", compared,
              static_cast<unsigned long long>(reduced), static_cast<unsigned long long>(full));
}

}  // namespace
}  // namespace streamcheck::tools
