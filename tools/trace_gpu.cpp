#include "tools/trace_gpu.h"

#include <fmt/format.h>

namespace streamcheck::tools {

std::optional<std::string> gpu_replay_refusal(const Trace& trace) {
  for (const Trace::DefaultStream& d : trace.default_streams)
    if (d.kind == StreamKind::LegacyDefault)
      return fmt::format(
          "the trace uses {}, the legacy default stream of device {} (a plain 'buffer' or 'free', or 'legacy', with "
          "device {} current); the GPU replay runs every device of a trace on one GPU, whose only legacy stream is "
          "device 0's, so {}'s implicit barriers (R8) cannot be replayed: give device {} a stream of its own "
          "('stream S nonblocking', 'buffer X N on S')",
          d.name, d.device, d.device, d.name, d.device);
  return std::nullopt;
}

}  // namespace streamcheck::tools

#ifdef STREAMCHECK_WITH_CUDA

#include <fmt/format.h>

#include <limits>
#include <set>

#include "backend_cuda/cuda_backend.h"
#include "tools/trace_interpreter.h"

namespace streamcheck::tools {

GpuReplayResult replay_trace_on_gpu(const Trace& trace, const Report& sim_report, const TraceCheckOptions& o,
                                    std::uint32_t runs, std::uint64_t delay_ns) {
  GpuReplayResult out;
  std::string why;
  if (!cuda::Driver::get(&why)) {
    out.why = why;
    return out;
  }
  out.available = true;
  std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
  for (const auto& f : sim_report.findings)
    if (f.severity == Severity::Error) delays.insert({f.first.ref.stream.value, f.first.ref.index});
  for (std::uint32_t k = 0; k < runs; ++k) {
    cuda::CudaBackendOptions bo;
    bo.policy = apply_policy_overrides(trace.policy, o.policy_overrides);
    // Keep freed memory mapped: a use after free then reads stale data we
    // can count, instead of faulting and ending the CUDA context.
    bo.policy.release_threshold = std::numeric_limits<std::uint64_t>::max();
    bo.check_final_contents = true;
    auto backend = cuda::CudaBackend::create(bo);
    if (!backend)
      throw std::runtime_error(fmt::format("creating the CUDA backend failed: {}", backend.error().to_string()));
    if (out.device.empty()) out.device = backend.value()->device_description();
    backend.value()->force_delays(delays, delay_ns);
    const Execution run = TraceInterpreter<cuda::CudaBackend>(trace, *backend.value()).run();
    ++out.runs;
    const std::uint64_t m = backend.value()->mismatches_total();
    out.mismatching_words += m;
    if (m > 0) ++out.runs_with_mismatches;
    const std::uint64_t wrong_final = backend.value()->final_mismatches_total();
    out.wrong_final_words += wrong_final;
    if (wrong_final > 0) ++out.runs_with_wrong_final_contents;
    if (k == 0)
      for (const auto& n : run.notes()) out.notes.push_back(fmt::format("line {}: {}", n.line, n.message));
  }
  return out;
}

}  // namespace streamcheck::tools

#else

namespace streamcheck::tools {

GpuReplayResult replay_trace_on_gpu(const Trace&, const Report&, const TraceCheckOptions&, std::uint32_t,
                                    std::uint64_t) {
  GpuReplayResult out;
  out.why = "this streamcheck was built without the CUDA Toolkit (backend_cuda/ not built)";
  return out;
}

}  // namespace streamcheck::tools

#endif
