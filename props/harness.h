// Runs client programs against Resource + LaunchRecorder on any validation
// backend and checks the properties of SPEC §4 after every op:
//   P1 race freedom   - the backend reports no finding (sim: HB checker)
//   P2 data oracle    - every read sees the last write ordered before it
//   P3 accounting     - outstanding = live + pending, pending = Σ per stream,
//                       live = Σ live blocks, and a clean reap leaves 0;
//                       reap ordering: after a successful reap the host is
//                       ordered after every free it released (where the
//                       backend can tell: sim R4 clocks, GPU event queries)
//   P4 error atomicity- a failed call changes nothing; a retry after the
//                       fault clears succeeds; a failing reap loses nothing
//   P5 generation     - stale ids get UseAfterFree and change nothing, also
//                       when the address is live again (an allocation the
//                       driver placed on a live block, a free and
//                       re-allocation racing a finish)
//   P7 budget         - through a BudgetResource: never above the limit, and
//                       a request is refused exactly when it exceeds what
//                       remains, with the exact fields
//   P9 no leaks       - after teardown every event is given back
//   log fidelity      - through a LoggingResource, its log reads back as the
//                       calls made through it, in order, with their outcomes
// The client calls the resource directly or through a decorator (a
// LayerChoice, resource_layer.h), over the debug tier where the layer says
// so and the harness has a guard memory for it (G); the checks read the
// resource underneath, and through the tier the tier's books beside it (P3:
// what it holds, live or quarantined, is what the resource has live) and
// its findings (a false alarm: the client makes no out-of-bounds or stale
// write). Violations are returned as typed values (data), never thrown.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "model/backend.h"
#include "model/kernel_access.h"
#include "model/launch_recorder.h"
#include "model/resource.h"
#include "props/client_program.h"
#include "props/error_text.h"
#include "props/protocol_model.h"
#include "props/resource_layer.h"
#include "props/resource_snapshot.h"
#include "props/violation.h"

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
  { b.new_problems() } -> std::same_as<std::vector<Violation>>;
  b.drain();
};

/// What a backend's last_free() names a free by (reap ordering), where it
/// has one.
template <class B>
struct FreeMarker {
  using type = std::monostate;
};
template <class B>
requires requires(const B& b) { b.last_free(); }
struct FreeMarker<B> {
  using type = typename decltype(std::declval<const B&>().last_free())::value_type;
};

