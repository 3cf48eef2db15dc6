// The trace writer of the capture layer (SPEC §10): turns what a running
// CUDA program did -- streams, events, memory, kernels, copies, syncs, graphs,
// per host thread -- into a trace-language program (docs/TRACES.md) that
// `streamcheck explore` checks. Standard library only: the injection library
// (capture/injection.cpp) feeds it from CUPTI callbacks, the tests feed it by
// hand. Not thread-safe: the caller serializes the calls (one mutex), which
// also fixes the order the trace lists them in.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace streamcheck::capture {

/// A stream, event or graph handle, or a device or host address.
using Handle = std::uintptr_t;
/// An operating-system thread id.
using ThreadId = std::uint64_t;

/// A stream argument as the program passed it: CUDA's special handles 0
/// (the default stream: legacy, or the thread's own under per-thread
/// compilation), cudaStreamLegacy (1) and cudaStreamPerThread (2).
struct StreamArg {
  Handle handle = 0;
  bool per_thread_default = false;  // the call was a _ptsz/_ptds variant
};

enum class Access : std::uint8_t { None, Reads, Writes, ReadWrites };

/// One kernel argument that may be a device address.
struct KernelArg {
  Handle value = 0;
  Access access = Access::ReadWrites;
};

/// Where the program made a call: the API name and, when known, the caller.
struct CallSite {
  std::string_view api;
  std::string where;  // e.g. "prog+0x1a2b (main)"; empty when not collected
};

class TraceWriter {
 public:
  /// `main_thread` is the program's main thread (its statements carry no @).
  explicit TraceWriter(ThreadId main_thread);

  void set_device(ThreadId thread, int device, const CallSite& site);
  void stream_created(ThreadId thread, Handle stream, bool nonblocking, const CallSite& site);
  void stream_destroyed(ThreadId thread, Handle stream, const CallSite& site);
  void event_created(ThreadId thread, Handle event, const CallSite& site);
  void event_destroyed(ThreadId thread, Handle event, const CallSite& site);
  void record(ThreadId thread, Handle event, StreamArg stream, const CallSite& site);
  void wait(ThreadId thread, StreamArg stream, Handle event, const CallSite& site);
  void sync_stream(ThreadId thread, StreamArg stream, const CallSite& site);
  void sync_event(ThreadId thread, Handle event, const CallSite& site);
  void sync_device(ThreadId thread, const CallSite& site);
  /// cudaStreamQuery / cudaEventQuery answered done: the program saw the work
  /// finish, so what it did next may rely on it (captured as a sync).
  void query_done(ThreadId thread, std::optional<StreamArg> stream, std::optional<Handle> event, const CallSite& site);

  /// Device memory: cudaMallocAsync with a stream, cudaMalloc without.
  void device_alloc(ThreadId thread, Handle address, std::uint64_t bytes, std::optional<StreamArg> stream,
                    const CallSite& site);
  /// Host memory: cudaMallocHost/cudaHostAlloc (pinned).
  void host_alloc(ThreadId thread, Handle address, std::uint64_t bytes, const CallSite& site);
  /// cudaFree / cudaFreeHost (no stream) or cudaFreeAsync.
  void free(ThreadId thread, Handle address, std::optional<StreamArg> stream, const CallSite& site);

  /// A kernel: `name` is its demangled signature (or mangled name);
  /// `args` its pointer-sized arguments with their access.
  void launch(ThreadId thread, StreamArg stream, std::string_view name, const std::vector<KernelArg>& args,
              const CallSite& site);
  /// The same, with the kernel's trace name worked out once by the caller
  /// (kernel_trace_name(signature)): the capture calls this per launch.
  void launch(ThreadId thread, StreamArg stream, std::string_view trace_name, std::string_view signature,
              const std::vector<KernelArg>& args, const CallSite& site);
  /// cudaMemcpyAsync (and the synchronous cudaMemcpy, `synchronous`).
  void copy(ThreadId thread, StreamArg stream, Handle destination, Handle source, std::uint64_t bytes, bool synchronous,
            const CallSite& site);
  /// cudaMemsetAsync / cudaMemset: a write of the bytes on the stream.
  void memset(ThreadId thread, StreamArg stream, Handle destination, std::uint64_t bytes, const CallSite& site);
  /// cudaLaunchHostFunc / cudaStreamAddCallback.
  void host_function(ThreadId thread, StreamArg stream, const CallSite& site);

  void capture_begin(ThreadId thread, StreamArg stream, const CallSite& site);
  void capture_end(ThreadId thread, StreamArg stream, Handle graph, const CallSite& site);
  void graph_instantiated(Handle executable, Handle graph);
  void graph_launch(ThreadId thread, Handle executable, StreamArg stream, const CallSite& site);

  /// A call that may order work or touch memory but that the trace language
  /// cannot say: counted, and listed in the trace's header as not captured.
  void not_modelled(std::string_view api, std::string_view why);
  /// Something the capture assumed (a conservative access, an unknown
  /// pointer): counted and listed in the header.
  void note(std::string_view what);

