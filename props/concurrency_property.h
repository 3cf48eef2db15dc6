// P8 concurrency: the resource called from several host threads at once,
// every interleaving of its own lock, unlock and atomic steps (and of its
// backend calls) explored on the simulator (R6).
//
// A ConcurrentProgram gives each host thread a list of resource calls. The
// main thread first allocates the shared blocks; then the threads run under
// a sim::HostScheduler, which makes every SchedMutex / SchedAtomic operation
// of the core and every SimBackend call a scheduling point. Each thread keeps
// its own ledger of what succeeded (nothing shared outside the scheduling
// points, as the scheduler requires), and at quiescence the ledgers are
// merged and checked:
//   P8a no double free: a block is deallocated successfully at most once,
//       and the device never sees a free of a pointer it does not hold;
//   P8b no byte lost or double-counted: live_bytes and the live block count
//       are exactly those of the blocks the ledgers say are live, and the
//       device holds exactly those allocations once a final reap is done;
//   P8c accounting exact at quiescence: the pending total equals the sum of
//       the per-stream tallies, and a final reap brings both to zero;
//   P8d every call returns success or UseAfterFree (a block another thread
//       freed first); a driver error means the core broke its own protocol.
// Exploration is depth-first over executions: the device progresses only on
// observation (DeviceProgress::OnObservation), and sleep sets skip the
// interleavings that only swap commuting host steps. By default they are
// lock-aware (HostScheduler::set_lock_aware): two critical sections of one
// mutex are run in both orders only when the blocks or streams they touch
// (the core's GuardedMaps say which) or their backend steps conflict.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/host_scheduler.h"
#include "backend_sim/schedule.h"
#include "backend_sim/sim_backend.h"
#include "model/resource.h"