/// `G`: the guard memory type of the debug tier on this backend (built
/// from the backend), for layers with `guarded` set; void where the
/// harness runs no debug tier. `GM`: that tier's mutant, if any.
template <ValidationBackend B, class P = CorrectProtocol, class G = void, GuardMutant GM = GuardMutant::None>
class Harness {
 public:
  explicit Harness(B& backend, const LayerChoice& layer = {})
      : b_(backend),
        res_(backend),
        guard_memory_(guard_memory_for(backend, layer)),
        front_(res_, layer, guard_memory()),
        log_reader_(mutant_name(),
                    layer.kind == LayerChoice::Kind::LoggedBudgeted ? std::optional(layer.budget) : std::nullopt) {
    for (std::uint32_t i = 0; i < kClientStreams; ++i) streams_.push_back(b_.add_stream(fmt::format("s{}", i)));
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
  std::optional<Violation> apply(const ClientOp& op) {
    problems_.clear();
    said_.clear();
    std::visit([this](const auto& o) { this->run(o); }, op);
    if (said_.empty()) {
      // Only hand-written programs get here: generated ones hold no op the
      // model would discard (ProtocolModel::applies).
      ++no_ops_;
      said_ = fmt::format("{}  [no-op]", show(op));
    }
    narrative_.push_back(said_);
    check_accounting();
    check_economy();
    check_log();
    check_tier_findings();
    for (auto& p : b_.new_problems()) problems_.push_back(std::move(p));
    return first_problem();
  }

  /// Commits, frees and reaps everything, lets the device finish, then
  /// checks P1/P2 for the remaining work, P3's final zero and P9.
  std::optional<Violation> finish() {
    problems_.clear();
    // A fault still armed for one kind of call fires in teardown, where
    // such calls are many: a wait fault in the frees of blocks read from
    // several streams (a swallowed failure loses an ordering, M17), a
    // synchronize fault in the final reap, where every stream the client
    // freed on is pending (a failure must put back each stream not
    // synchronized, M8, M18). Other faults are dropped.
    std::optional<FaultCall> kept_fault;
    if constexpr (requires { b_.fault_armed(); })
      if (b_.fault_armed() && armed_call_ != FaultCall::Any) kept_fault = armed_call_;
    b_.disarm_fault();
    while (!in_flight_.empty()) run(CommitOp{0});
    if (kept_fault == FaultCall::WaitEvent) b_.arm_fault(0, backend_call_name(FaultCall::WaitEvent));
    // One attempt per block: a block the resource refuses to free (a broken
    // protocol) must not keep the teardown looping.
    for (std::size_t attempts = model_.live().size(); attempts > 0 && !model_.live().empty(); --attempts)
      run(DeallocateOp{0});
    if (!model_.live().empty()) {
      problem(Property::Teardown, fmt::format("{} blocks could not be deallocated", model_.live().size()));
      while (!model_.live().empty()) model_.deallocated(model_.live().front());
    }
    // The debug tier's quarantine goes back and its last checks are read,
    // as at the end of any run through it.
    if (front_.guarded())
      (void)checked(
          "release the debug tier's quarantine", [&] { return front_.release_quarantine(); }, false);
    if (kept_fault == FaultCall::SynchronizeStream) b_.arm_fault(0, backend_call_name(FaultCall::SynchronizeStream));
    run(ReapOp{});
    check_accounting();
    check_economy();
    check_log();
    check_tier_findings();
    if (res_.bytes_outstanding() != 0)
      problem(Property::P3Accounting,
              fmt::format("{} bytes outstanding after freeing and reaping everything", res_.bytes_outstanding()));
    if (b_.live_event_count() != 0)
      problem(Property::P9NoLeaks, fmt::format("{} events still alive after teardown", b_.live_event_count()));
    b_.drain();
    for (auto& p : b_.new_problems()) problems_.push_back(std::move(p));
    return first_problem();
  }

  /// The resource underneath the layer (the checks read it).
  Resource<B, P>& resource() { return res_; }
  /// What the client calls: the resource or the decorator over it.
  LayeredResource<Resource<B, P>, G, GM>& front() { return front_; }
  const ProtocolModel& model() const { return model_; }
  std::size_t live_count() const { return model_.live().size(); }
  std::size_t freed_count() const { return model_.freed().size(); }
  std::size_t in_flight_count() const { return in_flight_.size(); }
  /// Ops that did nothing (their handles found nothing to act on).
  std::size_t no_ops() const { return no_ops_; }

 private:
  struct InFlight {
    std::unique_ptr<LaunchRecorder<P>> recorder;
    std::string name;
  };
  void problem(Property property, std::string detail) { problems_.push_back(Violation{property, std::move(detail)}); }
  void say(std::string text) { said_ = std::move(text); }
  static std::string name(BlockNumber block) { return fmt::format("b{}", block); }
  static std::string stream_name(StreamId id) { return fmt::format("s{}", id.value); }
  const DeviceBlock& block(BlockNumber n) const { return blocks_.at(n); }
  void label_next_pool_op(const std::string& label) {
    if constexpr (requires { b_.set_op_label(label); }) b_.set_op_label(label);
  }
  std::optional<Violation> first_problem() const {
    if (problems_.empty()) return std::nullopt;
    return problems_.front();
  }
  static bool injected(const ResourceError& e) { return e.injected; }
  std::uint64_t faults_fired() const {
    if constexpr (requires { b_.faults_fired(); })
      return b_.faults_fired();
    else
      return 0;
  }
  typename B::StreamRef ref(StreamId id) const { return *b_.resolve_stream(id); }

  /// The resource's state, with the use events of every live block.
  /// Through the debug tier, the tier's state instead where the two differ:
  /// a failed call may hand its block of the resource back (pending until a
  /// reap) and change nothing the client can observe.
  ResourceSnapshot snapshot() const {
    std::vector<std::uint64_t> ptrs;
    for (BlockNumber n : model_.live()) ptrs.push_back(front_.backend_address(block(n)));
    ResourceSnapshot s = snapshot_of(res_, b_, ptrs);
    if (const auto books = front_.tier_books()) {
      s.live_bytes = books->live_bytes;
      s.live_blocks = books->live_blocks;
      s.pending_free_bytes = 0;
      s.pending_per_stream = 0;
      s.tier = ResourceSnapshot::Tier{books->held_blocks, books->held_bytes};
    }
    return s;
  }

  using GuardMemorySlot = std::conditional_t<std::is_void_v<G>, std::monostate, std::unique_ptr<G>>;
  /// The debug tier's guard memory, for a guarded layer: made by G::create
  /// where it can fail (device memory on the GPU), else built in place.
  static GuardMemorySlot guard_memory_for(B& backend, const LayerChoice& layer) {
    if constexpr (std::is_void_v<G>) {
      return {};
    } else {
      if (!layer.guarded) return nullptr;
      if constexpr (requires { G::create(backend); }) {
        auto made = G::create(backend);
        if (!made) throw std::runtime_error("the debug tier's guard memory: " + made.error().to_string());
        return std::move(made).value();
      } else {
        return std::make_unique<G>(backend);
      }
    }
  }
  G* guard_memory() {
    if constexpr (std::is_void_v<G>)
      return nullptr;
    else
      return guard_memory_.get();
  }

  /// Through the debug tier: the client makes no out-of-bounds or stale
  /// write, so a finding of either kind is a false alarm. (A stale id's
  /// refusal is a host use after free finding: the op meant it.)
  void check_tier_findings() {
    if (!front_.guarded()) return;
    for (const auto& f : front_.tier_findings())
      if (f.kind != GuardFindingKind::HostUseAfterFree) problem(Property::FalseAlarm, f.to_string());
  }

  static std::optional<std::string> mutant_name() {
    if (auto m = mutant_of<P>()) return std::string(info(*m).name);
    return std::nullopt;
  }

  /// Log fidelity: the lines the LoggingResource wrote since the last op
  /// are the calls made through it since (nothing through other layers).
  void check_log() {
    if (!front_.serialises_calls()) return;
    if (auto wrong = log_reader_.advance(front_.log(), front_.journal())) problem(Property::LogFidelity, *wrong);
  }

  /// Event economy (R1, R2): each live block holds its last write (once
  /// written: P-alloc keeps no allocation-ready event) plus one use event
  /// per stream that read it since, and no wait was queued on an event
  /// recorded on the waiting stream.
  void check_economy() {
    for (BlockNumber n : model_.live()) {
      const DeviceBlock& blk = block(n);
      const auto held = res_.pending_use_event_count(front_.backend_address(blk));
      const std::size_t last_write = front_.has_last_write(blk.generation) ? 1 : 0;
      const std::size_t expected = last_write + front_.readers_since_last_write(blk.generation);
      if (held && *held != expected)
        problem(Property::EventEconomy,
                fmt::format("{} holds {} use events; {} and {} reading streams since need {}", name(n), *held,
                            last_write ? "its last write" : "no write yet", expected - last_write, expected));
    }
    if constexpr (requires { b_.self_waits(); }) {
      if (b_.self_waits() != self_waits_seen_)
        problem(Property::EventEconomy, fmt::format("{} waits queued on an event recorded on the waiting stream",
                                                    b_.self_waits() - self_waits_seen_));
      self_waits_seen_ = b_.self_waits();
    }
  }

  /// P3. Through the debug tier, the client's blocks are the tier's, and
  /// the resource underneath holds what the tier's books say it holds.
  void check_accounting() {
    std::size_t sum = 0;
    for (BlockNumber n : model_.live()) sum += block(n).bytes;
    const auto books = front_.tier_books();
    const std::size_t live = books ? books->live_bytes : res_.live_bytes(), pending = res_.pending_free_bytes();
    const std::size_t live_blocks = books ? books->live_blocks : res_.live_block_count();
    const char* who = books ? "the debug tier" : "resource";
    if (live != sum)
      problem(Property::P3Accounting, fmt::format("{}: live_bytes {} != sum of live blocks {}", who, live, sum));
    if (live_blocks != model_.live().size())
      problem(Property::P3Accounting,
              fmt::format("{} tracks {} live blocks, client holds {}", who, live_blocks, model_.live().size()));
    if (books && (books->held_blocks != res_.live_block_count() || books->held_bytes != res_.live_bytes()))
      problem(Property::P3Accounting,
              fmt::format("the debug tier holds {} blocks of {} bytes (live and quarantined, canaries included); the "
                          "resource underneath has {} live blocks of {} bytes",
                          books->held_blocks, books->held_bytes, res_.live_block_count(), res_.live_bytes()));
    if (pending != res_.pending_per_stream_total())
      problem(Property::P3Accounting, fmt::format("pending_free_bytes {} != sum of pending per stream {}", pending,
                                                  res_.pending_per_stream_total()));
    if (res_.bytes_outstanding() != res_.live_bytes() + pending)
      problem(Property::P3Accounting, "bytes_outstanding != live + pending");
    // A pool under the resource (model/pool_backend.h) keeps its own books.
    if constexpr (requires { b_.pool_accounting_error(); })
      if (auto wrong = b_.pool_accounting_error()) problem(Property::P3Accounting, "pool: " + *wrong);
    if (pending > (std::size_t{1} << 48) || live > (std::size_t{1} << 48))
      problem(Property::P3Accounting, fmt::format("a counter wrapped (live {}, pending {})", live, pending));
    if (const auto limit = front_.limit(); limit && front_.budgeted_bytes() > *limit)
      problem(Property::P7Budget,
              fmt::format("{} bytes outstanding above the limit {}", front_.budgeted_bytes(), *limit));
  }

  /// Runs a protocol call. On an error: P4 checks that nothing changed
  /// (when the call is meant to be atomic), and after an injected fault
  /// that a retry succeeds. Any other error breaks the property.
  template <class Call>
  auto checked(const std::string& what, Call&& call, bool atomic = true) {
    const ResourceSnapshot before = snapshot();
    const std::uint64_t fired_before = faults_fired();
    auto r = call();
    if (r.ok()) {
      // P4: a driver call that failed fails the call that made it.
      if (faults_fired() != fired_before)
        problem(Property::P4ErrorAtomicity,
                fmt::format("{} succeeded although an injected fault failed one of its driver calls", what));
      return r;
    }
    if (atomic && snapshot() != before)
      problem(Property::P4ErrorAtomicity,
              fmt::format("{} failed ({}) but changed state: before {{{}}} after {{{}}}", what, r.error().to_string(),
                          to_string(before), to_string(snapshot())));
    if (!injected(r.error())) {
      problem(Property::UnexpectedError, fmt::format("{} failed: {}", what, r.error().to_string()));
      return r;
    }
    check_accounting();  // P4: a failing reap loses no pending bytes
    auto retry = call();
    if (!retry.ok())
      problem(Property::P4ErrorAtomicity,
              fmt::format("retry of {} after the fault cleared failed: {}", what, retry.error().to_string()));
    return retry;
  }

  /// A call that must be refused with `kind` and change nothing (P5, misuse).
  /// `guards_generation`: the call touches a live block's address, so
  /// accepting it breaks P5 even though the expected error is not
  /// UseAfterFree (CollideOp).
  template <class Call>
  void refused(const std::string& what, ErrorKind kind, std::optional<Generation> generation, Call&& call,
               bool guards_generation = false) {
    const bool stale = kind == ErrorKind::UseAfterFree || guards_generation;
    const ResourceSnapshot before = snapshot();
    Status st = call();
    if (!st.ok() && injected(st.error())) st = call();  // an armed fault fired first: try again
    if (st.ok()) {
      problem(stale ? Property::P5GenerationGuard : Property::MisuseAccepted,
              fmt::format("{} succeeded; expected {}", what, to_string(kind)));
      return;
    }
    if (st.error().kind != kind || (generation && st.error().generation != *generation))
      problem(Property::WrongError,
              fmt::format("{}: got {}, expected {}", what, st.error().to_string(), to_string(kind)));
    check_error_text(what, st.error());
    if (snapshot() != before)
      problem(stale ? Property::P5GenerationGuard : Property::P4ErrorAtomicity,
              fmt::format("refused {} changed state: before {{{}}} after {{{}}}", what, to_string(before),
                          to_string(snapshot())));
  }

  /// A new block is what was asked for: its size, stream, device, byte
  /// alignment (allocate takes none; seed 000 gives the byte's, 1) and a
  /// generation above every earlier one (SPEC §2: strictly increasing, so
  /// the null generation 0 is never handed out).
  void check_new_block(const DeviceBlock& blk, std::size_t bytes, StreamId stream) {
    if (blk.bytes != bytes || blk.alloc_stream != stream || blk.device_ordinal != res_.device_ordinal() ||
        blk.align != 1 || blk.state != BlockState::Live || blk.ptr == 0)
      problem(
          Property::P3Accounting,
          fmt::format("allocate {} bytes on {} returned {} bytes on s{} of device {} at {:#x} aligned {}", bytes,
                      stream_name(stream), blk.bytes, blk.alloc_stream.value, blk.device_ordinal, blk.ptr, blk.align));
    if (blk.generation.value <= newest_generation_)
      problem(Property::P5GenerationGuard, fmt::format("a new block got generation {}, after generation {}",
                                                       blk.generation.value, newest_generation_));
    newest_generation_ = std::max(newest_generation_, blk.generation.value);
  }

  /// An error says what it is (props/error_text.h).
  void check_error_text(const std::string& what, const ResourceError& e) {
    if (auto wrong = misreads(e)) problem(Property::WrongError, fmt::format("{}: {}", what, *wrong));
  }

  void run(const AllocateOp& o) {
    const StreamId stream = streams_[o.stream % kClientStreams];
    const std::string blk_name = name(model_.next_block());
    std::size_t bytes = o.bytes;
    if (const auto remaining = budget_remaining(); o.fill_budget && remaining && *remaining > 0) bytes = *remaining;
    if (refused_over_budget(bytes, stream)) return;
    auto r = checked("allocate", [&] {
      label_next_pool_op(fmt::format("alloc {}", blk_name));
      if constexpr (requires { b_.prefer_address(std::uint64_t{}); }) {
        if (o.at_freed_address && !model_.freed().empty())
          b_.prefer_address(front_.backend_address(block(model_.freed().back())));
      }
      return front_.allocate(bytes, stream);
    });
    if (!r.ok()) return;
    check_new_block(r.value(), bytes, stream);
    blocks_[model_.allocated()] = r.value();
    say(fmt::format("allocate {} bytes on {} -> {}", bytes, stream_name(stream), blk_name));
  }

  /// P7: a request above what remains of the budget is refused, exactly
  /// (checked by over_budget); true when `bytes` is such a request.
  bool refused_over_budget(std::size_t bytes, StreamId stream) {
    const auto remaining = budget_remaining();
    if (!remaining || bytes <= *remaining) return false;
    say(fmt::format("allocate {} bytes on {} (over budget: {} of {} remain)", bytes, stream_name(stream), *remaining,
                    *front_.limit()));
    over_budget(bytes, *remaining, stream);
    return true;
  }

  /// What remains of the budget, through a BudgetResource.
  std::optional<std::size_t> budget_remaining() const {
    const auto limit = front_.limit();
    if (!limit) return std::nullopt;
    const std::size_t used = front_.budgeted_bytes();
    return used >= *limit ? 0 : *limit - used;
  }

  /// P7: an allocation over the budget is refused with the exact request
  /// and remainder, and changes nothing.
  void over_budget(std::size_t bytes, std::size_t remaining, StreamId stream) {
    const ResourceSnapshot before = snapshot();
    auto r = front_.allocate(bytes, stream);
    if (!r.ok() && injected(r.error())) r = front_.allocate(bytes, stream);  // an armed fault fired first
    if (r.ok()) {
      problem(Property::P7Budget, fmt::format("allocate {} bytes succeeded with {} of the budget {} remaining", bytes,
                                              remaining, *front_.limit()));
      blocks_[model_.allocated()] = r.value();  // the client holds it now: teardown frees it
      return;
    }
    const ResourceError& e = r.error();
    check_error_text("allocate over budget", e);
    if (e.kind != ErrorKind::OutOfBudget || e.requested != bytes || e.remaining != remaining)
      problem(Property::P7Budget, fmt::format("allocate {} bytes with {} remaining: got {}, expected out of budget "
                                              "(requested {}, remaining {})",
                                              bytes, remaining, e.to_string(), bytes, remaining));
    if (snapshot() != before)
      problem(Property::P4ErrorAtomicity, fmt::format("refused allocate changed state: before {{{}}} after {{{}}}",
                                                      to_string(before), to_string(snapshot())));
  }

  void run(const BeginLaunchOp& o) {
    const StreamId stream = streams_[o.stream % kClientStreams];
    auto uses = model_.launch_uses(o);
    if (uses.empty()) return;
    auto rec = std::make_unique<LaunchRecorder<P>>(stream, o.strict ? RecorderMode::Strict : RecorderMode::Permissive);
    for (const auto& [n, access] : uses) rec->use(&block(n), access);
    InFlight flight{nullptr, fmt::format("L{}", launches_++)};
    std::string text;
    for (const auto& [n, access] : uses)
      text += fmt::format("{}{} {}", text.empty() ? " " : ", ", to_string(access), name(n));
    say(fmt::format("{}{} on {}:{}  (preflight; enqueue the kernel)", o.strict ? "strict launch " : "launch ",
                    flight.name, stream_name(stream), text));
    check_dedup(*rec, uses);
    auto st = checked("preflight", [&] { return rec->preflight(front_); });
    if (!st.ok()) return;
    // The kernel touches what the client asked for, not what the recorder
    // under test kept of it: a dedup that drops or weakens a use must show
    // as a race, not shrink the kernel with it.
    std::vector<KernelAccess> accesses;
    for (const auto& [n, access] : kernel_accesses(uses))
      accesses.push_back(KernelAccess{block(n).ptr, block(n).bytes, access, std::nullopt});
    b_.launch(ref(stream), accesses, flight.name);
    // A logged client logs the kernels it launches; names a trace cannot
    // hold as they are (a template, a keyword, a leading digit) too.
    std::vector<std::pair<const DeviceBlock*, Access>> logged_uses;
    for (const auto& [n, access] : uses) logged_uses.emplace_back(&block(n), access);
    // Now and then a buffer the resource does not know (a null block) or a
    // kernel with no buffer at all: the log must say it cannot replay them.
    if (launches_ % 5 == 3) logged_uses.emplace(logged_uses.begin(), nullptr, Access::Read);
    if (launches_ % 7 == 6) logged_uses.clear();
    front_.note_launch(kernel_name(launches_), stream, logged_uses);
    flight.recorder = std::move(rec);
    in_flight_.push_back(std::move(flight));
    model_.launched(LaunchUses{std::move(uses)});
  }

  static std::string kernel_name(std::uint32_t n) {
    switch (n % 5) {
      case 4:
        return "writes";  // an inner word of the trace language
      case 1:
        return fmt::format("scale<float,\r\n {}>", n);
      case 2:
        return fmt::format("{}th_pass", n);
      case 3:
        return "launch";
      default:
        return fmt::format("L{}.aA0-zZ9_", n);
    }
  }

  /// P6: the recorder acts on one use per block with the strongest access
  /// the client registered for it.
  void check_dedup(const LaunchRecorder<P>& rec, const std::vector<std::pair<BlockNumber, Access>>& uses) {
    const auto merged = kernel_accesses(uses);
    const auto deduped = rec.deduped_uses();
    bool same = deduped.size() == merged.size();
    for (const auto& u : deduped) {
      const auto n = std::find_if(merged.begin(), merged.end(),
                                  [&](const auto& m) { return BlockId::of(block(m.first)) == u.block; });
      same = same && n != merged.end() && n->second == u.access;
    }
    if (!same)
      problem(Property::P6RecorderContracts,
              fmt::format("the recorder keeps {} uses for {} blocks, or not with their strongest access",
                          deduped.size(), merged.size()));
  }

  /// One access per block, merged here rather than by model/'s own
  /// helpers (combine, reads, writes), which are under test too.
  static std::map<BlockNumber, Access> kernel_accesses(const std::vector<std::pair<BlockNumber, Access>>& uses) {
    std::map<BlockNumber, std::pair<bool, bool>> read_write;  // block -> (reads, writes)
    for (const auto& [n, access] : uses) {
      auto& [r, w] = read_write[n];
      r = r || access != Access::Write;
      w = w || access != Access::Read;
    }
    std::map<BlockNumber, Access> merged;
    for (const auto& [n, rw] : read_write)
      merged[n] = rw.first && rw.second ? Access::ReadWrite : rw.second ? Access::Write : Access::Read;
    return merged;
  }

  void run(const CommitOp& o) {
    const auto idx = model_.launch_to_commit(o);
    if (!idx) return;
    auto& rec = *in_flight_[*idx].recorder;
    say(fmt::format("commit {}", in_flight_[*idx].name));
    // Commit finishes one use after another: atomic only for a single use.
    (void)checked(
        "commit", [&] { return rec.commit(front_); }, rec.deduped_uses().size() == 1);
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(*idx));
    model_.committed(*idx);
  }

