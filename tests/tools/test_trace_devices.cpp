// Trace language v2, devices (R13, docs/TRACES.md "Devices"): `device N`
// (cudaSetDevice) makes N the running thread's current device; streams,
// events and buffers belong to the device current where they are made.
// R13a: each device has its own legacy stream, ordered with that device's
// blocking streams only; R13b: streams of two devices are ordered only by
// events (a wait may name another device's event); R13c: `sync device`
// covers the current device; R13d: recording an event on another device's
// stream is refused, and the event keeps its last capture. Each test is a
// litmus program with its exact number of executions (`explore --strategy
// dfs`) and its findings. Malformed device statements are in
// malformed_traces.h.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/trace_litmus.h"
#include "tools/fix.h"
#include "tools/trace.h"
#include "tools/trace_check.h"
#include "tools/trace_gpu.h"

namespace streamcheck::tools {
namespace {

// Device 0 writes A; device 1 copies it into B.
const std::string kPeerCopy =
    "stream s0 nonblocking\n"    // 1
    "event E\n"                  // 2 (device 0's)
    "buffer A 256 on s0\n"       // 3
    "launch k on s0 writes A\n"  // 4
    "device 1\n"                 // 5
    "stream s1 nonblocking\n"    // 6
    "buffer B 256 on s1\n";      // 7

TEST(TraceDevices, StreamsOfTwoDevicesAreOrderedOnlyByEvents) {
  // R13b: nothing orders s1's copy after s0's kernel: 1 execution, one data
  // race (line 4 -> line 8), fixed by an event of device 0 recorded on s0.
  const Report r = explore_text(kPeerCopy + "copy c on s1 from A to B\n");  // 8
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(errors(r), 1u);
  const ReportFinding& race = first_of(r, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.origin->line, 4);
  EXPECT_EQ(race.second->origin->line, 8);
  // A wait on device 0's event orders device 1's stream (R13b): clean.
  const Report fixed = explore_text(kPeerCopy + "record E on s0\nwait E on s1\ncopy c on s1 from A to B\n");
  EXPECT_EQ(fixed.coverage.explored, 1u);
  EXPECT_EQ(errors(fixed), 0u);
  EXPECT_TRUE(fixed.notes.empty());
}

TEST(TraceDevices, RecordingAnEventOnAnotherDevicesStreamIsRefused) {
  // R13d: E is device 0's; recording it on s1 (device 1) is a wrong-device
  // error at line 9 and records nothing, so the host's sync of E orders
  // nothing: 1 execution, the error and a data race (copy -> host read).
  const Report r = explore_text(
      "event E\n"                   // 1
      "buffer H 256 pinned\n"       // 2
      "device 1\n"                  // 3
      "stream s1 nonblocking\n"     // 4
      "buffer B 256 on s1\n"        // 5
      "launch k on s1 writes B\n"   // 6
      "copy c on s1 from B to H\n"  // 7
      "device 0\n"                  // 8
      "record E on s1\n"            // 9
      "sync event E\n"              // 10
      "host reads H\n");            // 11
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].kind, NoteKind::WrongDevice);
  EXPECT_EQ(r.notes[0].line, 9);
  EXPECT_NE(r.notes[0].message.find("event E belongs to device 0 but stream s1 to device 1"), std::string::npos)
      << r.notes[0].message;
  ASSERT_EQ(errors(r), 1u);
  const ReportFinding& race = first_of(r, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.origin->line, 7);
  EXPECT_EQ(race.second->origin->line, 11);
}

TEST(TraceDevices, EachDeviceHasItsOwnLegacyStream) {
  // R13a: s0 is a blocking stream of device 0. Device 0's legacy stream
  // waits for it (clean, 1 execution); device 1's does not (1 execution, a
  // data race whose second op is on legacy:1).
  const std::string producer =
      "stream s0\n"                // 1 (blocking)
      "buffer A 256 on s0\n"       // 2
      "launch k on s0 writes A\n"  // 3
      "device 1\n"                 // 4
      "stream s1 nonblocking\n"    // 5
      "buffer B 256 on s1\n"       // 6
      "sync stream s1\n";          // 7
  const Report same = explore_text(producer + "device 0\ncopy c on legacy from A to B\n");
  EXPECT_EQ(same.coverage.explored, 1u);
  EXPECT_EQ(errors(same), 0u);
  const Report other = explore_text(producer + "copy c on legacy from A to B\n");  // 8
  EXPECT_EQ(other.coverage.explored, 1u);
  ASSERT_EQ(errors(other), 1u);
  const ReportFinding& race = first_of(other, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.origin->line, 3);
  EXPECT_EQ(race.second->origin->line, 8);
  EXPECT_EQ(race.second->stream, "legacy:1");
}

TEST(TraceDevices, DeviceSyncCoversTheCurrentDeviceOnly) {
  // R13c: the copy runs on device 1; `sync device` with device 0 current
  // does not order the host read after it (1 execution, 1 data race); with
  // device 1 current it does (clean).
  const std::string download =
      "buffer H 256 pinned\n"        // 1
      "device 1\n"                   // 2
      "stream s1 nonblocking\n"      // 3
      "buffer B 256 on s1\n"         // 4
      "launch k on s1 writes B\n"    // 5
      "copy c on s1 from B to H\n";  // 6
  const Report wrong = explore_text(download + "device 0\nsync device\nhost reads H\n");
  EXPECT_EQ(wrong.coverage.explored, 1u);
  ASSERT_EQ(errors(wrong), 1u);
  EXPECT_EQ(first_of(wrong, sim::FindingKind::DataRace).second->origin->line, 9);
  const Report right = explore_text(download + "sync device\nhost reads H\n");
  EXPECT_EQ(right.coverage.explored, 1u);
  EXPECT_EQ(errors(right), 0u);
}

