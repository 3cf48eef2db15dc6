// Uses the installed streamcheck package: Resource and LaunchRecorder over
// the simulated backend. A producer writes a block on one stream, a consumer
// reads it on another; under every schedule the protocol must keep them
// ordered (no race, no stale read: P1/P2), give back every event (P9) and
// account every byte (P3). The same program without the recorder must be
// caught, or the check above proves nothing. Exit 0 only when all holds.
#include <cstdio>
#include <string>
#include <vector>

#include "backend_sim/device_model.h"
#include "backend_sim/schedule.h"
#include "backend_sim/sim_backend.h"
#include "model/kernel_access.h"
#include "model/launch_recorder.h"
#include "model/resource.h"

namespace {

using namespace streamcheck;

KernelAccess access_of(const DeviceBlock& block, Access kind) {
  KernelAccess a;
  a.ptr = block.ptr;
  a.bytes = block.bytes;
  a.access = kind;
  return a;
}

/// One run of the program under the schedule `chooser` makes; returns what
/// went wrong (empty: nothing).
std::vector<std::string> run_once(sim::Chooser& chooser, bool with_recorder) {
  std::vector<std::string> wrong;
  sim::DeviceModel model(chooser);
  sim::SimBackend backend(model);
  const StreamId producer = backend.add_stream("producer");
  const StreamId consumer = backend.add_stream("consumer");
  {
    Resource<sim::SimBackend> resource(backend);
    auto block = resource.allocate(256, producer);
    if (!block) return {"allocate: " + block.error().to_string()};
    const DeviceBlock& b = block.value();

    auto launch = [&](StreamId stream, Access kind, const char* label) {
      const auto ref = *backend.resolve_stream(stream);
      if (!with_recorder) {
        backend.launch(ref, {access_of(b, kind)}, label);
        return;
      }
      LaunchRecorder<> recorder(stream, RecorderMode::Strict);
      recorder.use(&b, kind);
      if (auto st = recorder.preflight(resource); !st) wrong.push_back("preflight: " + st.error().to_string());
      backend.launch(ref, {access_of(b, kind)}, label);
      if (auto st = recorder.commit(resource); !st) wrong.push_back("commit: " + st.error().to_string());
    };
    launch(producer, Access::Write, "produce");
    launch(consumer, Access::Read, "consume");

    if (auto st = resource.deallocate(b); !st) wrong.push_back("deallocate: " + st.error().to_string());
    if (auto st = resource.reap_pending(); !st) wrong.push_back("reap_pending: " + st.error().to_string());
    if (resource.bytes_outstanding() != 0)
      wrong.push_back(std::to_string(resource.bytes_outstanding()) + " bytes outstanding after reap (P3)");
  }
  backend.drain();
  if (const auto problems = backend.new_problems(); !problems.empty())
    wrong.push_back(std::to_string(problems.size()) + " races or stale reads (P1/P2)");
  if (backend.live_event_count() != 0) wrong.push_back("events still alive after teardown (P9)");
  return wrong;
}

struct Outcome {
  std::size_t schedules = 0;
  std::size_t failing = 0;
  std::vector<std::string> first_failure;
};

Outcome every_schedule(bool with_recorder) {
  Outcome out;
  sim::DfsEnumerator dfs;
  while (!dfs.done() && out.schedules < 100000) {
    auto run = dfs.next_run();
    auto wrong = run_once(run, with_recorder);
    dfs.finished(run);
    ++out.schedules;
    if (wrong.empty()) continue;
    if (out.failing++ == 0) {
      out.first_failure = std::move(wrong);
      out.first_failure.push_back("schedule " + run.schedule());
    }
  }
  return out;
}

}  // namespace

int main() {
  const Outcome with = every_schedule(true);
  const Outcome without = every_schedule(false);
  std::printf("with the recorder: %zu schedules, %zu failing; without: %zu schedules, %zu failing\n", with.schedules,
              with.failing, without.schedules, without.failing);
  if (with.failing != 0) {
    std::printf("the protocol misbehaved:\n");
    for (const auto& line : with.first_failure) std::printf("  %s\n", line.c_str());
    return 1;
  }
  if (with.schedules < 2 || without.failing == 0) {
    std::printf("the simulator found nothing wrong without the recorder: the check is vacuous\n");
    return 1;
  }
  return 0;
}
