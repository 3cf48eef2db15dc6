// GPU overhead of the resource against bare driver calls (SPEC §8):
//   prepare+finish of a cross-stream read   vs  cuStreamWaitEvent + cuEventRecord
//   a write on s0 then a read on s1         vs  the four calls a bare program makes
//   allocate+deallocate                      vs  cuMemAllocFromPoolAsync + cuMemFreeAsync
//                                                (the same pool) and cuMemAllocAsync +
//                                                cuMemFreeAsync (the device's default pool)
//   PoolResource allocate+deallocate         vs  the same (model/pool_backend.h: warm buckets,
//                                                one stream), with the pool alone and a
//                                                cross-stream reuse (a steal) beside it
//
// A harness of its own rather than Google Benchmark: the GPU machine has no
// Google Benchmark, and Debian ships it only as a shared library built
// against a newer libstdc++ than the static one these binaries carry. The
// method is what Google Benchmark would do, made explicit: every variant
// runs `iterations` times per round, the variants take turns within each
// round (rotating the order, so drift and warm-up hit all of them alike),
// and the table gives the median and minimum per-op time over the rounds.
// Every `sync_every` iterations each variant drains its stream (the bare
// variants with cuStreamSynchronize, the resource with reap_pending or a
// stream synchronize), so no variant is timed against a full queue.
//
// Exit 0 after printing the table; 77 when there is no usable GPU; 2 on a
// usage error; 1 when a driver call fails (the message names it).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend_cuda/cuda_backend.h"
#include "model/launch_recorder.h"
#include "model/pool_backend.h"
#include "model/resource.h"

