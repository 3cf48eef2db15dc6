// Litmus tests, one group per HB rule of SPEC §3 (R1-R5, R8): each pins the
// exact findings (kind, both ops, bytes) and the exact number of schedules
// DfsEnumerator explores. Findings are reported at enqueue time, so the
// verdict must be the same in every schedule; the count is the number of
// orders in which finish() can complete the pending ops (linear extensions
// of the HB order restricted to what is still pending).
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "sim_test_util.h"

namespace streamcheck::sim::test {
namespace {

constexpr std::uint64_t kX = std::uint64_t{1} << 20;  // the setup buffer (first pool address)
constexpr ByteRange kLoX{kX, kX + 256};               // "x": first half of the buffer
constexpr ByteRange kHiY{kX + 256, kX + 512};         // "y": second half

/// A model with a 512-byte buffer allocated on stream 0 ("setup") and made
/// ready for everyone by a device sync; user streams s1..s3 are 1..3.
/// The user streams' kinds (R8): non-blocking unless a test says; with a
/// legacy default stream it is stream 4.
struct StreamKinds {
  StreamKind s1 = StreamKind::NonBlocking, s2 = StreamKind::NonBlocking, s3 = StreamKind::NonBlocking;
  bool legacy = false;
};
struct Litmus {
  explicit Litmus(Chooser& c, PoolPolicy p = {}, StreamKinds kinds = {}) : m(c, p) {
    m.create_stream("setup");
    m.create_stream("s1", kinds.s1);
    m.create_stream("s2", kinds.s2);
    m.create_stream("s3", kinds.s3);
    if (kinds.legacy) m.create_stream("legacy", StreamKind::LegacyDefault);
    const auto a = m.alloc(StreamIndex{0}, 512, "X");
    EXPECT_TRUE(a && a->ptr == kX);
    m.sync_device();
  }
  OpRef w(StreamIndex s, ByteRange r, std::string label = "w") {
    return m.launch(s, {wr(r.lo, r.size())}, std::move(label));
  }
  OpRef r(StreamIndex s, ByteRange b, std::string label = "r") {
    return m.launch(s, {rd(b.lo, b.size())}, std::move(label));
  }
  /// Completes the run; returns the findings made by the program (all of
  /// them are made at enqueue time) and checks that finish() adds only the
  /// setup buffer's leak.
  std::vector<F> finish() {
    auto before = findings_of(m);
    m.finish();
    auto expected = before;
    expected.push_back(F{FindingKind::Leak, OpRef{StreamIndex{0}, 0}, std::nullopt, {ByteRange{kX, kX + 512}}, false});
    EXPECT_EQ(findings_of(m), expected);
    return before;
  }
  DeviceModel m;
};

constexpr StreamIndex s1{1}, s2{2}, s3{3};

/// Runs `program` under every schedule; every run must give `expected`.
std::size_t litmus(const std::function<void(Litmus&)>& program, const std::vector<F>& expected,
                   StreamKinds kinds = {}) {
  return explore_all([&](Chooser& c) {
    Litmus t(c, {}, kinds);
    program(t);
    EXPECT_EQ(t.finish(), expected) << "schedule " << c.schedule();
  });
}

F race(OpRef a, OpRef b, ByteRange bytes) { return F{FindingKind::DataRace, a, b, {bytes}, false}; }

// --- R1 stream order

TEST(LitmusR1, SameStreamWriteThenReadHasNoFinding) {
  // s1: w(x), r(x); s2: w(y). Chain of 2 interleaved with 1 op: C(3,1) = 3.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(s1, kLoX);
                  t.w(s2, kHiY);
                },
                {}),
            3u);
}

TEST(LitmusR1, WriteOnOneStreamReadOnAnotherRaces) {
  // Two unordered ops: 2 orders.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR1, DisjointBytesDoNotRace) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.w(s2, kHiY);
                },
                {}),
            2u);
}

TEST(LitmusR1, ReadReadDoesNotRace) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.r(s1, kLoX);
                  t.r(s2, kLoX);
                },
                {}),
            2u);
}

