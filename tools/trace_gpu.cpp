#include "tools/trace_gpu.h"

#include <fmt/format.h>

#include <algorithm>

namespace streamcheck::tools {

DeviceNumber trace_device_count(const Trace& trace) {
  DeviceNumber highest = 0;
  for (const Statement& st : trace.statements) {
    if (const auto* stream = std::get_if<ast::StreamDecl>(&st)) highest = std::max(highest, stream->device);
    if (const auto* event = std::get_if<ast::EventDecl>(&st)) highest = std::max(highest, event->device);
  }
  for (const Trace::DefaultStream& d : trace.default_streams)
    if (d.device != kNoDevice) highest = std::max(highest, d.device);
  return highest + 1;
}

std::optional<std::string> gpu_replay_refusal(const Trace& trace) {
  for (const Trace::DefaultStream& d : trace.default_streams)
    if (d.kind == StreamKind::LegacyDefault)
      return fmt::format(
          "the trace uses {}, the legacy default stream of device {} (a plain 'buffer' or 'free', or 'legacy', with "
          "device {} current); the GPU replay gives only device 0 its legacy stream (on one GPU it is the only one; "
          "on several, CU_STREAM_LEGACY names whichever context is current), so {}'s implicit barriers (R8) cannot "
          "be replayed: give device {} a stream of its own ('stream S nonblocking', 'buffer X N on S')",
          d.name, d.device, d.device, d.name, d.device);
  return std::nullopt;
}

}  // namespace streamcheck::tools

#ifdef STREAMCHECK_WITH_CUDA

#include <fmt/format.h>

#include <limits>
#include <set>

#include "backend_cuda/cuda_backend.h"
#include "backend_cuda/guard_memory.h"
#include "tools/trace_interpreter.h"

namespace streamcheck::tools {

/// `resource debug` on the GPU: the tier's fills and checks are kernels.
template <>
struct TraceGuardMemory<cuda::CudaBackend> {
  using Memory = cuda::CudaGuardMemory;
  static Result<std::unique_ptr<Memory>> create(cuda::CudaBackend& backend) { return Memory::create(backend); }
};

int available_gpus(std::string* why) {
  const cuda::Driver* d = cuda::Driver::get(why);
  return d ? d->device_count() : 0;
}

GpuReplayResult replay_trace_on_gpu(const Trace& trace, const Report& sim_report, const TraceCheckOptions& o,
                                    std::uint32_t runs, std::uint64_t delay_ns,
                                    const std::set<std::pair<std::uint32_t, std::uint32_t>>& also_hold_back) {
  GpuReplayResult out;
  std::string why;
  if (!cuda::Driver::get(&why)) {
    out.why = why;
    return out;
  }
  out.available = true;
  // R13: a GPU per trace device where the machine has enough, else all on one.
  const DeviceNumber devices = trace_device_count(trace);
  // Every device buffer at once, rounded up to the pool's 2 MiB granule
  // (at most 1 GiB): no allocation of the run grows a pool.
  std::uint64_t device_bytes = 0;
  for (const Statement& st : trace.statements)
    if (const auto* b = std::get_if<ast::BufferDecl>(&st)) device_bytes += (b->bytes + 4095) / 4096 * 4096;
  device_bytes = std::min<std::uint64_t>((device_bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20), 1u << 30);
  const int gpus = cuda::driver().device_count();
  const cuda::DevicePlacement placement = devices > 1 && static_cast<DeviceNumber>(gpus) >= devices
                                              ? cuda::DevicePlacement::GpuPerDevice
                                              : cuda::DevicePlacement::OneGpu;
  std::set<std::pair<std::uint32_t, std::uint32_t>> delays = also_hold_back;
  for (const auto& f : sim_report.findings)
    if (f.severity == Severity::Error) delays.insert({f.first.ref.stream.value, f.first.ref.index});
  for (std::uint32_t k = 0; k < runs; ++k) {
    cuda::CudaBackendOptions bo;
    bo.policy = apply_policy_overrides(trace.policy, o.policy_overrides);
    // Keep freed memory mapped: a use after free then reads stale data we
    // can count, instead of faulting and ending the CUDA context.
    bo.policy.release_threshold = std::numeric_limits<std::uint64_t>::max();
    bo.check_final_contents = true;
    bo.placement = placement;
    bo.devices = devices;  // every GPU set up before the first op
    bo.reserve_bytes = device_bytes;
    auto backend = cuda::CudaBackend::create(bo);
    if (!backend)
      throw std::runtime_error(fmt::format("creating the CUDA backend failed: {}", backend.error().to_string()));
    backend.value()->force_delays(delays, delay_ns);
    const Execution run = TraceInterpreter<cuda::CudaBackend>(trace, *backend.value()).run();
    if (out.device.empty()) {  // once the run has set up every GPU it uses
      out.device = backend.value()->device_description();
      out.gpus_used = static_cast<std::uint32_t>(backend.value()->gpus_in_use());
      if (devices > 1 && placement == cuda::DevicePlacement::OneGpu)
        out.device += fmt::format(" (the trace's {} devices all on this one GPU: the machine has {})", devices, gpus);
    }
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

int available_gpus(std::string* why) {
  if (why) *why = "this streamcheck was built without the CUDA Toolkit (backend_cuda/ not built)";
  return 0;
}

GpuReplayResult replay_trace_on_gpu(const Trace&, const Report&, const TraceCheckOptions&, std::uint32_t, std::uint64_t,
                                    const std::set<std::pair<std::uint32_t, std::uint32_t>>&) {
  GpuReplayResult out;
  out.why = "this streamcheck was built without the CUDA Toolkit (backend_cuda/ not built)";
  return out;
}

}  // namespace streamcheck::tools

#endif
