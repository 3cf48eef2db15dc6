// R7 pool litmus tests: which ReuseKind outcomes each policy switch allows
// (collected over all DFS schedules), that safe reuse gives no finding, and
// the pool findings (use before ready, use after free, reuse race, leak),
// each with its exact verdict and schedule count; and that the candidates
// the pool counts in its tree are those a scan of every range offers.
// Streams are s0, s1.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim_test_util.h"

namespace streamcheck::sim::test {
namespace {

constexpr std::uint64_t kBase = std::uint64_t{1} << 20;  // first pool address
constexpr StreamIndex s0{0}, s1{1};

struct Outcomes {
  std::size_t schedules = 0;
  std::map<ReuseKind, std::size_t> reuse;  // kind of the checked allocation -> schedules
  std::set<ReuseKind> kinds() const {
    std::set<ReuseKind> k;
    for (const auto& [kind, n] : reuse) k.insert(kind);
    return k;
  }
};

/// Runs `program` (which returns the allocation whose reuse is checked)
/// under every schedule; every run must end with exactly `expected(m)`.
Outcomes explore_pool(PoolPolicy policy, const std::function<AllocationIndex(DeviceModel&)>& program,
                      const std::function<std::vector<F>(const DeviceModel&)>& expected) {
  Outcomes out;
  out.schedules = explore_all([&](Chooser& c) {
    DeviceModel m(c, policy);
    m.create_stream();
    m.create_stream();
    const AllocationIndex checked = program(m);
    m.finish();
    ++out.reuse[m.allocation_reuse(checked)];
    EXPECT_EQ(findings_of(m), expected(m)) << "schedule " << c.schedule();
  });
  return out;
}

std::vector<F> none(const DeviceModel&) { return {}; }

PoolPolicy policy(bool follow, bool opportunistic, bool internal, std::uint64_t threshold = 0) {
  PoolPolicy p;
  p.follow_event_dependencies = follow;
  p.opportunistic = opportunistic;
  p.internal_dependencies = internal;
  p.release_threshold = threshold;
  return p;
}

// A is written and freed on s0; s1 waits for an event recorded after the
// free, then allocates B (the pool choice), writes and frees it. All ops are
// totally ordered, so each pool answer is one schedule.
AllocationIndex event_program(DeviceModel& m) {
  const auto a = m.alloc(s0, 256, "A");
  m.launch(s0, {wr(a->ptr, 256)}, "write A");
  m.free(s0, a->ptr, "free A");
  const auto e = m.create_event();
  m.record(e, s0);
  m.wait(s1, e);
  const auto b = m.alloc(s1, 256, "B");
  EXPECT_TRUE(b->reuse == ReuseKind::Fresh || b->ptr == a->ptr);
  m.launch(s1, {wr(b->ptr, 256)}, "write B");
  m.free(s1, b->ptr, "free B");
  return b->allocation;
}

TEST(PoolR7, FollowEventDependenciesOn) {
  const auto o = explore_pool(PoolPolicy{}, event_program, none);
  EXPECT_EQ(o.schedules, 2u);  // fresh | event dependency
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh, ReuseKind::EventDependency}));
}

TEST(PoolR7, FollowEventDependenciesOffFallsBackToInternalDependency) {
  const auto o = explore_pool(policy(false, true, true), event_program, none);
  EXPECT_EQ(o.schedules, 2u);  // fresh | internal dependency (the free has not executed)
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh, ReuseKind::InternalDependency}));
}

TEST(PoolR7, FollowEventDependenciesAndInternalOffLeavesOnlyFresh) {
  const auto o = explore_pool(policy(false, true, false), event_program, none);
  EXPECT_EQ(o.schedules, 1u);
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh}));
}