TEST(LitmusR1, PartialOverlapReportsOnlyTheSharedBytes) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, ByteRange{kX, kX + 300});
                  t.r(s2, ByteRange{kX + 200, kX + 512});
                },
                {race({s1, 0}, {s2, 0}, ByteRange{kX + 200, kX + 300})}),
            2u);
}

// --- R2 record

TEST(LitmusR2, RecordAfterWorkCoversIt) {
  // s2's read waits for s1's write: a total order, 1 schedule.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, s1);
                  t.m.wait(s2, e);
                  t.r(s2, kLoX);
                },
                {}),
            1u);
}

TEST(LitmusR2, RecordCapturesOnlyWorkBeforeIt) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.m.record(e, s1);
                  t.w(s1, kLoX);
                  t.m.wait(s2, e);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR2, ReRecordReplacesTheCapture) {
  // e first captures s1's write, then is recorded on the empty s2: the
  // capture is replaced (not merged), so s3's read is no longer covered.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, s1);
                  t.m.record(e, s2);
                  t.m.wait(s3, e);
                  t.r(s3, kLoX);
                },
                {race({s1, 0}, {s3, 0}, kLoX)}),
            2u);
}

TEST(LitmusR2, ReRecordOnTheSameStreamStillCoversEarlierWork) {
  // Recording again on s1 captures everything on s1 so far (R1 + R2).
  // s1: w(x), w(y); s3: r(x), r(y) after both: total order, 1 schedule.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, s1);
                  t.w(s1, kHiY);
                  t.m.record(e, s1);
                  t.m.wait(s3, e);
                  t.m.launch(s3, {rd(kX, 512)}, "r");
                },
                {}),
            1u);
}

// --- R3 wait

TEST(LitmusR3, WaitIssuedBeforeTheRecordIsANoOp) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.wait(s2, e);
                  t.m.record(e, s1);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR3, WaitOnNeverRecordedEventDoesNothing) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.wait(s2, e);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR3, WaitUsesTheCaptureAsOfTheCall) {
  // s2 waits for e capturing s1#0; e is then re-recorded after s1#1. The
  // read of y (written by s1#1) races; the read of x does not. Pending
  // ops: s1#0 < {s1#1, s2#0}: 2 orders.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, s1);
                  t.m.wait(s2, e);
                  t.w(s1, kHiY);
                  t.m.record(e, s1);
                  t.m.launch(s2, {rd(kX, 512)}, "r");
                },
                {race({s1, 1}, {s2, 0}, kHiY)}),
            2u);
}

TEST(LitmusR3, WaitOrdersOnlyLaterWork) {
  // s2's read enqueued before the wait races; the one after does not.
  // Pending: s1#0 < s2#1, s2#0 < s2#1: 2 orders.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, s1);
                  t.r(s2, kLoX, "early");
                  t.m.wait(s2, e);
                  t.r(s2, kLoX, "late");
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR3, WaitIsTransitive) {
  // s1 -> s2 -> s3 through two events: total order.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e1 = t.m.create_event();
                  const auto e2 = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e1, s1);
                  t.m.wait(s2, e1);
                  t.m.record(e2, s2);
                  t.m.wait(s3, e2);
                  t.r(s3, kLoX);
                },
                {}),
            1u);
}

TEST(LitmusR3, WaitOrdersWorkInARunWithMoreStreamsThanAClockChunkHolds) {
  // An op's clock is kept as a base of one component per stream
  // (HbState::store_base): from 4,096 streams on, a base no longer fits a
  // chunk and gets a block of its own. The setup's ops keep their narrow
  // bases, made before the streams below were.
  RandomChooser c(1);
  Litmus t(c);
  std::vector<StreamIndex> more;
  for (int i = 0; i < 4200; ++i) more.push_back(t.m.create_stream("more" + std::to_string(i)));
  const auto e = t.m.create_event();
  const OpRef write = t.w(s1, kLoX);
  t.m.record(e, s1);
  t.m.wait(more.back(), e);
  const OpRef ordered = t.r(more.back(), kLoX);
  const OpRef racing = t.r(more.front(), kLoX);
  EXPECT_TRUE(t.m.happens_before(OpRef{StreamIndex{0}, 0}, ordered));  // the setup's allocation, R4 + R5
  EXPECT_TRUE(t.m.happens_before(write, ordered));
  EXPECT_FALSE(t.m.happens_before(write, racing));
  EXPECT_FALSE(t.m.happens_before(ordered, write));
  EXPECT_EQ(t.finish(), (std::vector<F>{race(write, racing, kLoX)}));
}

