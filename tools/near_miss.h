// Near misses (issue 10 item 4): synchronization a trace HAS that almost
// orders what it needs -- a record one op too early, a wait on an event not
// yet recorded, a wait that sees a re-record's capture, a prepare never
// finished -- and fixes in the trace's own terms: a finding such a near miss
// explains gets a fix that moves or completes THAT line (tools/fix.h edits)
// instead of a new event, and a finding of a resource-mode trace a fix in
// resource calls (`finish A on s1 read`), not raw CUDA.
//
// Everything here is read from the trace's statements in file order (the
// order the interpreter runs them: a wait sees the capture of the record of
// its event last run before it, R2/R3) and the finding's two ops with their
// lines; nothing compares text.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "tools/fix.h"
#include "tools/report.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// A finding's fix in the trace's own terms.
struct TraceFix {
  Fix fix = Fix::RecordEventAndWait;
  std::optional<NearMiss> near_miss;
  std::vector<TraceEdit> edits;  // applied by `streamcheck fix`; empty for ResourceOrdersThem
};

/// Which statements may be statement near misses (NearMissAnalysis::
/// statement_near_misses), told a statement at a time in file order, as a
/// streamed read hands them out: a wait on an event no earlier statement
/// recorded, and any prepare (whether its finish comes needs the rest of
/// the trace). A trace none of whose statements it flags has none.
class StatementNearMissWatch {
 public:
  /// Whether `st` (the next statement in file order) may be one.
  bool may_be_near_miss(const Statement& st);

 private:
  std::vector<bool> recorded_;  // by the event's Name::id + 1
};

/// The statements of one trace indexed for the near-miss questions (which
/// record a wait saw, which prepare is still open): built once per trace, in
/// one pass, so that a trace of a million statements costs a few binary
/// searches per finding.
class NearMissAnalysis {
 public:
  explicit NearMissAnalysis(const Trace& trace);
  ~NearMissAnalysis();
  NearMissAnalysis(const NearMissAnalysis&) = delete;
  NearMissAnalysis& operator=(const NearMissAnalysis&) = delete;

  /// The near misses the trace shows without any finding, in line order:
  /// every wait on an event not recorded before it, every prepare with no
  /// matching finish.
  std::vector<NearMiss> statement_near_misses() const;

  /// The fix of a finding (a missing edge between two ops of trace lines)
  /// that moves or completes the trace's own synchronization: a near miss
  /// that explains it, or resource calls around a raw launch on a resource
  /// block, or (under a mutant) the resource's own fault. nullopt: none
  /// applies, the generic fix (a new event) stands. Each edit only adds
  /// happens-before edges, so it removes the finding and adds none.
  std::optional<TraceFix> fix_of(const ReportFinding& finding) const;

  class Program;  // the indexed statements (near_miss.cpp)

 private:
  /// The index, made at its first use: a trace with no finding and no
  /// prepare never needs it, and making it was about a twelfth of what
  /// `check` spent on a million-statement trace (docs/PERFORMANCE.md).
  const Program& program() const;

  const Trace& trace_;
  mutable std::once_flag program_made_;
  mutable std::unique_ptr<Program> program_;
};

}  // namespace streamcheck::tools
