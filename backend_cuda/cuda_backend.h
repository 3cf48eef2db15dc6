// The real GPU backend: the Backend concept over CUDA streams, events and a
// dedicated memory pool, plus what the property harness needs to check the
// model against the hardware (SPEC §6).
//
// Memory ordering is CUDA's own: R1 stream order, R2 cuEventRecord, R3
// cuStreamWaitEvent, R4 cuStreamSynchronize, R7 cuMemAllocFromPoolAsync /
// cuMemFreeAsync on a pool whose reuse attributes come from the same
// PoolPolicy the simulator is given.
//
// Validation (stamps): with `stamp_pool_ops`, every allocation and free is
// followed/preceded by a kernel that stamps the whole range on its stream,
// exactly as the simulator models them as writes (R7); `launch` runs
// stamp-check kernels for the reads (expected stamp = the last write
// enqueued before, which in a race-free program is the last write ordered
// before) and stamp-write kernels for the writes. Mismatches are counted on
// the device (P2). Ops are numbered per stream exactly as the simulator
// numbers them, so a simulator counterexample's ops can be delayed here to
// force the order in which the race shows (`force_delays`).
//
// Host threads: the six Backend calls and resolve_stream may be called from
// many host threads at once, as Resource promises its callers
// (model/resource.h): the live allocations are under a lock, the event and
// stream caches have theirs, and create_event makes the GPU's context
// current for its call on a thread that has another or none (the
// test GpuThreads.ResourceCallsFromManyHostThreadsAtOnce). Everything else
// is one thread's at a time: setup (add_stream, remove_stream), the test
// hooks (arm_fault, arm_collision, on_next_call) and validation
// (`stamp_pool_ops`, launch, drain), which is the trace replay's and
// numbers ops per stream in one order.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "backend_cuda/handles.h"
#include "backend_cuda/launch_resources.h"
#include "backend_sim/interval_map.h"
#include "model/address_map.h"
#include "model/backend.h"
#include "model/fault_injecting.h"
#include "model/kernel_access.h"
#include "model/pool_policy.h"
#include "props/violation.h"

namespace streamcheck::cuda {

/// Where the devices of a trace (R13) run.
enum class DevicePlacement : std::uint8_t {
  /// Every trace device on `device_ordinal`'s GPU: one context, one pool; a
  /// blocking stream of a device other than 0 is made non-blocking (exact
  /// while that device's legacy stream is never used).
  OneGpu,
  /// Trace device D on GPU `device_ordinal + D`: a primary context, a pool
  /// and the stamp kernels per GPU, made when D's first stream is; peer
  /// access between every two of them (a peer copy's stamp kernels read one
  /// GPU's memory from the other), so events and copies cross devices as
  /// CUDA lets them. Needs that many GPUs (add_stream says so otherwise).
  GpuPerDevice,
};

struct CudaBackendOptions {
  PoolPolicy policy{};
  int device_ordinal = 0;
  DevicePlacement placement = DevicePlacement::OneGpu;
  /// GpuPerDevice: the trace devices 0..devices-1 whose GPUs are set up by
  /// create(), before any work is enqueued (a device beyond them is set up
  /// when its first stream is made). Setting a GPU up takes milliseconds,
  /// longer than a forced delay: done between two ops of a replay, it would
  /// let the held-back op finish before its racing partner is enqueued.
  std::uint32_t devices = 1;
  /// Bytes each GPU's pool maps before any work (one allocation freed at
  /// once), so that allocations during a replay are carved from memory
  /// already mapped: a pool's first growth maps memory on the host thread,
  /// which takes longer than a forced delay. Kept only while the policy's
  /// release threshold is above it (trace replay: the maximum). 0: none.
  std::uint64_t reserve_bytes = 0;
  std::size_t max_cached_events = 256;
  std::size_t max_cached_streams = 16;
  /// Stamp allocations and frees (validation); off = bare driver calls.
  bool stamp_pool_ops = true;
  /// At drain(), check that every word of every live buffer (device and
  /// host) holds the stamp of the last write enqueued to it: in a race-free
  /// program the last write enqueued is the last ordered, so it lands last.
  /// A write/write race or a use before ready whose held-back write lands
  /// last shows here even when nothing reads the bytes afterwards
  /// (final_mismatches_total). Trace replay turns it on.
  bool check_final_contents = false;
};

/// A lock for sections of a few dozen instructions (an address map's
/// insert or erase): one exchange takes it and a plain store lets it go,
/// where std::mutex makes two locked instructions. On an H100 host, three
/// std::mutex sections per allocate + deallocate cost about 0.07x the bare
/// driver pair, one section of this per call about 0.01x
/// (docs/PERFORMANCE.md, "GPU: the backend's calls from many threads"). A
/// waiter yields its time slice until the holder lets go.
class ShortLock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

class CudaBackend {
 public:
  using StreamRef = cuda::StreamRef;
  /// Trace replay issues every call from this one host thread, in file order.
  using HostThread = std::uint32_t;
  using Mutex = std::mutex;
  template <class T>
  using Atomic = std::atomic<T>;

