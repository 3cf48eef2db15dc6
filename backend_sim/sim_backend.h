// The simulated backend: the Backend concept over a DeviceModel, with a
// fault point at every backend call (SPEC §9) and a device-progress choice
// point before each call. Under a HostScheduler every backend call, and the
// release of an event, is also a host scheduling point (R6, P8), with a
// footprint naming the streams, events and pool it touches; its Mutex and
// Atomic types are scheduling points too.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/explain.h"
#include "backend_sim/host_scheduler.h"
#include "model/backend.h"
#include "model/fault_injecting.h"
#include "props/violation.h"

namespace streamcheck::sim {

struct SimBackendOptions {
  /// Explore injected faults as choice points, at most this many per run.
  std::uint32_t max_explored_faults = 0;
  std::uint32_t device_ordinal = 0;
  /// A long run's memory (a streamed check, docs/TRACES.md): keep no API
  /// log nor where each statement's log entries begin, and at statement
  /// starts drop the records of executed ops and allocations nothing names
  /// (DeviceModel::compact), this backend's origin lines with them.
  bool retain_only_named = false;
  /// How many query answers query_answers() keeps, the first ones; a long
  /// run's report lists a few and counts the rest (query_count()).
  std::size_t max_kept_query_answers = std::numeric_limits<std::size_t>::max();
};

class SimBackend {
 public:
  using StreamRef = StreamIndex;
  using HostThread = sim::HostThread;
  using Mutex = SchedMutex;
  template <class T>
  using Atomic = SchedAtomic<T>;

  /// Owns one simulated event; destroying it gives the event back.
  class Event {
   public:
    Event(Event&& o) noexcept : owner_(o.owner_), id_(o.id_) { o.owner_ = nullptr; }
    Event& operator=(Event&& o) noexcept {
      if (this != &o) {
        release();
        owner_ = o.owner_;
        id_ = o.id_;
        o.owner_ = nullptr;
      }
      return *this;
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() { release(); }
    EventIndex id() const { return id_; }

   private:
    friend class SimBackend;
    Event(SimBackend* owner, EventIndex id) : owner_(owner), id_(id) {}
    void release() {
      if (owner_) {
        owner_->host_point([&] {
          return Footprint()
              .touch(SharedObject{shared::kEvent, id_.value}, Touch::Write)
              .touch(SharedObject{shared::kEventTable, 0}, Touch::Accumulate);
        });
        owner_->model_.destroy_event(id_);
      }
      owner_ = nullptr;
    }
    SimBackend* owner_;
    EventIndex id_;
  };

  explicit SimBackend(DeviceModel& model, SimBackendOptions options = {})
      : model_(model),
        options_(options),
        faults_(options.max_explored_faults, [this] { return model_.chooser().choose(ChoiceKind::Fault, 2) == 1; }) {
    if (options_.retain_only_named) model_.keep_no_log();
  }
  SimBackend(const SimBackend&) = delete;
  SimBackend& operator=(const SimBackend&) = delete;

  // --- stream registry (not fault points: pure bookkeeping)
  /// `kind` (R8): the resource's and the harness's streams are
  /// non-blocking, as the CUDA backend's are; a trace declares its own.
  /// `device` (R13): the GPU the stream belongs to; kNoDevice for a host
  /// thread's host stream.
  StreamId add_stream(std::string name = {}, StreamKind kind = StreamKind::NonBlocking, DeviceNumber device = 0) {
    const StreamId id{next_stream_id_++};
    streams_.push_back(model_.create_stream(std::move(name), kind, device));
    return id;
  }
  void remove_stream(StreamId id) {
    if (id.value < streams_.size()) streams_[id.value].reset();
  }
  /// Asked for every call a trace makes: a slot by id (ids are given out in
  /// order), where a std::map was a tree walk each time.
  std::optional<StreamRef> resolve_stream(StreamId id) const {
    return id.value < streams_.size() ? streams_[id.value] : std::nullopt;
  }

