// Schedules of trace programs (docs/TRACES.md "Schedules"): the header a run
// records -- every option that changes which choices the run asks -- the
// options a schedule is replayed with, strict replay that says where a
// schedule stops fitting the program, and schedule files for schedules too
// long for one line of a report.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "backend_sim/schedule.h"
#include "tools/report.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {

/// A schedule that cannot be used as asked: its header contradicts the
/// command line or names an unknown pool switch, or its file cannot be read
/// or written. A usage or input error (exit 2), with what to do.
class ScheduleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The header a run of `trace` with these options records: --faults, and
/// the pool switches that differ from the trace's own `policy` lines.
sim::ScheduleHeader schedule_header(const Trace& trace, const TraceRunOptions& run);

/// A schedule, and the options to replay it with.
struct ScheduleToReplay {
  sim::ScheduleText schedule;
  TraceCheckOptions options;
};
/// Parses `text` (std::invalid_argument when malformed) and takes the
/// options from its header: `command_line` may repeat them, but a --faults
/// (`faults_given`) or --policy that asks for another run is a ScheduleError.
/// A headerless schedule (written before version 2) replays with the
/// command line's options.
ScheduleToReplay schedule_to_replay(const Trace& trace, std::string_view text, const TraceCheckOptions& command_line,
                                    bool faults_given);

/// Runs `trace` under exactly the schedule of `chooser` (a Refuse
/// ReplayChooser). A schedule that does not fit throws sim::ScheduleMismatch
/// naming the choice, the trace line that asked (with its text), the
/// options it had and the answer given -- or that the schedule ended early,
/// or had answers left when the program finished. `on_model` sees the
/// simulated device before the run starts (explain reads it at each choice).
Execution replay_on_simulator(const Trace& trace, sim::ReplayChooser& chooser, const TraceRunOptions& run,
                              const std::function<void(const sim::DeviceModel&)>& on_model = {});

/// Text reports write longer schedules to a file and print the command that
/// reads it: a report line stays readable, and a 1 M-op trace's schedule
/// (megabytes) stays under the shell's argument limit.
inline constexpr std::size_t kLongestInlineSchedule = 200;
/// Writes each distinct schedule of `report` longer than
/// kLongestInlineSchedule to DIR/NAME.N.schedule (NAME: the trace file's
/// name; N counts from 1) and records the path in the findings
/// (ReportFinding::schedule_file). Throws ScheduleError when it cannot.
void save_long_schedules(Report& report, const std::string& dir);
/// The schedule in a file (as save_long_schedules writes it): its text
/// without the white space around it. Throws ScheduleError.
std::string read_schedule_file(const std::string& path);

}  // namespace streamcheck::tools
