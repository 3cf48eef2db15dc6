#include "backend_cuda/guard_memory.h"

#include <iostream>
#include <mutex>
#include <string>
#include <utility>

#include "backend_cuda/driver.h"

namespace streamcheck::cuda {

/// The result slots: device memory shared by the guard memory and its
/// probes (a probe may outlive neither the backend's context nor this).
struct CudaGuardMemory::Slots {
  CUdeviceptr base = 0;
  std::mutex mutex;
  std::vector<std::uint32_t> free;
  ~Slots() {
    if (base) driver().api().mem_free(base);
  }
  CUdeviceptr at(std::uint32_t slot) const { return base + std::uint64_t{slot} * 16; }
};

CudaGuardMemory::Probe& CudaGuardMemory::Probe::operator=(Probe&& o) noexcept {
  if (this != &o) {
    give_back();
    slots_ = std::move(o.slots_);
    slot_ = o.slot_;
    done_ = std::move(o.done_);
    read_ = o.read_;
  }
  return *this;
}

void CudaGuardMemory::Probe::give_back() {
  if (!slots_) return;
  std::lock_guard lock(slots_->mutex);
  slots_->free.push_back(slot_);
  slots_.reset();
}

Result<std::unique_ptr<CudaGuardMemory>> CudaGuardMemory::create(CudaBackend& backend, std::uint32_t slots) {
  if (slots == 0) return ResourceError::driver("CudaGuardMemory::create: at least one result slot is needed");
  auto owned = std::make_shared<Slots>();
  if (auto st = driver().check(driver().api().mem_alloc(&owned->base, std::size_t{slots} * 16),
                               "cuMemAlloc (guard result slots)");
      !st)
    return st.error();
  for (std::uint32_t i = slots; i > 0; --i) owned->free.push_back(i - 1);
  return std::unique_ptr<CudaGuardMemory>(new CudaGuardMemory(backend, std::move(owned)));
}

Result<CudaBackend::StreamRef> CudaGuardMemory::resolve(StreamId s) const {
  if (auto ref = backend_.resolve_stream(s)) return *ref;
  return ResourceError::stream_misuse("CudaGuardMemory: unknown StreamId(" + std::to_string(s.value) + ")");
}

Status CudaGuardMemory::fill(StreamId s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern) {
  auto ref = resolve(s);
  if (!ref) return ref.error();
  return backend_.fill_bytes(ref.value(), ptr, bytes, pattern);
}

Result<CudaGuardMemory::Probe> CudaGuardMemory::check(StreamId s, std::uint64_t ptr, std::uint64_t bytes,
                                                      std::uint8_t pattern) {
  auto ref = resolve(s);
  if (!ref) return ref.error();
  std::uint32_t slot = 0;
  {
    std::lock_guard lock(slots_->mutex);
    if (slots_->free.empty())
      return ResourceError::driver(
          "CudaGuardMemory::check: every result slot holds a verdict not read yet; read them (the debug tier's "
          "reap_pending() or release_quarantine()) or create the guard memory with more slots");
    slot = slots_->free.back();
    slots_->free.pop_back();
  }
  // From here the probe owns the slot: an early return gives it back.
  auto done = backend_.create_event();
  if (!done) {
    std::lock_guard lock(slots_->mutex);
    slots_->free.push_back(slot);
    return done.error();
  }
  Probe probe(slots_, slot, std::move(done).value());
  if (auto st = backend_.count_bytes_unlike(ref.value(), ptr, bytes, pattern, slots_->at(slot)); !st) return st.error();
  if (auto st = backend_.record_event(probe.done_, ref.value()); !st) return st.error();
  return probe;
}

Result<std::optional<GuardOutcome>> CudaGuardMemory::outcome(Probe& probe, bool wait) {
  if (probe.read_) return probe.read_;
  if (!probe.slots_) return ResourceError::driver("CudaGuardMemory::outcome: a probe moved from");
  if (wait) {
    if (auto st = backend_.synchronize_event(probe.done_); !st) return st.error();
  } else {
    auto ran = backend_.query_event(probe.done_);
    if (!ran) return ran.error();
    if (!ran.value()) return std::optional<GuardOutcome>{};
  }
  std::uint64_t words[2] = {0, 0};
  if (auto st = driver().check(driver().api().memcpy_dtoh(words, slots_->at(probe.slot_), sizeof(words)),
                               "cuMemcpyDtoH (guard result)");
      !st)
    return st.error();
  probe.read_ = GuardOutcome{words[0], words[0] == 0 ? 0 : words[1]};
  probe.give_back();
  return probe.read_;
}

std::size_t CudaGuardMemory::free_slots() const {
  std::lock_guard lock(slots_->mutex);
  return slots_->free.size();
}

}  // namespace streamcheck::cuda
