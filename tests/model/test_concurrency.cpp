// The core called from several host threads at once, on real std::mutex and
// std::atomic (the types a real backend hands it). Run under the `tsan`
// preset, this is where ThreadSanitizer looks for data races in the core; in
// every build it checks that the accounting (P3) and the event count (P9)
// come out exact after concurrent allocate / prepare / finish / deallocate /
// reap. (Exploring these interleavings one lock step at a time is P8, not
// done yet: see docs/DESIGN.md "Not yet".)
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backend_sim/null_backend.h"
#include "model/launch_recorder.h"
#include "model/resource.h"

namespace streamcheck {
namespace {

using sim::NullBackend;

constexpr int kThreads = 4;
constexpr int kIterations = 400;

TEST(Concurrency, ResourceKeepsExactAccountsUnderConcurrentCalls) {
  NullBackend backend;
  Resource<NullBackend> r(backend);
  // One block every thread reads and writes, so the threads meet on its
  // live entry; each thread also allocates and frees its own.
  const DeviceBlock shared = r.allocate(4096, StreamId{0}).value();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const StreamId mine{static_cast<std::uint32_t>(t + 1)};
      for (int i = 0; i < kIterations; ++i) {
        const Access a = i % 5 == 0 ? Access::Write : Access::Read;
        if (!r.prepare_block_use(BlockId::of(shared), mine, a) || !r.finish_block_use(BlockId::of(shared), mine, a))
          ++failures;
        auto own = r.allocate(256 + 64 * static_cast<std::size_t>(t), mine);
        if (!own) {
          ++failures;
          continue;
        }
        LaunchRecorder<> rec(mine, RecorderMode::Strict);
        rec.read_write(&own.value());
        rec.read(&shared);
        if (!rec.preflight(r) || !rec.commit(r)) ++failures;
        if (!r.deallocate(own.value())) ++failures;
        if (i % 16 == 0 && !r.reap_pending()) ++failures;
      }
    });
  for (auto& th : threads) th.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(r.live_block_count(), 1u);
  EXPECT_EQ(r.live_bytes(), 4096u);
  EXPECT_EQ(r.pending_free_bytes(), r.pending_per_stream_total());
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.bytes_outstanding(), 4096u);
  // At most one read event per stream (read subsumption) plus last_write.
  const auto uses = r.pending_use_event_count(shared.ptr);
  ASSERT_TRUE(uses.has_value());
  EXPECT_LE(*uses, 1u + kThreads);
  EXPECT_EQ(backend.live_event_count(), *uses);
  ASSERT_TRUE(r.deallocate(shared).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
  EXPECT_EQ(backend.live_event_count(), 0u);  // P9: every event given back
}

}  // namespace
}  // namespace streamcheck
