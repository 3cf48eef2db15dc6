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
  EXPECT_EQ(log[0].kind, LogEntry::Kind::Enqueue);
  EXPECT_EQ(log[0].op(), k);
  EXPECT_EQ(log[0].stream, s1);
  EXPECT_EQ(log[0].event(), EventIndex{});
  EXPECT_EQ(log[1].kind, LogEntry::Kind::Record);
  EXPECT_EQ(log[1].event(), e1);
  EXPECT_EQ(log[1].stream, s1);
  EXPECT_EQ(log[1].op(), OpRef{});
  EXPECT_EQ(log[2].kind, LogEntry::Kind::Wait);
  EXPECT_EQ(log[2].event(), e1);
  EXPECT_EQ(log[2].stream, s0);
  EXPECT_EQ(log[3].kind, LogEntry::Kind::SyncEvent);
  EXPECT_EQ(log[3].event(), e1);
  EXPECT_EQ(log[4].kind, LogEntry::Kind::SyncDevice);
  EXPECT_EQ(log[4].device(), 0u);
  EXPECT_EQ(log[4].event(), EventIndex{});
  EXPECT_EQ(log[5].kind, LogEntry::Kind::HostRelease);
  EXPECT_FALSE(log[5].released_by().has_value());
  EXPECT_EQ(log[6].kind, LogEntry::Kind::HostAcquire);
  EXPECT_EQ(log[6].released_by(), release);
  EXPECT_EQ(log[6].device(), 0u);
  EXPECT_EQ(log[6].event(), EventIndex{});

  EXPECT_EQ(LogEntry::sync_device(HostThread{0}, 3).device(), 3u);
  EXPECT_EQ(LogEntry::host_call(LogEntry::Kind::SyncStream, HostThread{0}, s1, EventIndex{5}).event(), EventIndex{})
      << "a stream synchronize names no event";
  EXPECT_THROW((void)LogEntry::host_acquire(HostThread{0}, std::size_t{1} << 32), std::length_error)
      << "a release past the 2^32nd entry does not fit the entry's word";
}

}  // namespace
}  // namespace streamcheck::sim::test
