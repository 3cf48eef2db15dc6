// Over-synchronization (backend_sim/redundancy.h, O1 and O2): exact flags on
// small programs, and over generated programs both directions of the
// contract: removing every flagged call leaves the HB order of the ops
// unchanged (a needed call is never flagged), and a wait or sync repeated
// right after itself is always flagged (a redundant call is not missed).
#include "backend_sim/redundancy.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "sim_test_util.h"

namespace streamcheck::sim::test {
namespace {

// --- a program as data: one log entry per call

struct Launch {
  std::uint32_t stream;
};
struct Record {
  std::uint32_t event, stream;
};
struct Wait {
  std::uint32_t stream, event;
};
struct SyncStream {
  std::uint32_t stream;
};
struct SyncEvent {
  std::uint32_t event;
};
struct SyncDevice {};
struct Query {
  std::uint32_t event;
};
struct OnThread {  // the calls after it run on host thread `thread` (0: main)
  std::uint32_t thread;
};
struct Step {};  // a point where the device may complete work (the schedule decides)
using Call = std::variant<Launch, Record, Wait, SyncStream, SyncEvent, SyncDevice, Query, OnThread, Step>;
using Program = std::vector<Call>;

constexpr std::uint32_t kStreams = 3, kEvents = 2;

std::string show(const Program& p) {
  std::string out;
  for (const Call& c : p)
    out += std::visit(
               [](const auto& x) -> std::string {
                 using T = std::decay_t<decltype(x)>;
                 if constexpr (std::is_same_v<T, Launch>) return "launch s" + std::to_string(x.stream);
                 if constexpr (std::is_same_v<T, Record>)
                   return "record e" + std::to_string(x.event) + " on s" + std::to_string(x.stream);
                 if constexpr (std::is_same_v<T, Wait>)
                   return "wait e" + std::to_string(x.event) + " on s" + std::to_string(x.stream);
                 if constexpr (std::is_same_v<T, SyncStream>) return "sync stream s" + std::to_string(x.stream);
                 if constexpr (std::is_same_v<T, SyncEvent>) return "sync event e" + std::to_string(x.event);
                 if constexpr (std::is_same_v<T, SyncDevice>) return "sync device";
                 if constexpr (std::is_same_v<T, Query>) return "query e" + std::to_string(x.event);
                 if constexpr (std::is_same_v<T, OnThread>) return "@thread " + std::to_string(x.thread);
                 if constexpr (std::is_same_v<T, Step>) return "(device step)";
               },
               c) +
           "\n";
  return out;
}

/// A finished run of the program. The device completes work only at syncs
/// and at Step, where `schedule` decides (past its end: nothing), so a query
/// answers "done" only for work a sync or a step completed.
struct ProgramRun {
  ReplayChooser chooser;
  DeviceModel m{chooser};
  std::vector<std::size_t> entry_of_call;  // the log entry each call made (OnThread: none, SIZE_MAX)
  /// Per call: a wait or sync whose target held at least one op when it ran
  /// (an event never recorded, or recorded before any work, holds none).
  std::vector<bool> target_held_work;

