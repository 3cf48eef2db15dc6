// Observable-choice exploration (issue 12): `--strategy dfs` enumerates
// executions, not interleavings of device steps. An execution is one
// outcome of every observation the host makes: each query's answer, each
// pool placement (fresh, or which freed range and how), each injected fault.
// The device makes progress only where an outcome needs it
// (sim::DeviceProgress::OnObservation), so the counts below are counted by
// hand, GenMC-style: each test says why its program has exactly that many.
#include <gtest/gtest.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend_sim/explorer.h"
#include "tests/test_scale.h"
#include "tests/tools/trace_generator.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

Report explore_text(const std::string& text, Strategy strategy, std::uint64_t bound = 100000, bool faults = false) {
  TraceCheckOptions o;
  o.strategy = strategy;
  o.max_schedules = bound;
  o.faults = faults;
  return explore_trace(parse_trace(text, "t.trace"), o);
}

/// The number of executions of `text`, which dfs must exhaust.
std::uint64_t executions(const std::string& text) {
  const Report r = explore_text(text, Strategy::Dfs);
  EXPECT_TRUE(r.coverage.exhaustive) << text;
  EXPECT_TRUE(r.coverage.executions);
  return r.coverage.explored;
}

using FindingKey = std::tuple<sim::FindingKind, bool, sim::OpRef, std::optional<sim::OpRef>>;

std::set<FindingKey> finding_keys(const Report& r) {
  std::set<FindingKey> out;
  for (const auto& f : r.findings)
    out.emplace(f.kind, f.definite, f.first.ref, f.second ? std::optional(f.second->ref) : std::nullopt);
  return out;
}

const std::string kTwoStreams = "stream s1\nstream s2\nbuffer A 256\n";  // plain buffer: ready for every stream

// --- no observation: one execution, whatever the device does

TEST(Executions, AProgramThatObservesNothingHasOne) {
  // Two unordered kernels: the race is found at enqueue time from vector
  // clocks, in every interleaving; nothing the host does depends on which
  // kernel completes first. (dfs-schedules runs the interleavings: more.)
  const std::string t = kTwoStreams + "launch w on s1 writes A\nlaunch r on s2 reads A\nfree A\n";
  EXPECT_EQ(executions(t), 1u);
  EXPECT_GT(explore_text(t, Strategy::DfsSchedules).coverage.explored, 1u);
  EXPECT_EQ(explore_text(t, Strategy::Dfs).findings.size(), 1u);
}

TEST(Executions, AnElevenStreamEventChainHasOne) {
  // Ten readers chained by events after one writer (a common sanitizer
  // test's shape): no query, no reuse, so one execution; the naive
  // enumeration does not finish within 10,000 schedules.
  std::string t;
  for (int s = 0; s <= 10; ++s) t += "stream s" + std::to_string(s) + "\nevent e" + std::to_string(s) + "\n";
  t += "buffer A 4096\nlaunch w on s0 writes A\nrecord e0 on s0\n";
  for (int s = 1; s <= 10; ++s)
    t += "wait e" + std::to_string(s - 1) + " on s" + std::to_string(s) + "\nlaunch r" + std::to_string(s) + " on s" +
         std::to_string(s) + " reads A\nrecord e" + std::to_string(s) + " on s" + std::to_string(s) + "\n";
  t += "sync device\nfree A\n";
  EXPECT_EQ(executions(t), 1u);
  EXPECT_FALSE(explore_text(t, Strategy::DfsSchedules, 10000).coverage.exhaustive);
  EXPECT_TRUE(explore_text(t, Strategy::Dfs).findings.empty());
}

// --- queries (R4)

TEST(Executions, AQueryOfRecordedWorkHasTwoAnswers) {
  // "not done" (nothing ran) or "done" (the recorded kernel ran first).
  EXPECT_EQ(
      executions(kTwoStreams + "event e\nlaunch w on s1 writes A\nrecord e on s1\nquery e\nsync device\nfree A\n"), 2u);
}

TEST(Executions, AQueryOfANeverRecordedEventHasOne) {
  // R3: a never-recorded event captures nothing; the query answers done.
  EXPECT_EQ(executions(kTwoStreams + "event e\nlaunch w on s1 writes A\nquery e\nsync device\nfree A\n"), 1u);
}

TEST(Executions, AQueryAfterASyncOfItsWorkHasOne) {
  // The sync ran the recorded work: "done" is the only answer left.
  EXPECT_EQ(
      executions(kTwoStreams + "event e\nlaunch w on s1 writes A\nrecord e on s1\nsync stream s1\nquery e\nfree A\n"),
      1u);
}