  /// A pooled event (timing disabled), leased from the backend's cache. It
  /// must not outlive the backend.
  class Event {
   public:
    EventRef ref() const { return lease_.get().ref(); }
    /// The trace device that was current when the event was made (R13d).
    DeviceNumber device() const { return device_; }

   private:
    friend class CudaBackend;
    Event(EventCache::Lease lease, DeviceNumber device) : lease_(std::move(lease)), device_(device) {}
    EventCache::Lease lease_;
    DeviceNumber device_ = 0;
  };

  /// Creates the backend on `options.device_ordinal`: context, pool, kernels.
  /// Fails with Driver(...) when there is no usable GPU.
  static Result<std::unique_ptr<CudaBackend>> create(CudaBackendOptions options = {});
  /// The same for a backend derived from this one (an adapter such as
  /// PooledBackend<CudaBackend>, model/pool_backend.h), built from `args`,
  /// which end with the CudaBackendOptions.
  template <class Derived, class... Args>
  static Result<std::unique_ptr<Derived>> create_as(Args&&... args) {
    std::unique_ptr<Derived> b(new Derived(std::forward<Args>(args)...));
    if (auto st = static_cast<CudaBackend&>(*b).init(); !st) return st.error();
    return b;
  }
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // --- stream registry
  /// Gives a stream an id (simulator numbering: the k-th stream added is
  /// stream index k): a pooled non-blocking stream, a blocking stream of its
  /// own (cuStreamCreate with CU_STREAM_DEFAULT), or the legacy default
  /// stream CU_STREAM_LEGACY (R8), on the GPU that `options.placement`
  /// gives trace device `device` (R13). Under OneGpu a blocking stream of a
  /// device other than 0 is made non-blocking (exact while that device's
  /// legacy stream is never used, which the replay checks first:
  /// tools/trace_gpu.cpp). The legacy stream of a device other than 0 is a
  /// std::logic_error (both placements: the handle CU_STREAM_LEGACY names
  /// whichever context is current, so two devices' would be one stream
  /// here). Throws std::runtime_error when the driver gives no stream, or
  /// under GpuPerDevice when the device has no GPU or two GPUs cannot reach
  /// each other's memory.
  StreamId add_stream(std::string name = {}, StreamKind kind = StreamKind::NonBlocking, DeviceNumber device = 0);
  void remove_stream(StreamId id);
  /// Every resource call resolves its stream: one load, not a tree search,
  /// and inline, as it is called twice on allocate + deallocate.
  std::optional<StreamRef> resolve_stream(StreamId id) const {
    if (id.value >= handle_by_id_.size()) return std::nullopt;
    return StreamRef::from(handle_by_id_[id.value]);  // null: removed
  }

