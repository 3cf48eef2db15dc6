// Trace programs (docs/TRACES.md): parsing, with FILE:LINE:COL errors, and
// running one schedule of a trace on the simulated device.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/schedule.h"
#include "model/mutants.h"
#include "model/pool_policy.h"
#include "model/types.h"
#include "tools/input_text.h"
#include "tools/name_map.h"
#include "tools/shared_text.h"
#include "tools/trace_name.h"

namespace streamcheck::tools {

/// Input that cannot be run: an input error (exit 2, nothing runs). A
/// malformed statement is reported as FILE:LINE:COL: message; a file that
/// cannot be read, or holds no statement, as FILE: message. The file name
/// and every piece of input a message quotes are shown through shown_input
/// (tools/input_text.h).
class TraceError : public std::runtime_error {
 public:
  enum class Kind : std::uint8_t {
    Malformed,     // a statement breaks a rule of docs/TRACES.md: line() and col() say where
    NoStatements,  // the input is empty, only comments and blank lines, or only declarations
    Unreadable,    // the file could not be read (missing, a directory, no permission): the OS's reason
  };
  /// A malformed statement at LINE:COL (both 1-based).
  TraceError(const std::string& file, int line, int col, const std::string& message)
      : std::runtime_error(fmt::format("{}:{}:{}: {}", shown_input(file, kShownPathBytes), line, col, message)),
        kind_(Kind::Malformed),
        line_(line),
        col_(col) {}
  /// A problem of the file as a whole (not Kind::Malformed): no position.
  TraceError(Kind kind, const std::string& file, const std::string& message)
      : std::runtime_error(fmt::format("{}: {}", shown_input(file, kShownPathBytes), message)),
        kind_(kind),
        line_(0),
        col_(0) {}
  Kind kind() const { return kind_; }
  /// Whether line() and col() point into the input (Kind::Malformed).
  bool has_position() const { return kind_ == Kind::Malformed; }
  int line() const { return line_; }
  int col() const { return col_; }

 private:
  Kind kind_;
  int line_;
  int col_;
};

/// The largest buffer (`buffer`, `allocate`) a trace may declare: 2^48 bytes
/// (256 TiB), more than any device has, and far enough from 2^64 that no
/// size, range or address computed from it can wrap.
inline constexpr std::uint64_t kMaxBufferBytes = std::uint64_t{1} << 48;
/// The legacy default stream (stream 0, cudaStreamLegacy; R8): declared by
/// every trace, so a statement may name it (`launch K on legacy`) and a fix
/// may add `record E on legacy`; plain `buffer`/`free` (cudaMalloc /
/// cudaFree) run on it. No trace may declare the name again.
inline constexpr std::string_view kPlainAllocationStream = "legacy";
/// The host thread a trace starts on: declared by every trace.
inline constexpr std::string_view kMainThread = "main";
/// The per-thread default stream (cudaStreamPerThread, R8): declared by
/// every trace; it names the stream of the host thread that runs the
/// statement. The parser writes it as `per_thread@THREAD`, the name reports
/// use; `trace_name_of` maps that back.
inline constexpr std::string_view kPerThreadStream = "per_thread";
inline constexpr char kThreadMark = '@';
/// A stream or event declared again after its `destroy` is a new
/// incarnation; reports call the k-th (k >= 2) NAME'k. Names cannot hold
/// the mark, so it never clashes with a trace's name.
inline constexpr char kIncarnationMark = '\'';
/// A default stream of a device D other than 0 (R13): reports call D's
/// legacy stream `legacy:D` and thread T's per-thread stream
/// `per_thread@T:D`; the trace writes `legacy` / `per_thread` on lines that
/// run with D current.
inline constexpr char kDeviceMark = ':';
/// A graph's forked branch as reports call it (R14b): `G/S`, the work G
/// captured from stream S, run on a stream of its own at each launch.
/// Names cannot hold the mark, and no statement can name such a stream.
inline constexpr char kGraphMark = '/';
inline std::string graph_branch_name(std::string_view graph, std::string_view stream) {
  return fmt::format("{}{}{}", graph, kGraphMark, stream);
}
inline bool is_graph_branch(std::string_view reported) { return reported.find(kGraphMark) != std::string_view::npos; }
/// The most devices a trace may use: ordinals 0 .. kMaxDevices - 1.
inline constexpr DeviceNumber kMaxDevices = 64;
/// How reports call default stream `name` of `device` (R13).
inline std::string on_device(std::string_view name, DeviceNumber device) {
  return device == 0 ? std::string(name) : fmt::format("{}{}{}", name, kDeviceMark, device);
}
/// The trace's name of a stream or event as reports call it: NAME'k ->
/// NAME, per_thread@THREAD -> per_thread (written on THREAD's lines),
/// legacy:D -> legacy (written where device D is current). A part of
/// `reported`, valid while it is; trace_name_of copies it.
inline std::string_view trace_name_in(std::string_view reported) {
  static constexpr char kMarks[] = {kIncarnationMark, kThreadMark, kDeviceMark};
  return reported.substr(0, reported.find_first_of(std::string_view(kMarks, sizeof kMarks)));
}
inline std::string trace_name_of(std::string_view reported) { return std::string(trace_name_in(reported)); }
/// The longest name (stream, event, thread, buffer, kernel, copy) a trace may use.
inline constexpr std::size_t kMaxNameBytes = 128;

/// Where a trace keeps its statements' texts (ast::Source::text) and thread
/// names: appended to chunks that never move, so a view into them stays
/// valid while the store lives, however the statements are moved or copied.
/// One heap block per 64 KiB of text, where a std::string a statement was
/// one a statement (docs/PERFORMANCE.md, "Statement texts in one store").
/// Not thread-safe: only the parser appends.
class TextStore {
 public:
  /// A copy of `text` that lives as long as the store.
  std::string_view keep(std::string_view text);
  /// A copy of `items` kept as long as the store: the statements' access
  /// lists, one array in a chunk where a std::vector each was a heap block
  /// a statement, freed again one by one when the trace went
  /// (docs/PERFORMANCE.md, "Names interned"). The store runs no
  /// destructor, so T must need none.
  template <class T>
  std::span<const T> keep_array(std::span<const T> items) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "a TextStore keeps bytes: it copies and never destroys what it keeps");
    static_assert(alignof(T) <= alignof(std::max_align_t));
    if (items.empty()) return {};
    char* at = room_for(items.size_bytes(), alignof(T));
    std::memcpy(at, items.data(), items.size_bytes());
    return {reinterpret_cast<const T*>(at), items.size()};
  }
  /// A text of exactly `bytes` bytes that `write(char* out)` writes, kept
  /// as long as the store: the parser joins a statement's words straight
  /// into the store instead of into a string copied in.
  template <class Write>
  std::string_view keep_written(std::size_t bytes, Write&& write) {
    if (bytes == 0) return {};
    char* at = room_for(bytes);
    write(at);
    return {at, bytes};
  }
  /// Lets go of everything kept (every view into the store dangles after):
  /// a streamed read (TraceReader) keeps one statement's texts at a time.
  /// The chunk being filled stays, to be filled again.
  void clear() {
    if (next_ == filling_ && chunks_.size() <= 1) return;  // nothing kept since: a streamed line parsed before
    clear_kept();
  }

 private:
  /// `bytes` bytes (at least 1) that never move, starting at a multiple of
  /// `align` (a power of two, at most alignof(std::max_align_t)).
  char* room_for(std::size_t bytes, std::size_t align = 1);
  void clear_kept();
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 16;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::size_t left_ = 0;     // bytes free at the end of the last chunk of kChunkBytes
  char* next_ = nullptr;     // where they start
  char* filling_ = nullptr;  // the start of that chunk
};

