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

#include <concepts>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "model/backend.h"
#include "model/budget_resource.h"
#include "model/launch_recorder.h"
#include "model/mutants.h"
#include "model/resource.h"
#include "tools/trace.h"

namespace streamcheck::tools {

template <ReplayBackend B>
class TraceInterpreter {
 public:
  TraceInterpreter(const Trace& trace, B& backend) : trace_(trace), b_(backend) {}
  TraceInterpreter(const TraceInterpreter&) = delete;
  TraceInterpreter& operator=(const TraceInterpreter&) = delete;

  /// Runs every statement, then lets the device finish (B::drain), and
  /// returns what happened. Call once.
  Execution run() {
    // The hidden stream of plain `buffer`/`free` (cudaMalloc / cudaFree),
    // created first: trace streams keep the same indexes on every backend.
    legacy_ = b_.add_stream(std::string(kPlainAllocationStream));
    threads_["main"] = b_.main_host_thread();
    with_protocol(trace_.mutant, [&]<class P>() {
      using Core = Resource<B, P>;
      std::unique_ptr<Core> core;
      std::unique_ptr<BudgetResource<Core>> budget;
      if (trace_.uses_resource) {
        core = std::make_unique<Core>(b_);
        if (trace_.budget) budget = std::make_unique<BudgetResource<Core>>(*core, *trace_.budget);
      }
      if (budget)
        run_statements<P>(budget.get());
      else
        run_statements<P>(core.get());
    });
    b_.set_host_thread(b_.main_host_thread());
    b_.drain();
    return std::move(exec_);
  }
  /// The hidden stream of plain `buffer` / `free` that run() made.
  StreamId plain_alloc_stream() const { return legacy_; }

 private:
  template <class P, class R>
  void run_statements(R* resource) {
    for (const Statement& st : trace_.statements) {
      const ast::Source& src = source(st);
      b_.set_host_thread(threads_.at(src.thread));
      b_.set_op_origin(src.line);
      if (auto why = missing(st)) {
        note(src, NoteKind::Skipped, *why);
        continue;
      }
      std::visit([&](const auto& s) { step<P>(s, resource); }, st);
      // Labels name what one statement makes; the next one names its own.
      b_.set_op_label({});
      b_.set_event_label({});
    }
  }

  // --- one step per statement kind

  template <class P, class R>
  void step(const ast::StreamDecl& st, R*) {
    streams_[st.name] = b_.add_stream(st.name);
  }
  template <class P, class R>
  void step(const ast::EventDecl& st, R*) {
    b_.set_event_label(st.name);
    auto e = b_.without_faults([&] { return b_.create_event(); });
    if (!e) {
      note(st, NoteKind::BackendFailed, fmt::format("creating event {} failed: {}", st.name, e.error().to_string()));
      missing_[st.name] = fmt::format("{} was not created (line {})", st.name, st.line);
      return;
    }
    events_.insert_or_assign(st.name, std::move(e).value());
  }
  template <class P, class R>
  void step(const ast::ThreadDecl& st, R*) {
    threads_[st.name] = b_.add_host_thread();
  }
  template <class P, class R>
  void step(const ast::PoolSwitch&, R*) {}  // applied by the parser (Trace::policy)
  template <class P, class R>
  void step(const ast::ResourceDecl&, R*) {}  // made by run() (Trace::uses_resource)

