// The happens-before state of a simulated run: streams, events, host threads,
// their vector clocks, how far each stream has executed, and the API log.
// It says what is ordered before what; which op executes next is the
// scheduler's choice (DeviceModel), what the ops touch is the race checker's
// (RaceChecker), and where allocations go is the pool's (Pool).
//
// HB rules, each implemented at the function named beside it:
//   R1 stream order  - ops on one stream execute in enqueue order (enqueue).
//   R2 record        - record(e, s) captures the work enqueued on s so far;
//                      recording again replaces the capture (record).
//   R3 wait          - wait(s, e) orders later work on s after e's capture
//                      as of the wait; a never-recorded event does nothing
//                      (wait).
//   R4 host sync     - stream/event/device synchronize, and a query that
//                      answers "done", order the host thread after the
//                      covered work; "not done" orders nothing (sync_stream,
//                      sync_event, sync_device, query_event).
//   R5 enqueue       - a host action is ordered before device work the
//                      same host thread enqueues after it (enqueue, record,
//                      wait).
//   R6 host threads  - a host thread's actions are ordered in program order,
//                      and creating a thread orders the child after its
//                      creator's past (host_tick, create_host_thread).
//                      Host-to-host ordering (R6a spawn, R6b join, R6c
//                      unlock -> lock, R6d send -> receive) is a release
//                      by one thread and an acquire of it by another: the
//                      acquirer is ordered after the releaser's past
//                      (host_release, host_acquire).
//   R8 default streams - every stream-side node (op, record, wait) on the
//                      legacy default stream is ordered after what was
//                      enqueued before it on every blocking stream, and
//                      one on a blocking stream after what was enqueued
//                      before it on the legacy stream; non-blocking streams
//                      get no implicit order (default_stream_barrier).
//   R13 devices      - every stream belongs to a device (host streams to
//                      none): R8 holds per device -- each device has its
//                      own legacy stream, ordered with that device's
//                      blocking streams only (R13a) -- and sync_device
//                      covers one device's streams (R13c).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend_sim/chunked_deque.h"
#include "backend_sim/ids.h"
#include "backend_sim/label_table.h"
#include "backend_sim/prefetch.h"
#include "backend_sim/retention.h"
#include "backend_sim/vector_clock.h"
#include "model/types.h"

namespace streamcheck::sim {

enum class OpKind : std::uint8_t { Alloc, Free, Kernel };

/// One API call, in program order, for the HB-graph oracle and renderers.
/// One is kept per call of a run, so it is 12 bytes: what only some kinds
/// have (an enqueue's op index, an event, a device synchronize's device, an
/// acquire's release) shares one word, read through accessors that say
/// which kinds have it, and the kind shares one with the host thread (a
/// run has at most kMaxHostThreads). (An enqueue's pool wait is its op's
/// HbState::pool_dep.)
struct LogEntry {
  enum class Kind : std::uint8_t {
    Enqueue,
    Record,
    Wait,
    SyncStream,
    SyncEvent,
    SyncDevice,
    QueryDone,
    QueryNotDone,
    HostRelease,  // R6: the host thread hands its past on (spawn, unlock, send, thread end)
    HostAcquire,  // R6: the host thread is ordered after a release (released_by)
    kLast = HostAcquire,
  };
  static constexpr std::uint32_t kKindBits = 4;
  static constexpr std::uint32_t kMaxHostThreads = std::uint32_t{1} << (32 - kKindBits);
  static_assert(static_cast<std::uint32_t>(Kind::kLast) < (1u << kKindBits));

  StreamIndex stream;  // the stream of an Enqueue, Record, Wait or SyncStream; 0 for any other kind
  Kind kind() const { return static_cast<Kind>(kind_and_host_ & ((1u << kKindBits) - 1)); }
  /// The host thread that made the call.
  HostThread host() const { return HostThread{kind_and_host_ >> kKindBits}; }