  /// The trace device current on the calling thread (cudaSetDevice, R13):
  /// create_event makes its events there.
  void set_current_device(DeviceNumber device) { current_device_ = device == kNoDevice ? 0 : device; }
  /// The CUDA ordinal of the GPU a stream runs on (asked of the driver:
  /// cuStreamGetCtx), for tests that check the placement.
  Result<int> gpu_of_stream(StreamId id) const;
  /// How many GPUs this backend has set up so far (1 under OneGpu).
  std::size_t gpus_in_use() const { return gpus_.size(); }

  // --- the Backend concept
  Result<Event> create_event();
  /// R13d: an event recorded on a stream of another device than its own is
  /// refused as CUDA refuses it: under GpuPerDevice the driver's own error
  /// (the event's context is not the stream's), under OneGpu the same
  /// refusal made here before the driver is called, since both devices
  /// share one context there. Either way a Driver error.
  Status record_event(Event& e, StreamRef s);
  Status wait_event(StreamRef s, const Event& e);
  Result<std::uint64_t> alloc_async(std::size_t bytes, StreamRef s);
  Status free_async(std::uint64_t ptr, StreamRef s);
  Status synchronize_stream(StreamRef s);
  std::uint32_t device_ordinal() const { return static_cast<std::uint32_t>(options_.device_ordinal); }

  /// R10a/R10b: a user-space allocator's blocks are its own bookkeeping:
  /// handing out bytes of a live allocation and taking them back make no
  /// driver call (record_stream's events are the trace's calls: the
  /// interpreter records and synchronizes them through this backend). Each
  /// is an op of its stream, numbered as the simulator numbers it (so a
  /// finding's op held back is the one the simulator names): the hand-out
  /// stamps the block (R10a: a write), the give-back checks it holds the
  /// last write enqueued (R10b: in a race-free program nothing writes the
  /// bytes until the give-back is ordered before it), so a held-back
  /// give-back that the next block's writer overtook shows.
  Result<std::uint64_t> suballoc(std::optional<std::uint32_t> parent, std::uint64_t ptr, std::uint64_t block_bytes,
                                 std::uint64_t bytes, StreamRef s);
  Status subfree(std::optional<std::uint32_t> block, StreamRef s, const std::vector<StreamRef>& released_after);
  /// R12: host memory. Every host buffer is pinned here (cuMemHostAlloc),
  /// pageable ones too: the stamp kernels of copies and launches must reach
  /// it, and the model gives pageable copies no ordering that pinned ones
  /// lack. Host buffers stay mapped until the backend goes (a use after
  /// free then reads stale stamps instead of faulting). `host_stream` only
  /// numbers the op as the simulator does.
  Result<std::uint64_t> host_alloc(std::uint64_t bytes, bool pinned, StreamRef host_stream);
  Status host_free(std::uint64_t ptr, StreamRef host_stream);
  /// R12b: the host checks the stamps it reads and writes its own, on the
  /// CPU, after the op's delay (a host sleep).
  void host_access(StreamRef host_stream, const std::vector<KernelAccess>& accesses, std::string_view label);
  /// R12c: cuLaunchHostFunc on `s`: the function checks and writes stamps
  /// on the driver's callback thread, in stream order.
  void host_function(StreamRef s, const std::vector<KernelAccess>& accesses, std::string_view label);

  // --- validation (the props harness's ValidationBackend)
  void launch(StreamRef s, const std::vector<KernelAccess>& accesses, std::string_view label);
  void arm_fault(std::uint32_t nth, std::string_view call = {}) { faults_.arm_fault(nth, call); }
  void disarm_fault() { faults_.disarm_fault(); }
  bool fault_armed() const { return faults_.fault_armed(); }
  std::uint32_t faults_fired() const { return faults_.faults_fired(); }
  /// Events made by create_event and not yet dropped, on every GPU (P9).
  std::size_t live_event_count() const;
  /// P2 mismatches found since the last call (known only after drain()).
  std::vector<props::Violation> new_problems();
  /// Waits for all work and reads the mismatch counter.
  void drain();

