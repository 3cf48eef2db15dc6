// Trace programs (docs/TRACES.md): parsing, with FILE:LINE:COL errors, and
// running one schedule of a trace on the simulated device.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/schedule.h"
#include "model/mutants.h"
#include "model/pool_policy.h"
#include "model/types.h"

namespace streamcheck::tools {

/// Malformed input: an input error, reported as FILE:LINE:COL: message.
class TraceError : public std::runtime_error {
 public:
  TraceError(const std::string& file, int line, int col, const std::string& message)
      : std::runtime_error(fmt::format("{}:{}:{}: {}", file, line, col, message)), line_(line), col_(col) {}
  int line() const { return line_; }
  int col() const { return col_; }

 private:
  int line_;
  int col_;
};

struct BufferRef {
  std::string buffer;
  std::uint64_t lo = 0;
  std::optional<std::uint64_t> hi;  // nullopt: to the end of the buffer
};

struct AccessList {
  Access access;
  std::vector<BufferRef> refs;
};

/// The parsed statements (docs/TRACES.md), one struct per kind. Names are
/// checked by the parser: a stream, event, thread or buffer named here was
/// declared before, as that kind.
namespace ast {

/// What every statement carries: where it is and which host thread runs it.
struct Source {
  int line = 0;
  std::string text;             // the source line, trimmed, without its comment
  std::string thread = "main";  // the "@name" prefix, or "main"
};

struct StreamDecl : Source {
  std::string name;
};
struct EventDecl : Source {
  std::string name;
};
struct ThreadDecl : Source {
  std::string name;
};
/// `policy SWITCH = VALUE`: already applied to Trace::policy by the parser.
struct PoolSwitch : Source {};
/// `resource [budget N] [mutant Mk]`: already in Trace::uses_resource,
/// Trace::budget and Trace::mutant.
struct ResourceDecl : Source {};
/// `buffer NAME BYTES [on STREAM]`: stream-ordered on STREAM, else a plain
/// allocation (cudaMalloc: ready for every stream when it returns).
struct BufferDecl : Source {
  std::string name;
  std::uint64_t bytes = 0;
  std::optional<std::string> stream;
};
/// `free NAME [on STREAM]`: stream-ordered on STREAM, else a plain free.
struct Free : Source {
  std::string buffer;
  std::optional<std::string> stream;
};
struct Launch : Source {
  std::string kernel;
  std::string stream;
  std::vector<AccessList> accesses;
};
struct Copy : Source {
  std::string name;
  std::string stream;
  BufferRef from;
  BufferRef to;
  /// Reads `from`, writes `to`.
  std::vector<AccessList> accesses() const { return {{Access::Read, {from}}, {Access::Write, {to}}}; }
};
struct Record : Source {
  std::string event;
  std::string stream;
};
struct Wait : Source {
  std::string stream;
  std::string event;
};
struct SyncStream : Source {
  std::string stream;
};
struct SyncEvent : Source {
  std::string event;
};
struct SyncDevice : Source {};
struct Query : Source {
  std::string event;
};
struct Allocate : Source {
  std::string buffer;
  std::uint64_t bytes = 0;
  std::string stream;
};
struct Deallocate : Source {
  std::string buffer;
};
struct Prepare : Source {
  std::string buffer;
  std::string stream;
  Access access = Access::Read;
};
struct Finish : Source {
  std::string buffer;
  std::string stream;
  Access access = Access::Read;
};
struct Reap : Source {};
/// `run KERNEL on STREAM ...`: a launch through LaunchRecorder and the resource.
struct Run : Source {
  std::string kernel;
  std::string stream;
  std::vector<AccessList> accesses;
};

}  // namespace ast

using Statement = std::variant<ast::StreamDecl, ast::EventDecl, ast::ThreadDecl, ast::PoolSwitch, ast::ResourceDecl,
                               ast::BufferDecl, ast::Free, ast::Launch, ast::Copy, ast::Record, ast::Wait,
                               ast::SyncStream, ast::SyncEvent, ast::SyncDevice, ast::Query, ast::Allocate,
                               ast::Deallocate, ast::Prepare, ast::Finish, ast::Reap, ast::Run>;

/// The line, text and host thread of any statement.
inline const ast::Source& source(const Statement& st) {
  return std::visit([](const ast::Source& s) -> const ast::Source& { return s; }, st);
}

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
  PoolPolicy policy;
  bool uses_resource = false;
  std::optional<MutantId> mutant;
  std::optional<std::uint64_t> budget;
  std::vector<std::string> streams;  // in declaration order
};

/// Parses and checks a whole trace; throws TraceError at the first problem.
Trace parse_trace(std::string_view text, const std::string& file);
/// Reads FILE and parses it; an unreadable file is a TraceError at 0:0.
Trace load_trace(const std::string& path);

/// Where an op came from: the trace statement that enqueued it.
struct OpOrigin {
  int line = 0;
  std::string text;
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
  const std::map<std::string, TraceBuffer>& buffers() const { return buffers_; }
  /// The statement that enqueued `op`, if any (resource ops: the call).
  std::optional<OpOrigin> origin(sim::OpRef op) const;
  /// `bytes` cut where buffers begin and end: each piece named by the buffer
  /// that holds it (offsets into it), or by its addresses outside every buffer.
  std::vector<NamedBytes> name_bytes(sim::ByteRange bytes) const;

  // Recording (the interpreter and its drivers).
  void add_note(Note note) { notes_.push_back(std::move(note)); }
  void made_buffer(const std::string& name, TraceBuffer buffer) { buffers_[name] = buffer; }
  void set_origin(sim::OpRef op, OpOrigin origin) { origins_[op] = std::move(origin); }
  void set_model(std::unique_ptr<sim::DeviceModel> model) { model_ = std::move(model); }

 private:
  std::unique_ptr<sim::DeviceModel> model_;
  std::vector<Note> notes_;
  std::map<std::string, TraceBuffer> buffers_;
  std::map<sim::OpRef, OpOrigin> origins_;
};

struct TraceRunOptions {
  PoolPolicy policy;
  /// Explore injected faults at the resource's backend calls (at most one).
  bool faults = false;
};

/// Runs `trace` once on the simulator, the schedule chosen by `chooser`
/// (which must outlive the returned record: its model refers to it).
Execution run_on_simulator(const Trace& trace, sim::Chooser& chooser, const TraceRunOptions& options);

}  // namespace streamcheck::tools
