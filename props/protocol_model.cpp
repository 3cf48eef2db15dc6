#include "props/protocol_model.h"

#include <algorithm>

#include "props/overload.h"

namespace streamcheck::props {

namespace {
/// The k-th newest of `count` entries (k modulo count), as an index.
std::optional<std::size_t> newest(std::size_t count, std::uint32_t k) {
  if (count == 0) return std::nullopt;
  return count - 1 - k % count;
}
}  // namespace

bool ProtocolModel::in_flight_use(BlockNumber block, bool writes_only) const {
  for (const auto& launch : in_flight_)
    for (const auto& [used, access] : launch.uses)
      if (used == block && (!writes_only || writes(access))) return true;
  return false;
}

std::vector<std::pair<BlockNumber, Access>> ProtocolModel::launch_uses(const BeginLaunchOp& op) const {
  std::vector<std::pair<BlockNumber, Access>> uses;
  for (const auto& u : op.uses) {
    const auto idx = newest(live_.size(), u.block);
    if (!idx) continue;
    const BlockNumber block = live_[*idx];
    // A read conflicts with writes in flight, a write with any use.
    if (in_flight_use(block, !writes(u.access))) continue;
    uses.emplace_back(block, u.access);
  }
  return uses;
}

std::optional<std::size_t> ProtocolModel::launch_to_commit(const CommitOp& op) const {
  if (in_flight_.empty()) return std::nullopt;
  return op.launch % in_flight_.size();
}

std::optional<BlockNumber> ProtocolModel::block_to_free(const DeallocateOp& op) const {
  std::vector<BlockNumber> candidates;
  for (BlockNumber b : live_)
    if (!in_flight_use(b, false)) candidates.push_back(b);
  const auto idx = newest(candidates.size(), op.block);
  if (!idx) return std::nullopt;
  return candidates[*idx];
}

std::optional<BlockNumber> ProtocolModel::stale_block(const StaleUseOp& op) const {
  const auto idx = newest(freed_.size(), op.block);
  if (!idx) return std::nullopt;
  return freed_[*idx];
}

std::optional<BlockNumber> ProtocolModel::live_block(std::uint32_t handle) const {
  const auto idx = newest(live_.size(), handle);
  if (!idx) return std::nullopt;
  return live_[*idx];
}

std::optional<BlockNumber> ProtocolModel::misused_block(const MisuseOp& op) const { return live_block(op.block); }

bool ProtocolModel::applies(const ClientOp& op) const {
  return std::visit(Overload{
                        [](const AllocateOp&) { return true; },
                        [&](const BeginLaunchOp& o) { return !launch_uses(o).empty(); },
                        [&](const CommitOp& o) { return launch_to_commit(o).has_value(); },
                        [&](const DeallocateOp& o) { return block_to_free(o).has_value(); },
                        [](const ReapOp&) { return true; },
                        [](const SyncStreamOp&) { return true; },
                        [&](const StaleUseOp& o) { return stale_block(o).has_value(); },
                        [](const InjectFaultOp&) { return true; },
                        [&](const MisuseOp& o) { return !names_block(o.how) || misused_block(o).has_value(); },
                        [&](const CollideOp& o) { return live_block(o.block).has_value(); },
                        [&](const RacingReuseOp& o) { return block_to_reuse(o).has_value(); },
                    },
                    op);
}

void ProtocolModel::apply(const ClientOp& op) {
  std::visit(Overload{
                 [&](const AllocateOp&) { (void)allocated(); },
                 [&](const BeginLaunchOp& o) {
                   if (auto uses = launch_uses(o); !uses.empty()) launched(LaunchUses{std::move(uses)});
                 },
                 [&](const CommitOp& o) {
                   if (auto idx = launch_to_commit(o)) committed(*idx);
                 },
                 [&](const DeallocateOp& o) {
                   if (auto block = block_to_free(o)) deallocated(*block);
                 },
                 [&](const RacingReuseOp& o) {
                   if (auto block = block_to_reuse(o)) {
                     deallocated(*block);
                     (void)allocated();
                   }
                 },
                 [](const auto&) {},
             },
             op);
}

BlockNumber ProtocolModel::allocated() {
  live_.push_back(next_block_);
  return next_block_++;
}

void ProtocolModel::committed(std::size_t in_flight_index) {
  in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(in_flight_index));
}

void ProtocolModel::deallocated(BlockNumber block) {
  live_.erase(std::find(live_.begin(), live_.end(), block));
  freed_.push_back(block);
}

}  // namespace streamcheck::props
