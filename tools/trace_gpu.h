// Replaying a trace on real CUDA streams (`streamcheck replay FILE --backend
// cuda`): the trace runs on the GPU with the stamp kernels checking every
// read; the earlier op of each finding the simulator reports under the given
// schedule is held back, so that a race the model predicts shows as
// corrupted data on the hardware.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
  std::vector<std::string> notes;  // resource calls refused on the GPU
  std::string device;
};

/// Why the GPU replay cannot run `trace` faithfully (nullopt: it can).
/// Every device of a trace replays on the one GPU the backend uses (R13):
/// a device's blocking streams are then non-blocking ones, exact only
/// while that device's legacy stream is never used.
std::optional<std::string> gpu_replay_refusal(const Trace& trace);

/// Runs the trace `runs` times on the GPU, holding back the first op of
/// every finding in `sim_report` by `delay_ns`.
GpuReplayResult replay_trace_on_gpu(const Trace& trace, const Report& sim_report, const TraceCheckOptions& o,
                                    std::uint32_t runs = 10, std::uint64_t delay_ns = 2'000'000);

}  // namespace streamcheck::tools
