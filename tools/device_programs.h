// Random multi-device trace programs for the GPU conformance of R13 (issue
// 17): streams of several devices sharing buffers through kernels, peer
// copies and each device's pool (buffers freed and allocated again on
// another stream of their device), ordered across streams and devices by
// events. Race-free by construction: before an op touches a buffer, its
// stream waits on an event recorded on every other stream whose earlier
// access conflicts with it and is not yet ordered before (R13b: the event
// of the other stream's device, made with that device current, so the
// record is one CUDA accepts, R13d). Leaving out one of those waits gives
// the racy variant of the program.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace streamcheck::tools {

struct DeviceProgramShape {
  std::uint32_t devices = 2;
  std::uint32_t streams_per_device = 2;
  std::uint32_t buffers_per_device = 2;
  std::uint32_t ops = 12;  // kernels, copies, and free + allocate again
  std::uint32_t buffer_bytes = 64 * 1024;
};

struct DeviceProgram {
  std::string text;  // the trace
  /// The cross-stream waits it makes (each one a candidate to leave out),
  /// and how many of them join streams of different devices.
  std::uint32_t waits = 0;
  std::uint32_t cross_device_waits = 0;
  std::uint32_t peer_copies = 0;         // copies between buffers of two devices
  std::uint32_t pool_reallocations = 0;  // buffers allocated after a free on their device
  /// Set when a wait was left out: its line in `text`, and what it ordered.
  std::optional<int> left_out_line;
  std::string left_out;
};

/// The program of `seed`; with `leave_out`, the same program without its
/// leave_out-th wait (0-based, < waits of the full program; the record
/// before it goes too). Same seed, same program.
DeviceProgram generate_device_program(std::uint64_t seed, const DeviceProgramShape& shape = {},
                                      std::optional<std::uint32_t> leave_out = std::nullopt);

}  // namespace streamcheck::tools
