// The strong ids: a stream, an event, an allocation and a host thread are not
// interchangeable, and no plain integer becomes one implicitly.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "backend_sim/device_model.h"

namespace streamcheck::sim::test {
namespace {

static_assert(!std::is_convertible_v<std::uint32_t, StreamIndex>, "no implicit id from an integer");
static_assert(!std::is_convertible_v<StreamIndex, std::uint32_t>, "no implicit integer from an id");
static_assert(!std::is_convertible_v<EventIndex, StreamIndex>, "ids of different kinds do not mix");
static_assert(!std::is_convertible_v<StreamIndex, EventIndex>);
static_assert(!std::is_convertible_v<AllocationIndex, StreamIndex>);
static_assert(!std::is_convertible_v<HostThread, StreamIndex>);
static_assert(std::is_trivially_copyable_v<StreamIndex> && sizeof(StreamIndex) == sizeof(std::uint32_t));

// record(event, stream) and wait(stream, event) cannot be called with their
// arguments swapped.
static_assert(std::is_invocable_v<decltype(&DeviceModel::record), DeviceModel&, EventIndex, StreamIndex>);
static_assert(!std::is_invocable_v<decltype(&DeviceModel::record), DeviceModel&, StreamIndex, EventIndex>);
static_assert(std::is_invocable_v<decltype(&DeviceModel::wait), DeviceModel&, StreamIndex, EventIndex>);
static_assert(!std::is_invocable_v<decltype(&DeviceModel::wait), DeviceModel&, EventIndex, StreamIndex>);
static_assert(!std::is_invocable_v<decltype(&DeviceModel::record), DeviceModel&, std::uint32_t, std::uint32_t>);

TEST(Ids, CompareByValueAndOrderOpRefsByStreamThenIndex) {
  EXPECT_EQ(StreamIndex{3}, StreamIndex{3});
  EXPECT_LT(EventIndex{1}, EventIndex{2});
  EXPECT_EQ(AllocationIndex{7}.value, 7u);
  EXPECT_LT((OpRef{StreamIndex{0}, 9}), (OpRef{StreamIndex{1}, 0}));
  EXPECT_LT((OpRef{StreamIndex{1}, 0}), (OpRef{StreamIndex{1}, 1}));
}

TEST(Ids, TheModelNumbersEachKindFromZeroInCreationOrder) {
  ReplayChooser chooser(std::string_view{""});
  DeviceModel m(chooser);
  EXPECT_EQ(m.create_stream(), StreamIndex{0});
  EXPECT_EQ(m.create_stream(), StreamIndex{1});
  EXPECT_EQ(m.create_event(), EventIndex{0});
  EXPECT_EQ(m.host_thread(), HostThread{0});
  EXPECT_EQ(m.create_host_thread(), HostThread{1});
  const auto a = m.alloc(StreamIndex{1}, 100);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->allocation, AllocationIndex{0});
  EXPECT_EQ(m.stream_name(StreamIndex{1}), "s1");
}

// A log entry keeps its op index, event, device or release in one word
// (hb_state.h): each kind reads back what it was made with, and a kind
// without one of them reads the default, never another kind's word.
TEST(LogEntries, EachKindReadsBackWhatItWasMadeWithAndNothingElse) {
  ReplayChooser chooser(std::string_view{""});
  DeviceModel m(chooser);
  const StreamIndex s0 = m.create_stream(), s1 = m.create_stream();
  const EventIndex e0 = m.create_event(), e1 = m.create_event();
  const OpRef k = m.launch(s1, {}, "k");
  m.record(e1, s1);
  m.wait(s0, e1);
  m.sync_event(e1);
  m.sync_device(0);
  const std::size_t release = m.host_release();
  m.host_acquire(release);
  (void)e0;
  const auto& log = m.log();
  ASSERT_EQ(log.size(), 7u);
  EXPECT_EQ(log[0].kind(), LogEntry::Kind::Enqueue);
  EXPECT_EQ(log[0].op(), k);
  EXPECT_EQ(log[0].stream, s1);
  EXPECT_EQ(log[0].event(), EventIndex{});
  EXPECT_EQ(log[1].kind(), LogEntry::Kind::Record);
  EXPECT_EQ(log[1].event(), e1);
  EXPECT_EQ(log[1].stream, s1);
  EXPECT_EQ(log[1].op(), OpRef{});
  EXPECT_EQ(log[2].kind(), LogEntry::Kind::Wait);
  EXPECT_EQ(log[2].event(), e1);
  EXPECT_EQ(log[2].stream, s0);
  EXPECT_EQ(log[3].kind(), LogEntry::Kind::SyncEvent);
  EXPECT_EQ(log[3].event(), e1);
  EXPECT_EQ(log[4].kind(), LogEntry::Kind::SyncDevice);
  EXPECT_EQ(log[4].device(), 0u);
  EXPECT_EQ(log[4].event(), EventIndex{});
  EXPECT_EQ(log[5].kind(), LogEntry::Kind::HostRelease);
  EXPECT_FALSE(log[5].released_by().has_value());
  EXPECT_EQ(log[6].kind(), LogEntry::Kind::HostAcquire);
  EXPECT_EQ(log[6].released_by(), release);
  EXPECT_EQ(log[6].device(), 0u);
  EXPECT_EQ(log[6].event(), EventIndex{});

  EXPECT_EQ(LogEntry::sync_device(HostThread{0}, 3).device(), 3u);
  EXPECT_EQ(LogEntry::host_call(LogEntry::Kind::SyncStream, HostThread{0}, s1, EventIndex{5}).event(), EventIndex{})
      << "a stream synchronize names no event";
  EXPECT_THROW((void)LogEntry::host_acquire(HostThread{0}, std::size_t{1} << 32), std::length_error)
      << "a release past the 2^32nd entry does not fit the entry's word";
}

// A log entry keeps its kind and host thread in one word (hb_state.h): each
// reads back its own, for every kind and host threads up to the last one a
// run may make.
TEST(LogEntries, KindAndHostThreadShareAWordAndEachReadsBackItsOwn) {
  const LogEntry::Kind kinds[] = {LogEntry::Kind::Record,     LogEntry::Kind::Wait,      LogEntry::Kind::SyncStream,
                                  LogEntry::Kind::SyncEvent,  LogEntry::Kind::QueryDone, LogEntry::Kind::QueryNotDone,
                                  LogEntry::Kind::HostRelease};
  for (const std::uint32_t host : {0u, 1u, 17u, LogEntry::kMaxHostThreads - 1})
    for (const LogEntry::Kind kind : kinds) {
      const LogEntry e = LogEntry::host_call(kind, HostThread{host}, StreamIndex{2}, EventIndex{3});
      EXPECT_EQ(e.kind(), kind) << "host " << host;
      EXPECT_EQ(e.host(), HostThread{host}) << "kind " << static_cast<int>(kind);
      EXPECT_EQ(e.stream, StreamIndex{2});
    }
  const LogEntry enqueue = LogEntry::enqueue(HostThread{LogEntry::kMaxHostThreads - 1}, OpRef{StreamIndex{4}, 9});
  EXPECT_EQ(enqueue.kind(), LogEntry::Kind::Enqueue);
  EXPECT_EQ(enqueue.host(), HostThread{LogEntry::kMaxHostThreads - 1});
  EXPECT_EQ(enqueue.op(), (OpRef{StreamIndex{4}, 9}));
  const LogEntry acquire = LogEntry::host_acquire(HostThread{6}, 41);
  EXPECT_EQ(acquire.kind(), LogEntry::Kind::HostAcquire);
  EXPECT_EQ(acquire.host(), HostThread{6});
  EXPECT_EQ(LogEntry::sync_device(HostThread{7}, 2).host(), HostThread{7});
}

// A range kept in 32-bit words reads back every bit of both ends, above
// 4 GiB too.
TEST(PackedByteRanges, ReadBackBothEndsWhole) {
  for (const ByteRange r : {ByteRange{0, 0}, ByteRange{1, 4096}, ByteRange{0xffff'ffffull, 0x1'0000'0001ull},
                            ByteRange{0x7fff'0000'1234'5678ull, 0xffff'ffff'ffff'fffeull}})
    EXPECT_EQ(PackedByteRange(r).get(), r) << r.lo << ".." << r.hi;
}

// The race checker keeps each op's accesses in one deque, found by the
// op's stamp (race_checker.h): every op, on any stream and enqueued in any
// interleaving, reads back exactly its own accesses -- their bytes, kind and
// allocation -- and an op with none reads back none.
TEST(RaceCheckerRecords, EachOpReadsBackItsOwnAccessesWithTheirKindAndAllocation) {
  ReplayChooser chooser(std::string_view{""});
  DeviceModel m(chooser);
  const StreamIndex s0 = m.create_stream(), s1 = m.create_stream();
  const auto a = m.alloc(s0, 256), b = m.alloc(s1, 512), c = m.alloc(s1, 64);
  ASSERT_TRUE(a && b && c);
  const auto access = [](const AllocResult& r, std::uint64_t offset, std::uint64_t bytes, Access how) {
    return KernelAccess{r.ptr + offset, bytes, how, r.allocation.value};
  };
  const std::vector<std::vector<KernelAccess>> launches = {
      {access(*a, 0, 256, Access::Write)},
      {access(*b, 8, 16, Access::Read), access(*c, 0, 64, Access::ReadWrite)},
      {},
      {access(*c, 4, 4, Access::Read), access(*a, 128, 8, Access::ReadWrite), access(*b, 0, 512, Access::Write)},
      {access(*a, 0, 1, Access::Read)},
  };
  std::vector<OpRef> ops;
  for (std::size_t i = 0; i < launches.size(); ++i)
    ops.push_back(m.launch(i % 2 ? s1 : s0, launches[i], "k" + std::to_string(i)));
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const std::vector<OpAccess> got = m.accesses(ops[i]);
    ASSERT_EQ(got.size(), launches[i].size()) << "launch " << i;
    for (std::size_t j = 0; j < got.size(); ++j) {
      const KernelAccess& want = launches[i][j];
      EXPECT_EQ(got[j].range, (ByteRange{want.ptr, want.ptr + want.bytes})) << "launch " << i << " access " << j;
      EXPECT_EQ(got[j].access, want.access) << "launch " << i << " access " << j;
      EXPECT_EQ(got[j].allocation, AllocationIndex{*want.allocation}) << "launch " << i << " access " << j;
    }
  }
  EXPECT_TRUE(m.accesses(OpRef{s0, 99}).empty()) << "an op never enqueued has no accesses";
}

// The backend's origin lines (OpLines): a retention pass drops a prefix of
// each stream's lines but those of the ops it keeps; later lines are set
// and read as before, and a line for a dropped op is an internal error.
TEST(OpLines, ADropKeepsTheKeptOpsLinesAndTheRest) {
  OpLines lines;
  const StreamIndex a{0}, b{1};
  for (std::uint32_t i = 0; i < 6; ++i) lines.set(OpRef{a, i}, 10 + static_cast<int>(i));
  lines.set(OpRef{b, 0}, 99);
  lines.drop({4, 0}, [&](OpRef op) { return op == OpRef{a, 1}; });
  EXPECT_EQ(lines.get(OpRef{a, 1}), 11);
  EXPECT_EQ(lines.get(OpRef{a, 0}), std::nullopt);
  EXPECT_EQ(lines.get(OpRef{a, 3}), std::nullopt);
  EXPECT_EQ(lines.get(OpRef{a, 4}), 14);
  EXPECT_EQ(lines.get(OpRef{b, 0}), 99);
  lines.set(OpRef{a, 6}, 16);
  EXPECT_EQ(lines.get(OpRef{a, 6}), 16);
  EXPECT_THROW(lines.set(OpRef{a, 2}, 12), std::logic_error);
  // A second pass keeps only what it names: the first pass's kept line goes.
  lines.drop({6, 1}, [](OpRef) { return false; });
  EXPECT_EQ(lines.get(OpRef{a, 1}), std::nullopt);
  EXPECT_EQ(lines.get(OpRef{b, 0}), std::nullopt);
  EXPECT_EQ(lines.get(OpRef{a, 6}), 16);
}

}  // namespace
}  // namespace streamcheck::sim::test
