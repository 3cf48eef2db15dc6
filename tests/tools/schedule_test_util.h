// What the schedule tests share: the real command, its JSON, and the parts
// of a text report that a replay must print byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/tools/command.h"

namespace streamcheck::tools {

inline CommandResult run_command(const std::string& args) {
  return run_shell(std::string(STREAMCHECK_BIN) + " " + args);
}
inline std::string example(const std::string& name) { return std::string(STREAMCHECK_EXAMPLES_DIR) + "/" + name; }
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The report as JSON (stdout only).
inline nlohmann::json json_of(const std::string& args, int expected_exit) {
  const auto r = run_command(args + " --json 2>/dev/null");
  EXPECT_EQ(r.exit_code, expected_exit) << args << "\n" << r.out;
  return nlohmann::json::parse(r.out);
}

/// A finding's schedule in a JSON report: schema_version 3 lists each
/// schedule once, in `schedule_texts`, and a finding names its index there.
inline std::string schedule_of(const nlohmann::json& report, const nlohmann::json& finding) {
  return report.at("schedule_texts").at(finding.at("schedule").get<std::size_t>()).get<std::string>();
}
inline std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The findings and notes of a text report, from the first blank line
/// through the verdict: what a replay of a finding's schedule must print
/// byte for byte (the first line says how the schedules were chosen).
inline std::string findings_part(const std::string& report) {
  const auto from = report.find("\n\n");
  const auto verdict = report.find("\nverdict: ");
  if (from == std::string::npos || verdict == std::string::npos) return "(no findings part)\n" + report;
  return report.substr(from, report.find('\n', verdict + 1) - from);
}

/// findings_part up to its coverage: what a replay of an `explore` run
/// prints alike (the coverage says how that run was chosen, a replay's its
/// own choices).
inline std::string findings_before_coverage(const std::string& report) {
  const std::string part = findings_part(report);
  return part.substr(0, part.find("\ncoverage: "));
}

inline std::size_t longest_line(const std::string& text) {
  std::size_t longest = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) longest = std::max(longest, line.size());
  return longest;
}

}  // namespace streamcheck::tools
