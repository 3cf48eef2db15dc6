// Runs client programs against Resource + LaunchRecorder on any validation
// backend and checks the properties of SPEC §4 after every op:
//   P1 race freedom   - the backend reports no finding (sim: HB checker)
//   P2 data oracle    - every read sees the last write ordered before it
//   P3 accounting     - outstanding = live + pending, pending = Σ per stream,
//                       live = Σ live blocks, and a clean reap leaves 0
//   P4 error atomicity- a failed call changes nothing; a retry after the
//                       fault clears succeeds; a failing reap loses nothing
//   P5 generation     - stale ids get UseAfterFree and change nothing
//   P9 no leaks       - after teardown every event is given back
// Violations are returned as text (data), never thrown.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/kernel_access.h"
#include "model/launch_recorder.h"
#include "model/resource.h"
#include "props/client_program.h"

namespace streamcheck::props {

/// What the property harness needs beyond the core's Backend concept.
template <class B>
concept ValidationBackend = Backend<B> &&
    requires(B& b, typename B::StreamRef s, std::vector<KernelAccess> acc, std::uint32_t n, std::string label) {
  { b.add_stream(label) } -> std::same_as<StreamId>;
  b.launch(s, acc, label);
  b.arm_fault(n);
  b.disarm_fault();
  { b.live_event_count() } -> std::convertible_to<std::size_t>;
  { b.new_problems() } -> std::same_as<std::vector<std::string>>;
  b.drain();
};

template <ValidationBackend B, class P = CorrectProtocol>
class Harness {
 public:
  explicit Harness(B& backend) : b_(backend), res_(backend) {
    for (std::uint32_t i = 0; i < kClientStreams; ++i) streams_.push_back(b_.add_stream("s" + std::to_string(i)));
  }
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  /// A run cut short by a violation leaves launches in flight; they are
  /// abandoned quietly (the run is already reported).
  ~Harness() {
    for (auto& f : in_flight_) f.recorder->abandon();
  }

  /// What each applied op did, with blocks and launches by name; the
  /// readable form of a counterexample.
  const std::vector<std::string>& narrative() const { return narrative_; }

  /// Applies one op; returns the first property it breaks, if any.
  std::optional<std::string> apply(const ClientOp& op) {
    problems_.clear();
    said_.clear();
    std::visit([this](const auto& o) { this->run(o); }, op);
    narrative_.push_back(said_.empty() ? show(op) + "  [no-op]" : said_);
    check_accounting();
    for (auto& p : b_.new_problems()) problems_.push_back(std::move(p));
    return first_problem();
  }

  /// Commits, frees and reaps everything, lets the device finish, then
  /// checks P1/P2 for the remaining work, P3's final zero and P9.
  std::optional<std::string> finish() {
    problems_.clear();
    b_.disarm_fault();
    while (!in_flight_.empty()) run(CommitOp{0});
    // One attempt per block: a block the resource refuses to free (a broken
    // protocol) must not keep the teardown looping.
    for (std::size_t attempts = live_.size(); attempts > 0 && !live_.empty(); --attempts) run(DeallocateOp{0});
    if (!live_.empty()) {
      problem("teardown: " + std::to_string(live_.size()) + " blocks could not be deallocated");
      live_.clear();
    }
    run(ReapOp{});
    check_accounting();
    if (res_.bytes_outstanding() != 0)
      problem("P3 accounting: " + std::to_string(res_.bytes_outstanding()) +
              " bytes outstanding after freeing and reaping everything");
    if (b_.live_event_count() != 0)
      problem("P9 no leaks: " + std::to_string(b_.live_event_count()) + " events still alive after teardown");
    b_.drain();
    for (auto& p : b_.new_problems()) problems_.push_back(std::move(p));
    return first_problem();
  }

  Resource<B, P>& resource() { return res_; }
  std::size_t live_count() const { return live_.size(); }
  std::size_t freed_count() const { return freed_.size(); }
  std::size_t in_flight_count() const { return in_flight_.size(); }

