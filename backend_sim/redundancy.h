// Over-synchronization: the waits and host synchronizations of a run that
// order nothing new. No sanitizer reports them (they are correct), but each
// costs throughput: a wait is a dependency the device must resolve, a host
// sync stalls the CPU until the device catches up.
//
// Rules, named like the HB rules they read (R1-R6, backend_sim/hb_state.h):
//   O1 covered wait  - wait(s, e) is redundant when every op of e's capture
//                      (R2) is already ordered before the next op on s:
//                      by stream order (R1, e was recorded on s itself), by
//                      an earlier wait on s (R3), or by a host sync that
//                      the host's later work on s follows (R4 + R5).
//   O2 covered sync  - sync stream / event / device is redundant when the
//                      host is already ordered after every op it covers
//                      (R4): an earlier sync ordered it.
//
// The analysis replays the log (DeviceModel::log) with clocks of its own
// that leave out what holds in this schedule only: a query that answered
// "done" orders the host here (R4), but the same program may get "not done"
// on another run, so nothing it ordered counts as covering. What is flagged
// is therefore redundant in every schedule of the same statements.
//
// What is never flagged, because it is more likely a bug than a cost (a
// near-miss, reported elsewhere): a wait or sync on an event never recorded,
// or whose capture holds no op, and a sync of a stream with no work.
//
// Several host threads: R5 makes a wait also order the waiting thread's past
// before later work on s, which another thread's later work on s would not
// get without it, and the log does not say what a thread inherited when it
// was created (R6); so O1 flags nothing in a run with more than one host
// thread (O2 still does: a thread's clock here is never more than its real one).
//
// The guarantee (tests/backend_sim/redundancy_test.cpp and
// tests/tools/test_redundant.cpp check it): removing every flagged call
// leaves the happens-before order of the ops unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "backend_sim/hb_state.h"

namespace streamcheck::sim {

enum class OversyncRule : std::uint8_t {
  O1CoveredWait,  // a wait whose event capture the stream already follows
  O2CoveredSync,  // a host sync after which the host follows nothing new
};

constexpr std::string_view to_string(OversyncRule r) {
  return r == OversyncRule::O1CoveredWait ? "O1 covered wait" : "O2 covered sync";
}

/// A wait or host sync that orders nothing new, and what already ordered it.
struct RedundantSync {
  OversyncRule rule = OversyncRule::O1CoveredWait;
  std::size_t entry = 0;  // the wait or sync, as an index into the log
  /// The earlier log entries (waits on the same stream, host syncs) that
  /// already ordered the covered work, ascending, each once. Empty when
  /// stream order alone covers it.
  std::vector<std::size_t> covered_by;
  /// O1: (part of) the capture is work of the waiting stream itself, which
  /// stream order (R1) already puts first.
  bool same_stream = false;
  /// The log entry of the record whose capture the wait or event sync names;
  /// nullopt for a stream or device sync.
  std::optional<std::size_t> record;
};

/// Every redundant wait and sync of the log, in log order.
/// `stream_shapes`: every stream's kind and device, by index (a device
/// sync covers its own device's streams, R13c).
std::vector<RedundantSync> find_redundant_syncs(const Log& log, const std::vector<StreamShape>& stream_shapes);

}  // namespace streamcheck::sim
