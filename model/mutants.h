// Protocol variants: the correct protocol, the mutants M1..M18 and M22
// (SPEC §5) and the concurrency mutants M19..M21 (P8).
//
// A protocol is a type with `static constexpr bool has(MutantId)`. The core
// tests it with `if constexpr`, so the correct build carries no trace of any
// mutant. Tools pick a variant at run time with `with_protocol`, which
// dispatches to the matching instantiation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace streamcheck {

enum class MutantId : std::uint8_t {
  M1 = 1,
  M2,
  M3,
  M4,
  M5,
  M6,
  M7,
  M8,
  M9,
  M10,
  M11,
  M12,
  M13,
  M14,
  M15,
  M16,
  M17,
  M18,
  // Concurrency mutants: wrong only when host threads interleave, so no
  // single-threaded property can see them; P8 kills them
  // (tests/props/test_concurrency_sim.cpp). Not in kMutants, whose users
  // (explore --mutant, the counterexample pages, GPU validation) replay
  // single-threaded programs.
  M19,
  M20,
  M21,
  // Added with P-elide (issue 16); a single-threaded protocol mutant like
  // M1..M18, listed in kMutants after them.
  M22
};

template <MutantId... Ids>
struct MutantSet {
  static constexpr bool has(MutantId m) { return ((m == Ids) || ...); }
  static constexpr bool is_correct = sizeof...(Ids) == 0;
};

using CorrectProtocol = MutantSet<>;

struct MutantInfo {
  MutantId id;
  std::string_view name;
  std::string_view description;
};

inline constexpr std::array<MutantInfo, 19> kMutants{{
    {MutantId::M1, "M1", "a writing prepare skips the waits on outstanding reads"},
    {MutantId::M2, "M2", "a reading prepare skips the wait on last_write"},
    {MutantId::M3, "M3", "no allocation-ready event: a first use on another stream does not wait for the allocation"},
    {MutantId::M4, "M4", "deallocate skips the waits on outstanding reads"},
    {MutantId::M5, "M5", "finish(Read) replaces last_write instead of appending a read"},
    {MutantId::M6, "M6", "the same-stream skip compares the event's stream with the alloc stream, not the use stream"},
    {MutantId::M7, "M7", "reap resets the pending total to 0 instead of subtracting"},
    {MutantId::M8, "M8", "reap forgets unsynchronized entries when a sync fails"},
    {MutantId::M9, "M9", "recorder dedup keyed on ptr alone"},
    {MutantId::M10, "M10", "deallocate removes the entry before its waits succeed"},
    {MutantId::M11, "M11", "one event per block, re-recorded on every read"},
    // M12-M15: the classes issue 11's reviewers found the M1-M11 suite
    // missing (docs/MUTATION.md).
    {MutantId::M12, "M12", "a successful reap synchronizes the first pending stream for every entry"},
    {MutantId::M13, "M13", "allocate overwrites the live entry when the backend returns a still-live address"},
    {MutantId::M14, "M14", "the budget compares a request with the whole limit, not with what remains"},
    {MutantId::M15, "M15", "finish re-validates the address but not the generation after recording its event"},
    // M16-M18: classes the mutation run of model/ found the M1-M15 suite
    // missing (docs/MUTATION.md).
    {MutantId::M16, "M16", "finish(Read) keeps the earlier read events of its stream (no read subsumption)"},
    {MutantId::M17, "M17", "a failed wait on an outstanding read is ignored"},
    {MutantId::M18, "M18", "reap goes on synchronizing after a failed synchronization"},
    // M22: P-elide's one way to go wrong (a wait skipped that is needed).
    {MutantId::M22, "M22",
     "a re-recorded event keeps its waiters: a stream that waited on its old record skips the wait on the new one"},
}};

inline constexpr std::array<MutantInfo, 3> kConcurrencyMutants{{
    {MutantId::M19, "M19", "deallocate adds to the pending total outside the block map's lock, by a load then a store"},
    {MutantId::M20, "M20",
     "reap drains the pending map in two locked steps (copy, then clear): a deallocate between them is lost"},
    {MutantId::M21, "M21",
     "deallocate drops the lock between validating a block and removing it, and does not validate again"},
}};

constexpr const MutantInfo& info(MutantId id) {
  for (const auto& m : kMutants)
    if (m.id == id) return m;
  for (const auto& m : kConcurrencyMutants)
    if (m.id == id) return m;
  throw std::invalid_argument("info: unknown mutant id " + std::to_string(static_cast<int>(id)));
}
/// "M1..M18, M22": the protocol mutants a single-threaded tool accepts.
inline constexpr std::string_view kMutantNames = "M1..M18, M22";

inline std::optional<MutantId> parse_mutant(std::string_view name) {
  for (const auto& m : kMutants)
    if (m.name == name) return m.id;
  return std::nullopt;
}

/// Mutants of PoolResource's pool (model/pool_backend.h), a protocol of their
/// own: a PooledBackend is built with a PoolMutantSet, the Resource over it
/// with a MutantSet, so each suite names the layer it breaks.
enum class PoolMutantId : std::uint8_t { PM1 = 1, PM2, PM3, PM4, PM5 };

template <PoolMutantId... Ids>
struct PoolMutantSet {
  static constexpr bool has(PoolMutantId m) { return ((m == Ids) || ...); }
  static constexpr bool is_correct = sizeof...(Ids) == 0;
};

