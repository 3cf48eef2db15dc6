// The strong ids: a stream, an event, an allocation and a host thread are not
// interchangeable, and no plain integer becomes one implicitly.
#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
}  // namespace streamcheck::sim::test
