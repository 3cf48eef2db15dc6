#include "backend_sim/device_model.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "backend_sim/explain.h"

namespace streamcheck::sim {

OpRef DeviceModel::launch(StreamIndex stream, const std::vector<KernelAccess>& accesses, std::string_view label) {
  hb_.check_stream(stream);
  std::vector<OpAccess>& touched = touched_;
  touched.clear();
  for (const auto& a : accesses) {
    if (a.bytes == 0) throw std::invalid_argument(fmt::format("DeviceModel::launch: zero-byte access in '{}'", label));
    const AllocationIndex alloc = a.allocation ? AllocationIndex{*a.allocation} : pool_.containing(a.ptr);
    if (alloc.value >= pool_.count())
      throw std::invalid_argument(fmt::format("DeviceModel::launch: unknown allocation {}", alloc.value));
    touched.push_back(OpAccess{ByteRange{a.ptr, a.ptr + a.bytes}, a.access, alloc});
  }
  const OpRef ref = hb_.enqueue(stream, OpKind::Kernel, label, std::nullopt);
  race_.enqueued(ref, touched);
  ran_at_once(ref);
  return ref;
}

std::optional<AllocResult> DeviceModel::alloc(StreamIndex stream, std::uint64_t bytes, std::string_view label,
                                              std::optional<std::uint64_t> preferred) {
  hb_.check_stream(stream);
  const bool on_observation = progress_ == DeviceProgress::OnObservation;
  const auto id = pool_.place(stream, bytes, hb_, chooser_, preferred, on_observation);  // R7
  if (!id) return std::nullopt;
  const Allocation& a = pool_.allocation(*id);
  // OnObservation: an opportunistic reuse observes that the free has run.
  if (a.reuse == ReuseKind::Opportunistic && !hb_.completed(*a.fence))
    complete_through(a.fence->stream, a.fence->index + 1);
  const OpRef ref = hb_.enqueue(stream, OpKind::Alloc, label, a.pool_dep());
  pool_.set_alloc_op(*id, ref);
  race_.enqueued(ref, OpAccess{a.range, Access::Write, *id});
  ran_at_once(ref);
  return AllocResult{a.range.lo, *id, a.reuse};
}

bool DeviceModel::free(StreamIndex stream, std::uint64_t ptr, std::string_view label) {
  hb_.check_stream(stream);
  const auto id = pool_.live_at(ptr);
  if (!id) return false;
  const OpRef ref = hb_.enqueue(stream, OpKind::Free, label, std::nullopt);
  pool_.freed(*id, ref);  // R7: the range becomes a reuse candidate
  race_.enqueued(ref, OpAccess{pool_.allocation(*id).range, Access::Write, *id});
  ran_at_once(ref);
  return true;
}

std::optional<AllocResult> DeviceModel::suballoc(StreamIndex stream, AllocationIndex parent, ByteRange block,
                                                 std::uint64_t bytes, std::string_view label) {
  hb_.check_stream(stream);
  if (pool_.allocation(parent).free_op) return std::nullopt;
  const AllocationIndex id = pool_.sub_allocated(parent, block, bytes, stream);
  const OpRef ref = hb_.enqueue(stream, OpKind::Alloc, label, std::nullopt);
  pool_.set_alloc_op(id, ref);
  race_.enqueued(ref, OpAccess{block, Access::Write, id});
  ran_at_once(ref);
  return AllocResult{block.lo, id, ReuseKind::SubAllocated};
}

bool DeviceModel::subfree(StreamIndex stream, AllocationIndex block, std::vector<OpRef> released_after,
                          std::string_view label) {
  hb_.check_stream(stream);
  const Allocation& a = pool_.allocation(block);
  if (!a.parent || a.free_op) return false;
  const OpRef ref = hb_.enqueue(stream, OpKind::Free, label, std::nullopt);
  pool_.sub_freed(block, ref, std::move(released_after));
  // Giving a block back to its allocator changes no byte: the value oracle
  // (P2) must not see it as a write, or a recorded stream's read that runs
  // after it would look wrong (R10c).
  race_.enqueued(ref, OpAccess{a.range, Access::Write, block}, /*changes_memory=*/false);
  ran_at_once(ref);
  return true;
}

// --- the host's own memory work (R12): enqueued on the host stream (R1,
// R5: after the thread's past), then synchronized at once (R4: the host
// thread is ordered after it). It covers only work that has executed, so it
// executes now.

AllocResult DeviceModel::host_alloc(StreamIndex host_stream, std::uint64_t bytes, std::string_view label) {
  hb_.check_stream(host_stream);
  const AllocationIndex id = pool_.host_allocated(bytes, host_stream);
  const OpRef ref = hb_.enqueue(host_stream, OpKind::Alloc, label, std::nullopt);
  pool_.set_alloc_op(id, ref);
  race_.enqueued(ref, OpAccess{pool_.allocation(id).range, Access::Write, id});
  sync_stream(host_stream);
  return AllocResult{pool_.allocation(id).range.lo, id, ReuseKind::HostMemory};
}

bool DeviceModel::host_free(StreamIndex host_stream, std::uint64_t ptr, std::string_view label) {
  hb_.check_stream(host_stream);
  const auto id = pool_.live_at(ptr);  // host addresses are never device ones (Pool::host_allocated)
  if (!id || pool_.allocation(*id).reuse != ReuseKind::HostMemory) return false;
  const OpRef ref = hb_.enqueue(host_stream, OpKind::Free, label, std::nullopt);
  pool_.host_freed(*id, ref);
  race_.enqueued(ref, OpAccess{pool_.allocation(*id).range, Access::Write, *id});
  sync_stream(host_stream);
  return true;
}

OpRef DeviceModel::host_access(StreamIndex host_stream, const std::vector<KernelAccess>& accesses,
                               std::string_view label) {
  const OpRef ref = launch(host_stream, accesses, label);
  sync_stream(host_stream);
  return ref;
}

// --- host synchronization: the covered work executes, then the host is
// ordered after it (R4), then idle freed ranges may go back (R7).

void DeviceModel::sync_stream(StreamIndex stream) {
  complete_covered(hb_.stream_clock(stream));
  hb_.sync_stream(stream);
  pool_.release_idle_ranges(hb_);
}

void DeviceModel::sync_event(EventIndex event) {
  const bool recorded = hb_.capture(event).has_value();
  if (recorded) complete_covered(*hb_.capture(event));
  hb_.sync_event(event);
  if (recorded) pool_.release_idle_ranges(hb_);
}

void DeviceModel::sync_device(DeviceNumber device) {
  for (std::uint32_t s = 0; s < hb_.stream_count(); ++s)
    if (hb_.stream_device(StreamIndex{s}) == device) complete_covered(hb_.stream_clock(StreamIndex{s}));
  hb_.sync_device(device);
  pool_.release_idle_ranges(hb_);
}

bool DeviceModel::query_event(EventIndex event) {
  if (progress_ == DeviceProgress::OnObservation) {
    const auto& capture = hb_.capture(event);
    if (capture && !hb_.executed_all(*capture) && chooser_.choose(ChoiceKind::QueryAnswer, 2) == 1)
      complete_covered(*capture);
  }
  return hb_.query_event(event);
}

// --- the scheduler

void DeviceModel::execute(OpRef r) {
  if (!hb_.ready(r))
    throw std::logic_error(
        fmt::format("DeviceModel: internal error: executing {} before its dependencies", describe(*this, r)));
  execute_ready(r);
}

void DeviceModel::execute_ready(OpRef r) {
  race_.executed(r);  // P2
  hb_.mark_executed(r.stream, next_completion_++);
}

void DeviceModel::ran_at_once(OpRef r) {
  if (progress_ != DeviceProgress::AtOnce) return;
  // Ready by construction (DeviceProgress::AtOnce); execute() checks it, so
  // an op that is not is an internal error, never a silent reordering.
  execute(r);
}

void DeviceModel::complete_through(StreamIndex stream, std::uint32_t count) {
  while (hb_.executed_count(stream) < count) {
    const OpRef r{stream, hb_.executed_count(stream)};
    prefetch_ahead(r);
    // Each unmet dependency completed in turn, streams in order, then the
    // pool's: a stream met stays met (executed counts only grow). The loop
    // ends when r has none left, and r is its stream's next op: that is
    // HbState::ready, so execute's asking it again is skipped (it was a
    // tenth of a 1 M-op teardown).
    while (const auto dep = hb_.unmet_dependency(r)) complete_through(dep->stream, dep->index + 1);
    execute_ready(r);
  }
}

void DeviceModel::prefetch_ahead(OpRef r) const {
  // Each step reads what the step before brought in, a few ops earlier.
  const std::uint32_t ops = hb_.op_count(r.stream);
  if (r.index + kPrefetchOps < ops) hb_.prefetch_op(OpRef{r.stream, r.index + kPrefetchOps});
  if (r.index + kPrefetchStarts < ops) {
    hb_.prefetch_clock_base(OpRef{r.stream, r.index + kPrefetchStarts});
    race_.prefetch_starts(OpRef{r.stream, r.index + kPrefetchStarts});
  }
  if (r.index + kPrefetchRecords < ops) race_.prefetch_records(OpRef{r.stream, r.index + kPrefetchRecords});
}

void DeviceModel::complete_covered(const VectorClock& vc) {
  for (std::uint32_t s = 0; s < hb_.stream_count(); ++s) {
    const StreamIndex stream{s};
    complete_through(stream, hb_.covered_count(vc, stream));
  }
}

bool DeviceModel::collect_ready_heads() {
  heads_.clear();
  if (head_states_.size() < hb_.stream_count()) head_states_.resize(hb_.stream_count());
  bool pending = false;
  for (std::uint32_t s = 0; s < hb_.stream_count(); ++s) {
    const StreamIndex stream{s};
    const std::uint32_t next = hb_.executed_count(stream);
    if (next >= hb_.op_count(stream)) continue;
    pending = true;
    // A head, once ready, stays ready until it executes, and a blocked one
    // stays blocked while what blocked it has not run
    // (HbState::unmet_dependency): one comparison instead of the head's
    // clock against every stream, at every device step of a run.
    std::optional<HeadState>& known = head_states_[s];
    if (!known || known->head != next || (known->waits_for && hb_.completed(*known->waits_for)))
      known = HeadState{next, hb_.unmet_dependency(OpRef{stream, next})};
    if (!known->waits_for) heads_.push_back(stream);
  }
  return pending;
}

void DeviceModel::device_steps() {
  if (progress_ != DeviceProgress::EveryStep) return;
  for (;;) {
    collect_ready_heads();
    if (heads_.empty()) return;
    chooser_.offer_device_step(heads_, true);
    const std::uint32_t c = chooser_.choose(ChoiceKind::DeviceStep, static_cast<std::uint32_t>(heads_.size()) + 1);
    if (c == 0) return;  // the host goes on first
    execute(OpRef{heads_[c - 1], hb_.executed_count(heads_[c - 1])});
  }
}

void DeviceModel::finish() {
  if (finished_) return;
  while (collect_ready_heads()) {
    if (heads_.empty()) throw std::logic_error("DeviceModel: internal error: pending work but no stream can run");
    chooser_.offer_device_step(heads_, false);
    const std::uint32_t c = progress_ != DeviceProgress::EveryStep
                                ? 0
                                : chooser_.choose(ChoiceKind::DeviceStep, static_cast<std::uint32_t>(heads_.size()));
    execute(OpRef{heads_[c], hb_.executed_count(heads_[c])});
  }
  pool_.visit_held([&](AllocationIndex, const Allocation& a) {
    if (!a.free_op) race_.leaked(a);
  });
  finished_ = true;
}

Retention DeviceModel::compact(std::vector<OpRef> also_named, std::vector<AllocationIndex> also_named_allocations) {
  // The allocations first: the ops the pool names are those of the
  // allocations it keeps.
  std::vector<OpRef>& named = also_named;
  race_.add_named(named, also_named_allocations);
  const std::size_t walked_allocations = pool_.drop_unnamed(std::move(also_named_allocations));
  pool_.add_named(named);
  hb_.add_named(named);
  const std::size_t walked = named.size();
  Retention r;
  r.dropped_before.reserve(hb_.stream_count());
  for (std::uint32_t s = 0; s < hb_.stream_count(); ++s) r.dropped_before.push_back(hb_.executed_count(StreamIndex{s}));
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  std::erase_if(named, [&](OpRef op) { return !r.drops(op); });
  r.kept = std::move(named);
  hb_.drop(r);
  race_.drop(r);  // reads the HB state's window as drop() left it
  enqueued_at_compact_ = hb_.enqueued_count();
  named_at_compact_ = walked + walked_allocations;
  return r;
}

}  // namespace streamcheck::sim
