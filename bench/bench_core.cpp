// The core's own host-side cost (SPEC §8, to apportion bench_gpu's ratios):
// the Resource and the LaunchRecorder over a backend whose calls do nothing,
// side by side with the same number of calls made on that backend directly.
// The difference is the bookkeeping the core adds to each driver call.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "backend_sim/null_backend.h"
#include "model/launch_recorder.h"
#include "model/resource.h"

namespace streamcheck::bench {
namespace {

using sim::NullBackend;

void must(const Status& st) {
  if (!st) throw std::runtime_error("bench_core: " + st.error().to_string());
}

const StreamId s0{0}, s1{1};

void BM_BareWaitRecord(benchmark::State& state) {
  NullBackend b;
  NullBackend::Event written = std::move(b.create_event()).value();
  NullBackend::Event read = std::move(b.create_event()).value();
  for (auto _ : state) {
    must(b.wait_event(*b.resolve_stream(s1), written));
    must(b.record_event(read, *b.resolve_stream(s1)));
  }
}
BENCHMARK(BM_BareWaitRecord);

void BM_ResourcePrepareFinishRead(benchmark::State& state) {
  NullBackend b;
  Resource<NullBackend> r(b);
  const DeviceBlock block = r.allocate(4096, s0).value();
  const BlockId id = BlockId::of(block);
  for (auto _ : state) {
    must(r.prepare_block_use(id, s1, Access::Read));
    must(r.finish_block_use(id, s1, Access::Read));
  }
}
BENCHMARK(BM_ResourcePrepareFinishRead);

void BM_RecorderRead(benchmark::State& state) {
  NullBackend b;
  Resource<NullBackend> r(b);
  const DeviceBlock block = r.allocate(4096, s0).value();
  for (auto _ : state) {
    LaunchRecorder<> rec(s1, RecorderMode::Strict);
    rec.read(&block);
    must(rec.preflight(r));
    must(rec.commit(r));
  }
}
BENCHMARK(BM_RecorderRead);

void BM_BareAllocFree(benchmark::State& state) {
  NullBackend b;
  for (auto _ : state) {
    const std::uint64_t p = b.alloc_async(4096, *b.resolve_stream(s0)).value();
    must(b.free_async(p, *b.resolve_stream(s0)));
  }
}
BENCHMARK(BM_BareAllocFree);

void BM_ResourceAllocateDeallocate(benchmark::State& state) {
  NullBackend b;
  Resource<NullBackend> r(b);
  std::uint64_t i = 0;
  for (auto _ : state) {
    const DeviceBlock block = r.allocate(4096, s0).value();
    must(r.deallocate(block));
    if (++i % 256 == 0) must(r.reap_pending());
  }
}
BENCHMARK(BM_ResourceAllocateDeallocate);

}  // namespace
}  // namespace streamcheck::bench

BENCHMARK_MAIN();
