// Shared setup for the model/ tests: a Resource over the simulated backend,
// and a snapshot of everything a failed call must leave unchanged (P4).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
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

/// Every figure the resource and the backend expose about one block.
struct Snapshot {
  std::size_t live = 0;
  std::size_t pending = 0;
  std::size_t per_stream = 0;
  std::size_t blocks = 0;
  std::optional<std::size_t> uses;
  std::size_t events = 0;
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Snapshot& s) {
    return os << "{live=" << s.live << " pending=" << s.pending << " per_stream=" << s.per_stream
              << " blocks=" << s.blocks << " uses=" << (s.uses ? std::to_string(*s.uses) : std::string("none"))
              << " events=" << s.events << "}";
  }
};

template <class R>
Snapshot snapshot(const R& r, const sim::SimBackend& b, std::uint64_t ptr) {
  return Snapshot{r.live_bytes(),       r.pending_free_bytes(),         r.pending_per_stream_total(),
                  r.live_block_count(), r.pending_use_event_count(ptr), b.live_event_count()};
}

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

inline bool has_injected_fault(const ResourceError& e) {
  return e.message.find(sim::SimBackend::kInjectedFault) != std::string::npos;
}

}  // namespace streamcheck::testing
