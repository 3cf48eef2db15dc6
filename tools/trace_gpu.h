// Replaying a trace on real CUDA streams (`streamcheck replay FILE --backend
// cuda`): the trace runs on the GPU with the stamp kernels checking every
// read; the earlier op of each finding the simulator reports under the given
// schedule is held back, so that a race the model predicts shows as
// corrupted data on the hardware.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {

struct GpuReplayResult {
  bool available = false;  // false: no GPU (or built without CUDA); `why` says so
  std::string why;
  std::uint32_t runs = 0;
  std::uint32_t runs_with_mismatches = 0;
  std::uint64_t mismatching_words = 0;
  /// Runs that ended with a live buffer holding another write's stamp than
  /// the last one enqueued (a write/write race or a use before ready whose
  /// held-back write landed last), and those words over all runs.
  std::uint32_t runs_with_wrong_final_contents = 0;
  std::uint64_t wrong_final_words = 0;
  std::vector<std::string> notes;  // the first run's notes: resource calls refused, the debug tier's findings
  std::string device;
  std::uint32_t gpus_used = 0;  // 1, or one per device of the trace (R13)
};

/// Why the GPU replay cannot run `trace` faithfully (nullopt: it can): it
/// uses the legacy stream of a device other than 0 (R13). On one GPU every
/// device replays there, a device's blocking streams becoming non-blocking
/// ones (exact only while its legacy stream is never used); on several, the
/// one handle CU_STREAM_LEGACY would name two devices' streams.
std::optional<std::string> gpu_replay_refusal(const Trace& trace);

/// How many devices `trace` uses (R13): one more than the highest device a
/// stream, event or default stream of it has.
DeviceNumber trace_device_count(const Trace& trace);

/// The GPUs the CUDA driver reports here; 0 without a driver or when built
/// without CUDA (`why` then says which).
int available_gpus(std::string* why = nullptr);

/// Runs the trace `runs` times on the GPU, holding back the first op of
/// every finding in `sim_report` (and the ops in `also_hold_back`: stream
/// index, op index on it, as the simulator numbers them) by `delay_ns`. A trace of N > 1 devices
/// runs on GPUs 0..N-1 (one each, peer access on) where the machine has N,
/// else every device on GPU 0; `device` in the result says which.
GpuReplayResult replay_trace_on_gpu(const Trace& trace, const Report& sim_report, const TraceCheckOptions& o,
                                    std::uint32_t runs = 10, std::uint64_t delay_ns = 2'000'000,
                                    const std::set<std::pair<std::uint32_t, std::uint32_t>>& also_hold_back = {});

}  // namespace streamcheck::tools
