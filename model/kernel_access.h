// One memory access of a piece of device work: what a launch declares it
// reads or writes. Shared by the simulator and the GPU validator.
#pragma once

#include <cstdint>
#include <optional>

#include "model/types.h"

namespace streamcheck {

struct KernelAccess {
  std::uint64_t ptr = 0;
  std::uint64_t bytes = 0;
  Access access = Access::Read;
  /// Simulator only: the allocation the caller means (nullopt = the newest
  /// allocation containing ptr). Lets a trace name a stale pointer.
  std::optional<std::uint32_t> allocation;
};

}  // namespace streamcheck
