// The streamcheck command.
// Exit codes: 0 clean, 1 findings, 2 usage or input error, 3 streamcheck
// itself failed (a bug to report).
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tools/explore.h"
#include "tools/render.h"
#include "tools/trace_check.h"
#include "tools/trace_gpu.h"

namespace {

using namespace streamcheck;

constexpr const char* kUsage =
    "usage: streamcheck <verb> [options]\n"
    "\n"
    "  check FILE     run one schedule of a trace program and report its findings\n"
    "  explore [FILE] explore many schedules of a trace (or, without FILE, of the built-in\n"
    "                 resource protocol under random client programs)\n"
    "  replay FILE --schedule S   run exactly the schedule S printed by check/explore\n"
    "  render FILE --format text|dot|svg|perfetto   draw one schedule\n"
    "  counterexamples DIR   write one page (text + SVG) per mutant's counterexample into DIR\n"
    "\n"
    "`streamcheck VERB --help` describes each verb. Trace language: docs/TRACES.md.\n"
    "Exit: 0 clean; 1 findings; 2 usage or input error; 3 streamcheck itself failed.\n";

constexpr const char* kCheckHelp =
    "usage: streamcheck check FILE [--seed N] [--policy SWITCH=VALUE]... [--faults on|off] [--json]\n"
    "Runs one schedule of the trace (chosen by the seed, default 1) on the simulated device and reports\n"
    "every finding: both ops with their trace lines, the bytes, the missing edge and a fix.\n";
constexpr const char* kExploreHelp =
    "usage: streamcheck explore FILE [--strategy random|dfs] [--seed N] [--schedules N]\n"
    "                          [--policy SWITCH=VALUE]... [--faults on|off] [--json]\n"
    "       streamcheck explore [--seed N] [--programs N] [--schedules N] [--length N] [--mutant M1..M11]\n"
    "With FILE: explores schedules of the trace: device completion orders, pool reuse choices and, with\n"
    "--faults on, an injected fault at a resource call. random: N seeded schedules (default 1000);\n"
    "dfs: every schedule, stopping at N (default 1000). SWITCH: follow_event_dependencies,\n"
    "opportunistic, internal_dependencies (on|off), release_threshold (bytes).\n"
    "Without FILE: model-checks the built-in resource protocol under random client programs, device\n"
    "schedules, pool policies and injected faults; --mutant explores a deliberately broken protocol and\n"
    "prints its shrunk counterexample. Same seed, byte-identical output.\n";
constexpr const char* kReplayHelp =
    "usage: streamcheck replay FILE --schedule S [--backend sim|cuda] [--policy SWITCH=VALUE]... [--json]\n"
    "Runs the trace under exactly the schedule S (as printed by check/explore) on the simulator. With\n"
    "--backend cuda it then runs the trace 10 times on the GPU, holding back the first op of every\n"
    "finding of that schedule, and reports the reads the stamp kernels saw corrupted (docs/GPU.md).\n";
constexpr const char* kRenderHelp =
    "usage: streamcheck render FILE --format text|dot|svg|perfetto [--seed N | --schedule S] [-o OUT]\n"
    "Draws one schedule: text; Graphviz DOT of the HB graph; SVG swimlanes (streams as lanes, HB edges,\n"
    "the racing pair and the missing edge in red); Perfetto / Chrome trace JSON of the execution order.\n";

int usage_error(const std::string& message, const char* help = kUsage) {
  std::cerr << "streamcheck: " << message << "\n\n" << help;
  return 2;
}

bool parse_number(std::string_view text, std::uint64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

struct Args {
  std::optional<std::string> file;
  std::map<std::string, std::string> options;
  std::vector<std::pair<std::string, std::string>> policy;
  bool json = false;
  bool help = false;
};

/// Parses `[FILE] --opt value ... [--json] [--help]`; nullopt + message on error.
std::optional<Args> parse_args(int argc, char** argv, int first, std::string& error) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      a.json = true;
    } else if (arg == "--help" || arg == "-h") {
      a.help = true;
    } else if (arg.rfind("-", 0) == 0) {
      if (i + 1 >= argc) {
        error = "option " + arg + " needs a value";
        return std::nullopt;
      }
      const std::string value = argv[++i];
      if (arg == "--policy") {
        const auto eq = value.find('=');
        if (eq == std::string::npos) {
          error = "--policy takes SWITCH=VALUE, got '" + value + "'";
          return std::nullopt;
        }
        a.policy.emplace_back(value.substr(0, eq), value.substr(eq + 1));
      } else {
        a.options[arg] = value;
      }
    } else if (!a.file) {
      a.file = arg;
    } else {
      error = "unexpected argument '" + arg + "'";
      return std::nullopt;
    }
  }
  return a;
}

