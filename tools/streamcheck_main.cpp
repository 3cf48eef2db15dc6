// The streamcheck command: CLI11 parses the command line, one verb runs and
// says what it found (an Outcome), and kExitCodes, the one table, turns that
// outcome -- or the exception that stopped the verb -- into the exit code.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend_sim/schedule.h"
#include "tools/capture_run.h"
#include "tools/explain.h"
#include "tools/explain_schedule.h"
#include "tools/explore.h"
#include "tools/fix_plan.h"
#include "tools/merge.h"
#include "tools/render.h"
#include "tools/schedule_io.h"
#include "tools/tool_protocols.h"
#include "tools/trace_check.h"
#include "tools/trace_gpu.h"

namespace {

using namespace streamcheck;

enum class Outcome : std::uint8_t { Clean, Findings, UsageOrInputError, InternalError };

struct ExitCode {
  Outcome outcome;
  int code;
  const char* meaning;
};

/// The one table of exit codes; every verb ends in one of these outcomes.
constexpr std::array kExitCodes{
    ExitCode{Outcome::Clean, 0, "clean"},
    ExitCode{Outcome::Findings, 1, "findings"},
    ExitCode{Outcome::UsageOrInputError, 2, "usage or input error"},
    ExitCode{Outcome::InternalError, 3, "streamcheck itself failed"},
};

int exit_code(Outcome outcome) {
  for (const auto& e : kExitCodes)
    if (e.outcome == outcome) return e.code;
  return 3;
}

std::string exit_codes_help() {
  std::string out = "Exit:";
  for (const auto& e : kExitCodes) out += " " + std::to_string(e.code) + " " + e.meaning + ";";
  out.back() = '.';
  return out;
}

/// A usage error found after parsing (an option that does not fit the verb's
/// other options); reported like CLI11's own parse errors.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ------------------------------------------------------------ options

/// What the verbs read from the command line.
struct Options {
  std::string file;
  std::string dir;
  bool json = false;
  bool stream = false;              // check --stream
  std::vector<std::string> policy;  // SWITCH=VALUE, in order
  tools::TraceCheckOptions trace;
  std::optional<std::string> schedule;
  std::string schedule_file;
  /// Where text reports write schedules too long to print (schedule_io.h).
  std::string save_schedules = ".";
  std::string backend = "sim";
  std::string format;
  std::string output;
  std::optional<std::size_t> finding;  // render --finding N
  std::optional<std::string> window;   // render --window FROM:TO
  // `explore` without FILE
  tools::ExploreOptions builtin;
  std::string mutant;
  std::string strategy = "random";
  std::string faults = "off";
  std::string shard;                     // explore --shard I/N
  std::vector<std::string> reports;      // merge REPORT...
  std::vector<std::string> ptx_sources;  // kernels FILE...
  tools::CaptureOptions capture{.command = {},
                                .trace_path = "streamcheck-capture.trace",
                                .kernels = {},
                                .library = {},
                                .ptx_files = {},
                                .derive_from_ptx = true};
};

/// `--shard I/N`: digits, a slash, digits; 0 <= I < N <= 100000.
std::optional<sim::Shard> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (slash == std::string::npos || !digits(text.substr(0, slash)) || !digits(text.substr(slash + 1)))
    return std::nullopt;
  const auto index = static_cast<std::uint32_t>(std::stoul(text.substr(0, slash)));
  const auto count = static_cast<std::uint32_t>(std::stoul(text.substr(slash + 1)));
  if (count == 0 || count > 100000 || index >= count) return std::nullopt;
  return sim::Shard{index, count};
}

const CLI::Validator kShard(
    [](std::string& text) -> std::string {
      return parse_shard(text) ? std::string()
                               : "--shard takes I/N with 0 <= I < N <= 100000, got '" + tools::shown_input(text) + "'";
    },
    "I/N");

/// An option check that accepts what `parse` accepts; `parse`'s
/// std::invalid_argument says what is wrong.
template <class Parse>
CLI::Validator accepted_by(Parse parse, const char* name) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          (void)parse(text);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      name);
}

/// A schedule string as check/explore print it (parse_schedule's grammar).
const CLI::Validator kScheduleString =
    accepted_by([](const std::string& text) { return sim::parse_schedule(text); }, "SCHEDULE");