  explicit ProgramRun(const Program& p, const std::string& schedule = "") : chooser(schedule) {
    for (std::uint32_t s = 0; s < kStreams; ++s) m.create_stream("s" + std::to_string(s));
    for (std::uint32_t e = 0; e < kEvents; ++e) m.create_event();
    const auto a = m.alloc(StreamIndex{0}, 256, "X");
    m.sync_device();
    std::vector<HostThread> threads{m.host_thread()};
    const auto holds_work = [&](const VectorClock& vc) {
      for (std::uint32_t s = 0; s < kStreams; ++s)
        if (m.hb().covered_count(vc, StreamIndex{s}) > 0) return true;
      return false;
    };
    std::vector<std::optional<StreamIndex>> recorded_on(kEvents);
    // A capture holds work when it holds an op of the stream it was recorded on.
    const auto capture_holds_work = [&](std::uint32_t event) {
      const auto& capture = m.hb().capture(EventIndex{event});
      return capture && m.hb().covered_count(*capture, *recorded_on[event]) > 0;
    };
    for (const Call& c : p) {
      const std::size_t before = m.log().size();
      target_held_work.push_back(std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Wait> || std::is_same_v<T, SyncEvent>) return capture_holds_work(x.event);
            if constexpr (std::is_same_v<T, SyncStream>) return holds_work(m.hb().stream_clock(StreamIndex{x.stream}));
            return std::is_same_v<T, SyncDevice>;  // the setup's allocation is work
          },
          c));
      if (const auto* r = std::get_if<Record>(&c)) recorded_on[r->event] = StreamIndex{r->stream};
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Launch>) m.launch(StreamIndex{x.stream}, {wr(a->ptr, 256)}, "K");
            if constexpr (std::is_same_v<T, Record>) m.record(EventIndex{x.event}, StreamIndex{x.stream});
            if constexpr (std::is_same_v<T, Wait>) m.wait(StreamIndex{x.stream}, EventIndex{x.event});
            if constexpr (std::is_same_v<T, SyncStream>) m.sync_stream(StreamIndex{x.stream});
            if constexpr (std::is_same_v<T, SyncEvent>) m.sync_event(EventIndex{x.event});
            if constexpr (std::is_same_v<T, SyncDevice>) m.sync_device();
            if constexpr (std::is_same_v<T, Query>) m.query_event(EventIndex{x.event});
            if constexpr (std::is_same_v<T, Step>) m.device_steps();
            if constexpr (std::is_same_v<T, OnThread>) {
              while (threads.size() <= x.thread) threads.push_back(m.create_host_thread());
              m.set_host_thread(threads[x.thread]);
            }
          },
          c);
      entry_of_call.push_back(m.log().size() > before ? before : SIZE_MAX);
    }
    m.set_host_thread(threads[0]);
    m.finish();
  }

  std::vector<RedundantSync> redundant() const { return find_redundant_syncs(m.log(), m.hb().stream_shapes()); }

  /// The calls (indexes into the program) that were flagged.
  std::vector<std::size_t> flagged_calls() const {
    std::vector<std::size_t> out;
    for (const auto& r : redundant())
      for (std::size_t c = 0; c < entry_of_call.size(); ++c)
        if (entry_of_call[c] == r.entry) out.push_back(c);
    return out;
  }

  /// The HB relation of every pair of ops, as a string (a, b) per edge.
  std::string hb_order() const {
    std::vector<OpRef> ops;
    for (std::uint32_t s = 0; s < m.stream_count(); ++s)
      for (std::uint32_t i = 0; i < m.op_count(StreamIndex{s}); ++i) ops.push_back(OpRef{StreamIndex{s}, i});
    std::string out;
    for (const OpRef a : ops)
      for (const OpRef b : ops)
        if (m.happens_before(a, b))
          out += "s" + std::to_string(a.stream.value) + "#" + std::to_string(a.index) + "<s" +
                 std::to_string(b.stream.value) + "#" + std::to_string(b.index) + " ";
    return out;
  }
};

Program without(const Program& p, const std::vector<std::size_t>& calls) {
  Program out;
  for (std::size_t c = 0; c < p.size(); ++c)
    if (std::find(calls.begin(), calls.end(), c) == calls.end()) out.push_back(p[c]);
  return out;
}

// --- exact flags

TEST(Redundancy, O1SecondWaitOnTheSameCaptureIsRedundantThroughTheFirst) {
  const Program p{Launch{1}, Record{0, 1}, Wait{2, 0}, Wait{2, 0}, Launch{2}};
  const ProgramRun run(p);
  const auto r = run.redundant();
  ASSERT_EQ(r.size(), 1u) << show(p);
  EXPECT_EQ(r[0].rule, OversyncRule::O1CoveredWait);
  EXPECT_EQ(r[0].entry, run.entry_of_call[3]);
  EXPECT_EQ(r[0].covered_by, std::vector<std::size_t>{run.entry_of_call[2]});
  EXPECT_EQ(r[0].record, run.entry_of_call[1]);
  EXPECT_FALSE(r[0].same_stream);
}

