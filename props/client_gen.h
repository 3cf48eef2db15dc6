// Generated client programs (RapidCheck): one op generator, the stateful
// command that wraps an op, and whole programs built from those commands.
//
// Every op is drawn from the state the ops before it leave (ProtocolModel):
// handles name blocks and launches the client really holds, and a command
// whose op would do nothing is discarded (checkPreconditions), during
// generation and again after every shrink step. Each field of an op has its
// own generator, so RapidCheck shrinks fields one by one (bytes towards 1,
// handles towards 0, fewer uses) as well as deleting commands.
#pragma once

#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <memory>
#include <ostream>
#include <utility>

#include "props/client_program.h"
#include "props/protocol_model.h"
#include "props/violation.h"

namespace streamcheck::props {

/// One op the client could make in `model`'s state. The kinds are weighted
/// by one table (launches and commits dominate, so that the cross-stream
/// patterns mutants break appear in short programs); kinds that need a
/// block, launch or freed block the model does not hold are left out.
rc::Gen<ClientOp> gen_client_op(const ProtocolModel& model);

/// A system the commands only describe (program generation without a run).
struct NoSystem {};

/// One client op as a RapidCheck command. On a Harness (anything with
/// `apply(ClientOp) -> optional<Violation>`) `run` applies the op and fails
/// the property with the violation it returns.
template <class Sut>
class ClientCommand final : public rc::state::Command<ProtocolModel, Sut> {
 public:
  explicit ClientCommand(ClientOp op) : op_(std::move(op)) {}
  const ClientOp& op() const { return op_; }

  void checkPreconditions(const ProtocolModel& model) const override { RC_PRE(model.applies(op_)); }
  void apply(ProtocolModel& model) const override { model.apply(op_); }
  void run(const ProtocolModel&, Sut& system) const override {
    if constexpr (requires { system.apply(op_); }) {
      if (auto violation = system.apply(op_)) RC_FAIL(to_string(*violation));
    }
  }
  void show(std::ostream& os) const override { os << props::show(op_); }

 private:
  ClientOp op_;
};

template <class Sut>
using ClientCommandPtr = std::shared_ptr<const rc::state::Command<ProtocolModel, Sut>>;

/// The generator function of rc::state::check / rc::state::gen::commands.
template <class Sut>
rc::Gen<ClientCommandPtr<Sut>> gen_client_command(const ProtocolModel& model) {
  return rc::gen::map(gen_client_op(model),
                      [](ClientOp op) -> ClientCommandPtr<Sut> { return std::make_shared<ClientCommand<Sut>>(op); });
}

/// A swarm mask: which op kinds one program may use (ProtocolModel::enabled).
rc::Gen<ProtocolModel::OpKindMask> gen_swarm();

/// Whole programs (each with its own swarm mask): between 1 and size + 1 ops (RapidCheck's size), each one
/// valid in the state the ops before it leave; shrinks as commands do.
rc::Gen<ClientProgram> gen_client_program();

}  // namespace streamcheck::props
