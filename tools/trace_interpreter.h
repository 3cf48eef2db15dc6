// THE trace interpreter: runs the statements of a parsed trace, in file
// order, on any ReplayBackend (model/backend.h) — the simulator for
// check/explore/replay/render, CUDA for `replay --backend cuda` — and
// returns the run record (Execution). This file holds the only statement
// switch; a backend's specifics (choice points, op numbering, origin tags)
// live in the backend.
//
// What a statement could not do is a typed Note, never a silent skip: a
// buffer that got no memory (or an event the backend could not create)
// makes every later statement naming it a Skipped note, as a real program
// would not go on to use what it never got.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <concepts>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "backend_sim/footprint.h"
#include "backend_sim/sim_guard_memory.h"
#include "model/backend.h"
#include "model/budget_resource.h"
#include "model/debug_guard.h"
#include "model/launch_recorder.h"
#include "model/mutants.h"
#include "model/pool_backend.h"
#include "model/resource.h"
#include "tools/name_map.h"
#include "tools/tool_protocols.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// The resource calls a trace makes (allocate, deallocate, prepare, finish,
/// reap, and a `run`'s preflight and commit through the launch recorder),
/// whatever the resource's type and protocol variant. The statement code
/// below is compiled once per backend and only this adapter once per
/// variant (M1..M21, PM1..PM5): the whole interpreter compiled once per
/// variant was the largest part of the tools' build time.
class TraceResource {
 public:
  struct Use {
    const DeviceBlock* block;  // nullptr: a buffer the resource does not track
    Access access;
  };
  /// One kernel launch's uses (LaunchRecorder, strict mode).
  class Launch {
   public:
    virtual ~Launch() = default;
    virtual Status preflight() = 0;
    virtual Status commit() = 0;
    virtual void abandon() = 0;
  };
  virtual ~TraceResource() = default;
  virtual Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream) = 0;
  virtual Status deallocate(const DeviceBlock& block) = 0;
  virtual Status prepare_block_use(BlockId id, StreamId stream, Access access) = 0;
  virtual Status finish_block_use(BlockId id, StreamId stream, Access access) = 0;
  virtual Status reap_pending() = 0;
  virtual std::unique_ptr<Launch> launch(StreamId stream, const std::vector<Use>& uses) = 0;
};

/// TraceResource over a MemoryResource R whose launches record under
/// protocol variant P (the recorder's own mutants live there).
template <class P, MemoryResource R>
class TraceResourceOf final : public TraceResource {
 public:
  explicit TraceResourceOf(R& resource) : r_(resource) {}
  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream) override {
    return r_.allocate(bytes, stream, AllocTag{});
  }
  Status deallocate(const DeviceBlock& block) override { return r_.deallocate(block); }
  Status prepare_block_use(BlockId id, StreamId stream, Access access) override {
    return r_.prepare_block_use(id, stream, access);
  }
  Status finish_block_use(BlockId id, StreamId stream, Access access) override {
    return r_.finish_block_use(id, stream, access);
  }
  Status reap_pending() override { return r_.reap_pending(); }
  std::unique_ptr<Launch> launch(StreamId stream, const std::vector<Use>& uses) override {
    auto launch = std::make_unique<LaunchOf>(r_, stream);
    for (const Use& u : uses) launch->recorder.use(u.block, u.access);
    return launch;
  }

 private:
  struct LaunchOf final : Launch {
    LaunchOf(R& resource, StreamId stream) : r(resource), recorder(stream, RecorderMode::Strict) {}
    Status preflight() override { return recorder.preflight(r); }
    Status commit() override { return recorder.commit(r); }
    void abandon() override { recorder.abandon(); }
    R& r;
    LaunchRecorder<P> recorder;
  };
  R& r_;
};

/// `resource debug`: the debug tier's device work (a GuardMemory) on
/// backend B: `using Memory = …;` and `static Result<std::unique_ptr<Memory>>
/// create(B&)`. The simulator's is below; the GPU's is in tools/trace_gpu.cpp.
template <class B>
struct TraceGuardMemory;

template <>
struct TraceGuardMemory<sim::SimBackend> {
  using Memory = sim::SimGuardMemory;
  static Result<std::unique_ptr<Memory>> create(sim::SimBackend& backend) { return std::make_unique<Memory>(backend); }
};

template <ReplayBackend B>
class TraceInterpreter {
 public:
  TraceInterpreter(const Trace& trace, B& backend) : trace_(trace), b_(backend) {}
  TraceInterpreter(const TraceInterpreter&) = delete;
  TraceInterpreter& operator=(const TraceInterpreter&) = delete;

  /// Runs every statement, then lets the device finish (B::drain), and
  /// returns what happened. Call once.
  Execution run() {
    statements_ = [this](TraceResource* resource) { run_statements(resource); };
    return run_program();
  }
  /// A streamed check (TraceReader): runs the statements `next()` hands
  /// out, each as it comes, on the main thread (the reader refuses what
  /// needs more), then lets the device finish. `trace_` is the reader's
  /// trace: its pool and resource are final, its default streams and host
  /// threads grow as statements use them (each is made before the first
  /// statement that uses it runs). Call once, instead of run().
  template <class Next>
  Execution run_streamed(Next&& next) {
    statements_ = [&](TraceResource* resource) { stream_statements(next, resource); };
    return run_program();
  }
  /// The legacy default stream that run() made (plain `buffer` / `free` run on it).
  StreamId plain_alloc_stream() const { return legacy_; }
  /// The backend's allocation (allocation_of) of every buffer a name is
  /// bound to now, freed or not: a later statement may use a freed
  /// buffer's name (a use after free), so a long run's retention pass must
  /// keep their records.
  void add_bound_allocations(std::vector<std::uint32_t>& out) const {
    for (const auto& [name, buffer] : exec_.buffers())
      if (buffer.allocation) out.push_back(*buffer.allocation);
  }

 private:
  Execution run_program() {
    // The legacy default stream (R8), which plain `buffer`/`free` (cudaMalloc
    // / cudaFree) run on, created first: trace streams keep the same indexes
    // on every backend.
    legacy_ = b_.add_stream(std::string(kPlainAllocationStream), StreamKind::LegacyDefault, 0);
    streams_.insert_or_assign(kPlainAllocationStream, legacy_);
    stream_shapes_[std::string(kPlainAllocationStream)] = StreamShape{StreamKind::LegacyDefault, 0};
    make_new_default_streams();
    if (trace_.pool && trace_.uses_resource) {
      // `resource pool [mutant PMk]`: the core over a pool over this
      // backend; a stream the trace destroys is told to the pool first
      // (Q-dead).
      with_tool_protocol(trace_.pool_mutant, [&]<class Q>() {
        StreamOrderedPool<B, Q> pool(b_);
        pool_stream_removed_ = [&pool](StreamId s) { pool.stream_removed(s); };
        {
          Resource<StreamOrderedPool<B, Q>> core(pool);
          TraceResourceOf<CorrectProtocol, decltype(core)> calls(core);
          statements_(&calls);
        }
        // What the pool still caches goes back before the device finishes,
        // so that a leak is what the program holds, never the pool's cache.
        b_.set_host_thread(b_.main_host_thread());
        (void)b_.without_faults([&] {  // not a call of the program's: no fault lands here
          pool.give_back_all();
          return Status{};
        });
        pool_stream_removed_ = nullptr;
      });
    } else if (trace_.debug && trace_.uses_resource) {
      run_under_debug_tier();
    } else {
      with_tool_protocol(trace_.mutant, [&]<class P>() {
        using Core = Resource<B, P>;
        std::unique_ptr<Core> core;
        std::unique_ptr<BudgetResource<Core>> budget;
        if (trace_.uses_resource) {
          core = std::make_unique<Core>(b_);
          if (trace_.budget) budget = std::make_unique<BudgetResource<Core>>(*core, *trace_.budget);
        }
        if (budget) {
          TraceResourceOf<P, BudgetResource<Core>> calls(*budget);
          statements_(&calls);
        } else if (core) {
          TraceResourceOf<P, Core> calls(*core);
          statements_(&calls);
        } else {
          statements_(nullptr);  // the parser lets no resource statement through without `resource`
        }
      });
    }
    b_.set_host_thread(b_.main_host_thread());
    if (!cut_) b_.drain();  // a cut run is not counted: its device need not finish
    return std::move(exec_);
  }