  // --- corners the property harness drives (props/harness.h)
  /// The next alloc_async (once its fault point passed) returns `live_ptr`
  /// without allocating: a driver bug the resource must refuse (P5).
  void arm_collision(std::uint64_t live_ptr) { collision_ = live_ptr; }
  /// Runs `fn` once, at the start of the next backend call: another host
  /// thread acting while the caller is inside that call.
  void on_next_call(std::function<void()> fn) { next_call_hook_ = std::move(fn); }
  /// The number of the last free_async's completion fence (validation mode).
  std::optional<std::size_t> last_free() const { return last_free_; }
  /// Whether that free has completed (cuEventQuery on its fence): after a
  /// successful reap it must have (P3 reap ordering).
  bool host_after_free(std::size_t free_number);

  // --- forcing and observation
  /// Delays the memory access of these ops (stream index, op index on that
  /// stream) by `spin_ns`, so that whatever races with them runs first.
  void force_delays(std::set<std::pair<std::uint32_t, std::uint32_t>> ops, std::uint64_t spin_ns);
  /// Enqueues a kernel that only spins: a gate holding back a stream.
  Status enqueue_delay(StreamRef s, std::uint64_t spin_ns);
  // --- host synchronization beyond the Backend concept (trace replay)
  Status synchronize_event(const Event& e) { return cuda::synchronize_event(e.ref().get()); }
  Result<bool> query_event(const Event& e) { return cuda::query_event(e.ref().get()); }
  /// R4 for `device` (R13c): cuCtxSynchronize while every stream made was
  /// device 0's; else each stream of `device` and the work of its
  /// destroyed streams (their fences), since the other devices' streams
  /// share this GPU.
  Status synchronize_device(DeviceNumber device = 0);
  /// The debug tier's device work (backend_cuda/guard_memory.h): sets
  /// `bytes` bytes at `ptr` to `pattern` on s (cuMemsetD8Async), and counts
  /// on s the bytes there unlike `pattern` into result[0], the first such
  /// offset into result[1] (~0 when none; `result`: 16 device bytes).
  Status fill_bytes(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern);
  Status count_bytes_unlike(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern,
                            CUdeviceptr result);
  // --- the rest of ReplayBackend: one host thread, no origin tags or labels
  // (reports come from the simulator; ops are numbered as it numbers them).
  HostThread add_host_thread() { return 0; }
  HostThread main_host_thread() const { return 0; }
  void set_host_thread(HostThread) {}
  void set_op_origin(int) {}
  void set_op_label(const std::string&) {}
  void set_event_label(const std::string&) {}
  /// A live sub-block's number (the newest one starting at `ptr`: R10), for
  /// subfree; nullopt for any other buffer (the GPU needs no allocation
  /// numbers).
  std::optional<std::uint32_t> allocation_of(std::uint64_t ptr) const {
    auto it = newest_block_at_.find(ptr);
    if (it == newest_block_at_.end() || !sub_blocks_.contains(it->second)) return std::nullopt;
    return it->second;
  }
  /// Faults fire here only when armed, which trace replay never does.
  template <class Call>
  auto without_faults(Call&& call) {
    return call();
  }
  std::uint64_t mismatches_total() const { return mismatches_; }
  /// Words of live buffers whose final stamp was not the last write's
  /// (check_final_contents; known after drain()).
  std::uint64_t final_mismatches_total() const { return final_mismatches_; }
  /// The first GPU's (device_ordinal's) context, event cache, stream cache
  /// and pool: the only ones under OneGpu.
  const Context& context() const { return *first_gpu().context; }
  std::size_t cached_events() const { return first_gpu().events->cached(); }
  /// Fences the work enqueued on `s` so far (a pooled completion event).
  Result<CompletionFence> fence(StreamRef s) { return CompletionFence::after(*gpu_of(s).fence_events, s); }
  std::size_t cached_streams() const { return first_gpu().streams->cached(); }
  /// The dedicated pool, for benchmarks that compare against bare driver calls.
  CUmemoryPool memory_pool() const { return first_gpu().pool; }
  /// "NVIDIA H100 80GB HBM3, driver API 13000"; with several GPUs in use,
  /// each ordinal and name.
  std::string device_description() const;

 protected:
  explicit CudaBackend(CudaBackendOptions options) : options_(options) {}