  static LogEntry enqueue(HostThread host, OpRef op) { return LogEntry(Kind::Enqueue, host, op.stream, op.index); }
  /// Record, Wait, SyncStream, SyncEvent, QueryDone, QueryNotDone, HostRelease.
  static LogEntry host_call(Kind kind, HostThread host, StreamIndex stream, EventIndex event) {
    return LogEntry(kind, host, stream, event.value);
  }
  static LogEntry sync_device(HostThread host, DeviceNumber device) {
    return LogEntry(Kind::SyncDevice, host, {}, device);
  }
  /// Throws std::length_error for a release past the 2^32nd log entry.
  static LogEntry host_acquire(HostThread host, std::size_t released_by);

  /// For an Enqueue: its op; OpRef{} for any other kind.
  OpRef op() const { return kind() == Kind::Enqueue ? OpRef{stream, slot_} : OpRef{}; }
  /// For a Record, Wait, SyncEvent, QueryDone or QueryNotDone: its event;
  /// EventIndex{} for any other kind.
  EventIndex event() const { return names_event() ? EventIndex{slot_} : EventIndex{}; }
  /// For a HostAcquire: the HostRelease entry it is ordered after.
  std::optional<std::size_t> released_by() const {
    if (kind() != Kind::HostAcquire) return std::nullopt;
    return std::size_t{slot_};
  }
  /// For a SyncDevice: the device synchronized (R13c); 0 for any other kind.
  DeviceNumber device() const { return kind() == Kind::SyncDevice ? DeviceNumber{slot_} : DeviceNumber{0}; }

 private:
  /// `h` is below kMaxHostThreads (HbState::create_host_thread makes no more).
  LogEntry(Kind k, HostThread h, StreamIndex s, std::uint32_t slot)
      : stream(s), kind_and_host_((h.value << kKindBits) | static_cast<std::uint32_t>(k)), slot_(slot) {}
  bool names_event() const {
    return kind() == Kind::Record || kind() == Kind::Wait || kind() == Kind::SyncEvent || kind() == Kind::QueryDone ||
           kind() == Kind::QueryNotDone;
  }
  std::uint32_t kind_and_host_;  // the host thread << kKindBits | the kind
  std::uint32_t slot_ = 0;       // the op index, event, device or release, by kind
};
static_assert(sizeof(LogEntry) <= 12, "a LogEntry is kept per API call of a run: keep it at 12 bytes");

/// The API log of a run: a deque, so that a long run grows it by chunks (a
/// vector doubling it copied every entry and, at its peak, held twice the
/// memory).
using Log = ChunkedDeque<LogEntry>;

class HbState {
 public:
  /// What HB knows of one op: 20 bytes, one kept per op of a run (the
  /// pool's rare dependency is kept beside them, pool_deps_).
  struct Op {
    OpKind kind;
    /// Whether the pool made the op wait for a free (pool_dep(op) says which).
    bool has_pool_dep = false;
    /// The op's label, interned: label(op) reads it. A program's ops have a
    /// few labels (its kernel names) and a std::string in each op was a
    /// fifth of its record.
    std::uint32_t label_id;
    /// The op's clock (what it is ordered after), kept by difference and
    /// only at the streams' components: every query of an op's clock asks
    /// how many ops of a stream it covers (happens_before, ready; a host
    /// thread's component of it is never read), and consecutive ops of a
    /// stream differ there only in their own stream's until a wait, a
    /// barrier (R8) or a host synchronize changes another one. So a base
    /// (the streams' components, by stream index: 4 bytes a stream) is
    /// kept per change, not per op (OpClock): the own stream's component is
    /// the op's index + 1 (R1), every other stream's is the base's. This
    /// says where the base is (HbState::base_components).
    std::uint32_t clock_base;
    /// Its index in the execution order + 1, once executed; 0 before
    /// (completion(op) reads it).
    std::uint32_t executed_as = 0;
    /// Its place in the enqueue order of the whole run, from 1: the race
    /// checker's stamp of the op (RaceChecker::stamp_of), kept here so that
    /// running an op reads one record for both, not a second one in a
    /// table of the checker's (docs/PERFORMANCE.md).
    std::uint32_t enqueued_as = 0;
  };