// No event: A is written and freed on s0, the device may complete k = 0..3
// of s0's ops, then s1 allocates B, writes and frees it. Per k the pool
// offers fresh plus (k = 3: opportunistic, else internal dependency).
// Schedules: fresh leaves s0's 3-k ops and s1's 3 ops unordered, C(6-k, 3)
// = 20, 10, 4, 1; internal dependency makes s1 wait for all of s0: 1;
// opportunistic: s0 is done: 1.
AllocationIndex opportunistic_program(DeviceModel& m) {
  const auto a = m.alloc(s0, 256, "A");
  m.launch(s0, {wr(a->ptr, 256)}, "write A");
  m.free(s0, a->ptr, "free A");
  m.device_steps();
  const auto b = m.alloc(s1, 256, "B");
  m.launch(s1, {wr(b->ptr, 256)}, "write B");
  m.free(s1, b->ptr, "free B");
  return b->allocation;
}

TEST(PoolR7, DefaultsAllowOpportunisticAndInternalReuseWithoutFindings) {
  const auto o = explore_pool(PoolPolicy{}, opportunistic_program, none);
  EXPECT_EQ(o.schedules, 39u);  // (20+1) + (10+1) + (4+1) + (1+1)
  EXPECT_EQ(o.reuse, (std::map<ReuseKind, std::size_t>{
                         {ReuseKind::Fresh, 35}, {ReuseKind::InternalDependency, 3}, {ReuseKind::Opportunistic, 1}}));
}

TEST(PoolR7, OpportunisticOffUsesInternalDependencyEvenWhenTheFreeExecuted) {
  const auto o = explore_pool(policy(true, false, true), opportunistic_program, none);
  EXPECT_EQ(o.schedules, 39u);
  EXPECT_EQ(o.reuse, (std::map<ReuseKind, std::size_t>{{ReuseKind::Fresh, 35}, {ReuseKind::InternalDependency, 4}}));
}

TEST(PoolR7, InternalDependenciesOffReusesOnlyAnExecutedFree) {
  const auto o = explore_pool(policy(true, true, false), opportunistic_program, none);
  EXPECT_EQ(o.schedules, 36u);  // 20 + 10 + 4 + (1+1)
  EXPECT_EQ(o.reuse, (std::map<ReuseKind, std::size_t>{{ReuseKind::Fresh, 35}, {ReuseKind::Opportunistic, 1}}));
}

TEST(PoolR7, OpportunisticAndInternalOffNeverReuseAcrossStreams) {
  const auto o = explore_pool(policy(true, false, false), opportunistic_program, none);
  EXPECT_EQ(o.schedules, 35u);  // 20 + 10 + 4 + 1
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh}));
}

// A is allocated and freed on s0, the host syncs s0, s1 allocates B.
AllocationIndex host_sync_program(DeviceModel& m) {
  const auto a = m.alloc(s0, 256, "A");
  m.free(s0, a->ptr, "free A");
  m.sync_stream(s0);
  const auto b = m.alloc(s1, 256, "B");
  m.free(s1, b->ptr, "free B");
  return b->allocation;
}

TEST(PoolR7, ReleaseThresholdZeroReleasesTheRangeAtTheSync) {
  std::set<std::uint64_t> ptrs;
  const auto o = explore_pool(
      PoolPolicy{},
      [&](DeviceModel& m) {
        const auto id = host_sync_program(m);
        ptrs.insert(m.allocation_range(id).lo);
        return id;
      },
      none);
  EXPECT_EQ(o.schedules, 1u);  // no reusable range: the released bytes are handed out as fresh
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh}));
  EXPECT_EQ(ptrs, (std::set{kBase}));
}

TEST(PoolR7, ReleaseThresholdAboveTheFreedBytesKeepsTheRangeForHostSyncedReuse) {
  std::set<std::uint64_t> ptrs;
  const auto o = explore_pool(
      policy(true, true, true, 256),
      [&](DeviceModel& m) {
        const auto id = host_sync_program(m);
        ptrs.insert(m.allocation_range(id).lo);
        return id;
      },
      none);
  EXPECT_EQ(o.schedules, 2u);  // fresh (next address) | host-synced (A's address)
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh, ReuseKind::HostSynced}));
  EXPECT_EQ(ptrs, (std::set{kBase, kBase + 256}));
}