  // --- the Backend concept
  Result<Event> create_event() {
    host_point([] { return Footprint().touch(SharedObject{shared::kEventTable, 0}, Touch::Accumulate); });
    if (auto f = enter("create_event")) return *f;
    Event e(this, model_.create_event(event_label_));
    recorded_on_.erase(e.id().value);  // an index may come back for a new event
    return e;
  }
  Status record_event(Event& e, StreamRef s) {
    host_point([&] { return Footprint().touch(event_object(e), Touch::Write).touch(stream_object(s), Touch::Read); });
    if (auto f = enter("record_event")) return *f;
    model_.record(e.id(), s);
    recorded_on_[e.id().value] = s;
    return {};
  }
  Status wait_event(StreamRef s, const Event& e) {
    host_point([&] { return Footprint().touch(event_object(e), Touch::Read).touch(stream_object(s), Touch::Write); });
    if (auto f = enter("wait_event")) return *f;
    model_.wait(s, e.id());
    if (auto it = recorded_on_.find(e.id().value); it != recorded_on_.end() && it->second == s) ++self_waits_;
    return {};
  }
  Result<std::uint64_t> alloc_async(std::size_t bytes, StreamRef s) {
    host_point([&] { return pool_op(s); });
    if (auto f = enter("alloc_async")) return *f;
    if (auto live = std::exchange(collision_, std::nullopt)) return *live;  // a broken driver: allocates nothing
    auto a = model_.alloc(s, bytes, take_label("alloc"), std::exchange(preferred_address_, std::nullopt));
    if (!a) return ResourceError::driver("alloc_async: out of memory (" + std::to_string(bytes) + " bytes)");
    allocations_[a->ptr] = a->allocation.value;
    tag(OpRef{s, model_.op_count(s) - 1});
    return a->ptr;
  }
  Status free_async(std::uint64_t ptr, StreamRef s) {
    host_point([&] { return pool_op(s); });
    if (auto f = enter("free_async")) return *f;
    if (!model_.free(s, ptr, take_label("free"))) {
      ++invalid_frees_;
      return ResourceError::driver("free_async: invalid device pointer " + std::to_string(ptr));
    }
    last_free_ = OpRef{s, model_.op_count(s) - 1};
    tag(*last_free_);
    return {};
  }
  Status synchronize_stream(StreamRef s) {
    // Completing the covered work changes which ops have run, which only
    // the pool reads (a reuse of a range whose free has run, the release of
    // idle ranges); findings come from clocks, and the host's clock is its
    // own. So a sync writes the pool and its stream.
    host_point([&] { return pool_op(s); });
    if (auto f = enter("synchronize_stream")) return *f;
    model_.sync_stream(s);
    return {};
  }
  std::uint32_t device_ordinal() const { return options_.device_ordinal; }

  // --- client work and test controls (not used by the core)
  OpRef launch(StreamRef s, const std::vector<KernelAccess>& accesses, std::string_view label) {
    model_.device_steps();
    const OpRef op = model_.launch(s, accesses, label);
    tag(op);
    return op;
  }

  /// R10a: a user-space allocator hands out bytes [ptr, ptr + block_bytes)
  /// of allocation `parent` (allocation_of of the parent buffer) as a block
  /// for `s`, `bytes` of it used: an op on `s` writing the block.
  Result<std::uint64_t> suballoc(std::optional<std::uint32_t> parent, std::uint64_t ptr, std::uint64_t block_bytes,
                                 std::uint64_t bytes, StreamRef s) {
    model_.device_steps();
    if (!parent) return ResourceError::driver("suballoc: the parent buffer is no allocation of this device");
    auto a =
        model_.suballoc(s, AllocationIndex{*parent}, ByteRange{ptr, ptr + block_bytes}, bytes, take_label("suballoc"));
    if (!a) return ResourceError::driver("suballoc: the parent buffer was freed");
    allocations_[a->ptr] = a->allocation.value;
    tag(OpRef{s, model_.op_count(s) - 1});
    return a->ptr;
  }
  /// R10b/R10c: sub-block `block` goes back to its allocator on `s`; work
  /// enqueued so far on each stream of `released_after` (its record_stream
  /// streams) counts as ordered before the give-back.
  Status subfree(std::optional<std::uint32_t> block, StreamRef s, const std::vector<StreamRef>& released_after) {
    model_.device_steps();
    std::vector<OpRef> points;
    for (const StreamRef r : released_after)
      if (const std::uint32_t n = model_.op_count(r); n > 0) points.push_back(OpRef{r, n - 1});
    if (!block || !model_.subfree(s, AllocationIndex{*block}, std::move(points), take_label("subfree")))
      return ResourceError::driver("subfree: not a live sub-block (given back twice?)");
    tag(OpRef{s, model_.op_count(s) - 1});
    return {};
  }