  HbState();

  // --- streams, events, host threads
  /// `kind` (R8) on `device` (R13): a second LegacyDefault stream of one
  /// device is a std::logic_error (a device has one).
  StreamIndex create_stream(std::string name, StreamKind kind = StreamKind::NonBlocking, DeviceNumber device = 0);
  StreamKind stream_kind(StreamIndex s) const { return stream(s).kind; }
  DeviceNumber stream_device(StreamIndex s) const { return stream(s).device; }
  /// Every stream's kind and device, by index (the HB-graph oracle's R8
  /// and R13 edges).
  std::vector<StreamShape> stream_shapes() const;
  /// Throws std::out_of_range for a stream that was never created.
  void check_stream(StreamIndex s) const;
  std::uint32_t stream_count() const { return static_cast<std::uint32_t>(streams_.size()); }
  const std::string& stream_name(StreamIndex s) const;
  /// The clock of the next op on the stream: the joins of its waits and host actions.
  const VectorClock& stream_clock(StreamIndex s) const;
  /// Inline: the device's stepping asks it of every stream at every step.
  std::uint32_t op_count(StreamIndex s) const {
    if (s.value >= streams_.size()) check_stream(s);  // throws, saying which
    return streams_[s.value].count();
  }
  /// `name` is how reports and pictures call the event (the trace's name);
  /// empty: "e<N>".
  EventIndex create_event(std::string name = {});
  const std::string& event_name(EventIndex e) const;
  void destroy_event(EventIndex e);
  std::size_t live_event_count() const { return live_events_; }
  /// The capture of the event's last record; nullopt while never recorded.
  const std::optional<VectorClock>& capture(EventIndex e) const;
  /// Throws std::length_error past LogEntry::kMaxHostThreads.
  HostThread create_host_thread();
  void set_host_thread(HostThread h);
  HostThread host_thread() const { return current_host_; }
  const VectorClock& host_clock() const { return hosts_.at(current_host_.value); }

  // --- the rules; each host call is logged
  OpRef enqueue(StreamIndex stream, OpKind kind, std::string_view label, std::optional<OpRef> pool_dep);  // R1, R5
  void record(EventIndex event, StreamIndex stream);                                                      // R2
  void wait(StreamIndex stream, EventIndex event);                                                        // R3
  /// R4: the host is ordered after everything enqueued on the stream (the
  /// caller executes that work first).
  void sync_stream(StreamIndex stream);
  /// R4: the host is ordered after the event's capture; nothing for a
  /// never-recorded event.
  void sync_event(EventIndex event);
  /// R4: the host is ordered after every stream of `device` (R13c).
  void sync_device(DeviceNumber device = 0);
  /// R4: "done" when the capture has executed, and only then the host is
  /// ordered after it.
  bool query_event(EventIndex event);
  /// R6: the current host thread hands its past on; returns the release's
  /// log entry, for host_acquire.
  std::size_t host_release();
  /// R6: the current host thread is ordered after release `entry` (a log
  /// entry host_release returned). Throws std::out_of_range for any other.
  void host_acquire(std::size_t entry);

  // --- execution progress (the scheduler decides the order)
  /// How many ops of the stream have executed: ops [0, n) have.
  std::uint32_t executed_count(StreamIndex s) const { return streams_.at(s.value).executed; }
  /// Marks the stream's next op executed, as number `completion` of the run.
  void mark_executed(StreamIndex s, std::uint64_t completion);

