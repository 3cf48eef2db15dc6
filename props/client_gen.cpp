#include "props/client_gen.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace streamcheck::props {

namespace {

namespace gen = rc::gen;

/// The weight of each op kind: the one table every generated program uses.
struct OpWeights {
  std::size_t allocate = 14, begin_launch = 24, commit = 20, deallocate = 10, reap = 5, sync_stream = 4, stale_use = 5,
              inject_fault = 5, misuse = 3;
};
constexpr OpWeights kOpWeights;

/// RapidCheck's nominal size: field ranges do not grow or shrink with the
/// size parameter, which sets only how many commands a program has.
constexpr int kFullRange = 100;

template <class Op>
rc::Gen<ClientOp> as_op(rc::Gen<Op> g) {
  return gen::map(std::move(g), [](Op op) { return ClientOp{std::move(op)}; });
}

/// A relative handle among `count` entries (count > 0 where it is used).
rc::Gen<std::uint32_t> handle(std::size_t count) {
  return gen::inRange<std::uint32_t>(0, static_cast<std::uint32_t>(std::max<std::size_t>(count, 1)));
}

rc::Gen<std::uint32_t> stream() { return gen::inRange<std::uint32_t>(0, kClientStreams); }

rc::Gen<UseSpec> use_of(std::size_t live) {
  return gen::build<UseSpec>(gen::set(&UseSpec::block, handle(live)),
                             gen::set(&UseSpec::access, gen::element(Access::Read, Access::Write, Access::ReadWrite)));
}

}  // namespace

rc::Gen<ClientOp> gen_client_op(const ProtocolModel& model) {
  const std::size_t live = model.live().size(), freed = model.freed().size(), flying = model.in_flight().size();
  std::size_t freeable = 0;
  for (BlockNumber b : model.live()) freeable += model.in_flight_use(b, false) ? 0 : 1;
  auto when = [](bool possible, std::size_t weight) { return possible ? weight : 0; };

  auto allocate = gen::build<AllocateOp>(gen::set(&AllocateOp::bytes, gen::inRange<std::uint32_t>(1, 4097)),
                                         gen::set(&AllocateOp::stream, stream()));
  // One to three uses; shrinking drops uses and shrinks each one.
  auto uses =
      gen::resize(3, gen::nonEmpty(gen::container<std::vector<UseSpec>>(gen::resize(kFullRange, use_of(live)))));
  auto begin_launch =
      gen::build<BeginLaunchOp>(gen::set(&BeginLaunchOp::stream, stream()), gen::set(&BeginLaunchOp::uses, uses),
                                gen::set(&BeginLaunchOp::strict, gen::arbitrary<bool>()));
  auto commit = gen::build<CommitOp>(gen::set(&CommitOp::launch, handle(flying)));
  auto deallocate = gen::build<DeallocateOp>(gen::set(&DeallocateOp::block, handle(freeable)));
  auto sync_stream = gen::build<SyncStreamOp>(gen::set(&SyncStreamOp::stream, stream()));
  auto stale_use = gen::build<StaleUseOp>(
      gen::set(&StaleUseOp::block, handle(freed)),
      gen::set(&StaleUseOp::how, gen::element(StaleHow::PrepareRead, StaleHow::PrepareWrite, StaleHow::FinishRead,
                                              StaleHow::Deallocate, StaleHow::RecorderWithFresh)));
  auto inject_fault = gen::build<InjectFaultOp>(gen::set(&InjectFaultOp::nth, gen::inRange<std::uint32_t>(0, 3)));
  // Misuses that name a block need a live one.
  auto misuse =
      live > 0
          ? gen::build<MisuseOp>(
                gen::set(&MisuseOp::how, gen::element(MisuseHow::ZeroBytes, MisuseHow::UnknownStreamAllocate,
                                                      MisuseHow::UnknownStreamPrepare, MisuseHow::WrongDevicePrepare)),
                gen::set(&MisuseOp::block, handle(live)))
          : gen::build<MisuseOp>(
                gen::set(&MisuseOp::how, gen::element(MisuseHow::ZeroBytes, MisuseHow::UnknownStreamAllocate)));

  const OpWeights& w = kOpWeights;
  return gen::resize(kFullRange, gen::weightedOneOf<ClientOp>({
                                     {w.allocate, as_op(allocate)},
                                     {when(live > 0, w.begin_launch), as_op(begin_launch)},
                                     {when(flying > 0, w.commit), as_op(commit)},
                                     {when(freeable > 0, w.deallocate), as_op(deallocate)},
                                     {w.reap, gen::just(ClientOp{ReapOp{}})},
                                     {w.sync_stream, as_op(sync_stream)},
                                     {when(freed > 0, w.stale_use), as_op(stale_use)},
                                     {w.inject_fault, as_op(inject_fault)},
                                     {w.misuse, as_op(misuse)},
                                 }));
}

rc::Gen<ClientProgram> gen_client_program() {
  return gen::map(
      rc::state::gen::commands(ProtocolModel{}, [](const ProtocolModel& m) { return gen_client_command<NoSystem>(m); }),
      [](const rc::state::Commands<rc::state::Command<ProtocolModel, NoSystem>>& commands) {
        ClientProgram program;
        program.reserve(commands.size());
        for (const auto& c : commands) program.push_back(static_cast<const ClientCommand<NoSystem>&>(*c).op());
        return program;
      });
}

}  // namespace streamcheck::props