  /// The whole trace: header (coverage, declarations of threads and
  /// channels), then every statement in the order the calls were made.
  std::string text(std::string_view program) const;

  std::uint64_t statements() const { return statement_count_; }

 private:
  enum class Memory : std::uint8_t { Device, Pinned, Pageable };
  struct Allocation {
    std::string name;
    std::uint64_t bytes = 0;
    Memory memory = Memory::Device;
    int device = 0;
    std::uint64_t number = 0;  // the name's number (d7: 7)
  };
  /// The name of a new allocation of `memory` by `thread`: the lowest one
  /// `thread` gave back (buffer_freed), or a new number with `prefix`.
  std::pair<std::string, std::uint64_t> buffer_name(ThreadId thread, Memory memory, char prefix);
  /// `thread` gave `a` back: its name may name `thread`'s next allocation
  /// of the same memory (none once a stream capture began).
  void buffer_freed(ThreadId thread, const Allocation& a);
  struct ThreadState {
    std::string name;
    int device = 0;
    std::uint32_t index = 0;  // into thread_names_; main is 0
  };
  /// A resolved address: the buffer holding it and the offset into it.
  struct Place {
    const Allocation* allocation = nullptr;
    std::uint64_t offset = 0;
  };

  ThreadState& thread_state(ThreadId thread);
  /// The trace name of a stream argument; a handle the capture never saw
  /// made is declared where first used (and noted).
  const std::string& stream_name(ThreadId thread, StreamArg stream);
  const std::string* event_name(Handle event) const;
  /// The device a stream's work runs on (a default stream: the thread's).
  int device_of(ThreadId thread, const std::string& stream);
  std::optional<Place> place_of(Handle address) const;
  /// `name` or `name[lo:hi]`.
  static std::string ref(const Place& place, std::uint64_t bytes);
  /// Orders `thread` after the last other thread that used `object`, as the
  /// capture saw it (a send/receive pair), and makes `thread` its last user.
  void hand_off(ThreadId thread, const std::string& object);
  /// Appends one statement of `thread`, with the call's API (and `detail`,
  /// such as a kernel's signature) as its comment.
  void emit(ThreadId thread, const std::string& statement, const CallSite& site, std::string_view detail = {});
  /// A host buffer for pageable memory a copy names (declared on first use).
  std::string pageable(ThreadId thread, Handle address, std::uint64_t bytes, const CallSite& site);

  ThreadId main_thread_;
  std::unordered_map<ThreadId, ThreadState> threads_;
  std::vector<std::string> thread_names_;  // by ThreadState::index
  const std::string legacy_{"legacy"};
  const std::string per_thread_{"per_thread"};
  std::unordered_map<Handle, std::string> streams_;      // live streams by handle
  std::unordered_map<std::string, int> stream_devices_;  // stream name -> its device
  std::unordered_map<Handle, std::string> destroyed_;    // handle -> last stream destroyed with it
  std::unordered_map<Handle, std::string> events_;       // live events by handle
  std::unordered_map<Handle, std::string> graphs_;       // captured graphs by cudaGraph_t
  std::unordered_map<Handle, std::string> executables_;  // cudaGraphExec_t -> graph name
  std::map<Handle, Allocation> allocations_;             // live memory by base address
  // The numbers of names given back, by (thread index, memory): the lowest
  // names the thread's next allocation (buffer_name). A check keeps what
  // every name a trace bound needs (a later statement may use a freed
  // block's name), so a name per allocation grew a long capture's check by
  // each one (docs/PERFORMANCE.md). Per thread: a name freed on one thread
  // and bound again on another could be bound before its free in another
  // interleaving of the two.
  std::map<std::pair<std::uint32_t, Memory>, std::set<std::uint64_t>> free_names_;
  // A stream capture began: no name is given out twice from then on. A
  // graph's body names its buffers again at each launch, and a body that
  // reads a block freed since must read a freed name there (a use after
  // free), not the name of a newer block.
  bool captured_ = false;
  std::unordered_map<std::string, std::uint32_t> last_user_;  // object name -> thread index
  std::map<std::string, std::uint64_t, std::less<>> not_modelled_;
  std::map<std::string, std::uint64_t, std::less<>> notes_;
  std::vector<std::string> channels_;
  std::string body_;
  std::string line_;  // the statement being written (kept: no allocation per call)
  std::uint64_t statement_count_ = 0;
  std::uint64_t streams_made_ = 0, events_made_ = 0, buffers_made_ = 0, graphs_made_ = 0, copies_ = 0;
};

/// Where the parameter list of a demangled signature starts (its last
/// parenthesized group), or npos.
std::size_t parameter_list_start(std::string_view signature);

/// A kernel's name as C++ spells it, from its demangled signature: without
/// the parameter list and without a function template's return type
/// (`void ns::fill<float>(float*, int)` -> `ns::fill<float>`).
std::string_view kernel_name_of(std::string_view signature);

/// The trace-language name of a kernel: its demangled name without
/// parameters, namespaces kept with '.', other characters '_' (at most 64).
std::string kernel_trace_name(std::string_view signature);

}  // namespace streamcheck::capture
