// The stateful property (protocol_property.h) on the simulated backend: the
// schedule and the pool policy are generated, shrinkable values too.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backend_sim/sim_backend.h"
#include "props/protocol_property.h"
#include "props/resource_layer.h"

namespace streamcheck::props {

/// What one simulated run of the property draws besides its commands: the
/// schedule (device steps, pool choices, faults) and the pool policy, both
/// generated, shrinkable values.
struct SimRunChoices {
  std::vector<std::uint8_t> schedule;
  std::uint32_t policy;
  LayerChoice layer;
};

inline void showValue(const SimRunChoices& c, std::ostream& os) {
  os << "schedule bytes [";
  for (std::size_t i = 0; i < c.schedule.size(); ++i) os << (i ? " " : "") << static_cast<unsigned>(c.schedule[i]);
  os << "], pool policy " << c.policy << ", through " << describe(c.layer);
}

/// Two runs in five call the resource itself, one a BudgetResource with a
/// limit small enough to be reached (P7), one a LoggingResource, one a
/// LoggingResource over such a BudgetResource.
/// Shrinks towards the resource itself.
inline rc::Gen<LayerChoice> gen_layer_choice() {
  using Kind = LayerChoice::Kind;
  return rc::gen::build<LayerChoice>(
      rc::gen::set(&LayerChoice::kind,
                   rc::gen::weightedElement<Kind>(
                       {{2, Kind::Direct}, {1, Kind::Budgeted}, {1, Kind::Logged}, {1, Kind::LoggedBudgeted}})),
      rc::gen::set(&LayerChoice::budget, rc::gen::inRange<std::size_t>(1024, 16385)));
}

inline rc::Gen<SimRunChoices> gen_sim_run_choices() {
  return rc::gen::build<SimRunChoices>(
      rc::gen::set(&SimRunChoices::schedule,
                   rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>())),
      rc::gen::set(&SimRunChoices::policy, rc::gen::inRange<std::uint32_t>(0, 16)),
      rc::gen::set(&SimRunChoices::layer, gen_layer_choice()));
}

/// The property on the simulator: schedule, pool policy and the layer the
/// client calls the resource through are generated with the commands.
template <class Protocol>
void sim_protocol_property() {
  const auto choices = *gen_sim_run_choices();
  sim::ByteChooser chooser(choices.schedule);
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(choices.policy));
  sim::SimBackend backend(model);
  Harness<sim::SimBackend, Protocol> harness(backend, choices.layer);
  check_protocol(harness);
}

/// The protocol the property suite runs: the correct one, or the named
/// mutant in STREAMCHECK_PROTOCOL (e.g. `STREAMCHECK_PROTOCOL=M12 ctest -L
/// props` must fail: SPEC §5). An unknown name is an error, never a silent
/// run of the correct protocol.
inline std::optional<MutantId> selected_protocol() {
  const char* name = std::getenv("STREAMCHECK_PROTOCOL");
  if (!name || std::string_view(name).empty() || std::string_view(name) == "correct") return std::nullopt;
  if (auto m = parse_mutant(name)) return m;
  throw std::invalid_argument(std::string("STREAMCHECK_PROTOCOL=") + name +
                              ": not a protocol; use `correct` or a mutant id (" + std::string(kMutantNames) + ")");
}

}  // namespace streamcheck::props