/// One pool switch override, SWITCH=VALUE.
const CLI::Validator kPolicySwitch(
    [](std::string& text) -> std::string {
      const auto eq = text.find('=');
      if (eq == std::string::npos) return "--policy takes SWITCH=VALUE, got '" + tools::shown_input(text) + "'";
      try {
        (void)tools::apply_policy_overrides(PoolPolicy{}, {{text.substr(0, eq), text.substr(eq + 1)}});
        return {};
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
    },
    "SWITCH=VALUE");

/// `render --window FROM:TO`.
const CLI::Validator kCallWindow = accepted_by(tools::parse_call_window, "FROM:TO");

const CLI::Validator kMutantName(
    [](std::string& text) -> std::string {
      const auto mutant = parse_mutant(text);
      if (!mutant)
        return "unknown mutant '" + tools::shown_input(text) + "' (expected " + std::string(kMutantNames) + ")";
      return tools::tools_have(*mutant) ? std::string() : tools::mutant_not_built(text);
    },
    std::string(kMutantNames));

// Each choice an option offers, and what it selects: CLI::IsMember checks the
// keys, the verbs look the value up (no option value is compared as text).
const std::map<std::string, tools::Strategy> kStrategies{{"random", tools::Strategy::Random},
                                                         {"dfs", tools::Strategy::Dfs},
                                                         {"dfs-schedules", tools::Strategy::DfsSchedules},
                                                         {"pct", tools::Strategy::Pct}};
const char* const kStrategyHelp =
    "random; dfs: every execution (one outcome of each query, pool reuse and fault) up to --schedules; "
    "dfs-schedules: every interleaving of device steps (slower, to compare); pct: probabilistic concurrency "
    "testing, each run drawn for bugs of depth --depth (explore), with the bound it guarantees";
const std::map<std::string, bool> kOnOff{{"on", true}, {"off", false}};
enum class Backend : std::uint8_t { Sim, Cuda };
const std::map<std::string, Backend> kBackends{{"sim", Backend::Sim}, {"cuda", Backend::Cuda}};
using Renderer = std::string (*)(const tools::RenderInput&, const tools::RenderOptions&);
const std::map<std::string, Renderer> kFormats{{"text", tools::render_text},
                                               {"dot", tools::render_dot},
                                               {"svg", tools::render_svg},
                                               {"perfetto", tools::render_perfetto}};

/// Digits only, at most 2^64-1: CLI11 would read "-1" as 2^64-1, and a
/// larger number as 2^64-1, for an unsigned option.
const CLI::Validator kDecimal(
    [](std::string& text) -> std::string {
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        return "expected a decimal number, got '" + tools::shown_input(text) + "'";
      if (tools::parse_number(text).problem) return "'" + tools::shown_input(text) + "' is larger than 2^64-1";
      return {};
    },
    "DECIMAL");

const CLI::Validator kPositive(
    [](std::string& text) -> std::string {
      return text.find_first_not_of('0') == std::string::npos
                 ? "must be at least 1, got '" + tools::shown_input(text) + "'"
                 : std::string();
    },
    "POSITIVE");

void add_trace_file(CLI::App& verb, Options& o, bool required = true) {
  // Not CLI::ExistingFile: load_trace says why a file cannot be read, with
  // the OS's reason (a directory, no permission, ...).
  auto* file = verb.add_option("FILE", o.file, "trace program (docs/TRACES.md)");
  if (required) file->required();
}
void add_policy(CLI::App& verb, Options& o) {
  verb.add_option("--policy", o.policy,
                  "override a pool switch of the trace (repeatable): follow_event_dependencies, opportunistic, "
                  "internal_dependencies (on|off), release_threshold (bytes)")
      ->check(kPolicySwitch)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}
void add_json(CLI::App& verb, Options& o) {
  verb.add_flag("--json", o.json, "print the report as JSON (docs/report.schema.json)");
}
CLI::Option* add_seed(CLI::App& verb, Options& o, const char* what) {
  return verb.add_option("--seed", o.trace.seed, what)->check(kDecimal);
}
void add_redundant(CLI::App& verb, Options& o) {
  verb.add_flag("--redundant", o.trace.redundant,
                "also note each wait and sync that orders nothing new (over-synchronization; never changes the "
                "verdict)");
}
void add_faults(CLI::App& verb, Options& o,
                const char* what = "inject one transient fault at a resource call per run") {
  verb.add_option("--faults", o.faults, what)->check(CLI::IsMember(kOnOff));
}
/// --faults of a verb that runs a given schedule.
constexpr const char* kFaultsOfASchedule =
    "for a schedule without a header (before version 2): whether it was recorded with --faults on; a schedule "
    "with a header sets this itself";
void add_save_schedules(CLI::App& verb, Options& o) {
  verb.add_option("--save-schedules", o.save_schedules,
                  "text report: write schedules longer than 200 characters to files in this folder (default: the "
                  "current folder) and print the replay command that reads them")
      ->check(CLI::ExistingDirectory);
}
/// --schedule S | --schedule-file F (one of them, `required` or not).
CLI::Option* add_schedule(CLI::App& verb, Options& o, const char* what, bool required) {
  auto* text = verb.add_option("--schedule", o.schedule, std::string(what) + ", as check/explore print it")
                   ->check(kScheduleString);
  auto* file = verb.add_option("--schedule-file", o.schedule_file,
                               std::string(what) + ", read from a file (check/explore write long schedules to one)")
                   ->check(CLI::ExistingFile)
                   ->excludes(text);
  if (required) {
    auto* group = verb.add_option_group("schedule", "the schedule: --schedule S or --schedule-file F");
    group->add_option(text);
    group->add_option(file);
    group->require_option(1);
  }
  return file;
}

/// Whether `arg` is written as an option (-x, --name, --name=value), not
/// as a value: "-" (stdin by convention) and negative numbers are values.
bool looks_like_option(std::string_view arg) {
  return arg.size() > 1 && arg[0] == '-' && !(std::isdigit(static_cast<unsigned char>(arg[1])) != 0);
}

/// The option `arg` names, as CLI11 looks it up: "--name" of "--name=value",
/// "-o" of "-oFILE".
std::string option_name(std::string_view arg) {
  if (arg.starts_with("--")) return std::string(arg.substr(0, arg.find('=')));
  return std::string(arg.substr(0, 2));
}

/// CLI11 reads an option it does not know as the value of the option
/// before it, or as the trace FILE, and then reports that ("--seed: Could
/// not convert", "FILE is required"); the user's mistake is the unknown
/// option. This names it first, and an option whose value is missing
/// because the next argument is an option.
void refuse_unknown_options(const CLI::App& app, int argc, char** argv) {
  const CLI::App* scope = &app;
  std::string scope_name = "streamcheck";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return;
    if (!looks_like_option(arg)) {
      if (scope != &app) continue;  // a positional argument (FILE, DIR)
      const auto subs = app.get_subcommands([&](const CLI::App* sub) { return sub->get_name() == arg; });
      if (subs.empty()) return;  // not a verb: CLI11 says so
      scope = subs.front();
      scope_name = "streamcheck " + scope->get_name();
      continue;
    }
    const CLI::Option* opt = scope->get_option_no_throw(option_name(arg));
    if (opt == nullptr || opt->get_positional()) {
      std::string known;
      for (const CLI::Option* o : scope->get_options())
        if (!o->get_positional()) known += (known.empty() ? "" : ", ") + o->get_name();
      throw UsageError(
          fmt::format("unknown option '{}' for `{}` (its options: {})", tools::shown_input(arg), scope_name, known));
    }
    const bool value_attached = arg.find('=') != std::string_view::npos || (!arg.starts_with("--") && arg.size() > 2);
    if (opt->get_items_expected_max() == 0 || value_attached) continue;  // a flag, or --name=value
    if (i + 1 < argc && looks_like_option(argv[i + 1])) {
      const CLI::Option* following = scope->get_option_no_throw(option_name(argv[i + 1]));
      if (following == nullptr || following->get_positional()) continue;  // reported as unknown on the next round
      throw UsageError(fmt::format("{} needs a value, but the next argument is the option '{}'", opt->get_name(),
                                   tools::shown_input(argv[i + 1])));
    }
    ++i;  // the option's value
  }
}