struct BufferRef {
  Name buffer;
  std::uint64_t lo = 0;
  std::optional<std::uint64_t> hi;  // nullopt: to the end of the buffer
};

/// A value of a rare statement kind kept on the heap, copied whole: a
/// Statement is as large as its largest kind, so the two references of a
/// `copy` and the block of a `suballoc` held inline made every statement of
/// a trace 88 bytes larger (docs/PERFORMANCE.md, "Statement texts in one
/// store"). A moved-from Boxed holds nothing; reading it is a logic_error.
template <class T>
class Boxed {
 public:
  Boxed() : value_(std::make_unique<T>()) {}
  Boxed(T value) : value_(std::make_unique<T>(std::move(value))) {}  // implicit: `st.from = ref();`
  Boxed(const Boxed& other) : value_(std::make_unique<T>(*other)) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& other) {
    if (this != &other) value_ = std::make_unique<T>(*other);
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  /// `st.from = ref();`: the value goes into the box there is, no new heap
  /// block (and the default one freed) for it.
  Boxed& operator=(T value) {
    if (value_)
      *value_ = std::move(value);
    else
      value_ = std::make_unique<T>(std::move(value));
    return *this;
  }
  ~Boxed() = default;
  T& operator*() { return *get(); }
  const T& operator*() const { return *get(); }
  T* operator->() { return get(); }
  const T* operator->() const { return get(); }

 private:
  T* get() const {
    if (!value_) throw std::logic_error("Boxed: internal error: a moved-from statement field was read");
    return value_.get();
  }
  std::unique_ptr<T> value_;
};

/// One buffer a statement touches, and how. A statement's accesses are one
/// flat vector in the order written (`reads A, B writes C`: A, B, C): one
/// heap block a statement, where a vector per access word was one more
/// each (docs/PERFORMANCE.md, "Statement texts in one store").
struct BufferAccess {
  Access access;
  BufferRef ref;
};
/// A statement's accesses: a view of an array in the trace's TextStore.
using AccessList = std::span<const BufferAccess>;

