// The capture layer's own cost per CUDA call (docs/PERFORMANCE.md, "Capture"):
// the trace writer fed one round of a two-stream pipeline (wait, launch,
// record, wait, launch, record: what tests/capture/many_launches.cu makes),
// as libstreamcheck_capture.so feeds it from CUPTI callbacks. The GPU
// machine measures the whole capture (CUPTI included) against a bare run;
// this isolates what streamcheck adds to each call.
#include <benchmark/benchmark.h>

#include <vector>

#include "capture/trace_writer.h"

namespace {

using namespace streamcheck::capture;

void BM_CaptureWriterPipelineRound(benchmark::State& state) {
  constexpr ThreadId kMain = 1;
  constexpr Handle kS1 = 0x1000, kS2 = 0x2000, kProduced = 0x3000, kConsumed = 0x3100;
  constexpr Handle kA = 0x7f0000000000, kB = 0x7f0000100000;
  TraceWriter w(kMain);
  const CallSite launch{"cudaLaunchKernel", {}}, record{"cudaEventRecord", {}}, wait{"cudaStreamWaitEvent", {}};
  w.stream_created(kMain, kS1, true, CallSite{"cudaStreamCreateWithFlags", {}});
  w.stream_created(kMain, kS2, true, CallSite{"cudaStreamCreateWithFlags", {}});
  w.event_created(kMain, kProduced, CallSite{"cudaEventCreate", {}});
  w.event_created(kMain, kConsumed, CallSite{"cudaEventCreate", {}});
  w.device_alloc(kMain, kA, 4096, std::nullopt, CallSite{"cudaMalloc", {}});
  w.device_alloc(kMain, kB, 4096, std::nullopt, CallSite{"cudaMalloc", {}});
  const std::string produce = kernel_trace_name("produce(float*, int)");
  const std::string consume = kernel_trace_name("consume(float const*, float*, int)");
  const std::vector<KernelArg> produce_args{{kA, Access::Writes}};
  const std::vector<KernelArg> consume_args{{kA, Access::Reads}, {kB, Access::Writes}};
  for (auto _ : state) {
    w.wait(kMain, StreamArg{kS1}, kConsumed, wait);
    w.launch(kMain, StreamArg{kS1}, produce, "produce(float*, int)", produce_args, launch);
    w.record(kMain, kProduced, StreamArg{kS1}, record);
    w.wait(kMain, StreamArg{kS2}, kProduced, wait);
    w.launch(kMain, StreamArg{kS2}, consume, "consume(float const*, float*, int)", consume_args, launch);
    w.record(kMain, kConsumed, StreamArg{kS2}, record);
  }
  state.SetItemsProcessed(state.iterations() * 6);  // CUDA calls
  benchmark::DoNotOptimize(w.statements());
}
BENCHMARK(BM_CaptureWriterPipelineRound);

}  // namespace

BENCHMARK_MAIN();
