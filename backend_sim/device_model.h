// The simulated device (SPEC §3): a thin façade over the happens-before
// state (HbState: R1-R6), the pool (Pool: R7) and the race checker with its
// value oracle (RaceChecker: P1, P2), plus the scheduler that decides, by
// asking a Chooser, which ready stream head executes next.
//
// HB rules (each implemented in HbState or Pool, where it is named, and
// tested by name):
//   R1 stream order  - ops on one stream execute in enqueue order.
//   R2 record        - record(e, s) captures the work enqueued on s so far;
//                      recording again replaces the capture.
//   R3 wait          - wait(s, e) orders later work on s after e's capture
//                      as of the wait; a never-recorded event does nothing.
//   R4 host sync     - stream/event/device synchronize, and a query that
//                      answers "done", order the host thread after the
//                      covered work; "not done" orders nothing.
//   R5 enqueue       - a host action is ordered before device work the
//                      same host thread enqueues after it.
//   R6 host threads  - program order per host thread; a new thread starts
//                      after its creator's past.
//   R7 pool          - alloc and free are ops on their stream writing the
//                      whole range; reuse of a freed range is a choice point
//                      allowed per PoolPolicy (see ReuseKind).
//   R8 default streams - the legacy default stream waits for the blocking
//                      streams and they wait for it; non-blocking streams
//                      get no implicit order (StreamKind).
//   R12 host memory  - a host thread's own accesses (host buffers made and
//                      freed, reads and writes) are ops on its host stream
//                      that complete at once, the host ordered after them
//                      (host_alloc, host_free, host_access): R1 and R5 order
//                      them with the thread's program, R4 after what it
//                      synchronized with, and nothing else.
// Which stream head completes next, which range the pool returns and
// whether a fault fires are choices asked of a Chooser; nothing else is
// nondeterministic, so a schedule string replays a run exactly.
//
// Executions, not schedules (issue 12). Findings are made at enqueue time
// from vector clocks, so a run's verdict depends only on what the host can
// observe of the device's progress: query answers and the pool's reuse
// decisions (a sync's outcome is fixed). With DeviceProgress::OnObservation
// the device never steps on its own; each observation asks for its outcome
// directly ("done" or "not done"; an opportunistic reuse of a free that has
// not run yet) and completes exactly the work that outcome needs. Device
// state only grows, so the least work that explains the outcomes so far
// leaves every later outcome open that any interleaving could give: the
// outcome sequences are exactly those of EveryStep, each run once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/byte_range.h"
#include "backend_sim/hb_state.h"
#include "backend_sim/ids.h"
#include "backend_sim/pool.h"
#include "backend_sim/race_checker.h"
#include "backend_sim/retention.h"
#include "backend_sim/schedule.h"
#include "model/kernel_access.h"

namespace streamcheck::sim {

struct AllocResult {
  std::uint64_t ptr;
  AllocationIndex allocation;
  ReuseKind reuse;
};

/// How the simulated device makes progress between host steps.
enum class DeviceProgress : std::uint8_t {
  /// At every device-progress point the chooser says which ready stream
  /// head completes, or none: every interleaving of device work is its own
  /// schedule (the naive enumeration; random schedules use it).
  EveryStep,
  /// Device work runs only where an observation needs it, and observations
  /// are the choices (see the file comment): one run per execution.
  OnObservation,
  /// Every op executes as soon as it is enqueued: a device that never lags
  /// the host (one execution of every schedule's, no device step a choice).
  /// Everything an op is ordered after was enqueued before it and has
  /// executed already, so each op is ready at once. Queries answer done and
  /// every free has run before the next allocation asks the pool. What
  /// streamed checks run (docs/TRACES.md, "Streamed checks"): an executed op
  /// whose record nothing names can be dropped, so a run's memory does not
  /// grow with its length.
  AtOnce,
};

class DeviceModel {
 public:
  DeviceModel(Chooser& chooser, PoolPolicy policy = {}, DeviceProgress progress = DeviceProgress::EveryStep)
      : chooser_(chooser), pool_(policy), progress_(progress) {}
  DeviceModel(const DeviceModel&) = delete;  // the parts refer to each other
  DeviceModel& operator=(const DeviceModel&) = delete;

  // --- streams, events, host threads
  StreamIndex create_stream(std::string name = {}, StreamKind kind = StreamKind::NonBlocking, DeviceNumber device = 0) {
    return hb_.create_stream(std::move(name), kind, device);
  }
  std::uint32_t stream_count() const { return hb_.stream_count(); }
  const std::string& stream_name(StreamIndex s) const { return hb_.stream_name(s); }
  /// `name`: the trace's name of the event (empty: "e<N>"), as reports and pictures call it.
  EventIndex create_event(std::string name = {}) { return hb_.create_event(std::move(name)); }
  const std::string& event_name(EventIndex e) const { return hb_.event_name(e); }
  void destroy_event(EventIndex e) { hb_.destroy_event(e); }
  std::size_t live_event_count() const { return hb_.live_event_count(); }
  HostThread create_host_thread() { return hb_.create_host_thread(); }
  void set_host_thread(HostThread h) { hb_.set_host_thread(h); }
  HostThread host_thread() const { return hb_.host_thread(); }