TEST(PoolR7, HostSyncedReuseIsAllowedWithEverySwitchOff) {
  const auto o = explore_pool(policy(false, false, false, std::uint64_t{1} << 20), host_sync_program, none);
  EXPECT_EQ(o.schedules, 2u);
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh, ReuseKind::HostSynced}));
}

TEST(PoolR7, SameStreamReuseIsAllowedWithEverySwitchOff) {
  const auto o = explore_pool(
      policy(false, false, false),
      [](DeviceModel& m) {
        const auto a = m.alloc(s0, 256, "A");
        m.free(s0, a->ptr, "free A");
        const auto b = m.alloc(s0, 256, "B");
        m.free(s0, b->ptr, "free B");
        return b->allocation;
      },
      none);
  EXPECT_EQ(o.schedules, 2u);  // one stream: fresh | same stream
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh, ReuseKind::SameStream}));
}

// A reader on s1 that the free on s0 does not wait for: a racing use after
// free; if s0 then reuses A's bytes, every op of B on them (alloc, write,
// free) is a reuse race with the reader. After the sync, pending are s1#0
// and s0#1..s0#4: 5 orders per pool answer, 10 in all.
TEST(PoolR7, FreeWithoutWaitingForTheReaderRacesAndReuseRaces) {
  const auto o = explore_pool(
      PoolPolicy{},
      [](DeviceModel& m) {
        const auto a = m.alloc(s0, 256, "A");
        m.sync_device();
        m.launch(s1, {rd(a->ptr, 256)}, "reader");
        m.free(s0, a->ptr, "free A");
        const auto b = m.alloc(s0, 256, "B");
        m.launch(s0, {wr(b->ptr, 256)}, "write B");
        m.free(s0, b->ptr, "free B");
        return b->allocation;
      },
      [](const DeviceModel& m) {
        const ByteRange a{kBase, kBase + 256};
        std::vector<F> f{F{FindingKind::UseAfterFree, {s1, 0}, OpRef{s0, 1}, {a}, false}};
        if (m.allocation_reuse(AllocationIndex{1}) == ReuseKind::SameStream)
          for (std::uint32_t i : {2u, 3u, 4u})
            f.push_back(F{FindingKind::ReuseRace, {s1, 0}, OpRef{s0, i}, {a}, false});
        return f;
      });
  EXPECT_EQ(o.schedules, 10u);
  EXPECT_EQ(o.reuse, (std::map<ReuseKind, std::size_t>{{ReuseKind::Fresh, 5}, {ReuseKind::SameStream, 5}}));
}

TEST(PoolR7, FreeThatWaitsForTheReaderIsSafeToReuse) {
  const auto o = explore_pool(
      PoolPolicy{},
      [](DeviceModel& m) {
        const auto a = m.alloc(s0, 256, "A");
        m.sync_device();
        m.launch(s1, {rd(a->ptr, 256)}, "reader");
        const auto e = m.create_event();
        m.record(e, s1);
        m.wait(s0, e);
        m.free(s0, a->ptr, "free A");
        const auto b = m.alloc(s0, 256, "B");
        m.launch(s0, {wr(b->ptr, 256)}, "write B");
        m.free(s0, b->ptr, "free B");
        return b->allocation;
      },
      none);
  EXPECT_EQ(o.schedules, 2u);  // total order; fresh | same stream
  EXPECT_EQ(o.kinds(), (std::set{ReuseKind::Fresh, ReuseKind::SameStream}));
}

