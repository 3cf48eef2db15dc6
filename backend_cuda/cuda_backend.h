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
#include <utility>
#include <vector>

#include "backend_cuda/handles.h"
#include "backend_cuda/launch_resources.h"
#include "backend_sim/interval_map.h"
#include "model/backend.h"
#include "model/fault_injecting.h"
#include "model/kernel_access.h"
#include "model/pool_policy.h"
#include "props/violation.h"

namespace streamcheck::cuda {

struct CudaBackendOptions {
  PoolPolicy policy{};
  int device_ordinal = 0;
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

class CudaBackend {
 public:
  using StreamRef = cuda::StreamRef;
  /// Trace replay issues every call from this one host thread, in file order.
  using HostThread = std::uint32_t;
  using Mutex = std::mutex;
  template <class T>
  using Atomic = std::atomic<T>;

  /// A pooled event (timing disabled), leased from the backend's cache.
  class Event {
   public:
    Event(Event&& o) noexcept : lease_(std::move(o.lease_)), counter_(std::exchange(o.counter_, nullptr)) {}
    Event& operator=(Event&& o) noexcept {
      if (this != &o) {
        release();
        lease_ = std::move(o.lease_);
        counter_ = std::exchange(o.counter_, nullptr);
      }
      return *this;
    }
    Event(const Event&) = delete;
    ~Event() { release(); }
    EventRef ref() const { return lease_.get().ref(); }

   private:
    friend class CudaBackend;
    Event(EventCache::Lease lease, std::atomic<std::size_t>* counter) : lease_(std::move(lease)), counter_(counter) {}
    void release() {
      if (counter_) counter_->fetch_sub(1);
      counter_ = nullptr;
    }
    EventCache::Lease lease_;
    std::atomic<std::size_t>* counter_;
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
  /// stream CU_STREAM_LEGACY (R8). Every device of a trace (R13) replays
  /// on this backend's one GPU: a blocking stream of a device other than 0
  /// is made non-blocking (exact while that device's legacy stream is never
  /// used, which the replay checks first: tools/gpu_validate.cpp), and the
  /// legacy stream of such a device is a std::logic_error. Throws
  /// std::runtime_error when the driver gives no stream.
  StreamId add_stream(std::string name = {}, StreamKind kind = StreamKind::NonBlocking, DeviceNumber device = 0);
  void remove_stream(StreamId id);
  std::optional<StreamRef> resolve_stream(StreamId id) const;

  // --- the Backend concept
  Result<Event> create_event();
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
  void host_access(StreamRef host_stream, const std::vector<KernelAccess>& accesses, std::string label);
  /// R12c: cuLaunchHostFunc on `s`: the function checks and writes stamps
  /// on the driver's callback thread, in stream order.
  void host_function(StreamRef s, const std::vector<KernelAccess>& accesses, std::string label);

  // --- validation (the props harness's ValidationBackend)
  void launch(StreamRef s, const std::vector<KernelAccess>& accesses, std::string label);
  void arm_fault(std::uint32_t nth, std::string_view call = {}) { faults_.arm_fault(nth, call); }
  void disarm_fault() { faults_.disarm_fault(); }
  bool fault_armed() const { return faults_.fault_armed(); }
  std::uint32_t faults_fired() const { return faults_.faults_fired(); }
  std::size_t live_event_count() const { return live_events_.load(); }
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
  const Context& context() const { return *context_; }
  std::size_t cached_events() const { return events_->cached(); }
  /// Fences the work enqueued on `s` so far (a pooled completion event).
  Result<CompletionFence> fence(StreamRef s) { return CompletionFence::after(*events_, s); }
  std::size_t cached_streams() const { return streams_cache_->cached(); }
  /// The dedicated pool, for benchmarks that compare against bare driver calls.
  CUmemoryPool memory_pool() const { return pool_; }
  /// "NVIDIA H100 80GB HBM3, driver 13000".
  std::string device_description() const;

 protected:
  explicit CudaBackend(CudaBackendOptions options) : options_(options) {}

 private:
  Status init();
  std::uint32_t stream_index(StreamRef s) const;
  /// Numbers the next op on `s`; returns the spin its first kernel gets.
  std::uint64_t next_op(StreamRef s);
  /// The bytes the stamp kernels cover for an access of `bytes` at `ptr`: see covered_bytes in the .cpp.
  std::uint64_t covered_bytes(std::uint64_t ptr, std::uint64_t bytes) const;
  void stamp(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint64_t stamp, std::uint64_t spin);
  void check(StreamRef s, std::uint64_t ptr, std::uint64_t bytes, std::uint64_t spin);
  Status launch_kernel(CUfunction f, std::uint64_t words, StreamRef s, void** args);
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
    if (auto hook = std::exchange(next_call_hook_, nullptr)) hook();
    return faults_.fault_at(call);
  }

  CudaBackendOptions options_;
  std::optional<Context> context_;
  CUmemoryPool pool_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction stamp_write_ = nullptr;
  CUfunction stamp_check_ = nullptr;
  CUfunction delay_ = nullptr;
  CUfunction guard_count_ = nullptr;
  CUdeviceptr mismatch_counter_ = 0;
  std::shared_ptr<EventCache> events_;
  std::shared_ptr<StreamCache> streams_cache_;
  struct StreamEntry {
    std::optional<StreamCache::Lease> lease;  // a pooled non-blocking stream
    std::optional<Stream> owned;              // a blocking stream (R8)
    StreamRef ref;                            // the stream, whichever it is
    std::uint32_t index;
    std::uint32_t ops = 0;
    DeviceNumber device = 0;  // the trace's device (R13); every one runs on this GPU
  };
  bool several_devices_ = false;  // a stream of a device other than 0 was made (R13)
  /// R13c: the work left on destroyed streams, by device, for synchronize_device.
  std::map<DeviceNumber, std::vector<CompletionFence>> destroyed_work_;
  std::map<StreamId, StreamEntry> streams_;
  std::uint32_t next_stream_id_ = 0;
  std::uint32_t next_stream_index_ = 0;
  std::map<std::uint64_t, std::uint64_t> live_allocations_;                      // ptr -> bytes
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
  std::uint64_t next_stamp_ = 1;
  std::atomic<std::size_t> live_events_{0};
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
