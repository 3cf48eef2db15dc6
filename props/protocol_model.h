// The client's view of the resource, as pure state: which blocks it holds,
// which it freed, which launches are in flight and what they use. The
// stateful property's model and the harness's handle resolution are this
// one class, so a command the model accepts is one the harness carries out
// (RapidCheck discards the others through checkPreconditions).
//
// Blocks are numbered in allocation order (b0, b1, ...). Ops name them by
// relative handles (see client_program.h), resolved here.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "props/client_program.h"

namespace streamcheck::props {

using BlockNumber = std::uint32_t;

struct LaunchUses {
  std::vector<std::pair<BlockNumber, Access>> uses;
};

class ProtocolModel {
 public:
  /// Which op kinds (indexes into ClientOp) a generated program may use:
  /// swarm testing draws a random subset per program, so that rare
  /// patterns are not drowned out by the common ones. All by default.
  using OpKindMask = std::bitset<kOpKinds>;
  ProtocolModel() { enabled_.set(); }
  explicit ProtocolModel(OpKindMask enabled) : enabled_(enabled) {}
  const OpKindMask& enabled() const { return enabled_; }

  /// Blocks the client holds, oldest first.
  const std::vector<BlockNumber>& live() const { return live_; }
  /// Blocks the client freed, oldest first.
  const std::vector<BlockNumber>& freed() const { return freed_; }
  /// Launches preflighted and enqueued but not committed, oldest first.
  const std::deque<LaunchUses>& in_flight() const { return in_flight_; }
  /// The number the next allocation gets.
  BlockNumber next_block() const { return next_block_; }

  // --- handle resolution (nullopt: the op would do nothing)

  /// The uses a launch registers: each handle's block, minus uses that would
  /// conflict with a launch in flight (a correct client never overlaps a
  /// conflicting use with one whose events the resource cannot see yet).
  std::vector<std::pair<BlockNumber, Access>> launch_uses(const BeginLaunchOp& op) const;
  /// Index into in_flight() of the launch a commit finishes.
  std::optional<std::size_t> launch_to_commit(const CommitOp& op) const;
  /// The block a deallocate frees: only blocks no launch in flight uses.
  std::optional<BlockNumber> block_to_free(const DeallocateOp& op) const;
  /// The freed block a stale use names.
  std::optional<BlockNumber> stale_block(const StaleUseOp& op) const;
  /// The k-th newest live block (k = `handle` modulo the count).
  std::optional<BlockNumber> live_block(std::uint32_t handle) const;
  /// The live block a misuse names, for the kinds that need one.
  std::optional<BlockNumber> misused_block(const MisuseOp& op) const;
  /// The block a racing reuse frees: a freeable block (as for deallocate).
  std::optional<BlockNumber> block_to_reuse(const RacingReuseOp& op) const {
    return block_to_free(DeallocateOp{op.block});
  }
  /// Whether a launch in flight uses `block` (only writes, if asked).
  bool in_flight_use(BlockNumber block, bool writes_only) const;

  /// True when `op` does something in this state (RC_PRE of its command).
  bool applies(const ClientOp& op) const;
  /// What `op` does when every call succeeds (the model's `apply`).
  void apply(const ClientOp& op);

  // --- the steps of apply, for the harness to take after the real call
  //     succeeded

  BlockNumber allocated();
  void launched(LaunchUses uses) { in_flight_.push_back(std::move(uses)); }
  void committed(std::size_t in_flight_index);
  void deallocated(BlockNumber block);

 private:
  OpKindMask enabled_;
  std::vector<BlockNumber> live_;
  std::vector<BlockNumber> freed_;
  std::deque<LaunchUses> in_flight_;
  BlockNumber next_block_ = 0;
};

}  // namespace streamcheck::props