TEST(Redundancy, O1WaitOnTheStreamsOwnEventIsCoveredByStreamOrder) {
  const ProgramRun run(Program{Launch{1}, Record{0, 1}, Launch{1}, Wait{1, 0}, Launch{1}});
  const auto r = run.redundant();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].same_stream);
  EXPECT_TRUE(r[0].covered_by.empty());
}

TEST(Redundancy, O1WaitAfterTheHostSynchronizedTheEventIsCoveredByTheSync) {
  const ProgramRun run(Program{Launch{1}, Record{0, 1}, SyncEvent{0}, Wait{2, 0}, Launch{2}});
  const auto r = run.redundant();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].entry, run.entry_of_call[3]);
  EXPECT_EQ(r[0].covered_by, std::vector<std::size_t>{run.entry_of_call[2]});
}

TEST(Redundancy, O1WaitCoveredTransitivelyThroughAnotherStreamsEvent) {
  // s2 waits for s1's work through e1 (recorded on s0 after s0 waited on e0).
  const Program p{Launch{1}, Record{0, 1}, Wait{0, 0}, Record{1, 0}, Wait{2, 1}, Wait{2, 0}, Launch{2}};
  const ProgramRun run(p);
  EXPECT_EQ(run.flagged_calls(), std::vector<std::size_t>{5}) << show(p);
}

TEST(Redundancy, NeededWaitsAreNotFlagged) {
  // The first wait on a capture; a wait after a re-record that captured more;
  // a wait whose capture only a query answered "done" covers.
  const Program p{Launch{1}, Record{0, 1}, Wait{2, 0}, Launch{1}, Record{0, 1}, Wait{2, 0}, Launch{2}};
  EXPECT_TRUE(ProgramRun(p).redundant().empty()) << show(p);
  const Program q{Launch{1}, Record{0, 1}, Step{}, Query{0}, Wait{2, 0}, Launch{2}};
  const ProgramRun after_query(q, "1");  // the step completes s1's launch: the query answers "done"
  ASSERT_EQ(after_query.m.log().at(after_query.entry_of_call[3]).kind(), LogEntry::Kind::QueryDone);
  EXPECT_TRUE(after_query.redundant().empty()) << show(q);
}

TEST(Redundancy, WaitsOnNothingAreNearMissesNotRedundant) {
  // Never recorded, and recorded before any work: orders nothing, a likely bug.
  EXPECT_TRUE(ProgramRun(Program{Wait{2, 0}, Launch{2}}).redundant().empty());
  EXPECT_TRUE(ProgramRun(Program{Record{0, 1}, Wait{2, 0}, Launch{1}, Launch{2}}).redundant().empty());
  EXPECT_TRUE(ProgramRun(Program{SyncStream{2}, SyncEvent{1}}).redundant().empty());
}

TEST(Redundancy, O2SecondSyncIsRedundantThroughTheFirst) {
  const ProgramRun run(
      Program{Launch{1}, Launch{2}, SyncDevice{}, SyncStream{1}, SyncEvent{0}, Record{0, 2}, SyncEvent{0}});
  const auto r = run.redundant();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].rule, OversyncRule::O2CoveredSync);
  EXPECT_EQ(r[0].entry, run.entry_of_call[3]);
  EXPECT_EQ(r[0].covered_by, std::vector<std::size_t>{run.entry_of_call[2]});
  EXPECT_EQ(r[1].entry, run.entry_of_call[6]);
  EXPECT_EQ(r[1].record, run.entry_of_call[5]);
}

TEST(Redundancy, O2SyncAfterNewWorkIsNeeded) {
  EXPECT_TRUE(ProgramRun(Program{Launch{1}, SyncStream{1}, Launch{1}, SyncStream{1}}).redundant().empty());
  // A "done" query ordered the host here, but another schedule may answer "not done".
  const Program q{Launch{1}, Record{0, 1}, Step{}, Query{0}, SyncEvent{0}};
  const ProgramRun after_query(q, "1");
  ASSERT_EQ(after_query.m.log().at(after_query.entry_of_call[3]).kind(), LogEntry::Kind::QueryDone);
  EXPECT_TRUE(after_query.redundant().empty()) << show(q);
}