TEST(TraceDevices, PlainAllocationsRunOnTheirDevicesLegacyStream) {
  // cudaMalloc with device 1 current: the buffer is device 1's, made on
  // legacy:1 and ready for device 1's streams (the host synchronized device
  // 1). A kernel on device 1 then writes it and legacy:1 reads it without
  // an event: s1 is non-blocking, so 1 execution, a data race s1 -> legacy:1.
  const Report r = explore_text(
      "device 1\n"                      // 1
      "stream s1 nonblocking\n"         // 2
      "buffer X 256\n"                  // 3
      "launch w on s1 writes X\n"       // 4
      "launch r on legacy reads X\n");  // 5
  EXPECT_EQ(r.coverage.explored, 1u);
  ASSERT_EQ(errors(r), 1u);
  const ReportFinding& race = first_of(r, sim::FindingKind::DataRace);
  EXPECT_EQ(race.first.stream, "s1");
  EXPECT_EQ(race.second->stream, "legacy:1");
}

TEST(TraceDevices, TheFixMakesItsEventOnTheRecordingStreamsDevice) {
  // The record/wait fix of a race whose first op is on device 1: the new
  // event is declared with device 1 current (R13d), so the fixed trace is
  // clean rather than refused.
  const std::string text =
      "device 1\n"                       // 1
      "stream s1 nonblocking\n"          // 2
      "buffer A 256 on s1\n"             // 3
      "launch produce on s1 writes A\n"  // 4
      "device 0\n"                       // 5
      "stream s0 nonblocking\n"          // 6
      "buffer B 256 on s0\n"             // 7
      "copy pull on s0 from A to B\n";   // 8
  const Report r = explore_text(text);
  ASSERT_EQ(errors(r), 1u);
  std::vector<TraceEdit> edits;
  for (const auto& group : r.groups) edits.insert(edits.end(), group.edits.begin(), group.edits.end());
  ASSERT_EQ(edits.size(), 5u);
  EXPECT_EQ(edits[0], TraceEdit::declare("device 1"));
  EXPECT_EQ(edits[1], TraceEdit::declare("event fix_1"));
  EXPECT_EQ(edits[2], TraceEdit::declare("device 0"));
  const Report fixed = explore_text(apply_edits(text, edits).text);
  EXPECT_EQ(errors(fixed), 0u);
  EXPECT_TRUE(fixed.notes.empty());
}

TEST(TraceDevices, EachThreadHasItsOwnCurrentDevice) {
  // cudaSetDevice is per host thread, and a thread starts on device 0:
  // main's `device 1` does not move t, nor t's `device 2` main.
  const Trace t = parse_trace(
      "thread t\n"                    // 1
      "device 1\n"                    // 2
      "stream a\n"                    // 3: main, device 1
      "@t stream b\n"                 // 4: t, device 0
      "@t device 2\n"                 // 5
      "@t event e\n"                  // 6: t, device 2
      "event f\n"                     // 7: main, device 1
      "@t sync device\n"              // 8: device 2
      "@t launch k on per_thread\n",  // 9: t's per-thread stream of device 2
      "threads.trace");
  EXPECT_EQ(std::get<ast::StreamDecl>(t.statements[2]).device, 1u);
  EXPECT_EQ(std::get<ast::StreamDecl>(t.statements[3]).device, 0u);
  EXPECT_EQ(std::get<ast::EventDecl>(t.statements[5]).device, 2u);
  EXPECT_EQ(std::get<ast::EventDecl>(t.statements[6]).device, 1u);
  EXPECT_EQ(std::get<ast::SyncDevice>(t.statements[7]).device, 2u);
  EXPECT_EQ(std::get<ast::Launch>(t.statements[8]).stream, "per_thread@t:2");
  ASSERT_EQ(t.default_streams.size(), 1u);
  EXPECT_EQ(t.default_streams[0].device, 2u);
  EXPECT_EQ(t.default_streams[0].kind, StreamKind::Blocking);
}

TEST(TraceDevices, TheGpuReplayRefusesAnotherDevicesLegacyStream) {
  // The GPU replay runs every device on one GPU: device 1's blocking
  // streams become non-blocking there, exact only while legacy:1 is unused.
  // A plain allocation with device 1 current uses it: refused, naming it.
  const auto refused = gpu_replay_refusal(parse_trace("device 1\nbuffer X 256\nfree X\n", "plain.trace"));
  ASSERT_TRUE(refused.has_value());
  EXPECT_NE(refused->find("legacy:1, the legacy default stream of device 1"), std::string::npos) << *refused;
  // Device 0's legacy stream, and device 1's streams of its own, replay.
  EXPECT_FALSE(
      gpu_replay_refusal(parse_trace("buffer X 256\ndevice 1\nstream s\nbuffer Y 64 on s\n"
                                     "launch k on s writes Y\n",
                                     "own.trace")));
}

}  // namespace
}  // namespace streamcheck::tools
