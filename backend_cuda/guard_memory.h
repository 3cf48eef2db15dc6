// The debug tier's device work on a real GPU (model/debug_guard.h's
// GuardMemory): fills are cuMemsetD8Async on the stream, checks a kernel
// (streamcheck_guard_count, kernels.cu) that counts the bytes unlike the
// pattern into a 16-byte result slot, followed by an event; a verdict is
// read once that event has completed (cuEventQuery, or cuEventSynchronize
// when the host waits), with a synchronous copy of the slot.
//
// Slots come from one device allocation made at construction; a check that
// finds none free is refused with what to do (read the verdicts: the
// tier's reap_pending() or release_quarantine()). A probe dropped unread
// gives its slot back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend_cuda/cuda_backend.h"
#include "model/debug_guard.h"

namespace streamcheck::cuda {

class CudaGuardMemory {
  struct Slots;

 public:
  class Probe {
   public:
    Probe(Probe&&) noexcept = default;
    Probe& operator=(Probe&& o) noexcept;
    Probe(const Probe&) = delete;
    ~Probe() { give_back(); }

   private:
    friend class CudaGuardMemory;
    Probe(std::shared_ptr<Slots> slots, std::uint32_t slot, CudaBackend::Event done)
        : slots_(std::move(slots)), slot_(slot), done_(std::move(done)) {}
    void give_back();
    std::shared_ptr<Slots> slots_;
    std::uint32_t slot_ = 0;
    CudaBackend::Event done_;
    std::optional<GuardOutcome> read_;
  };

  /// Takes `slots` * 16 bytes of device memory (cuMemAlloc) for results.
  static Result<std::unique_ptr<CudaGuardMemory>> create(CudaBackend& backend, std::uint32_t slots = 4096);
  CudaGuardMemory(const CudaGuardMemory&) = delete;
  CudaGuardMemory& operator=(const CudaGuardMemory&) = delete;

  Status fill(StreamId s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern);
  Result<Probe> check(StreamId s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern);
  Result<std::optional<GuardOutcome>> outcome(Probe& probe, bool wait);
  std::size_t free_slots() const;

 private:
  CudaGuardMemory(CudaBackend& backend, std::shared_ptr<Slots> slots) : backend_(backend), slots_(std::move(slots)) {}
  Result<CudaBackend::StreamRef> resolve(StreamId s) const;

  CudaBackend& backend_;
  std::shared_ptr<Slots> slots_;
};

static_assert(GuardMemory<CudaGuardMemory>, "CudaGuardMemory must satisfy streamcheck::GuardMemory");

}  // namespace streamcheck::cuda
