// Trace programs (docs/TRACES.md): parsing, with FILE:LINE:COL errors, and
// running one schedule of a trace on the simulated device.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
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
      : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message),
        line_(line),
        col_(col) {}
  int line() const { return line_; }
  int col() const { return col_; }

 private:
  int line_;
  int col_;
};

enum class StmtKind : std::uint8_t {
  Stream,
  Event,
  Thread,
  Policy,
  Buffer,
  Free,
  Launch,
  Copy,
  Record,
  Wait,
  SyncStream,
  SyncEvent,
  SyncDevice,
  Query,
  Resource,
  Allocate,
  Deallocate,
  Prepare,
  Finish,
  Reap,
  Run,
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

struct Statement {
  StmtKind kind;
  int line = 0;
  std::string text;    // the source line, trimmed, without its comment
  std::string thread;  // "@name" prefix, or "main"
  std::string name;    // the declared / used name (buffer, event, kernel, ...)
  std::string stream;  // "on STREAM" (empty when absent)
  std::uint64_t bytes = 0;
  std::vector<AccessList> accesses;  // launch, copy, run
  Access access = Access::Read;      // prepare, finish
};

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

/// Buffers whose latest `buffer`/`allocate` statement failed at run time
/// (out of memory, an allocate refused over budget). A real program does not
/// go on to use memory it never got, so the interpreters skip every later
/// statement that names such a buffer, with a note saying why.
class UnallocatedBuffers {
 public:
  void failed(const std::string& buffer, std::string why) { why_[buffer] = std::move(why); }
  void made(const std::string& buffer) { why_.erase(buffer); }
  /// The note for skipping `st`, or nullopt to run it.
  std::optional<std::string> skip(const Statement& st) const;

 private:
  std::map<std::string, std::string> why_;  // buffer -> why it has no memory
};

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

/// Something that went wrong that is not an HB finding: a resource call
/// refused, a double free. Counted as a finding of the program.
struct Note {
  int line;
  std::string message;
};

struct TraceRunOptions {
  PoolPolicy policy;
  /// Explore injected faults at the resource's backend calls (at most one).
  bool faults = false;
};

/// One run of a trace under one schedule.
class TraceRun {
 public:
  TraceRun(const Trace& trace, sim::Chooser& chooser, const TraceRunOptions& options);
  const sim::DeviceModel& model() const { return *model_; }
  const std::vector<Note>& notes() const { return notes_; }
  /// The statement that enqueued `op`, if any (resource ops: the call).
  std::optional<OpOrigin> origin(sim::OpRef op) const;
  /// The buffer that holds `bytes` (offsets into it); nullopt outside every buffer.
  std::optional<BufferBytes> buffer_bytes(sim::ByteRange bytes) const;

 private:
  struct Buffer {
    std::uint64_t ptr;
    std::uint64_t bytes;
    sim::AllocationIndex allocation;
  };
  void run(const Trace& trace, const TraceRunOptions& options);

  std::unique_ptr<sim::DeviceModel> model_;
  std::map<std::string, Buffer> buffers_;  // every buffer ever made, by name (newest wins)
  std::map<sim::OpRef, OpOrigin> origins_;
  std::vector<Note> notes_;
  friend struct TraceInterpreter;
};

}  // namespace streamcheck::tools
