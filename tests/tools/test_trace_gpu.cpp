// The GPU agrees with the model on trace programs (docs/GPU.md "Trace
// programs replayed on the GPU"): each example's finding, with its first op
// held back, corrupts data on the GPU -- a read sees another write, or a
// live buffer ends holding another write than the last -- and its fixed
// variant reads and ends exactly as written. Needs a GPU: Skipped without
// one. The examples are read from STREAMCHECK_EXAMPLES_DIR (the
// environment variable, else the source tree's examples/).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "tools/trace.h"
#include "tools/trace_check.h"
#include "tools/trace_gpu.h"

namespace streamcheck::tools {
namespace {

constexpr std::uint32_t kRuns = 5;

/// `replay --backend cuda` of an example under the schedule of its first
/// finding (a clean one: its first execution), as tools/gpu_replay_examples.sh does.
GpuReplayResult replay_example(const std::string& file) {
  const char* dir = std::getenv("STREAMCHECK_EXAMPLES_DIR");
  const Trace trace = load_trace(std::string(dir ? dir : STREAMCHECK_EXAMPLES_DIR) + "/" + file);
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  o.max_schedules = 10000;
  const Report explored = explore_trace(trace, o);
  // A clean trace holds nothing back: no simulator report is needed.
  if (explored.findings.empty()) return replay_trace_on_gpu(trace, Report{}, o, kRuns);
  return replay_trace_on_gpu(trace, replay_trace(trace, explored.findings.front().schedule, o), o, kRuns);
}

struct Pair {
  const char* racy;
  const char* fixed;
};
/// What the racy example of a pair must show on the GPU.
enum class Shows : std::uint8_t {
  CorruptReads,
  /// An unread write/write race: the second write's check of what it
  /// overwrites, and the buffer's final contents.
  OverwriteAndFinalContents,
};

/// Replays both examples of `p`: the racy one must show `shows`, the fixed
/// one nothing. False, with `why`, when there is no GPU (nothing checked).
bool gpu_agrees_on(const Pair& p, Shows shows, std::string& why) {
  const GpuReplayResult racy = replay_example(p.racy);
  if (!racy.available) {
    why = racy.why;
    return false;
  }
  if (shows == Shows::CorruptReads) {
    EXPECT_GT(racy.runs_with_mismatches, 0u) << p.racy;
  } else {
    EXPECT_GT(racy.runs_with_mismatches, 0u) << p.racy;
    EXPECT_GT(racy.runs_with_wrong_final_contents, 0u) << p.racy;
  }
  const GpuReplayResult fixed = replay_example(p.fixed);
  EXPECT_EQ(fixed.mismatching_words, 0u) << p.fixed;
  EXPECT_EQ(fixed.wrong_final_words, 0u) << p.fixed;
  return true;
}

TEST(TraceGpuReplay, HostMemoryRacesCorruptReadsAndTheirFixesDoNot) {
  // R12: a host read before the copy landed (43), a refill under the upload
  // (45), a host function on the wrong stream (47).
  std::string why;
  for (const Pair p :
       {Pair{"43_d2h_read_before_sync.trace", "44_d2h_read_before_sync_fixed.trace"},
        Pair{"45_pinned_staging_refill.trace", "46_pinned_staging_refill_fixed.trace"},
        Pair{"47_host_function_reads_other_stream.trace", "48_host_function_reads_other_stream_fixed.trace"}})
    if (!gpu_agrees_on(p, Shows::CorruptReads, why)) GTEST_SKIP() << why;
}

TEST(TraceGpuReplay, UnreadWriteRacesShowAtTheOverwriteAndInTheFinalContents) {
  // Item 8: a write/write race (49) and a use before ready (51) that no
  // read observes: the second write finds what it overwrites is not the
  // write enqueued before it (each kernel write checks first), and a live
  // buffer ends holding the held-back write; the fixed variants show neither.
  std::string why;
  for (const Pair p : {Pair{"49_write_write_race_unread.trace", "50_write_write_race_unread_fixed.trace"},
                       Pair{"51_use_before_ready_unread.trace", "52_use_before_ready_unread_fixed.trace"}})
    if (!gpu_agrees_on(p, Shows::OverwriteAndFinalContents, why)) GTEST_SKIP() << why;
}

TEST(TraceGpuReplay, AHeldBackGiveBackIsAnOpOfItsStream) {
  // R10 on the GPU: 53's first op is a `subfree`, which the GPU numbers as
  // the simulator does; held back, the next block's writer overtakes it.
  // 55: the scratch pool's reuse under the held-back aux consumer.
  std::string why;
  for (const Pair p : {Pair{"53_free_list_of_destroyed_stream.trace", "54_free_list_of_destroyed_stream_fixed.trace"},
                       Pair{"55_scratch_pool_across_layers.trace", "56_scratch_pool_across_layers_fixed.trace"}})
    if (!gpu_agrees_on(p, Shows::CorruptReads, why)) GTEST_SKIP() << why;
}

/// The multi-device examples (R13): a record refused for the wrong device
/// leaves the slab's reuse unordered (57), a peer copy without a wait reads
/// before the write (59), a device sync of device 0 does not wait for
/// device 1's copy (61), device 1's pool hands out a block a peer copy of
/// device 0 still reads (71).
constexpr Pair kDevicePairs[] = {
    {"57_event_of_another_device.trace", "58_event_of_another_device_fixed.trace"},
    {"59_peer_copy_without_wait.trace", "60_peer_copy_without_wait_fixed.trace"},
    {"61_device_sync_of_the_wrong_device.trace", "62_device_sync_of_the_wrong_device_fixed.trace"},
    {"71_cross_device_pool_reuse.trace", "72_cross_device_pool_reuse_fixed.trace"}};

TEST(TraceGpuReplay, DevicesReplayAndTheirRacesShow) {
  // On whatever GPUs the machine has (one: every device shares it; two: one
  // each): each race corrupts a read when the simulator's first op is held
  // back; their fixes show nothing.
  std::string why;
  for (const Pair p : kDevicePairs)
    if (!gpu_agrees_on(p, Shows::CorruptReads, why)) GTEST_SKIP() << why;
}

TEST(TraceGpuReplay, DevicesReplayOnAGpuEach) {
  // R13 on two GPUs: each trace device on its own, peer copies across them.
  std::string why;
  const int gpus = available_gpus(&why);
  if (gpus < 2)
    GTEST_SKIP() << "needs two GPUs (one per trace device); this machine has " << gpus
                 << (why.empty() ? "" : ": " + why);
  for (const Pair p : kDevicePairs) {
    ASSERT_TRUE(gpu_agrees_on(p, Shows::CorruptReads, why)) << why;
    EXPECT_EQ(replay_example(p.fixed).gpus_used, 2u) << p.fixed;
  }
}

TEST(TraceGpuReplay, AGraphsBranchesRaceAtEachLaunch) {
  // R14b on the GPU: the launch runs the origin's nodes on the launch
  // stream and the joined branch's on a stream of its own, the captured
  // records and waits as real events; with the first write held back the
  // two branches' writes land in the other order and the read after the
  // launch sees it (65); with the fork after the first write, nothing (66).
  std::string why;
  if (!gpu_agrees_on(Pair{"65_graph_branches_unordered.trace", "66_graph_branches_unordered_fixed.trace"},
                     Shows::CorruptReads, why))
    GTEST_SKIP() << why;
}

TEST(TraceGpuReplay, TheDebugTierReportsAStaleWriteAtRunTime) {
  // `resource debug` on the GPU: DebugGuardResource over the core, its
  // canary and poison fills and checks real kernels (CudaGuardMemory). The
  // kernel that writes A through a stale pointer after its free lands in
  // the poison, and the tier's quarantine check reports it in every run, as
  // the simulator's note says (73); written before the free, nothing (74).
  const GpuReplayResult stale = replay_example("73_debug_tier_write_after_free.trace");
  if (!stale.available) GTEST_SKIP() << stale.why;
  ASSERT_EQ(stale.notes.size(), 1u);
  EXPECT_NE(stale.notes[0].find("line 12: write after free: 4096 byte(s) of A (freed on line 12)"), std::string::npos)
      << stale.notes[0];
  const GpuReplayResult fixed = replay_example("74_debug_tier_write_after_free_fixed.trace");
  EXPECT_TRUE(fixed.notes.empty()) << fixed.notes.front();
  EXPECT_EQ(fixed.mismatching_words, 0u);
  EXPECT_EQ(fixed.wrong_final_words, 0u);
}

}  // namespace
}  // namespace streamcheck::tools
