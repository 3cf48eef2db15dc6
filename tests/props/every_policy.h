// Exhaustive exploration of one small program under every upstream pool
// policy, shared by the pool's and the debug tier's property tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "backend_sim/explorer.h"
#include "tests/test_scale.h"

namespace streamcheck::tests {

/// Explores every execution (DFS, at most 50,000) of `run(chooser, policy)`
/// -- what is wrong with one run, nullopt when nothing is -- under each of
/// the 16 pool policies (every `sanitizer_step`th one under the sanitizers:
/// the same code paths in a fraction of the time). Returns the first thing
/// wrong, with its policy and schedule, or why an exploration was not
/// exhaustive; nullopt when every run of every policy was right. Adds the
/// executions explored to `*explored`.
template <class Run>
std::optional<std::string> explore_every_policy(std::uint32_t sanitizer_step, Run&& run,
                                                std::uint64_t* explored = nullptr) {
  const std::uint32_t step = sanitizer_scale() ? sanitizer_step : 1;
  for (std::uint32_t policy = 0; policy < 16; policy += step) {
    std::optional<std::string> found;
    const sim::ExploreResult result = sim::explore(sim::Dfs{}, sim::Bounds{50'000}, [&](sim::Chooser& chooser) {
      found = run(chooser, policy);
      if (found) *found += " (pool policy " + std::to_string(policy) + ", schedule " + chooser.schedule() + ")";
      return found.has_value();
    });
    if (explored) *explored += result.explored;
    if (found) return found;
    if (!result.exhaustive) return "not exhaustive within 50000 schedules (pool policy " + std::to_string(policy) + ")";
  }
  return std::nullopt;
}

}  // namespace streamcheck::tests
