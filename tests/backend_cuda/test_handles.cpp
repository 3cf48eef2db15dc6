// Ref/owner handle rules that hold without a GPU: refs are never null, and
// null raw handles are refused before the driver is touched (on a machine
// without a driver, touching it would throw instead).
#include <gtest/gtest.h>

#include <type_traits>

#include "backend_cuda/handles.h"
#include "backend_cuda/launch_resources.h"

namespace streamcheck::cuda {
namespace {

static_assert(std::is_trivially_copyable_v<StreamRef>);
static_assert(std::is_trivially_copyable_v<EventRef>);
static_assert(!std::is_constructible_v<StreamRef, std::nullptr_t>);
static_assert(!std::is_constructible_v<StreamRef, int>);
static_assert(!std::is_constructible_v<EventRef, std::nullptr_t>);
static_assert(!std::is_copy_constructible_v<Stream> && std::is_move_constructible_v<Stream>);
static_assert(!std::is_copy_constructible_v<Event> && std::is_move_constructible_v<Event>);

CUstream fake_stream() { return reinterpret_cast<CUstream>(std::uintptr_t{0x1000}); }
CUevent fake_event() { return reinterpret_cast<CUevent>(std::uintptr_t{0x2000}); }

void expect_refused(const Status& st, const char* what) {
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_NE(st.error().message.find(what), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("before any driver call"), std::string::npos) << st.error().message;
}

TEST(CudaHandles, RefsRejectNull) {
  EXPECT_FALSE(StreamRef::from(nullptr));
  EXPECT_FALSE(EventRef::from(nullptr));
  ASSERT_TRUE(StreamRef::from(fake_stream()));
  EXPECT_EQ(StreamRef::from(fake_stream())->get(), fake_stream());
}

TEST(CudaHandles, NullStreamRefusedBeforeDriver) {
  expect_refused(record_event(fake_event(), nullptr), "null stream");
  expect_refused(wait_event(nullptr, fake_event()), "null stream");
  expect_refused(synchronize_stream(nullptr), "null stream");
  auto q = query_stream(nullptr);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().kind, ErrorKind::StreamMisuse);
}

TEST(CudaHandles, NullEventRefusedBeforeDriver) {
  expect_refused(record_event(nullptr, fake_stream()), "null event");
  expect_refused(wait_event(fake_stream(), nullptr), "null event");
  expect_refused(synchronize_event(nullptr), "null event");
  auto q = query_event(nullptr);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().kind, ErrorKind::StreamMisuse);
}

TEST(CudaHandles, DriverAbsenceIsExplained) {
  std::string why;
  const Driver* d = Driver::get(&why);
  if (d) {
    EXPECT_GE(d->version(), 12000);
  } else {
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(driver(), std::runtime_error);
  }
}

}  // namespace
}  // namespace streamcheck::cuda