 private:
  struct InFlight {
    std::unique_ptr<LaunchRecorder<P>> recorder;
    std::vector<std::pair<BlockId, Access>> uses;
    std::string name;
  };
  struct Snapshot {
    std::size_t live_bytes, pending, per_stream, live_blocks, events;
    std::vector<std::optional<std::size_t>> use_events;
    bool operator==(const Snapshot&) const = default;
    std::string str() const {
      std::string s = "live=" + std::to_string(live_bytes) + " pending=" + std::to_string(pending) +
                      " per_stream=" + std::to_string(per_stream) + " blocks=" + std::to_string(live_blocks) +
                      " events=" + std::to_string(events) + " use_events=[";
      for (const auto& u : use_events) s += (u ? std::to_string(*u) : std::string("gone")) + " ";
      return s + "]";
    }
  };

  void problem(std::string text) { problems_.push_back(std::move(text)); }
  void say(std::string text) { said_ = std::move(text); }
  std::string name(const DeviceBlock& blk) const {
    auto it = names_.find(blk.generation.value);
    return it == names_.end() ? "?" : it->second;
  }
  std::string stream_name(StreamId id) const { return "s" + std::to_string(id.value); }
  void label_next_pool_op(const std::string& label) {
    if constexpr (requires { b_.set_op_label(label); }) b_.set_op_label(label);
  }
  std::optional<std::string> first_problem() const {
    if (problems_.empty()) return std::nullopt;
    return problems_.front();
  }
  static bool injected(const ResourceError& e) { return e.injected; }
  typename B::StreamRef ref(StreamId id) const { return *b_.resolve_stream(id); }
  std::optional<std::size_t> newest(std::size_t count, std::uint32_t rel) const {
    if (count == 0) return std::nullopt;
    return count - 1 - rel % count;
  }
  bool in_flight(const DeviceBlock& block, bool writes_only) const {
    for (const auto& f : in_flight_)
      for (const auto& [id, access] : f.uses)
        if (id == BlockId::of(block) && (!writes_only || writes(access))) return true;
    return false;
  }

  Snapshot snapshot() const {
    Snapshot s{res_.live_bytes(),       res_.pending_free_bytes(), res_.pending_per_stream_total(),
               res_.live_block_count(), b_.live_event_count(),     {}};
    for (const auto& blk : live_) s.use_events.push_back(res_.pending_use_event_count(blk.ptr));
    return s;
  }

  void check_accounting() {
    std::size_t sum = 0;
    for (const auto& blk : live_) sum += blk.bytes;
    const std::size_t live = res_.live_bytes(), pending = res_.pending_free_bytes();
    if (live != sum)
      problem("P3 accounting: live_bytes " + std::to_string(live) + " != sum of live blocks " + std::to_string(sum));
    if (res_.live_block_count() != live_.size())
      problem("P3 accounting: resource tracks " + std::to_string(res_.live_block_count()) +
              " live blocks, client holds " + std::to_string(live_.size()));
    if (pending != res_.pending_per_stream_total())
      problem("P3 accounting: pending_free_bytes " + std::to_string(pending) + " != sum of pending per stream " +
              std::to_string(res_.pending_per_stream_total()));
    if (res_.bytes_outstanding() != live + pending) problem("P3 accounting: bytes_outstanding != live + pending");
    if (pending > (std::size_t{1} << 48) || live > (std::size_t{1} << 48))
      problem("P3 accounting: a counter wrapped (live " + std::to_string(live) + ", pending " +
              std::to_string(pending) + ")");
  }

  /// Runs a protocol call. On an error: P4 checks that nothing changed
  /// (when the call is meant to be atomic), and after an injected fault
  /// that a retry succeeds. Any other error breaks the property.
  template <class Call>
  auto checked(const std::string& what, Call&& call, bool atomic = true) {
    const Snapshot before = snapshot();
    auto r = call();
    if (r.ok()) return r;
    if (atomic && snapshot() != before)
      problem("P4 error atomicity: " + what + " failed (" + r.error().to_string() + ") but changed state: before {" +
              before.str() + "} after {" + snapshot().str() + "}");
    if (!injected(r.error())) {
      problem("unexpected error from " + what + ": " + r.error().to_string());
      return r;
    }
    check_accounting();  // P4: a failing reap loses no pending bytes
    auto retry = call();
    if (!retry.ok())
      problem("P4 error atomicity: retry of " + what + " after the fault cleared failed: " + retry.error().to_string());
    return retry;
  }