  /// R12a: a host buffer (malloc, or cudaMallocHost when `pinned`: the
  /// model treats both alike), made by the running host thread, whose host
  /// stream is `host_stream`.
  Result<std::uint64_t> host_alloc(std::uint64_t bytes, bool pinned, StreamRef host_stream) {
    (void)pinned;
    model_.device_steps();
    const AllocResult a = model_.host_alloc(host_stream, bytes, take_label("host buffer"));
    allocations_[a.ptr] = a.allocation.value;
    tag(OpRef{host_stream, model_.op_count(host_stream) - 1});
    return a.ptr;
  }
  /// R12a: the host buffer at `ptr` goes (free, cudaFreeHost).
  Status host_free(std::uint64_t ptr, StreamRef host_stream) {
    model_.device_steps();
    if (!model_.host_free(host_stream, ptr, take_label("host free")))
      return ResourceError::driver("host_free: not a live host buffer (freed twice?)");
    tag(OpRef{host_stream, model_.op_count(host_stream) - 1});
    return {};
  }
  /// R12b: the running host thread reads or writes host memory.
  void host_access(StreamRef host_stream, const std::vector<KernelAccess>& accesses, std::string_view label) {
    model_.device_steps();
    tag(model_.host_access(host_stream, accesses, label));
  }
  /// R12c: cudaLaunchHostFunc -- a host function run in stream order on
  /// `s`: for happens-before, an op on `s` like a kernel.
  void host_function(StreamRef s, const std::vector<KernelAccess>& accesses, std::string_view label) {
    launch(s, accesses, label);
  }

