// The capture layer's CPU half (docs/CAPTURE.md): the trace writer is fed the
// calls a CUDA program makes, as the injection library feeds it, and what it
// writes must parse and give the verdict the program deserves.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "../tools/trace_litmus.h"
#include "capture/kernel_access.h"
#include "capture/trace_writer.h"

namespace streamcheck::capture {
namespace {

using tools::count_kind;
using tools::explore_text;
using FK = sim::FindingKind;

constexpr ThreadId kMain = 100;
constexpr ThreadId kWorker = 101;
constexpr Handle kS1 = 0x1000, kS2 = 0x2000, kE = 0x3000, kE2 = 0x3100;
constexpr Handle kA = 0x7f0000000000, kB = 0x7f0000100000;

CallSite at(std::string_view api) { return CallSite{api, {}}; }

/// produce on s1 writes A; consume on s2 reads A, writes B; the wait
/// between them when `wait` is set.
TraceWriter pipeline(bool wait) {
  TraceWriter w(kMain);
  w.stream_created(kMain, kS1, false, at("cudaStreamCreate"));
  w.stream_created(kMain, kS2, false, at("cudaStreamCreate"));
  w.event_created(kMain, kE, at("cudaEventCreate"));
  w.device_alloc(kMain, kA, 4096, StreamArg{kS1}, at("cudaMallocAsync"));
  w.device_alloc(kMain, kB, 4096, StreamArg{kS1}, at("cudaMallocAsync"));
  w.launch(kMain, StreamArg{kS1}, "produce(float*, int)", {{kA, Access::Writes}, {4096, Access::None}},
           at("cudaLaunchKernel"));
  w.record(kMain, kE, StreamArg{kS1}, at("cudaEventRecord"));
  if (wait) w.wait(kMain, StreamArg{kS2}, kE, at("cudaStreamWaitEvent"));
  w.launch(kMain, StreamArg{kS2}, "consume(float const*, float*, int)", {{kA, Access::Reads}, {kB, Access::ReadWrites}},
           at("cudaLaunchKernel"));
  w.sync_device(kMain, at("cudaDeviceSynchronize"));
  w.free(kMain, kA, std::nullopt, at("cudaFree"));
  w.free(kMain, kB, std::nullopt, at("cudaFree"));
  return w;
}

TEST(CaptureWriter, APipelineWithItsWaitIsCleanWithoutItARace) {
  const std::string good = pipeline(true).text("prog");
  EXPECT_NE(good.find("launch produce on s1 writes d1  # cudaLaunchKernel: produce(float*, int)"), std::string::npos)
      << good;
  EXPECT_NE(good.find("launch consume on s2 reads d1 readwrites d2"), std::string::npos) << good;
  EXPECT_TRUE(explore_text(good).findings.empty()) << good;
  const std::string bad = pipeline(false).text("prog");
  const auto report = explore_text(bad);
  EXPECT_EQ(count_kind(report, FK::DataRace), 1u) << bad;
  EXPECT_EQ(count_kind(report, FK::UseBeforeReady), 1u) << bad;  // B was made on s1, used on s2
}

TEST(CaptureWriter, AnAddressInsideABufferTouchesItFromThereOnAndUnknownValuesNothing) {
  TraceWriter w(kMain);
  w.device_alloc(kMain, kA, 4096, std::nullopt, at("cudaMalloc"));
  w.launch(kMain, StreamArg{0}, "half(float*, unsigned long)",
           {{kA + 1024, Access::Writes}, {12345, Access::ReadWrites}}, at("cudaLaunchKernel"));
  const std::string text = w.text("prog");
  EXPECT_NE(text.find("launch half on legacy writes d1[1024:4096]"), std::string::npos) << text;
  EXPECT_TRUE(explore_text(text).findings.size() == 1u) << text;  // only the leak of d1
}

TEST(CaptureWriter, AStreamGivenADestroyedStreamsHandleSaysSo) {
  TraceWriter w(kMain);
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  w.stream_destroyed(kMain, kS1, at("cudaStreamDestroy"));
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  const std::string text = w.text("prog");
  EXPECT_NE(text.find("stream s1 nonblocking  #"), std::string::npos) << text;
  EXPECT_NE(text.find("destroy stream s1"), std::string::npos) << text;
  EXPECT_NE(text.find("stream s2 nonblocking handle s1"), std::string::npos) << text;
  EXPECT_NO_THROW(explore_text(text)) << text;
}

TEST(CaptureWriter, HostThreadsAreOrderedWhereTheyHandedAnObjectOver) {
  // main records E after writing A; the worker waits on E and reads A. The
  // capture saw the worker's calls after main's: it orders them so.
  TraceWriter w(kMain);
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  w.event_created(kMain, kE, at("cudaEventCreate"));
  w.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  w.launch(kMain, StreamArg{kS1}, "produce(float*)", {{kA, Access::Writes}}, at("cudaLaunchKernel"));
  w.record(kMain, kE, StreamArg{kS1}, at("cudaEventRecord"));
  w.stream_created(kWorker, kS2, true, at("cudaStreamCreateWithFlags"));
  w.wait(kWorker, StreamArg{kS2}, kE, at("cudaStreamWaitEvent"));
  w.launch(kWorker, StreamArg{kS2}, "read(float const*)", {{kA, Access::Reads}}, at("cudaLaunchKernel"));
  w.sync_stream(kWorker, StreamArg{kS2}, at("cudaStreamSynchronize"));
  const std::string text = w.text("prog");
  EXPECT_NE(text.find("thread t1\nchannel h1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("spawn t1"), std::string::npos) << text;
  EXPECT_NE(text.find("send h1"), std::string::npos) << text;
  EXPECT_NE(text.find("@t1 receive h1"), std::string::npos) << text;
  EXPECT_NE(text.find("@t1 wait e1 on s2"), std::string::npos) << text;
  const auto report = explore_text(text);
  EXPECT_EQ(count_kind(report, FK::DataRace), 0u) << text;
  // Without the wait the worker's read races with main's write.
  TraceWriter bad(kMain);
  bad.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  bad.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  bad.launch(kMain, StreamArg{kS1}, "produce(float*)", {{kA, Access::Writes}}, at("cudaLaunchKernel"));
  bad.stream_created(kWorker, kS2, true, at("cudaStreamCreateWithFlags"));
  bad.launch(kWorker, StreamArg{kS2}, "read(float const*)", {{kA, Access::Reads}}, at("cudaLaunchKernel"));
  EXPECT_EQ(count_kind(explore_text(bad.text("prog")), FK::DataRace), 1u) << bad.text("prog");
}

TEST(CaptureWriter, CopiesNameHostMemoryAndASynchronousCopyWaits) {
  TraceWriter w(kMain);
  constexpr Handle kHost = 0x5555000;
  w.device_alloc(kMain, kA, 1024, std::nullopt, at("cudaMalloc"));
  w.copy(kMain, StreamArg{0}, kA, kHost, 1024, true, at("cudaMemcpy"));
  w.host_alloc(kMain, kB, 512, at("cudaMallocHost"));
  w.copy(kMain, StreamArg{0, true}, kB, kA + 512, 512, false, at("cudaMemcpyAsync_ptsz"));
  w.free(kMain, kB, std::nullopt, at("cudaFreeHost"));  // BUG: the copy may still be writing it
  const std::string text = w.text("prog");
  EXPECT_NE(text.find("buffer p2 1024 pageable"), std::string::npos) << text;
  EXPECT_NE(text.find("copy c1 on legacy from p2 to d1"), std::string::npos) << text;
  EXPECT_NE(text.find("sync stream legacy  # cudaMemcpy"), std::string::npos) << text;
  EXPECT_NE(text.find("copy c2 on per_thread from d1[512:1024] to h3"), std::string::npos) << text;
  EXPECT_NE(text.find("# assumed: an address no captured allocation holds"), std::string::npos) << text;
  const auto report = explore_text(text);
  EXPECT_EQ(count_kind(report, FK::UseAfterFree), 1u) << text;
}

TEST(CaptureWriter, AStreamCaptureBecomesAGraphLaunchedWhereTheProgramLaunchedIt) {
  TraceWriter w(kMain);
  constexpr Handle kGraph = 0x9000, kExec = 0x9100;
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  w.stream_created(kMain, kS2, true, at("cudaStreamCreateWithFlags"));
  w.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  w.capture_begin(kMain, StreamArg{kS1}, at("cudaStreamBeginCapture"));
  w.launch(kMain, StreamArg{kS1}, "layer(float*)", {{kA, Access::Writes}}, at("cudaLaunchKernel"));
  w.capture_end(kMain, StreamArg{kS1}, kGraph, at("cudaStreamEndCapture"));
  w.graph_instantiated(kExec, kGraph);
  w.graph_launch(kMain, kExec, StreamArg{kS2}, at("cudaGraphLaunch"));
  w.launch(kMain, StreamArg{kS1}, "read(float const*)", {{kA, Access::Reads}}, at("cudaLaunchKernel"));
  w.graph_launch(kMain, 0xdead, StreamArg{kS2}, at("cudaGraphLaunch"));  // a graph built some other way
  const std::string text = w.text("prog");
  EXPECT_NE(text.find("capture begin s1"), std::string::npos) << text;
  EXPECT_NE(text.find("capture end s1 graph g1"), std::string::npos) << text;
  EXPECT_NE(text.find("launch graph g1 on s2"), std::string::npos) << text;
  EXPECT_NE(text.find("# not captured: cudaGraphLaunch (a graph not built by stream capture) x1"), std::string::npos)
      << text;
  EXPECT_EQ(count_kind(explore_text(text), FK::DataRace), 1u) << text;  // the graph on s2 against the read on s1
}

TEST(CaptureWriter, DevicesKernelsOnTheirOwnDeviceAndQueriesThatAnsweredDone) {
  TraceWriter w(kMain);
  w.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  w.set_device(kMain, 1, at("cudaSetDevice"));
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  w.event_created(kMain, kE2, at("cudaEventCreate"));
  w.device_alloc(kMain, kB, 256, StreamArg{kS1}, at("cudaMallocAsync"));
  // A kernel on device 1 given device 0's A (peer access): left out, noted.
  w.launch(kMain, StreamArg{kS1}, "k(float*, float*)", {{kA, Access::ReadWrites}, {kB, Access::Writes}},
           at("cudaLaunchKernel"));
  w.record(kMain, kE2, StreamArg{kS1}, at("cudaEventRecord"));
  w.query_done(kMain, std::nullopt, kE2, at("cudaEventQuery"));
  w.free(kMain, kB, std::nullopt, at("cudaFree"));
  const std::string text = w.text("prog");
  EXPECT_NE(text.find("device 1"), std::string::npos) << text;
  EXPECT_NE(text.find("launch k on s1 writes d2  #"), std::string::npos) << text;
  EXPECT_NE(text.find("sync event e1  # cudaEventQuery"), std::string::npos) << text;
  EXPECT_NE(text.find("peer access is not modelled"), std::string::npos) << text;
  const auto report = explore_text(text);
  EXPECT_EQ(tools::errors(report), 0u) << text;
}

/// The number of `buffer NAME` statements of each name in `text`.
std::map<std::string, int> buffer_names(const std::string& text) {
  std::map<std::string, int> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t at_buffer = line.find("buffer ");
    if (at_buffer == std::string::npos || line.find('#') < at_buffer) continue;
    std::istringstream words(line.substr(at_buffer + 7));
    std::string name;
    words >> name;
    ++out[name];
  }
  return out;
}

TEST(CaptureWriter, AThreadsNextAllocationTakesTheLowestNameItGaveBack) {
  // A loop that allocates, writes and frees: one name, not one each (a
  // check keeps what every name it saw needs), and a use after free in it
  // still found.
  TraceWriter w(kMain);
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  w.stream_created(kMain, kS2, true, at("cudaStreamCreateWithFlags"));
  for (int i = 0; i < 4; ++i) {                   // few: every schedule of the pool's choices is explored
    const Handle address = i % 2 == 0 ? kA : kB;  // the driver may hand out other addresses
    w.device_alloc(kMain, address, 256, StreamArg{kS1}, at("cudaMallocAsync"));
    w.launch(kMain, StreamArg{kS1}, "fill(float*)", {{address, Access::Writes}}, at("cudaLaunchKernel"));
    w.free(kMain, address, StreamArg{kS1}, at("cudaFreeAsync"));
  }
  // Two live at once take two names: the lowest given back first.
  w.device_alloc(kMain, kA, 256, StreamArg{kS1}, at("cudaMallocAsync"));
  w.device_alloc(kMain, kB, 256, StreamArg{kS1}, at("cudaMallocAsync"));
  // BUG: read on s2 with nothing ordering it after the free on s1.
  w.launch(kMain, StreamArg{kS2}, "read(float const*)", {{kB, Access::Reads}}, at("cudaLaunchKernel"));
  w.free(kMain, kB, StreamArg{kS1}, at("cudaFreeAsync"));
  w.free(kMain, kA, StreamArg{kS1}, at("cudaFreeAsync"));
  w.device_alloc(kMain, kA, 256, StreamArg{kS1}, at("cudaMallocAsync"));
  w.sync_device(kMain, at("cudaDeviceSynchronize"));
  w.free(kMain, kA, StreamArg{kS1}, at("cudaFreeAsync"));
  const std::string text = w.text("prog");
  EXPECT_EQ(buffer_names(text), (std::map<std::string, int>{{"d1", 6}, {"d2", 1}})) << text;
  EXPECT_NE(text.find("launch k_read on s2 reads d2"), std::string::npos) << text;
  EXPECT_EQ(count_kind(explore_text(text), FK::UseAfterFree), 1u) << text;  // read of d2 on s2 against its free on s1
}

TEST(CaptureWriter, ANameGivenBackOnOneThreadIsNotGivenToAnother) {
  // Bound again on the worker, d1 could be bound there before main's free
  // in another interleaving: the worker's block takes a new name.
  TraceWriter w(kMain);
  w.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  w.free(kMain, kA, std::nullopt, at("cudaFree"));
  w.device_alloc(kWorker, kA, 256, std::nullopt, at("cudaMalloc"));
  w.free(kWorker, kA, std::nullopt, at("cudaFree"));
  w.device_alloc(kMain, kB, 256, std::nullopt, at("cudaMalloc"));
  w.free(kMain, kB, std::nullopt, at("cudaFree"));
  const std::string text = w.text("prog");
  EXPECT_EQ(buffer_names(text), (std::map<std::string, int>{{"d1", 2}, {"d2", 1}})) << text;
  EXPECT_EQ(tools::errors(explore_text(text)), 0u) << text;  // nothing freed twice nor used after its free
}

TEST(CaptureWriter, NoNameIsGivenOutTwiceOnceAStreamCaptureBegan) {
  // The graph's body names A at each launch: after A's free, a launch of
  // it must read a freed name (a use after free), not a newer block's.
  TraceWriter w(kMain);
  constexpr Handle kGraph = 0x9000, kExec = 0x9100;
  w.stream_created(kMain, kS1, true, at("cudaStreamCreateWithFlags"));
  w.device_alloc(kMain, kB, 256, std::nullopt, at("cudaMalloc"));
  w.free(kMain, kB, std::nullopt, at("cudaFree"));  // d1, given back before any capture
  w.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  w.capture_begin(kMain, StreamArg{kS1}, at("cudaStreamBeginCapture"));
  w.launch(kMain, StreamArg{kS1}, "layer(float*)", {{kA, Access::Writes}}, at("cudaLaunchKernel"));
  w.capture_end(kMain, StreamArg{kS1}, kGraph, at("cudaStreamEndCapture"));
  w.graph_instantiated(kExec, kGraph);
  w.sync_device(kMain, at("cudaDeviceSynchronize"));
  w.free(kMain, kA, std::nullopt, at("cudaFree"));
  w.device_alloc(kMain, kA, 256, std::nullopt, at("cudaMalloc"));
  w.graph_launch(kMain, kExec, StreamArg{kS1}, at("cudaGraphLaunch"));  // BUG: its A was freed
  w.sync_device(kMain, at("cudaDeviceSynchronize"));
  w.free(kMain, kA, std::nullopt, at("cudaFree"));
  const std::string text = w.text("prog");
  EXPECT_EQ(buffer_names(text), (std::map<std::string, int>{{"d1", 2}, {"d2", 1}})) << text;
  EXPECT_EQ(count_kind(explore_text(text), FK::UseAfterFree), 1u) << text;
}

TEST(CaptureWriter, KernelNamesAreTraceNames) {
  EXPECT_EQ(kernel_trace_name("consume(float const*, float*, int)"), "consume");
  EXPECT_EQ(kernel_trace_name("void ns::scale<float>(float*, int)"), "ns.scale_float");
  EXPECT_EQ(kernel_trace_name("copy(int*)"), "k_copy");  // a keyword
  EXPECT_EQ(kernel_trace_name("(anonymous namespace)::k(int*)"), "anonymous_namespace_.k");
  EXPECT_EQ(kernel_trace_name("void (anonymous namespace)::k<(int)3>(int*)"), "anonymous_namespace_.k_int_3");
  EXPECT_EQ(kernel_trace_name("_Z3fooPf"), "_Z3fooPf");
}

TEST(KernelAccess, TheSignatureSaysWhichPointersOnlyRead) {
  const auto kinds = parameter_kinds("consume(float const*, float*, int, float* const, Params, double const* const)");
  ASSERT_TRUE(kinds);
  ASSERT_EQ(kinds->size(), 6u);
  EXPECT_EQ((*kinds)[0], ParamKind::ConstPointer);
  EXPECT_EQ((*kinds)[1], ParamKind::Pointer);
  EXPECT_EQ((*kinds)[2], ParamKind::Scalar);
  EXPECT_EQ((*kinds)[3], ParamKind::Pointer);
  EXPECT_EQ((*kinds)[4], ParamKind::Other);
  EXPECT_EQ((*kinds)[5], ParamKind::ConstPointer);
  EXPECT_EQ(parameter_kinds("k<std::pair<int, int> >(int*, unsigned long)")->size(), 2u);
  EXPECT_TRUE(parameter_kinds("k()")->empty());
  EXPECT_FALSE(parameter_kinds("extern_c_kernel"));
  EXPECT_EQ(demangle("_Z7consumePKfPfi").value_or(""), "consume(float const*, float*, int)");
  EXPECT_FALSE(demangle("extern_c_kernel"));
  EXPECT_EQ(kernel_key("void ns::scale<float>(float*, int)"), "ns::scale<float>");  // as C++ spells it
  EXPECT_EQ(kernel_key("void ns::pair_sum<std::pair<int, int> >(int*)"), "ns::pair_sum<std::pair<int, int> >");
  EXPECT_EQ(kernel_key("scale(float*, float*, int)"), "scale");
}

TEST(KernelAccess, ASidecarFileListsAccessesAndSaysWhereItIsWrong) {
  const auto table = KernelTable::parse("# kernels\nscale | reads writes -\n\nns::fill<float> | writes - # tail\n");
  ASSERT_NE(table.find("scale"), nullptr);
  EXPECT_EQ(*table.find("scale"), (std::vector<Access>{Access::Reads, Access::Writes, Access::None}));
  ASSERT_NE(table.find("ns::fill<float>"), nullptr);
  EXPECT_EQ(table.find("other"), nullptr);
  auto message = [](std::string_view text) {
    try {
      (void)KernelTable::parse(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("scale reads\n"), "1: expected 'KERNEL | ACCESS ...' (a '|' after the kernel's name)");
  EXPECT_EQ(message("\nscale | reads bogus\n").substr(0, 12), "2: 'bogus' i");
  EXPECT_EQ(message("scale |\n"), "1: no access after '|': one word per parameter");
  EXPECT_EQ(message("| reads\n"), "1: the kernel's name is missing before '|'");
  EXPECT_EQ(message("a | reads\na | writes\n"), "2: kernel 'a' is listed twice");
}

}  // namespace
}  // namespace streamcheck::capture