  /// Makes the default streams and host streams of trace_ not made yet.
  void make_new_default_streams() {
    // R8: each host thread's per-thread default stream is a blocking
    // stream; R13: every device other than 0 whose legacy stream the trace
    // uses gets its own.
    for (; made_default_streams_ < trace_.default_streams.size(); ++made_default_streams_) {
      const Trace::DefaultStream& d = trace_.default_streams[made_default_streams_];
      streams_.insert_or_assign(d.name, b_.add_stream(d.name, d.kind, d.device));
      stream_shapes_[d.name] = StreamShape{d.kind, d.device};
    }
    // R12: the host stream of each thread that touches host memory (a
    // non-blocking stream the trace never names), made before the declared
    // streams for the same reason.
    for (; made_host_streams_ < trace_.host_threads.size(); ++made_host_streams_) {
      const std::string& thread = trace_.host_threads[made_host_streams_];
      host_streams_[thread] = b_.add_stream(host_stream_name(thread), StreamKind::NonBlocking, kNoDevice);
    }
  }

  /// run_streamed's statements: one host thread, each statement run as it
  /// comes; what one thread cannot go on with ends the run with a Deadlock
  /// note, as run_statements does.
  template <class Next>
  void stream_statements(Next& next, TraceResource* resource) {
    runs_.push_back(HostRun{"main", {nullptr}, 0, true, b_.main_host_thread(), std::nullopt, std::nullopt});
    run_index_["main"] = 0;
    while (const Statement* st = next()) {
      make_new_default_streams();
      if (const auto* device = std::get_if<ast::SetDevice>(st); device && device->device != 0) other_devices_ = true;
      runs_[0].statements[0] = st;
      runs_[0].next = 0;
      if (!can_go_on(*st)) return deadlock();
      run_next(0, resource);
    }
  }
  /// `resource debug`: the core under DebugGuardResource (model/debug_guard.h).
  /// After the last statement the quarantine is checked and given back, and
  /// every finding of the tier's device checks becomes a GuardFinding note
  /// on the line of the block's `deallocate`.
  void run_under_debug_tier() {
    if constexpr (requires { TraceGuardMemory<B>::create(b_); }) {
      const int resource_line = resource_decl_line();
      auto memory = TraceGuardMemory<B>::create(b_);
      // The tier is the resource every resource statement calls: without
      // its device memory the program cannot run as written.
      if (!memory)
        throw std::runtime_error(fmt::format(
            "line {}: 'resource debug': the debug tier's device memory could not be made ({}); free device memory, "
            "or run the trace without 'debug'",
            resource_line, memory.error().to_string()));
      Resource<B> core(b_);
      using Tier = DebugGuardResource<Resource<B>, typename TraceGuardMemory<B>::Memory>;
      std::optional<Tier> tier;
      tier.emplace(core, *memory.value());
      try {
        {
          TraceResourceOf<CorrectProtocol, Tier> calls(*tier);
          statements_(&calls);
        }
        b_.set_host_thread(b_.main_host_thread());
        // Not the program's calls: no fault lands here. A cut run is not
        // counted, so its quarantine need not be checked.
        if (!cut_)
          if (Status released = b_.without_faults([&] { return tier->release_quarantine(); }); !released)
            exec_.add_note(Note{resource_line, NoteKind::BackendFailed,
                                fmt::format("the debug tier's quarantine check: {}", released.error().to_string())});
        for (const GuardFinding& f : tier->findings())
          if (!cut_) guard_note(f);
        (void)b_.without_faults([&] {
          tier.reset();  // gives back what a cut run left in quarantine
          return Status{};
        });
      } catch (...) {
        // The run ended by an exception (a replayed schedule that ran out,
        // a backend that threw): the tier's destructor must not check the
        // quarantine on a backend that has stopped.
        tier->abandon();
        throw;
      }
    } else {
      throw std::logic_error("'resource debug' needs a backend with guard memory (TraceGuardMemory)");
    }
  }

  int resource_decl_line() const { return trace_.resource_line; }

  void guard_note(const GuardFinding& f) {
    auto freed = freed_blocks_.find({f.ptr, f.generation.value});
    const int line = freed == freed_blocks_.end() ? resource_decl_line() : freed->second.line;
    const std::string block = freed == freed_blocks_.end()
                                  ? fmt::format("the block at {}", f.ptr)
                                  : fmt::format("{} (freed on line {})", freed->second.buffer, freed->second.line);
    std::string what;
    switch (f.kind) {
      case GuardFindingKind::WriteAfterFree:
        what = fmt::format(
            "write after free: {} byte(s) of {} changed in quarantine, the first at offset {}: a "
            "kernel wrote it after its deallocate (a stale pointer), or one the free did not wait for",
            f.changed_bytes, block, f.first_changed);
        break;
      case GuardFindingKind::CanaryOverwritten:
        what = fmt::format("canary overwritten: {} byte(s) {} {} changed before its free (offset {})", f.changed_bytes,
                           f.first_changed < 0 ? "before" : "after", block, f.first_changed);
        break;
      case GuardFindingKind::HostUseAfterFree:
        what = fmt::format("host use after free: {} after the deallocate of {}", f.call, block);
        break;
    }
    exec_.add_note(Note{line, NoteKind::GuardFinding, std::move(what)});
  }

  // --- host threads (R6): which thread runs its next statement

  /// A backend that orders host threads itself (the simulator: R6a-R6d in
  /// its HB state) hands out marks; on others (the GPU, whose host runs the
  /// statements one after another) a mark is nothing.
  static constexpr bool kOrdersHosts = requires(B & b) { b.host_release(); };
  struct NoMark {};
  static auto mark_type() {
    if constexpr (kOrdersHosts)
      return decltype(std::declval<B&>().host_release()){};
    else
      return NoMark{};
  }
  using Mark = decltype(mark_type());
  Mark release() {
    if constexpr (kOrdersHosts)
      return b_.host_release();
    else
      return {};
  }
  void acquire(const Mark& m) {
    if constexpr (kOrdersHosts) b_.host_acquire(m);
  }

  /// One host thread of the trace: its statements in file order and how far
  /// it has run.
  struct HostRun {
    std::string name;
    std::vector<const Statement*> statements;
    std::size_t next = 0;
    bool started = false;
    std::optional<typename B::HostThread> handle;
    std::optional<Mark> start;  // the spawner's release, acquired by the first statement
    std::optional<Mark> end;    // the release after the last statement, for `join`
    bool done() const { return next == statements.size(); }
    /// The position in `statements` of the statement on `line` (R11 jumps):
    /// a binary search by line (the statements are in file order), where a
    /// tree of every line was a heap node each.
    std::size_t index_of_line(int line) const {
      const auto line_of = [](const Statement* st) { return source(*st).line; };
      const auto it = std::ranges::lower_bound(statements, line, {}, line_of);
      if (it == statements.end() || line_of(*it) != line)
        throw std::logic_error(
            fmt::format("the interpreter jumped to line {}, which holds no statement of thread {}", line, name));
      return static_cast<std::size_t>(it - statements.begin());
    }
    const Statement& next_statement() const { return *statements[next]; }
  };
  struct MutexState {
    std::optional<std::size_t> holder;  // index into runs_
    int locked_line = 0;
    std::optional<Mark> last_unlock;
  };