// ------------------------------------------------------------ verbs

Outcome outcome_of(const tools::Report& r) {
  return r.verdict() == tools::Verdict::Clean ? Outcome::Clean : Outcome::Findings;
}

Outcome print_report(tools::Report r, const Options& o) {
  if (o.json) {
    std::cout << tools::report_json(r);  // JSON is data: the whole schedule stays in it
  } else {
    tools::save_long_schedules(r, o.save_schedules);
    std::cout << tools::report_text(r);
  }
  return outcome_of(r);
}

tools::TraceCheckOptions with_policy(const Options& o) {
  tools::TraceCheckOptions t = o.trace;
  t.strategy = kStrategies.at(o.strategy);
  t.faults = kOnOff.at(o.faults);
  if (!o.shard.empty()) t.shard = parse_shard(o.shard);
  for (const auto& s : o.policy) {
    const auto eq = s.find('=');
    t.policy_overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return t;
}

Outcome check(const CLI::App& verb, const Options& o) {
  if (o.stream) {
    for (const char* whole_run_only : {"--faults", "--redundant"})
      if (verb.count(whole_run_only) > 0)
        throw UsageError(std::string(whole_run_only) + " needs the whole run kept: leave out --stream");
    return print_report(tools::check_streamed(o.file, with_policy(o)), o);
  }
  return print_report(tools::check_trace_file(o.file, with_policy(o)), o);
}

Outcome explore_builtin(const CLI::App& verb, Options o) {
  for (const char* trace_only : {"--policy", "--json", "--strategy", "--depth", "--faults", "--redundant"})
    if (verb.count(trace_only) > 0) throw UsageError(std::string(trace_only) + " needs a trace FILE");
  if (verb.count("--schedules") > 0) {
    if (o.trace.max_schedules > 100000) throw UsageError("--schedules must be in 1..100000 without a trace FILE");
    o.builtin.schedules_per_program = static_cast<std::uint32_t>(o.trace.max_schedules);
  }
  o.builtin.seed = o.trace.seed;
  if (!o.mutant.empty()) o.builtin.mutant = parse_mutant(o.mutant);
  return tools::explore(o.builtin, std::cout) == 0 ? Outcome::Clean : Outcome::Findings;
}

Outcome explore_trace_file(const Options& o) {
  const tools::Trace trace = tools::load_trace(o.file);
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto progress = [tty](std::uint64_t n, std::size_t found) {
    if (tty) std::cerr << "\rexplored " << n << " schedules, " << found << " findings" << std::flush;
  };
  auto report = tools::explore_trace(trace, with_policy(o), progress);
  if (tty) std::cerr << "\r\033[K" << std::flush;
  return print_report(std::move(report), o);
}

Outcome explore(const CLI::App& verb, const Options& o) {
  if (o.file.empty()) return explore_builtin(verb, o);
  for (const char* builtin_only : {"--programs", "--length", "--mutant"})
    if (verb.count(builtin_only) > 0) throw UsageError(std::string(builtin_only) + " is for explore without FILE");
  if (verb.count("--depth") > 0 && kStrategies.at(o.strategy) != tools::Strategy::Pct)
    throw UsageError("--depth is for --strategy pct");
  if (!o.shard.empty() && o.trace.redundant) throw UsageError("--shard cannot be combined with --redundant");
  return explore_trace_file(o);
}

/// `capture -- PROGRAM ARGS...`: the program's run becomes a trace, explored
/// as `explore TRACE` would; what the capture did not see is said first.
Outcome capture_program(Options o) {
  const tools::CaptureResult run = tools::run_capture(o.capture);
  std::cerr << "streamcheck capture: " << o.capture.command.front() << " exited with status " << run.program_status
            << "; trace: " << run.trace_path << "\n";
  for (const auto& line : run.not_captured)
    std::cerr << "  not captured (the verdict does not cover it): " << line << "\n";
  for (const auto& line : run.derived) std::cerr << "  kernel accesses: " << line << "\n";
  for (const auto& line : run.assumed) std::cerr << "  assumed: " << line << "\n";
  for (const auto& path : run.other_processes)
    std::cerr << "  another process it started used CUDA; its trace (not explored here): " << path << "\n";
  o.file = run.trace_path;
  return explore_trace_file(o);
}

/// `kernels FILE...`: a --kernels file derived from the PTX of programs,
/// libraries or PTX files, for the user to read and edit.
Outcome kernels(const Options& o) {
  std::cout << tools::sidecar_from_ptx(tools::derive_from_ptx(o.ptx_sources));
  return Outcome::Clean;
}

/// The schedule to replay: --schedule or --schedule-file, with the options
/// its header names (the command line may repeat them, not change them).
tools::ScheduleToReplay schedule_to_replay(const CLI::App& verb, const tools::Trace& trace, const Options& o) {
  const std::string text = o.schedule ? *o.schedule : tools::read_schedule_file(o.schedule_file);
  try {
    return tools::schedule_to_replay(trace, text, with_policy(o), verb.count("--faults") > 0);
  } catch (const std::invalid_argument& e) {  // a malformed --schedule-file; --schedule was checked by CLI11
    throw UsageError(o.schedule_file + ": " + e.what());
  }
}

Outcome replay(const CLI::App& verb, const Options& o) {
  const tools::Trace trace = tools::load_trace(o.file);
  const tools::ScheduleToReplay replay = schedule_to_replay(verb, trace, o);
  const tools::TraceCheckOptions& options = replay.options;
  auto report = tools::replay_trace(trace, replay);
  if (kBackends.at(o.backend) == Backend::Cuda) {
    if (auto why = tools::gpu_replay_refusal(trace)) throw UsageError("--backend cuda: " + *why);
    const auto gpu = tools::replay_trace_on_gpu(trace, report, options);
    if (!gpu.available) throw UsageError("--backend cuda: " + gpu.why);
    report.gpu = tools::GpuReplay{gpu.device,
                                  gpu.runs,
                                  gpu.runs_with_mismatches,
                                  gpu.mismatching_words,
                                  gpu.runs_with_wrong_final_contents,
                                  gpu.wrong_final_words,
                                  gpu.notes};
  }
  return print_report(std::move(report), o);
}

Outcome render(const CLI::App& verb, const Options& o) {
  const tools::Trace trace = tools::load_trace(o.file);
  const bool replayed = o.schedule || !o.schedule_file.empty();
  const tools::HeldRun held =
      replayed ? tools::replay_one(trace, schedule_to_replay(verb, trace, o)) : tools::run_one(trace, with_policy(o));
  tools::RenderOptions options;
  options.finding = o.finding;
  if (o.window) options.window = tools::parse_call_window(*o.window);
  const tools::RenderInput input = tools::render_input(*held.run, held.report);
  if (o.finding && *o.finding > input.findings.size())
    throw UsageError(fmt::format("--finding {}: this schedule has {} finding{}{}", *o.finding, input.findings.size(),
                                 input.findings.size() == 1 ? "" : "s",
                                 input.findings.empty() ? "" : " (render --format text lists them)"));
  const std::string out = kFormats.at(o.format)(input, options);
  if (!o.output.empty()) {
    std::ofstream f(o.output, std::ios::binary);
    if (!f)
      throw UsageError("cannot write " + tools::shown_input(o.output, tools::kShownPathBytes) + ": " +
                       std::strerror(errno));
    f << out;
  } else {
    std::cout << out;
  }
  return outcome_of(held.report);
}

Outcome explain(const CLI::App& verb, const Options& o) {
  const tools::Trace trace = tools::load_trace(o.file);
  std::cout << tools::explain_schedule(trace, schedule_to_replay(verb, trace, o));
  return Outcome::Clean;
}

/// `fix`: the report's fixes applied (each checked by fix_plan's apply_fixes),
/// the fixed trace written, and checked again.
Outcome fix(const Options& o) {
  std::ifstream in(o.file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const tools::Trace trace = tools::load_trace(o.file);
  const tools::TraceCheckOptions options = with_policy(o);
  const tools::Report report = tools::explore_trace(trace, options);
  const tools::AppliedFixes fixed = tools::apply_fixes(text.str(), trace, report, options);
  for (const std::size_t g : fixed.applied)
    std::cout << "fixed cause " << g + 1 << " (" << report.groups[g].findings.size()
              << " findings): " << tools::describe_fix(report, report.groups[g]) << "\n";
  for (const auto& [g, why] : fixed.not_applied)
    std::cout << "not fixed: cause " << g + 1 << " (" << tools::describe_cause(report, report.groups[g]) << "): " << why
              << "\n";
  {
    std::ofstream out(o.output, std::ios::binary);
    if (!out) throw UsageError("cannot write " + o.output);
    out << fixed.trace.text;
  }
  const tools::Report after = tools::explore_trace(tools::load_trace(o.output), options);
  std::cout << "wrote " << o.output << ": " << fixed.applied.size() << " of " << report.groups.size()
            << " causes fixed; checked again: "
            << (after.verdict() == tools::Verdict::Clean ? "clean"
                                                         : "findings remain (streamcheck explore " + o.output + ")")
            << "\n";
  return outcome_of(after);
}

Outcome merge(const Options& o) {
  std::vector<std::string> texts;
  for (const std::string& path : o.reports) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError("merge: cannot read " + tools::shown_input(path, tools::kShownPathBytes));
    texts.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  try {
    return print_report(tools::merge_reports(texts, o.reports), o);
  } catch (const tools::MergeError& e) {
    throw UsageError(e.what());
  }
}

Outcome counterexamples(const Options& o) {
  // Every mutant's page: a build without every variant cannot write them.
  if (!tools::kToolsHaveEveryMutant)
    throw UsageError("counterexamples needs every mutant: " + std::string(tools::kSubsetBuild));
  for (const auto& f : tools::write_counterexample_pages(o.dir)) std::cout << "wrote " << o.dir << "/" << f << "\n";
  return Outcome::Clean;
}

// ------------------------------------------------------------ failures

/// --json anywhere after the verb: a failure is then also a JSON object on
/// stdout (tools::input_error_json), since CLI11 may stop before it has set
/// Options::json.
bool wants_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--json") return true;
  return false;
}

/// The outcome of the exception being handled (call inside a catch block),
/// after saying what went wrong on stderr -- and, with --json, as a JSON
/// object on stdout (exit 2 only: help, version and internal errors print no
/// report).
Outcome outcome_of_failure(const CLI::App& app, bool json, const std::string& file) {
  tools::InputError input;
  input.file = file;
  try {
    throw;
  } catch (const CLI::ParseError& e) {
    // --help and --version are ParseErrors that exit 0.
    if (app.exit(e) == 0) return Outcome::Clean;
    input.message = e.what();
  } catch (const UsageError& e) {
    std::cerr << "streamcheck: " << e.what() << "\nRun `streamcheck --help` or `streamcheck VERB --help`.\n";
    input.message = e.what();
  } catch (const tools::TraceError& e) {
    std::cerr << e.what() << "\n";  // FILE:LINE:COL: message
    input = {
        .kind = tools::InputError::Kind::Trace, .file = file, .line = e.line(), .col = e.col(), .message = e.what()};
  } catch (const tools::CaptureError& e) {
    std::cerr << "streamcheck capture: " << e.what() << "\n";
    input.message = e.what();
  } catch (const sim::ScheduleMismatch& e) {
    std::cerr << "streamcheck: " << e.what() << "\n";
    input.kind = tools::InputError::Kind::Schedule;
    input.message = e.what();
  } catch (const tools::ScheduleError& e) {
    std::cerr << "streamcheck: " << e.what() << "\n";
    input.kind = tools::InputError::Kind::Schedule;
    input.message = e.what();
  } catch (const std::exception& e) {
    std::cerr << "streamcheck: internal error: " << e.what()
              << "\nThis is a bug in streamcheck, not in the checked program; please report it with the command "
                 "line above.\n";
    return Outcome::InternalError;
  }
  if (json) std::cout << tools::input_error_json(input);
  return Outcome::UsageOrInputError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"streamcheck finds ordering bugs in code that shares GPU memory between CUDA streams.", "streamcheck"};
  app.get_formatter()->label("Usage", "usage");
  app.footer("`streamcheck VERB --help` describes each verb. Trace language: docs/TRACES.md.\n" + exit_codes_help());
  app.set_version_flag("--version", STREAMCHECK_VERSION);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    // CLI11 quotes the arguments it refuses as they are: escape them (one
    // line, no terminal control sequences).
    return "streamcheck: " + tools::shown_input(e.what(), tools::kShownPathBytes) +
           "\nRun `streamcheck --help` or `streamcheck VERB --help`.\n";
  });
  app.require_subcommand(1);
  Options o;

  auto* check_verb = app.add_subcommand(
      "check",
      "Runs one execution of the trace (chosen by the seed, default 1; the device completes work where the host "
      "observes it) on the simulated device and reports every "
      "finding: both ops with their trace lines, the bytes, the missing edge and a fix. A trace that one streamed "
      "execution shows clean, with no near miss and no choice but pool reuses and query answers, is never held "
      "whole (docs/TRACES.md, \"`check` streams a trace first\").");
  add_trace_file(*check_verb, o);
  add_seed(*check_verb, o, "seed of the schedule to run");
  add_policy(*check_verb, o);
  add_faults(*check_verb, o);
  add_redundant(*check_verb, o);
  add_json(*check_verb, o);
  add_save_schedules(*check_verb, o);
  check_verb->add_flag(
      "--stream", o.stream,
      "read and run the trace a statement at a time, keeping only what it holds at once: for a trace larger than "
      "memory. One execution, every op run as soon as it is enqueued; one host thread, no `if done`, no graph "
      "capture (docs/TRACES.md, \"Streamed checks\")");

  auto* explore_verb = app.add_subcommand(
      "explore",
      "With FILE: explores schedules of the trace: device completion orders, pool reuse choices and, with "
      "--faults on, an injected fault at a resource call. random: N seeded schedules (default 1000); dfs: every "
      "schedule, stopping at N (default 1000).\nWithout FILE: model-checks the built-in resource protocol under "
      "random client programs, device schedules, pool policies and injected faults; --mutant explores a "
      "deliberately broken protocol and prints its shrunk counterexample. Same seed, byte-identical output.");
  add_trace_file(*explore_verb, o, false);
  explore_verb->add_option("--strategy", o.strategy, kStrategyHelp)->check(CLI::IsMember(kStrategies));
  add_seed(*explore_verb, o, "seed of the exploration");
  explore_verb
      ->add_option("--depth", o.trace.pct_depth,
                   "--strategy pct: the bug depth each run is drawn for (1-10; default 3): it changes priorities "
                   "at depth - 1 random device steps")
      ->check(CLI::Range(1, 10));
  explore_verb
      ->add_option("--schedules", o.trace.max_schedules,
                   "schedules to run (random), the bound (dfs), or per program (without FILE, at most 100000)")
      ->check(kDecimal)
      ->check(kPositive);
  explore_verb
      ->add_option("--shard", o.shard,
                   "run part I of N (0 <= I < N) of the exploration: random and pct run the runs r with r % N == I, "
                   "seeded as the whole exploration seeds them; dfs splits the tree of choices by prefixes (and "
                   "--schedules bounds each part); `streamcheck merge` combines the N JSON reports")
      ->check(kShard);
  add_policy(*explore_verb, o);
  add_faults(*explore_verb, o);
  add_redundant(*explore_verb, o);
  add_json(*explore_verb, o);
  add_save_schedules(*explore_verb, o);
  explore_verb->add_option("--programs", o.builtin.programs, "without FILE: client programs to generate")
      ->check(CLI::Range(1, 100000));
  explore_verb->add_option("--length", o.builtin.program_length, "without FILE: ops per client program")
      ->check(CLI::Range(1, 100000));
  explore_verb->add_option("--mutant", o.mutant, "without FILE: explore a deliberately broken protocol")
      ->check(kMutantName);

  auto* replay_verb = app.add_subcommand(
      "replay",
      "Runs the trace under exactly the schedule S (as printed by check/explore) on the simulator. With --backend "
      "cuda it then runs the trace 10 times on the GPU, holding back the first op of every finding of that "
      "schedule, and reports the reads the stamp kernels saw corrupted (docs/GPU.md).");
  add_trace_file(*replay_verb, o);
  add_schedule(*replay_verb, o, "the schedule to run", true);
  replay_verb->add_option("--backend", o.backend, "sim, or cuda to replay on the GPU")->check(CLI::IsMember(kBackends));
  add_policy(*replay_verb, o);
  add_redundant(*replay_verb, o);
  add_faults(*replay_verb, o, kFaultsOfASchedule);
  add_json(*replay_verb, o);
  add_save_schedules(*replay_verb, o);

  auto* render_verb = app.add_subcommand(
      "render",
      "Draws one schedule: text; Graphviz DOT of the HB graph; SVG swimlanes (streams as lanes, HB edges, the "
      "racing pair and the missing edge in red); Perfetto / Chrome trace JSON of the execution order.");
  add_trace_file(*render_verb, o);
  render_verb->add_option("--format", o.format, "text, dot, svg or perfetto")
      ->required()
      ->check(CLI::IsMember(kFormats));
  auto* render_seed = add_seed(*render_verb, o, "seed of the schedule to draw");
  add_schedule(*render_verb, o, "the schedule to draw", false)->excludes(render_seed);
  render_verb->get_option("--schedule")->excludes(render_seed);
  render_verb->add_option("-o", o.output, "write to this file instead of stdout");
  render_verb
      ->add_option("--finding", o.finding,
                   "draw only what explains finding N (numbered as `render --format text` lists them)")
      ->check(kPositive);
  render_verb
      ->add_option("--window", o.window,
                   "draw only API calls FROM..TO-1 (numbered @N as `render --format text` lists them); an SVG draws "
                   "at most 240 calls, the first ones unless told")
      ->check(kCallWindow);
  add_policy(*render_verb, o);
  add_faults(*render_verb, o,
             "with --seed: inject one transient fault at a resource call; with a schedule without a header (before "
             "version 2): whether it was recorded with --faults on (a header sets this itself)");

  auto* explain_verb = app.add_subcommand(
      "explain",
      "Prints a schedule (as check/explore print it) as readable steps: for each choice, the trace line that asked "
      "it and what its answer did -- which stream head completed, which range the pool handed out, where a fault "
      "was injected. A schedule that does not fit the trace is an error that says where it diverged.");
  add_trace_file(*explain_verb, o);
  add_schedule(*explain_verb, o, "the schedule to explain", true);
  add_policy(*explain_verb, o);
  add_faults(*explain_verb, o, kFaultsOfASchedule);

  auto* fix_verb = app.add_subcommand(
      "fix",
      "Explores the trace as `explore` does, applies the fix of every cause it reports (each checked first: no "
      "fix is kept that changes which write a read sees) and writes the fixed trace to FIXED; then checks FIXED "
      "again. Exit 0 when FIXED is clean, 1 when findings remain (each cause not fixed says why).");
  add_trace_file(*fix_verb, o);
  fix_verb->add_option("-o", o.output, "where to write the fixed trace")->required();
  fix_verb->add_option("--strategy", o.strategy, kStrategyHelp)->check(CLI::IsMember(kStrategies));
  add_seed(*fix_verb, o, "seed of the exploration");
  fix_verb->add_option("--schedules", o.trace.max_schedules, "schedules to run (random), or the bound (dfs)")
      ->check(kPositive);
  add_policy(*fix_verb, o);

  auto* merge_verb = app.add_subcommand(
      "merge",
      "Combines the JSON reports of the shards of one exploration (explore FILE --shard I/N --json, I = 0..N-1) into "
      "the report the unsharded exploration gives, byte for byte. The trace FILE named in the reports is read again "
      "(the runs that first showed each finding are replayed).");
  merge_verb->add_option("REPORT", o.reports, "the shards' JSON reports, in any order")
      ->required()
      ->check(CLI::ExistingFile);
  add_json(*merge_verb, o);
  add_save_schedules(*merge_verb, o);

  auto* kernels_verb = app.add_subcommand(
      "kernels",
      "Derives what each kernel does through each parameter (reads, writes, readwrites, or - for no memory) from the "
      "PTX in programs and shared libraries (their fat binaries) or PTX files, and prints it as a --kernels file for "
      "`capture`. `capture` derives the same by itself; this shows it. docs/CAPTURE.md.");
  kernels_verb->add_option("FILE", o.ptx_sources, "programs, shared libraries or PTX files")->required();

  auto* capture_verb = app.add_subcommand(
      "capture",
      "Runs PROGRAM ARGS... on the GPU with the capture library injected by the driver (CUDA_INJECTION64_PATH), "
      "writes the trace of what it did with streams, events, memory, kernels and graphs (--trace), then explores it "
      "as `explore TRACE` does: does the program have ordering bugs in any schedule? Write the program after `--`. "
      "docs/CAPTURE.md.");
  capture_verb->add_option("PROGRAM", o.capture.command, "the program and its arguments")->required();
  capture_verb->add_option("--trace", o.capture.trace_path,
                           "where to write the trace (default streamcheck-capture.trace)");
  capture_verb->add_option("--kernels", o.capture.kernels,
                           "a file of kernel accesses, one line each: `NAME | reads writes - ...` (docs/CAPTURE.md)");
  auto* ptx_option = capture_verb->add_option(
      "--ptx", o.capture.ptx_files,
      "a PTX file whose kernels' accesses are derived besides those of the program's own fat binary (repeatable; "
      "docs/CAPTURE.md)");
  auto* no_ptx = capture_verb->add_flag_function(
      "--no-ptx", [&o](std::int64_t) { o.capture.derive_from_ptx = false; },
      "derive no kernel access from PTX: the sidecar, annotations and signatures decide");
  no_ptx->excludes(ptx_option);
  capture_verb->add_option("--library", o.capture.library,
                           "the capture library (default: libstreamcheck_capture.so next to streamcheck or in ../lib)");
  capture_verb->add_option("--strategy", o.strategy, kStrategyHelp)->check(CLI::IsMember(kStrategies));
  add_seed(*capture_verb, o, "seed of the exploration");
  capture_verb->add_option("--schedules", o.trace.max_schedules, "schedules to run (random), or the bound (dfs)")
      ->check(kDecimal)
      ->check(kPositive);
  add_policy(*capture_verb, o);
  add_redundant(*capture_verb, o);
  add_json(*capture_verb, o);
  add_save_schedules(*capture_verb, o);

  auto* counterexamples_verb = app.add_subcommand(
      "counterexamples",
      "Writes DIR/Mk.md and DIR/Mk.svg for every mutant (M1..M18, M22) and DIR/README.md; docs/counterexamples is "
      "generated this way.");
  counterexamples_verb->add_option("DIR", o.dir, "folder to write the pages into")
      ->required()
      ->check(CLI::ExistingDirectory);

  Outcome outcome = Outcome::Clean;
  try {
    refuse_unknown_options(app, argc, argv);
    app.parse(argc, argv);
    if (check_verb->parsed()) outcome = check(*check_verb, o);
    if (explore_verb->parsed()) outcome = explore(*explore_verb, o);
    if (replay_verb->parsed()) outcome = replay(*replay_verb, o);
    if (render_verb->parsed()) outcome = render(*render_verb, o);
    if (explain_verb->parsed()) outcome = explain(*explain_verb, o);
    if (fix_verb->parsed()) outcome = fix(o);
    if (counterexamples_verb->parsed()) outcome = counterexamples(o);
    if (merge_verb->parsed()) outcome = merge(o);
    if (capture_verb->parsed()) outcome = capture_program(o);
    if (kernels_verb->parsed()) outcome = kernels(o);
  } catch (...) {
    outcome = outcome_of_failure(app, wants_json(argc, argv), o.file);
  }
  return exit_code(outcome);
}
