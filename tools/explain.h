// The one place where a trace report is put into words: ops by their trace
// lines, bytes by their buffers, the ordering and the fix of each finding.
// backend_sim/explain.h words what the simulator alone knows; this file adds
// what the trace knows (lines, statements, buffer names). report_text,
// report_json and the GPU replay line all word a report through it.
#pragma once

#include <string>
#include <string_view>

#include "tools/report.h"

namespace streamcheck::tools {

/// The op's stream (the trace's name) and position: "s1#0".
std::string op_name(const ReportOp& op);
/// "line 4", or the op's name ("s1#0") for an op of no trace statement.
std::string short_ref(const ReportOp& op);
/// "line 4 (launch K1 on s1 writes A)", or the simulator's description of an
/// op of no trace statement.
std::string line_ref(const ReportOp& op);
/// "line 4 (launch K1 on s1 writes A) [s1#0]", or as line_ref.
std::string describe(const ReportOp& op);
/// "A[0:4096]", or "[0x1000, 0x2000)" outside every buffer.
std::string describe(const ReportBytes& bytes);
/// The ranges one by one: "A[0:64], A[128:192]".
std::string describe(const std::vector<ReportBytes>& bytes);
/// "data race", "use after free (definite)": sim::finding_label's words.
std::string finding_label(const ReportFinding& f);
/// Why the finding happens: the HB path, or its absence.
std::string describe_order(const ReportFinding& f);
/// The change that removes it, naming trace lines.
std::string describe_fix(const ReportFinding& f);
/// "record too early", "wait never recorded", "stale capture", "prepare
/// without finish".
std::string to_string(NearMiss::Kind kind);
/// What the near miss's statement does and why it misses, naming lines:
/// "line 8 (wait ready on s2) orders nothing: ready is not recorded before
/// it (line 9 records it)".
std::string describe(const NearMiss& near_miss);
/// "line 4 (launch K on s1 writes A)".
std::string describe(const TraceLine& line);
/// What a group's findings have in common: "nothing orders s1 before s2
/// (one missing edge)", or the finding's label.
std::string describe_cause(const Report& r, const FindingGroup& g);
/// The racing pairs of a group by their lines, "line 5 -> line 40, ...",
/// at most `at_most` of them and then the count.
std::string describe_pairs(const Report& r, const FindingGroup& g, std::size_t at_most);
/// "it would change what line 10 reads of A[0:4096]: line 8 instead of line 6".
std::string describe(const ProducerChange& change);
/// The group's edits, or (none) its first finding's fix.
std::string describe_fix(const Report& r, const FindingGroup& g);
/// "one schedule", "replay", "random" or "dfs".
std::string to_string(Coverage::How how);
/// "line 8: deallocate refused: ...".
std::string describe(const Note& note);
/// The coverage paragraph of a text report: exhaustive or not; when not, how
/// far it got (the choices not explored, by line) and the commands that would
/// explore the rest. Ends in a newline.
std::string describe_coverage(const Coverage& c);
/// "pool reuse at line 15 (option 0 of 2), query at line 12 answered \"not done\", 38 device steps".
std::string describe(const ChoiceSummary& s);

// The words of the typed fields, as report_json writes them
// (docs/report.schema.json).
std::string_view to_string(Severity s);  // "error", "warning"
std::string_view to_string(Verdict v);   // "clean", "findings", "errors"
std::string_view to_string(Ordering o);  // "never freed", "freed before use", "missing edge"
std::string_view to_string(Fix f);       // "free the buffer", "keep alive until use", "record event and wait", ...
std::string_view to_string(NoteKind k);  // "out of memory", "refused", ...
std::string_view to_string(InputError::Kind k);  // "usage", "trace", "schedule"
/// A host action in the few words of an SVG box ("sync s1", "query e0:
/// busy"); API calls without a short form read as sim::host_action.
std::string host_action_short(const sim::DeviceModel& model, const sim::LogEntry& entry);
/// The ops a GPU replay held back (the first op of every error), or "nothing".
std::string held_back(const Report& r);

}  // namespace streamcheck::tools