  /// Runs the statements: each step, one thread whose next statement can go
  /// on runs it. With one thread that is file order; with several, which
  /// one goes next is a choice (R6) on a backend that makes choices, and
  /// the first in file order on one that does not. A statement that names a
  /// buffer, stream or event no thread has made yet waits for it (the
  /// pointer's hand-off is no ordering: `send`/`receive` orders it).
  void run_statements(TraceResource* resource) {
    runs_.push_back(HostRun{"main", {}, 0, true, b_.main_host_thread(), std::nullopt, std::nullopt});
    run_index_["main"] = 0;
    // One pass over the statements (a million of them do not fit in a
    // cache): a thread is declared before any statement of it (the parser
    // checks), and a thread's statements come in runs, so the last thread's
    // index is kept instead of hashing the name of every statement.
    const Name* last_thread = nullptr;
    std::size_t last_run = 0;
    // Most traces run on main alone: its list sized at once, where doubling
    // it held up to twice the pointers at its peak.
    runs_[0].statements.reserve(trace_.statements.size());
    for (const Statement& st : trace_.statements) {
      if (const auto* decl = std::get_if<ast::ThreadDecl>(&st)) {
        run_index_[decl->name] = runs_.size();
        runs_.push_back(HostRun{decl->name, {}, 0, false, std::nullopt, std::nullopt, std::nullopt});
      }
      const Name& thread = source(st).thread;
      if (last_thread == nullptr || *last_thread != thread) {
        const auto run = run_index_.find(thread);
        if (run == run_index_.end())
          throw std::logic_error(fmt::format(
              "TraceInterpreter: internal error: line {} runs on thread {}, never declared", source(st).line, thread));
        last_run = run->second;
        last_thread = &thread;
      }
      runs_[last_run].statements.push_back(&st);
      if (const auto* join = std::get_if<ast::Join>(&st)) joined_.insert(join->target);
      if (const auto* device = std::get_if<ast::SetDevice>(&st); device && device->device != 0) other_devices_ = true;
    }
    std::optional<std::size_t> last;
    std::vector<std::size_t> ready;  // made once: a vector a statement was a malloc each
    for (;;) {
      ready.clear();
      std::size_t with_work = 0;
      for (std::size_t t = 0; t < runs_.size(); ++t) {
        with_work += runs_[t].done() ? 0 : 1;
        if (runs_[t].started && !runs_[t].done() && can_go_on(runs_[t].next_statement())) ready.push_back(t);
      }
      if (ready.empty()) {
        if (with_work > 0) deadlock();
        return;
      }
      std::sort(ready.begin(), ready.end(), [&](std::size_t a, std::size_t b) {
        return source(runs_[a].next_statement()).line < source(runs_[b].next_statement()).line;
      });
      std::size_t pick = 0;
      if constexpr (requires(std::vector<sim::HostStep> steps) { b_.choose_host_step(steps, true); }) {
        // Asked at every step once the trace has threads, even with one
        // thread left: with sleep sets it may be asleep (the run then only
        // reorders commuting steps of one explored before, and is cut).
        if (runs_.size() > 1) {
          std::vector<sim::HostStep> steps;
          for (std::size_t t : ready)
            steps.push_back(
                sim::HostStep{static_cast<std::uint32_t>(t), footprint(runs_[t].next_statement()), std::nullopt});
          pick = b_.choose_host_step(steps, last && ready[0] == *last);
          if (b_.host_run_cut()) {
            cut_ = true;
            return;
          }
        }
      }
      last = ready[pick];
      run_next(ready[pick], resource);
    }
  }

  void run_next(std::size_t t, TraceResource* resource) {
    HostRun& run = runs_[t];
    const Statement& st = run.next_statement();
    const ast::Source& src = source(st);
    b_.set_host_thread(*run.handle);
    b_.set_op_origin(src.line);
    if (run.start) acquire(*std::exchange(run.start, std::nullopt));  // R6a
    current_ = t;
    bool ran = false;
    if (auto why = destroyed_use(st))
      note(src, NoteKind::UseAfterDestroy, *why);  // R9b: the call is not made
    else if (auto why = wrong_device(st))
      note(src, NoteKind::WrongDevice, *why);  // R13d: the call fails, nothing is recorded
    else if (auto why = missing(st))
      note(src, NoteKind::Skipped, *why);
    else if (src.captured_by)
      capture_node(st);  // R14a: into the graph, not run
    else {
      std::visit([&](const auto& s) { step(s, resource); }, st);
      ran = true;
    }
    // R11: a query that was not made did not answer done.
    if (const auto* if_done = std::get_if<ast::IfDone>(&st); if_done && !ran) not_done(*if_done);
    // Labels name what one statement makes; the next one names its own.
    b_.set_op_label({});
    b_.set_event_label({});
    run.next = jump_ ? run.index_of_line(*std::exchange(jump_, std::nullopt)) : run.next + 1;
    if (run.done() && !joined_.empty() && joined_.contains(run.name)) run.end = release();  // R6b
  }

  /// Whether `st` can run now: what it waits for is there.
  bool can_go_on(const Statement& st) const {
    if (const auto* lock = std::get_if<ast::Lock>(&st)) {
      const auto mutex = mutexes_.find(lock->mutex);
      return mutex == mutexes_.end() || !mutex->second.holder;
    }
    if (const auto* join = std::get_if<ast::Join>(&st)) return runs_.at(run_index_.at(join->target)).done();
    if (const auto* receive = std::get_if<ast::Receive>(&st))
      return channels_.contains(receive->channel) && !channels_.at(receive->channel).empty();
    return !unmade_name(st);
  }