// X is written on s0 and A freed there; s1 allocates B (fresh | internal
// dependency on A's free) and reads X. The read is ordered after the write
// only through the pool-inserted wait, which user code must not rely on:
// a race in both cases. Fresh: s0's 2 ops and s1's 3 unordered, C(5,2) =
// 10; internal dependency: s1 waits for all of s0, 1. Total 11.
TEST(PoolR7, AccessOrderedOnlyThroughAPoolInsertedWaitIsReported) {
  const auto o = explore_pool(
      PoolPolicy{},
      [](DeviceModel& m) {
        const auto x = m.alloc(s0, 256, "X");
        const auto a = m.alloc(s0, 256, "A");
        m.sync_device();
        m.launch(s0, {wr(x->ptr, 256)}, "write X");
        m.free(s0, a->ptr, "free A");
        const auto b = m.alloc(s1, 256, "B");
        m.launch(s1, {rd(x->ptr, 256)}, "read X");
        m.free(s1, b->ptr, "free B");
        return b->allocation;
      },
      [](const DeviceModel&) {
        return std::vector<F>{F{FindingKind::DataRace, {s0, 2}, OpRef{s1, 1}, {{kBase, kBase + 256}}, false},
                              F{FindingKind::Leak, {s0, 0}, std::nullopt, {{kBase, kBase + 256}}, false}};
      });
  EXPECT_EQ(o.schedules, 11u);
  EXPECT_EQ(o.reuse, (std::map<ReuseKind, std::size_t>{{ReuseKind::Fresh, 10}, {ReuseKind::InternalDependency, 1}}));
}

TEST(PoolFindings, UseBeforeReady) {
  // Alloc on s0, write on s1 without a wait; the free waits for the write.
  // s0#0 and s1#0 unordered, both before s0#1: 2 orders.
  const auto o = explore_pool(
      PoolPolicy{},
      [](DeviceModel& m) {
        const auto a = m.alloc(s0, 256, "A");
        m.launch(s1, {wr(a->ptr, 256)}, "too early");
        const auto e = m.create_event();
        m.record(e, s1);
        m.wait(s0, e);
        m.free(s0, a->ptr, "free A");
        return a->allocation;
      },
      [](const DeviceModel&) {
        return std::vector<F>{F{FindingKind::UseBeforeReady, {s0, 0}, OpRef{s1, 0}, {{kBase, kBase + 256}}, false}};
      });
  EXPECT_EQ(o.schedules, 2u);
}

TEST(PoolFindings, DefiniteUseAfterFree) {
  // The kernel names the freed allocation explicitly, after a synced free.
  std::string report;
  const auto o = explore_pool(
      PoolPolicy{},
      [&](DeviceModel& m) {
        const auto a = m.alloc(s0, 256, "A");
        m.free(s0, a->ptr, "free A");
        m.sync_stream(s0);
        m.launch(s1, {KernelAccess{a->ptr, 64, Access::Read, a->allocation.value}}, "stale read");
        report = format(m, m.findings().at(0));
        return a->allocation;
      },
      [](const DeviceModel&) {
        return std::vector<F>{F{FindingKind::UseAfterFree, {s0, 1}, OpRef{s1, 0}, {{kBase, kBase + 64}}, true}};
      });
  EXPECT_EQ(o.schedules, 1u);  // the sync completed s0; only s1#0 is left
  EXPECT_EQ(report.rfind("use after free (definite): s0#1 free \"free A\" and s1#0 kernel \"stale read\"", 0), 0u)
      << report;
}

TEST(PoolFindings, LeakNamesTheAllocationAndTheRequestedBytes) {
  std::string report;
  const auto o = explore_pool(
      PoolPolicy{}, [&](DeviceModel& m) { return m.alloc(s0, 100, "A")->allocation; },
      [&](const DeviceModel& m) {
        report = format(m, m.findings().at(0));
        return std::vector<F>{F{FindingKind::Leak, {s0, 0}, std::nullopt, {{kBase, kBase + 100}}, false}};
      });
  EXPECT_EQ(o.schedules, 1u);
  EXPECT_EQ(report,
            "leak (warning): s0#0 alloc \"A\" is never freed; bytes [0x100000, 0x100064)\n"
            "  fix: deallocate the block before the program ends");
}

