// Over-synchronization in the trace's words (`--redundant`): the `wait` and
// `sync` statements that order nothing new (backend_sim/redundancy.h, rules
// O1 and O2), each with the earlier statements that already ordered what it
// orders. Warnings only: they never change the verdict or the exit code.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend_sim/redundancy.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// A `wait` or `sync` statement that orders nothing new.
struct RedundantCall {
  sim::OversyncRule rule = sim::OversyncRule::O1CoveredWait;
  OpOrigin call;                     // the wait or sync statement
  std::vector<OpOrigin> covered_by;  // the earlier statements that already ordered it, in line order
  std::optional<OpOrigin> record;    // the record whose capture it names (wait, sync event)
  bool same_stream = false;          // O1: the event was recorded on the waiting stream itself (R1)
  std::string stream;                // the trace's name of the waiting or synchronized stream, if any
  std::string event;                 // the trace's name of the event waited on or synchronized, if any
};

/// The redundant `wait` and `sync` statements of one simulated run. Waits and
/// syncs made inside other statements (a resource call, the cudaMalloc of a
/// plain `buffer`) are not the program's to remove and are left out.
std::vector<RedundantCall> redundant_calls(const Trace& trace, const Execution& run);

/// The calls redundant in every run explored so far that ran them. A run
/// that never reaches a line (a host thread left waiting in a deadlock)
/// says nothing about it; a run that ran it without noting it refutes it for
/// good.
class RedundantInEveryRun {
 public:
  /// Folds in one run: `calls` are its redundant calls, `executed` the
  /// lines it ran.
  void add_run(const std::vector<RedundantCall>& calls, const std::set<int>& executed);
  /// The calls kept, in line order.
  std::vector<RedundantCall> calls() const;

 private:
  std::map<int, RedundantCall> kept_;  // by line
  std::set<int> refuted_;
};

/// "redundant wait" or "redundant sync".
std::string redundant_label(const RedundantCall& c);
/// Why it orders nothing new, naming lines: "s2 already waits for e0's
/// capture (line 9: record e0 on s1) through line 12 (wait e1 on s2)".
std::string describe_why(const RedundantCall& c);

}  // namespace streamcheck::tools
