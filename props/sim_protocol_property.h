// The stateful property (protocol_property.h) on the simulated backend: the
// schedule and the pool policy are generated, shrinkable values too.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <vector>

#include "backend_sim/sim_backend.h"
#include "props/protocol_property.h"

namespace streamcheck::props {

/// What one simulated run of the property draws besides its commands: the
/// schedule (device steps, pool choices, faults) and the pool policy, both
/// generated, shrinkable values.
struct SimRunChoices {
  std::vector<std::uint8_t> schedule;
  std::uint32_t policy;
};

inline void showValue(const SimRunChoices& c, std::ostream& os) {
  os << "schedule bytes [";
  for (std::size_t i = 0; i < c.schedule.size(); ++i) os << (i ? " " : "") << static_cast<unsigned>(c.schedule[i]);
  os << "], pool policy " << c.policy;
}

inline rc::Gen<SimRunChoices> gen_sim_run_choices() {
  return rc::gen::build<SimRunChoices>(
      rc::gen::set(&SimRunChoices::schedule,
                   rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>())),
      rc::gen::set(&SimRunChoices::policy, rc::gen::inRange<std::uint32_t>(0, 16)));
}

/// The property on the simulator, with the client calling the resource
/// through `layer` (directly, or through a decorator).
template <class Protocol, class Layer = Direct>
void sim_protocol_property(const Layer& layer = {}) {
  const auto choices = *gen_sim_run_choices();
  sim::ByteChooser chooser(choices.schedule);
  sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(choices.policy));
  sim::SimBackend backend(model);
  Harness<sim::SimBackend, Protocol, Layer> harness(backend, layer);
  check_protocol(harness);
}

}  // namespace streamcheck::props