TEST(Executions, TwoQueriesOfOneCaptureHaveThree) {
  // Device state only grows: (not done, not done), (not done, done), and
  // (done, done) -- after "done" the second answer is forced. Never
  // (done, not done).
  EXPECT_EQ(executions(kTwoStreams +
                       "event e\nlaunch w on s1 writes A\nrecord e on s1\nquery e\nquery e\nsync device\nfree A\n"),
            3u);
}

TEST(Executions, QueriesOfTwoIndependentEventsHaveFour) {
  // Two captures on two streams, neither ordered before the other: every
  // pair of answers, 2 x 2.
  EXPECT_EQ(executions("stream s1\nstream s2\nevent a\nevent b\nbuffer A 256\nbuffer B 256\n"
                       "launch wa on s1 writes A\nrecord a on s1\nlaunch wb on s2 writes B\nrecord b on s2\n"
                       "query a\nquery b\nsync device\nfree A\nfree B\n"),
            4u);
}

TEST(Executions, ALaterCaptureDoneForcesTheEarlierOne) {
  // b's capture waits for a's (wait a on s2): asking b first, "done" runs
  // a's work too, so a's query has one answer left; "not done" leaves a
  // open: 1 + 2 = 3. Asking a first gives 2 x 2 = 4: "a not done" does
  // not stop b's work from being done later.
  const std::string head =
      kTwoStreams +
      "event a\nevent b\nlaunch w on s1 writes A\nrecord a on s1\nwait a on s2\nlaunch r on s2 reads A\n"
      "record b on s2\n";
  const std::string tail = "sync device\nfree A\n";
  EXPECT_EQ(executions(head + "query b\nquery a\n" + tail), 3u);
  EXPECT_EQ(executions(head + "query a\nquery b\n" + tail), 4u);
}

// --- the pool's reuse decisions (R7)

const std::string kReuseHead = "stream s1\nstream s2\nbuffer A 256 on s1\nlaunch w on s1 writes A\nfree A on s1\n";
const std::string kReuseTail = "launch x on s2 writes B\nfree B on s2\n";

std::string policy(bool follow, bool opportunistic, bool internal) {
  const auto on = [](bool b) { return b ? "on" : "off"; };
  return std::string("policy follow_event_dependencies = ") + on(follow) +
         "\npolicy opportunistic = " + on(opportunistic) + "\npolicy internal_dependencies = " + on(internal) + "\n";
}

TEST(Executions, EachReuseThePolicyAllowsIsOneExecution) {
  // B on another stream than A's free: fresh memory, plus one option per
  // reuse the policy allows for A's range. Opportunistic means A's free
  // has run (it then runs); an internal dependency makes B wait for it.
  EXPECT_EQ(executions(policy(false, false, false) + kReuseHead + "buffer B 256 on s2\n" + kReuseTail), 1u);
  EXPECT_EQ(executions(policy(false, true, false) + kReuseHead + "buffer B 256 on s2\n" + kReuseTail), 2u);
  EXPECT_EQ(executions(policy(false, false, true) + kReuseHead + "buffer B 256 on s2\n" + kReuseTail), 2u);
  EXPECT_EQ(executions(policy(false, true, true) + kReuseHead + "buffer B 256 on s2\n" + kReuseTail), 3u);
  // On A's own stream the reuse is always allowed (stream order): 2.
  EXPECT_EQ(executions(policy(false, false, false) + kReuseHead + "buffer B 256 on s1\nlaunch x on s1 writes B\n" +
                       "free B on s1\n"),
            2u);
}

TEST(Executions, AReuseAndAQueryConstrainEachOther) {
  // e is recorded after A's free. Query first: "not done" leaves the free
  // open, so B may still reuse A's range opportunistically (2 + 2 = 4
  // with "done"). Reuse first: the opportunistic reuse ran the free,
  // which was all e captured, so the query is "done" without a choice;
  // fresh memory leaves it open: 2 + 1 = 3.
  const std::string head = policy(false, true, false) + "stream s1\nstream s2\nevent e\nbuffer A 256 on s1\n" +
                           "launch w on s1 writes A\nfree A on s1\nrecord e on s1\n";
  EXPECT_EQ(executions(head + "query e\nbuffer B 256 on s2\n" + kReuseTail), 4u);
  EXPECT_EQ(executions(head + "buffer B 256 on s2\nquery e\n" + kReuseTail), 3u);
}