TEST(LitmusR3, PingPongThroughEventsOrdersEveryWriteAcrossManyClockChunks) {
  // Every op below has a base of its own (a wait changed its clock), so
  // the bases fill several chunks, and one that would span two starts the
  // next chunk instead (HbState::store_base): read across a chunk's end,
  // a clock would be wrong, and so would the verdict.
  RandomChooser c(1);
  Litmus t(c);
  const auto e1 = t.m.create_event();
  const auto e2 = t.m.create_event();
  std::vector<OpRef> writes;
  for (int round = 0; round < 3000; ++round) {
    if (round > 0) t.m.wait(s1, e2);
    writes.push_back(t.w(s1, kLoX));
    t.m.record(e1, s1);
    t.m.wait(s2, e1);
    writes.push_back(t.w(s2, kLoX));
    t.m.record(e2, s2);
  }
  for (std::size_t i = 1; i < writes.size(); ++i) ASSERT_TRUE(t.m.happens_before(writes[i - 1], writes[i])) << i;
  EXPECT_EQ(t.finish(), std::vector<F>{});
}

// --- R4 host sync

TEST(LitmusR4, StreamSyncOrdersLaterWorkOnAnotherStream) {
  // The sync completes s1#0; only s2#0 is left: 1 schedule.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.m.sync_stream(s1);
                  t.r(s2, kLoX);
                },
                {}),
            1u);
}

TEST(LitmusR4, StreamSyncOfAnotherStreamDoesNotOrder) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.m.sync_stream(s3);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR4, EventSyncOrdersOnlyTheCapturedWork) {
  // sync_event completes s1#0 only; s1#1 and s2#0 are left unordered: 2.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, s1);
                  t.w(s1, kHiY);
                  t.m.sync_event(e);
                  t.m.launch(s2, {rd(kX, 512)}, "r");
                },
                {race({s1, 1}, {s2, 0}, kHiY)}),
            2u);
}

TEST(LitmusR4, EventSyncOfNeverRecordedEventOrdersNothing) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.sync_event(e);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

TEST(LitmusR4, DeviceSyncOrdersEveryStream) {
  // Everything before the sync completes in it; s3#0 alone is left: 1.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.w(s2, kHiY);
                  t.m.sync_device();
                  t.m.launch(s3, {rd(kX, 512)}, "r");
                },
                {}),
            1u);
}

TEST(LitmusR4, QueryDoneOrdersAndNotDoneDoesNot) {
  // device_steps() offers {stop, complete s1#0}. Completed -> the query
  // answers done -> the read is ordered, 1 finish order. Not completed ->
  // "not done" orders nothing -> race, 2 finish orders. Total 3.
  std::map<bool, std::vector<std::vector<F>>> by_answer;
  const auto n = explore_all([&](Chooser& c) {
    Litmus t(c);
    const auto e = t.m.create_event();
    t.w(s1, kLoX);
    t.m.record(e, s1);
    t.m.device_steps();
    const bool done = t.m.query_event(e);
    t.r(s2, kLoX);
    by_answer[done].push_back(t.finish());
  });
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(by_answer[true].size(), 1u);
  ASSERT_EQ(by_answer[false].size(), 2u);
  EXPECT_EQ(by_answer[true][0], std::vector<F>{});
  for (const auto& v : by_answer[false]) EXPECT_EQ(v, std::vector<F>{race({s1, 0}, {s2, 0}, kLoX)});
}