  // --- the rest of ReplayBackend (trace programs): each call is a
  // device-progress choice point, none is a fault point.
  HostThread add_host_thread() { return model_.create_host_thread(); }
  HostThread main_host_thread() const { return HostThread{0}; }
  void set_host_thread(HostThread h) { model_.set_host_thread(h); }
  /// Host-to-host ordering of trace threads (R6a-R6d): the current thread
  /// releases its past, and a later host_acquire of the mark orders the
  /// acquiring thread after it.
  struct HostMark {
    std::size_t release = 0;
  };
  HostMark host_release() { return HostMark{model_.host_release()}; }
  void host_acquire(const HostMark& mark) { model_.host_acquire(mark.release); }
  /// Which trace thread takes the next statement (Chooser::choose_host_step).
  std::uint32_t choose_host_step(const std::vector<HostStep>& steps, bool first_continues) {
    return model_.chooser().choose_host_step(steps, first_continues);
  }
  /// The run stopped being worth finishing: every thread that may step is
  /// asleep (sleep sets), so it only reorders commuting steps of a run
  /// explored before, and it will not be counted.
  bool host_run_cut() { return model_.chooser().sleep_blocked(); }
  Status synchronize_event(const Event& e) {
    model_.device_steps();
    model_.sync_event(e.id());
    return {};
  }
  Status synchronize_device(DeviceNumber device = 0) {
    model_.device_steps();
    model_.sync_device(device);
    return {};
  }
  Result<bool> query_event(const Event& e) {
    model_.device_steps();
    const bool done = model_.query_event(e.id());
    if (query_answers_.size() < options_.max_kept_query_answers)
      query_answers_.push_back(QueryAnswer{origin_line_.value_or(0), done, model_.chooser().choice_count()});
    ++query_count_;
    return done;
  }
  /// Tags every op enqueued from now on with `line` (op_origin reads it
  /// back), every choice made from now on (line_starts reads it back; the
  /// chooser is told the line too, so a divergence can name it), and every
  /// log entry made from now on (log_line_starts).
  void set_op_origin(int line) {
    // Between statements, where no op of this backend's is half tagged.
    if (options_.retain_only_named && model_.compaction_due()) compact();
    origin_line_ = line;
    starts_line(line);
    model_.chooser().set_line(line);
    if (options_.retain_only_named) return;  // no log to say where a line's entries begin
    const std::size_t entries = model_.log().size();
    if (entries > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("SimBackend: a run of more than 2^32 API calls (log entries) is not supported");
    log_line_starts_.push_back(LogLineStart{static_cast<std::uint32_t>(entries), line});
  }
  /// Where the choices of each line begin: the chooser's choice count when
  /// set_op_origin(line) was called (line 0: drain(), after the last
  /// statement). Lines that made no choice are left out, so this never
  /// grows past the number of choices. Empty when the chooser keeps none
  /// (Chooser::keep_no_choices).
  struct LineStart {
    std::size_t first_choice;
    int line;
  };
  const std::vector<LineStart>& line_starts() const { return line_starts_; }
  /// A query's answer, with the line set by set_op_origin when it was asked.
  struct QueryAnswer {
    int line = 0;
    bool done = false;
    std::size_t after_choices = 0;  // the chooser's choice count when it was asked
  };
  /// The first max_kept_query_answers answers, in order.
  const std::vector<QueryAnswer>& query_answers() const { return query_answers_; }
  /// How many queries were answered, kept or not.
  std::uint64_t query_count() const { return query_count_; }
  /// Where the log entries of each line begin: the log's size when
  /// set_op_origin(line) was called, in call order. One is kept per
  /// statement run, so it is 8 bytes.
  struct LogLineStart {
    std::uint32_t first_entry;
    int line;
  };
  const std::vector<LogLineStart>& log_line_starts() const { return log_line_starts_; }
  /// The line set by set_op_origin when `op` was enqueued.
  std::optional<int> op_origin(OpRef op) const { return op_origins_.get(op); }
  const OpLines& op_origins() const { return op_origins_; }
  /// R14b: the ops enqueued from now on are a graph's, run by the
  /// `launch graph` at `line` (0: no longer); op_launches reads it back.
  void set_graph_launch(int line) { graph_launch_line_ = line; }
  const std::map<OpRef, int>& op_launches() const { return op_launches_; }
  /// A long run's (retain_only_named): `add` puts the allocation indexes
  /// its caller holds (allocation_of's answers it kept, e.g. a trace's
  /// buffer names) into its argument at each retention pass, so that their
  /// records stay; nullptr: none.
  void name_allocations_with(std::function<void(std::vector<std::uint32_t>&)> add) {
    named_allocations_ = std::move(add);
  }
  /// The model's allocation index of the newest allocation made at `ptr`.
  std::optional<std::uint32_t> allocation_of(std::uint64_t ptr) const {
    auto it = allocations_.find(ptr);
    if (it == allocations_.end()) return std::nullopt;
    return it->second;
  }
  /// Runs `call` with no fault point firing (a trace's own calls; --faults
  /// explores faults at the resource's calls only).
  template <class Call>
  auto without_faults(Call&& call) {
    ++faults_paused_;
    auto r = call();
    --faults_paused_;
    return r;
  }
  /// Names the next pool op (alloc or free) in reports, e.g. "alloc b3".
  void set_op_label(std::string label) {
    if (!label.empty() || !next_label_.empty()) next_label_ = std::move(label);  // most statements clear an empty one
  }
  /// Names every event created from now on in reports and pictures (empty:
  /// the model's "e<N>").
  void set_event_label(std::string label) {
    if (!label.empty() || !event_label_.empty()) event_label_ = std::move(label);
  }
  // --- corners the property harness drives (props/harness.h)

  /// The next alloc_async (once its fault point passed) returns `live_ptr`,
  /// an address still handed out, and allocates nothing: a driver bug the
  /// resource must refuse without touching the block there (P5, M13).
  void arm_collision(std::uint64_t live_ptr) { collision_ = live_ptr; }
  /// The next allocation takes the freed range at `ptr` when the pool may
  /// reuse it (Pool::place): address reuse on demand.
  void prefer_address(std::uint64_t ptr) { preferred_address_ = ptr; }
  /// Runs `fn` once, at the start of the next backend call: another host
  /// thread acting while the caller is inside that call (e.g. between
  /// finish_block_use's validation and its re-validation).
  void on_next_call(std::function<void()> fn) { next_call_hook_ = std::move(fn); }
  /// The free op the last successful free_async enqueued.
  std::optional<OpRef> last_free() const { return last_free_; }
  /// R4: whether the host is ordered after that free (reap's promise).
  bool host_after_free(OpRef free_op) const { return model_.host_after(free_op); }

  /// Makes the `nth` backend call from now (0 = the next one) fail.
  void arm_fault(std::uint32_t nth, std::string_view call = {}) { faults_.arm_fault(nth, call); }
  void disarm_fault() { faults_.disarm_fault(); }
  bool fault_armed() const { return faults_.fault_armed(); }
  std::uint32_t faults_fired() const { return faults_.faults_fired(); }
  std::uint64_t calls() const { return faults_.calls(); }
  std::size_t live_event_count() const { return model_.live_event_count(); }
  /// Waits queued on an event last recorded on the waiting stream itself:
  /// redundant by R1 (the resource skips them; the economy check counts).
  std::size_t self_waits() const { return self_waits_; }
  /// free_async calls on a pointer the device did not hold (a double free).
  std::size_t invalid_frees() const { return invalid_frees_; }
  /// Findings (P1) and value mismatches (P2) that appeared since the last
  /// call, as typed violations.
  std::vector<props::Violation> new_problems() {
    std::vector<props::Violation> out;
    const auto& findings = model_.findings();
    for (; findings_seen_ < findings.size(); ++findings_seen_)
      out.push_back({props::Property::P1RaceFreedom, format(model_, findings[findings_seen_])});
    const auto& mismatches = model_.value_mismatches();
    for (; mismatches_seen_ < mismatches.size(); ++mismatches_seen_) {
      out.push_back({props::Property::P2DataOracle, describe(model_, mismatches[mismatches_seen_])});
    }
    return out;
  }
  /// Lets all remaining device work complete (in chosen order); its choices
  /// are asked at no line (0).
  void drain() {
    starts_line(0);
    model_.chooser().set_line(0);
    model_.finish();
  }
  DeviceModel& model() { return model_; }
  const DeviceModel& model() const { return model_; }

 private:
  static SharedObject stream_object(StreamRef s) { return SharedObject{shared::kStream, s.value}; }
  static SharedObject event_object(const Event& e) { return SharedObject{shared::kEvent, e.id().value}; }
  static Footprint pool_op(StreamRef s) {
    return Footprint().touch(SharedObject{shared::kPool, 0}, Touch::Write).touch(stream_object(s), Touch::Write);
  }
  /// A host scheduling point before a backend call (R6), when a
  /// HostScheduler runs this thread. The footprints hold only while the
  /// device progresses on observation: with a device step choice at every
  /// call, any call may complete any stream's work, so each touches all.
  /// Injected faults count calls across threads: P8 runs without them.
  /// `footprint()` makes it only when a scheduler runs this thread: a
  /// Footprint is a heap block, and a trace's every record and wait asked
  /// for one (docs/PERFORMANCE.md, "Streamed checks").
  template <class MakeFootprint>
  void host_point(MakeFootprint&& footprint) {
    if (auto* s = HostScheduler::current()) {
      Footprint f = footprint();
      if (model_.progress() != DeviceProgress::OnObservation) f.touch_everything();
      s->step(std::move(f));
    }
  }

  /// Every Backend call begins with a device-progress choice point, then a
  /// fault point (the order in which schedule strings record them).
  std::optional<ResourceError> enter(const char* call) {
    if (auto hook = std::exchange(next_call_hook_, nullptr)) hook();
    model_.device_steps();
    if (faults_paused_ > 0) return std::nullopt;
    return faults_.fault_at(call);
  }

  void starts_line(int line) {
    if (!model_.chooser().keeps_choices()) return;  // nothing to say the line of
    const std::size_t choices = model_.chooser().choice_count();
    if (!line_starts_.empty() && line_starts_.back().first_choice == choices)
      line_starts_.back().line = line;  // the previous line made no choice
    else
      line_starts_.push_back(LineStart{choices, line});
  }

  /// Drops the records of executed ops nothing names (DeviceModel::compact),
  /// with the ones this backend names kept, and their origin lines with them.
  void compact() {
    std::vector<OpRef> named;
    if (last_free_) named.push_back(*last_free_);
    for (const auto& [op, launch] : op_launches_) named.push_back(op);
    std::vector<std::uint32_t> held;
    if (named_allocations_) named_allocations_(held);
    // allocations_ adds none: allocation_of is asked for a live
    // allocation's index only (model/backend.h), which the pool keeps.
    std::vector<AllocationIndex> allocations;
    allocations.reserve(held.size());
    for (const std::uint32_t a : held) allocations.push_back(AllocationIndex{a});
    const Retention r = model_.compact(std::move(named), std::move(allocations));
    op_origins_.drop(r.dropped_before, [&](OpRef op) { return r.keeps(op); });
  }

  void tag(OpRef op) {
    if (origin_line_) op_origins_.set(op, *origin_line_);
    if (graph_launch_line_) op_launches_[op] = graph_launch_line_;
  }

  std::string take_label(const char* fallback) {
    std::string l = next_label_.empty() ? std::string(fallback) : std::move(next_label_);
    next_label_.clear();
    return l;
  }

  DeviceModel& model_;
  SimBackendOptions options_;
  std::string next_label_;
  std::string event_label_;
  std::vector<std::optional<StreamRef>> streams_;  // by StreamId::value; empty once removed
  std::uint32_t next_stream_id_ = 0;
  FaultInjecting faults_;
  std::optional<int> origin_line_;
  OpLines op_origins_;
  int graph_launch_line_ = 0;
  std::map<OpRef, int> op_launches_;  // R14b: a graph's op -> the line of the launch that ran it
  std::vector<LineStart> line_starts_;
  std::vector<QueryAnswer> query_answers_;
  std::uint64_t query_count_ = 0;
  std::vector<LogLineStart> log_line_starts_;
  std::map<std::uint64_t, std::uint32_t> allocations_;                  // ptr -> newest allocation made there
  std::function<void(std::vector<std::uint32_t>&)> named_allocations_;  // name_allocations_with
  std::uint32_t faults_paused_ = 0;
  std::optional<std::uint64_t> collision_;
  std::optional<std::uint64_t> preferred_address_;
  std::function<void()> next_call_hook_;
  std::optional<OpRef> last_free_;
  std::map<std::uint32_t, StreamRef> recorded_on_;  // event index -> stream of its last record
  std::size_t self_waits_ = 0;
  std::size_t invalid_frees_ = 0;
  std::size_t findings_seen_ = 0;
  std::size_t mismatches_seen_ = 0;
};

static_assert(Backend<SimBackend>, "SimBackend must satisfy the streamcheck::Backend concept (model/backend.h)");
static_assert(ReplayBackend<SimBackend>,
              "SimBackend must satisfy the streamcheck::ReplayBackend concept (model/backend.h)");

}  // namespace streamcheck::sim
