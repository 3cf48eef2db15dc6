// Grouping findings by root cause and writing each group's fix as trace
// edits (tools/fix.h). One missing edge is one group: every race between an
// op on stream X and a later op on stream Y that one record after the last
// racing op on X and one wait before the first racing op on Y remove.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tools/fix.h"
#include "tools/report.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {

/// Edits are checked against every read's producer only in traces of at
/// most this many statements (the check runs the trace once per group, and
/// finding producers costs a pass over the ops per read).
inline constexpr std::size_t kMaxStatementsCheckedForProducers = 1000;

/// Fills report.groups (every finding in exactly one group) and each
/// group's edits. Findings that carry their own edits group with the
/// findings that carry the same edits; a missing edge gets a new event
/// (named fix_1, fix_2, ... unless the trace uses those names); findings
/// that no edit fixes (leaks, definite use after free, a fix that would
/// change which write a read sees) are groups of their own with no edits.
/// Each record/wait pair is checked on one schedule (`options`' seed, pool
/// and policy overrides): a group whose edge would change some read's
/// producer is split into its findings, and a finding whose own edge would
/// gets none (FindingGroup::breaks_producer says which read).
void group_findings(const Trace& trace, Report& report, const TraceCheckOptions& options);

/// A report's fixes applied to its trace (`streamcheck fix`).
struct AppliedFixes {
  EditedTrace trace;                 // the fixed text, and where each original line went
  std::vector<std::size_t> applied;  // the groups whose edits it holds
  struct NotApplied {
    std::size_t group;
    std::string why;
  };
  std::vector<NotApplied> not_applied;  // the other groups, and why
};

/// Applies the groups' edits to `text` (the trace `trace` was parsed from,
/// `report` its report), one group at a time, each checked on the simulator
/// (one schedule: `options`' seed, pool and policy overrides) before it is
/// kept: a group is left out when it has no edits (its fix says why), when
/// its edits clash with those kept, or when they would change which write
/// some read sees (its producer, tools/producers.h).
/// When every group only adds records and waits of new events of its own
/// (or waits on the trace's own events), in
/// a trace with no capture and too long for the producer check, the edits
/// are applied and parsed once, all together (what one at a time would keep:
/// such edits parse in any subset when they parse together); otherwise, or
/// when they do not parse together, one group at a time.
AppliedFixes apply_fixes(std::string_view text, const Trace& trace, const Report& report,
                         const TraceCheckOptions& options);
/// apply_fixes always one group at a time: what it must agree with.
AppliedFixes apply_fixes_one_at_a_time(std::string_view text, const Trace& trace, const Report& report,
                                       const TraceCheckOptions& options);

}  // namespace streamcheck::tools