/// The parsed statements (docs/TRACES.md), one struct per kind. Names are
/// checked by the parser: a stream, event, thread or buffer named here was
/// declared before, as that kind.
namespace ast {

/// What every statement carries: where it is and which host thread runs it.
/// Its texts are views into the trace's TextStore (or static text), never
/// owned: a std::string each was a heap block a statement.
struct Source {
  int line = 0;
  /// R14a: set (the line of its `capture begin`) when the statement is
  /// captured into a graph instead of run: a launch, copy, callback,
  /// record or wait on a stream of an open capture. (Next to `line`: two
  /// ints in one word, a Source in 40 bytes.)
  int captured_by = 0;
  /// The source line, trimmed, without its comment; empty in a statement a
  /// TraceReader hands out (statement_texts reads the lines a report names).
  std::string_view text;
  /// The "@name" prefix, or "main": set by the parser for every statement
  /// (a Name: 8 bytes, a Source in 32).
  Name thread;
};

/// `stream NAME [nonblocking]`: cudaStreamCreate (a blocking stream, R8)
/// or cudaStreamCreateWithFlags(cudaStreamNonBlocking).
struct StreamDecl : Source {
  Name name;
  StreamKind kind = StreamKind::Blocking;
  DeviceNumber device = 0;  // the declaring thread's current device (R13)
  /// `stream NAME handle OLD` (R9c): cudaStreamCreate gave this stream the
  /// handle of OLD, a stream destroyed before; it orders nothing.
  std::optional<Name> handle_of{};
};
/// `event NAME`: an event of the declaring thread's current device (R13:
/// only streams of that device may record it).
struct EventDecl : Source {
  Name name;
  DeviceNumber device = 0;
};
/// `capture begin STREAM` (cudaStreamBeginCapture, global mode, R14a):
/// from here the work of STREAM, and of every stream that waits on an event
/// recorded in the capture, is captured into a graph, not run.
struct CaptureBegin : Source {
  Name stream;
};
/// `capture end STREAM graph G` (cudaStreamEndCapture and
/// cudaGraphInstantiate, R14a): the captured work is graph G.
struct CaptureEnd : Source {
  Name stream;
  Name graph;
  int begin_line = 0;
  /// The streams the capture took work from: STREAM first, then each
  /// stream that joined it (through a wait on a captured event), in order.
  std::span<const Name> branches;  // in the trace's TextStore
};
/// `launch graph G on STREAM` (cudaGraphLaunch, R14b): G's captured work
/// runs as one unit in STREAM's order, its branches as they were captured.
struct GraphLaunch : Source {
  Name graph;
  Name stream;
};
/// `device N` (cudaSetDevice, R13): the running thread's current device
/// from here on. The parser applies it (the device of what the thread
/// declares and of its `legacy`, `per_thread` and `sync device`); it runs
/// nothing.
struct SetDevice : Source {
  DeviceNumber device = 0;
};
/// `thread NAME`: a host thread. It starts here, ordered after the
/// declaring thread's past (R6a), unless a `spawn NAME` starts it.
struct ThreadDecl : Source {
  Name name;
  bool starts_at_spawn = false;  // set by the parser when the trace spawns it
};
/// `mutex NAME` / `channel NAME`: declarations only (nothing runs).
struct MutexDecl : Source {
  Name name;
};
struct ChannelDecl : Source {
  Name name;
};
/// `spawn T`: T starts, ordered after the spawner's past (R6a).
struct Spawn : Source {
  Name target;
};
/// `join T`: waits until T has run its last statement; ordered after all of
/// T (R6b).
struct Join : Source {
  Name target;
};
/// `lock M` waits until no thread holds M and takes it, ordered after M's
/// last unlock (R6c); `unlock M` gives it back.
struct Lock : Source {
  Name mutex;
};
struct Unlock : Source {
  Name mutex;
};
/// `send C` puts a message on channel C; `receive C` waits for the oldest
/// message not yet received and is ordered after its send (R6d).
struct Send : Source {
  Name channel;
};
struct Receive : Source {
  Name channel;
};
/// `policy SWITCH = VALUE`: already applied to Trace::policy by the parser.
struct PoolSwitch : Source {};
/// `resource [budget N] [mutant Mk] | resource pool [mutant PMk]`: already in
/// Trace::uses_resource, Trace::budget, Trace::mutant and Trace::pool.
struct ResourceDecl : Source {};
/// `buffer NAME BYTES [on STREAM]`: stream-ordered on STREAM, else a plain
/// allocation (cudaMalloc: ready for every stream when it returns).
struct BufferDecl : Source {
  Name name;
  std::uint64_t bytes = 0;
  std::optional<Name> stream;
  /// Whose memory it is (R13): STREAM's device, else the current one (a
  /// plain allocation runs on that device's legacy stream).
  DeviceNumber device = 0;
};
/// `free NAME [on STREAM]`: stream-ordered on STREAM, else a plain free
/// (on the legacy stream of the buffer's device, R13).
struct Free : Source {
  Name buffer;
  std::optional<Name> stream;
  DeviceNumber device = 0;
};
struct Launch : Source {
  /// A view into the trace's TextStore (the statement's own copy of the
  /// word): a captured kernel's name is tens to hundreds of characters,
  /// and a std::string of it was a heap block a launch.
  std::string_view kernel;
  Name stream;
  AccessList accesses;
};
/// `copy NAME on STREAM from REF to REF`: cudaMemcpyAsync, the direction
/// from where the buffers live (R12d).
struct Copy : Source {
  Name name;
  Name stream;
  Boxed<BufferRef> from;
  Boxed<BufferRef> to;
  /// Both ends are host buffers: cudaMemcpyAsync is then fully synchronous
  /// with the host (R12d: the host waits for the copy).
  bool host_to_host = false;
  /// Reads `from`, writes `to`.
  std::vector<BufferAccess> accesses() const { return {{Access::Read, *from}, {Access::Write, *to}}; }
};
/// `buffer NAME BYTES pageable|pinned` (R12a): host memory made by the
/// running host thread -- malloc / new (pageable) or cudaMallocHost
/// (pinned; kernels may touch it).
struct HostBuffer : Source {
  Name name;
  std::uint64_t bytes = 0;
  bool pinned = false;
};
/// `free NAME` of a host buffer (R12a): free / cudaFreeHost, by the host.
/// The model gives it no synchronization (CUDA documents none).
struct HostFree : Source {
  Name buffer;
};
/// `host reads|writes|readwrites REF ...` (R12b): the running host thread
/// touches host memory, ordered after what it synchronized with (R4) and
/// before what it enqueues next (R5).
struct HostAccess : Source {
  AccessList accesses;
};
/// `callback NAME on STREAM [accesses]` (R12c): cudaLaunchHostFunc -- a
/// host function run in stream order on STREAM, touching host memory.
struct Callback : Source {
  Name name;
  Name stream;
  AccessList accesses;
};
struct Record : Source {
  Name event;
  Name stream;
};
struct Wait : Source {
  Name stream;
  Name event;
};
struct SyncStream : Source {
  Name stream;
};
struct SyncEvent : Source {
  Name event;
};
/// `sync device`: cudaDeviceSynchronize of the current device (R13c).
struct SyncDevice : Source {
  DeviceNumber device = 0;
};
struct Query : Source {
  Name event;
};
/// `destroy stream S` (cudaStreamDestroy) / `destroy event E`
/// (cudaEventDestroy): orders nothing -- work already enqueued still runs
/// and a recorded capture still completes (R9a); a later use of the name
/// until it is declared again is a finding (R9b, NoteKind::UseAfterDestroy).
struct DestroyStream : Source {
  Name stream;
};
struct DestroyEvent : Source {
  Name event;
};
/// `suballoc NAME BYTES from PARENT[LO:HI] on STREAM` (R10a): a
/// user-space allocator (RMM's pool, PyTorch's caching allocator) hands out
/// bytes [LO, HI) of PARENT as a block for STREAM; NAME is its first BYTES
/// bytes. `block.hi` is always set.
struct SubAlloc : Source {
  Name name;
  std::uint64_t bytes = 0;
  Boxed<BufferRef> block;
  Name stream;
};
/// `subfree NAME on STREAM` (R10b): the block goes back to the allocator,
/// stream-ordered on STREAM; with `record_stream`s, only once the recorded
/// streams' work up to here is done (R10c).
struct SubFree : Source {
  Name buffer;
  Name stream;
};
/// `record_stream NAME on STREAM` (R10c): PyTorch's Tensor.record_stream --
/// the block is also used on STREAM, so its `subfree` waits for STREAM's
/// work before the bytes are handed out again.
struct RecordStream : Source {
  Name buffer;
  Name stream;
};
/// `if done E` ... [`else` ...] `end` (R11): host code conditional on
/// cudaEventQuery(E) == cudaSuccess. The lines up to the matching `else`
/// (or `end`) run only when the query answers done, those after `else`
/// only when it does not. The parser sets the lines of the matching `else`
/// (0: none) and `end`; every line of the block runs on the `if`'s thread.
struct IfDone : Source {
  Name event;
  int else_line = 0;
  int end_line = 0;
};
/// `else`: reached at the end of the done branch, it goes on after `end`.
struct Else : Source {
  int end_line = 0;
};
struct End : Source {};
struct Allocate : Source {
  Name buffer;
  std::uint64_t bytes = 0;
  Name stream;
};
struct Deallocate : Source {
  Name buffer;
};
struct Prepare : Source {
  Name buffer;
  Name stream;
  Access access = Access::Read;
};
struct Finish : Source {
  Name buffer;
  Name stream;
  Access access = Access::Read;
};
struct Reap : Source {};
/// `run KERNEL on STREAM ...`: a launch through LaunchRecorder and the resource.
struct Run : Source {
  std::string_view kernel;  // into the trace's TextStore, as Launch::kernel
  Name stream;
  AccessList accesses;
};

}  // namespace ast