  // --- device work (each enqueue is a point where device steps may happen)
  void record(EventIndex event, StreamIndex stream) { hb_.record(event, stream); }  // R2
  void wait(StreamIndex stream, EventIndex event) { hb_.wait(stream, event); }      // R3
  OpRef launch(StreamIndex stream, const std::vector<KernelAccess>& accesses, std::string_view label);
  /// R7; `preferred`: see Pool::place.
  std::optional<AllocResult> alloc(StreamIndex stream, std::uint64_t bytes, std::string_view label = "alloc",
                                   std::optional<std::uint64_t> preferred = std::nullopt);
  /// False (and nothing enqueued) when ptr is not the start of a live allocation.
  bool free(StreamIndex stream, std::uint64_t ptr, std::string_view label = "free");  // R7
  /// R10a: a user-space allocator hands out bytes `block` of live
  /// allocation `parent` as a block for `stream` (an op on it writing the
  /// block, as a pool alloc does); nullopt when `parent` is not live.
  std::optional<AllocResult> suballoc(StreamIndex stream, AllocationIndex parent, ByteRange block, std::uint64_t bytes,
                                      std::string_view label = "suballoc");
  /// R10b/R10c: the block goes back, an op on `stream` writing it for the
  /// race checker (it changes no memory); an op ordered before one of
  /// `released_after` counts as ordered before it. False (nothing
  /// enqueued) when `block` is not a live sub-block.
  bool subfree(StreamIndex stream, AllocationIndex block, std::vector<OpRef> released_after,
               std::string_view label = "subfree");

  // --- the host's own memory work (R12): each an op on `host_stream` (the
  // running host thread's, a non-blocking stream nothing else uses) that
  // executes at once, the host thread ordered after it.
  /// R12a: a host buffer (malloc, cudaMallocHost): an op writing it.
  AllocResult host_alloc(StreamIndex host_stream, std::uint64_t bytes, std::string_view label = "host buffer");
  /// R12a: the host buffer at `ptr` goes (free, cudaFreeHost), an op
  /// writing it; false (nothing done) when it is no live host buffer.
  bool host_free(StreamIndex host_stream, std::uint64_t ptr, std::string_view label = "host free");
  /// R12b: the host reads or writes host memory.
  OpRef host_access(StreamIndex host_stream, const std::vector<KernelAccess>& accesses, std::string_view label);

  // --- host synchronization (R4)
  void sync_stream(StreamIndex stream);
  void sync_event(EventIndex event);
  /// R4 for every stream of `device` (R13c).
  void sync_device(DeviceNumber device = 0);
  /// R4. OnObservation: a choice (QueryAnswer) when the event's work has
  /// not all run; "done" runs it (and what it waits for) first.
  bool query_event(EventIndex event);
  /// R6: host-to-host ordering (HbState::host_release, host_acquire).
  std::size_t host_release() { return hb_.host_release(); }
  void host_acquire(std::size_t release) { hb_.host_acquire(release); }

  /// A point where the device may make progress: asks the chooser, one step
  /// at a time, whether (and which) ready stream head completes.
  /// OnObservation: does nothing.
  void device_steps();
  /// Completes all remaining work (in chosen order; OnObservation: the
  /// first ready stream head each time, no choice; AtOnce: none is left)
  /// and reports leaks.
  void finish();
  DeviceProgress progress() const { return progress_; }