int builtin_explore(const Args& a) {
  tools::ExploreOptions options;
  for (const auto& [opt, value] : a.options) {
    if (opt == "--mutant") {
      options.mutant = parse_mutant(value);
      if (!options.mutant) return usage_error("unknown mutant '" + value + "' (expected M1..M11)", kExploreHelp);
      continue;
    }
    std::uint64_t n = 0;
    if (!parse_number(value, n))
      return usage_error("option " + opt + " needs a number, got '" + value + "'", kExploreHelp);
    if (opt == "--seed") {
      options.seed = n;
    } else if (opt == "--programs" || opt == "--schedules" || opt == "--length") {
      if (n == 0 || n > 100000) return usage_error("option " + opt + " must be in 1..100000", kExploreHelp);
      const auto v = static_cast<std::uint32_t>(n);
      if (opt == "--programs") options.programs = v;
      if (opt == "--schedules") options.schedules_per_program = v;
      if (opt == "--length") options.program_length = v;
    } else {
      return usage_error("unknown option '" + opt + "'", kExploreHelp);
    }
  }
  if (!a.policy.empty() || a.json) return usage_error("--policy and --json need a trace FILE", kExploreHelp);
  return tools::explore(options, std::cout);
}

/// Options shared by the trace verbs; returns false (after printing) on error.
bool trace_options(const Args& a, const std::vector<std::string>& allowed, tools::TraceCheckOptions& o,
                   const char* help, int& code) {
  for (const auto& [opt, value] : a.options) {
    bool known = false;
    for (const auto& k : allowed) known = known || k == opt;
    if (!known) {
      code = usage_error("unknown option '" + opt + "'", help);
      return false;
    }
    std::uint64_t n = 0;
    if (opt == "--seed" || opt == "--schedules") {
      if (!parse_number(value, n) || (opt == "--schedules" && n == 0)) {
        code = usage_error("option " + opt + " needs a positive number, got '" + value + "'", help);
        return false;
      }
      (opt == "--seed" ? o.seed : o.max_schedules) = n;
    } else if (opt == "--faults") {
      if (value != "on" && value != "off") {
        code = usage_error("--faults takes on or off, got '" + value + "'", help);
        return false;
      }
      o.faults = value == "on";
    } else if (opt == "--strategy") {
      if (value != "random" && value != "dfs") {
        code = usage_error("--strategy takes random or dfs, got '" + value + "'", help);
        return false;
      }
      o.strategy = value == "dfs" ? tools::Strategy::Dfs : tools::Strategy::Random;
    } else if (opt == "--backend") {
      if (value != "sim" && value != "cuda") {
        code = usage_error("--backend takes sim or cuda, got '" + value + "'", help);
        return false;
      }
    }
  }
  o.policy_overrides = a.policy;
  try {
    (void)tools::apply_policy_overrides(PoolPolicy{}, a.policy);
  } catch (const std::invalid_argument& e) {
    code = usage_error(e.what(), help);
    return false;
  }
  return true;
}

int print_report(const tools::TraceReport& r, bool json) {
  std::cout << (json ? tools::report_json(r) : tools::report_text(r));
  return r.exit_code();
}

