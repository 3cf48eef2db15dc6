// The streamcheck command. Exit codes: 0 clean, 1 findings, 2 usage error.
#include <charconv>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "tools/explore.h"

namespace {

constexpr const char* kUsage =
    "usage: streamcheck explore [--seed N] [--programs N] [--schedules N] [--length N] [--mutant M1..M11]\n"
    "\n"
    "  explore   model-check the built-in resource protocol on the simulated backend under random\n"
    "            client programs, device schedules, pool reuse choices and injected faults.\n"
    "            Prints the schedules explored and the findings; with --mutant, the shrunk\n"
    "            counterexample. Exit 0: no findings; 1: findings; 2: usage error;\n"
    "            3: streamcheck itself failed (a bug to report).\n"
    "\n"
    "  --seed N       seed of the random exploration (default 1); same seed, same output\n"
    "  --programs N   random client programs to generate (default 1000)\n"
    "  --schedules N  schedules (and pool policies) to try per program (default 16)\n"
    "  --length N     ops per program (default 40)\n"
    "  --mutant Mk    explore a deliberately broken protocol (SPEC §5) instead of the correct one\n";

bool parse_number(std::string_view text, std::uint64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

int usage_error(const std::string& message) {
  std::cerr << "streamcheck: " << message << "\n\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage_error("missing verb");
  const std::string_view verb = argv[1];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (verb != "explore") return usage_error("unknown verb '" + std::string(verb) + "'");
  streamcheck::tools::ExploreOptions options;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (i + 1 >= argc) return usage_error("option " + std::string(arg) + " needs a value");
    const std::string_view value = argv[++i];
    std::uint64_t n = 0;
    if (arg == "--mutant") {
      options.mutant = streamcheck::parse_mutant(value);
      if (!options.mutant) return usage_error("unknown mutant '" + std::string(value) + "' (expected M1..M11)");
      continue;
    }
    if (!parse_number(value, n)) return usage_error("option " + std::string(arg) + " needs a number, got '" +
                                                    std::string(value) + "'");
    if (arg == "--seed") {
      options.seed = n;
    } else if (arg == "--programs" || arg == "--schedules" || arg == "--length") {
      if (n == 0 || n > 100000) return usage_error("option " + std::string(arg) + " must be in 1..100000");
      auto v = static_cast<std::uint32_t>(n);
      if (arg == "--programs") options.programs = v;
      if (arg == "--schedules") options.schedules_per_program = v;
      if (arg == "--length") options.program_length = v;
    } else {
      return usage_error("unknown option '" + std::string(arg) + "'");
    }
  }
  try {
    return streamcheck::tools::explore(options, std::cout);
  } catch (const std::exception& e) {
    // Exit 3: a failure of the tool itself, never a verdict on the program.
    std::cerr << "streamcheck: internal error: " << e.what()
              << "\nThis is a bug in streamcheck, not in the checked program; please report it with the command "
                 "line above.\n";
    return 3;
  }
}