namespace streamcheck::props {

/// One call a host thread makes.
struct ThreadCall {
  enum class Kind : std::uint8_t { Allocate, Use, Deallocate, Reap };
  Kind kind = Kind::Reap;
  std::size_t bytes = 0;  // Allocate
  /// Use, Deallocate: shared block `block`, or (own) the thread's own
  /// block `block` places back from its newest; a call naming no block
  /// (a thread that allocated none) does nothing.
  bool shared = true;
  std::uint32_t block = 0;
  Access access = Access::Read;  // Use: prepare, then finish, on the thread's stream
};

struct ConcurrentProgram {
  /// Sizes of the blocks the main thread allocates on stream s0 before the
  /// threads start.
  std::vector<std::size_t> shared_blocks;
  /// One list of calls per host thread; thread t uses its own stream.
  std::vector<std::vector<ThreadCall>> threads;
};

inline std::string show(const ThreadCall& c) {
  const std::string block = c.shared ? fmt::format("shared b{}", c.block) : fmt::format("own block -{}", c.block);
  switch (c.kind) {
    case ThreadCall::Kind::Allocate:
      return fmt::format("allocate {}", c.bytes);
    case ThreadCall::Kind::Use:
      return fmt::format("use {} ({})", block, to_string(c.access));
    case ThreadCall::Kind::Deallocate:
      return fmt::format("deallocate {}", block);
    case ThreadCall::Kind::Reap:
      return "reap";
  }
  return {};
}

inline std::string show(const ConcurrentProgram& p) {
  std::string out = "shared blocks:";
  for (std::size_t i = 0; i < p.shared_blocks.size(); ++i) out += fmt::format(" b{}={}", i, p.shared_blocks[i]);
  if (p.shared_blocks.empty()) out += " none";
  out += "\n";
  for (std::size_t t = 0; t < p.threads.size(); ++t) {
    out += fmt::format("thread {} (stream t{}):", t, t);
    for (const ThreadCall& c : p.threads[t]) out += " " + show(c) + ";";
    out += "\n";
  }
  return out;
}

inline void showValue(const ConcurrentProgram& p, std::ostream& os) { os << show(p); }

/// Issue 12's acceptance program: 2 host threads x 6 calls each, over two
/// shared blocks. Both threads free shared b0 (exactly one may succeed),
/// use b1 and one frees it, each allocates, uses and frees a block of its
/// own, and each reaps while the other may be deallocating.
inline ConcurrentProgram two_threads_by_six_calls() {
  using K = ThreadCall::Kind;
  auto use = [](bool shared, std::uint32_t b, Access a) { return ThreadCall{K::Use, 0, shared, b, a}; };
  auto dealloc = [](bool shared, std::uint32_t b) { return ThreadCall{K::Deallocate, 0, shared, b, Access::Read}; };
  auto alloc = [](std::size_t bytes) { return ThreadCall{K::Allocate, bytes, true, 0, Access::Read}; };
  const ThreadCall reap{};
  ConcurrentProgram p;
  p.shared_blocks = {256, 1024};
  p.threads = {
      {alloc(512), use(true, 1, Access::Read), dealloc(true, 0), use(false, 0, Access::Write), dealloc(false, 0), reap},
      {use(true, 1, Access::Write), dealloc(true, 0), alloc(256), dealloc(true, 1), reap, dealloc(false, 0)},
  };
  return p;
}

struct P8Options {
  /// Runs to make at most; the exploration reports whether it finished.
  std::uint64_t max_runs = 100000;
  std::optional<std::uint32_t> preemption_bound;
  bool sleep_sets = true;
  /// Lock-aware sleep sets (HostScheduler::set_lock_aware): two critical
  /// sections of one mutex are explored in both orders only when what they
  /// touch conflicts (the core's GuardedMaps say which block or stream).
  bool lock_aware = true;
  /// Collect each execution's outcome (run_concurrent's `outcome`) in
  /// P8Result::outcomes: what tests compare across reductions.
  bool collect_outcomes = false;
  sim::PoolPolicy policy{};
};

struct P8Result {
  /// Executions explored (runs counted: neither sleep-blocked nor cut).
  std::uint64_t executions = 0;
  /// Runs that ended in a sleep-blocked state (equivalent to one explored).
  std::uint64_t sleep_blocked = 0;
  bool exhaustive = false;
  std::optional<std::string> violation;
  /// The schedule of the violating run (replay with sim::ReplayChooser).
  std::string schedule;
  /// The distinct outcomes of the executions (P8Options::collect_outcomes).
  std::set<std::string> outcomes;
};

/// One run of `program` against Resource<SimBackend, P> with `chooser`
/// deciding the host steps, pool choices and query answers. Returns the
/// first P8 violation, or nullopt. `lock_aware`: the scheduler reports
/// critical sections for lock-aware sleep sets; `outcome`, when given and
/// the run is clean, receives what the run did (which calls succeeded, the
/// blocks and the device's live ranges), for comparing reductions.
template <class P>
std::optional<std::string> run_concurrent(const ConcurrentProgram& program, sim::Chooser& chooser,
                                          const sim::PoolPolicy& policy = {}, bool lock_aware = false,
                                          std::string* outcome = nullptr) {
  using Backend = sim::SimBackend;
  sim::DeviceModel model(chooser, policy, sim::DeviceProgress::OnObservation);
  Backend backend(model);
  const StreamId setup_stream = backend.add_stream("s0");
  std::vector<StreamId> streams;
  for (std::size_t t = 0; t < program.threads.size(); ++t) streams.push_back(backend.add_stream(fmt::format("t{}", t)));
  Resource<Backend, P> resource(backend);

  std::vector<DeviceBlock> shared;
  for (std::size_t i = 0; i < program.shared_blocks.size(); ++i) {
    auto b = resource.allocate(program.shared_blocks[i], setup_stream);
    if (!b) return fmt::format("setup: allocating shared b{} failed: {}", i, b.error().to_string());
    shared.push_back(b.value());
  }

  struct Ledger {
    std::vector<DeviceBlock> own;
    std::vector<bool> own_freed;
    std::vector<std::uint32_t> shared_freed;
    std::vector<std::string> problems;
    std::string results;  // per call: o (succeeded), u (use after free), or - (no block)
  };
  std::vector<Ledger> ledgers(program.threads.size());
  std::vector<sim::HostThread> hosts;
  for (std::size_t t = 0; t < program.threads.size(); ++t) hosts.push_back(backend.add_host_thread());

  std::vector<sim::HostScheduler::Body> bodies;
  for (std::size_t t = 0; t < program.threads.size(); ++t) {
    bodies.emplace_back([&, t] {
      Ledger& ledger = ledgers[t];
      ledger.shared_freed.assign(shared.size(), 0);
      const StreamId stream = streams[t];
      // A block a call names: nullopt when the thread has no such block.
      auto pick = [&](const ThreadCall& c) -> std::optional<std::pair<DeviceBlock, std::size_t>> {
        if (c.shared) {
          if (c.block >= shared.size()) return std::nullopt;
          return std::pair{shared[c.block], static_cast<std::size_t>(c.block)};
        }
        if (c.block >= ledger.own.size()) return std::nullopt;
        const std::size_t i = ledger.own.size() - 1 - c.block;
        return std::pair{ledger.own[i], i};
      };
      auto expect_ok = [&](const ThreadCall& c, const Status& st) {
        ledger.results += st ? 'o' : 'u';
        if (!st && st.error().kind != ErrorKind::UseAfterFree)
          ledger.problems.push_back(fmt::format("P8d thread {}: {} failed: {}", t, show(c), st.error().to_string()));
      };
      for (const ThreadCall& c : program.threads[t]) {
        switch (c.kind) {
          case ThreadCall::Kind::Allocate: {
            auto b = resource.allocate(c.bytes, stream);
            if (!b)
              ledger.problems.push_back(fmt::format("P8d thread {}: {} failed: {}", t, show(c), b.error().to_string()));
            else {
              ledger.own.push_back(b.value());
              ledger.own_freed.push_back(false);
            }
            break;
          }
          case ThreadCall::Kind::Use: {
            auto b = pick(c);
            if (!b) break;
            const BlockId id = BlockId::of(b->first);
            auto st = resource.prepare_block_use(id, stream, c.access);
            expect_ok(c, st);
            if (st) expect_ok(c, resource.finish_block_use(id, stream, c.access));
            break;
          }
          case ThreadCall::Kind::Deallocate: {
            auto b = pick(c);
            if (!b) break;
            auto st = resource.deallocate(b->first);
            expect_ok(c, st);
            if (st) {
              if (c.shared)
                ++ledger.shared_freed[b->second];
              else
                ledger.own_freed[b->second] = true;
            }
            break;
          }
          case ThreadCall::Kind::Reap:
            if (auto st = resource.reap_pending(); !st)
              ledger.problems.push_back(fmt::format("P8d thread {}: reap failed: {}", t, st.error().to_string()));
            break;
        }
      }
    });
  }
  sim::HostScheduler scheduler(chooser);
  scheduler.set_lock_aware(lock_aware);
  scheduler.on_switch([&](std::uint32_t t) { backend.set_host_thread(hosts[t]); });
  scheduler.run(std::move(bodies));
  backend.set_host_thread(backend.main_host_thread());
  if (scheduler.cut()) return std::nullopt;  // sleep-blocked: equivalent to a run explored before

  // --- quiescence: merge the ledgers and check.
  for (const Ledger& l : ledgers)
    if (!l.problems.empty()) return l.problems.front();
  std::vector<DeviceBlock> live;
  for (std::size_t i = 0; i < shared.size(); ++i) {
    std::uint32_t frees = 0;
    for (const Ledger& l : ledgers) frees += l.shared_freed.empty() ? 0 : l.shared_freed[i];
    if (frees > 1) return fmt::format("P8a double free: shared b{} was deallocated successfully {} times", i, frees);
    if (frees == 0) live.push_back(shared[i]);
  }
  for (const Ledger& l : ledgers)
    for (std::size_t i = 0; i < l.own.size(); ++i)
      if (!l.own_freed[i]) live.push_back(l.own[i]);
  if (backend.invalid_frees() > 0)
    return fmt::format("P8a double free: the device was asked {} time(s) to free a pointer it does not hold",
                       backend.invalid_frees());
  std::size_t live_bytes = 0;
  for (const DeviceBlock& b : live) live_bytes += b.bytes;
  if (resource.live_bytes() != live_bytes || resource.live_block_count() != live.size())
    return fmt::format(
        "P8b live accounting: the resource counts {} bytes in {} blocks, the calls that succeeded "
        "leave {} bytes in {} blocks",
        resource.live_bytes(), resource.live_block_count(), live_bytes, live.size());
  if (resource.pending_free_bytes() != resource.pending_per_stream_total())
    return fmt::format("P8c pending accounting: pending total {} != sum of the per-stream tallies {}",
                       resource.pending_free_bytes(), resource.pending_per_stream_total());
  if (auto st = resource.reap_pending(); !st) return fmt::format("P8c final reap failed: {}", st.error().to_string());
  if (resource.pending_free_bytes() != 0 || resource.pending_per_stream_total() != 0)
    return fmt::format("P8c after the final reap: pending total {}, per-stream tallies {} (both should be 0)",
                       resource.pending_free_bytes(), resource.pending_per_stream_total());
  std::size_t device_live = 0;
  for (const sim::Allocation& a : model.pool().allocations()) device_live += a.free_op ? 0 : 1;
  if (outcome) {
    // What the run did, as far as the callers and the device can tell (not
    // generations or event numbers, which only name things): which calls
    // succeeded, the blocks each thread holds, and the device's live ranges.
    *outcome = fmt::format("live {} bytes in {} blocks;", live_bytes, live.size());
    for (std::size_t t = 0; t < ledgers.size(); ++t) {
      *outcome += fmt::format(" t{}:", t);
      *outcome += " " + ledgers[t].results;
      for (std::size_t i = 0; i < ledgers[t].own.size(); ++i)
        *outcome += fmt::format(" {:#x}{}", ledgers[t].own[i].ptr, ledgers[t].own_freed[i] ? "f" : "");
      for (std::uint32_t f : ledgers[t].shared_freed) *outcome += fmt::format(" s{}", f);
    }
    *outcome += "; device:";
    for (const sim::Allocation& a : model.pool().allocations())
      if (!a.free_op) *outcome += fmt::format(" {:#x}", a.range.lo);
  }
  for (const DeviceBlock& b : live)
    if (!model.pool().live_at(b.ptr))
      return fmt::format("P8b the device no longer holds live block {:#x} ({} bytes): freed under its owner", b.ptr,
                         b.bytes);
  if (device_live != live.size())
    return fmt::format("P8b the device holds {} allocations, the resource's callers {}: a block was lost", device_live,
                       live.size());
  return std::nullopt;
}

/// Depth-first exploration of the executions of `program` (see the file
/// comment), stopping at the first violation.
template <class P>
P8Result explore_concurrent(const ConcurrentProgram& program, const P8Options& options = {}) {
  P8Result out;
  sim::DfsEnumerator dfs;
  for (std::uint64_t runs = 0; !dfs.done() && runs < options.max_runs; ++runs) {
    auto chooser = dfs.next_run();
    if (options.sleep_sets) chooser.enable_sleep_sets();
    chooser.set_preemption_bound(options.preemption_bound);
    std::string outcome;
    auto violation = run_concurrent<P>(program, chooser, options.policy, options.lock_aware && options.sleep_sets,
                                       options.collect_outcomes ? &outcome : nullptr);
    if (chooser.counted()) {
      ++out.executions;
      if (options.collect_outcomes && !violation) out.outcomes.insert(std::move(outcome));
    } else {
      ++out.sleep_blocked;
    }
    if (violation) {
      out.violation = std::move(violation);
      out.schedule = chooser.schedule();
      return out;
    }
    dfs.finished(chooser);
  }
  out.exhaustive = dfs.done();
  return out;
}

}  // namespace streamcheck::props
