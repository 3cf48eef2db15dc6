// The fix-checking test (issue 10 item 5): the fixes `streamcheck fix`
// applies (tools/fix_plan.h apply_fixes), to every example and to 240
// generated programs, remove the findings they fix, add none, and keep every
// read's producer -- a read that the original trace orders after a write to
// its bytes still has that write as its last ordered writer
// (tools/producers.h), compared line by line through the edits' line map.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backend_sim/schedule.h"
#include "tests/tools/trace_generator.h"
#include "tools/explain.h"
#include "tools/fix_plan.h"
#include "tools/producers.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

/// A finding by the lines of its ops in the original trace (0: no statement).
using FindingId = std::tuple<sim::FindingKind, int, int, bool>;

FindingId id_of(const ReportFinding& f, std::span<const int> to_original) {
  const auto line = [&](const ReportOp& op) {
    const int l = op.origin ? op.origin->line : 0;
    return to_original.empty() ? l : l < static_cast<int>(to_original.size()) ? to_original[l] : 0;
  };
  return {f.kind, line(f.first), f.second ? line(*f.second) : 0, f.definite};
}

ReadProducers producers_of(const Trace& trace, const TraceCheckOptions& options, std::span<const int> to_original) {
  sim::RandomChooser chooser(options.seed);
  return read_producers(run_on_simulator(trace, chooser, {trace.policy, false}), to_original);
}

/// Applies the fixes of the trace `text` and checks the fixed trace; each
/// broken promise is a test failure naming `name`. Returns the number of
/// findings the applied fixes were to remove.
std::size_t check_fixes(const std::string& text, const std::string& name) {
  const Trace original = parse_trace(text, name);
  const TraceCheckOptions options;
  const Report report = check_trace(original, options);
  const AppliedFixes applied = apply_fixes(text, original, report, options);
  Trace fixed;
  try {
    fixed = parse_trace(applied.trace.text, name);
  } catch (const TraceError& e) {
    ADD_FAILURE() << name << ": the fixed trace does not parse: " << e.what() << "\n" << applied.trace.text;
    return 0;
  }
  const std::vector<int> to_original = applied.trace.to_original();
  std::set<FindingId> fixed_ids, left_ids;
  const std::set<std::size_t> applied_groups(applied.applied.begin(), applied.applied.end());
  for (std::size_t g = 0; g < report.groups.size(); ++g)
    for (const std::size_t i : report.groups[g].findings)
      (applied_groups.contains(g) ? fixed_ids : left_ids).insert(id_of(report.findings[i], {}));
  for (const ReportFinding& f : check_trace(fixed, options).findings) {
    const FindingId id = id_of(f, to_original);
    EXPECT_FALSE(fixed_ids.contains(id)) << name << ": still there after its fix: " << finding_label(f) << " at "
                                         << short_ref(f.first) << "\n"
                                         << applied.trace.text;
    EXPECT_TRUE(left_ids.contains(id) || fixed_ids.contains(id))
        << name << ": new after the fix: " << finding_label(f) << " at " << short_ref(f.first)
        << (f.second ? " and " + short_ref(*f.second) : "") << "\n"
        << applied.trace.text;
  }
  const ReadProducers was = producers_of(original, options, {});
  const ReadProducers now = producers_of(fixed, options, to_original);
  for (const auto& [read, writers] : was) {
    const auto it = now.find(read);
    EXPECT_TRUE(it != now.end() && it->second == writers)
        << name << ": line " << read.line << " reads " << read.buffer << "[" << read.lo << ":" << read.hi
        << "] from another write after the fix (its producer was line " << *writers.begin() << ")\n"
        << applied.trace.text;
  }
  return fixed_ids.size();
}

TEST(FixCheck, EveryExampleFixedKeepsEveryProducer) {
  std::size_t examples = 0, fixed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(STREAMCHECK_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".trace") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    fixed += check_fixes(text.str(), entry.path().filename().string());
    ++examples;
  }
  EXPECT_GE(examples, 23u);
  EXPECT_GT(fixed, 5u);
}

TEST(FixCheck, TwoHundredFortyGeneratedProgramsFixedKeepEveryProducer) {
  std::size_t fixed = 0;
  for (std::uint64_t seed = 1; seed <= 240; ++seed)
    fixed += check_fixes(generate_trace_program(seed), "generated-" + std::to_string(seed) + ".trace");
  EXPECT_GT(fixed, 200u) << "the generator should make racy programs";
}

}  // namespace
}  // namespace streamcheck::tools
