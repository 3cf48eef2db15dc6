// The typed result of checking a trace (check, explore, replay): every
// finding, note and figure as data. Sinks only format it -- report_text for
// people, report_json for tools (docs/report.schema.json, docs/TRACES.md);
// the words of each part come from tools/explain.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "model/pool_policy.h"
#include "tools/trace.h"

namespace streamcheck::tools {

enum class Severity : std::uint8_t { Error, Warning };

/// An op as the report names it: its place in the simulator, the trace's name
/// of its stream, and the trace statement that enqueued it.
struct ReportOp {
  sim::OpRef ref;
  std::string stream;  // the trace's name of ref.stream
  /// The statement that enqueued the op; nullopt for an op of no statement
  /// (inside the resource), which `description` then names.
  std::optional<OpOrigin> origin;
  std::string description;  // the simulator's description of the op
};

/// One range of the bytes both ops touch: offsets into the trace buffer that
/// holds it, else device addresses.
using ReportBytes = NamedBytes;

/// How the two ops are (not) ordered.
enum class Ordering : std::uint8_t {
  NeverFreed,      // a leak: no free at all
  FreedBeforeUse,  // the free happens before the use (a definite use after free)
  MissingEdge,     // no happens-before path from first to second
};

/// The change that removes the finding.
enum class Fix : std::uint8_t {
  FreeTheBuffer,       // free it once its last use is enqueued
  KeepAliveUntilUse,   // keep the buffer alive until after the second op
  RecordEventAndWait,  // record an event after first; make second's stream wait on it
};

struct ReportFinding {
  sim::FindingKind kind;
  bool definite = false;  // use after free: the free is HB-before the use
  Severity severity = Severity::Error;
  ReportOp first;
  std::optional<ReportOp> second;  // nullopt for a leak
  /// Every range both ops touch, in address order, each in one buffer (or
  /// in none): never their hull.
  std::vector<ReportBytes> bytes;
  Ordering order = Ordering::MissingEdge;
  Fix fix = Fix::RecordEventAndWait;
  std::string schedule;         // the first schedule that showed it
  std::uint64_t schedules = 0;  // how many schedules showed it
};

/// What was explored, and what stopped it.
struct Coverage {
  enum class How : std::uint8_t { OneSchedule, Replay, Random, Dfs };
  How how = How::OneSchedule;
  std::uint64_t seed = 0;
  std::uint64_t explored = 0;  // schedules run
  bool exhaustive = false;     // DFS ran every schedule
  /// The --schedules bound that stopped an exploration short of exhausting
  /// the schedules; nullopt when it ran to its end (or ran one schedule).
  std::optional<std::uint64_t> bound;
};

/// `replay --backend cuda`: the trace run on the GPU with the first op of
/// every finding held back.
struct GpuReplay {
  std::string device;
  std::uint32_t runs = 0;
  std::uint32_t runs_with_mismatches = 0;
  std::uint64_t mismatching_words = 0;
  std::vector<std::string> notes;  // resource calls refused on the GPU
};

enum class Verdict : std::uint8_t { Clean, Findings };

struct Report {
  std::string file;
  Coverage coverage;
  PoolPolicy policy;
  std::vector<ReportFinding> findings;
  std::vector<Note> notes;  // what went wrong that is no HB finding, with its line
  std::optional<GpuReplay> gpu;

  /// Findings when anything but a warning was found (a note, an error, a
  /// corrupted read on the GPU); leaks alone are clean.
  Verdict verdict() const;
};

std::string report_text(const Report& r);
std::string report_json(const Report& r);

}  // namespace streamcheck::tools