namespace streamcheck::cuda {
namespace {

struct Options {
  int rounds = 31;
  int iterations = 2000;
  int sync_every = 256;
  std::size_t bytes = 4096;
};

void ok(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) throw std::runtime_error(driver().describe(r) + " in " + call);
}
void ok(const Status& st, const char* call) {
  if (!st) throw std::runtime_error(std::string(call) + ": " + st.error().to_string());
}

struct Variant {
  std::string name;
  std::function<void(int i)> step;  // one operation; i counts within the round
  std::function<void()> drain;      // empties the variant's queue
  std::vector<double> ns_per_op;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int run(const Options& o) {
  std::string why;
  if (!Driver::get(&why)) {
    std::cout << "bench_gpu: no usable GPU (" << why << "); skipped\n";
    return 77;
  }
  CudaBackendOptions backend_options;
  backend_options.stamp_pool_ops = false;  // bare driver calls: no validation kernels
  auto created = CudaBackend::create(backend_options);
  if (!created) {
    std::cout << "bench_gpu: no usable GPU (" << created.error().to_string() << "); skipped\n";
    return 77;
  }
  CudaBackend& backend = *created.value();
  const DriverApi& api = driver().api();
  const StreamId s0 = backend.add_stream("s0"), s1 = backend.add_stream("s1");
  const CUstream raw0 = backend.resolve_stream(s0)->get(), raw1 = backend.resolve_stream(s1)->get();

  // The bare read: s1 waits for the producer's event, then records its own.
  CUevent written = nullptr, read = nullptr;
  ok(api.event_create(&written, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  ok(api.event_create(&read, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  ok(api.event_record(written, raw0), "cuEventRecord");

  Resource<CudaBackend> resource(backend);
  auto block = resource.allocate(o.bytes, s0);  // allocated and written on s0: a read on s1 waits (P-read)
  if (!block) throw std::runtime_error("Resource::allocate: " + block.error().to_string());
  const BlockId id = BlockId::of(block.value());
  // Written once on s0, as the bare variant's `written` event stands for:
  // its last_write is then on s0 (before a first write a read on s1 would
  // wait on an allocation-ready event recorded for that prepare: P-alloc).
  ok(resource.prepare_block_use(id, s0, Access::Write), "prepare_block_use");
  ok(resource.finish_block_use(id, s0, Access::Write), "finish_block_use");
  // PoolResource: the core over a pool over a backend of its own.
  using PooledCuda = PooledBackend<CudaBackend>;
  auto pooled_created = CudaBackend::create_as<PooledCuda>(PoolOptions{}, backend_options);
  if (!pooled_created) throw std::runtime_error("pooled backend: " + pooled_created.error().to_string());
  PooledCuda& pooled = *pooled_created.value();
  const StreamId p0 = pooled.add_stream("p0"), p1 = pooled.add_stream("p1");
  PoolResource<CudaBackend> pool(pooled);

  const auto sync = [&](CUstream s) { ok(api.stream_synchronize(s), "cuStreamSynchronize"); };
  const auto every = [&](int i, auto&& f) {
    if ((i + 1) % o.sync_every == 0) f();
  };

  std::vector<Variant> v;
  v.push_back({"bare wait+record (cross-stream read)",
               [&](int i) {
                 ok(api.stream_wait_event(raw1, written, 0), "cuStreamWaitEvent");
                 ok(api.event_record(read, raw1), "cuEventRecord");
                 every(i, [&] { sync(raw1); });
               },
               [&] { sync(raw1); },
               {}});
  // The backend's own calls, without the core: the same event each time,
  // and a pooled event leased per read as finish_block_use does.
  const StreamRef ref1 = *backend.resolve_stream(s1);
  auto backend_written = backend.create_event();
  auto backend_read = backend.create_event();
  if (!backend_written || !backend_read) throw std::runtime_error("CudaBackend::create_event failed");
  ok(backend.record_event(backend_written.value(), *backend.resolve_stream(s0)), "record_event");
  std::optional<CudaBackend::Event> last_read;
  v.push_back({"backend wait+record (one event)",
               [&](int i) {
                 ok(backend.wait_event(ref1, backend_written.value()), "wait_event");
                 ok(backend.record_event(backend_read.value(), ref1), "record_event");
                 every(i, [&] { sync(raw1); });
               },
               [&] { sync(raw1); },
               {}});
  v.push_back({"backend wait+record (pooled event)",
               [&](int i) {
                 ok(backend.wait_event(ref1, backend_written.value()), "wait_event");
                 auto e = backend.create_event();
                 if (!e) throw std::runtime_error("CudaBackend::create_event failed");
                 ok(backend.record_event(e.value(), ref1), "record_event");
                 last_read.emplace(std::move(e).value());  // the previous one goes back to the cache
                 every(i, [&] { sync(raw1); });
               },
               [&] { sync(raw1); },
               {}});
  v.push_back({"resource prepare+finish (read)",
               [&](int i) {
                 ok(resource.prepare_block_use(id, s1, Access::Read), "prepare_block_use");
                 ok(resource.finish_block_use(id, s1, Access::Read), "finish_block_use");
                 every(i, [&] { sync(raw1); });
               },
               [&] { sync(raw1); },
               {}});
  v.push_back({"recorder preflight+commit (read)",
               [&](int i) {
                 LaunchRecorder<> rec(s1, RecorderMode::Strict);
                 rec.read(&block.value());
                 ok(rec.preflight(resource), "preflight");
                 ok(rec.commit(resource), "commit");
                 every(i, [&] { sync(raw1); });
               },
               [&] { sync(raw1); },
               {}});
  v.push_back({"bare alloc+free (dedicated pool)",
               [&](int i) {
                 CUdeviceptr p = 0;
                 ok(api.mem_alloc_from_pool_async(&p, o.bytes, backend.memory_pool(), raw0), "cuMemAllocFromPoolAsync");
                 ok(api.mem_free_async(p, raw0), "cuMemFreeAsync");
                 every(i, [&] { sync(raw0); });
               },
               [&] { sync(raw0); },
               {}});
  v.push_back({"bare alloc+free (default pool)",
               [&](int i) {
                 CUdeviceptr p = 0;
                 ok(api.mem_alloc_async(&p, o.bytes, raw0), "cuMemAllocAsync");
                 ok(api.mem_free_async(p, raw0), "cuMemFreeAsync");
                 every(i, [&] { sync(raw0); });
               },
               [&] { sync(raw0); },
               {}});
  v.push_back({"resource allocate+deallocate",
               [&](int i) {
                 auto b = resource.allocate(o.bytes, s0);
                 if (!b) throw std::runtime_error("Resource::allocate: " + b.error().to_string());
                 ok(resource.deallocate(b.value()), "deallocate");
                 every(i, [&] { ok(resource.reap_pending(), "reap_pending"); });
               },
               [&] { ok(resource.reap_pending(), "reap_pending"); },
               {}});

  // The backend's own alloc_async + free_async, without the core: what the
  // resource adds above it is the rest of its allocate + deallocate.
  const StreamRef ref0 = *backend.resolve_stream(s0);
  const std::size_t backend_alloc = v.size();
  v.push_back({"backend alloc_async+free_async",
               [&](int i) {
                 auto p = backend.alloc_async(o.bytes, ref0);
                 if (!p) throw std::runtime_error("alloc_async: " + p.error().to_string());
                 ok(backend.free_async(p.value(), ref0), "free_async");
                 every(i, [&] { sync(raw0); });
               },
               [&] { sync(raw0); },
               {}});
  const std::size_t first_pool_variant = v.size();
  v.push_back({"pool resource allocate+deallocate",
               [&](int i) {
                 auto b = pool.allocate(o.bytes, p0);
                 if (!b) throw std::runtime_error("PoolResource::allocate: " + b.error().to_string());
                 ok(pool.deallocate(b.value()), "deallocate");
                 every(i, [&] { ok(pool.reap_pending(), "reap_pending"); });
               },
               [&] { ok(pool.reap_pending(), "reap_pending"); },
               {}});
  v.push_back({"pool alone alloc_async+free_async",
               [&](int i) {
                 auto s = *pooled.resolve_stream(p0);
                 auto p = pooled.alloc_async(o.bytes, s);
                 if (!p) throw std::runtime_error("alloc_async: " + p.error().to_string());
                 ok(pooled.free_async(p.value(), s), "free_async");
                 every(i, [&] { ok(pooled.synchronize_stream(s), "synchronize_stream"); });
               },
               [&] { ok(pooled.synchronize_stream(*pooled.resolve_stream(p0)), "synchronize_stream"); },
               {}});
  v.push_back({"pool resource, streams alternate (steal)",
               [&](int i) {
                 auto b = pool.allocate(o.bytes, i % 2 ? p1 : p0);
                 if (!b) throw std::runtime_error("PoolResource::allocate: " + b.error().to_string());
                 ok(pool.deallocate(b.value()), "deallocate");
                 every(i, [&] { ok(pool.reap_pending(), "reap_pending"); });
               },
               [&] { ok(pool.reap_pending(), "reap_pending"); },
               {}});

  // Ping-pong: s0 writes a block and s1 reads it, every iteration. No wait
  // can be elided here (P-elide): each record is one the other stream has
  // not waited on, so the resource makes the four driver calls a correct
  // bare program makes (s0 waits for the last read before it writes again),
  // and the ratio is the core's own cost per call.
  CUevent pp_written = nullptr, pp_read = nullptr;
  ok(api.event_create(&pp_written, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  ok(api.event_create(&pp_read, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  ok(api.event_record(pp_read, raw1), "cuEventRecord");
  auto pp_block = resource.allocate(o.bytes, s0);
  if (!pp_block) throw std::runtime_error("Resource::allocate: " + pp_block.error().to_string());
  const BlockId pp = BlockId::of(pp_block.value());
  const auto sync_both = [&] {
    sync(raw0);
    sync(raw1);
  };
  const std::size_t first_ping_pong = v.size();
  v.push_back({"bare ping-pong (write s0, read s1)",
               [&](int i) {
                 ok(api.stream_wait_event(raw0, pp_read, 0), "cuStreamWaitEvent");
                 ok(api.event_record(pp_written, raw0), "cuEventRecord");
                 ok(api.stream_wait_event(raw1, pp_written, 0), "cuStreamWaitEvent");
                 ok(api.event_record(pp_read, raw1), "cuEventRecord");
                 every(i, sync_both);
               },
               sync_both,
               {}});
  v.push_back({"resource ping-pong (write s0, read s1)",
               [&](int i) {
                 ok(resource.prepare_block_use(pp, s0, Access::Write), "prepare_block_use");
                 ok(resource.finish_block_use(pp, s0, Access::Write), "finish_block_use");
                 ok(resource.prepare_block_use(pp, s1, Access::Read), "prepare_block_use");
                 ok(resource.finish_block_use(pp, s1, Access::Read), "finish_block_use");
                 every(i, sync_both);
               },
               sync_both,
               {}});

  // Warm-up round (pools, caches, lazy driver state), not recorded.
  for (auto& var : v) {
    for (int i = 0; i < o.iterations; ++i) var.step(i);
    var.drain();
  }
  for (int round = 0; round < o.rounds; ++round) {
    for (std::size_t k = 0; k < v.size(); ++k) {
      Variant& var = v[(k + static_cast<std::size_t>(round)) % v.size()];
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iterations; ++i) var.step(i);
      const auto t1 = std::chrono::steady_clock::now();
      var.drain();
      var.ns_per_op.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / o.iterations);
    }
  }

  std::cout << "bench_gpu: " << backend.device_description() << "; " << o.rounds << " rounds x " << o.iterations
            << " ops, drain every " << o.sync_every << ", " << o.bytes << " bytes\n\n";
  std::cout << std::left << std::setw(40) << "variant" << std::right << std::setw(14) << "median ns/op" << std::setw(12)
            << "min ns/op"
            << "\n";
  for (const auto& var : v) {
    const double lo = *std::min_element(var.ns_per_op.begin(), var.ns_per_op.end());
    std::cout << std::left << std::setw(40) << var.name << std::right << std::fixed << std::setprecision(1)
              << std::setw(14) << median(var.ns_per_op) << std::setw(12) << lo << "\n";
  }
  const auto ratio = [&](std::size_t a, std::size_t b) {
    std::cout << std::left << std::setw(40) << (v[a].name + " / ") << v[b].name << ": " << std::fixed
              << std::setprecision(2) << median(v[a].ns_per_op) / median(v[b].ns_per_op) << "x\n";
  };
  std::cout << "\nratios of medians\n";
  ratio(1, 0);
  ratio(2, 0);
  ratio(3, 0);
  ratio(4, 0);
  ratio(7, 5);
  ratio(7, 6);
  ratio(backend_alloc, 5);
  for (std::size_t k = first_pool_variant; k < first_ping_pong; ++k) ratio(k, 5);
  ratio(first_ping_pong + 1, first_ping_pong);
  std::cout << "pool steals: " << pooled.steals() << " (the alternating variant takes one whenever the last block "
            << "was freed on the other stream and no reap made it idle)\n";

  last_read.reset();
  ok(resource.deallocate(block.value()), "deallocate");
  ok(resource.deallocate(pp_block.value()), "deallocate");
  ok(api.event_destroy(pp_written), "cuEventDestroy");
  ok(api.event_destroy(pp_read), "cuEventDestroy");
  ok(resource.reap_pending(), "reap_pending");
  ok(api.event_destroy(written), "cuEventDestroy");
  ok(api.event_destroy(read), "cuEventDestroy");
  ok(pool.reap_pending(), "reap_pending");
  ok(pooled.trim(*pooled.resolve_stream(p0)), "trim");
  return 0;
}

int parse_and_run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help") {
      std::cout << "usage: bench_gpu [--rounds R] [--iterations N] [--sync-every K] [--bytes B]\n";
      return 0;
    }
    int* target = arg == "--rounds"       ? &o.rounds
                  : arg == "--iterations" ? &o.iterations
                  : arg == "--sync-every" ? &o.sync_every
                                          : nullptr;
    if ((!target && arg != "--bytes") || i + 1 >= argc) {
      std::cerr << "bench_gpu: unknown or incomplete option '" << arg << "' (see --help)\n";
      return 2;
    }
    const long value = std::strtol(argv[++i], nullptr, 10);
    if (value <= 0) {
      std::cerr << "bench_gpu: " << arg << " needs a positive number\n";
      return 2;
    }
    if (target)
      *target = static_cast<int>(value);
    else
      o.bytes = static_cast<std::size_t>(value);
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::cerr << "bench_gpu: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace streamcheck::cuda

int main(int argc, char** argv) { return streamcheck::cuda::parse_and_run(argc, argv); }