  /// A name `st` uses that no thread has made yet (nor failed to make).
  std::optional<std::string> unmade_name(const Statement& st) const {
    std::optional<std::string> out;
    const auto buffer = [&](const Name& name) {
      if (!out && !buffers_.contains(name) && !missing_.contains(name)) out = name;
    };
    const auto accesses = [&](AccessList list) {
      for (const auto& a : list) buffer(a.ref.buffer);
    };
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          // A destroyed stream or event is no wait: using it is a finding (R9b).
          const auto stream_made = [&](const Name& n) {
            return streams_.contains(n) || (!destroyed_.empty() && destroyed_.contains(n));
          };
          if constexpr (requires { s.stream; }) {
            if constexpr (std::is_same_v<std::decay_t<decltype(s.stream)>, Name>) {
              if (!stream_made(s.stream)) out = s.stream;
            } else if (s.stream && !stream_made(*s.stream)) {
              out = *s.stream;
            }
          }
          if constexpr (requires { s.event; })
            if (!out && !events_.contains(s.event) && !missing_.contains(s.event) &&
                (destroyed_.empty() || !destroyed_.contains(s.event)))
              out = s.event;
          if constexpr (std::is_same_v<S, ast::Copy>)
            accesses(s.accesses());
          else if constexpr (requires { s.accesses; })
            accesses(s.accesses);
          if constexpr (requires { s.buffer; } && !std::is_same_v<S, ast::Allocate>) buffer(s.buffer);
          if constexpr (std::is_same_v<S, ast::SubAlloc>) buffer(s.block->buffer);
          if constexpr (std::is_same_v<S, ast::GraphLaunch>)
            if (!out && !graphs_.contains(s.graph) && !missing_.contains(s.graph)) out = s.graph;
        },
        st);
    return out;
  }

  /// What `st` touches (sim/footprint.h), for the partial-order reduction
  /// over trace threads: two statements of different threads that touch no
  /// common object (or only read it) run in either order with the same
  /// outcome. Statements that observe the device (sync, query) or run the
  /// resource (whose calls query events and move the pool) touch everything.
  sim::Footprint footprint(const Statement& st) {
    using sim::Touch;
    sim::Footprint f;
    const auto object = [&](std::uint8_t kind, const std::string& name) {
      const auto [it, fresh] = object_index_.try_emplace(name, static_cast<std::uint32_t>(object_index_.size()));
      return sim::SharedObject{kind, it->second};
    };
    const auto stream_touch = [&](const std::string& name) {
      f.touch(object(kStreamObject, name), Touch::Write);
      // R8: work on the legacy stream is ordered with every blocking
      // stream's of its device (R13a), so the two do not commute; two
      // blocking streams do.
      const StreamShape shape = stream_shapes_.at(name);
      switch (shape.kind) {
        case StreamKind::LegacyDefault:
          f.touch(sim::SharedObject{kDefaultStreamBarrier, shape.device}, Touch::Write);
          break;
        case StreamKind::Blocking:
          f.touch(sim::SharedObject{kDefaultStreamBarrier, shape.device}, Touch::Read);
          break;
        case StreamKind::NonBlocking:
          break;
      }
    };
    // A sub-block shares its bytes with the buffer it was carved from
    // (R10a): both are the outermost buffer's object.
    const auto buffer_object = [&](const std::string& name) {
      auto it = carved_from_.find(name);
      return object(kBufferObject, it == carved_from_.end() ? name : it->second);
    };
    const auto buffer_touch = [&](AccessList list) {
      for (const auto& [access, ref] : list)
        f.touch(buffer_object(ref.buffer), access == Access::Read ? Touch::Read : Touch::Write);
    };
    const auto pool_op = [&](const std::string& buffer, const std::optional<std::string>& stream) {
      if (!stream) return f.touch_everything();  // cudaMalloc / cudaFree synchronize the device
      stream_touch(*stream);
      f.touch(buffer_object(buffer), Touch::Write);
      return f.touch(sim::SharedObject{kPoolObject, 0}, Touch::Write);
    };
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, ast::StreamDecl> || std::is_same_v<S, ast::EventDecl> ||
                        std::is_same_v<S, ast::ThreadDecl> || std::is_same_v<S, ast::Spawn>) {
            f.touch(sim::SharedObject{kDeclarationObject, 0}, Touch::Write);  // numbers streams, events, threads
            // A declaration after a `destroy` makes the name usable again (R9).
            if constexpr (std::is_same_v<S, ast::StreamDecl>) f.touch(object(kStreamObject, s.name), Touch::Write);
            if constexpr (std::is_same_v<S, ast::EventDecl>) f.touch(object(kEventObject, s.name), Touch::Write);
          } else if constexpr (std::is_same_v<S, ast::DestroyStream>)
            f.touch(object(kStreamObject, s.stream), Touch::Write);
          else if constexpr (std::is_same_v<S, ast::DestroyEvent>)
            f.touch(object(kEventObject, s.event), Touch::Write);
          else if constexpr (std::is_same_v<S, ast::BufferDecl>)
            pool_op(s.name, s.stream);
          else if constexpr (std::is_same_v<S, ast::Free>)
            pool_op(s.buffer, s.stream);
          else if constexpr (std::is_same_v<S, ast::SubAlloc>) {
            // R10c: handing out bytes given back with record_stream waits
            // for the recorded streams' work (a host sync: it observes the device).
            if (!pending_.empty()) f.touch_everything();
            stream_touch(s.stream);
            f.touch(buffer_object(s.block->buffer), Touch::Write);
            f.touch(sim::SharedObject{kSubAllocatorObject, 0}, Touch::Write);
          } else if constexpr (std::is_same_v<S, ast::SubFree>) {
            stream_touch(s.stream);
            f.touch(buffer_object(s.buffer), Touch::Write);
            f.touch(sim::SharedObject{kSubAllocatorObject, 0}, Touch::Write);
            if (auto uses = recorded_uses_.find(s.buffer); uses != recorded_uses_.end()) {
              f.touch(sim::SharedObject{kDeclarationObject, 0}, Touch::Write);  // makes events
              for (const RecordedUse& use : uses->second) stream_touch(use.stream);
            }
          } else if constexpr (std::is_same_v<S, ast::RecordStream>)
            f.touch(buffer_object(s.buffer), Touch::Write);
          else if constexpr (std::is_same_v<S, ast::Launch>) {
            stream_touch(s.stream);
            buffer_touch(s.accesses);
          } else if constexpr (std::is_same_v<S, ast::Copy>) {
            if (s.host_to_host) f.touch_everything();  // R12d: the host synchronizes the stream
            stream_touch(s.stream);
            buffer_touch(s.accesses());
          } else if constexpr (std::is_same_v<S, ast::Callback>) {
            stream_touch(s.stream);
            buffer_touch(s.accesses);
          } else if constexpr (std::is_same_v<S, ast::HostAccess>)
            buffer_touch(s.accesses);  // on the thread's own host stream (R12b)
          else if constexpr (std::is_same_v<S, ast::HostBuffer>) {
            f.touch(buffer_object(s.name), Touch::Write);
            f.touch(sim::SharedObject{kHostMemoryObject, 0}, Touch::Write);  // host addresses, handed out in order
          } else if constexpr (std::is_same_v<S, ast::HostFree>)
            f.touch(buffer_object(s.buffer), Touch::Write);
          else if constexpr (std::is_same_v<S, ast::Record>) {
            stream_touch(s.stream);
            f.touch(object(kEventObject, s.event), Touch::Write);
          } else if constexpr (std::is_same_v<S, ast::Wait>) {
            stream_touch(s.stream);
            f.touch(object(kEventObject, s.event), Touch::Read);
          } else if constexpr (std::is_same_v<S, ast::Lock> || std::is_same_v<S, ast::Unlock>)
            f.touch(object(kMutexObject, s.mutex), Touch::Write);
          else if constexpr (std::is_same_v<S, ast::Send> || std::is_same_v<S, ast::Receive>)
            f.touch(object(kChannelObject, s.channel), Touch::Write);
          else if constexpr (std::is_same_v<S, ast::Else> || std::is_same_v<S, ast::End>)
            ;  // where the thread goes next: its own business
          else if constexpr (std::is_same_v<S, ast::Join> || std::is_same_v<S, ast::MutexDecl> ||
                             std::is_same_v<S, ast::SetDevice> || std::is_same_v<S, ast::ChannelDecl> ||
                             std::is_same_v<S, ast::PoolSwitch> || std::is_same_v<S, ast::ResourceDecl>)
            ;  // orders only the thread itself, or runs nothing
          else
            f.touch_everything();  // sync, query, and every resource call
        },
        st);
    return f;
  }
  static constexpr std::uint8_t kStreamObject = 1, kBufferObject = 2, kEventObject = 3, kPoolObject = 4,
                                kMutexObject = 5, kChannelObject = 6, kDeclarationObject = 7, kDefaultStreamBarrier = 8,
                                kSubAllocatorObject = 9, kHostMemoryObject = 10;

  /// No thread can go on, yet some have statements left: a Deadlock note
  /// saying what each waits for.
  void deadlock() {
    std::vector<std::string> waits;
    int line = 0;
    for (const HostRun& run : runs_) {
      if (run.done()) continue;
      const ast::Source& src = source(run.next_statement());
      if (line == 0) line = src.line;
      waits.push_back(fmt::format("{} waits at line {} ({})", run.name, src.line, waiting_for(run)));
    }
    std::string message = "deadlock: ";
    for (std::size_t i = 0; i < waits.size(); ++i) message += (i ? "; " : "") + waits[i];
    exec_.add_note(Note{line, NoteKind::Deadlock, std::move(message)});
  }
  std::string waiting_for(const HostRun& run) const {
    if (!run.started) return "never spawned";
    const Statement& st = run.next_statement();
    if (const auto* lock = std::get_if<ast::Lock>(&st)) {
      const MutexState& m = mutexes_.at(lock->mutex);
      return fmt::format("lock {}, held by {} since line {}", lock->mutex, runs_.at(*m.holder).name, m.locked_line);
    }
    if (const auto* join = std::get_if<ast::Join>(&st)) return fmt::format("join {}, which does not end", join->target);
    if (const auto* receive = std::get_if<ast::Receive>(&st))
      return fmt::format("receive {}: nothing left to receive", receive->channel);
    return fmt::format("{} is never made", unmade_name(st).value_or("?"));
  }

  // --- one step per statement kind

  void step(const ast::StreamDecl& st, TraceResource*) {
    // R9c: the handle of a destroyed stream says nothing about order; the
    // report says which streams shared one.
    if (st.handle_of)
      exec_.reused_handle(current_incarnation(st.name, 1),
                          Execution::HandleReuse{current_incarnation(*st.handle_of, 0), st.line});
    streams_.insert_or_assign(st.name, b_.add_stream(incarnation(st.name), st.kind, st.device));
    stream_shapes_[st.name] = StreamShape{st.kind, st.device};
    destroyed_.erase(st.name);
  }
  void step(const ast::EventDecl& st, TraceResource*) {
    b_.set_event_label(incarnation(st.name));
    event_devices_[st.name] = st.device;
    destroyed_.erase(st.name);
    set_current_device(st.device);
    auto e = b_.without_faults([&] { return b_.create_event(); });
    if (!e) {
      note(st, NoteKind::BackendFailed, fmt::format("creating event {} failed: {}", st.name, e.error().to_string()));
      missing_[st.name] = fmt::format("{} was not created (line {})", st.name, st.line);
      return;
    }
    events_.insert_or_assign(st.name, std::move(e).value());
  }
  /// R9a: the stream goes, its work does not (the backend keeps running
  /// what was enqueued); later uses of the name are findings (R9b).
  void step(const ast::DestroyStream& st, TraceResource*) {
    if (pool_stream_removed_) pool_stream_removed_(streams_.at(st.stream));
    b_.remove_stream(streams_.at(st.stream));
    streams_.erase(st.stream);
    destroyed_[st.stream] = st.line;
  }
  /// R9a: a recorded capture still completes; the event is gone.
  void step(const ast::DestroyEvent& st, TraceResource*) {
    events_.erase(st.event);
    missing_.erase(st.event);
    destroyed_[st.event] = st.line;
  }
  /// How reports call the newest incarnation of a stream or event: its name,
  /// then NAME'2, NAME'3, ... once it is declared again after a `destroy`.
  std::string incarnation(const std::string& name) {
    ++incarnations_[name];
    return current_incarnation(name, 0);
  }
  /// How reports call incarnation `ahead` after the newest one of `name`
  /// (0: the newest itself, 1: the one its next declaration makes).
  std::string current_incarnation(const std::string& name, int ahead) const {
    auto it = incarnations_.find(name);
    const int k = (it == incarnations_.end() ? 0 : it->second) + ahead;
    return k <= 1 ? name : fmt::format("{}{}{}", name, kIncarnationMark, k);
  }
  /// R9b: the stream or event `st` names that was destroyed (and not
  /// declared again), with where; the statement is not run.
  std::optional<std::string> destroyed_use(const Statement& st) const {
    if (destroyed_.empty()) return std::nullopt;  // the common case: no name hashed for nothing
    std::optional<std::string> out;
    const auto check = [&](const std::string& name, const char* kind) {
      if (auto it = destroyed_.find(name); !out && it != destroyed_.end())
        out = fmt::format(
            "{} {} was destroyed at line {}: using it is a use after destroy (its handle may belong "
            "to another {} by now); the call is not made",
            kind, name, it->second, kind);
    };
    std::visit(
        [&](const auto& s) {
          if constexpr (requires { s.event; }) check(s.event, "event");
          if constexpr (requires { s.stream; }) {
            if constexpr (std::is_same_v<std::decay_t<decltype(s.stream)>, Name>)
              check(s.stream, "stream");
            else if (s.stream)
              check(*s.stream, "stream");
          }
        },
        st);
    return out;
  }

  /// R13d: a `record` of an event on a stream of another device: CUDA
  /// refuses it (cudaErrorInvalidResourceHandle), so the event keeps what it
  /// captured before; the statement is not run.
  std::optional<std::string> wrong_device(const Statement& st) const {
    const auto* record = std::get_if<ast::Record>(&st);
    // Without a `device N` other than 0, every stream and event is device
    // 0's (R13): no name hashed for nothing.
    if (!record || !other_devices_ || !event_devices_.contains(record->event)) return std::nullopt;
    const DeviceNumber event_device = event_devices_.at(record->event);
    const DeviceNumber stream_device = stream_shapes_.at(record->stream).device;
    if (event_device == stream_device) return std::nullopt;
    return fmt::format(
        "event {} belongs to device {} but stream {} to device {}: cudaEventRecord fails "
        "(cudaErrorInvalidResourceHandle) and the event keeps its last capture; create the event with device {} "
        "current",
        record->event, event_device, record->stream, stream_device, stream_device);
  }
  void step(const ast::SetDevice&, TraceResource*) {}  // applied by the parser (each statement's device, R13)

  // --- graphs (R14)

  /// One node of a captured graph: an op (a kernel, a copy or a host
  /// function, its accesses resolved when it was captured, as CUDA bakes a
  /// kernel's arguments into the graph), or a record or wait of an event
  /// recorded in the capture (the graph's internal edges).
  struct GraphNode {
    enum class Kind : std::uint8_t { Op, HostFunction, Record, Wait } kind;
    std::string branch;  // the captured stream
    int line = 0;
    std::vector<KernelAccess> accesses;
    std::string label;
    std::string event;
  };
  /// A graph: its nodes in capture order, the stream of each forked branch,
  /// the events standing for its internal edges, and the event after its
  /// last launch (R14c).
  struct GraphRun {
    std::string origin;
    std::vector<GraphNode> nodes;
    std::map<std::string, StreamId> branch_streams;
    std::map<std::string, typename B::Event> events;
    std::optional<typename B::Event> launched;
  };
  /// R14a: a statement on a capturing stream becomes a node of the graph.
  void capture_node(const Statement& st) {
    auto& nodes = captured_[source(st).captured_by];
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          using K = typename GraphNode::Kind;
          if constexpr (std::is_same_v<S, ast::Launch>)
            nodes.push_back(GraphNode{K::Op, s.stream, s.line, kernel_accesses(s.accesses), std::string(s.kernel), {}});
          else if constexpr (std::is_same_v<S, ast::Copy>)
            nodes.push_back(GraphNode{K::Op, s.stream, s.line, kernel_accesses(s.accesses()), s.name, {}});
          else if constexpr (std::is_same_v<S, ast::Callback>)
            nodes.push_back(GraphNode{K::HostFunction, s.stream, s.line, kernel_accesses(s.accesses), s.name, {}});
          else if constexpr (std::is_same_v<S, ast::Record>)
            nodes.push_back(GraphNode{K::Record, s.stream, s.line, {}, {}, s.event});
          else if constexpr (std::is_same_v<S, ast::Wait>)
            nodes.push_back(GraphNode{K::Wait, s.stream, s.line, {}, {}, s.event});
          else
            throw std::logic_error(fmt::format("line {}: the parser captured a statement a graph cannot hold", s.line));
        },
        st);
  }
  void step(const ast::CaptureBegin& st, TraceResource*) {
    captured_[st.line];  // an empty capture is an empty graph
  }
  /// R14a: the capture is graph G. Each forked branch gets a stream of its
  /// own (G/S) and each captured event one of the graph's, made once here:
  /// every launch uses them.
  void step(const ast::CaptureEnd& st, TraceResource*) {
    GraphRun g;
    g.origin = st.stream;
    g.nodes = std::move(captured_[st.begin_line]);
    captured_.erase(st.begin_line);
    for (const std::string& branch : st.branches)
      if (branch != st.stream)
        g.branch_streams[branch] = b_.add_stream(graph_branch_name(st.graph, branch), StreamKind::NonBlocking,
                                                 stream_shapes_.at(branch).device);
    for (const GraphNode& n : g.nodes) {
      if (n.kind != GraphNode::Kind::Record || g.events.contains(n.event)) continue;
      b_.set_event_label(graph_branch_name(st.graph, n.event));
      set_current_device(stream_shapes_.at(n.branch).device);  // the recording branch's device (R13d)
      auto e = b_.without_faults([&] { return b_.create_event(); });
      if (!e) {
        note(st, NoteKind::BackendFailed,
             fmt::format("creating graph {}'s event {} failed: {}", st.graph, n.event, e.error().to_string()));
        missing_[st.graph] = fmt::format("graph {} was not made (line {})", st.graph, st.line);
        return;
      }
      g.events.emplace(n.event, std::move(e).value());
    }
    graphs_.insert_or_assign(st.graph, std::move(g));
  }
  /// R14b: the graph's nodes run in the launch stream's order: the origin's
  /// on that stream, each forked branch's on its own stream, the internal
  /// edges through the graph's events. R14c: a graph's launches run one at
  /// a time (each waits for the one before, wherever it was launched).
  void step(const ast::GraphLaunch& st, TraceResource*) {
    GraphRun& g = graphs_.at(st.graph);
    const typename B::StreamRef on = stream(st.stream);
    if (g.launched) host_call(st, "wait", b_.without_faults([&] { return b_.wait_event(on, *g.launched); }));
    if constexpr (requires { b_.set_graph_launch(st.line); }) b_.set_graph_launch(st.line);
    for (const GraphNode& n : g.nodes) {
      b_.set_op_origin(n.line);  // reports name the captured statement
      const typename B::StreamRef s = n.branch == g.origin ? on : *b_.resolve_stream(g.branch_streams.at(n.branch));
      switch (n.kind) {
        case GraphNode::Kind::Op:
          b_.launch(s, n.accesses, n.label);
          break;
        case GraphNode::Kind::HostFunction:
          b_.host_function(s, n.accesses, n.label);
          break;
        case GraphNode::Kind::Record:
          host_call(st, "record", b_.without_faults([&] { return b_.record_event(g.events.at(n.event), s); }));
          break;
        case GraphNode::Kind::Wait:
          // An event whose captured record was not made (R13d) orders
          // nothing, as a never-recorded one (R3).
          if (auto e = g.events.find(n.event); e != g.events.end())
            host_call(st, "wait", b_.without_faults([&] { return b_.wait_event(s, e->second); }));
          break;
      }
    }
    b_.set_op_origin(st.line);
    if constexpr (requires { b_.set_graph_launch(0); }) b_.set_graph_launch(0);
    if (!g.launched) {
      b_.set_event_label(graph_branch_name(st.graph, "launch"));
      set_current_device(stream_shapes_.at(st.stream).device);  // recorded on the launch stream (R13d)
      auto e = b_.without_faults([&] { return b_.create_event(); });
      if (!e)
        return note(st, NoteKind::BackendFailed, fmt::format("creating an event failed: {}", e.error().to_string()));
      g.launched.emplace(std::move(e).value());
    }
    host_call(st, "record", b_.without_faults([&] { return b_.record_event(*g.launched, on); }));
  }

  void step(const ast::ThreadDecl& st, TraceResource*) {
    if (!st.starts_at_spawn) start(st.name);  // R6a: the declaring thread's past
  }
  void step(const ast::Spawn& st, TraceResource*) {
    start(st.target);  // R6a
  }
  void step(const ast::Join& st, TraceResource*) {
    acquire(*runs_.at(run_index_.at(st.target)).end);  // R6b
  }
  void step(const ast::Lock& st, TraceResource*) {
    MutexState& m = mutexes_[st.mutex];
    m.holder = current_;
    m.locked_line = st.line;
    if (m.last_unlock) acquire(*m.last_unlock);  // R6c
  }
  void step(const ast::Unlock& st, TraceResource*) {
    MutexState& m = mutexes_.at(st.mutex);
    m.holder.reset();
    m.last_unlock = release();  // R6c
  }
  void step(const ast::Send& st, TraceResource*) {
    channels_[st.channel].push_back(release());  // R6d
  }
  void step(const ast::Receive& st, TraceResource*) {
    auto& queue = channels_.at(st.channel);
    acquire(queue.front());  // R6d: the oldest message not yet received
    queue.pop_front();
  }
  void step(const ast::MutexDecl&, TraceResource*) {}
  void step(const ast::ChannelDecl&, TraceResource*) {}

  /// Starts thread `name`: the current thread releases its past, and the
  /// new thread's first statement acquires it (R6a).
  void start(const std::string& name) {
    HostRun& run = runs_.at(run_index_.at(name));
    run.handle = b_.add_host_thread();
    run.start = release();
    run.started = true;
  }
  void step(const ast::PoolSwitch&, TraceResource*) {}    // applied by the parser (Trace::policy)
  void step(const ast::ResourceDecl&, TraceResource*) {}  // made by run() (Trace::uses_resource)

  void step(const ast::BufferDecl& st, TraceResource*) {
    const typename B::StreamRef s = st.stream ? stream(*st.stream) : legacy(st.device);
    b_.set_op_label(fmt::format("buffer {}", st.name));
    auto p = b_.without_faults([&] { return b_.alloc_async(st.bytes, s); });
    if (!made(st, st.name, st.bytes, p, "out of memory")) return;
    // cudaMalloc returns memory ready for every stream (of its device, R13c).
    if (!st.stream) host_sync(st, b_.synchronize_device(st.device));
  }
  /// Records buffer `name` that `p` made, or, when it made none, the note
  /// and why later statements naming it are skipped (`why`: "out of memory").
  bool made(const ast::Source& st, const Name& name, std::uint64_t bytes, const Result<std::uint64_t>& p,
            const char* why) {
    if (!p) {
      note(st, NoteKind::OutOfMemory, fmt::format("{} allocating {}", why, name));
      missing_[name] = fmt::format("{} has no memory (line {}: {})", name, st.line, why);
      return false;
    }
    missing_.erase(name);
    freed_.erase(name);
    carved_from_.erase(name);
    made_buffer(name, TraceBuffer{p.value(), bytes, b_.allocation_of(p.value())});
    return true;
  }
  void step(const ast::Free& st, TraceResource*) {
    const bool plain = !st.stream;
    if (plain) host_sync(st, b_.synchronize_device(st.device));  // cudaFree waits for the device first
    const typename B::StreamRef s = plain ? legacy(st.device) : stream(*st.stream);
    b_.set_op_label(fmt::format("free {}", st.buffer));
    const std::uint64_t ptr = buffers_.at(st.buffer).ptr;
    if (!b_.without_faults([&] { return b_.free_async(ptr, s); }))
      note(st, NoteKind::NotLive, fmt::format("free of {}, which is not a live allocation (double free?)", st.buffer));
    else
      freed_.insert_or_assign(st.buffer, st.line);
    if (plain) host_sync(st, b_.synchronize_device(st.device));
  }
  /// R10a: a user-space allocator hands out bytes of a live buffer as a
  /// block for a stream. Bytes given back with record_stream are handed out
  /// only once the recorded streams' work is done (R10c): the allocator
  /// found their events complete, which orders the host after that work.
  void step(const ast::SubAlloc& st, TraceResource*) {
    const TraceBuffer& parent = buffers_.at(st.block->buffer);
    if (const int* freed_at = freed_.find(st.block->buffer)) {
      note(st, NoteKind::NotLive,
           fmt::format("suballoc {} from {}, which was given back at line {}", st.name, st.block->buffer, *freed_at));
      missing_[st.name] = fmt::format("{} has no memory (line {}: its parent was given back)", st.name, st.line);
      return;
    }
    const std::uint64_t lo = parent.ptr + st.block->lo;
    const std::uint64_t hi = parent.ptr + *st.block->hi;
    for (const auto& [name, live] : live_blocks_)
      if (live.lo < hi && lo < live.hi && name != st.name) {
        note(st, NoteKind::DoubleHandOut,
             fmt::format("{} gets bytes {} still held by {} (handed out at line {}, not given back): the allocator "
                         "handed out the same bytes twice",
                         st.name, fmt::format("{}[{}:{}]", st.block->buffer, st.block->lo, *st.block->hi), name,
                         live.line));
        break;
      }
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->lo < hi && lo < it->hi) {
        for (const typename B::Event& e : it->events) host_sync(st, b_.synchronize_event(e));  // R10c
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    const typename B::StreamRef s = stream(st.stream);
    b_.set_op_label(fmt::format("suballoc {}", st.name));
    auto p = b_.without_faults([&] { return b_.suballoc(parent.allocation, lo, hi - lo, st.bytes, s); });
    if (!p) {
      note(st, NoteKind::BackendFailed, fmt::format("suballoc {} failed: {}", st.name, p.error().to_string()));
      missing_[st.name] = fmt::format("{} has no memory (line {}: suballoc failed)", st.name, st.line);
      return;
    }
    missing_.erase(st.name);
    freed_.erase(st.name);
    made_buffer(st.name, TraceBuffer{p.value(), st.bytes, b_.allocation_of(p.value())});
    live_blocks_.insert_or_assign(st.name, LiveBlock{lo, hi, st.line, st.stream});
    auto root = carved_from_.find(st.block->buffer);
    carved_from_[st.name] = root == carved_from_.end() ? st.block->buffer : root->second;
  }
  /// R10b: the block goes back to its allocator, stream-ordered on the
  /// stream. R10c: with record_stream, an event recorded now on each
  /// recorded stream holds the bytes until that stream's work so far is done.
  void step(const ast::SubFree& st, TraceResource*) {
    auto live = live_blocks_.find(st.buffer);
    if (live == live_blocks_.end()) {
      note(st, NoteKind::NotLive,
           fmt::format("subfree of {}, which is not a handed-out block (given back twice?)", st.buffer));
      return;
    }
    PendingBlock pending{live->second.lo, live->second.hi, {}};
    std::vector<typename B::StreamRef> released_after;
    for (const RecordedUse& use : std::exchange(recorded_uses_[st.buffer], {})) {
      if (const StreamId* now = streams_.find(use.stream); now == nullptr || *now != use.id) {
        note(st, NoteKind::UseAfterDestroy,
             fmt::format("stream {} ({}'s record_stream at line {}) was destroyed: recording the free's event on "
                         "it is a use after destroy; the call is not made",
                         use.stream, st.buffer, use.line));
        continue;
      }
      b_.set_event_label(fmt::format("{} freed, used on {}", st.buffer, use.stream));
      set_current_device(stream_shapes_.at(use.stream).device);  // recorded on use.stream (R13d)
      auto e = b_.without_faults([&] { return b_.create_event(); });
      if (!e) {
        note(st, NoteKind::BackendFailed,
             fmt::format("creating {}'s record_stream event failed: {}", st.buffer, e.error().to_string()));
        continue;
      }
      host_call(st, "record", b_.without_faults([&] { return b_.record_event(e.value(), stream(use.stream)); }));
      pending.events.push_back(std::move(e).value());
      released_after.push_back(stream(use.stream));
    }
    recorded_uses_.erase(st.buffer);
    b_.set_op_label(fmt::format("subfree {}", st.buffer));
    const std::optional<std::uint32_t> block = buffers_.at(st.buffer).allocation;
    if (!b_.without_faults([&] { return b_.subfree(block, stream(st.stream), released_after); }))
      note(st, NoteKind::NotLive, fmt::format("subfree of {}, which is not a live sub-block", st.buffer));
    live_blocks_.erase(live);
    freed_.insert_or_assign(st.buffer, st.line);
    if (!pending.events.empty()) pending_.push_back(std::move(pending));
  }
  /// R10c: PyTorch's record_stream -- the block is used on another stream
  /// too; on its own stream it adds nothing (stream order covers it).
  void step(const ast::RecordStream& st, TraceResource*) {
    auto live = live_blocks_.find(st.buffer);
    if (live == live_blocks_.end()) {
      note(st, NoteKind::NotLive,
           fmt::format("record_stream of {}, which is not a handed-out block (given back already?)", st.buffer));
      return;
    }
    if (st.stream == live->second.stream) return;
    auto& uses = recorded_uses_[st.buffer];
    if (std::none_of(uses.begin(), uses.end(), [&](const RecordedUse& u) { return u.stream == st.stream; }))
      uses.push_back(RecordedUse{st.stream, streams_.at(st.stream), st.line});
  }
  /// R11: the done branch runs when cudaEventQuery answers done (R4: the
  /// host is then ordered after the event's capture); otherwise the run
  /// goes on after the `else` (or at the `end`). The branch is recorded.
  void step(const ast::IfDone& st, TraceResource*) {
    auto done = b_.query_event(event(st.event));
    if (!done) note(st, NoteKind::BackendFailed, fmt::format("query failed: {}", done.error().to_string()));
    if (done && done.value())
      exec_.took_branch(BranchTaken{st.line, true});
    else
      not_done(st);
  }
  void not_done(const ast::IfDone& st) {
    exec_.took_branch(BranchTaken{st.line, false});
    jump_ = st.else_line ? next_line_after(st.else_line) : st.end_line;
  }
  /// The end of the done branch: go on at the `end`.
  void step(const ast::Else& st, TraceResource*) { jump_ = st.end_line; }
  void step(const ast::End&, TraceResource*) {}
  /// The line of the statement after the one on `line`, on the running thread.
  int next_line_after(int line) const {
    const HostRun& run = runs_[current_];
    return source(*run.statements.at(run.index_of_line(line) + 1)).line;
  }
  void step(const ast::Launch& st, TraceResource*) {
    b_.launch(stream(st.stream), accesses_now(st.accesses), st.kernel);
  }
  /// R12d: cudaMemcpyAsync. Between host buffers it is fully synchronous
  /// with the host (the host waits for the copy, R4); every other direction
  /// may return before the copy is done -- pageable ones "might" be
  /// synchronous, which no program may rely on.
  void step(const ast::Copy& st, TraceResource*) {
    b_.launch(stream(st.stream), accesses_now(st.accesses()), st.name);
    if (st.host_to_host) host_sync(st, b_.without_faults([&] { return b_.synchronize_stream(stream(st.stream)); }));
  }
  /// R12a: host memory, made by the running host thread.
  void step(const ast::HostBuffer& st, TraceResource*) {
    b_.set_op_label(fmt::format("buffer {}", st.name));
    made(st, st.name, st.bytes, b_.without_faults([&] { return b_.host_alloc(st.bytes, st.pinned, host_stream()); }),
         "out of host memory");
  }
  /// R12a: free / cudaFreeHost, by the host, ordering nothing.
  void step(const ast::HostFree& st, TraceResource*) {
    b_.set_op_label(fmt::format("free {}", st.buffer));
    const std::uint64_t ptr = buffers_.at(st.buffer).ptr;
    if (!b_.without_faults([&] { return b_.host_free(ptr, host_stream()); }))
      note(st, NoteKind::NotLive, fmt::format("free of {}, which is not a live host buffer (double free?)", st.buffer));
    else
      freed_.insert_or_assign(st.buffer, st.line);
  }
  /// R12b: the running host thread reads or writes host memory.
  void step(const ast::HostAccess& st, TraceResource*) {
    b_.host_access(host_stream(), accesses_now(st.accesses), "host");
  }
  /// R12c: cudaLaunchHostFunc.
  void step(const ast::Callback& st, TraceResource*) {
    b_.host_function(stream(st.stream), accesses_now(st.accesses), st.name);
  }
  /// The host stream of the thread running the current statement (R12).
  typename B::StreamRef host_stream() const { return *b_.resolve_stream(host_streams_.at(runs_[current_].name)); }
  void step(const ast::Record& st, TraceResource*) {
    host_call(st, "record", b_.without_faults([&] { return b_.record_event(event(st.event), stream(st.stream)); }));
  }
  void step(const ast::Wait& st, TraceResource*) {
    host_call(st, "wait", b_.without_faults([&] { return b_.wait_event(stream(st.stream), event(st.event)); }));
  }
  void step(const ast::SyncStream& st, TraceResource*) {
    host_sync(st, b_.without_faults([&] { return b_.synchronize_stream(stream(st.stream)); }));
  }
  void step(const ast::SyncEvent& st, TraceResource*) { host_sync(st, b_.synchronize_event(event(st.event))); }
  void step(const ast::SyncDevice& st, TraceResource*) {
    host_sync(st, b_.synchronize_device(st.device));  // R13c: the current device's streams
  }
  void step(const ast::Query& st, TraceResource*) {
    if (auto done = b_.query_event(event(st.event)); !done)
      note(st, NoteKind::BackendFailed, fmt::format("query failed: {}", done.error().to_string()));
  }

  void step(const ast::Allocate& st, TraceResource* resource) {
    // The resource's pool op, by the block's name (labelled again for a
    // retry: the failed attempt may have taken it). Its allocation-ready
    // event is made by the first prepare on another stream (P-alloc).
    auto r = retried([&] {
      b_.set_op_label(fmt::format("allocate {}", st.buffer));
      return resource->allocate(st.bytes, streams_.at(st.stream));
    });
    b_.set_op_label({});  // not left for a later op: a pool serving from its cache takes none
    if (!r) {
      refused(st, "allocate", r.error());
      missing_[st.buffer] = fmt::format("{} has no memory (line {}: allocate refused)", st.buffer, st.line);
      blocks_.erase(st.buffer);
      return;
    }
    missing_.erase(st.buffer);
    blocks_.insert_or_assign(st.buffer, r.value());
    made_buffer(st.buffer, TraceBuffer{r.value().ptr, st.bytes, b_.allocation_of(r.value().ptr)});
  }
  void step(const ast::Deallocate& st, TraceResource* resource) {
    const DeviceBlock* block = resource_block(st, st.buffer, "deallocate takes resource blocks only");
    if (!block) return;
    if (auto s = retried([&] {
          b_.set_op_label(fmt::format("deallocate {}", st.buffer));
          return resource->deallocate(*block);
        });
        !s)
      refused(st, "deallocate", s.error());
    else if (trace_.debug)  // only the debug tier's notes name it
      freed_blocks_[{block->ptr, block->generation.value}] = FreedBlock{st.line, st.buffer};
    b_.set_op_label({});
  }
  template <class Use>
  requires std::same_as<Use, ast::Prepare> || std::same_as<Use, ast::Finish>
  void step(const Use& st, TraceResource* resource) {
    constexpr bool prepare = std::same_as<Use, ast::Prepare>;
    const DeviceBlock* block = resource_block(st, st.buffer, "the resource does not track it");
    if (!block) return;
    const BlockId id = BlockId::of(*block);
    const StreamId s = streams_.at(st.stream);
    // finish records the use event; a prepare records only the block's
    // allocation-ready event, at its first use on another stream (P-alloc).
    b_.set_event_label(prepare ? fmt::format("{} ready", st.buffer)
                               : fmt::format("{} used on {}", st.buffer, st.stream));
    if (auto done = retried([&] {
          return prepare ? resource->prepare_block_use(id, s, st.access) : resource->finish_block_use(id, s, st.access);
        });
        !done)
      refused(st, prepare ? "prepare" : "finish", done.error());
  }
  void step(const ast::Reap& st, TraceResource* resource) {
    if (auto s = retried([&] { return resource->reap_pending(); }); !s) refused(st, "reap", s.error());
  }
  void step(const ast::Run& st, TraceResource* resource) {
    std::vector<TraceResource::Use> uses;
    for (const auto& [access, ref] : st.accesses) {
      auto it = blocks_.find(ref.buffer);
      uses.push_back({it == blocks_.end() ? nullptr : &it->second, access});
    }
    const std::unique_ptr<TraceResource::Launch> rec = resource->launch(streams_.at(st.stream), uses);
    // The preflight's prepares record only allocation-ready events (P-alloc),
    // named by the blocks they may serve.
    std::vector<std::string> named;
    for (const auto& a : st.accesses)
      if (std::find(named.begin(), named.end(), a.ref.buffer) == named.end()) named.push_back(a.ref.buffer);
    b_.set_event_label(fmt::format("{} ready", fmt::join(named, ",")));
    if (auto s = retried([&] { return rec->preflight(); }); !s) {
      refused(st, "preflight", s.error());
      return;
    }
    b_.launch(stream(st.stream), accesses_now(st.accesses), st.kernel);
    b_.set_event_label(fmt::format("{} done", st.kernel));  // the use events commit records after the kernel
    if (auto s = retried([&] { return rec->commit(); }); !s) {
      refused(st, "commit", s.error());
      rec->abandon();  // reported as a note; the destructor need not print it again
    }
  }

  // --- helpers

  /// R13: the device an event the backend makes next belongs to, for
  /// backends that keep one context per device (CudaBackend under
  /// DevicePlacement::GpuPerDevice makes the event in that GPU's context).
  void set_current_device(DeviceNumber device) {
    if constexpr (requires { b_.set_current_device(device); }) b_.set_current_device(device);
  }
  template <class Key>  // a Name (a slot by its id) or a text
  typename B::StreamRef stream(const Key& name) const {
    return *b_.resolve_stream(streams_.at(name));
  }
  /// The legacy default stream of `device` (R13; the parser listed it in
  /// Trace::default_streams when the trace uses it).
  typename B::StreamRef legacy(DeviceNumber device) const {
    return device == 0 ? *b_.resolve_stream(legacy_) : stream(on_device(kPlainAllocationStream, device));
  }
  typename B::Event& event(const Name& name) { return events_.at(name); }

  /// The buffer accesses of a statement, as the buffers are now: a graph node keeps them.
  std::vector<KernelAccess> kernel_accesses(AccessList accesses) const {
    std::vector<KernelAccess> out;
    fill_kernel_accesses(accesses, out);
    return out;
  }
  /// The same, for a call that reads them at once (a launch, a host access):
  /// one vector kept across statements, not a heap block each.
  const std::vector<KernelAccess>& accesses_now(AccessList accesses) {
    fill_kernel_accesses(accesses, accesses_now_);
    return accesses_now_;
  }
  void fill_kernel_accesses(AccessList accesses, std::vector<KernelAccess>& out) const {
    // Written a field at a time into place: a KernelAccess built whole and
    // then copied was read back as 16 bytes just after its parts were
    // stored, a store-forwarding stall on every access (perf annotate).
    out.resize(accesses.size());
    for (std::size_t i = 0; i < accesses.size(); ++i) {
      const auto& [access, r] = accesses[i];
      const TraceBuffer& b = buffers_.at(r.buffer);
      KernelAccess& k = out[i];
      k.ptr = b.ptr + r.lo;
      k.bytes = (r.hi ? *r.hi : b.bytes) - r.lo;
      k.access = access;
      k.allocation = b.allocation;
    }
  }

  /// The block `buffer` got from `allocate`, or nullptr with a note saying
  /// why the call cannot take it.
  const DeviceBlock* resource_block(const ast::Source& st, const std::string& buffer, const char* why) {
    auto it = blocks_.find(buffer);
    if (it != blocks_.end()) return &it->second;
    note(st, NoteKind::NotAResourceBlock, fmt::format("{} was not made by 'allocate': {}", buffer, why));
    return nullptr;
  }

  /// Why `st` cannot run: it names a buffer or event the run could not make.
  std::optional<std::string> missing(const Statement& st) const {
    if (missing_.empty()) return std::nullopt;  // the common case: no name hashed for nothing
    const auto check = [&](const std::string& name) -> std::optional<std::string> {
      auto it = missing_.find(name);
      if (it == missing_.end()) return std::nullopt;
      return fmt::format("skipped: {}", it->second);
    };
    const auto any_of = [&](AccessList accesses) -> std::optional<std::string> {
      for (const auto& a : accesses)
        if (auto why = check(a.ref.buffer)) return why;
      return std::nullopt;
    };
    return std::visit(
        [&](const auto& s) -> std::optional<std::string> {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, ast::Allocate>)
            return std::nullopt;  // makes the buffer anew
          else if constexpr (std::is_same_v<S, ast::SubAlloc>)
            return check(s.block->buffer);  // makes the block anew, from its parent
          else if constexpr (std::is_same_v<S, ast::Copy>)
            return any_of(s.accesses());
          else if constexpr (requires { s.accesses; })
            return any_of(s.accesses);
          else if constexpr (requires { s.buffer; })
            return check(s.buffer);
          else if constexpr (requires { s.event; })
            return check(s.event);
          else if constexpr (std::is_same_v<S, ast::GraphLaunch>)
            return check(s.graph);
          else
            return std::nullopt;
        },
        st);
  }

  void note(const ast::Source& st, NoteKind kind, std::string message) {
    exec_.add_note(Note{st.line, kind, std::move(message)});
  }
  void refused(const ast::Source& st, const char* call, const ResourceError& e) {
    note(st, NoteKind::Refused, fmt::format("{} refused: {}", call, e.to_string()));
  }
  void host_call(const ast::Source& st, const char* call, const Status& s) {
    if (!s) note(st, NoteKind::BackendFailed, fmt::format("{} failed: {}", call, s.error().to_string()));
  }
  void host_sync(const ast::Source& st, const Status& s) { host_call(st, "synchronize", s); }

  /// `--faults on` explores one transient driver failure per run at the
  /// resource's backend calls. The trace program, like the built-in client,
  /// retries the resource call it hit: the fault has cleared, so the retry
  /// runs the call for real (P4 says the failed attempt changed nothing).
  template <class Call>
  static auto retried(Call&& call) {
    auto r = call();
    if (!r && r.error().injected) r = call();
    return r;
  }

  const Trace& trace_;
  B& b_;
  std::function<void(TraceResource*)> statements_;  // run()'s or run_streamed()'s way through them
  std::size_t made_default_streams_ = 0;            // of trace_.default_streams
  std::size_t made_host_streams_ = 0;               // of trace_.host_threads
  /// `resource pool`: tells the pool under the resource that a stream is
  /// gone (Q-dead); empty without a pool.
  std::function<void(StreamId)> pool_stream_removed_;
  Execution exec_;
  StreamId legacy_{};
  NameIndexed<StreamId> streams_{*trace_.names};
  NameMap<StreamId> host_streams_;                  // host thread -> its host stream (R12)
  NameMap<StreamShape> stream_shapes_;              // R8, R13: for footprints
  NameMap<DeviceNumber> event_devices_;             // R13: each event's device, for `record`
  bool other_devices_ = false;                      // R13: the trace sets a device other than 0
  std::map<int, std::vector<GraphNode>> captured_;  // R14a: the nodes of each open capture, by its begin line
  NameMap<GraphRun> graphs_;                        // R14: each graph, from its `capture end`
  NameMap<int> destroyed_;                          // stream or event -> the line of its `destroy` (R9)
  NameMap<int> incarnations_;                       // stream or event -> how many times declared (R9)
  NameIndexed<typename B::Event> events_{*trace_.names};
  /// Every buffer made, by name, as the run record has them (Execution::
  /// buffers): here by Name::id for the statements' lookups.
  NameIndexed<TraceBuffer> buffers_{*trace_.names};
  void made_buffer(const Name& name, TraceBuffer buffer) {
    buffers_.insert_or_assign(name, buffer);
    exec_.made_buffer(name, buffer);
  }
  std::vector<HostRun> runs_;  // main first, then the declared threads in file order
  NameMap<std::size_t> run_index_;
  std::set<std::string> joined_;  // threads some `join` waits for
  /// Resource blocks by (ptr, generation): where each was deallocated, for
  /// the debug tier's notes.
  struct FreedBlock {
    int line = 0;
    std::string buffer;
  };
  std::map<std::pair<std::uint64_t, std::uint64_t>, FreedBlock> freed_blocks_;
  std::size_t current_ = 0;  // the thread running the current statement
  NameMap<MutexState> mutexes_;
  NameMap<std::deque<Mark>> channels_;
  NameMap<std::uint32_t> object_index_;  // footprint objects by name
  bool cut_ = false;                     // the run was cut (B::host_run_cut)
  std::optional<int> jump_;              // R11: the line the running thread goes on at, set by `if done` / `else`
  NameMap<DeviceBlock> blocks_;
  NameMap<std::string> missing_;  // buffer or event -> why the run has none
  /// buffer -> the line that gave it back (free, subfree). By Name::id:
  /// a trace with a fresh name for every block keeps every freed name, and
  /// a hashed map of strings cost 64 bytes more a name
  /// (docs/PERFORMANCE.md, "A freed block's alloc op dropped").
  NameIndexed<int> freed_{*trace_.names};
  // --- R10: user-space allocators
  struct LiveBlock {
    std::uint64_t lo = 0, hi = 0;  // the block's device addresses
    int line = 0;                  // its suballoc
    std::string stream;            // the stream it was handed out for
  };
  struct RecordedUse {
    std::string stream;
    StreamId id;  // the stream as it was at the record_stream (it may be destroyed by the free)
    int line = 0;
  };
  struct PendingBlock {
    std::uint64_t lo = 0, hi = 0;
    std::vector<typename B::Event> events;  // recorded at the subfree on each record_stream stream
  };
  std::map<std::string, LiveBlock> live_blocks_;
  std::vector<KernelAccess> accesses_now_;  // accesses_now's answer
  NameMap<std::vector<RecordedUse>> recorded_uses_;
  std::vector<PendingBlock> pending_;  // given back with record_stream, not handed out again yet
  NameMap<std::string> carved_from_;   // sub-block -> the outermost buffer it was carved from
};

}  // namespace streamcheck::tools
