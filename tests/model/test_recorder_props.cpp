// P6: random sequences of LaunchRecorder calls obey the recorder contract,
// checked against a small reference model of the recorder's state.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/launch_recorder.h"
#include "model/resource.h"
#include "tests/model/sim_fixture.h"

namespace streamcheck {
namespace {

using Recorder = LaunchRecorder<>;

struct RecorderModel {
  bool strict = false;
  bool rejection = false;
  bool preflighted = false;
  bool committed = false;
  std::size_t uses = 0;
  std::map<std::size_t, Access> access;  // block index -> combined access
};

bool has_text(const Status& st, const char* text) {
  return !st.ok() && st.error().message.find(text) != std::string::npos;
}

RC_GTEST_PROP(RecorderProperty, P6RandomCallSequencesObeyContract, ()) {
  testing::SimEnv env(*rc::gen::arbitrary<std::uint32_t>());
  Resource<sim::SimBackend> r(env.backend);
  const StreamId streams[] = {env.s0, env.s1, env.s2};
  std::vector<DeviceBlock> blocks;
  const std::size_t nblocks = *rc::gen::inRange<std::size_t>(1, 4);
  for (std::size_t i = 0; i < nblocks; ++i) {
    auto b = r.allocate(64 * (i + 1), streams[*rc::gen::inRange(0, 3)]);
    RC_ASSERT(b.ok());
    blocks.push_back(b.value());
  }
  // P-alloc: a block keeps no allocation-ready event; its first write's
  // event is its first use event.
  std::vector<std::size_t> counts(nblocks, 0);

  RecorderModel m;
  m.strict = *rc::gen::arbitrary<bool>();
  const std::size_t dropped_before = Recorder::dropped_without_commit();
  {
    Recorder rec(streams[*rc::gen::inRange(0, 3)], m.strict ? RecorderMode::Strict : RecorderMode::Permissive);
    const int steps = *rc::gen::inRange(0, 25);
    for (int step = 0; step < steps; ++step) {
      // 0-3 register, 4-5 preflight, 6-7 commit; once preflighted, commit
      // mostly, so that well-formed launches are common too.
      const int op = (m.preflighted && !m.committed && *rc::gen::inRange(0, 4) != 0) ? 6 : *rc::gen::inRange(0, 8);
      if (op < 4) {
        // Register a use of a tracked block (index >= 0) or an untracked buffer.
        const int idx = *rc::gen::inRange(-1, static_cast<int>(nblocks));
        const Access a = *rc::gen::element(Access::Read, Access::Write, Access::ReadWrite);
        const DeviceBlock* block = idx >= 0 ? &blocks[static_cast<std::size_t>(idx)] : nullptr;
        switch (*rc::gen::inRange(0, 2)) {
          case 0:
            rec.use(block, a);
            break;
          default:
            if (a == Access::Read)
              rec.read(block, *rc::gen::arbitrary<bool>());
            else if (a == Access::Write)
              rec.write(block, *rc::gen::arbitrary<bool>());
            else
              rec.read_write(block, *rc::gen::arbitrary<bool>());
        }
        if (m.preflighted) {
          m.rejection = true;
        } else if (block) {
          ++m.uses;
          const auto k = static_cast<std::size_t>(idx);
          auto it = m.access.find(k);
          m.access[k] = it == m.access.end() ? a : combine(it->second, a);
        } else if (m.strict) {
          m.rejection = true;
        }
        RC_ASSERT(rec.recorded_count() == m.uses);
        RC_ASSERT(rec.deduped_uses().size() == m.access.size());
      } else if (op < 6) {
        auto st = rec.preflight(r);
        if (m.rejection) {
          RC_ASSERT(!st.ok());
          RC_ASSERT(st.error().kind == ErrorKind::StreamMisuse);
          const bool why = has_text(st, "untracked buffer rejected") || has_text(st, "recorded after preflight");
          RC_ASSERT(why);
        } else {
          RC_ASSERT(st.ok());
          m.preflighted = true;
        }
        RC_ASSERT(rec.preflighted() == m.preflighted);
      } else {
        const std::vector<std::size_t> counts_before = counts;
        auto st = rec.commit(r);
        const bool expect_ok = !m.rejection && !m.committed && (m.uses == 0 || m.preflighted);
        RC_ASSERT(st.ok() == expect_ok);
        if (!expect_ok) {
          RC_ASSERT(st.error().kind == ErrorKind::StreamMisuse);
          if (!m.rejection && !m.committed) RC_ASSERT(has_text(st, "without a successful preflight"));
          if (!m.rejection && m.committed) RC_ASSERT(has_text(st, "already committed"));
        } else {
          m.committed = true;
          // One finish per deduped use: a write replaces everything, a
          // read appends one event.
          for (const auto& [k, a] : m.access) counts[k] = writes(a) ? 1 : counts[k] + 1;
        }
        RC_ASSERT(rec.committed() == m.committed);
      }
      for (std::size_t k = 0; k < nblocks; ++k)
        RC_ASSERT(r.pending_use_event_count(blocks[k].ptr) == std::optional<std::size_t>(counts[k]));
    }
  }
  // Dropped without commit after a successful preflight: reported once.
  const std::size_t expected_drops = (m.preflighted && !m.committed && m.uses > 0) ? 1 : 0;
  RC_ASSERT(Recorder::dropped_without_commit() == dropped_before + expected_drops);
  RC_CLASSIFY(m.committed, "committed");
  RC_CLASSIFY(m.rejection, "rejected");
  RC_CLASSIFY(m.uses > 0, "non-empty");
}

}  // namespace
}  // namespace streamcheck