 private:
  /// What this backend keeps per GPU: the primary context, a dedicated
  /// pool, the stamp kernels, the mismatch counter, the caches.
  struct Gpu {
    int ordinal = 0;
    std::optional<Context> context;  // first member: released after everything below
    CUmemoryPool pool = nullptr;
    CUmodule module = nullptr;
    CUfunction stamp_write = nullptr;
    CUfunction stamp_check = nullptr;
    CUfunction delay = nullptr;
    CUfunction guard_count = nullptr;
    CUdeviceptr mismatch_counter = 0;
    EventCache::Owner events;        // create_event's (live_event_count counts their leases)
    EventCache::Owner fence_events;  // CompletionFence's
    StreamCache::Owner streams;
  };
  enum class Kernel : std::uint8_t { StampWrite, StampCheck, Delay, GuardCount };

  Status init();
  /// Sets up the GPU `ordinal` (context, pool, kernels, counter, caches).
  Status init_gpu(Gpu& g, int ordinal);
  /// The GPU of trace device `device`, set up on first use (GpuPerDevice:
  /// with peer access to and from every GPU already in use).
  Gpu& gpu_for(DeviceNumber device);
  void enable_peer_access(Gpu& a, Gpu& b);
  const Gpu& first_gpu() const { return *gpus_.begin()->second; }
  /// The GPU `s` runs on; with several, made current on this thread, so
  /// that the driver calls that follow (kernels, streams, events) are made
  /// in its context.
  Gpu& gpu_of(StreamRef s);
  /// Makes `g`'s context current when several GPUs are in use (with one,
  /// it was made current once, at init).
  void use(const Gpu& g) const;
  std::uint32_t stream_index(StreamRef s) const;
  /// Numbers the next op on `s`; returns the spin its first kernel gets.
  std::uint64_t next_op(StreamRef s);
  /// The bytes the stamp kernels cover for an access of `bytes` at `ptr`: see covered_bytes in the .cpp.
  std::uint64_t covered_bytes(std::uint64_t ptr, std::uint64_t bytes) const;
  void stamp(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint64_t stamp, std::uint64_t spin);
  /// Checks the words of [ptr, ptr + bytes) against the last write
  /// enqueued to each; `only_written`: not the words no write stamped yet.
  void check(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint64_t spin, bool only_written = false);
  /// Launches one of the validation kernels of `s`'s GPU on `s`.
  Status launch_kernel(Kernel k, std::uint64_t words, StreamRef s, void** args);
  Status launch_on(const Gpu& g, Kernel k, std::uint64_t words, StreamRef s, void** args);
  /// R12: the CPU side of the stamps for host memory. What a host access
  /// (or a host function) checks and writes, decided at enqueue time from
  /// last_stamp_ as the kernels' are; run() does it on the calling thread.
  struct HostWork {
    struct Words {
      std::uint64_t ptr, words, value;  // value: the stamp expected (checks) or written (writes)
    };
    std::vector<Words> checks, writes;
    std::uint64_t spin_ns = 0;
    std::atomic<std::uint64_t>* mismatches = nullptr;
    void run() const;
  };
  HostWork host_work(const std::vector<KernelAccess>& accesses, std::uint64_t spin);
  /// check_final_contents: checks every stamped word of the live buffers
  /// (kernels on the legacy stream for device memory, the CPU for host
  /// memory); returns the host words found wrong. The device ones add to
  /// the mismatch counter.
  std::uint64_t check_final_contents();
  /// Every Backend call begins here: the hook of on_next_call, then the
  /// fault point.
  std::optional<ResourceError> enter(const char* call) {
    if (next_call_hook_) std::exchange(next_call_hook_, nullptr)();  // tests only: test first, move when set
    return faults_.fault_at(call);
  }
  /// A hot-path driver call's result: the driver is the one init() found,
  /// and a Status with a message is made only when the call failed.
  Status checked(CUresult r, const char* call) const {
    if (r == CUDA_SUCCESS) [[likely]]
      return {};
    return driver_->check(r, call);
  }

