// The producer of a read (issue 10 item 5): for each byte an op reads, the
// last write ordered before it by happens-before. A fix must keep it: an edge
// that orders another write between a read and its producer makes the read
// see other data -- race-free, and wrong.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/device_model.h"
#include "tools/trace.h"

namespace streamcheck::tools {

/// Bytes of one read and the writes it sees there.
struct Produced {
  sim::ByteRange bytes;
  /// The kernel writes (launch, copy, run; not the pool's alloc or free, whose
  /// bytes hold nothing a program meant to read) to the read's allocation that
  /// are HB-before the read and HB-before no other such write of these bytes:
  /// one writer, or several that race with each other. Sorted.
  std::vector<sim::OpRef> writers;
};

/// The producers of the reads of one run's model. Each stream's kernel
/// writes are indexed once per allocation, at the first question: the
/// writes HB-before a read are a prefix of each stream (R1), and on one
/// stream only the newest write to a byte can be its producer, so a read
/// looks at a few writes of each stream instead of every op of the run (a
/// scan for each finding made `check` of a loop with a race in each
/// iteration quadratic: docs/PERFORMANCE.md).
class ProducerIndex {
 public:
  explicit ProducerIndex(const sim::DeviceModel& model) : model_(model) {}

  /// The producers of every byte op `read` reads, in address order; bytes
  /// that no ordered write produced are left out.
  std::vector<Produced> of(sim::OpRef read) const;

 private:
  struct Write {
    std::uint32_t index;  // the op's index on its stream
    sim::ByteRange bytes;
  };
  /// (allocation, stream) -> that stream's kernel writes to it, oldest first.
  using KernelWrites = std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Write>>;
  const KernelWrites& kernel_writes() const;

  const sim::DeviceModel& model_;
  mutable std::optional<KernelWrites> writes_;
};

/// Bytes one statement reads, by the trace's names.
struct ReadBytes {
  int line = 0;  // the statement that reads (0: an op of no statement)
  std::string buffer;
  std::uint64_t lo = 0, hi = 0;  // offsets into the buffer (addresses outside every buffer)
  friend auto operator<=>(const ReadBytes&, const ReadBytes&) = default;
};
/// Every read of a run and the lines of the writes it sees there.
using ReadProducers = std::map<ReadBytes, std::set<int>>;

/// A read that an edit makes read other writes.
struct ProducerChange {
  ReadBytes read;
  std::set<int> was;  // the lines of its producers in the original trace
  std::set<int> now;  // after the edit (empty: no ordered write)
};

/// The producers of every read of a simulator run, with every line mapped
/// through `to_original` (a line L of the run's trace is line
/// to_original[L] of another; empty: lines as they are), so that a trace and
/// its fixed version compare.
ReadProducers read_producers(const Execution& run, std::span<const int> to_original = {});

}  // namespace streamcheck::tools
