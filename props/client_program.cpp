#include "props/client_program.h"

#include <fmt/format.h>

#include "props/overload.h"

namespace streamcheck::props {

namespace {
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
    case StaleHow::Record:
      return "record_block_use";
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
    case MisuseHow::UnknownStreamFinish:
      return "finish on an unknown stream";
    case MisuseHow::WrongDeviceFinish:
      return "finish with a block of another device";
    case MisuseHow::UnknownStreamDeallocate:
      return "deallocate a block whose alloc stream is unknown";
    case MisuseHow::WrongDeviceDeallocate:
      return "deallocate a block of another device";
    case MisuseHow::RecorderUseAfterPreflight:
      return "recorder: a use registered after preflight, then dropped without commit";
    case MisuseHow::RecorderUntrackedStrict:
      return "strict recorder: an untracked buffer";
    case MisuseHow::RecorderCommitWithoutPreflight:
      return "recorder: commit without preflight";
    case MisuseHow::RecorderCommitTwice:
      return "recorder: commit twice";
    case MisuseHow::RecorderForgedCopy:
      return "recorder: a block and a forged copy of it";
  }
  return "?";
}
}  // namespace

std::string_view backend_call_name(FaultCall c) {
  switch (c) {
    case FaultCall::Any:
      return "";
    case FaultCall::WaitEvent:
      return "wait_event";
    case FaultCall::SynchronizeStream:
      return "synchronize_stream";
  }
  return "";
}

std::string show(const ClientOp& op) {
  return std::visit(
      Overload{
          [](const AllocateOp& o) {
            return fmt::format("allocate {} bytes on s{}{}{}", o.bytes, o.stream,
                               o.at_freed_address ? " at the newest freed block's address" : "",
                               o.fill_budget ? " (or what remains of a budget)" : "");
          },
          [](const BeginLaunchOp& o) {
            std::string uses;
            for (const auto& u : o.uses)
              uses += fmt::format("{}{} b-{}", uses.empty() ? " " : ", ", to_string(u.access), u.block);
            return fmt::format("{} launch on s{}:{} (preflight, enqueue)", o.strict ? "strict" : "permissive", o.stream,
                               uses);
          },
          [](const CommitOp& o) { return fmt::format("commit launch L+{}", o.launch); },
          [](const DeallocateOp& o) { return fmt::format("deallocate b-{}", o.block); },
          [](const ReapOp&) { return std::string("reap_pending"); },
          [](const SyncStreamOp& o) { return fmt::format("synchronize s{}", o.stream); },
          [](const StaleUseOp& o) { return fmt::format("stale use of freed f-{} via {}", o.block, name(o.how)); },
          [](const InjectFaultOp& o) {
            return fmt::format("inject a fault at {} call +{}",
                               o.call == FaultCall::Any ? std::string_view("backend") : backend_call_name(o.call),
                               o.nth);
          },
          [](const MisuseOp& o) { return fmt::format("misuse: {}", name(o.how)); },
          [](const CollideOp& o) {
            return fmt::format("allocate {} bytes on s{} while the driver returns live b-{}'s address", o.bytes,
                               o.stream, o.block);
          },
          [](const RacingReuseOp& o) {
            return fmt::format(
                "{} use of freeable b-{} on s{}; inside its finish another thread frees it and allocates its address "
                "again",
                to_string(o.access), o.block, o.stream);
          },
      },
      op);
}

std::string show(const ClientProgram& program) {
  std::string out;
  for (std::size_t i = 0; i < program.size(); ++i) out += fmt::format("  {}: {}\n", i, show(program[i]));
  return out;
}

}  // namespace streamcheck::props