using Statement =
    std::variant<ast::StreamDecl, ast::EventDecl, ast::ThreadDecl, ast::PoolSwitch, ast::ResourceDecl, ast::BufferDecl,
                 ast::Free, ast::Launch, ast::Copy, ast::Record, ast::Wait, ast::SyncStream, ast::SyncEvent,
                 ast::SyncDevice, ast::Query, ast::Allocate, ast::Deallocate, ast::Prepare, ast::Finish, ast::Reap,
                 ast::Run, ast::MutexDecl, ast::ChannelDecl, ast::Spawn, ast::Join, ast::Lock, ast::Unlock, ast::Send,
                 ast::Receive, ast::DestroyStream, ast::DestroyEvent, ast::SubAlloc, ast::SubFree, ast::RecordStream,
                 ast::IfDone, ast::Else, ast::End, ast::HostBuffer, ast::HostFree, ast::HostAccess, ast::Callback,
                 ast::SetDevice, ast::CaptureBegin, ast::CaptureEnd, ast::GraphLaunch>;

/// The line, text and host thread of any statement.
inline const ast::Source& source(const Statement& st) {
  return std::visit([](const ast::Source& s) -> const ast::Source& { return s; }, st);
}

/// Why `parse_number` gave no number.
enum class NumberProblem : std::uint8_t { NotANumber, TooLarge };
/// A number as docs/TRACES.md writes it -- decimal or 0x hexadecimal,
/// optionally ending in K (x1024) or M (x1048576) -- or why it is none
/// (TooLarge: above `max`). Every step is checked: nothing wraps.
struct ParsedNumber {
  std::uint64_t value = 0;
  std::optional<NumberProblem> problem;
};
ParsedNumber parse_number(std::string_view text, std::uint64_t max = UINT64_MAX);