// The pool's two indexes (pool.h): containing() answers the newest
// allocation over a byte -- a sub-block inside its parent, a reuse over the
// block it reuses, a freed block while nothing took its bytes (a stale
// pointer), whether found among the newest or in the index -- and
// live_at() the live pool or host allocation starting at an
// address, never a sub-block, never a freed one, and not forgotten when an
// older occupant of its range is freed again.
TEST(PoolIndex, ContainingAnswersTheNewestAllocationAndLiveAtTheLiveOneAtAnAddress) {
  HbState hb;
  const StreamIndex s = hb.create_stream("s");
  ReplayChooser chooser(std::string_view{""});
  Pool pool(PoolPolicy{});
  const auto a = pool.place(s, 512, hb, chooser);
  ASSERT_TRUE(a);
  const std::uint64_t lo = pool.allocation(*a).range.lo;
  ASSERT_EQ(lo, kBase);
  const AllocationIndex sub = pool.sub_allocated(*a, ByteRange{lo + 128, lo + 256}, 128, s);

  EXPECT_EQ(pool.containing(lo), *a);
  EXPECT_EQ(pool.containing(lo + 127), *a);
  EXPECT_EQ(pool.containing(lo + 128), sub);
  EXPECT_EQ(pool.containing(lo + 255), sub);
  EXPECT_EQ(pool.containing(lo + 256), *a);
  EXPECT_THROW(pool.containing(lo - 1), std::invalid_argument);
  EXPECT_THROW(pool.containing(pool.allocation(*a).range.hi), std::invalid_argument);
  EXPECT_EQ(pool.live_at(lo), a);
  EXPECT_EQ(pool.live_at(lo + 128), std::nullopt) << "a sub-block is not a live pool allocation";

  const OpRef free_op{s, 0};
  pool.freed(*a, free_op);
  EXPECT_EQ(pool.live_at(lo), std::nullopt);
  EXPECT_EQ(pool.containing(lo), *a) << "a stale pointer still means the freed block";

  const auto b = pool.place(s, 512, hb, chooser, lo);  // the same-stream reuse of a's range, forced
  ASSERT_TRUE(b);
  ASSERT_EQ(pool.allocation(*b).range.lo, lo);
  EXPECT_EQ(pool.containing(lo), *b);
  EXPECT_EQ(pool.containing(lo + 128), *b) << "the reuse took over the sub-block's bytes too";
  EXPECT_EQ(pool.live_at(lo), b);
  pool.freed(*a, free_op);  // a again: b stays live at lo
  EXPECT_EQ(pool.live_at(lo), b);

  const AllocationIndex host = pool.host_allocated(64, s);
  const std::uint64_t host_lo = pool.allocation(host).range.lo;
  EXPECT_EQ(pool.live_at(host_lo), host);
  EXPECT_EQ(pool.containing(host_lo + 63), host);
  pool.host_freed(host, OpRef{s, 1});
  EXPECT_EQ(pool.live_at(host_lo), std::nullopt);
  EXPECT_EQ(pool.containing(host_lo), host);

  // Past the few newest allocations containing() scans first, its index
  // answers the same.
  for (int i = 0; i < 40; ++i) pool.host_allocated(64, s);
  EXPECT_EQ(pool.containing(lo), *b);
  EXPECT_EQ(pool.containing(lo + 128), *b);
  EXPECT_EQ(pool.containing(host_lo + 63), host);
  EXPECT_THROW(pool.containing(lo - 1), std::invalid_argument);
  EXPECT_EQ(pool.live_at(lo), b);
}