  void run(const DeallocateOp& o) {
    const auto n = model_.block_to_free(o);
    if (!n) return;
    const DeviceBlock blk = block(*n);
    say(fmt::format("deallocate {}", name(*n)));
    auto st = checked("deallocate", [&] {
      label_next_pool_op(fmt::format("free {}", name(*n)));
      return front_.deallocate(blk);
    });
    if (!st.ok()) return;
    model_.deallocated(*n);
    note_free(name(*n));
  }

  /// Remembers the free the backend just enqueued, for reap's promise.
  void note_free(const std::string& block_name) {
    if constexpr (requires { b_.last_free(); }) {
      if (auto op = b_.last_free()) unreaped_frees_.push_back({*op, block_name});
    }
  }

  void run(const ReapOp&) {
    say("reap_pending");
    auto st = checked(
        "reap_pending", [&] { return front_.reap_pending(); }, false);
    if (st.ok() && res_.pending_free_bytes() != 0)
      problem(Property::P3Accounting,
              fmt::format("{} bytes still pending after a successful reap", res_.pending_free_bytes()));
    if constexpr (requires { b_.last_free(); }) {
      if (!st.ok()) return;
      // P3 reap ordering (R4): the host may reuse the memory of every free
      // the reap released, so it must be ordered after each of them.
      for (const auto& f : unreaped_frees_)
        if (!b_.host_after_free(f.op))
          problem(Property::P3ReapOrdering,
                  fmt::format("reap_pending succeeded but the host is not ordered after the free of {}", f.block));
      unreaped_frees_.clear();
    }
  }

