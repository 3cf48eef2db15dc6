// What a retention pass (DeviceModel::compact) keeps of the records a run
// made of its executed ops. A long run's memory is mostly records of ops
// that have executed and that nothing will ask about again: HB itself reads
// only the later op's clock and the earlier op's stream and index (covers),
// the race checker's shadow holds the accesses later ones are checked
// against, and a report names only the ops of its findings. So once an op
// has executed, its record is needed only while something names it: a
// shadow entry, a finding, the pool (a live allocation's alloc, a freed
// one's free, their fences, a freed range), a pool dependency. A retention pass drops every other executed
// op's record from each part that keeps one (HbState, RaceChecker, the
// backend's origin lines); the parts keep their kept ops in a side table,
// and asking for a dropped op's record is an internal error
// (std::logic_error), never a wrong answer.
//
// The pool's allocation records go the same way, first (Pool::drop_unnamed):
// a freed allocation is asked about only while something names it -- a
// shadow entry, a name a trace binds, the newest allocation over some byte,
// a kept one's parent -- and the pool names only the ops of those it keeps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend_sim/ids.h"

namespace streamcheck::sim {

struct Retention {
  /// By stream: ops [0, dropped_before[s]) of stream s have executed and
  /// their records go, but for `kept`. A stream past the end drops nothing.
  std::vector<std::uint32_t> dropped_before;
  /// The ops below their stream's point that something still names:
  /// sorted, each once.
  std::vector<OpRef> kept;

  bool drops(OpRef r) const {
    return r.stream.value < dropped_before.size() && r.index < dropped_before[r.stream.value];
  }
  bool keeps(OpRef r) const { return std::binary_search(kept.begin(), kept.end(), r); }
};

}  // namespace streamcheck::sim