  template <class P, class R>
  void step(const ast::BufferDecl& st, R*) {
    const typename B::StreamRef s = st.stream ? stream(*st.stream) : legacy();
    b_.set_op_label(fmt::format("buffer {}", st.name));
    auto p = b_.without_faults([&] { return b_.alloc_async(st.bytes, s); });
    if (!p) {
      note(st, NoteKind::OutOfMemory, fmt::format("out of memory allocating {}", st.name));
      missing_[st.name] = fmt::format("{} has no memory (line {}: out of memory)", st.name, st.line);
      return;
    }
    missing_.erase(st.name);
    exec_.made_buffer(st.name, TraceBuffer{p.value(), st.bytes, b_.allocation_of(p.value())});
    if (!st.stream) host_sync(st, b_.synchronize_device());  // cudaMalloc returns memory ready for every stream
  }
  template <class P, class R>
  void step(const ast::Free& st, R*) {
    const bool plain = !st.stream;
    if (plain) host_sync(st, b_.synchronize_device());  // cudaFree waits for the device first
    const typename B::StreamRef s = plain ? legacy() : stream(*st.stream);
    b_.set_op_label(fmt::format("free {}", st.buffer));
    const std::uint64_t ptr = exec_.buffers().at(st.buffer).ptr;
    if (!b_.without_faults([&] { return b_.free_async(ptr, s); }))
      note(st, NoteKind::NotLive, fmt::format("free of {}, which is not a live allocation (double free?)", st.buffer));
    if (plain) host_sync(st, b_.synchronize_device());
  }
  template <class P, class R>
  void step(const ast::Launch& st, R*) {
    b_.launch(stream(st.stream), kernel_accesses(st.accesses), st.kernel);
  }
  template <class P, class R>
  void step(const ast::Copy& st, R*) {
    b_.launch(stream(st.stream), kernel_accesses(st.accesses()), st.name);
  }
  template <class P, class R>
  void step(const ast::Record& st, R*) {
    host_call(st, "record", b_.without_faults([&] { return b_.record_event(event(st.event), stream(st.stream)); }));
  }
  template <class P, class R>
  void step(const ast::Wait& st, R*) {
    host_call(st, "wait", b_.without_faults([&] { return b_.wait_event(stream(st.stream), event(st.event)); }));
  }
  template <class P, class R>
  void step(const ast::SyncStream& st, R*) {
    host_sync(st, b_.without_faults([&] { return b_.synchronize_stream(stream(st.stream)); }));
  }
  template <class P, class R>
  void step(const ast::SyncEvent& st, R*) {
    host_sync(st, b_.synchronize_event(event(st.event)));
  }
  template <class P, class R>
  void step(const ast::SyncDevice& st, R*) {
    host_sync(st, b_.synchronize_device());
  }
  template <class P, class R>
  void step(const ast::Query& st, R*) {
    if (auto done = b_.query_event(event(st.event)); !done)
      note(st, NoteKind::BackendFailed, fmt::format("query failed: {}", done.error().to_string()));
  }