  void run(const SyncStreamOp& o) {
    const StreamId s = streams_[o.stream % kClientStreams];
    say(fmt::format("synchronize {}", stream_name(s)));
    (void)b_.synchronize_stream(ref(s));
  }

  void run(const StaleUseOp& o) {
    const auto n = model_.stale_block(o);
    if (!n) return;
    const DeviceBlock stale = block(*n);
    const BlockId id = BlockId::of(stale);
    const StreamId s = streams_[(o.block + 1) % kClientStreams];
    const std::string what = fmt::format("{} (stale {})", show(ClientOp{o}), name(*n));
    say(what);
    switch (o.how) {
      case StaleHow::PrepareRead:
        refused(what, ErrorKind::UseAfterFree, id.generation,
                [&] { return front_.prepare_block_use(id, s, Access::Read); });
        break;
      case StaleHow::PrepareWrite:
        refused(what, ErrorKind::UseAfterFree, id.generation,
                [&] { return front_.prepare_block_use(id, s, Access::Write); });
        break;
      case StaleHow::FinishRead:
        refused(what, ErrorKind::UseAfterFree, id.generation,
                [&] { return front_.finish_block_use(id, s, Access::Read); });
        break;
      case StaleHow::Deallocate:
        refused(what, ErrorKind::UseAfterFree, id.generation, [&] { return front_.deallocate(stale); });
        break;
      case StaleHow::Record:
        refused(what, ErrorKind::UseAfterFree, id.generation, [&] { return front_.record_block_use(stale, s); });
        break;
      case StaleHow::RecorderWithFresh: {
        // The newest live block at the same address (an ABA pair) is
        // registered first, so a ptr-keyed dedup would swallow the stale id.
        const DeviceBlock* fresh = nullptr;
        for (BlockNumber live : model_.live())
          if (block(live).ptr == stale.ptr && !model_.in_flight_use(live, false)) fresh = &block(live);
        refused(what, ErrorKind::UseAfterFree, id.generation, [&] {
          LaunchRecorder<P> rec(s, RecorderMode::Strict);
          if (fresh) rec.read(fresh);
          rec.read(&stale);
          Status st = rec.preflight(front_);
          rec.abandon();  // nothing is enqueued after this preflight
          return st;
        });
        break;
      }
    }
  }