  /// A call that must be refused with `kind` and change nothing (P5, misuse).
  template <class Call>
  void refused(const std::string& what, ErrorKind kind, std::optional<Generation> generation, Call&& call) {
    const Snapshot before = snapshot();
    Status st = call();
    if (!st.ok() && injected(st.error())) st = call();  // an armed fault fired first: try again
    if (st.ok()) {
      problem(std::string(kind == ErrorKind::UseAfterFree ? "P5 generation guard: " : "misuse accepted: ") + what +
              " succeeded; expected " + std::string(to_string(kind)));
      return;
    }
    if (st.error().kind != kind || (generation && st.error().generation != *generation))
      problem("wrong error for " + what + ": got " + st.error().to_string() + ", expected " +
              std::string(to_string(kind)));
    if (snapshot() != before)
      problem("P5/P4: refused " + what + " changed state: before {" + before.str() + "} after {" + snapshot().str() +
              "}");
  }

  void run(const AllocateOp& o) {
    const StreamId stream = streams_[o.stream % kClientStreams];
    const std::string blk_name = "b" + std::to_string(names_.size());
    auto r = checked("allocate", [&] {
      label_next_pool_op("alloc " + blk_name);
      return res_.allocate(o.bytes, stream);
    });
    if (!r.ok()) return;
    live_.push_back(r.value());
    names_[r.value().generation.value] = blk_name;
    say("allocate " + std::to_string(o.bytes) + " bytes on " + stream_name(stream) + " -> " + blk_name);
  }

  void run(const BeginLaunchOp& o) {
    const StreamId stream = streams_[o.stream % kClientStreams];
    auto rec = std::make_unique<LaunchRecorder<P>>(stream, o.strict ? RecorderMode::Strict : RecorderMode::Permissive);
    InFlight flight;
    for (const auto& u : o.uses) {
      auto idx = newest(live_.size(), u.block);
      if (!idx) continue;
      const DeviceBlock& blk = live_[*idx];
      // Client discipline: uses in flight are invisible to the resource, so
      // a correct client never overlaps a conflicting use with them.
      if (in_flight(blk, !writes(u.access))) continue;
      rec->use(&blk, u.access);
      flight.uses.emplace_back(BlockId::of(blk), u.access);
    }
    if (flight.uses.empty()) return;
    flight.name = "L" + std::to_string(launches_++);
    std::string text = (o.strict ? "strict launch " : "launch ") + flight.name + " on " + stream_name(stream) + ":";
    for (std::size_t i = 0; i < flight.uses.size(); ++i)
      for (const auto& blk : live_)
        if (BlockId::of(blk) == flight.uses[i].first)
          text += (i ? ", " : " ") + std::string(to_string(flight.uses[i].second)) + " " + name(blk);
    say(text + "  (preflight; enqueue the kernel)");
    auto st = checked("preflight", [&] { return rec->preflight(res_); });
    if (!st.ok()) return;
    std::vector<KernelAccess> accesses;
    for (const auto& u : rec->deduped_uses()) {
      for (const auto& blk : live_)
        if (BlockId::of(blk) == u.block) accesses.push_back(KernelAccess{blk.ptr, blk.bytes, u.access, std::nullopt});
    }
    b_.launch(ref(stream), accesses, flight.name);
    flight.recorder = std::move(rec);
    in_flight_.push_back(std::move(flight));
  }

  void run(const CommitOp& o) {
    if (in_flight_.empty()) return;
    const std::size_t idx = o.launch % in_flight_.size();
    auto& rec = *in_flight_[idx].recorder;
    say("commit " + in_flight_[idx].name);
    // Commit finishes one use after another: atomic only for a single use.
    (void)checked(
        "commit", [&] { return rec.commit(res_); }, rec.deduped_uses().size() == 1);
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(idx));
  }