/// Why `set_pool_switch` did not set a switch.
enum class PoolSwitchProblem : std::uint8_t { ValueNotOnOff, UnknownSwitch };
/// The switch names, for messages.
inline constexpr std::string_view kPoolSwitchNames =
    "follow_event_dependencies, opportunistic, internal_dependencies, release_threshold";
/// Sets pool switch `name` of `policy` to `value` (docs/TRACES.md `policy`,
/// and `--policy NAME=VALUE`): release_threshold takes a number, read by
/// `number` (which throws the caller's error when it is not one); the other
/// switches take on|off. The value is checked before the name, so both
/// callers report the same first problem.
std::optional<PoolSwitchProblem> set_pool_switch(PoolPolicy& policy, std::string_view name, std::string_view value,
                                                 const std::function<std::uint64_t(std::string_view)>& number);

struct Trace {
  std::string file;
  std::vector<Statement> statements;
  /// The statements' texts and thread names: shared by copies of the
  /// trace, whose statements view the same texts.
  std::shared_ptr<TextStore> texts = std::make_shared<TextStore>();
  /// The names its statements hold (tools/trace_name.h), shared like the
  /// texts.
  std::shared_ptr<NameTable> names = std::make_shared<NameTable>();
  PoolPolicy policy;
  bool uses_resource = false;
  int resource_line = 0;  // the `resource` statement's line (0: none)
  std::optional<MutantId> mutant;
  std::optional<std::uint64_t> budget;
  /// `resource pool`: the resource is PoolResource (model/pool_backend.h),
  /// the core over a stream-ordered bucket pool over the backend.
  bool pool = false;
  /// `resource pool mutant PMk`: the pool runs a deliberately broken
  /// protocol (model/mutants.h), so a trace can show what each pool bug does.
  std::optional<PoolMutantId> pool_mutant;
  /// `resource debug`: the resource is DebugGuardResource (model/debug_guard.h)
  /// over the core: canaries, poison and quarantine, whose findings become
  /// GuardFinding notes.
  bool debug = false;
  std::vector<std::string> streams;  // in declaration order
  /// A default stream the trace uses besides device 0's `legacy`: a
  /// per-thread stream `per_thread@THREAD[:D]` (R8: a blocking stream), or
  /// the legacy stream `legacy:D` of a device D other than 0 (R13).
  struct DefaultStream {
    std::string name;
    StreamKind kind = StreamKind::Blocking;
    DeviceNumber device = 0;
  };
  /// In the order of their first use: made before the declared streams, so
  /// every backend numbers them alike.
  std::vector<DefaultStream> default_streams;
  /// The host threads that touch host memory themselves (`buffer …
  /// pageable|pinned`, `free` of one, `host`), in the order of their first
  /// such statement: each gets a host stream `host@THREAD` (R12), made after
  /// the per-thread streams.
  std::vector<std::string> host_threads;
};
/// The host stream of a host thread (R12): `host@THREAD`, never a trace's
/// name (names cannot hold the mark), never written in a fix.
inline constexpr std::string_view kHostStreamPrefix = "host";
inline std::string host_stream_name(std::string_view thread) {
  return fmt::format("{}{}{}", kHostStreamPrefix, kThreadMark, thread);
}
/// Whether a reported stream is a host thread's host stream (R12).
inline bool is_host_stream(std::string_view reported) {
  return reported.size() > kHostStreamPrefix.size() && reported.starts_with(kHostStreamPrefix) &&
         reported[kHostStreamPrefix.size()] == kThreadMark;
}

/// The statements of `trace` at `line` (none when no statement is there):
/// a binary search, since a parsed trace's lines ascend. A report asks this
/// for each finding, and a scan of every statement each time made `check`
/// of a million-statement loop with a race in each iteration quadratic
/// (docs/PERFORMANCE.md).
std::span<const Statement> statements_at(const Trace& trace, int line);

/// Parses and checks a whole trace; throws TraceError at the first problem
/// (Kind::NoStatements for a trace without a statement).
Trace parse_trace(std::string_view text, const std::string& file);