int run_verb(std::string_view verb, int argc, char** argv) {
  std::string error;
  const auto parsed = parse_args(argc, argv, 2, error);
  const char* help = verb == "check"     ? kCheckHelp
                     : verb == "explore" ? kExploreHelp
                     : verb == "replay"  ? kReplayHelp
                                         : kRenderHelp;
  if (!parsed) return usage_error(error, help);
  const Args& a = *parsed;
  if (a.help) {
    std::cout << help;
    return 0;
  }
  if (verb == "explore" && !a.file) return builtin_explore(a);
  if (!a.file) return usage_error("missing trace FILE", help);

  const tools::Trace trace = tools::load_trace(*a.file);  // TraceError: caught in main
  tools::TraceCheckOptions o;
  int code = 0;
  if (verb == "check") {
    if (!trace_options(a, {"--seed", "--faults"}, o, help, code)) return code;
    return print_report(tools::check_trace(trace, o), a.json);
  }
  if (verb == "explore") {
    if (!trace_options(a, {"--seed", "--schedules", "--faults", "--strategy"}, o, help, code)) return code;
    const bool tty = isatty(STDERR_FILENO) != 0;
    auto progress = [tty](std::uint64_t n, std::size_t found) {
      if (tty) std::cerr << "\rexplored " << n << " schedules, " << found << " findings" << std::flush;
    };
    auto report = tools::explore_trace(trace, o, progress);
    if (tty) std::cerr << "\r\033[K" << std::flush;
    return print_report(report, a.json);
  }
  if (verb == "replay") {
    if (!trace_options(a, {"--schedule", "--backend"}, o, help, code)) return code;
    auto it = a.options.find("--schedule");
    if (it == a.options.end()) return usage_error("replay needs --schedule S", help);
    try {
      const auto report = tools::replay_trace(trace, it->second, o);
      auto backend = a.options.find("--backend");
      if (backend == a.options.end() || backend->second == "sim") return print_report(report, a.json);
      const auto gpu = tools::replay_trace_on_gpu(trace, report, o);
      if (!gpu.available) {
        std::cerr << "streamcheck: --backend cuda: " << gpu.why << "\n";
        return 2;
      }
      std::string held;
      for (const auto& f : report.findings)
        if (!f.warning) held += (held.empty() ? "" : ", ") + f.first_op;
      std::ostringstream line;
      line << "GPU replay on " << gpu.device << ": " << gpu.runs
           << " runs (held back: " << (held.empty() ? "nothing" : held)
           << "), runs with mismatching reads: " << gpu.runs_with_mismatches
           << ", mismatching words: " << gpu.mismatching_words;
      for (const auto& n : gpu.notes) line << "\n  on the GPU: " << n;
      if (a.json) {
        std::string j = tools::report_json(report);
        j.insert(j.rfind('}'), ",\"gpu\":{\"runs\":" + std::to_string(gpu.runs) +
                                   ",\"runs_with_mismatches\":" + std::to_string(gpu.runs_with_mismatches) +
                                   ",\"mismatching_words\":" + std::to_string(gpu.mismatching_words) + "}");
        std::cout << j;
      } else {
        std::cout << tools::report_text(report) << line.str() << "\n";
      }
      return report.exit_code() != 0 || gpu.mismatching_words > 0 ? 1 : 0;
    } catch (const std::invalid_argument& e) {
      return usage_error(e.what(), help);
    } catch (const sim::ScheduleMismatch& e) {
      std::cerr << "streamcheck: " << e.what() << "\n";
      return 2;
    }
  }
  // render
  if (!trace_options(a, {"--format", "--seed", "--schedule", "-o"}, o, help, code)) return code;
  auto fmt = a.options.find("--format");
  if (fmt == a.options.end()) return usage_error("render needs --format text|dot|svg|perfetto", help);
  std::optional<std::string> schedule;
  if (auto it = a.options.find("--schedule"); it != a.options.end()) schedule = it->second;
  tools::HeldRun held;
  try {
    held = tools::run_one(trace, o, schedule);
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what(), help);
  }
  const auto& model = held.run->model();
  std::string out;
  if (fmt->second == "text")
    out = tools::render_text(model);
  else if (fmt->second == "dot")
    out = tools::render_dot(model);
  else if (fmt->second == "svg")
    out = tools::render_svg(model);
  else if (fmt->second == "perfetto")
    out = tools::render_perfetto(model);
  else
    return usage_error("unknown format '" + fmt->second + "' (text, dot, svg, perfetto)", help);
  if (auto it = a.options.find("-o"); it != a.options.end()) {
    std::ofstream f(it->second, std::ios::binary);
    if (!f) {
      std::cerr << "streamcheck: cannot write " << it->second << "\n";
      return 2;
    }
    f << out;
  } else {
    std::cout << out;
  }
  bool errors = false;
  for (const auto& f : model.findings()) errors = errors || f.kind != sim::FindingKind::Leak;
  return errors || !held.run->notes().empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage_error("missing verb");
  const std::string_view verb = argv[1];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (verb == "counterexamples") {
    if (argc != 3 || std::string_view(argv[2]).rfind("-", 0) == 0) {
      if (argc == 3 && (std::string_view(argv[2]) == "--help" || std::string_view(argv[2]) == "-h")) {
        std::cout << "usage: streamcheck counterexamples DIR\nWrites DIR/Mk.md and DIR/Mk.svg for every mutant "
                     "(M1..M11) and DIR/README.md; docs/counterexamples is generated this way.\n";
        return 0;
      }
      return usage_error("usage: streamcheck counterexamples DIR");
    }
    try {
      for (const auto& f : tools::write_counterexample_pages(argv[2]))
        std::cout << "wrote " << argv[2] << "/" << f << "\n";
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "streamcheck: " << e.what() << "\n";
      return 2;
    }
  }
  if (verb != "check" && verb != "explore" && verb != "replay" && verb != "render")
    return usage_error("unknown verb '" + std::string(verb) + "'");
  try {
    return run_verb(verb, argc, argv);
  } catch (const tools::TraceError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    // Exit 3: a failure of the tool itself, never a verdict on the program.
    std::cerr << "streamcheck: internal error: " << e.what()
              << "\nThis is a bug in streamcheck, not in the checked program; please report it with the command "
                 "line above.\n";
    return 3;
  }
}
