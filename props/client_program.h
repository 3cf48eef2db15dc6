// Client programs: what a user of the resource does, as data.
//
// Ops name earlier results by stable relative handles ("the k-th newest live
// block", k taken modulo the count), never by absolute index, so deleting an
// op while shrinking keeps the others meaningful. ProtocolModel resolves the
// handles; client_gen.h generates ops (RapidCheck) from the model's state.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "model/types.h"

namespace streamcheck::props {

inline constexpr std::uint32_t kClientStreams = 3;

struct AllocateOp {
  std::uint32_t bytes;
  std::uint32_t stream;
  /// Ask for the newest freed block's address (where the pool may reuse
  /// it): the same-address, new-generation pairs P5 and the dedup key
  /// (M9) are about, made common instead of left to the pool's choice.
  bool at_freed_address = false;
  /// Through a budget, ask for exactly what remains of it (`bytes` when
  /// nothing remains): P7's boundary, and a budget left with nothing.
  bool fill_budget = false;
  friend bool operator==(const AllocateOp&, const AllocateOp&) = default;
};
struct UseSpec {
  std::uint32_t block;  // relative handle: k-th newest live block
  Access access;
  friend bool operator==(const UseSpec&, const UseSpec&) = default;
};
/// Registers uses in a recorder, preflights it and enqueues the kernel; the
/// launch stays in flight until a CommitOp.
struct BeginLaunchOp {
  std::uint32_t stream;
  std::vector<UseSpec> uses;
  bool strict;
  friend bool operator==(const BeginLaunchOp&, const BeginLaunchOp&) = default;
};
struct CommitOp {
  std::uint32_t launch;  // relative handle: k-th oldest launch in flight
  friend bool operator==(const CommitOp&, const CommitOp&) = default;
};
struct DeallocateOp {
  std::uint32_t block;
  friend bool operator==(const DeallocateOp&, const DeallocateOp&) = default;
};
struct ReapOp {
  friend bool operator==(const ReapOp&, const ReapOp&) = default;
};
struct SyncStreamOp {
  std::uint32_t stream;
  friend bool operator==(const SyncStreamOp&, const SyncStreamOp&) = default;
};
enum class StaleHow : std::uint8_t { PrepareRead, PrepareWrite, FinishRead, Deallocate, RecorderWithFresh, Record };
/// Uses a freed block's id; the resource must answer UseAfterFree (P5).
struct StaleUseOp {
  std::uint32_t block;  // relative handle: k-th newest freed block
  StaleHow how;
  friend bool operator==(const StaleUseOp&, const StaleUseOp&) = default;
};
/// Which backend calls an injected fault counts.
enum class FaultCall : std::uint8_t {
  Any,
  /// The waits of prepare and deallocate (on last_write and on each
  /// outstanding read): where a swallowed failure loses an ordering.
  WaitEvent,
  /// reap's synchronizations: where a failure must put entries back.
  SynchronizeStream,
};
std::string_view backend_call_name(FaultCall c);
/// Makes the nth backend call from now fail (P4), or the nth call of one
/// kind.
struct InjectFaultOp {
  std::uint32_t nth;
  FaultCall call = FaultCall::Any;
  friend bool operator==(const InjectFaultOp&, const InjectFaultOp&) = default;
};
enum class MisuseHow : std::uint8_t {
  ZeroBytes,
  UnknownStreamAllocate,
  UnknownStreamPrepare,
  WrongDevicePrepare,
  UnknownStreamFinish,
  WrongDeviceFinish,
  UnknownStreamDeallocate,  // a copy of the block that names an unknown alloc stream
  WrongDeviceDeallocate,
  // P6 recorder contracts (SPEC §2), each on a throwaway recorder of the block:
  RecorderUseAfterPreflight,       // a use registered after a successful preflight; then dropped
  RecorderUntrackedStrict,         // a strict recorder given an untracked buffer
  RecorderCommitWithoutPreflight,  // commit of a recorder that never passed preflight
  RecorderCommitTwice,             // a second commit of a committed recorder
  RecorderForgedCopy,              // a block and a copy of it that claims another address or device
};
/// Whether misuse `h` names a live block.
constexpr bool names_block(MisuseHow h) { return h != MisuseHow::ZeroBytes && h != MisuseHow::UnknownStreamAllocate; }
/// A call the resource (or a recorder) must refuse without changing anything.
struct MisuseOp {
  MisuseHow how;
  std::uint32_t block;
  friend bool operator==(const MisuseOp&, const MisuseOp&) = default;
};

/// An allocation during which the backend (a broken driver) returns the
/// address of a live block: the resource must refuse it and leave that
/// block's entry as it was (P5; M13 overwrites it).
struct CollideOp {
  std::uint32_t block;  // relative handle: k-th newest live block
  std::uint32_t bytes;
  std::uint32_t stream;
  friend bool operator==(const CollideOp&, const CollideOp&) = default;
};
/// A use of a block (prepare, then finish with no kernel between) during
/// whose finish another host thread frees the block and allocates its
/// address again: the finish, caught between its validation and its
/// re-validation, must answer UseAfterFree and leave the new block alone
/// (P5; M15 attaches the event to the new block).
struct RacingReuseOp {
  std::uint32_t block;  // relative handle: k-th newest freeable block
  std::uint32_t stream;
  Access access;
  friend bool operator==(const RacingReuseOp&, const RacingReuseOp&) = default;
};

/// The alternatives in this order are the op kinds: the swarm mask
/// (ProtocolModel::enabled) and the generator's weights index them.
using ClientOp = std::variant<AllocateOp, BeginLaunchOp, CommitOp, DeallocateOp, ReapOp, SyncStreamOp, StaleUseOp,
                              InjectFaultOp, MisuseOp, CollideOp, RacingReuseOp>;
inline constexpr std::size_t kOpKinds = std::variant_size_v<ClientOp>;
using ClientProgram = std::vector<ClientOp>;

/// One line of a readable program, e.g. `launch on s2: read b0, write b1`.
std::string show(const ClientOp& op);
std::string show(const ClientProgram& program);

}  // namespace streamcheck::props