/// A trace file read a statement at a time, for a streamed check
/// (docs/TRACES.md, "Streamed checks"): the rules of parse_trace, for a
/// trace that runs once, in file order, on the main thread. A statement of
/// another host thread or for host threads (`thread`, `@T`, `lock`, ...),
/// an `if done` block, a graph capture, and a `policy` or `resource` line
/// after the first statement that runs are TraceErrors at their line.
/// What it keeps is what the trace declares (names, buffers' kinds), never
/// its statements: each is let go when the next is read.
class TraceReader {
 public:
  /// Opens `path`; a file that cannot be read is a TraceError of
  /// Kind::Unreadable with the OS's reason.
  explicit TraceReader(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;
  /// The trace as read so far, without statements: the file, the pool's
  /// switches and the resource (final once read_declarations returned),
  /// the default streams and host threads used so far (in the order of
  /// their first use), the names.
  const Trace& trace() const;
  /// Reads ahead to the first statement that runs (or the end), keeping
  /// the declarations before it for next(): a run is made after this, with
  /// the pool and resource they say.
  void read_declarations();
  /// The next statement, valid until the next call (its words are views
  /// into the line read, and it has no text: ast::Source::text); nullptr
  /// after the last one, once the checks of the whole trace passed (it has
  /// a statement that runs: TraceError of Kind::NoStatements otherwise).
  const Statement* next();
  /// How many statements next() handed out.
  std::uint64_t statements_read() const;
  /// Shows `observe` every statement next() hands out, in file order, as it
  /// does (`check` watches for statement near misses as it streams).
  void observe_statements(std::function<void(const Statement&)> observe);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Statements' texts by line, all in one string: a streamed check of a
/// racy loop names two lines a finding, and a map node and a string for
/// each were about 130 bytes a line.
class StatementTexts {
 public:
  /// Adds `line`'s text; lines come in ascending order.
  void add(int line, std::string_view text);
  /// The text on `line`; nullopt where none was added.
  std::optional<std::string_view> find(int line) const;
  std::size_t size() const { return lines_.size(); }

 private:
  std::vector<int> lines_;         // ascending
  std::vector<std::size_t> ends_;  // by entry: where its text ends in texts_
  std::string texts_;
};

/// The text of the statement on each of `lines` (ascending, each once;
/// ast::Source::text, as a parsed trace holds it) in trace file `path`: a
/// streamed check's report names the lines of its findings without having
/// kept their statements. A line that holds no statement is left out.
StatementTexts statement_texts(const std::string& path, std::span<const int> lines);
/// Reads FILE and parses it; a file that cannot be read (missing, a
/// directory, no permission) is a TraceError of Kind::Unreadable with the
/// OS's reason.
Trace load_trace(const std::string& path);

/// Where an op came from: the trace statement that enqueued it.
struct OpOrigin {
  int line = 0;
  SharedText text;  // one copy for the ops of every line of this text (TextInterner)
  /// R14b: for an op of a graph, the line of the `launch graph` that ran
  /// it (`line` is its captured statement); 0 for any other op.
  int graph_launch = 0;
  friend bool operator==(const OpOrigin&, const OpOrigin&) = default;
};

/// A choice point of one run: what was chosen, among how many options, at
/// which trace statement (line 0: after the last statement, while the device
/// drained).
struct ChoicePoint {
  sim::ChoiceKind kind = sim::ChoiceKind::DeviceStep;
  std::uint32_t options = 2;
  std::uint32_t taken = 0;
  int line = 0;
};

/// A `query` statement and the answer one run gave it (R4): the answer
/// depends on which device work the schedule completed before it.
struct QueryAnswer {
  int line = 0;
  bool done = false;
  std::size_t after_choices = 0;  // how many choices the run had made when it asked
};

/// How many pool reuses, queries and faults a report lists, each: a long
/// run makes millions (one a `buffer` that could reuse), and a report that
/// named them all was megabytes on one line.
inline constexpr std::size_t kMaxListedChoices = 20;

/// The choice points of (part of) a run, as a report names them: pool reuse
/// and fault choices one by one with their lines, query answers, and the
/// device steps as a count (there are many, each "which stream head
/// completes next").
struct ChoiceSummary {
  std::vector<ChoicePoint> pool_reuse;
  std::vector<QueryAnswer> queries;
  std::vector<ChoicePoint> faults;
  std::uint64_t device_steps = 0;
  /// Pool reuses, queries and faults made but not listed above: the first
  /// kMaxListedChoices of each are listed (list()).
  std::uint64_t not_listed = 0;
  bool empty() const {
    return pool_reuse.empty() && queries.empty() && faults.empty() && device_steps == 0 && not_listed == 0;
  }
  /// Lists `item` in `listed` (one of the lists above) while it holds fewer
  /// than kMaxListedChoices, and counts it in not_listed after.
  template <typename T>
  void list(std::vector<T>& listed, const T& item) {
    if (listed.size() < kMaxListedChoices)
      listed.push_back(item);
    else
      ++not_listed;
  }
};

/// The branch one run took at an `if done E` (R11): the query's answer.
struct BranchTaken {
  int line = 0;
  bool done = false;
  friend bool operator==(const BranchTaken&, const BranchTaken&) = default;
};

/// A byte range inside a trace buffer, as offsets from the buffer's start.
struct BufferBytes {
  std::string buffer;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
};

/// A piece of device bytes: its addresses and, when they lie in a trace
/// buffer, the buffer's name and the offsets into it.
struct NamedBytes {
  sim::ByteRange address;
  std::optional<BufferBytes> in_buffer;
};

/// What kind of thing went wrong, other than an HB finding.
enum class NoteKind : std::uint8_t {
  OutOfMemory,        // `buffer`: the device gave no memory
  NotLive,            // `free` of a buffer that is not a live allocation (double free?)
  Refused,            // a resource call (allocate, deallocate, prepare, finish, reap, preflight, commit) failed
  NotAResourceBlock,  // deallocate/prepare/finish of a buffer not made by `allocate`
  Skipped,            // the statement names a buffer or event that the run could not make
  BackendFailed,      // the backend could not do the program's own call (create an event, record, wait, sync)
  Deadlock,           // host threads were left waiting with no thread able to go on (lock, join, receive)
  UseAfterDestroy,    // a statement names a stream or event after its `destroy` (R9b); it is not run
  DoubleHandOut,      // `suballoc` of bytes a live sub-block still holds (R10a): the allocator gave them twice
  WrongDevice,        // `record` of an event on another device's stream (R13d): CUDA refuses it; it is not run
  GuardFinding,  // `resource debug`: the debug tier saw a write after free, a canary overwritten or a host use after
                 // free
};

/// Something that went wrong that is not an HB finding: a resource call
/// refused, a double free. Counted as a finding of the program.
struct Note {
  int line = 0;
  NoteKind kind = NoteKind::Refused;
  std::string message;
};

/// A buffer as the run made it: where it is, how big, and (simulator) which
/// allocation of the model it is.
struct TraceBuffer {
  std::uint64_t ptr = 0;
  std::uint64_t bytes = 0;
  std::optional<std::uint32_t> allocation;
};

/// The record of one run of a trace (tools/trace_interpreter.h): the notes,
/// the buffers by name, the statement that enqueued each op and, for a
/// simulator run, the device model with its findings and log.
class Execution {
 public:
  /// The simulated device of this run; throws std::logic_error on a run
  /// that had none (a GPU replay).
  const sim::DeviceModel& model() const;
  bool has_model() const { return model_ != nullptr; }
  const std::vector<Note>& notes() const { return notes_; }
  /// Every buffer ever made, by name (the newest of a name wins).
  const NameMap<TraceBuffer>& buffers() const { return buffers_; }
  /// The statement that enqueued `op`, if any (resource ops: the call).
  std::optional<OpOrigin> origin(sim::OpRef op) const;
  /// `text` as one copy shared by every record of this run's that asks for
  /// the same text (a stream's name in each op a report names).
  SharedText shared_text(std::string_view text) const { return texts_(text); }
  /// `bytes` cut where buffers begin and end: each piece named by the buffer
  /// that holds it (offsets into it), or by its addresses outside every
  /// buffer. Of buffers holding the same bytes the smallest names them (a
  /// sub-block, R10a), and of equally small ones allocation `prefer` (the
  /// op's own), else the first by name.
  std::vector<NamedBytes> name_bytes(sim::ByteRange bytes, std::optional<std::uint32_t> prefer = std::nullopt) const;
  /// Every choice the run made (simulator), in order, with its statement's
  /// line; none for a streamed run (choice_summary()).
  const std::vector<ChoicePoint>& choices() const { return choices_; }
  /// Every `query` the run answered (simulator), in order; none for a
  /// streamed run.
  const std::vector<QueryAnswer>& query_answers() const { return query_answers_; }
  /// The branch taken at each `if done` the run reached, in order (R11).
  const std::vector<BranchTaken>& branches() const { return branches_; }
  /// The statement that made log entry `entry` of the model (a wait, a
  /// sync, ...); nullopt for an entry made before the first statement.
  std::optional<OpOrigin> log_origin(std::size_t entry) const;
  /// The lines of the statements the run ran (simulator; a statement left
  /// waiting when the run ended is not among them).
  std::set<int> executed_lines() const;

  // Recording (the interpreter and its drivers).
  void add_note(Note note) { notes_.push_back(std::move(note)); }
  void made_buffer(const std::string& name, TraceBuffer buffer) { buffers_[name] = buffer; }
  void took_branch(BranchTaken branch) { branches_.push_back(branch); }
  /// An origin that is not its line's statement alone (R14b: a graph's op
  /// and the launch that ran it); it wins over set_origins'.
  void set_origin(sim::OpRef op, OpOrigin origin) { special_origins_[op] = std::move(origin); }
  void set_model(std::unique_ptr<sim::DeviceModel> model) { model_ = std::move(model); }
  /// R9c: stream `newer` (as reports call it) was created at `line` with
  /// the handle `older` had.
  struct HandleReuse {
    std::string older;
    int line = 0;
  };
  void reused_handle(const std::string& newer, HandleReuse from) { handle_reuses_[newer] = std::move(from); }
  const std::map<std::string, HandleReuse>& handle_reuses() const { return handle_reuses_; }
  void set_choices(std::vector<ChoicePoint> choices, std::vector<QueryAnswer> queries) {
    choices_ = std::move(choices);
    query_answers_ = std::move(queries);
  }
  /// A streamed run's choices and queries, listed and counted as its
  /// report says them (it keeps no choices() nor query_answers()).
  void set_choice_summary(ChoiceSummary summary) { choice_summary_ = std::move(summary); }
  const ChoiceSummary& choice_summary() const { return choice_summary_; }
  /// The model's hidden stream of plain `buffer` / `free` (cudaMalloc /
  /// cudaFree), which the trace never declares (pictures label it as such).
  std::optional<sim::StreamIndex> plain_alloc_stream() const { return plain_alloc_stream_; }
  void set_plain_alloc_stream(sim::StreamIndex s) { plain_alloc_stream_ = s; }
  /// The statement of each run of log entries: the one at `line` made the
  /// entries from `first_entry` up to the next start's.
  /// One a statement run: 8 bytes (a log holds fewer than 2^32 entries,
  /// sim::SimBackend::set_op_origin says so).
  struct LogStart {
    std::uint32_t first_entry;
    int line;
  };
  void set_log_starts(std::vector<LogStart> starts) { log_starts_ = std::move(starts); }
  /// Where the ops came from: a line per op, and the statement text of each
  /// line (pointers into the trace the run ran, which must outlive this
  /// record; origin() copies the text out).
  void set_origins(sim::OpLines lines, std::vector<const std::string_view*> texts) {
    origin_lines_ = std::move(lines);
    line_texts_ = std::move(texts);
  }
  /// A streamed run kept no statement: the texts of the lines its report
  /// names, read again from the file (statement_texts).
  void set_origin_texts(StatementTexts texts) { origin_texts_ = std::move(texts); }
  /// The line that enqueued `op` (origin() without the text): what a
  /// streamed run's report asks statement_texts for.
  std::optional<int> origin_line(sim::OpRef op) const { return origin_lines_.get(op); }

 private:
  std::unique_ptr<sim::DeviceModel> model_;
  std::vector<Note> notes_;
  NameMap<TraceBuffer> buffers_;
  OpOrigin origin_at(int line) const;
  /// The texts origin() has given, each once (a loop's ops share their
  /// statements' few texts); filled as reports ask, so const reads fill it.
  mutable TextInterner texts_;
  sim::OpLines origin_lines_;
  std::vector<const std::string_view*> line_texts_;  // by line; null where no statement is
  StatementTexts origin_texts_;                      // a streamed run's: by line
  std::map<sim::OpRef, OpOrigin> special_origins_;
  std::vector<ChoicePoint> choices_;
  std::vector<QueryAnswer> query_answers_;
  ChoiceSummary choice_summary_;
  std::vector<BranchTaken> branches_;
  std::optional<sim::StreamIndex> plain_alloc_stream_;
  std::vector<LogStart> log_starts_;                  // ascending first_entry
  std::map<std::string, HandleReuse> handle_reuses_;  // R9c: newer stream -> the one whose handle it got
};

struct TraceRunOptions {
  PoolPolicy policy;
  /// Explore injected faults at the resource's backend calls (at most one).
  bool faults = false;
  /// How the simulated device progresses: every device step a choice
  /// (check, random, dfs-schedules), or only where the host observes it
  /// (dfs: one run per execution).
  sim::DeviceProgress progress = sim::DeviceProgress::EveryStep;
  /// Partial-order reduction over the trace's host threads (sleep sets,
  /// R6): on for DeviceProgress::OnObservation; off to compare (tests).
  bool sleep_sets = true;
  /// A long run's memory (a streamed check): keep no API log, and drop the
  /// records of executed ops nothing names (sim::DeviceModel::compact) at
  /// statement starts once `compact_every` ops came since the last pass.
  /// What walks every op (pictures, producers, --redundant) cannot run then.
  bool retain_only_named = false;
  std::uint64_t compact_every = sim::DeviceModel::kCompactEvery;
  /// The value oracle (P2): a report of a trace never reads its
  /// mismatches (the property tests do), so a streamed check leaves it off.
  bool value_oracle = true;
};

/// Runs `trace` once on the simulator, the schedule chosen by `chooser`
/// (both must outlive the returned record: its model refers to the chooser,
/// its ops' origins to the trace's statement texts).
/// `on_model` sees the simulated device before the first statement runs.
Execution run_on_simulator(const Trace& trace, sim::Chooser& chooser, const TraceRunOptions& options,
                           const std::function<void(const sim::DeviceModel&)>& on_model = {});
/// Runs the trace `reader` reads once on the simulator, each statement as it
/// is read (TraceInterpreter::run_streamed), after reader.read_declarations()
/// (`options.policy` is then the trace's, overrides applied). The record's
/// ops have their lines but no texts: set_origin_texts gives those. Its
/// choices and queries are listed and counted (Execution::choice_summary),
/// not kept: `chooser` keeps none (Chooser::keep_no_choices). `on_model`
/// sees the simulated device before the first statement runs.
Execution run_streamed_on_simulator(TraceReader& reader, sim::Chooser& chooser, const TraceRunOptions& options,
                                    const std::function<void(const sim::DeviceModel&)>& on_model = {});

}  // namespace streamcheck::tools
