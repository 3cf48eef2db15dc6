#include "props/client_program.h"

#include <sstream>

namespace streamcheck::props {

namespace {
template <class... Fs>
struct Overload : Fs... {
  using Fs::operator()...;
};
// Spelled out for compilers without aggregate CTAD (clang 14, the fuzz build).
template <class... Fs>
Overload(Fs...) -> Overload<Fs...>;

std::string_view name(StaleHow h) {
  switch (h) {
    case StaleHow::PrepareRead:
      return "prepare(read)";
    case StaleHow::PrepareWrite:
      return "prepare(write)";
    case StaleHow::FinishRead:
      return "finish(read)";
    case StaleHow::Deallocate:
      return "deallocate";
    case StaleHow::RecorderWithFresh:
      return "recorder(read the newest block at its address, then the stale one)";
  }
  return "?";
}

std::string_view name(MisuseHow h) {
  switch (h) {
    case MisuseHow::ZeroBytes:
      return "allocate 0 bytes";
    case MisuseHow::UnknownStreamAllocate:
      return "allocate on an unknown stream";
    case MisuseHow::UnknownStreamPrepare:
      return "prepare on an unknown stream";
    case MisuseHow::WrongDevicePrepare:
      return "prepare with a block of another device";
  }
  return "?";
}
}  // namespace

std::string show(const ClientOp& op) {
  std::ostringstream os;
  std::visit(Overload{
                 [&](const AllocateOp& o) { os << "allocate " << o.bytes << " bytes on s" << o.stream; },
                 [&](const BeginLaunchOp& o) {
                   os << (o.strict ? "strict" : "permissive") << " launch on s" << o.stream << ":";
                   for (std::size_t i = 0; i < o.uses.size(); ++i)
                     os << (i ? ", " : " ") << to_string(o.uses[i].access) << " b-" << o.uses[i].block;
                   os << " (preflight, enqueue)";
                 },
                 [&](const CommitOp& o) { os << "commit launch L+" << o.launch; },
                 [&](const DeallocateOp& o) { os << "deallocate b-" << o.block; },
                 [&](const ReapOp&) { os << "reap_pending"; },
                 [&](const SyncStreamOp& o) { os << "synchronize s" << o.stream; },
                 [&](const StaleUseOp& o) { os << "stale use of freed f-" << o.block << " via " << name(o.how); },
                 [&](const InjectFaultOp& o) { os << "inject a fault at backend call +" << o.nth; },
                 [&](const MisuseOp& o) { os << "misuse: " << name(o.how); },
             },
             op);
  return os.str();
}

std::string show(const ClientProgram& program) {
  std::ostringstream os;
  for (std::size_t i = 0; i < program.size(); ++i) os << "  " << i << ": " << show(program[i]) << "\n";
  return os.str();
}

ClientOp make_op(OpKind kind, sim::SplitMix64& rng) {
  switch (kind) {
    case OpKind::Allocate:
      return AllocateOp{1 + rng.below(4096), rng.below(kClientStreams)};
    case OpKind::BeginLaunch: {
      BeginLaunchOp op{rng.below(kClientStreams), {}, rng.chance(50)};
      const std::uint32_t n = 1 + rng.below(3);
      for (std::uint32_t i = 0; i < n; ++i) op.uses.push_back(UseSpec{rng.below(4), static_cast<Access>(rng.below(3))});
      return op;
    }
    case OpKind::Commit:
      return CommitOp{rng.below(3)};
    case OpKind::Deallocate:
      return DeallocateOp{rng.below(4)};
    case OpKind::Reap:
      return ReapOp{};
    case OpKind::SyncStream:
      return SyncStreamOp{rng.below(kClientStreams)};
    case OpKind::StaleUse:
      return StaleUseOp{rng.below(3), static_cast<StaleHow>(rng.below(5))};
    case OpKind::InjectFault:
      return InjectFaultOp{rng.below(3)};
    case OpKind::Misuse:
      return MisuseOp{static_cast<MisuseHow>(rng.below(4)), rng.below(4)};
  }
  return ReapOp{};
}

OpKind random_kind(sim::SplitMix64& rng) {
  // Weights: launches and commits dominate, so that cross-stream patterns
  // (the ones mutants break) appear in short programs.
  static constexpr std::uint32_t kWeights[kOpKinds] = {14, 24, 20, 10, 5, 4, 5, 5, 3};
  std::uint32_t total = 0;
  for (auto w : kWeights) total += w;
  std::uint32_t r = rng.below(total);
  for (std::uint32_t k = 0; k < kOpKinds; ++k) {
    if (r < kWeights[k]) return static_cast<OpKind>(k);
    r -= kWeights[k];
  }
  return OpKind::Reap;
}

ClientProgram random_program(sim::SplitMix64& rng, std::uint32_t length) {
  ClientProgram p;
  p.reserve(length);
  for (std::uint32_t i = 0; i < length; ++i) p.push_back(make_op(random_kind(rng), rng));
  return p;
}

}  // namespace streamcheck::props
