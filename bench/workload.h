// The benchmark workload of SPEC §8: an 8-stream, race-free program of N
// trace ops, available both as trace text (for parse + check) and as a list
// of steps that drive the DeviceModel directly (for the HB checker alone).
//
// Shape: every stream writes only its own output buffer and reads eight
// shared inputs that were written once before a device synchronize; streams
// record their event and wait on their neighbour's, so the vector clocks
// carry real cross-stream edges (R2, R3) and every access is checked against
// the shadow memory of all eight streams.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend_sim/device_model.h"

namespace streamcheck::bench {

inline constexpr std::uint32_t kStreams = 8;
inline constexpr std::uint64_t kBufferBytes = 4096;

struct Step {
  enum class Kind : std::uint8_t { Launch, Record, Wait, Update };
  Kind kind;
  std::uint32_t stream;
  std::uint32_t other;  // the input read (Launch) or the event waited on (Wait)
};

/// Step i of the steady-state loop (the same for the text and the model).
inline Step step(std::uint64_t i) {
  const auto s = static_cast<std::uint32_t>(i % kStreams);
  const auto round = i / kStreams;
  switch (round % 4) {
    case 0:
      return {Step::Kind::Launch, s, static_cast<std::uint32_t>((s + round) % kStreams)};
    case 1:
      return {Step::Kind::Record, s, s};
    case 2:
      return {Step::Kind::Wait, s, (s + 1) % kStreams};
    default:
      return {Step::Kind::Update, s, s};
  }
}

/// A kernel name as long as a captured one (a C++ kernel's mangled name is
/// tens to hundreds of characters), for the variant that measures what a
/// long label costs a check.
inline constexpr std::string_view kLongKernelPrefix = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_";

/// The program as a trace (docs/TRACES.md), `ops` steady-state statements,
/// handed to `write` a piece of text at a time (each ends in a newline):
/// a file of 100 M statements is written without holding it.
/// `kernel_prefix` goes before each kernel's name.
template <class Write>
void write_workload_trace(std::uint64_t ops, std::string_view kernel_prefix, Write&& write) {
  const std::string k = std::string(kernel_prefix) + "k";
  const std::string u = std::string(kernel_prefix) + "u";
  std::string t = "# bench workload: 8 streams, race-free\n";
  const auto n = [](const char* prefix, std::uint32_t k) { return prefix + std::to_string(k); };
  for (std::uint32_t k = 0; k < kStreams; ++k) t += "stream " + n("s", k) + "\nevent " + n("e", k) + "\n";
  std::string inputs;
  for (std::uint32_t k = 0; k < kStreams; ++k) {
    t += "buffer " + n("in", k) + " 4096 on s0\nbuffer " + n("out", k) + " 4096 on " + n("s", k) + "\n";
    inputs += (k ? ", " : "") + n("in", k);
  }
  t += "launch init on s0 writes " + inputs + "\nsync device\n";
  write(std::string_view(t));
  std::string line;
  for (std::uint64_t i = 0; i < ops; ++i) {
    const Step st = step(i);
    const std::string s = n("s", st.stream);
    switch (st.kind) {
      case Step::Kind::Launch:
        line = "launch " + k + " on " + s + " reads " + n("in", st.other) + " writes " + n("out", st.stream) + "\n";
        break;
      case Step::Kind::Record:
        line = "record " + n("e", st.stream) + " on " + s + "\n";
        break;
      case Step::Kind::Wait:
        line = "wait " + n("e", st.other) + " on " + s + "\n";
        break;
      case Step::Kind::Update:
        line = "launch " + u + " on " + s + " readwrites " + n("out", st.stream) + "[0:2048]\n";
        break;
    }
    write(std::string_view(line));
  }
  t = "sync device\n";
  for (std::uint32_t k = 0; k < kStreams; ++k) t += "free " + n("out", k) + " on " + n("s", k) + "\n";
  for (std::uint32_t k = 0; k < kStreams; ++k) t += "free " + n("in", k) + " on s0\n";
  write(std::string_view(t));
}

/// The program as one text.
inline std::string workload_trace(std::uint64_t ops, std::string_view kernel_prefix = {}) {
  std::string t;
  write_workload_trace(ops, kernel_prefix, [&](std::string_view piece) { t += piece; });
  return t;
}

/// How the device progresses while the workload's host calls come.
enum class DeviceSteps : std::uint8_t {
  /// Never before the teardown's synchronize: every op is still pending
  /// then, so the checker keeps every op's records to the end (the most it
  /// can be asked to keep) and the value oracle reads them all back there.
  AtTheEnd,
  /// Before every call, as sim::SimBackend (and so `streamcheck check`)
  /// steps the device: the chooser runs ready ops until it lets the host
  /// go on.
  BeforeEveryCall,
};

/// The same program on a DeviceModel, without the trace interpreter.
class ModelWorkload {
 public:
  explicit ModelWorkload(sim::DeviceModel& m, DeviceSteps steps = DeviceSteps::AtTheEnd) : m_(m), steps_(steps) {
    for (std::uint32_t k = 0; k < kStreams; ++k) {
      streams_.push_back(m.create_stream("s" + std::to_string(k)));
      events_.push_back(m.create_event());
    }
    std::vector<KernelAccess> init;
    for (std::uint32_t k = 0; k < kStreams; ++k) {
      in_.push_back(m.alloc(streams_[0], kBufferBytes)->ptr);
      out_.push_back(m.alloc(streams_[k], kBufferBytes)->ptr);
      init.push_back(KernelAccess{in_[k], kBufferBytes, Access::Write, {}});
    }
    m.launch(streams_[0], init, "init");
    m.sync_device();
  }

  void run(std::uint64_t i) {
    if (steps_ == DeviceSteps::BeforeEveryCall) m_.device_steps();
    const Step st = step(i);
    const sim::StreamIndex s = streams_[st.stream];
    switch (st.kind) {
      case Step::Kind::Launch:
        accesses_.assign({KernelAccess{in_[st.other], kBufferBytes, Access::Read, {}},
                          KernelAccess{out_[st.stream], kBufferBytes, Access::Write, {}}});
        m_.launch(s, accesses_, "k");
        break;
      case Step::Kind::Record:
        m_.record(events_[st.stream], s);
        break;
      case Step::Kind::Wait:
        m_.wait(s, events_[st.other]);
        break;
      case Step::Kind::Update:
        accesses_.assign({KernelAccess{out_[st.stream], kBufferBytes / 2, Access::ReadWrite, {}}});
        m_.launch(s, accesses_, "u");
        break;
    }
  }

  void teardown() {
    m_.sync_device();
    for (std::uint32_t k = 0; k < kStreams; ++k) m_.free(streams_[k], out_[k]);
    for (std::uint32_t k = 0; k < kStreams; ++k) m_.free(streams_[0], in_[k]);
    m_.finish();
  }

 private:
  sim::DeviceModel& m_;
  DeviceSteps steps_;
  std::vector<sim::StreamIndex> streams_;
  std::vector<sim::EventIndex> events_;
  std::vector<std::uint64_t> in_, out_;
  /// A launch's accesses, refilled for each: a fresh vector per launch made
  /// the harness's malloc and free 4 % of what "the checker alone" measured.
  std::vector<KernelAccess> accesses_;
};

}  // namespace streamcheck::bench
