#include "backend_cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace streamcheck::cuda {

// The fatbin built from backend_cuda/kernels.cu (generated source).
extern const unsigned char kernels_fatbin[];
extern const std::size_t kernels_fatbin_size;

namespace {
constexpr unsigned kThreads = 256;
constexpr std::uint64_t kFreedStampBit = std::uint64_t{1} << 63;
}  // namespace

std::uint64_t CudaBackend::stamp_base() {
  // 2^31 bases of 2^32 stamps each, below kFreedStampBit; the first one from
  // the clock, so that two processes replaying the same trace differ too.
  static std::atomic<std::uint64_t> next{
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  return ((next.fetch_add(1) & 0x7FFF'FFFFu) << 32) | 1;
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(CudaBackendOptions options) {
  std::unique_ptr<CudaBackend> b(new CudaBackend(options));
  if (auto st = b->init(); !st) return st.error();
  return b;
}

Status CudaBackend::init() {
  // Null without a driver: init_gpu then fails with the driver's reason,
  // before any call that uses driver_.
  driver_ = Driver::get(nullptr);
  auto g = std::make_unique<Gpu>();
  if (auto st = init_gpu(*g, options_.device_ordinal); !st) return st;
  gpus_.emplace(0, std::move(g));
  if (options_.placement == DevicePlacement::GpuPerDevice) {
    try {
      for (DeviceNumber d = 1; d < options_.devices; ++d) gpu_for(d);
    } catch (const std::runtime_error& e) {
      return ResourceError::driver(e.what());
    }
    use(*gpus_.at(0));
  }
  return {};
}

Status CudaBackend::init_gpu(Gpu& g, int ordinal) {
  g.ordinal = ordinal;
  auto ctx = Context::primary(ordinal);  // made current on this thread
  if (!ctx) return ctx.error();
  g.context.emplace(std::move(ctx).value());
  const Driver& d = driver();
  const DriverApi& a = d.api();

  // A dedicated pool, so that its reuse attributes are ours alone.
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = ordinal;
  if (auto st = d.check(a.mem_pool_create(&g.pool, &props), "cuMemPoolCreate"); !st) return st;
  int follow = options_.policy.follow_event_dependencies ? 1 : 0;
  int opportunistic = options_.policy.opportunistic ? 1 : 0;
  int internal = options_.policy.internal_dependencies ? 1 : 0;
  cuuint64_t threshold = options_.policy.release_threshold;
  for (auto [attr, value, name] :
       {std::tuple<CUmemPool_attribute, void*, const char*>{CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &follow,
                                                            "REUSE_FOLLOW_EVENT_DEPENDENCIES"},
        {CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic, "REUSE_ALLOW_OPPORTUNISTIC"},
        {CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &internal, "REUSE_ALLOW_INTERNAL_DEPENDENCIES"},
        {CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold, "RELEASE_THRESHOLD"}}) {
    if (auto st = d.check(a.mem_pool_set_attribute(g.pool, attr, value), name); !st) return st;
  }

  if (auto st = d.check(a.module_load_data(&g.module, kernels_fatbin), "cuModuleLoadData (streamcheck kernels)"); !st)
    return st;
  for (auto [fn, name] : {std::pair<CUfunction*, const char*>{&g.stamp_write, "streamcheck_stamp_write"},
                          {&g.stamp_check, "streamcheck_stamp_check"},
                          {&g.delay, "streamcheck_delay"},
                          {&g.guard_count, "streamcheck_guard_count"}})
    if (auto st = d.check(a.module_get_function(fn, g.module, name), "cuModuleGetFunction"); !st) return st;
  if (auto st = d.check(a.mem_alloc(&g.mismatch_counter, sizeof(std::uint64_t)), "cuMemAlloc (mismatch counter)"); !st)
    return st;
  if (auto st = d.check(a.memset_d8(g.mismatch_counter, 0, sizeof(std::uint64_t)), "cuMemsetD8"); !st) return st;
  g.events = EventCache::create(options_.max_cached_events, &*g.context);
  g.fence_events = EventCache::create(options_.max_cached_events, &*g.context);
  g.streams = StreamCache::create(options_.max_cached_streams, &*g.context);
  // Each kernel once, on nothing: under lazy loading (CUDA_MODULE_LOADING,
  // LAZY by default) a kernel's first launch loads it, which takes longer
  // than a forced delay; a replay's first launch must cost what the others do.
  const StreamRef legacy = *StreamRef::from(CU_STREAM_LEGACY);
  for (Kernel k : {Kernel::StampWrite, Kernel::StampCheck, Kernel::Delay, Kernel::GuardCount}) {
    CUdeviceptr nowhere = g.mismatch_counter;  // never touched: no words
    std::uint64_t none = 0;
    void* write_args[] = {&nowhere, &none, &none, &none};
    void* check_args[] = {&nowhere, &none, &none, &none, &nowhere};
    void* delay_args[] = {&none};
    void* guard_args[] = {&nowhere, &none, &none, &nowhere};
    void** args = k == Kernel::StampWrite   ? write_args
                  : k == Kernel::StampCheck ? check_args
                  : k == Kernel::Delay      ? delay_args
                                            : guard_args;
    if (auto st = launch_on(g, k, 0, legacy, args); !st) return st;
  }
  if (options_.reserve_bytes > 0) {
    CUdeviceptr reserve = 0;
    if (auto st = d.check(a.mem_alloc_from_pool_async(&reserve, options_.reserve_bytes, g.pool, CU_STREAM_LEGACY),
                          "cuMemAllocFromPoolAsync (reserve)");
        !st)
      return st;
    if (auto st = d.check(a.mem_free_async(reserve, CU_STREAM_LEGACY), "cuMemFreeAsync (reserve)"); !st) return st;
  }
  return d.check(a.ctx_synchronize(), "cuCtxSynchronize (loading the streamcheck kernels)");
}

CudaBackend::Gpu& CudaBackend::gpu_for(DeviceNumber device) {
  if (options_.placement == DevicePlacement::OneGpu || device == kNoDevice) return *gpus_.at(0);
  if (auto it = gpus_.find(device); it != gpus_.end()) return *it->second;
  const int ordinal = options_.device_ordinal + static_cast<int>(device);
  if (ordinal >= driver().device_count())
    throw std::runtime_error("CudaBackend: trace device " + std::to_string(device) + " would run on GPU " +
                             std::to_string(ordinal) + ", but this machine has " +
                             std::to_string(driver().device_count()) +
                             " GPU(s): replay on one GPU (DevicePlacement::OneGpu) or on a machine with more");
  auto g = std::make_unique<Gpu>();
  if (auto st = init_gpu(*g, ordinal); !st)
    throw std::runtime_error("CudaBackend: setting up GPU " + std::to_string(ordinal) + " for trace device " +
                             std::to_string(device) + ": " + st.error().to_string());
  for (auto& [d, other] : gpus_) {
    enable_peer_access(*other, *g);
    enable_peer_access(*g, *other);
  }
  return *gpus_.emplace(device, std::move(g)).first->second;
}

// A peer copy is replayed as stamp kernels on the copy's stream reading one
// GPU's memory and writing the other's (R13b), and a kernel may check a
// buffer of another device that a copy wrote: `from` reaches `to`'s memory,
// both its cuMemAlloc memory (peer access) and its pool's (pool access).
void CudaBackend::enable_peer_access(Gpu& from, Gpu& to) {
  const Driver& d = driver();
  const DriverApi& a = d.api();
  CUdevice from_dev{}, to_dev{};
  int can = 0;
  if (auto st = d.check(a.device_get(&from_dev, from.ordinal), "cuDeviceGet"); !st)
    throw std::runtime_error("CudaBackend: " + st.error().to_string());
  if (auto st = d.check(a.device_get(&to_dev, to.ordinal), "cuDeviceGet"); !st)
    throw std::runtime_error("CudaBackend: " + st.error().to_string());
  if (auto st = d.check(a.device_can_access_peer(&can, from_dev, to_dev), "cuDeviceCanAccessPeer"); !st)
    throw std::runtime_error("CudaBackend: " + st.error().to_string());
  if (!can)
    throw std::runtime_error("CudaBackend: GPU " + std::to_string(from.ordinal) + " cannot access GPU " +
                             std::to_string(to.ordinal) +
                             "'s memory (cuDeviceCanAccessPeer): the stamp kernels of copies and kernels that "
                             "cross devices need it; replay on one GPU (DevicePlacement::OneGpu)");
  if (auto st = from.context->make_current(); !st) throw std::runtime_error("CudaBackend: " + st.error().to_string());
  // Primary contexts outlive a backend while another retains them: the
  // access may be on from an earlier one.
  if (CUresult r = a.ctx_enable_peer_access(to.context->get(), 0);
      r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
    throw std::runtime_error("CudaBackend: cuCtxEnablePeerAccess: " + d.describe(r));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = from.ordinal;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (auto st = d.check(a.mem_pool_set_access(to.pool, &access, 1), "cuMemPoolSetAccess"); !st)
    throw std::runtime_error("CudaBackend: " + st.error().to_string());
}

void CudaBackend::use(const Gpu& g) const {
  if (gpus_.size() < 2) return;
  if (auto st = g.context->make_current(); !st)
    throw std::runtime_error("CudaBackend: making GPU " + std::to_string(g.ordinal) +
                             "'s context current: " + st.error().to_string());
}

CudaBackend::Gpu& CudaBackend::gpu_of(StreamRef s) {
  if (gpus_.size() < 2) return *gpus_.begin()->second;
  for (auto& [id, entry] : streams_)
    if (entry.ref == s) {
      use(*entry.gpu);
      return *entry.gpu;
    }
  throw std::invalid_argument("CudaBackend: stream is not one of this backend's streams");
}

CudaBackend::~CudaBackend() {
  if (gpus_.empty()) return;
  const DriverApi& a = driver().api();
  // Work may still use the pools or the counters: wait for everything first.
  for (auto& [device, g] : gpus_) {
    use(*g);
    if (CUresult r = a.ctx_synchronize(); r != CUDA_SUCCESS)
      std::cerr << "streamcheck: cuCtxSynchronize failed while destroying the CUDA backend (GPU " << g->ordinal
                << "): " << driver().describe(r) << "\n";
  }
  // Their streams and events go back to the caches while the contexts live.
  streams_.clear();
  free_fences_.clear();
  destroyed_work_.clear();
  // Allocations the client never freed: cuMemFree takes pool memory back
  // synchronously (the devices are idle by now).
  live_allocations_.for_each([&](std::uint64_t ptr, const LiveAllocation& allocation) {
    use(*allocation.gpu);
    a.mem_free(ptr);
  });
  for (void* p : host_memory_) a.mem_free_host(p);
  for (auto& [device, g] : gpus_) {
    use(*g);
    if (g->mismatch_counter) a.mem_free(g->mismatch_counter);
    if (g->module) a.module_unload(g->module);
    if (g->pool) a.mem_pool_destroy(g->pool);
  }
}

std::string CudaBackend::device_description() const {
  std::string out;
  for (const auto& [device, g] : gpus_) {
    char name[256] = {};
    CUdevice dev{};
    driver().api().device_get(&dev, g->ordinal);
    driver().api().device_get_name(name, sizeof(name), dev);
    if (!out.empty()) out += "; ";
    out += gpus_.size() > 1
               ? "GPU " + std::to_string(g->ordinal) + " (device " + std::to_string(device) + "): " + std::string(name)
               : std::string(name);
  }
  return out + ", driver API " + std::to_string(driver().version());
}

Result<int> CudaBackend::gpu_of_stream(StreamId id) const {
  auto it = streams_.find(id);
  if (it == streams_.end()) return ResourceError::driver("gpu_of_stream: no such stream");
  CUcontext ctx = nullptr;
  if (auto st = driver().check(driver().api().stream_get_ctx(it->second.ref.get(), &ctx), "cuStreamGetCtx"); !st)
    return st.error();
  for (const auto& [device, g] : gpus_)
    if (g->context->get() == ctx) return g->ordinal;
  return ResourceError::driver("gpu_of_stream: the stream's context is none of this backend's GPUs'");
}

StreamId CudaBackend::add_stream(std::string, StreamKind kind, DeviceNumber device) {
  const bool other_device = device != 0 && device != kNoDevice;
  // The legacy stream's handle names the current context's: two devices'
  // would be one handle here (see the header).
  if (other_device && kind == StreamKind::LegacyDefault)
    throw std::logic_error("CudaBackend::add_stream: device " + std::to_string(device) +
                           "'s legacy stream cannot be replayed (its implicit barriers (R8) would be device 0's)");
  Gpu& g = gpu_for(device);
  use(g);
  const StreamId id{next_stream_id_++};
  const std::uint32_t index = next_stream_index_++;
  if (other_device) {
    several_devices_ = true;
    // OneGpu: exact while the device's legacy stream is never used.
    if (options_.placement == DevicePlacement::OneGpu) kind = StreamKind::NonBlocking;
  }
  switch (kind) {
    case StreamKind::NonBlocking: {
      auto lease = g.streams->acquire();
      if (!lease) throw std::runtime_error("CudaBackend::add_stream: " + lease.error().to_string());
      const StreamRef ref = lease.value().get().ref();
      streams_.emplace(id, StreamEntry{std::move(lease).value(), std::nullopt, ref, index, 0, device, &g});
      break;
    }
    case StreamKind::Blocking: {
      auto owned = Stream::create(/*blocking=*/true);
      if (!owned) throw std::runtime_error("CudaBackend::add_stream: " + owned.error().to_string());
      const StreamRef ref = owned.value().ref();
      streams_.emplace(id, StreamEntry{std::nullopt, std::move(owned).value(), ref, index, 0, device, &g});
      break;
    }
    case StreamKind::LegacyDefault:
      streams_.emplace(
          id, StreamEntry{std::nullopt, std::nullopt, *StreamRef::from(CU_STREAM_LEGACY), index, 0, device, &g});
      break;
  }
  handle_by_id_.resize(id.value + 1, nullptr);
  handle_by_id_[id.value] = streams_.at(id).ref.get();
  return id;
}

void CudaBackend::remove_stream(StreamId id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  // R9a: the work goes on; R13c: a later sync of its device still waits for it.
  use(*it->second.gpu);
  if (auto work = CompletionFence::after(*it->second.gpu->fence_events, it->second.ref))
    destroyed_work_[it->second.device].push_back(std::move(work).value());
  else
    errors_.push_back("fencing a destroyed stream's work: " + work.error().to_string());
  streams_.erase(it);
  handle_by_id_[id.value] = nullptr;
}

Status CudaBackend::synchronize_device(DeviceNumber device) {
  if (!several_devices_) return driver().check(driver().api().ctx_synchronize(), "cuCtxSynchronize");
  for (const auto& [id, entry] : streams_)
    if (entry.device == device)
      if (auto st = cuda::synchronize_stream(entry.ref.get()); !st) return st;
  for (CompletionFence& work : destroyed_work_[device])
    if (auto st = work.wait(); !st) return st;
  return {};
}

std::uint32_t CudaBackend::stream_index(StreamRef s) const {
  for (const auto& [id, entry] : streams_)
    if (entry.ref == s) return entry.index;
  throw std::invalid_argument("CudaBackend: stream is not one of this backend's streams");
}

Result<CudaBackend::Event> CudaBackend::create_event() {
  if (auto f = enter("create_event")) return *f;
  Gpu& g = gpu_for(current_device_);
  use(g);
  // A miss's cuEventCreate runs with the GPU's context current on this
  // thread (the cache's); the other calls take it from the stream or event.
  auto lease = g.events->acquire();
  if (!lease) return lease.error();
  return Event(std::move(lease).value(), current_device_);
}

std::size_t CudaBackend::live_event_count() const {
  std::size_t n = 0;
  for (const auto& [device, g] : gpus_) n += g->events->leased();
  return n;
}

Status CudaBackend::record_event(Event& e, StreamRef s) {
  if (auto f = enter("record_event")) return *f;
  if (several_devices_) {
    // R13d. Under GpuPerDevice the driver refuses it itself (below).
    const auto entry =
        std::find_if(streams_.begin(), streams_.end(), [&](const auto& kv) { return kv.second.ref == s; });
    if (entry != streams_.end() && entry->second.device != e.device() && options_.placement == DevicePlacement::OneGpu)
      return ResourceError::driver("cuEventRecord: the event was made with device " + std::to_string(e.device()) +
                                   " current and the stream is device " + std::to_string(entry->second.device) +
                                   "'s: CUDA refuses the record (CUDA_ERROR_INVALID_HANDLE, the event's context is "
                                   "not the stream's); refused here before the call, as this backend replays both "
                                   "devices in one context");
  }
  // EventRef and StreamRef are never null: straight to the driver.
  return checked(driver_->api().event_record(e.ref().get(), s.get()), "cuEventRecord");
}

Status CudaBackend::wait_event(StreamRef s, const Event& e) {
  if (auto f = enter("wait_event")) return *f;
  return checked(driver_->api().stream_wait_event(s.get(), e.ref().get(), CU_EVENT_WAIT_DEFAULT), "cuStreamWaitEvent");
}

Result<std::uint64_t> CudaBackend::alloc_async(std::size_t bytes, StreamRef s) {
  if (auto f = enter("alloc_async")) return *f;
  if (collision_) [[unlikely]]                        // tests only, armed from one thread; read-only otherwise
    return *std::exchange(collision_, std::nullopt);  // a broken driver: allocates nothing
  CUdeviceptr ptr = 0;
  Gpu& g = gpu_of(s);  // R13: the stream's device's pool
  if (auto st =
          checked(driver_->api().mem_alloc_from_pool_async(&ptr, bytes, g.pool, s.get()), "cuMemAllocFromPoolAsync");
      !st)
    return st.error();
  {
    std::lock_guard lock(allocations_lock_);
    live_allocations_.insert_or_assign(ptr, LiveAllocation{bytes, &g});
  }
  if (options_.stamp_pool_ops) {
    // R7: the allocation is a write of the whole range on its stream.
    const std::uint64_t spin = next_op(s);
    stamp(s, ptr, bytes, next_stamp_++, spin);
  }
  return static_cast<std::uint64_t>(ptr);
}

Status CudaBackend::free_async(std::uint64_t ptr, StreamRef s) {
  if (auto f = enter("free_async")) return *f;
  // The entry is taken out in one section of the lock, so two threads
  // freeing one pointer cannot both pass, and the driver call is made
  // outside it; a refused free puts it back (the address is still
  // allocated, so no other thread can have been handed it). Validation (one
  // thread) takes it out after the stamps instead: they cover the
  // allocation's padding only while it is live (covered_bytes).
  LiveAllocation claimed;
  {
    std::lock_guard lock(allocations_lock_);
    LiveAllocation* found = live_allocations_.find(ptr);
    if (found == nullptr) [[unlikely]]
      return ResourceError::driver("free_async: " + std::to_string(ptr) + " is not a live allocation of this backend");
    claimed = *found;
    if (!options_.stamp_pool_ops) live_allocations_.erase(ptr);
  }
  if (options_.stamp_pool_ops) {
    // R7: the free is a write of the whole range; a racing reader sees it.
    // It first checks the range (P2) against the last write enqueued before
    // it: a correct program orders its free after every use, so the range
    // still holds that write, while a write lost to a write-write race that
    // nothing reads afterwards (a shrunk counterexample of M3 or M6) shows
    // here as a mismatch instead of vanishing.
    const std::uint64_t spin = next_op(s);
    check(s, ptr, claimed.bytes, spin);
    stamp(s, ptr, claimed.bytes, kFreedStampBit | next_stamp_++, 0);
  }
  if (auto st = checked(driver_->api().mem_free_async(ptr, s.get()), "cuMemFreeAsync"); !st) [[unlikely]] {
    if (!options_.stamp_pool_ops) {
      std::lock_guard lock(allocations_lock_);
      live_allocations_.insert_or_assign(ptr, claimed);
    }
    return st;
  }
  if (options_.stamp_pool_ops) {
    {
      std::lock_guard lock(allocations_lock_);
      live_allocations_.erase(ptr);
    }
    // Reap's promise (P3 reap ordering) is checked against this fence: an
    // event recorded right after the free, which must have completed once
    // a reap that released the free succeeded.
    auto fence = CompletionFence::after(*gpu_of(s).fence_events, s);
    if (!fence) return ResourceError::driver_caused_by("free_async: fence after the free", fence.error());
    free_fences_.emplace(next_free_, std::move(fence).value());
    last_free_ = next_free_++;
  }
  return {};
}

bool CudaBackend::host_after_free(std::size_t free_number) {
  auto it = free_fences_.find(free_number);
  if (it == free_fences_.end()) return true;  // seen complete before
  auto ready = it->second.is_ready();
  if (!ready.ok() || !ready.value()) return false;
  free_fences_.erase(it);
  return true;
}

Status CudaBackend::synchronize_stream(StreamRef s) {
  if (auto f = enter("synchronize_stream")) return *f;
  return cuda::synchronize_stream(s.get());
}

std::uint64_t CudaBackend::next_op(StreamRef s) {
  const std::uint32_t index = stream_index(s);
  for (auto& [id, entry] : streams_) {
    if (entry.index != index) continue;
    const std::uint32_t op = entry.ops++;
    return delayed_.contains({index, op}) ? delay_ns_ : 0;
  }
  return 0;
}

Status CudaBackend::launch_kernel(Kernel k, std::uint64_t words, StreamRef s, void** args) {
  return launch_on(gpu_of(s), k, words, s, args);
}

Status CudaBackend::launch_on(const Gpu& g, Kernel k, std::uint64_t words, StreamRef s, void** args) {
  const CUfunction f = k == Kernel::StampWrite   ? g.stamp_write
                       : k == Kernel::StampCheck ? g.stamp_check
                       : k == Kernel::Delay      ? g.delay
                                                 : g.guard_count;
  const std::uint64_t blocks = std::clamp<std::uint64_t>((words + kThreads - 1) / kThreads, 1, 1024);
  return driver().check(
      driver().api().launch_kernel(f, static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0, s.get(), args, nullptr),
      "cuLaunchKernel");
}

// The stamp kernels work on whole 64-bit words, so an access covers the words
// wholly inside it. An access to a whole live allocation also covers the
// allocation's padding up to the next word: the pool hands out ranges aligned
// far beyond 8 bytes, so that padding belongs to this allocation alone and no
// other access can share it. Without this a block under 8 bytes (what a
// shrunk counterexample allocates) would be stamped and checked nowhere, and
// a race on it could never show on the GPU.
std::uint64_t CudaBackend::covered_bytes(std::uint64_t ptr, std::uint64_t bytes) const {
  std::unique_lock lock(allocations_lock_);
  if (const LiveAllocation* live = live_allocations_.find(ptr); live && live->bytes == bytes)
    return (bytes + 7) / 8 * 8;
  lock.unlock();
  if (auto host = host_buffers_.find(ptr); host != host_buffers_.end() && host->second == bytes)
    return (bytes + 7) / 8 * 8;  // R12: host buffers are made whole words long
  return bytes / 8 * 8;
}

Status CudaBackend::fill_bytes(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern) {
  gpu_of(s);  // with several GPUs: makes its context current
  if (auto st = driver().check(driver().api().memset_d8_async(ptr, pattern, bytes, s.get()), "cuMemsetD8Async"); !st)
    return st;
  // The validator's expectation of those words (a free checks its whole
  // range, P2): whole words now hold the pattern eight times; a word the
  // range covers in part holds the pattern in those bytes (little-endian)
  // and what it held before in the others.
  const std::uint64_t lo = ptr, hi = ptr + bytes;
  const auto set_bytes = [&](std::uint64_t word, std::uint64_t from, std::uint64_t to) {
    last_stamp_.for_range(word, word + 8, 0, [&](std::uint64_t, std::uint64_t, std::uint64_t& v) {
      for (std::uint64_t b = from; b < to; ++b) {
        const std::uint64_t shift = (b - word) * 8;
        v = (v & ~(std::uint64_t{0xFF} << shift)) | (std::uint64_t{pattern} << shift);
      }
    });
  };
  const std::uint64_t first_whole = (lo + 7) / 8 * 8, end_whole = hi / 8 * 8;
  if (first_whole >= end_whole) {  // within one or two words, none whole
    for (std::uint64_t word = lo / 8 * 8; word < hi; word += 8)
      set_bytes(word, std::max(lo, word), std::min(hi, word + 8));
    return {};
  }
  if (lo < first_whole) set_bytes(first_whole - 8, lo, first_whole);
  const std::uint64_t word_value = std::uint64_t{pattern} * 0x0101010101010101ULL;
  last_stamp_.for_range(first_whole, end_whole, 0,
                        [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = word_value; });
  if (end_whole < hi) set_bytes(end_whole, end_whole, hi);
  return {};
}

Status CudaBackend::count_bytes_unlike(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern,
                                       CUdeviceptr result) {
  const DriverApi& a = driver().api();
  gpu_of(s);  // with several GPUs: makes its context current
  if (auto st = driver().check(a.memset_d8_async(result, 0, 8, s.get()), "cuMemsetD8Async (guard count)"); !st)
    return st;
  if (auto st = driver().check(a.memset_d8_async(result + 8, 0xFF, 8, s.get()), "cuMemsetD8Async (guard first)"); !st)
    return st;
  CUdeviceptr p = ptr;
  std::uint64_t count = bytes;
  unsigned int pat = pattern;
  void* args[] = {&p, &count, &pat, &result};
  return launch_kernel(Kernel::GuardCount, (bytes + 7) / 8, s, args);
}

void CudaBackend::stamp(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint64_t value, std::uint64_t spin) {
  std::uint64_t words = covered_bytes(ptr, bytes) / 8;
  if (words == 0 && spin == 0) return;
  CUdeviceptr p = ptr;
  void* args[] = {&p, &words, &value, &spin};
  if (auto st = launch_kernel(Kernel::StampWrite, words, s, args); !st) errors_.push_back(st.error().to_string());
  last_stamp_.for_range(ptr, ptr + words * 8, 0, [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = value; });
}

void CudaBackend::check(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint64_t spin, bool only_written) {
  const std::uint64_t end = ptr + covered_bytes(ptr, bytes);
  // One check kernel per run of words that share an expected stamp.
  std::vector<std::pair<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t>> runs;
  last_stamp_.for_range(ptr, end, 0, [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t& v) {
    if (v != 0 || !only_written) runs.push_back({{lo, hi}, v});  // 0: no write stamped these words
  });
  if (runs.empty() && spin > 0)
    if (auto st = enqueue_delay(s, spin); !st) errors_.push_back(st.error().to_string());
  for (auto& [range, expected] : runs) {
    CUdeviceptr p = range.first;
    std::uint64_t words = (range.second - range.first) / 8;
    CUdeviceptr counter = gpu_of(s).mismatch_counter;
    void* args[] = {&p, &words, &expected, &spin, &counter};
    if (auto st = launch_kernel(Kernel::StampCheck, words, s, args); !st) errors_.push_back(st.error().to_string());
    spin = 0;  // the gate holds back the op's first kernel; the rest follow in stream order
  }
}

void CudaBackend::launch(StreamRef s, const std::vector<KernelAccess>& accesses, std::string_view label) {
  (void)label;
  std::uint64_t spin = next_op(s);
  for (const auto& a : accesses) {
    if (!reads(a.access)) continue;
    check(s, a.ptr, a.bytes, spin);
    spin = 0;
  }
  // A write first checks what it overwrites (P2), as a free does: in a
  // race-free program the write before it is ordered before it, so it has
  // landed. A write/write race (a use before ready: the allocation's write
  // held back) then shows at the second write, even when a later write
  // covers the first before anything reads the words.
  for (const auto& a : accesses) {
    if (reads(a.access) || !writes(a.access)) continue;
    check(s, a.ptr, a.bytes, spin, /*only_written=*/true);
    spin = 0;
  }
  const std::uint64_t value = next_stamp_++;
  bool launched = false;
  for (const auto& a : accesses) {
    launched = true;
    if (!writes(a.access)) continue;
    stamp(s, a.ptr, a.bytes, value, spin);
    spin = 0;
  }
  // A kernel that touches no trace buffer is still a kernel on its stream
  // (holding it back delays what is ordered after it).
  if (!launched)
    if (auto st = enqueue_delay(s, spin); !st) errors_.push_back(st.error().to_string());
}

// --- R10: a user-space allocator's blocks

Result<std::uint64_t> CudaBackend::suballoc(std::optional<std::uint32_t>, std::uint64_t ptr, std::uint64_t block_bytes,
                                            std::uint64_t, StreamRef s) {
  const std::uint32_t id = next_block_++;
  sub_blocks_[id] = {ptr, block_bytes};
  newest_block_at_[ptr] = id;
  stamp(s, ptr, block_bytes, next_stamp_++, next_op(s));  // R10a: the hand-out writes the block
  return ptr;
}

Status CudaBackend::subfree(std::optional<std::uint32_t> block, StreamRef s, const std::vector<StreamRef>&) {
  const std::uint64_t spin = next_op(s);
  auto it = block ? sub_blocks_.find(*block) : sub_blocks_.end();
  if (it == sub_blocks_.end()) return ResourceError::driver("subfree: not a live sub-block of this backend");
  const auto [ptr, bytes] = it->second;
  check(s, ptr, bytes, spin);  // R10b: changes no byte; holds what was last written
  sub_blocks_.erase(it);
  return {};
}

// --- R12: host memory, host accesses and host functions

Result<std::uint64_t> CudaBackend::host_alloc(std::uint64_t bytes, bool pinned, StreamRef host_stream) {
  (void)pinned;  // every host buffer is pinned here: see the header
  void* p = nullptr;
  if (auto st = driver().check(driver().api().mem_host_alloc(&p, (bytes + 7) / 8 * 8, CU_MEMHOSTALLOC_PORTABLE),
                               "cuMemHostAlloc");
      !st)
    return st.error();
  host_memory_.push_back(p);
  const auto ptr = reinterpret_cast<std::uint64_t>(p);
  host_buffers_[ptr] = bytes;
  // The simulator's op writing the new buffer (R12a), done by the host.
  HostWork made = host_work({}, next_op(host_stream));
  made.writes.push_back({ptr, (bytes + 7) / 8, next_stamp_++});
  last_stamp_.for_range(ptr, ptr + (bytes + 7) / 8 * 8, 0,
                        [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = made.writes.back().value; });
  made.run();
  return ptr;
}

Status CudaBackend::host_free(std::uint64_t ptr, StreamRef host_stream) {
  auto it = host_buffers_.find(ptr);
  if (it == host_buffers_.end())
    return ResourceError::driver("host_free: " + std::to_string(ptr) + " is not a live host buffer of this backend");
  // As a device free (R7): check the buffer holds the last write ordered
  // before, then stamp it freed, so a racing reader sees the free.
  HostWork freed = host_work({KernelAccess{ptr, it->second, Access::Read, std::nullopt}}, next_op(host_stream));
  const std::uint64_t value = kFreedStampBit | next_stamp_++;
  freed.writes.push_back({ptr, (it->second + 7) / 8, value});
  last_stamp_.for_range(ptr, ptr + (it->second + 7) / 8 * 8, 0,
                        [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = value; });
  freed.run();
  host_buffers_.erase(it);
  return {};
}

CudaBackend::HostWork CudaBackend::host_work(const std::vector<KernelAccess>& accesses, std::uint64_t spin) {
  HostWork w;
  w.spin_ns = spin;
  w.mismatches = &host_mismatches_;
  for (const auto& a : accesses) {
    if (!reads(a.access)) continue;
    const std::uint64_t end = a.ptr + covered_bytes(a.ptr, a.bytes);
    last_stamp_.for_range(a.ptr, end, 0, [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t& v) {
      w.checks.push_back({lo, (hi - lo) / 8, v});
    });
  }
  const std::uint64_t value = next_stamp_++;
  for (const auto& a : accesses) {
    if (!writes(a.access)) continue;
    const std::uint64_t words = covered_bytes(a.ptr, a.bytes) / 8;
    w.writes.push_back({a.ptr, words, value});
    last_stamp_.for_range(a.ptr, a.ptr + words * 8, 0,
                          [&](std::uint64_t, std::uint64_t, std::uint64_t& v) { v = value; });
  }
  return w;
}

void CudaBackend::HostWork::run() const {
  if (spin_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(spin_ns));
  std::uint64_t bad = 0;
  for (const Words& c : checks)
    for (std::uint64_t i = 0; i < c.words; ++i)
      if (reinterpret_cast<const volatile std::uint64_t*>(c.ptr)[i] != c.value) ++bad;
  for (const Words& w : writes)
    for (std::uint64_t i = 0; i < w.words; ++i) reinterpret_cast<volatile std::uint64_t*>(w.ptr)[i] = w.value;
  if (bad > 0) mismatches->fetch_add(bad);
}

void CudaBackend::host_access(StreamRef host_stream, const std::vector<KernelAccess>& accesses,
                              std::string_view label) {
  (void)label;
  host_work(accesses, next_op(host_stream)).run();
}

void CudaBackend::host_function(StreamRef s, const std::vector<KernelAccess>& accesses, std::string_view label) {
  (void)label;
  auto& work = host_functions_.emplace_back(std::make_unique<HostWork>(host_work(accesses, next_op(s))));
  gpu_of(s);  // with several GPUs: makes its context current
  const auto run = [](void* w) { static_cast<const HostWork*>(w)->run(); };
  if (auto st = driver().check(driver().api().launch_host_func(s.get(), run, work.get()), "cuLaunchHostFunc"); !st)
    errors_.push_back(st.error().to_string());
}

Status CudaBackend::enqueue_delay(StreamRef s, std::uint64_t spin_ns) {
  void* args[] = {&spin_ns};
  return launch_kernel(Kernel::Delay, 1, s, args);
}

void CudaBackend::force_delays(std::set<std::pair<std::uint32_t, std::uint32_t>> ops, std::uint64_t spin_ns) {
  delayed_ = std::move(ops);
  delay_ns_ = spin_ns;
}

void CudaBackend::drain() {
  const DriverApi& a = driver().api();
  // Waits for every GPU and sums their mismatch counters.
  const auto counted = [&](const char* why) -> std::optional<std::uint64_t> {
    std::uint64_t total = 0;
    for (const auto& [device, g] : gpus_) {
      use(*g);
      if (auto st = driver().check(a.ctx_synchronize(), why); !st) {
        errors_.push_back(st.error().to_string());
        return std::nullopt;
      }
      std::uint64_t count = 0;
      if (auto st = driver().check(a.memcpy_dtoh(&count, g->mismatch_counter, sizeof(count)), "cuMemcpyDtoH"); !st) {
        errors_.push_back(st.error().to_string());
        return std::nullopt;
      }
      total += count;
    }
    return total;
  };
  const auto count = counted("cuCtxSynchronize");
  if (!count) return;
  // R12: host functions have run by now (the contexts are idle).
  mismatches_ = *count + host_mismatches_.load();
  host_functions_.clear();
  if (!options_.check_final_contents) return;
  const std::uint64_t host_final = check_final_contents();
  const auto after = counted("cuCtxSynchronize (final contents)");
  if (!after) return;
  final_mismatches_ = *after - *count + host_final;
}

std::uint64_t CudaBackend::check_final_contents() {
  // On the legacy stream of the buffer's GPU: after everything enqueued there.
  const StreamRef legacy = *StreamRef::from(CU_STREAM_LEGACY);
  std::uint64_t host_bad = 0;
  const auto check_buffer = [&](std::uint64_t ptr, std::uint64_t bytes, const Gpu* gpu) {
    std::vector<HostWork::Words> runs;
    last_stamp_.for_range(ptr, ptr + covered_bytes(ptr, bytes), 0,
                          [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t& v) {
                            if (v != 0) runs.push_back({lo, (hi - lo) / 8, v});  // 0: no write stamped these words
                          });
    for (const HostWork::Words& r : runs) {
      if (!gpu) {  // host memory
        for (std::uint64_t i = 0; i < r.words; ++i)
          if (reinterpret_cast<const volatile std::uint64_t*>(r.ptr)[i] != r.value) ++host_bad;
        continue;
      }
      CUdeviceptr p = r.ptr;
      std::uint64_t words = r.words, expected = r.value, spin = 0;
      CUdeviceptr counter = gpu->mismatch_counter;
      void* args[] = {&p, &words, &expected, &spin, &counter};
      use(*gpu);
      if (auto st = launch_on(*gpu, Kernel::StampCheck, words, legacy, args); !st)
        errors_.push_back(st.error().to_string());
    }
  };
  live_allocations_.for_each([&](std::uint64_t ptr, const LiveAllocation& allocation) {
    check_buffer(ptr, allocation.bytes, allocation.gpu);
  });
  for (const auto& [ptr, bytes] : host_buffers_) check_buffer(ptr, bytes, nullptr);
  return host_bad;
}

std::vector<props::Violation> CudaBackend::new_problems() {
  std::vector<props::Violation> out;
  for (auto& e : errors_) out.push_back({props::Property::BackendFailure, e});
  errors_.clear();
  if (mismatches_ > mismatches_reported_) {
    out.push_back({props::Property::P2DataOracle,
                   std::to_string(mismatches_ - mismatches_reported_) +
                       " words on the GPU held another stamp than the last write ordered before their read"});
    mismatches_reported_ = mismatches_;
  }
  return out;
}

}  // namespace streamcheck::cuda
