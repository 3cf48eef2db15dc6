// The definitions tools/explore_variant.h declares, for the two files that
// instantiate them (explore_correct.cpp, explore_mutants.cpp); nothing
// else includes this header.
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/explorer.h"
#include "backend_sim/sim_backend.h"
#include "props/client_gen.h"
#include "props/harness.h"
#include "tools/explore_variant.h"
#include "tools/render.h"

namespace streamcheck::tools {

namespace explore_detail {

struct RunResult {
  std::optional<props::Violation> violation;
  std::optional<std::size_t> at_op;  // nullopt: found during teardown
  std::string schedule;
  std::vector<std::string> narrative;
  std::optional<RacingPair> race;
};

template <class Protocol>
RunResult run_once(const props::ClientProgram& program, sim::Chooser& chooser, std::uint32_t policy_index,
                   const props::LayerChoice& layer, std::string* svg = nullptr) {
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(policy_index));
  sim::SimBackend backend(model);
  RunResult result;
  {
    props::Harness<sim::SimBackend, Protocol> harness(backend, layer);
    for (std::size_t i = 0; i < program.size() && !result.violation; ++i) {
      if (auto v = harness.apply(program[i])) {
        result.violation = std::move(v);
        result.at_op = i;
      }
    }
    if (!result.violation) result.violation = harness.finish();
    result.narrative = harness.narrative();
  }
  for (const auto& f : model.findings()) {
    if (f.second) {
      result.race = RacingPair{f.first, *f.second, f.kind};
      break;
    }
  }
  if (svg) *svg = render_svg(model);
  result.schedule = chooser.schedule();
  return result;
}

template <class Protocol>
RunResult replay(const ExploreCase& c, std::string* svg = nullptr) {
  sim::ByteChooser chooser(c.schedule);
  return run_once<Protocol>(c.program, chooser, c.policy_index, c.layer, svg);
}

}  // namespace explore_detail

template <class Protocol>
ExploreOutcome explore_variant(const ExploreOptions& o) {
  ExploreOutcome outcome;
  rc::Random programs(o.seed);
  // RapidCheck's size sets the number of commands: 1 to size + 1.
  const int size = static_cast<int>(o.program_length > 0 ? o.program_length - 1 : 0);
  const auto generator = props::gen_client_program();
  for (std::uint32_t p = 0; p < o.programs && !outcome.counterexample; ++p) {
    rc::Random random = programs.split();
    const rc::Shrinkable<props::ClientProgram> program = generator(random.split(), size);
    const props::ClientProgram& ops = program.value();
    const props::LayerChoice layer = layer_for_program(p, random);
    ++outcome.programs;
    std::uint32_t schedule_number = 0;
    (void)sim::explore(sim::Random{random.next()}, sim::Bounds{o.schedules_per_program}, [&](sim::Chooser& chooser) {
      const auto policy_index = static_cast<std::uint32_t>(outcome.schedules++ % 16);
      const std::uint32_t s = schedule_number++;
      if (!explore_detail::run_once<Protocol>(ops, chooser, policy_index, layer).violation) return false;
      const auto [shrunk, steps] = explore_detail::shrink_failing_case(
          program, chooser, policy_index, layer,
          [](const ExploreCase& c) { return explore_detail::replay<Protocol>(c).violation.has_value(); });
      explore_detail::RunResult r = explore_detail::replay<Protocol>(shrunk);
      if (!r.violation)
        throw std::logic_error("explore: the shrunk counterexample does not fail when replayed (a bug in streamcheck)");
      outcome.counterexample =
          Counterexample{ops, shrunk, r.schedule, *r.violation, r.at_op, std::move(r.narrative), r.race, p, s, steps};
      return true;
    });
  }
  return outcome;
}

template <class Protocol>
std::string counterexample_svg_variant(const ExploreCase& shrunk) {
  std::string svg;
  (void)explore_detail::replay<Protocol>(shrunk, &svg);
  return svg;
}

}  // namespace streamcheck::tools
