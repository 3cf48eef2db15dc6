// `streamcheck explore`: model-checks the built-in resource protocol on the
// simulated backend under random client programs, schedules and pool
// policies, and shrinks the first violation to a minimal program.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "model/mutants.h"

namespace streamcheck::tools {

struct ExploreOptions {
  std::uint64_t seed = 1;
  std::uint32_t programs = 1000;
  std::uint32_t schedules_per_program = 16;
  std::uint32_t program_length = 40;
  std::optional<MutantId> mutant;
};

/// Prints the report to `out`; returns the exit code (0 clean, 1 findings).
int explore(const ExploreOptions& options, std::ostream& out);

}  // namespace streamcheck::tools