// A device that runs every op at once (a streamed check) leaves every free
// run, and each freed range then offers one reuse: place() counts the
// ranges that fit and finds the n-th in a tree. The options must be those
// a scan gives: the fitting ranges in freed order (not by address or
// size), after fresh memory, a range taken from keeping its place.
// A..E are made in address order; D, E (stream s) and B (stream t) are
// freed in that order, A and C too, but they are too small for 300 bytes.
TEST(PoolR7, EveryFreeRunTheOptionsAreTheFittingRangesInFreedOrder) {
  struct Placed {
    std::uint64_t ptr;
    ReuseKind reuse;
  };
  const auto run = [](std::uint32_t first, std::uint32_t second) {
    ReplayChooser chooser(std::vector<std::uint32_t>{first, second}, ReplayChooser::PastTheEnd::Refuse);
    DeviceModel m(chooser, PoolPolicy{}, DeviceProgress::AtOnce);
    const StreamIndex s = m.create_stream(), t = m.create_stream();
    std::vector<std::uint64_t> at;
    for (const std::uint64_t bytes : {256, 1024, 256, 512, 2048}) at.push_back(m.alloc(s, bytes, "x")->ptr);
    for (const std::size_t i : {3, 4}) EXPECT_TRUE(m.free(s, at[i], "free"));
    for (const std::size_t i : {1, 0, 2}) EXPECT_TRUE(m.free(t, at[i], "free"));
    const auto a = m.alloc(s, 300, "a");   // fresh, D, E or B
    const auto b = m.alloc(s, 1024, "b");  // fresh, what is left of E if a took its front, or B
    EXPECT_TRUE(chooser.exhausted());
    return std::pair{Placed{a->ptr, a->reuse}, Placed{b->ptr, b->reuse}};
  };
  constexpr std::uint64_t B = kBase + 256, D = B + 1024 + 256, E = D + 512, bump = E + 2048;
  const auto [fresh, after_fresh] = run(0, 2);
  EXPECT_EQ(fresh.ptr, bump);
  EXPECT_EQ(fresh.reuse, ReuseKind::Fresh);
  EXPECT_EQ(after_fresh.ptr, B);  // options: fresh, E, B
  EXPECT_EQ(after_fresh.reuse, ReuseKind::Opportunistic);
  const auto [d, e] = run(1, 1);
  EXPECT_EQ(d.ptr, D);
  EXPECT_EQ(d.reuse, ReuseKind::SameStream);
  EXPECT_EQ(e.ptr, E);
  const auto [front_of_e, rest_of_e] = run(2, 1);  // E's rest (1,536 bytes) stays before B
  EXPECT_EQ(front_of_e.ptr, E);
  EXPECT_EQ(rest_of_e.ptr, E + 512);
  EXPECT_EQ(rest_of_e.reuse, ReuseKind::SameStream);
  const auto [b, after_b] = run(3, 1);
  EXPECT_EQ(b.ptr, B);
  EXPECT_EQ(b.reuse, ReuseKind::Opportunistic);
  EXPECT_EQ(after_b.ptr, E);
}

