// `streamcheck explore` (without FILE): model-checks the built-in resource
// protocol on the simulated backend. RapidCheck generates client programs
// (props/client_gen.h) from rc::Random(seed); the explorer (backend_sim/
// explorer.h) runs each under random schedules and pool policies; the first
// violation is shrunk by RapidCheck (shrinkable::findLocalMin) as one value:
// program, schedule bytes and pool policy together, so the counterexample
// replays exactly.
#pragma once

#include <rapidcheck/Random.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "model/mutants.h"
#include "props/client_program.h"
#include "props/resource_layer.h"
#include "props/violation.h"

namespace streamcheck::tools {

struct ExploreOptions {
  std::uint64_t seed = 1;
  std::uint32_t programs = 1000;
  std::uint32_t schedules_per_program = 16;
  /// The most ops a generated program has.
  std::uint32_t program_length = 40;
  std::optional<MutantId> mutant;
};

/// One simulated run, exactly: the program, the answers to its schedule's
/// choices (choice k takes schedule[k] modulo its options, 0 past the end:
/// sim::ByteChooser), the pool policy (PoolPolicy::from_bits) and what the
/// client calls (the resource, or a decorator over it).
struct ExploreCase {
  props::ClientProgram program;
  std::vector<std::uint8_t> schedule;
  std::uint32_t policy_index = 0;
  props::LayerChoice layer;
};

/// Two ops that race (earlier-enqueued first), and the kind of finding.
struct RacingPair {
  sim::OpRef first;
  sim::OpRef second;
  sim::FindingKind kind;
};

/// The first violation found, shrunk, with everything needed to replay it
/// (here or on the GPU: the op numbering per stream is the same).
struct Counterexample {
  props::ClientProgram original;  // as generated
  ExploreCase shrunk;
  std::string schedule;  // the shrunk run's choices, as a schedule string
  props::Violation violation;
  std::optional<std::size_t> at_op;  // nullopt: during teardown
  std::vector<std::string> narrative;
  /// For a P1 violation: the racing pair (earlier-enqueued op first).
  std::optional<RacingPair> race;
  std::uint32_t program_number = 0;
  std::uint32_t schedule_number = 0;
  std::size_t shrink_steps = 0;
};

/// What an exploration covered, and what it found.
/// What program number `p` of explore's run calls: half the programs the
/// resource itself, a quarter a BudgetResource small enough to be reached
/// (its limit drawn from `random`), a quarter a LoggingResource.
props::LayerChoice layer_for_program(std::uint32_t p, rc::Random& random);

struct ExploreOutcome {
  std::uint64_t programs = 0;   // programs generated and run
  std::uint64_t schedules = 0;  // runs, all programs together
  std::optional<Counterexample> counterexample;
};

/// Explores as `explore` does.
ExploreOutcome explore_protocol(const ExploreOptions& options);

/// Explores as `explore` does; nullopt when nothing was found.
std::optional<Counterexample> find_counterexample(const ExploreOptions& options, std::uint64_t* explored = nullptr);

/// Prints the report to `out`; returns the exit code (0 clean, 1 findings).
int explore(const ExploreOptions& options, std::ostream& out);

/// SVG swimlanes of a counterexample's failing run (replayed exactly).
std::string counterexample_svg(const Counterexample& c, std::optional<MutantId> mutant);

/// Writes docs/counterexamples: one page (Mk.md + Mk.svg) per mutant and a
/// README index, all generated; returns the files written (names only).
std::vector<std::string> write_counterexample_pages(const std::string& dir);

}  // namespace streamcheck::tools
