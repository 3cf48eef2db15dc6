// `streamcheck explain FILE --schedule S`: a schedule's choices as steps a
// person can follow -- for each choice, the trace line that asked it and
// what its answer did (which stream head completed, which range the pool
// handed out, where a fault was injected).
#pragma once

#include <string>

#include "tools/schedule_io.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// Replays the schedule (strictly: sim::ScheduleMismatch when it does not
/// fit) and words each of its choices, one line each.
std::string explain_schedule(const Trace& trace, const ScheduleToReplay& replay);

}  // namespace streamcheck::tools