  CudaBackendOptions options_;
  const Driver* driver_ = nullptr;  // init(): the loaded driver, asked once
  /// By trace device (GpuPerDevice) or just device 0 (OneGpu). Declared
  /// first: what the members below lease from these goes back first.
  std::map<DeviceNumber, std::unique_ptr<Gpu>> gpus_;
  DeviceNumber current_device_ = 0;  // set_current_device
  struct StreamEntry {
    std::optional<StreamCache::Lease> lease;  // a pooled non-blocking stream
    std::optional<Stream> owned;              // a blocking stream (R8)
    StreamRef ref;                            // the stream, whichever it is
    std::uint32_t index;
    std::uint32_t ops = 0;
    DeviceNumber device = 0;  // the trace's device (R13)
    Gpu* gpu = nullptr;       // where it runs (options_.placement)
  };
  bool several_devices_ = false;  // a stream of a device other than 0 was made (R13)
  /// R13c: the work left on destroyed streams, by device, for synchronize_device.
  std::map<DeviceNumber, std::vector<CompletionFence>> destroyed_work_;
  std::map<StreamId, StreamEntry> streams_;
  /// Each stream's handle by StreamId (ids are dense and never reused);
  /// null once removed. resolve_stream's index: one load per call.
  std::vector<CUstream> handle_by_id_;
  std::uint32_t next_stream_id_ = 0;
  std::uint32_t next_stream_index_ = 0;
  struct LiveAllocation {
    std::uint64_t bytes = 0;
    Gpu* gpu = nullptr;  // whose pool it came from
  };
  /// By address, the newest few in a small array before an open-addressed
  /// table (model/address_map.h): an allocation freed while it is among
  /// them, the common case, touches no table. Iterated only to free or
  /// check them all, in no particular order.
  FrontedAddressMap<LiveAllocation> live_allocations_;
  /// live_allocations_'s: alloc_async and free_async run on many host
  /// threads at once (the resource's promise), each in one short section.
  mutable ShortLock allocations_lock_;
  std::map<std::uint64_t, std::uint64_t> host_buffers_;                          // R12: ptr -> bytes, live ones
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> sub_blocks_;  // R10: live block -> ptr, bytes
  std::map<std::uint64_t, std::uint32_t> newest_block_at_;                       // R10: ptr -> newest block there
  std::uint32_t next_block_ = 0;
  std::vector<void*> host_memory_;                        // every host buffer made, freed with the backend
  std::deque<std::unique_ptr<HostWork>> host_functions_;  // R12c: the work of each host function enqueued
  std::atomic<std::uint64_t> host_mismatches_{0};         // R12: words the CPU saw with a wrong stamp
  std::optional<std::uint64_t> collision_;
  std::function<void()> next_call_hook_;
  std::map<std::size_t, CompletionFence> free_fences_;  // free number -> fence after it
  std::optional<std::size_t> last_free_;
  std::size_t next_free_ = 0;
  sim::IntervalMap<std::uint64_t> last_stamp_;  // host view: last write enqueued per word
  /// Stamps start at a base of this backend's own (stamp_base()): memory a
  /// pool hands out again may still hold an earlier backend's stamps, and a
  /// deterministic replay would write the same values at the same places, so
  /// a write that never landed could pass for one that did.
  std::uint64_t next_stamp_ = stamp_base();
  static std::uint64_t stamp_base();
  FaultInjecting faults_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> delayed_;
  std::uint64_t delay_ns_ = 0;
  std::uint64_t mismatches_ = 0;
  std::uint64_t mismatches_reported_ = 0;
  std::uint64_t final_mismatches_ = 0;
  std::vector<std::string> errors_;  // driver failures inside validation kernels
};

static_assert(Backend<CudaBackend>, "CudaBackend must satisfy the streamcheck::Backend concept (model/backend.h)");
static_assert(ReplayBackend<CudaBackend>,
              "CudaBackend must satisfy the streamcheck::ReplayBackend concept (model/backend.h)");

}  // namespace streamcheck::cuda
