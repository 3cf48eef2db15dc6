#include "props/client_gen.h"

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace streamcheck::props {

namespace {

namespace gen = rc::gen;

/// The weight of each op kind: the one table every generated program uses
/// (swarm testing then switches whole kinds off per program).
struct OpWeights {
  std::size_t allocate = 14, begin_launch = 24, commit = 20, deallocate = 10, reap = 6, sync_stream = 4, stale_use = 5,
              inject_fault = 10, misuse = 3, collide = 3, racing_reuse = 4;
};
constexpr OpWeights kOpWeights;

/// RapidCheck's nominal size: field ranges do not grow or shrink with the
/// size parameter, which sets only how many commands a program has.
constexpr int kFullRange = 100;

/// The index of `Op` among ClientOp's alternatives: its op kind.
template <class Op, std::size_t I = 0>
constexpr std::size_t variant_index() {
  if constexpr (std::is_same_v<std::variant_alternative_t<I, ClientOp>, Op>)
    return I;
  else
    return variant_index<Op, I + 1>();
}

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
  return gen::build<UseSpec>(
      gen::set(&UseSpec::block, handle(live)),
      // Reads twice as often: blocks read from several streams at
      // once, the waits a writer or a free must queue.
      gen::set(&UseSpec::access,
               gen::weightedElement<Access>({{2, Access::Read}, {1, Access::Write}, {1, Access::ReadWrite}})));
}

}  // namespace