  void run(const CollideOp& o) {
    const auto n = model_.live_block(o.block);
    if (!n) return;
    const StreamId stream = streams_[o.stream % kClientStreams];
    const std::string what = fmt::format("allocate {} bytes on {} while the driver returns {}'s address", o.bytes,
                                         stream_name(stream), name(*n));
    say(what);
    if (refused_over_budget(o.bytes, stream)) return;  // the budget refuses before the driver is asked
    if constexpr (requires { b_.arm_collision(std::uint64_t{}); }) {
      const std::uint64_t live_ptr = front_.backend_address(block(*n));
      refused(
          what, ErrorKind::Driver, std::nullopt,
          [&]() -> Status {
            b_.arm_collision(live_ptr);
            auto r = front_.allocate(o.bytes, stream);
            if (!r.ok()) return r.error();
            blocks_[model_.allocated()] = r.value();  // accepted (a broken protocol): the client holds it now
            return {};
          },
          /*guards_generation=*/true);
    } else {
      say(what + "  [the backend cannot return a live address: not run]");
    }
  }

  void run(const RacingReuseOp& o) {
    const auto n = model_.block_to_reuse(o);
    if (!n) return;
    if constexpr (requires { b_.on_next_call([] {}); }) {
      if (front_.guarded()) {
        say(show(ClientOp{o}) +
            "  [the debug tier holds its lock across its calls into the resource: no other "
            "thread's call can land inside one; not run]");
        return;
      }
      const DeviceBlock old = block(*n);
      const BlockId id = BlockId::of(old);
      const StreamId s = streams_[o.stream % kClientStreams];
      b_.disarm_fault();  // the interleaving is the point here, not a fault
      say(fmt::format(
          "{} use of {} on {}: prepare, then finish; inside the finish another thread frees {} and "
          "allocates {} bytes on {} again",
          to_string(o.access), name(*n), stream_name(s), name(*n), old.bytes, stream_name(old.alloc_stream)));
      auto prepared = checked("prepare", [&] { return front_.prepare_block_use(id, s, o.access); });
      if (!prepared.ok()) return;
      std::optional<BlockNumber> reused;
      std::optional<ResourceSnapshot> after_other_thread;
      // The other thread calls what the client calls, unless that layer
      // serialises calls (LoggingResource holds its lock across them, so
      // this interleaving cannot happen through it): then the resource.
      auto other_deallocate = [&](const DeviceBlock& blk) {
        return front_.serialises_calls() ? res_.deallocate(blk) : front_.deallocate(blk);
      };
      auto other_allocate = [&](std::size_t bytes, StreamId stream) {
        return front_.serialises_calls() ? res_.allocate(bytes, stream) : front_.allocate(bytes, stream);
      };
      // A thread arriving while the finish holds the core's block lock (it
      // re-records an event in place there: P-rerecord) waits for it: the
      // other thread's calls land at the first backend call outside it.
      bool waited_for_the_lock = false;
      std::function<void()> other_thread = [&] {
        if (res_.block_map_locked()) {
          waited_for_the_lock = true;
          b_.on_next_call(other_thread);
          return;
        }
        label_next_pool_op(fmt::format("free {}", name(*n)));
        if (!checked("deallocate (other thread)", [&] { return other_deallocate(old); }).ok()) return;
        model_.deallocated(*n);
        note_free(name(*n));
        after_other_thread = snapshot();
        // Through a budget the freed bytes stay counted until a reap: the
        // other thread then only frees.
        if (auto remaining = budget_remaining(); remaining && old.bytes > *remaining) return;
        if constexpr (requires { b_.prefer_address(std::uint64_t{}); }) b_.prefer_address(old.ptr);
        label_next_pool_op(fmt::format("alloc {}", name(model_.next_block())));
        auto r = checked("allocate (other thread)", [&] { return other_allocate(old.bytes, old.alloc_stream); });
        if (!r.ok()) return;
        reused = model_.allocated();
        blocks_[*reused] = r.value();
        after_other_thread = snapshot();
      };
      b_.on_next_call(other_thread);
      const Status finished = front_.finish_block_use(id, s, o.access);
      b_.on_next_call(nullptr);  // not fired when the finish made no backend call outside the lock
      if (!after_other_thread) {
        const bool live = std::find(model_.live().begin(), model_.live().end(), *n) != model_.live().end();
        if (live && waited_for_the_lock) {
          // The finish made its calls under the lock: the other thread got
          // the lock after it, and frees and allocates now.
          say("  [the finish made its backend calls under the resource's lock: the other thread waited for it and "
              "runs after it]");
          if (!finished.ok() && !finished.error().injected)
            problem(Property::UnexpectedError,
                    fmt::format("finish of live {} failed: {}", name(*n), finished.error().to_string()));
          other_thread();
        } else if (live) {
          problem(Property::UnexpectedError,
                  fmt::format("finish of live {} made no backend call ({})", name(*n),
                              finished.ok() ? std::string("succeeded") : finished.error().to_string()));
        }
        return;
      }
      const std::string meanwhile = reused ? fmt::format("after {} took its place{}", name(*reused),
                                                         block(*reused).ptr == old.ptr ? " at the same address" : "")
                                           : std::string("after it was freed");
      if (finished.ok())
        problem(Property::P5GenerationGuard, fmt::format("finish of freed {} succeeded {}", name(*n), meanwhile));
      else if (finished.error().kind != ErrorKind::UseAfterFree || finished.error().generation != id.generation)
        problem(Property::WrongError, fmt::format("finish of freed {}: got {}, expected use after free", name(*n),
                                                  finished.error().to_string()));
      if (snapshot() != *after_other_thread)
        problem(Property::P5GenerationGuard,
                fmt::format("the stale finish of {} changed state {}: before {{{}}} after {{{}}}", name(*n), meanwhile,
                            to_string(*after_other_thread), to_string(snapshot())));
    } else {
      say(show(ClientOp{o}) + "  [the backend cannot interleave a second thread: not run]");
    }
  }

