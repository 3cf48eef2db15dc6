// The simulated device: streams, events, host threads, the memory pool and
// the race checker, as a happens-before (HB) machine (SPEC §3).
//
// HB rules, each implemented at one place below and tested by name:
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
//   R7 pool          - alloc and free are ops on their stream writing the
//                      whole range; reuse of a freed range is a choice point
//                      allowed per PoolPolicy (see ReuseKind).
// Which stream head completes next, which range the pool returns and
// whether a fault fires are choices asked of a Chooser; nothing else is
// nondeterministic, so a schedule string replays a run exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/ids.h"
#include "backend_sim/interval_map.h"
#include "backend_sim/schedule.h"
#include "backend_sim/vector_clock.h"
#include "model/kernel_access.h"
#include "model/pool_policy.h"
#include "model/types.h"

namespace streamcheck::sim {

enum class OpKind : std::uint8_t { Alloc, Free, Kernel };

struct ByteRange {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t size() const { return hi - lo; }
  friend constexpr bool operator==(ByteRange, ByteRange) = default;
};

/// The pool's reuse switches are shared with the GPU backend (model/pool_policy.h).
using PoolPolicy = streamcheck::PoolPolicy;

/// How an allocation got its range.
enum class ReuseKind : std::uint8_t {
  Fresh,               // never handed out, or released back
  SameStream,          // freed on the allocating stream (always allowed)
  HostSynced,          // the free is HB-before the host (always allowed)
  EventDependency,     // the free is HB-before the allocation via events
  Opportunistic,       // the free already executed; adds no HB edge
  InternalDependency,  // the pool inserts a free -> alloc wait
};
std::string_view to_string(ReuseKind k);

enum class FindingKind : std::uint8_t { DataRace, UseBeforeReady, UseAfterFree, ReuseRace, Leak };
std::string_view to_string(FindingKind k);

/// What the checker found in the program: data, never an exception.
struct Finding {
  FindingKind kind;
  OpRef first;                  // the earlier-enqueued op (or the allocation for a leak)
  std::optional<OpRef> second;  // the later-enqueued op
  ByteRange bytes;
  bool definite = false;  // use after free: the free is HB-before the use
};

/// A read that observed a value other than the last write HB-before it (P2).
struct ValueMismatch {
  OpRef read;
  ByteRange bytes;
  std::uint64_t expected;  // stamp of the op whose write the read must see
  std::uint64_t observed;
};

struct AllocResult {
  std::uint64_t ptr;
  AllocationIndex allocation;
  ReuseKind reuse;
};

/// One API call, in program order, for the HB-graph oracle and renderers.
struct LogEntry {
  enum class Kind : std::uint8_t { Enqueue, Record, Wait, SyncStream, SyncEvent, SyncDevice, QueryDone, QueryNotDone };
  Kind kind;
  HostThread host;
  StreamIndex stream;
  EventIndex event;
  OpRef op{};
  /// For an Enqueue of a pool allocation with an internal dependency: the
  /// free the pool made it wait for (not a user-visible HB edge).
  std::optional<OpRef> pool_wait;
};

class DeviceModel {
 public:
  DeviceModel(Chooser& chooser, PoolPolicy policy = {});

  // --- streams, events, host threads
  StreamIndex create_stream(std::string name = {});
  std::uint32_t stream_count() const { return static_cast<std::uint32_t>(streams_.size()); }
  const std::string& stream_name(StreamIndex s) const;
  EventIndex create_event();
  void destroy_event(EventIndex e);
  std::size_t live_event_count() const { return live_events_; }
  HostThread create_host_thread();
  void set_host_thread(HostThread h);
  HostThread host_thread() const { return current_host_; }

  // --- device work (each enqueue is a point where device steps may happen)
  void record(EventIndex event, StreamIndex stream);  // R2
  void wait(StreamIndex stream, EventIndex event);    // R3
  OpRef launch(StreamIndex stream, const std::vector<KernelAccess>& accesses, std::string label);
  std::optional<AllocResult> alloc(StreamIndex stream, std::uint64_t bytes, std::string label = "alloc");  // R7
  /// False (and nothing enqueued) when ptr is not the start of a live allocation.
  bool free(StreamIndex stream, std::uint64_t ptr, std::string label = "free");  // R7

  // --- host synchronization (R4)
  void sync_stream(StreamIndex stream);
  void sync_event(EventIndex event);
  void sync_device();
  bool query_event(EventIndex event);

  /// A point where the device may make progress: asks the chooser, one step
  /// at a time, whether (and which) ready stream head completes.
  void device_steps();
  /// Completes all remaining work (in chosen order) and reports leaks.
  void finish();