  // --- queries
  /// The record of op `r`: std::out_of_range for an op the run never
  /// enqueued, std::logic_error for one whose record a retention pass
  /// dropped (nothing named it: drop()).
  const Op& op(OpRef r) const {
    const Stream& st = streams_.at(r.stream.value);
    if (r.index >= st.dropped) return st.ops.at(r.index - st.held_from);
    return kept_op(r);
  }
  /// Hints that op r of the stream is run soon (prefetch.h): its record,
  /// and, once that is in, the clock base it points to. Nothing for an op
  /// the stream does not have.
  void prefetch_op(OpRef r) const {
    const Stream& st = streams_.at(r.stream.value);
    if (r.index >= st.dropped && r.index < st.count()) prefetch(&st.ops[r.index - st.held_from]);
  }
  void prefetch_clock_base(OpRef r) const {
    const Stream& st = streams_.at(r.stream.value);
    if (r.index < st.dropped || r.index >= st.count()) return;
    const std::uint32_t base = st.ops[r.index - st.held_from].clock_base;
    if (!(base & (kWideBase | kKeptBase))) prefetch(&clock_words_[base]);
  }
  const std::string& label(OpRef r) const { return labels_.at(op(r).label_id); }
  /// The op's index in the execution order of the run; nullopt while it
  /// has not executed.
  std::optional<std::uint64_t> completion(OpRef r) const {
    const std::uint32_t as = op(r).executed_as;
    return as == 0 ? std::nullopt : std::optional<std::uint64_t>(as - 1);
  }
  /// The execution dependency the pool inserted before op `r` (not HB):
  /// the free whose range it reuses; nullopt for most ops.
  std::optional<OpRef> pool_dep(OpRef r) const;
  bool happens_before(OpRef a, OpRef b) const;
  /// True when the current host thread is ordered after op `a`.
  bool host_after(OpRef a) const;
  /// True when clock `vc` is ordered after op `a`.
  bool covers(const VectorClock& vc, OpRef a) const;
  bool completed(OpRef a) const;
  /// True when every op the clock covers has executed.
  bool executed_all(const VectorClock& vc) const;
  /// How many ops of stream `s` the clock is ordered after.
  std::uint32_t covered_count(const VectorClock& vc, StreamIndex s) const { return vc.get(stream(s).agent); }
  /// An op's clock at the streams' components (Op::clock_base says how it
  /// is kept), read through covered_count. It points into the HbState's
  /// records: use it at once.
  class OpClock {
   private:
    friend class HbState;
    OpClock(StreamIndex own, std::uint32_t own_count, const std::uint32_t* base, std::uint32_t base_streams)
        : own_(own), own_count_(own_count), base_streams_(base_streams), base_(base) {}
    std::uint32_t get(StreamIndex s) const {
      if (s == own_) return own_count_;                     // R1
      return s.value < base_streams_ ? base_[s.value] : 0;  // a stream made after the base: none of its ops
    }
    StreamIndex own_;
    std::uint32_t own_count_;
    std::uint32_t base_streams_;
    const std::uint32_t* base_;
  };
  OpClock op_clock(OpRef r) const;
  /// True when op `a` is ordered before the op whose clock `c` is, or is
  /// that op: happens_before(a, b) for every a but b itself, with b's
  /// clock looked up once (the race checker asks it of every access in the
  /// shadow of the bytes b touches). `a` must be an op of this state.
  bool covers(const OpClock& c, OpRef a) const { return c.get(a.stream) > a.index; }
  /// How many ops of stream `s` op clock `c` is ordered after.
  std::uint32_t covered_count(const OpClock& c, StreamIndex s) const { return c.get(s); }
  /// True when op `r` may execute: it is its stream's next op, and all it is
  /// ordered after, and the pool's dependency, have executed.
  bool ready(OpRef r) const;
  /// An op that must execute before op `r` and has not: the last op r
  /// waits for on the first stream (in index order) that has not run that
  /// far, else the pool's dependency; nullopt when none is left. It stays
  /// unmet exactly while its stream has executed no further (executed
  /// counts only grow), so a scheduler may keep it to skip asking again.
  std::optional<OpRef> unmet_dependency(OpRef r) const {
    const std::uint64_t packed = unmet_dependency_packed(r);
    if (packed == kNoDependency) return std::nullopt;
    return OpRef{StreamIndex{static_cast<std::uint32_t>(packed >> 32)}, static_cast<std::uint32_t>(packed)};
  }
  /// The API log; std::logic_error for a run that keeps none (keep_no_log).
  const Log& log() const;
  /// How many API calls the run made (log entries, kept or not).
  std::size_t log_entries() const { return log_entries_; }
  /// From now on the API log is counted, not kept (a streamed check: 12
  /// bytes a call is what a long run cannot keep). Nothing that reads the
  /// log (pictures, the HB-graph oracle, redundancy) may then run.
  void keep_no_log() {
    keep_log_ = false;
    log_ = Log();
  }