using CorrectPool = PoolMutantSet<>;

struct PoolMutantInfo {
  PoolMutantId id;
  std::string_view name;
  std::string_view description;
};

inline constexpr std::array<PoolMutantInfo, 5> kPoolMutants{{
    {PoolMutantId::PM1, "PM1",
     "a merge of another stream's free list relabels its blocks as the receiver's, dropping their free events"},
    {PoolMutantId::PM2, "PM2", "a block freed on another stream is handed out without a wait on its free event"},
    {PoolMutantId::PM3, "PM3",
     "free lists keyed by a stream handle the backend reuses after the stream is destroyed, not by its identity"},
    {PoolMutantId::PM4, "PM4", "bucket rounding wraps for requests near the size limit instead of refusing them"},
    {PoolMutantId::PM5, "PM5",
     "free puts the block on its list before recording the free event, and leaves it there when the record fails"},
}};

inline std::optional<PoolMutantId> parse_pool_mutant(std::string_view name) {
  for (const auto& m : kPoolMutants)
    if (m.name == name) return m.id;
  return std::nullopt;
}

/// The protocol a resource (or a decorator) was built with: its `Protocol`
/// member type where it has one, else the correct protocol. Decorators read
/// it so that one MutantSet selects the variant of every layer (M14).
template <class R>
struct protocol_of {
  using type = CorrectProtocol;
};
template <class R>
requires requires { typename R::Protocol; }
struct protocol_of<R> {
  using type = typename R::Protocol;
};
template <class R>
using protocol_of_t = typename protocol_of<R>::type;

/// Every protocol mutant id (M1..M22) and every pool mutant id (PM1..PM5),
/// in order: the enums' values, so nothing lists them a second time.
template <class Id, std::size_t N>
constexpr std::array<Id, N> ids_one_to() {
  std::array<Id, N> ids{};
  for (std::size_t i = 0; i < N; ++i) ids[i] = static_cast<Id>(i + 1);
  return ids;
}
inline constexpr auto kEveryMutantId = ids_one_to<MutantId, 22>();
inline constexpr auto kEveryPoolMutantId = ids_one_to<PoolMutantId, 5>();
static_assert(kEveryMutantId.back() == MutantId::M22 && kEveryPoolMutantId.back() == PoolMutantId::PM5,
              "a new mutant id is dispatched only once kEveryMutantId / kEveryPoolMutantId count it");

constexpr const PoolMutantInfo& info(PoolMutantId id) {
  for (const auto& m : kPoolMutants)
    if (m.id == id) return m;
  throw std::invalid_argument("info: unknown pool mutant id " + std::to_string(static_cast<int>(id)));
}

/// The protocol type of a set of ids of one kind: MutantSet for the core's
/// mutants, PoolMutantSet for the pool's.
template <class Id>
struct protocol_sets;
template <>
struct protocol_sets<MutantId> {
  template <MutantId... Ids>
  using set = MutantSet<Ids...>;
};
template <>
struct protocol_sets<PoolMutantId> {
  template <PoolMutantId... Ids>
  using set = PoolMutantSet<Ids...>;
};

namespace detail {

template <class Protocol, class Result, class Fn>
Result call_with_protocol(Fn& fn) {
  return fn.template operator()<Protocol>();
}

template <auto... Ids, class Id, class Fn>
decltype(auto) with_protocol_among(std::optional<Id> mutant, Fn& fn) {
  using Sets = protocol_sets<Id>;
  using Correct = typename Sets::template set<>;
  if (!mutant) return fn.template operator()<Correct>();
  using Result = decltype(fn.template operator()<Correct>());
  static constexpr std::array<Id, sizeof...(Ids)> kIds{Ids...};
  static constexpr std::array<Result (*)(Fn&), sizeof...(Ids)> kCalls{
      &call_with_protocol<typename Sets::template set<Ids>, Result, Fn>...};
  for (std::size_t i = 0; i < kIds.size(); ++i)
    if (kIds[i] == *mutant) return kCalls[i](fn);
  throw std::invalid_argument("with_protocol: mutant id " + std::to_string(static_cast<int>(*mutant)) +
                              " is not among the variants this dispatch was built with");
}

}  // namespace detail

/// Calls `fn.template operator()<Protocol>()` with the protocol of `mutant`
/// (nullopt = the correct protocol), for a mutant among those `kIds` lists
/// (a constexpr array of MutantId or of PoolMutantId): one instantiation of
/// `fn` per listed id. Any other id throws std::invalid_argument.
template <const auto& kIds, class Id, class Fn>
decltype(auto) with_protocol_listed(std::optional<Id> mutant, Fn&& fn) {
  return [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
    return detail::with_protocol_among<kIds[I]...>(mutant, fn);
  }
  (std::make_index_sequence<kIds.size()>{});
}

/// with_protocol_listed over every protocol (M1..M22) or pool (PM1..PM5)
/// mutant.
template <class Fn>
decltype(auto) with_protocol(std::optional<MutantId> mutant, Fn&& fn) {
  return with_protocol_listed<kEveryMutantId>(mutant, fn);
}
template <class Fn>
decltype(auto) with_pool_protocol(std::optional<PoolMutantId> mutant, Fn&& fn) {
  return with_protocol_listed<kEveryPoolMutantId>(mutant, fn);
}

}  // namespace streamcheck
