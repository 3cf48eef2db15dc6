#include "tools/schedule_io.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace streamcheck::tools {

namespace {

const char* on_off(bool on) { return on ? "on" : "off"; }

/// The header as it is written, without the choices: "v2,faults:".
std::string header_text(const sim::ScheduleHeader& h) {
  const std::string full = sim::encode_schedule(h, {});
  return full.substr(0, full.find(':') + 1);
}

/// The divergence in the trace's words: the statement that asked, with its text.
std::string describe_divergence(const Trace& trace, const sim::Divergence& d) {
  if (d.surplus > 0)
    return fmt::format(
        "the schedule does not fit {}: the program finished after {} choices, but the schedule has {} more (extra "
        "characters at its end, or it was recorded for another program or with other options)",
        trace.file, d.choice, d.surplus);
  std::string where = "while the device drains after the last statement";
  for (const auto& st : trace.statements)
    if (source(st).line == d.line) where = fmt::format("at line {} ({})", d.line, source(st).text);
  const std::string asked = fmt::format("choice {} (a {}, asked {}) has {} options (0-{})", d.choice + 1,
                                        sim::to_string(d.kind), where, d.options, d.options - 1);
  if (!d.given)
    return fmt::format("the schedule does not fit {}: it ends after {} choices, but {}", trace.file, d.choice, asked);
  return fmt::format(
      "the schedule does not fit {}: {}, but the schedule gives {}; it was recorded for another program or with "
      "other options",
      trace.file, asked, *d.given);
}

/// SWITCH=VALUE for each pool switch of `p` that differs from `base`, in the
/// order docs/TRACES.md lists them.
std::vector<std::pair<std::string, std::string>> policy_difference(const PoolPolicy& base, const PoolPolicy& p) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto both = [&](const char* name, bool PoolPolicy::*field) {
    if (p.*field != base.*field) out.emplace_back(name, on_off(p.*field));
  };
  both("follow_event_dependencies", &PoolPolicy::follow_event_dependencies);
  both("opportunistic", &PoolPolicy::opportunistic);
  both("internal_dependencies", &PoolPolicy::internal_dependencies);
  if (p.release_threshold != base.release_threshold)
    out.emplace_back("release_threshold", std::to_string(p.release_threshold));
  return out;
}

}  // namespace

sim::ScheduleHeader schedule_header(const Trace& trace, const TraceRunOptions& run) {
  // A header says EveryStep or OnObservation; a replay of any other run
  // would run another execution without saying so.
  if (run.progress == sim::DeviceProgress::AtOnce)
    throw std::logic_error("schedule_header: a run whose ops execute at once (a streamed check) has no schedule");
  return sim::ScheduleHeader{run.faults, run.progress == sim::DeviceProgress::OnObservation,
                             policy_difference(trace.policy, run.policy)};
}

ScheduleToReplay schedule_to_replay(const Trace& trace, std::string_view text, const TraceCheckOptions& command_line,
                                    bool faults_given) {
  ScheduleToReplay out{sim::parse_schedule(text), command_line};
  const auto& header = out.schedule.header;
  if (!header) return out;  // headerless: the command line says how it was recorded
  PoolPolicy recorded;
  try {
    recorded = apply_policy_overrides(trace.policy, header->policy);
  } catch (const std::invalid_argument& e) {
    throw ScheduleError(fmt::format("the schedule's header `{}`: {}", header_text(*header), e.what()));
  }
  if (faults_given && command_line.faults != header->faults)
    throw ScheduleError(fmt::format(
        "the schedule was recorded with --faults {} (its header `{}` says so), but --faults {} asks for another "
        "run; leave --faults out: the header sets it",
        on_off(header->faults), header_text(*header), on_off(command_line.faults)));
  if (!command_line.policy_overrides.empty()) {
    const PoolPolicy asked = apply_policy_overrides(trace.policy, command_line.policy_overrides);
    if (asked != recorded)
      throw ScheduleError(fmt::format(
          "the schedule was recorded with pool {} (its header `{}` and the trace's policy lines), but --policy asks "
          "for pool {}; leave --policy out: the header sets it",
          recorded.describe(), header_text(*header), asked.describe()));
  }
  out.options.faults = header->faults;
  out.options.progress = header->observed ? sim::DeviceProgress::OnObservation : sim::DeviceProgress::EveryStep;
  out.options.policy_overrides = header->policy;
  return out;
}

Execution replay_on_simulator(const Trace& trace, sim::ReplayChooser& chooser, const TraceRunOptions& run,
                              const std::function<void(const sim::DeviceModel&)>& on_model) {
  try {
    Execution exec = run_on_simulator(trace, chooser, run, on_model);
    if (const std::uint64_t left = chooser.remaining(); left > 0) {
      sim::Divergence d{};
      d.choice = chooser.choice_count();
      d.surplus = left;
      throw sim::ScheduleMismatch(d);
    }
    return exec;
  } catch (const sim::ScheduleMismatch& e) {
    throw sim::ScheduleMismatch(e.where(), describe_divergence(trace, e.where()));
  }
}

void save_long_schedules(Report& report, const std::string& dir) {
  const std::string name = std::filesystem::path(report.file).filename().string();
  std::map<std::string, std::string> written;  // schedule -> its file
  const ReportFinding* previous = nullptr;     // the last finding given a file
  for (auto& f : report.findings) {
    if (f.schedule.size() <= kLongestInlineSchedule) continue;
    // The findings a run showed first are consecutive and share its
    // schedule's copy: no text compared for them.
    if (previous && f.schedule.same_copy(previous->schedule)) {
      f.schedule_file = previous->schedule_file;
      continue;
    }
    previous = &f;
    auto it = written.find(f.schedule);
    if (it == written.end()) {
      const std::string path =
          (std::filesystem::path(dir) / fmt::format("{}.{}.schedule", name, written.size() + 1)).string();
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << f.schedule.str() << "\n";
      out.close();
      if (!out)
        throw ScheduleError(fmt::format(
            "cannot write the schedule of a finding to {}: {}; name a writable folder with --save-schedules DIR", path,
            std::strerror(errno)));
      it = written.emplace(f.schedule.str(), path).first;
    }
    f.schedule_file = it->second;
  }
}

std::string read_schedule_file(const std::string& path) {
  if (std::filesystem::is_directory(path))
    throw ScheduleError(fmt::format("the schedule file {} is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScheduleError(fmt::format("cannot read the schedule file {}: {}", path, std::strerror(errno)));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw ScheduleError(fmt::format("the schedule file {} is empty", path));
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace streamcheck::tools