  // --- queries
  bool happens_before(OpRef a, OpRef b) const { return hb_.happens_before(a, b); }
  /// True when the current host thread is ordered after op `a`.
  bool host_after(OpRef a) const { return hb_.host_after(a); }
  bool completed(OpRef a) const { return hb_.completed(a); }
  /// Position of op `a` in the execution order of this run (0 = the first op
  /// the simulated schedule completed); nullopt while it has not executed.
  /// For renderers (tools/render.h): the order the schedule chose, not HB.
  std::optional<std::uint64_t> completion_index(OpRef a) const { return hb_.completion(a); }
  const std::vector<Finding>& findings() const { return race_.findings(); }
  const std::vector<ValueMismatch>& value_mismatches() const { return race_.value_mismatches(); }
  /// The bytes op `a` touches, and how (tools/producers.h reads them).
  std::vector<OpAccess> accesses(OpRef a) const { return race_.accesses(a); }
  std::vector<std::pair<ByteRange, std::optional<OpRef>>> last_writes(ByteRange range) const {
    return race_.last_writes(range);
  }
  const Log& log() const { return hb_.log(); }
  std::uint32_t op_count(StreamIndex stream) const { return hb_.op_count(stream); }
  OpKind op_kind(OpRef op) const { return hb_.op(op).kind; }
  const std::string& op_label(OpRef op) const { return hb_.label(op); }
  std::uint32_t allocation_count() const { return pool_.count(); }
  ReuseKind allocation_reuse(AllocationIndex allocation) const { return pool_.allocation(allocation).reuse; }
  ByteRange allocation_range(AllocationIndex allocation) const { return pool_.allocation(allocation).range; }
  Chooser& chooser() { return chooser_; }
  const PoolPolicy& policy() const { return pool_.policy(); }
  // --- retention (backend_sim/retention.h): a long run's memory
  /// From now on the API log is counted, not kept (HbState::keep_no_log).
  void keep_no_log() { hb_.keep_no_log(); }
  /// Turns the value oracle (P2) off from now on: for a run nothing asks
  /// value_mismatches() of (RaceChecker::set_value_oracle).
  void skip_value_oracle() { race_.set_value_oracle(false); }
  /// Whether enough ops were enqueued since the last compact() for a pass
  /// to pay: kCompactEvery at least, and twice as many as the last pass
  /// found named (a pass walks what is named, so its cost stays a fraction
  /// of the ops' own).
  bool compaction_due() const {
    const std::uint64_t since = hb_.enqueued_count() - enqueued_at_compact_;
    return since >= compact_every_ && since >= 2 * named_at_compact_;
  }
  static constexpr std::uint64_t kCompactEvery = std::uint64_t{1} << 16;
  /// How many ops a pass waits for at least (kCompactEvery; tests ask 1:
  /// a pass at every statement).
  void set_compact_every(std::uint64_t ops) { compact_every_ = ops; }
  /// Drops the records of the allocations nothing names (Pool::drop_unnamed:
  /// not the live ones, the checker's nor `also_named_allocations`, those
  /// the caller holds), then those of the executed ops that nothing names:
  /// not the model's parts (the shadow, findings, the pool's kept
  /// allocations, pool dependencies) nor `also_named` (ops the caller
  /// holds). Returns what it dropped and kept of the ops,
  /// for a caller with per-op records of its own. Reading a dropped op's
  /// record afterwards is a std::logic_error (what walks every op -- the
  /// producers of a read, pictures, the HB-graph oracle -- cannot run on
  /// such a run).
  Retention compact(std::vector<OpRef> also_named = {}, std::vector<AllocationIndex> also_named_allocations = {});

  /// The parts, for oracles and tools that read one concern.
  const HbState& hb() const { return hb_; }
  const Pool& pool() const { return pool_; }
  /// Pool::scan_every_range (tests: the oracle for the counted candidates).
  void scan_every_freed_range() { pool_.scan_every_range(); }

 private:
  // --- the scheduler
  /// Executes op `r` after checking that it may (HbState::ready): a
  /// scheduler that picked a head from its cache (collect_ready_heads).
  void execute(OpRef r);
  /// Executes op `r`, which the caller has just found ready itself.
  void execute_ready(OpRef r);
  /// AtOnce: op `r`, just enqueued, executes now (it is ready: see
  /// DeviceProgress::AtOnce). Nothing under the other progress modes.
  void ran_at_once(OpRef r);
  void complete_through(StreamIndex stream, std::uint32_t count);
  /// What complete_through asks the CPU to load ahead of op r: the record
  /// of the stream's op kPrefetchOps later, then (read from it) the clock
  /// base and the checker's starts of the op kPrefetchStarts later, then
  /// (read from those) the checker's records of the op kPrefetchRecords
  /// later. A backlog's records were written long before, in another order
  /// (prefetch.h).
  void prefetch_ahead(OpRef r) const;
  static constexpr std::uint32_t kPrefetchOps = 12, kPrefetchStarts = 8, kPrefetchRecords = 4;
  void complete_covered(const VectorClock& vc);
  /// Puts the streams whose next op may execute in heads_, in index order;
  /// returns whether any op is pending at all.
  bool collect_ready_heads();

  Chooser& chooser_;
  HbState hb_;
  Pool pool_;
  DeviceProgress progress_;
  RaceChecker race_{hb_, pool_};
  std::uint64_t next_completion_ = 0;  // ops executed so far
  /// What collect_ready_heads last found of a stream's head op.
  struct HeadState {
    std::uint32_t head;              // the head's index on its stream
    std::optional<OpRef> waits_for;  // what it waits for; nullopt: ready
  };
  std::vector<std::optional<HeadState>> head_states_;  // by stream
  std::vector<StreamIndex> heads_;                     // collect_ready_heads' answer
  std::vector<OpAccess> touched_;  // launch's scratch: a launch's accesses, without a heap block each
  bool finished_ = false;
  std::uint64_t compact_every_ = kCompactEvery;
  std::uint64_t enqueued_at_compact_ = 0;  // compaction_due's counts
  std::uint64_t named_at_compact_ = 0;
};

}  // namespace streamcheck::sim
