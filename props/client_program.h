// Client programs: what a user of the resource does, as data.
//
// Ops name earlier results by stable relative handles ("the k-th newest live
// block", k taken modulo the count), never by absolute index, so deleting an
// op while shrinking keeps the others meaningful. An op whose handle finds
// nothing is a no-op.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "backend_sim/schedule.h"
#include "model/types.h"

namespace streamcheck::props {

inline constexpr std::uint32_t kClientStreams = 3;

struct AllocateOp {
  std::uint32_t bytes;
  std::uint32_t stream;
};
struct UseSpec {
  std::uint32_t block;  // relative handle: k-th newest live block
  Access access;
};
/// Registers uses in a recorder, preflights it and enqueues the kernel; the
/// launch stays in flight until a CommitOp.
struct BeginLaunchOp {
  std::uint32_t stream;
  std::vector<UseSpec> uses;
  bool strict;
};
struct CommitOp {
  std::uint32_t launch;  // relative handle: k-th oldest launch in flight
};
struct DeallocateOp {
  std::uint32_t block;
};
struct ReapOp {};
struct SyncStreamOp {
  std::uint32_t stream;
};
enum class StaleHow : std::uint8_t { PrepareRead, PrepareWrite, FinishRead, Deallocate, RecorderWithFresh };
/// Uses a freed block's id; the resource must answer UseAfterFree (P5).
struct StaleUseOp {
  std::uint32_t block;  // relative handle: k-th newest freed block
  StaleHow how;
};
/// Makes the nth backend call from now fail (P4).
struct InjectFaultOp {
  std::uint32_t nth;
};
enum class MisuseHow : std::uint8_t { ZeroBytes, UnknownStreamAllocate, UnknownStreamPrepare, WrongDevicePrepare };
/// A call the resource must refuse without changing anything.
struct MisuseOp {
  MisuseHow how;
  std::uint32_t block;
};

using ClientOp = std::variant<AllocateOp, BeginLaunchOp, CommitOp, DeallocateOp, ReapOp, SyncStreamOp, StaleUseOp,
                              InjectFaultOp, MisuseOp>;
using ClientProgram = std::vector<ClientOp>;

/// One line of a readable program, e.g. `launch on s2: read b0, write b1`.
std::string show(const ClientOp& op);
std::string show(const ClientProgram& program);

enum class OpKind : std::uint8_t {
  Allocate,
  BeginLaunch,
  Commit,
  Deallocate,
  Reap,
  SyncStream,
  StaleUse,
  InjectFault,
  Misuse
};
inline constexpr std::uint32_t kOpKinds = 9;

/// Builds an op of `kind` from a random source. The property tests and the
/// `streamcheck explore` job both generate programs through this.
ClientOp make_op(OpKind kind, sim::SplitMix64& rng);
/// A random program of `length` ops, weighted towards launches and commits.
ClientProgram random_program(sim::SplitMix64& rng, std::uint32_t length);
/// The op kind to generate, drawn with the same weights as random_program.
OpKind random_kind(sim::SplitMix64& rng);

}  // namespace streamcheck::props