TEST(LitmusR4, QueryOfNeverRecordedEventAnswersDoneButOrdersNothing) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  EXPECT_TRUE(t.m.query_event(e));
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            2u);
}

// --- R5 enqueue

TEST(LitmusR5, OnlyWorkEnqueuedAfterTheHostActionIsOrdered) {
  // s2#0 is enqueued before the host syncs s1 and races; s2#1 is enqueued
  // after and is ordered. The sync completes s1#0; s2#0 < s2#1 left: 1.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(s2, kLoX, "before sync");
                  t.m.sync_stream(s1);
                  t.r(s2, kLoX, "after sync");
                },
                {race({s1, 0}, {s2, 0}, kLoX)}),
            1u);
}

TEST(LitmusR5, EnqueueOrderAloneOrdersNothing) {
  // The host enqueued s1#0 before s2#0, but enqueueing is not completion.
  DfsEnumerator dfs;
  auto run = dfs.next_run();
  Litmus t(run);
  const auto a = t.w(s1, kLoX);
  const auto b = t.w(s2, kHiY);
  EXPECT_FALSE(t.m.happens_before(a, b));
  EXPECT_FALSE(t.m.happens_before(b, a));
  t.m.sync_stream(s1);
  const auto c = t.w(s2, kHiY);
  EXPECT_TRUE(t.m.happens_before(a, c));
  EXPECT_TRUE(t.m.happens_before(b, c));
  EXPECT_FALSE(t.m.happens_before(c, a));
}

// --- R8 default streams

constexpr StreamIndex legacy{4};
constexpr StreamKind kBlocking = StreamKind::Blocking;

TEST(LitmusR8, LegacyWorkWaitsForEarlierWorkOnBlockingStreams) {
  // s1 (blocking): w(x); legacy: r(x). The read is ordered after the write: 1 order.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(legacy, kLoX);
                },
                {}, {.s1 = kBlocking, .legacy = true}),
            1u);
}

TEST(LitmusR8, BlockingWorkWaitsForEarlierLegacyWork) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(legacy, kLoX);
                  t.r(s1, kLoX);
                },
                {}, {.s1 = kBlocking, .legacy = true}),
            1u);
}

TEST(LitmusR8, NonBlockingStreamsAreNotOrderedWithLegacy) {
  // s1 non-blocking: both directions race, 2 orders each.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(legacy, kLoX);
                },
                {race({s1, 0}, {legacy, 0}, kLoX)}, {.legacy = true}),
            2u);
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(legacy, kLoX);
                  t.r(s1, kLoX);
                },
                {race({legacy, 0}, {s1, 0}, kLoX)}, {.legacy = true}),
            2u);
}

TEST(LitmusR8, TwoBlockingStreamsAreNotOrderedWithEachOther) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}, {.s1 = kBlocking, .s2 = kBlocking, .legacy = true}),
            2u);
}

TEST(LitmusR8, LegacyWorkBetweenTwoBlockingStreamsOrdersThem) {
  // s1: w(x); legacy: k(y); s2: r(x) -- ordered through the legacy op: 1 order.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.w(legacy, kHiY);
                  t.r(s2, kLoX);
                },
                {}, {.s1 = kBlocking, .s2 = kBlocking, .legacy = true}),
            1u);
}

TEST(LitmusR8, LegacyOrdersOnlyWorkEnqueuedBeforeIt) {
  // legacy: k(y) first, then s1: w(x) and s2: r(x): the legacy op orders
  // neither after the other (each is after the legacy op only): a race;
  // the legacy op runs first, then s1 and s2 in 2 orders.
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(legacy, kHiY);
                  t.w(s1, kLoX);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}, {.s1 = kBlocking, .s2 = kBlocking, .legacy = true}),
            2u);
}

TEST(LitmusR8, RecordOnLegacyCapturesTheBlockingStreamsWork) {
  // s1: w(x); record e on legacy; wait e on s3 (non-blocking); s3: r(x).
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  const auto e = t.m.create_event();
                  t.w(s1, kLoX);
                  t.m.record(e, legacy);
                  t.m.wait(s3, e);
                  t.r(s3, kLoX);
                },
                {}, {.s1 = kBlocking, .legacy = true}),
            1u);
}