  // --- retention (backend_sim/retention.h)
  /// Adds the ops this state names besides its streams' own (the pool's
  /// dependencies) to `named`.
  void add_named(std::vector<OpRef>& named) const;
  /// Drops the records of ops [0, r.dropped_before[s]) of each stream s,
  /// which must have executed, but for r.kept; frees the storage of whole
  /// chunks of them and of the clock bases only they used. An op listed as
  /// kept whose record an earlier pass dropped is a std::logic_error.
  void drop(const Retention& r);
  /// How many ops the run has enqueued, on all streams.
  std::uint32_t enqueued_count() const { return enqueued_; }
  /// How many dropped ops' records are kept (the side table).
  std::size_t kept_op_count() const { return kept_ops_.size(); }
  /// How many labels the held op records name (a dropped op's goes with it).
  std::size_t label_count() const { return labels_.size(); }
  /// Ops of stream `s` whose records were dropped or are kept aside: ops
  /// [0, dropped_count) are no longer in the stream's window.
  std::uint32_t dropped_count(StreamIndex s) const { return stream(s).dropped; }

 private:
  struct Stream {
    std::string name;
    StreamKind kind = StreamKind::NonBlocking;
    DeviceNumber device = 0;
    AgentId agent;
    VectorClock vc;  // clock of the next op: joins of waits and host actions
    /// Its ops from held_from on (by blocks: a vector doubling it copied
    /// every op). A retention pass drops a prefix: ops below `dropped` are
    /// read from the side table (kept_ops_) or not at all, and whole chunks
    /// below it are freed (held_from, a multiple of the chunk size, moves up).
    ChunkedDeque<Op> ops;
    std::uint32_t held_from = 0;
    std::uint32_t dropped = 0;
    std::optional<std::uint32_t> last_base;  // the base of its last op (Op::clock_base)
    std::uint32_t executed = 0;              // ops[0..executed) have executed
    std::uint32_t count() const { return held_from + static_cast<std::uint32_t>(ops.size()); }
    Op& at(std::uint32_t index) { return ops.at(index - held_from); }
  };
  struct Event {
    std::string name;
    bool live = true;
    std::optional<VectorClock> capture;
  };

