// Seed 001's dedup cases that need no backend: LaunchRecorder::dedup keys
// a block on its full identity (address, generation, device), so an address
// reused by a new allocation is a second block (the ABA case M9 breaks).
// The cases that run a recorder against a resource are the conformance suite
// tests/conformance/recorder_suite.h, instantiated per backend.
#include <gtest/gtest.h>

#include <vector>

#include "model/launch_recorder.h"
#include "model/mutants.h"
#include "model/types.h"

namespace streamcheck {
namespace {

using Recorder = LaunchRecorder<>;

std::vector<Recorder::RecordedUse> aba_uses(Access second) {
  const BlockId a{0xdeadbeef, Generation{1}, StreamId{0}, 0};
  const BlockId b{0xdeadbeef, Generation{2}, StreamId{0}, 0};
  return {{a, Access::Read, "read"}, {b, second, "write"}};
}

TEST(Seed001Dedup, KeysOnFullBlockIdNotPtrAlone) {
  auto out = Recorder::dedup(aba_uses(Access::Write));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].block.generation, Generation{1});
  EXPECT_EQ(out[0].access, Access::Read);
  EXPECT_EQ(out[1].block.generation, Generation{2});
  EXPECT_EQ(out[1].access, Access::Write);
}

TEST(Seed001Dedup, KeysOnDeviceOrdinal) {
  const BlockId a{0x1000, Generation{7}, StreamId{0}, 0};
  BlockId b = a;
  b.device_ordinal = 1;
  auto out = Recorder::dedup({{a, Access::Read, "read"}, {b, Access::Read, "read"}});
  EXPECT_EQ(out.size(), 2u);
}

TEST(Seed001Dedup, SameIdCollapsesWithCombinedAccess) {
  const BlockId a{0xdeadbeef, Generation{1}, StreamId{0}, 0};
  auto out = Recorder::dedup({{a, Access::Read, "read"}, {a, Access::Write, "write"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].access, Access::ReadWrite);
}

TEST(Seed001Dedup, MutantM9CollapsesDistinctGenerations) {
  auto out = LaunchRecorder<MutantSet<MutantId::M9>>::dedup(
      {{BlockId{0xdeadbeef, Generation{1}, StreamId{0}, 0}, Access::Read, "read"},
       {BlockId{0xdeadbeef, Generation{2}, StreamId{0}, 0}, Access::Write, "write"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].access, Access::ReadWrite);
}

}  // namespace
}  // namespace streamcheck