  void run(const InjectFaultOp& o) {
    say(show(ClientOp{o}));
    b_.arm_fault(o.nth, backend_call_name(o.call));
    armed_call_ = o.call;
  }

  void run(const MisuseOp& o) {
    const StreamId unknown{0xdead};
    auto refused_allocation = [&](const std::string& what, ErrorKind kind, std::size_t bytes, StreamId stream) {
      // A budget that cannot hold the request refuses it first (P7).
      if (auto remaining = budget_remaining(); remaining && bytes > *remaining) kind = ErrorKind::OutOfBudget;
      refused(what, kind, std::nullopt, [&]() -> Status {
        auto r = front_.allocate(bytes, stream);
        return r.ok() ? Status{} : Status{r.error()};
      });
    };
    switch (o.how) {
      case MisuseHow::ZeroBytes:
        say(show(ClientOp{o}));
        refused_allocation("allocate(0)", ErrorKind::Driver, 0, streams_[0]);
        break;
      case MisuseHow::UnknownStreamAllocate:
        say(show(ClientOp{o}));
        refused_allocation("allocate on an unknown stream", ErrorKind::StreamMisuse, 64, unknown);
        break;
      case MisuseHow::UnknownStreamPrepare:
      case MisuseHow::WrongDevicePrepare:
      case MisuseHow::UnknownStreamFinish:
      case MisuseHow::WrongDeviceFinish:
      case MisuseHow::UnknownStreamDeallocate:
      case MisuseHow::WrongDeviceDeallocate: {
        const auto n = model_.misused_block(o);
        if (!n) return;
        say(fmt::format("{} ({})", show(ClientOp{o}), name(*n)));
        DeviceBlock forged = block(*n);
        const bool unknown_stream = o.how == MisuseHow::UnknownStreamPrepare ||
                                    o.how == MisuseHow::UnknownStreamFinish ||
                                    o.how == MisuseHow::UnknownStreamDeallocate;
        if (o.how == MisuseHow::UnknownStreamDeallocate) forged.alloc_stream = unknown;
        if (!unknown_stream) forged.device_ordinal += 1;
        const BlockId id = BlockId::of(forged);
        const StreamId use_stream = unknown_stream ? unknown : streams_[0];
        const ErrorKind kind = unknown_stream ? ErrorKind::StreamMisuse : ErrorKind::Driver;
        const std::string what = show(ClientOp{o});
        refused(what, kind, std::nullopt, [&] {
          switch (o.how) {
            case MisuseHow::UnknownStreamPrepare:
            case MisuseHow::WrongDevicePrepare:
              return front_.prepare_block_use(id, use_stream, Access::Read);
            case MisuseHow::UnknownStreamFinish:
            case MisuseHow::WrongDeviceFinish:
              return front_.finish_block_use(id, use_stream, Access::Write);
            default:
              return front_.deallocate(forged);
          }
        });
        break;
      }
      case MisuseHow::RecorderUseAfterPreflight:
      case MisuseHow::RecorderUntrackedStrict:
      case MisuseHow::RecorderCommitWithoutPreflight:
      case MisuseHow::RecorderCommitTwice:
      case MisuseHow::RecorderForgedCopy: {
        const auto n = model_.misused_block(o);
        if (!n) return;
        say(fmt::format("{} ({})", show(ClientOp{o}), name(*n)));
        recorder_contract(o.how, block(*n), streams_[(o.block + 1) % kClientStreams]);
        break;
      }
    }
  }

