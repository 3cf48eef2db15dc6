// `streamcheck explore`: model-checks the built-in resource protocol on the
// simulated backend under random client programs, schedules and pool
// policies, and shrinks the first violation to a minimal program.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/device_model.h"
#include "model/mutants.h"
#include "props/client_program.h"

namespace streamcheck::tools {

struct ExploreOptions {
  std::uint64_t seed = 1;
  std::uint32_t programs = 1000;
  std::uint32_t schedules_per_program = 16;
  std::uint32_t program_length = 40;
  std::optional<MutantId> mutant;
};

/// The first violation found, shrunk, with everything needed to replay it
/// (here or on the GPU: the op numbering per stream is the same).
struct Counterexample {
  props::ClientProgram original;
  props::ClientProgram program;     // shrunk
  std::uint32_t policy_index = 0;   // PoolPolicy::from_bits
  std::uint64_t schedule_seed = 0;  // RandomChooser seed of the failing run
  std::string schedule;             // its choices, as a schedule string
  std::string violation;
  std::optional<std::size_t> at_op;  // nullopt: during teardown
  std::vector<std::string> narrative;
  /// For a P1 violation: the racing pair (earlier-enqueued op first).
  std::optional<std::pair<sim::OpRef, sim::OpRef>> race;
  std::uint64_t explored = 0;  // schedules run before it was found
  std::uint32_t program_number = 0;
  std::uint32_t schedule_number = 0;
};

/// Explores as `explore` does; nullopt when nothing was found.
std::optional<Counterexample> find_counterexample(const ExploreOptions& options, std::uint64_t* explored = nullptr);

/// Prints the report to `out`; returns the exit code (0 clean, 1 findings).
int explore(const ExploreOptions& options, std::ostream& out);

/// SVG swimlanes of a counterexample's failing run (re-run from its seed).
std::string counterexample_svg(const Counterexample& c, std::optional<MutantId> mutant);

/// Writes docs/counterexamples: one page (Mk.md + Mk.svg) per mutant and a
/// README index, all generated; returns the files written (names only).
std::vector<std::string> write_counterexample_pages(const std::string& dir);

}  // namespace streamcheck::tools