rc::Gen<ClientOp> gen_client_op(const ProtocolModel& model) {
  const std::size_t live = model.live().size(), freed = model.freed().size(), flying = model.in_flight().size();
  std::size_t freeable = 0;
  for (BlockNumber b : model.live()) freeable += model.in_flight_use(b, false) ? 0 : 1;
  // An op kind is drawn only where it can act and the program's swarm mask
  // enables it.
  auto when_kind = [&](std::size_t kind, bool possible, std::size_t weight) {
    return possible && model.enabled().test(kind) ? weight : 0;
  };

  auto allocate = gen::build<AllocateOp>(
      gen::set(&AllocateOp::bytes, gen::inRange<std::uint32_t>(1, 4097)), gen::set(&AllocateOp::stream, stream()),
      gen::set(&AllocateOp::at_freed_address, freed > 0 ? gen::arbitrary<bool>() : gen::just(false)),
      gen::set(&AllocateOp::fill_budget,
               gen::map(gen::inRange(0, 5), [](int k) { return k == 4; })));  // 1 in 5; shrinks to false
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
      // The recorder case needs a fresh block at the stale one's address, the
      // rarest state: it is drawn as often as the four others together.
      gen::set(&StaleUseOp::how, gen::weightedElement<StaleHow>({{1, StaleHow::PrepareRead},
                                                                 {1, StaleHow::PrepareWrite},
                                                                 {1, StaleHow::FinishRead},
                                                                 {1, StaleHow::Deallocate},
                                                                 {1, StaleHow::Record},
                                                                 {4, StaleHow::RecorderWithFresh}})));
  // A fault on the next call of a kind persists until such a call comes:
  // the first or second wait of an op (last_write's, then the reads') or
  // a reap's synchronization.
  auto inject_fault = gen::mapcat(
      gen::weightedElement<FaultCall>(
          {{1, FaultCall::Any}, {5, FaultCall::WaitEvent}, {2, FaultCall::SynchronizeStream}}),
      [](FaultCall call) {
        return gen::build<InjectFaultOp>(
            gen::set(&InjectFaultOp::nth, gen::inRange<std::uint32_t>(0, call == FaultCall::Any         ? 3
                                                                         : call == FaultCall::WaitEvent ? 2
                                                                                                        : 1)),
            gen::set(&InjectFaultOp::call, gen::just(call)));
      });
  // Misuses that name a block need a live one.
  auto misuse =
      live > 0 ? gen::build<MisuseOp>(
                     gen::set(&MisuseOp::how,
                              gen::element(MisuseHow::ZeroBytes, MisuseHow::UnknownStreamAllocate,
                                           MisuseHow::UnknownStreamPrepare, MisuseHow::WrongDevicePrepare,
                                           MisuseHow::UnknownStreamFinish, MisuseHow::WrongDeviceFinish,
                                           MisuseHow::UnknownStreamDeallocate, MisuseHow::WrongDeviceDeallocate,
                                           MisuseHow::RecorderUseAfterPreflight, MisuseHow::RecorderUntrackedStrict,
                                           MisuseHow::RecorderCommitWithoutPreflight, MisuseHow::RecorderCommitTwice,
                                           MisuseHow::RecorderForgedCopy)),
                     gen::set(&MisuseOp::block, handle(live)))
               : gen::build<MisuseOp>(
                     gen::set(&MisuseOp::how, gen::element(MisuseHow::ZeroBytes, MisuseHow::UnknownStreamAllocate)));

  auto collide = gen::build<CollideOp>(gen::set(&CollideOp::block, handle(live)),
                                       gen::set(&CollideOp::bytes, gen::inRange<std::uint32_t>(1, 4097)),
                                       gen::set(&CollideOp::stream, stream()));
  auto racing_reuse = gen::build<RacingReuseOp>(
      gen::set(&RacingReuseOp::block, handle(freeable)), gen::set(&RacingReuseOp::stream, stream()),
      gen::set(&RacingReuseOp::access, gen::element(Access::Read, Access::Write, Access::ReadWrite)));

  const OpWeights& w = kOpWeights;
  // Allocation is never switched off: without it no other op can act.
  const std::size_t allocate_weight = w.allocate;
  return gen::resize(kFullRange,
                     gen::weightedOneOf<ClientOp>({
                         {allocate_weight, as_op(allocate)},
                         {when_kind(variant_index<BeginLaunchOp>(), live > 0, w.begin_launch), as_op(begin_launch)},
                         {when_kind(variant_index<CommitOp>(), flying > 0, w.commit), as_op(commit)},
                         {when_kind(variant_index<DeallocateOp>(), freeable > 0, w.deallocate), as_op(deallocate)},
                         {when_kind(variant_index<ReapOp>(), true, w.reap), gen::just(ClientOp{ReapOp{}})},
                         {when_kind(variant_index<SyncStreamOp>(), true, w.sync_stream), as_op(sync_stream)},
                         {when_kind(variant_index<StaleUseOp>(), freed > 0, w.stale_use), as_op(stale_use)},
                         {when_kind(variant_index<InjectFaultOp>(), true, w.inject_fault), as_op(inject_fault)},
                         {when_kind(variant_index<MisuseOp>(), true, w.misuse), as_op(misuse)},
                         {when_kind(variant_index<CollideOp>(), live > 0, w.collide), as_op(collide)},
                         {when_kind(variant_index<RacingReuseOp>(), freeable > 0, w.racing_reuse), as_op(racing_reuse)},
                     }));
}

rc::Gen<ProtocolModel::OpKindMask> gen_swarm() {
  // Each kind is off with probability 1/4 (a value of 3 of 0..3); shrinking
  // goes towards 0, i.e. towards every kind on.
  return gen::map(gen::container<std::vector<std::uint8_t>>(kOpKinds, gen::inRange<std::uint8_t>(0, 4)),
                  [](const std::vector<std::uint8_t>& draws) {
                    ProtocolModel::OpKindMask enabled;
                    for (std::size_t k = 0; k < draws.size(); ++k) enabled.set(k, draws[k] != 3);
                    return enabled;
                  });
}

rc::Gen<ClientProgram> gen_client_program() {
  return gen::mapcat(gen_swarm(), [](ProtocolModel::OpKindMask enabled) {
    return gen::map(rc::state::gen::commands(ProtocolModel{enabled},
                                             [](const ProtocolModel& m) { return gen_client_command<NoSystem>(m); }),
                    [](const rc::state::Commands<rc::state::Command<ProtocolModel, NoSystem>>& commands) {
                      ClientProgram program;
                      program.reserve(commands.size());
                      for (const auto& c : commands)
                        program.push_back(static_cast<const ClientCommand<NoSystem>&>(*c).op());
                      return program;
                    });
  });
}

}  // namespace streamcheck::props