  /// P6 recorder contracts (SPEC §2, seed 001) on a throwaway recorder of
  /// live block `blk`: what the recorder must refuse, refused without a
  /// change to the resource, and a drop without commit reported exactly when
  /// work may have been enqueued (after a successful preflight).
  void recorder_contract(MisuseHow how, const DeviceBlock& blk, StreamId s) {
    const std::size_t dropped_before = LaunchRecorder<P>::dropped_without_commit();
    bool expect_drop = false;
    std::ostringstream drop_report;
    {
      // The drop report goes to stderr: caught here (the guard outlives the
      // recorder) so that runs stay quiet and the report can be read.
      struct StderrTo {
        std::streambuf* saved;
        explicit StderrTo(std::ostream& out) : saved(std::cerr.rdbuf(out.rdbuf())) {}
        StderrTo(const StderrTo&) = delete;
        StderrTo& operator=(const StderrTo&) = delete;
        ~StderrTo() { std::cerr.rdbuf(saved); }
      } stderr_to(drop_report);
      const RecorderMode mode =
          how == MisuseHow::RecorderUntrackedStrict ? RecorderMode::Strict : RecorderMode::Permissive;
      LaunchRecorder<P> rec(s, mode);
      auto contract = [&](bool holds, std::string_view what) {
        if (!holds)
          problem(Property::P6RecorderContracts, fmt::format("{}: {}", show(ClientOp{MisuseOp{how, 0}}), what));
      };
      switch (how) {
        case MisuseHow::RecorderUseAfterPreflight: {
          // An empty preflight freezes the set of uses too (a kernel whose
          // buffers the client forgot to register before preflight).
          const bool empty = (blk.generation.value & 2) != 0;
          if (!empty) rec.read(&blk);
          if (!checked("preflight", [&] { return rec.preflight(front_); }).ok()) return rec.abandon();
          contract(rec.preflighted(), "preflighted() is false after a successful preflight");
          rec.write(&blk);  // too late: preflight queued the waits for a read only
          contract(rec.recorded_count() == (empty ? 0 : 1), "a use registered after preflight was recorded");
          refused("commit after a use registered after preflight", ErrorKind::StreamMisuse, std::nullopt,
                  [&] { return rec.commit(front_); });
          contract(!rec.committed(), "committed() is true after a refused commit");
          // Preflighted, never committed: the work may run unordered, and a
          // drop says so, unless the client abandons the launch first (or
          // there was nothing to record).
          expect_drop = !empty && (blk.generation.value & 1) == 0;
          if (!expect_drop) rec.abandon();
          break;
        }
        case MisuseHow::RecorderUntrackedStrict: {
          const bool external = (blk.generation.value & 1) != 0;
          rec.read(&blk);
          if (external)
            rec.read(nullptr, /*external=*/true);
          else
            rec.use(nullptr, Access::Write);
          const Status st = rec.preflight(front_);
          refused("preflight of a strict recorder holding an untracked buffer", ErrorKind::StreamMisuse, std::nullopt,
                  [&] { return rec.preflight(front_); });
          contract(!rec.preflighted(), "preflighted() is true after a refused preflight");
          // The refusal says what to do, which depends on where the buffer came from.
          contract(!st.ok() && (st.error().message.find("external memory") != std::string::npos) == external,
                   external ? "the refusal of external memory does not say so"
                            : "the refusal of an untracked buffer calls it external memory");
          break;
        }
        case MisuseHow::RecorderForgedCopy: {
          // A copy of the block that claims another address (or device):
          // the recorder must not merge it into the real one.
          DeviceBlock forged = blk;
          const bool other_device = (blk.generation.value & 1) != 0;
          if (other_device)
            forged.device_ordinal += 1;
          else
            forged.ptr += 1;
          rec.read(&blk);
          rec.read(&forged);
          refused("preflight of a recorder holding a forged copy of a block",
                  other_device ? ErrorKind::Driver : ErrorKind::UseAfterFree, std::nullopt,
                  [&] { return rec.preflight(front_); });
          break;
        }
        case MisuseHow::RecorderCommitWithoutPreflight:
          rec.read_write(&blk);
          refused("commit without preflight", ErrorKind::StreamMisuse, std::nullopt,
                  [&] { return rec.commit(front_); });
          contract(!rec.committed(), "committed() is true after a refused commit");
          break;
        case MisuseHow::RecorderCommitTwice: {
          rec.read(nullptr);  // a permissive recorder skips an untracked buffer
          rec.read(&blk);
          contract(rec.recorded_count() == 1, "a permissive recorder recorded an untracked buffer");
          if (!checked("preflight", [&] { return rec.preflight(front_); }).ok()) return rec.abandon();
          if (!checked(
                   "commit", [&] { return rec.commit(front_); }, false)
                   .ok())
            return rec.abandon();
          contract(rec.committed(), "committed() is false after a successful commit");
          refused("a second commit", ErrorKind::StreamMisuse, std::nullopt, [&] { return rec.commit(front_); });
          break;
        }
        default:
          return;
      }
    }
    const std::size_t dropped = LaunchRecorder<P>::dropped_without_commit() - dropped_before;
    if (dropped != (expect_drop ? 1u : 0u) ||
        (expect_drop && drop_report.str().find("dropped without commit") == std::string::npos))
      problem(Property::P6RecorderContracts,
              fmt::format("{}: the recorder reported {} drops without commit (\"{}\"), expected {}",
                          show(ClientOp{MisuseOp{how, 0}}), dropped, drop_report.str(), expect_drop ? 1 : 0));
  }

  B& b_;
  Resource<B, P> res_;
  GuardMemorySlot guard_memory_;  // before front_, which holds the debug tier over it
  LayeredResource<Resource<B, P>, G, GM> front_;
  LogReader log_reader_;
  ProtocolModel model_;
  std::map<BlockNumber, DeviceBlock> blocks_;  // live and freed
  std::vector<StreamId> streams_;
  std::deque<InFlight> in_flight_;  // parallel to model_.in_flight()
  std::vector<Violation> problems_;
  struct UnreapedFree {
    typename FreeMarker<B>::type op;
    std::string block;
  };
  std::vector<UnreapedFree> unreaped_frees_;  // frees since the last successful reap (reap ordering)
  std::vector<std::string> narrative_;
  std::string said_;
  std::uint32_t launches_ = 0;
  std::size_t no_ops_ = 0;
  std::size_t self_waits_seen_ = 0;
  std::uint64_t newest_generation_ = 0;
  FaultCall armed_call_ = FaultCall::Any;  // of the last fault armed
};

}  // namespace streamcheck::props