TEST(LitmusR8, WithoutALegacyStreamBlockingStreamsAreIndependent) {
  EXPECT_EQ(litmus(
                [](Litmus& t) {
                  t.w(s1, kLoX);
                  t.r(s2, kLoX);
                },
                {race({s1, 0}, {s2, 0}, kLoX)}, {.s1 = kBlocking, .s2 = kBlocking}),
            2u);
}

TEST(LitmusR8, ASecondLegacyStreamIsRefused) {
  RandomChooser c(0);
  DeviceModel m(c);
  m.create_stream("legacy", StreamKind::LegacyDefault);
  EXPECT_THROW(m.create_stream("again", StreamKind::LegacyDefault), std::logic_error);
}

// --- report text and the P2 value oracle

TEST(LitmusReport, RaceReportNamesBothOpsBytesAndTheFix) {
  DfsEnumerator dfs;
  auto run = dfs.next_run();
  Litmus t(run);
  t.w(s1, kLoX, "producer");
  t.r(s2, kLoX, "consumer");
  ASSERT_EQ(t.m.findings().size(), 1u);
  EXPECT_EQ(format(t.m, t.m.findings()[0]),
            "data race: s1#0 kernel \"producer\" and s2#0 kernel \"consumer\" touch bytes [0x100000, 0x100100) "
            "(256 bytes); neither is ordered before the other (missing edge s1#0 -> s2#0)\n"
            "  fix: record an event on s1 after s1#0 kernel \"producer\"; make s2 wait on it before s2#0 kernel "
            "\"consumer\"");
}

TEST(LitmusValues, ReadRacingWithALaterWriteSeesAWrongValueInOneOfTwoSchedules) {
  // The read is ordered after s1#0 and must see its value; s1#1 overwrites
  // x unordered with the read (a race, reported once). Pending after s1#0:
  // s1#1 and s2#0 in either order: 2 schedules; when s1#1 runs first the
  // read observes s1#1's value (P2 mismatch). A read racing with the last
  // write before it has no expectation: the race itself is the finding.
  std::size_t with_mismatch = 0;
  const auto n = explore_all([&](Chooser& c) {
    Litmus t(c);
    const auto e = t.m.create_event();
    t.w(s1, kLoX, "w1");
    t.m.record(e, s1);
    t.m.wait(s2, e);
    t.r(s2, kLoX);
    t.w(s1, kLoX, "w2");
    EXPECT_EQ(t.finish(), std::vector<F>{race({s2, 0}, {s1, 1}, kLoX)});
    if (!t.m.value_mismatches().empty()) {
      ++with_mismatch;
      ASSERT_EQ(t.m.value_mismatches().size(), 1u);
      const auto& mm = t.m.value_mismatches()[0];
      EXPECT_EQ(mm.read, (OpRef{s2, 0}));
      EXPECT_EQ(mm.bytes, kLoX);
      EXPECT_NE(mm.expected, mm.observed);
      EXPECT_TRUE(t.m.completed(OpRef{s1, 1}));
    }
  });
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(with_mismatch, 1u);
}

TEST(LitmusValues, OrderedReadNeverMismatches) {
  std::size_t runs = 0;
  explore_all([&](Chooser& c) {
    Litmus t(c);
    const auto e = t.m.create_event();
    t.w(s1, kLoX);
    t.w(s2, kHiY);
    t.m.record(e, s1);
    t.m.wait(s2, e);
    t.m.launch(s2, {rd(kX, 512)}, "r");
    t.finish();
    ++runs;
    EXPECT_TRUE(t.m.value_mismatches().empty()) << c.schedule();
  });
  // s1#0 and s2#0 unordered, both before s2#1: 2 orders.
  EXPECT_EQ(runs, 2u);
}

}  // namespace
}  // namespace streamcheck::sim::test