  template <class P, class R>
  void step(const ast::Allocate& st, R* resource) {
    // The resource's pool op and its allocation-ready event, by the block's
    // name (labelled again for a retry: the failed attempt may have taken it).
    b_.set_event_label(fmt::format("{} ready", st.buffer));
    auto r = retried([&] {
      b_.set_op_label(fmt::format("allocate {}", st.buffer));
      return resource->allocate(st.bytes, streams_.at(st.stream), AllocTag{});
    });
    if (!r) {
      refused(st, "allocate", r.error());
      missing_[st.buffer] = fmt::format("{} has no memory (line {}: allocate refused)", st.buffer, st.line);
      blocks_.erase(st.buffer);
      return;
    }
    missing_.erase(st.buffer);
    blocks_.insert_or_assign(st.buffer, r.value());
    exec_.made_buffer(st.buffer, TraceBuffer{r.value().ptr, st.bytes, b_.allocation_of(r.value().ptr)});
  }
  template <class P, class R>
  void step(const ast::Deallocate& st, R* resource) {
    const DeviceBlock* block = resource_block(st, st.buffer, "deallocate takes resource blocks only");
    if (!block) return;
    if (auto s = retried([&] {
          b_.set_op_label(fmt::format("deallocate {}", st.buffer));
          return resource->deallocate(*block);
        });
        !s)
      refused(st, "deallocate", s.error());
  }
  template <class P, class R, class Use>
  requires std::same_as<Use, ast::Prepare> || std::same_as<Use, ast::Finish>
  void step(const Use& st, R* resource) {
    constexpr bool prepare = std::same_as<Use, ast::Prepare>;
    const DeviceBlock* block = resource_block(st, st.buffer, "the resource does not track it");
    if (!block) return;
    const BlockId id = BlockId::of(*block);
    const StreamId s = streams_.at(st.stream);
    b_.set_event_label(fmt::format("{} used on {}", st.buffer, st.stream));  // finish records it
    if (auto done = retried([&] {
          return prepare ? resource->prepare_block_use(id, s, st.access) : resource->finish_block_use(id, s, st.access);
        });
        !done)
      refused(st, prepare ? "prepare" : "finish", done.error());
  }
  template <class P, class R>
  void step(const ast::Reap& st, R* resource) {
    if (auto s = retried([&] { return resource->reap_pending(); }); !s) refused(st, "reap", s.error());
  }
  template <class P, class R>
  void step(const ast::Run& st, R* resource) {
    LaunchRecorder<P> rec(streams_.at(st.stream), RecorderMode::Strict);
    for (const auto& list : st.accesses)
      for (const auto& r : list.refs) {
        auto it = blocks_.find(r.buffer);
        rec.use(it == blocks_.end() ? nullptr : &it->second, list.access);
      }
    if (auto s = retried([&] { return rec.preflight(*resource); }); !s) {
      refused(st, "preflight", s.error());
      return;
    }
    b_.launch(stream(st.stream), kernel_accesses(st.accesses), st.kernel);
    b_.set_event_label(fmt::format("{} done", st.kernel));  // the use events commit records after the kernel
    if (auto s = retried([&] { return rec.commit(*resource); }); !s) {
      refused(st, "commit", s.error());
      rec.abandon();  // reported as a note; the destructor need not print it again
    }
  }

  // --- helpers

  typename B::StreamRef stream(const std::string& name) const { return *b_.resolve_stream(streams_.at(name)); }
  typename B::StreamRef legacy() const { return *b_.resolve_stream(legacy_); }
  typename B::Event& event(const std::string& name) { return events_.at(name); }

  std::vector<KernelAccess> kernel_accesses(const std::vector<AccessList>& lists) const {
    std::vector<KernelAccess> out;
    for (const auto& list : lists)
      for (const auto& r : list.refs) {
        const TraceBuffer& b = exec_.buffers().at(r.buffer);
        const std::uint64_t hi = r.hi ? *r.hi : b.bytes;
        out.push_back(KernelAccess{b.ptr + r.lo, hi - r.lo, list.access, b.allocation});
      }
    return out;
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
    const auto check = [&](const std::string& name) -> std::optional<std::string> {
      auto it = missing_.find(name);
      if (it == missing_.end()) return std::nullopt;
      return fmt::format("skipped: {}", it->second);
    };
    const auto any_of = [&](const std::vector<AccessList>& lists) -> std::optional<std::string> {
      for (const auto& list : lists)
        for (const auto& r : list.refs)
          if (auto why = check(r.buffer)) return why;
      return std::nullopt;
    };
    return std::visit(
        [&](const auto& s) -> std::optional<std::string> {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, ast::Allocate>)
            return std::nullopt;  // makes the buffer anew
          else if constexpr (std::is_same_v<S, ast::Copy>)
            return any_of(s.accesses());
          else if constexpr (requires { s.accesses; })
            return any_of(s.accesses);
          else if constexpr (requires { s.buffer; })
            return check(s.buffer);
          else if constexpr (requires { s.event; })
            return check(s.event);
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
  Execution exec_;
  StreamId legacy_{};
  std::map<std::string, StreamId> streams_;
  std::map<std::string, typename B::Event> events_;
  std::map<std::string, typename B::HostThread> threads_;
  std::map<std::string, DeviceBlock> blocks_;
  std::map<std::string, std::string> missing_;  // buffer or event -> why the run has none
};

}  // namespace streamcheck::tools
