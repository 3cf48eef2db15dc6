// Shared setup for the model/ tests: a Resource over the simulated backend,
// and the block ids the error-path tests hand it. What a failed call must
// leave unchanged (P4) is props::ResourceSnapshot (props/resource_snapshot.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "backend_sim/device_model.h"
#include "backend_sim/schedule.h"
#include "backend_sim/sim_backend.h"
#include "model/resource.h"
#include "model/types.h"

namespace streamcheck::testing {

/// The backend and its model; streams s0..s2 are registered up front.
struct SimEnv {
  explicit SimEnv(std::uint64_t seed = 1, sim::SimBackendOptions options = {})
      : chooser(seed), model(chooser), backend(model, options) {}
  sim::RandomChooser chooser;
  sim::DeviceModel model;
  sim::SimBackend backend;
  StreamId s0 = backend.add_stream("s0");
  StreamId s1 = backend.add_stream("s1");
  StreamId s2 = backend.add_stream("s2");
};

/// A block id that names the same address with a generation never handed out.
inline BlockId stale_id(const DeviceBlock& b) {
  BlockId id = BlockId::of(b);
  id.generation = Generation::next();
  return id;
}

inline BlockId on_device(const DeviceBlock& b, std::uint32_t ordinal) {
  BlockId id = BlockId::of(b);
  id.device_ordinal = ordinal;
  return id;
}

inline bool has_injected_fault(const ResourceError& e) { return e.injected; }

}  // namespace streamcheck::testing