  void run(const DeallocateOp& o) {
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < live_.size(); ++i)
      if (!in_flight(live_[i], false)) candidates.push_back(i);
    if (candidates.empty()) return;
    const std::size_t idx = candidates[candidates.size() - 1 - o.block % candidates.size()];
    const DeviceBlock blk = live_[idx];
    say("deallocate " + name(blk));
    auto st = checked("deallocate", [&] {
      label_next_pool_op("free " + name(blk));
      return res_.deallocate(blk);
    });
    if (!st.ok()) return;
    live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(idx));
    freed_.push_back(blk);
  }

  void run(const ReapOp&) {
    say("reap_pending");
    auto st = checked(
        "reap_pending", [&] { return res_.reap_pending(); }, false);
    if (st.ok() && res_.pending_free_bytes() != 0)
      problem("P3 accounting: " + std::to_string(res_.pending_free_bytes()) +
              " bytes still pending after a successful reap");
  }

  void run(const SyncStreamOp& o) {
    const StreamId s = streams_[o.stream % kClientStreams];
    say("synchronize " + stream_name(s));
    (void)b_.synchronize_stream(ref(s));
  }

  void run(const StaleUseOp& o) {
    auto idx = newest(freed_.size(), o.block);
    if (!idx) return;
    const DeviceBlock stale = freed_[*idx];
    const BlockId id = BlockId::of(stale);
    const StreamId s = streams_[(o.block + 1) % kClientStreams];
    const std::string what = show(ClientOp{o}) + " (stale " + name(stale) + ")";
    say(what);
    switch (o.how) {
      case StaleHow::PrepareRead:
        refused(what, ErrorKind::UseAfterFree, id.generation,
                [&] { return res_.prepare_block_use(id, s, Access::Read); });
        break;
      case StaleHow::PrepareWrite:
        refused(what, ErrorKind::UseAfterFree, id.generation,
                [&] { return res_.prepare_block_use(id, s, Access::Write); });
        break;
      case StaleHow::FinishRead:
        refused(what, ErrorKind::UseAfterFree, id.generation,
                [&] { return res_.finish_block_use(id, s, Access::Read); });
        break;
      case StaleHow::Deallocate:
        refused(what, ErrorKind::UseAfterFree, id.generation, [&] { return res_.deallocate(stale); });
        break;
      case StaleHow::RecorderWithFresh: {
        // The newest live block at the same address (an ABA pair) is
        // registered first, so a ptr-keyed dedup would swallow the stale id.
        const DeviceBlock* fresh = nullptr;
        for (const auto& blk : live_)
          if (blk.ptr == stale.ptr && !in_flight(blk, false)) fresh = &blk;
        refused(what, ErrorKind::UseAfterFree, id.generation, [&] {
          LaunchRecorder<P> rec(s, RecorderMode::Strict);
          if (fresh) rec.read(fresh);
          rec.read(&stale);
          Status st = rec.preflight(res_);
          rec.abandon();  // nothing is enqueued after this preflight
          return st;
        });
        break;
      }
    }
  }

  void run(const InjectFaultOp& o) {
    say(show(ClientOp{o}));
    b_.arm_fault(o.nth);
  }

  void run(const MisuseOp& o) {
    const StreamId unknown{0xdead};
    say(show(ClientOp{o}));
    switch (o.how) {
      case MisuseHow::ZeroBytes:
        refused("allocate(0)", ErrorKind::Driver, std::nullopt, [&]() -> Status {
          auto r = res_.allocate(0, streams_[0]);
          return r.ok() ? Status{} : Status{r.error()};
        });
        break;
      case MisuseHow::UnknownStreamAllocate:
        refused("allocate on an unknown stream", ErrorKind::StreamMisuse, std::nullopt, [&]() -> Status {
          auto r = res_.allocate(64, unknown);
          return r.ok() ? Status{} : Status{r.error()};
        });
        break;
      case MisuseHow::UnknownStreamPrepare:
      case MisuseHow::WrongDevicePrepare: {
        auto idx = newest(live_.size(), o.block);
        if (!idx) return;
        BlockId id = BlockId::of(live_[*idx]);
        if (o.how == MisuseHow::UnknownStreamPrepare) {
          refused("prepare on an unknown stream", ErrorKind::StreamMisuse, std::nullopt,
                  [&] { return res_.prepare_block_use(id, unknown, Access::Read); });
        } else {
          id.device_ordinal += 1;
          refused("prepare with a block of another device", ErrorKind::Driver, std::nullopt,
                  [&] { return res_.prepare_block_use(id, streams_[0], Access::Read); });
        }
        break;
      }
    }
  }

  B& b_;
  Resource<B, P> res_;
  std::vector<StreamId> streams_;
  std::vector<DeviceBlock> live_;
  std::vector<DeviceBlock> freed_;
  std::deque<InFlight> in_flight_;
  std::vector<std::string> problems_;
  std::vector<std::string> narrative_;
  std::string said_;
  std::map<std::uint64_t, std::string> names_;  // generation -> b<k>
  std::uint32_t launches_ = 0;
};

}  // namespace streamcheck::props