// The counted candidates against the plain scan (Pool::scan_every_range):
// random programs over three streams (allocations of four sizes, frees of
// live ones on any stream, event records and waits, stream syncs and
// queries) under every policy and every way the device progresses, each
// run twice with one seed. Every choice (its options and answer) and every
// allocation (address and reuse kind) must be the same; a count or a pick
// that differs from the scan's changes the random chooser's later answers
// too.
TEST(PoolR7, CountedCandidatesAreTheScannedOnesInRandomPrograms) {
  const auto run = [](std::uint32_t bits, DeviceProgress progress, std::uint32_t seed, bool scan) {
    RandomChooser chooser(seed);
    DeviceModel m(chooser, PoolPolicy::from_bits(bits), progress);
    if (scan) m.scan_every_freed_range();
    const std::array<StreamIndex, 3> streams{m.create_stream(), m.create_stream(), m.create_stream()};
    const std::array<EventIndex, 2> events{m.create_event(), m.create_event()};
    std::mt19937 rng(seed * 7919 + bits);
    const auto any_stream = [&] { return streams[rng() % streams.size()]; };
    std::vector<std::uint64_t> live;
    std::vector<std::string> seen;
    for (int step = 0; step < 90; ++step) {
      const std::uint32_t roll = rng() % 10;
      if (roll < 4) {
        const std::uint64_t bytes = std::array<std::uint64_t, 4>{256, 300, 1024, 2048}[rng() % 4];
        const auto a = m.alloc(any_stream(), bytes, "a");
        if (!a) continue;
        live.push_back(a->ptr);
        seen.push_back(fmt::format("{:#x} {}", a->ptr, to_string(a->reuse)));
      } else if (roll < 7 && !live.empty()) {
        const std::size_t i = rng() % live.size();
        EXPECT_TRUE(m.free(any_stream(), live[i], "free"));
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (roll == 7) {
        m.record(events[rng() % 2], any_stream());
      } else if (roll == 8) {
        m.wait(any_stream(), events[rng() % 2]);
      } else if (rng() % 2 == 0) {
        m.sync_stream(any_stream());
      } else {
        (void)m.query_event(events[rng() % 2]);
      }
    }
    for (const Choice& c : chooser.taken()) seen.push_back(fmt::format("choice {}/{}", c.taken, c.options));
    return seen;
  };
  std::size_t placed = 0;
  for (std::uint32_t bits = 0; bits < 16; ++bits)
    for (const DeviceProgress progress :
         {DeviceProgress::EveryStep, DeviceProgress::OnObservation, DeviceProgress::AtOnce})
      for (std::uint32_t seed = 1; seed <= 6; ++seed) {
        const std::vector<std::string> counted = run(bits, progress, seed, false);
        EXPECT_EQ(counted, run(bits, progress, seed, true))
            << "policy " << bits << ", progress " << static_cast<int>(progress) << ", seed " << seed;
        placed += counted.size();
      }
  EXPECT_GT(placed, 16u * 3 * 6 * 20);  // the programs allocate and choose
}

// A retention pass (Pool::drop_unnamed) keeps, of the freed allocations,
// those a later check asks about. A is freed and its bytes handed to B on
// the same stream; B is freed too; a stale access through A on s1 leaves A
// in the shadow (as the bytes' last write, or as a racing read). Neither
// is live and no caller names either: A stays for the shadow's sake, B as
// the newest allocation over the bytes, which a raw-pointer read on s2
// means. That read's check asks for both (B's fence, then whether the
// shadow's A access is B's), so a dropped one would be an error.
void expect_the_shadow_and_the_newest_kept(Access stale) {
  RandomChooser chooser(1);
  DeviceModel m(chooser, PoolPolicy{}, DeviceProgress::AtOnce);
  m.keep_no_log();
  const StreamIndex s = m.create_stream(), t = m.create_stream(), u = m.create_stream();
  const auto a = m.alloc(s, 256, "a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(m.free(s, a->ptr, "free a"));
  const auto b = m.alloc(s, 256, "b", a->ptr);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->ptr, a->ptr);  // the same stream's reuse
  ASSERT_TRUE(m.free(s, b->ptr, "free b"));
  m.launch(t, {KernelAccess{a->ptr, 256, stale, a->allocation.value}}, "stale");
  const std::size_t before = m.findings().size();
  m.compact();
  EXPECT_NO_THROW(m.launch(u, {KernelAccess{b->ptr, 256, Access::Read, std::nullopt}}, "late"));
  EXPECT_GT(m.findings().size(), before);  // the read races with the stale access or b's free
  EXPECT_EQ(m.pool().dropped_count(), 0u);
}

TEST(PoolRetention, KeepsWhatTheShadowNamesAndTheNewestOverEachByte) {
  expect_the_shadow_and_the_newest_kept(Access::Write);
  expect_the_shadow_and_the_newest_kept(Access::Read);
}

TEST(PoolRetention, DropsAFreedAllocationNothingNames) {
  RandomChooser chooser(1);
  DeviceModel m(chooser, PoolPolicy{}, DeviceProgress::AtOnce);
  m.keep_no_log();
  const StreamIndex s = m.create_stream();
  const auto a = m.alloc(s, 256, "a");
  ASSERT_TRUE(a);
  ASSERT_TRUE(m.free(s, a->ptr, "free a"));
  const auto b = m.alloc(s, 256, "b", a->ptr);
  ASSERT_TRUE(b);
  m.compact();
  EXPECT_EQ(m.pool().dropped_count(), 1u);  // a: freed, its bytes now b's, its free b's fence (an op)
  EXPECT_THROW((void)m.pool().allocation(a->allocation), std::logic_error);
  EXPECT_TRUE(m.pool().allocation(b->allocation).fence);
  m.finish();
  ASSERT_EQ(m.findings().size(), 1u);  // b leaks: the live one is kept
  EXPECT_EQ(m.findings()[0].kind, FindingKind::Leak);
}

}  // namespace
}  // namespace streamcheck::sim::test
