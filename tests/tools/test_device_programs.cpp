// The generated multi-device programs of the GPU conformance (part 5,
// tools/device_programs.h): each is clean under the simulator over every
// execution, and leaving out one of its waits gives a race the simulator
// reports -- so the GPU rows that replay them test the model, not the
// generator. They exercise what the rows claim: cross-device waits, peer
// copies and buffers allocated again from their device's pool.
#include <gtest/gtest.h>

#include "tools/device_programs.h"
#include "tools/trace.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

Report explored(const DeviceProgram& p, const std::string& name) {
  const Trace trace = parse_trace(p.text, name);
  TraceCheckOptions o;
  o.strategy = Strategy::Dfs;
  o.max_schedules = 2000;
  return explore_trace(trace, o);
}

constexpr std::uint64_t kPrograms = 12;

TEST(DevicePrograms, TheSameSeedGivesTheSameProgram) {
  EXPECT_EQ(generate_device_program(7).text, generate_device_program(7).text);
  EXPECT_NE(generate_device_program(7).text, generate_device_program(8).text);
}

TEST(DevicePrograms, EveryProgramIsCleanOverEveryExecution) {
  std::uint64_t waits = 0, cross = 0, copies = 0, reallocations = 0;
  for (std::uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const DeviceProgram p = generate_device_program(seed);
    const Report r = explored(p, "seed-" + std::to_string(seed));
    EXPECT_TRUE(r.findings.empty()) << p.text << report_text(r);
    EXPECT_TRUE(r.notes.empty()) << p.text << report_text(r);
    EXPECT_TRUE(r.coverage.exhaustive) << "seed " << seed << ": raise max_schedules";
    waits += p.waits;
    cross += p.cross_device_waits;
    copies += p.peer_copies;
    reallocations += p.pool_reallocations;
  }
  EXPECT_GT(cross, 0u);
  EXPECT_GT(waits, cross);  // some waits join two streams of one device
  EXPECT_GT(copies, 0u);
  EXPECT_GT(reallocations, 0u);
}

TEST(DevicePrograms, LeavingOutAWaitGivesARace) {
  std::uint32_t variants = 0, racy = 0;
  for (std::uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const DeviceProgram full = generate_device_program(seed);
    for (std::uint32_t k = 0; k < full.waits; ++k) {
      const DeviceProgram variant = generate_device_program(seed, {}, k);
      ASSERT_TRUE(variant.left_out_line.has_value());
      ASSERT_FALSE(variant.left_out.empty());
      EXPECT_FALSE(full.left_out_line.has_value());
      EXPECT_NE(variant.text, full.text);
      ++variants;
      const Report r = explored(variant, "seed-" + std::to_string(seed) + "-without-" + std::to_string(k));
      if (!r.findings.empty()) ++racy;
    }
  }
  ASSERT_GT(variants, 0u);
  // A left-out wait can be made good by a later wait of the same op on a
  // stream that had waited for the first: rare, never the rule.
  EXPECT_GE(racy * 10, variants * 9) << racy << " of " << variants << " variants racy";
}

TEST(DevicePrograms, ShapesItCannotMakeAreRefused) {
  DeviceProgramShape one_device;
  one_device.devices = 1;
  EXPECT_THROW(generate_device_program(1, one_device), std::invalid_argument);
}

}  // namespace
}  // namespace streamcheck::tools