  // --- queries
  bool happens_before(OpRef a, OpRef b) const;
  /// True when the current host thread is ordered after op `a`.
  bool host_after(OpRef a) const;
  bool completed(OpRef a) const;
  /// Position of op `a` in the execution order of this run (0 = the first op
  /// the simulated schedule completed); nullopt while it has not executed.
  /// For renderers (tools/render.h): the order the schedule chose, not HB.
  std::optional<std::uint64_t> completion_index(OpRef a) const;
  const std::vector<Finding>& findings() const { return findings_; }
  const std::vector<ValueMismatch>& value_mismatches() const { return mismatches_; }
  const std::vector<LogEntry>& log() const { return log_; }
  std::uint32_t op_count(StreamIndex stream) const;
  OpKind op_kind(OpRef op) const;
  const std::string& op_label(OpRef op) const;
  std::uint32_t allocation_count() const { return static_cast<std::uint32_t>(allocations_.size()); }
  ReuseKind allocation_reuse(AllocationIndex allocation) const;
  ByteRange allocation_range(AllocationIndex allocation) const;
  Chooser& chooser() { return chooser_; }
  const PoolPolicy& policy() const { return policy_; }

 private:
  struct OpAccess {
    ByteRange range;
    Access access;
    AllocationIndex allocation;
    std::vector<std::pair<ByteRange, std::uint64_t>> expected;  // P2: stamps a read must see
  };
  struct Op {
    OpKind kind;
    VectorClock vc;
    std::string label;
    std::vector<OpAccess> accesses;
    std::optional<OpRef> pool_dep;  // exec dependency inserted by the pool
    std::uint64_t stamp;            // value this op's writes leave in memory
    bool done = false;
    std::optional<std::uint64_t> completion = std::nullopt;  // index in the execution order
  };
  struct Stream {
    std::string name;
    AgentId agent;
    VectorClock vc;  // clock of the next op: joins of waits and host actions
    std::vector<Op> ops;
    std::uint32_t completed = 0;  // ops[0..completed) have executed
  };
  struct Event {
    bool live = true;
    std::optional<VectorClock> capture;
  };
  struct Allocation {
    ByteRange range;      // rounded range owned by this allocation
    std::uint64_t bytes;  // requested bytes
    StreamIndex stream;
    OpRef alloc_op;
    std::optional<OpRef> free_op;
    std::optional<OpRef> fence;  // free of the previous occupant (pool order)
    ReuseKind reuse;
  };
  struct FreeRange {
    ByteRange range;
    OpRef free_op;
  };
  struct ShadowAccess {
    OpRef op;
    AllocationIndex allocation;
  };
  struct Shadow {
    std::optional<ShadowAccess> last_write;
    std::vector<ShadowAccess> reads;  // at most one per stream, plus reads a write raced with
    std::optional<AllocationIndex> allocation;
    bool freed = false;
  };

  AgentId agent_of_stream(StreamIndex s) const { return streams_.at(s.value).agent; }
  const Op& op(OpRef r) const { return streams_.at(r.stream.value).ops.at(r.index); }
  Op& op(OpRef r) { return streams_.at(r.stream.value).ops.at(r.index); }
  VectorClock& host_vc() { return hosts_.at(current_host_.value); }
  const VectorClock& host_vc() const { return hosts_.at(current_host_.value); }
  void check_stream(StreamIndex s) const;
  void check_event(EventIndex e) const;
  OpRef enqueue(StreamIndex stream, Op op);
  bool ordered(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const;
  void check_access(OpRef qref, OpAccess& acc);
  void report(FindingKind kind, OpRef first, std::optional<OpRef> second, ByteRange bytes, bool definite);
  FindingKind classify(const ShadowAccess& p, OpRef q, AllocationIndex q_allocation) const;
  AllocationIndex allocation_at(std::uint64_t ptr) const;
  bool ready(OpRef r) const;
  void execute(OpRef r);
  void complete_through(StreamIndex stream, std::uint32_t count);
  void complete_covered(const VectorClock& vc);
  void release_idle_ranges();
  void host_joins(const VectorClock& vc);
  /// Every host API call is one event of the current host thread.
  void host_tick();

  Chooser& chooser_;
  PoolPolicy policy_;
  std::vector<Stream> streams_;
  std::vector<Event> events_;
  std::size_t live_events_ = 0;
  std::vector<VectorClock> hosts_;
  std::vector<AgentId> host_agents_;
  HostThread current_host_;
  AgentId next_agent_ = 0;  // streams and host threads share one numbering
  std::vector<Allocation> allocations_;
  std::vector<FreeRange> free_ranges_;
  std::vector<ByteRange> released_;
  std::uint64_t bump_ = 0;
  IntervalMap<Shadow> shadow_;
  IntervalMap<std::uint64_t> memory_;
  std::uint64_t next_stamp_ = 1;
  std::uint64_t next_completion_ = 0;  // ops executed so far
  std::vector<Finding> findings_;
  std::vector<ValueMismatch> mismatches_;
  std::vector<LogEntry> log_;
  bool finished_ = false;
};

}  // namespace streamcheck::sim
