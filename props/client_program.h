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
enum class StaleHow : std::uint8_t { PrepareRead, PrepareWrite, FinishRead, Deallocate, RecorderWithFresh };
/// Uses a freed block's id; the resource must answer UseAfterFree (P5).
struct StaleUseOp {
  std::uint32_t block;  // relative handle: k-th newest freed block
  StaleHow how;
  friend bool operator==(const StaleUseOp&, const StaleUseOp&) = default;
};
/// Makes the nth backend call from now fail (P4).
struct InjectFaultOp {
  std::uint32_t nth;
  friend bool operator==(const InjectFaultOp&, const InjectFaultOp&) = default;
};
enum class MisuseHow : std::uint8_t { ZeroBytes, UnknownStreamAllocate, UnknownStreamPrepare, WrongDevicePrepare };
/// A call the resource must refuse without changing anything.
struct MisuseOp {
  MisuseHow how;
  std::uint32_t block;
  friend bool operator==(const MisuseOp&, const MisuseOp&) = default;
};

using ClientOp = std::variant<AllocateOp, BeginLaunchOp, CommitOp, DeallocateOp, ReapOp, SyncStreamOp, StaleUseOp,
                              InjectFaultOp, MisuseOp>;
using ClientProgram = std::vector<ClientOp>;

/// One line of a readable program, e.g. `launch on s2: read b0, write b1`.
std::string show(const ClientOp& op);
std::string show(const ClientProgram& program);

}  // namespace streamcheck::props
