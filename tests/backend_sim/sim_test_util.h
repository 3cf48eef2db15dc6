// Helpers shared by the backend_sim tests: run a program under every
// schedule (the explorer's DFS), and compare findings exactly.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/explain.h"
#include "backend_sim/explorer.h"
#include "backend_sim/schedule.h"

namespace streamcheck::sim::test {

/// Runs `program` once per schedule until DFS is done; returns the number
/// of schedules. Stops (and fails) after `cap` runs, so a bug cannot hang.
inline std::size_t explore_all(const std::function<void(Chooser&)>& program, std::size_t cap = 100000) {
  const ExploreResult result = explore(Dfs{}, Bounds{cap}, [&](Chooser& c) {
    program(c);
    return false;
  });
  if (!result.exhaustive) ADD_FAILURE() << "DFS did not finish within " << cap << " schedules";
  return result.explored;
}

/// A finding as plain comparable data.
struct F {
  FindingKind kind;
  OpRef first;
  std::optional<OpRef> second;
  std::vector<ByteRange> bytes;  // as Finding::bytes: sorted, disjoint
  bool definite = false;
  friend bool operator==(const F&, const F&) = default;
};

inline F of(const Finding& f) { return F{f.kind, f.first, f.second, f.bytes, f.definite}; }

inline std::vector<F> findings_of(const DeviceModel& m) {
  std::vector<F> out;
  for (const auto& f : m.findings()) out.push_back(of(f));
  return out;
}

inline std::ostream& operator<<(std::ostream& os, const F& f) {
  os << to_string(f.kind) << "(s" << f.first.stream.value << "#" << f.first.index;
  if (f.second) os << ", s" << f.second->stream.value << "#" << f.second->index;
  for (const ByteRange& r : f.bytes) os << ", [" << r.lo << "," << r.hi << ")";
  os << (f.definite ? ", definite" : "") << ")";
  return os;
}

inline KernelAccess rd(std::uint64_t ptr, std::uint64_t bytes) { return KernelAccess{ptr, bytes, Access::Read, {}}; }
inline KernelAccess wr(std::uint64_t ptr, std::uint64_t bytes) { return KernelAccess{ptr, bytes, Access::Write, {}}; }

}  // namespace streamcheck::sim::test