  Stream& stream(StreamIndex s);
  const Stream& stream(StreamIndex s) const;
  Event& live_event(EventIndex e, const char* call);
  void check_event(EventIndex e) const;
  /// R6: every host API call is the next event of the current host thread.
  /// Answers the thread's component after the tick.
  struct HostTick {
    AgentId agent;
    std::uint32_t count;
  };
  HostTick host_tick();
  /// R5 and R6 for a call that puts work on a stream: the host's next
  /// event (host_tick), and the stream's clock `vc` joined with the host's
  /// past including that event. The join reads the host clock before the
  /// tick writes it: a vector load of the words a store has just written
  /// waits for the store to complete, the largest single cost of enqueue.
  void host_tick_into(VectorClock& vc);
  /// R8: orders the next stream-side node of `s` after the work the legacy
  /// default stream and the blocking streams must wait for.
  void default_stream_barrier(Stream& s);
  /// True when base `base` (Op::clock_base) and clock `vc` agree on every
  /// stream's component but `own`'s.
  bool same_other_streams(std::uint32_t base, const VectorClock& vc, StreamIndex own) const;
  /// Stores the streams' components of `vc` as a base; returns its Op::clock_base.
  std::uint32_t store_base(const VectorClock& vc);
  /// Appends `vc` as a base (its stream count, then a component per stream).
  template <class Words>
  void append_base(Words& out, const VectorClock& vc) const;
  /// Base `base`'s components, one per stream made before it, and how many.
  std::pair<const std::uint32_t*, std::uint32_t> base_components(std::uint32_t base) const;
  OpClock clock_of(OpRef r, const Op& o) const;
  /// unmet_dependency's answer as one word, stream << 32 | index, or
  /// kNoDependency (no stream has index 2^32 - 1). An std::optional<OpRef>
  /// built in the function went back to its caller through the stack as
  /// two 4-byte stores read as one 8-byte load, which the CPU cannot
  /// forward: a third of the function's time (docs/PERFORMANCE.md).
  static constexpr std::uint64_t kNoDependency = ~std::uint64_t{0};
  std::uint64_t unmet_dependency_packed(OpRef r) const;
  void host_joins(const VectorClock& vc) { hosts_.at(current_host_.value).join(vc); }
  void log_host(LogEntry::Kind kind, StreamIndex stream, EventIndex event);
  /// Every API call goes through here: counted, and kept unless keep_no_log.
  void log(const LogEntry& e) {
    ++log_entries_;
    if (keep_log_) log_.push_back(e);
  }
  /// A dropped op's kept record (drop()); std::logic_error when it is gone.
  const Op& kept_op(OpRef r) const;
  /// std::out_of_range for an op the run never enqueued (its record need
  /// not be held: covers and happens_before read only its stream and index).
  void check_op(OpRef a) const;
  /// The label's position in labels_, added there if new. A view: a
  /// kernel name longer than a std::string holds inline was a heap block
  /// copied for every launch, and freed again once found here.
  std::uint32_t intern(std::string_view label) { return labels_.intern(label); }

  std::vector<Stream> streams_;
  std::map<DeviceNumber, StreamIndex> legacy_;  // each device's LegacyDefault stream, once created
  std::vector<Event> events_;
  std::size_t live_events_ = 0;
  std::vector<VectorClock> hosts_;
  std::vector<AgentId> host_agents_;
  HostThread current_host_;
  AgentId next_agent_ = 0;  // streams and host threads share one numbering
  Log log_;
  std::size_t log_entries_ = 0;
  bool keep_log_ = true;
  /// Op -> the free the pool made it wait for (Op::has_pool_dep). Here,
  /// not in each Stream: a Stream's size decides the reallocations of
  /// streams_, and the explorer makes a model per run.
  std::map<OpRef, OpRef> pool_deps_;
  /// The ops' clock bases (Op::clock_base), each its stream count then one
  /// component per stream. A base never spans two chunks, so an OpClock
  /// reads it as one array. A base was a VectorClock (80 bytes), a fifth of
  /// what the checker kept per op (docs/PERFORMANCE.md, "HB checking").
  static constexpr std::size_t kClockChunkLog2 = 12;
  ChunkedDeque<std::uint32_t, kClockChunkLog2> clock_words_;
  /// Bases too wide for a chunk (a run that made 4,096 streams or more:
  /// a program that creates and destroys streams in a loop), each in a
  /// block of its own; their Op::clock_base has kWideBase set.
  static constexpr std::uint32_t kWideBase = std::uint32_t{1} << 31;
  std::vector<std::vector<std::uint32_t>> wide_bases_;
  /// The records of dropped ops something still names (drop()), by
  /// packed(OpRef); their bases, copied out of clock_words_ (which drops the
  /// words only dropped ops used), are in kept_bases_, and their
  /// Op::clock_base has kKeptBase set.
  std::unordered_map<std::uint64_t, Op> kept_ops_;
  std::vector<std::uint32_t> kept_bases_;
  static constexpr std::uint32_t kKeptBase = std::uint32_t{1} << 30;
  std::map<std::size_t, VectorClock> releases_;  // HostRelease entry -> the releaser's clock
  LabelTable labels_;                            // every op label, once
  std::uint32_t enqueued_ = 0;                   // ops enqueued so far (Op::enqueued_as)
};

static_assert(sizeof(HbState::Op) <= 20, "an Op is kept per op of a run: keep it at 20 bytes");

}  // namespace streamcheck::sim