TEST(Redundancy, O1FlagsNothingWithSeveralHostThreads) {
  const Program p{Launch{1}, Record{0, 1}, Wait{2, 0}, OnThread{1}, Wait{2, 0}, Launch{2}};
  EXPECT_TRUE(ProgramRun(p).redundant().empty()) << show(p);
}

// --- both directions over generated programs

/// A schedule for the program's steps: at each, complete one ready stream
/// head (1) or none (0).
std::string steps(std::uint64_t seed) {
  SplitMix64 rng(seed * 7919);
  std::string out;
  for (int i = 0; i < 24; ++i) out += rng.next() % 2 ? '1' : '0';
  return out;
}

Program generate(std::uint64_t seed) {
  SplitMix64 rng(seed);
  const auto pick = [&](std::uint32_t n) { return static_cast<std::uint32_t>(rng.next() % n); };
  Program p;
  const std::uint32_t length = 4 + pick(14);
  const bool threads = pick(8) == 0;
  for (std::uint32_t i = 0; i < length; ++i) {
    switch (pick(threads ? 10 : 9)) {
      case 0:
      case 1:
        p.push_back(Launch{pick(kStreams)});
        break;
      case 2:
        p.push_back(Record{pick(kEvents), pick(kStreams)});
        break;
      case 3:
      case 4:
        p.push_back(Wait{pick(kStreams), pick(kEvents)});
        break;
      case 5:
        p.push_back(SyncStream{pick(kStreams)});
        break;
      case 6:
        p.push_back(pick(2) ? Call{SyncEvent{pick(kEvents)}} : Call{SyncDevice{}});
        break;
      case 7:
        p.push_back(Query{pick(kEvents)});
        break;
      case 8:
        p.push_back(Step{});
        break;
      default:
        p.push_back(OnThread{pick(2)});
    }
  }
  p.push_back(Launch{0});
  p.push_back(Launch{1});
  p.push_back(Launch{2});
  return p;
}

TEST(Redundancy, RemovingEveryFlaggedCallKeepsTheHbOrderOfAllOps) {
  std::size_t flagged = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    const Program p = generate(seed);
    const ProgramRun run(p, steps(seed));
    const auto calls = run.flagged_calls();
    flagged += calls.size();
    if (calls.empty()) continue;
    EXPECT_EQ(ProgramRun(without(p, calls), steps(seed)).hb_order(), run.hb_order())
        << "seed " << seed << ": removing the flagged calls changed the HB order\n"
        << show(p);
    for (const std::size_t c : calls)  // each alone, too
      EXPECT_EQ(ProgramRun(without(p, {c}), steps(seed)).hb_order(), run.hb_order())
          << "seed " << seed << ", call " << c << "\n"
          << show(p);
  }
  EXPECT_GE(flagged, 100u) << "the generator should make redundant calls often";
}

TEST(Redundancy, AWaitOrSyncRepeatedRightAfterItselfIsAlwaysFlagged) {
  std::size_t repeated = 0;
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    const Program p = generate(seed);
    if (std::any_of(p.begin(), p.end(), [](const Call& c) { return std::holds_alternative<OnThread>(c); }))
      continue;  // O1 is off with several host threads
    for (std::size_t c = 0; c < p.size(); ++c) {
      if (!std::holds_alternative<Wait>(p[c]) && !std::holds_alternative<SyncStream>(p[c]) &&
          !std::holds_alternative<SyncEvent>(p[c]) && !std::holds_alternative<SyncDevice>(p[c]))
        continue;
      Program twice = p;
      twice.insert(twice.begin() + static_cast<std::ptrdiff_t>(c) + 1, p[c]);
      const ProgramRun run(twice, steps(seed));
      if (!run.target_held_work[c + 1]) continue;  // a near-miss, never flagged
      ++repeated;
      const auto flagged = run.flagged_calls();
      EXPECT_NE(std::find(flagged.begin(), flagged.end(), c + 1), flagged.end())
          << "seed " << seed << ": the repeat of call " << c << " was not flagged\n"
          << show(twice);
    }
  }
  EXPECT_GE(repeated, 300u);
}

}  // namespace
}  // namespace streamcheck::sim::test
