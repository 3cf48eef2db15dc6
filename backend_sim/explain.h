// The one place where the simulator's findings, ops and API calls are put
// into words. The checker keeps findings as data (sim::Finding,
// sim::ValueMismatch); reports, renderers and the property harness word them
// through these functions only, so one finding reads the same everywhere.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/device_model.h"

namespace streamcheck::sim {

/// "alloc", "free" or "kernel".
std::string_view to_string(OpKind k);
/// The op's stream and position: "s1#2".
std::string ref_name(const DeviceModel& model, OpRef op);
/// The op with its kind and label: `s1#2 kernel "k"`.
std::string describe(const DeviceModel& model, OpRef op);
/// A host API call of the log ("record e0 on s1", "synchronize device"); an
/// enqueue reads "enqueue <describe(op)>".
std::string host_action(const DeviceModel& model, const LogEntry& entry);

/// Device addresses, range by range: "[0x1000, 0x1040), [0x1080, 0x10c0)".
std::string describe(const std::vector<ByteRange>& ranges);
/// The finding's kind with its qualifier: "use after free (definite)".
std::string finding_label(const Finding& f);
/// The edge (or change) that would remove the finding.
std::string suggested_fix(const DeviceModel& model, const Finding& f);
/// The finding in two lines: what happened, then "  fix: ...".
std::string format(const DeviceModel& model, const Finding& f);
/// A P2 value mismatch: which op read which stamp where another was due.
std::string describe(const DeviceModel& model, const ValueMismatch& m);

}  // namespace streamcheck::sim