TEST(Executions, AppendedIndependentKernelsAddNoExecutionAndTheReuseRaceIsFound) {
  // examples/05 with 24 independent kernels appended (8 per stream, each on
  // a buffer of its own stream): they observe nothing, so dfs at its
  // default bound still runs the early pool choice both ways and reports
  // the reuse race; the kernels' buffers add only their own pool choices.
  std::string t =
      policy(false, true, false) +
      "stream s0\nstream s1\nstream s2\nevent filled\nbuffer A 4096 on s0\nlaunch fill on s0 writes A\n"
      "record filled on s0\nwait filled on s1\nlaunch reader on s1 reads A\nfree A on s0\nbuffer B 4096 on s2\n"
      "launch fill_B on s2 writes B\nfree B on s2\n";
  for (int s = 0; s < 3; ++s) {
    const std::string stream = "s" + std::to_string(s);
    t += "buffer C" + stream + " 2048 on " + stream + "\n";
    for (int k = 0; k < 8; ++k)
      t += "launch k" + stream + "_" + std::to_string(k) + " on " + stream + " writes C" + stream + "[" +
           std::to_string(k * 256) + ":" + std::to_string((k + 1) * 256) + "]\n";
  }
  const Report r = explore_text(t, Strategy::Dfs, TraceCheckOptions{}.max_schedules);
  EXPECT_TRUE(r.coverage.exhaustive);
  const auto keys = finding_keys(r);
  EXPECT_TRUE(std::any_of(keys.begin(), keys.end(),
                          [](const FindingKey& k) { return std::get<0>(k) == sim::FindingKind::ReuseRace; }));
}

// --- the same outcomes as every schedule, on generated programs

/// What one run let the host observe, and its verdict: each query's answer,
/// each placement (address, how it was reused, the free it reused), which
/// fault points fired, the findings and the notes.
struct Outcome {
  std::vector<bool> answers;
  std::vector<std::tuple<std::uint64_t, sim::ReuseKind, std::optional<sim::OpRef>>> placements;
  std::vector<std::uint32_t> faults;
  std::set<FindingKey> findings;
  std::set<std::pair<int, std::string>> notes;
  auto operator<=>(const Outcome&) const = default;
};

struct Outcomes {
  std::set<Outcome> distinct;
  std::uint64_t runs = 0;
  bool exhaustive = false;
};

Outcomes outcomes(const Trace& trace, sim::DeviceProgress progress, bool faults, std::uint64_t bound) {
  Outcomes out;
  const TraceRunOptions options{trace.policy, faults, progress};
  const auto result = sim::explore(sim::Dfs{}, sim::Bounds{bound}, [&](sim::Chooser& chooser) {
    const Execution run = run_on_simulator(trace, chooser, options);
    Outcome o;
    for (const auto& q : run.query_answers()) o.answers.push_back(q.done);
    for (const auto& a : run.model().pool().allocations()) o.placements.emplace_back(a.range.lo, a.reuse, a.fence);
    for (const auto& c : chooser.taken())
      if (c.kind == sim::ChoiceKind::Fault) o.faults.push_back(c.taken);
    for (const auto& f : run.model().findings()) o.findings.emplace(f.kind, f.definite, f.first, f.second);
    for (const auto& n : run.notes()) o.notes.emplace(n.line, n.message);
    out.distinct.insert(std::move(o));
    ++out.runs;
    return false;
  });
  out.exhaustive = result.exhaustive;
  return out;
}

TEST(Executions, AreTheOutcomesOfEveryScheduleEachOnceOnFiveHundredGeneratedPrograms) {
  // Where the naive enumeration of every device step finishes, the
  // executions give exactly the outcomes its schedules give (so the same
  // findings, notes and query answers), and no outcome twice. Programs with
  // the tracked Resource explore one injected fault per run in every
  // other program (fault points are observations too). The sanitizer run
  // compares 100 (tests/test_scale.h).
  const std::size_t kWanted = tests::sanitizer_scale() ? 100 : 500;
  std::size_t compared = 0, seed = 0;
  std::uint64_t schedules = 0, executions = 0;
  while (compared < kWanted && seed < 3 * kWanted) {
    const std::string text = generate_observing_program(++seed);
    const Trace trace = parse_trace(text, "generated.trace");
    const bool faults = trace.uses_resource && seed % 2 == 0;
    const Outcomes naive = outcomes(trace, sim::DeviceProgress::EveryStep, faults, 3000);
    if (!naive.exhaustive) continue;
    const Outcomes by_execution = outcomes(trace, sim::DeviceProgress::OnObservation, faults, 3000);
    ASSERT_TRUE(by_execution.exhaustive) << text;
    EXPECT_EQ(by_execution.runs, by_execution.distinct.size()) << "two runs with one outcome:\n" << text;
    EXPECT_TRUE(by_execution.distinct == naive.distinct) << "outcomes differ:\n" << text;
    ++compared;
    schedules += naive.runs;
    executions += by_execution.runs;
  }
  EXPECT_EQ(compared, kWanted) << "too few generated programs small enough for the naive enumeration";
  std::printf("%zu programs (%zu seeds): %llu schedules, %llu executions\n", compared, seed,
              static_cast<unsigned long long>(schedules), static_cast<unsigned long long>(executions));
}

}  // namespace
}  // namespace streamcheck::tools
