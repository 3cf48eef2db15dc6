// The fix-checking test (issue 10 item 5): the fixes `streamcheck fix`
// applies (tools/fix_plan.h apply_fixes), to every example and to 240
// generated programs, remove the findings they fix, add none, and keep every
// read's producer -- a read that the original trace orders after a write to
// its bytes still has that write as its last ordered writer
// (tools/producers.h), compared line by line through the edits' line map.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backend_sim/schedule.h"
#include "tests/tools/trace_generator.h"
#include "tools/explain.h"
#include "tools/fix_plan.h"
#include "tools/producers.h"
#include "tools/trace_check.h"

namespace streamcheck::tools {
namespace {

/// A finding by the lines of its ops in the original trace (0: no statement).
using FindingId = std::tuple<sim::FindingKind, int, int, bool>;

FindingId id_of(const ReportFinding& f, std::span<const int> to_original) {
  const auto line = [&](const ReportOp& op) {
    const int l = op.origin ? op.origin->line : 0;
    return to_original.empty() ? l : l < static_cast<int>(to_original.size()) ? to_original[l] : 0;
  };
  return {f.kind, line(f.first), f.second ? line(*f.second) : 0, f.definite};
}

ReadProducers producers_of(const Trace& trace, const TraceCheckOptions& options, std::span<const int> to_original) {
  sim::RandomChooser chooser(options.seed);
  return read_producers(run_on_simulator(trace, chooser, {trace.policy, false}), to_original);
}

/// Applies the fixes of the trace `text` and checks the fixed trace; each
/// broken promise is a test failure naming `name`. Returns the number of
/// findings the applied fixes were to remove.
std::size_t check_fixes(const std::string& text, const std::string& name) {
  const Trace original = parse_trace(text, name);
  const TraceCheckOptions options;
  const Report report = check_trace(original, options);
  const AppliedFixes applied = apply_fixes(text, original, report, options);
  Trace fixed;
  try {
    fixed = parse_trace(applied.trace.text, name);
  } catch (const TraceError& e) {
    ADD_FAILURE() << name << ": the fixed trace does not parse: " << e.what() << "\n" << applied.trace.text;
    return 0;
  }
  const std::vector<int> to_original = applied.trace.to_original();
  std::set<FindingId> fixed_ids, left_ids;
  const std::set<std::size_t> applied_groups(applied.applied.begin(), applied.applied.end());
  for (std::size_t g = 0; g < report.groups.size(); ++g)
    for (const std::size_t i : report.groups[g].findings)
      (applied_groups.contains(g) ? fixed_ids : left_ids).insert(id_of(report.findings[i], {}));
  for (const ReportFinding& f : check_trace(fixed, options).findings) {
    const FindingId id = id_of(f, to_original);
    EXPECT_FALSE(fixed_ids.contains(id)) << name << ": still there after its fix: " << finding_label(f) << " at "
                                         << short_ref(f.first) << "\n"
                                         << applied.trace.text;
    EXPECT_TRUE(left_ids.contains(id) || fixed_ids.contains(id))
        << name << ": new after the fix: " << finding_label(f) << " at " << short_ref(f.first)
        << (f.second ? " and " + short_ref(*f.second) : "") << "\n"
        << applied.trace.text;
  }
  const ReadProducers was = producers_of(original, options, {});
  const ReadProducers now = producers_of(fixed, options, to_original);
  for (const auto& [read, writers] : was) {
    const auto it = now.find(read);
    EXPECT_TRUE(it != now.end() && it->second == writers)
        << name << ": line " << read.line << " reads " << read.buffer << "[" << read.lo << ":" << read.hi
        << "] from another write after the fix (its producer was line " << *writers.begin() << ")\n"
        << applied.trace.text;
  }
  return fixed_ids.size();
}

/// The producers of `read` byte by byte, from every op of the run: each
/// byte's kernel writes HB-before the read that no other such write
/// follows, neighbouring bytes with the same writers joined. The oracle
/// ProducerIndex, which looks at a few writes of each stream, must agree with.
std::vector<Produced> producers_byte_by_byte(const sim::DeviceModel& model, sim::OpRef read) {
  std::vector<Produced> out;
  for (const sim::OpAccess& r : model.accesses(read)) {
    if (!reads(r.access)) continue;
    for (std::uint64_t byte = r.range.lo; byte < r.range.hi; ++byte) {
      std::vector<sim::OpRef> covering;
      for (std::uint32_t s = 0; s < model.stream_count(); ++s)
        for (std::uint32_t i = 0; i < model.op_count(sim::StreamIndex{s}); ++i) {
          const sim::OpRef w{sim::StreamIndex{s}, i};
          if (model.op_kind(w) != sim::OpKind::Kernel || !model.happens_before(w, read)) continue;
          for (const sim::OpAccess& a : model.accesses(w))
            if (writes(a.access) && a.allocation == r.allocation && a.range.lo <= byte && byte < a.range.hi)
              covering.push_back(w);
        }
      std::set<sim::OpRef> last;
      for (const sim::OpRef w : covering)
        if (std::none_of(covering.begin(), covering.end(), [&](sim::OpRef v) { return model.happens_before(w, v); }))
          last.insert(w);
      if (last.empty()) continue;
      const std::vector<sim::OpRef> writers(last.begin(), last.end());
      if (!out.empty() && out.back().bytes.hi == byte && out.back().writers == writers)
        ++out.back().bytes.hi;
      else
        out.push_back(Produced{{byte, byte + 1}, writers});
    }
  }
  return out;
}

/// Runs `text` once and compares ProducerIndex with the byte-by-byte oracle
/// for every op; returns how many ops read bytes some write produced.
std::size_t expect_indexed_producers(const std::string& text, const std::string& name) {
  const Trace trace = parse_trace(text, name);
  sim::RandomChooser chooser(1);
  const Execution run = run_on_simulator(trace, chooser, {trace.policy, false});
  const sim::DeviceModel& model = run.model();
  const ProducerIndex index(model);
  std::size_t produced = 0;
  for (std::uint32_t s = 0; s < model.stream_count(); ++s)
    for (std::uint32_t i = 0; i < model.op_count(sim::StreamIndex{s}); ++i) {
      const sim::OpRef read{sim::StreamIndex{s}, i};
      const std::vector<Produced> want = producers_byte_by_byte(model, read), got = index.of(read);
      const auto show = [](const std::vector<Produced>& ps) {
        std::string out;
        for (const Produced& p : ps) {
          out += "[" + std::to_string(p.bytes.lo) + ":" + std::to_string(p.bytes.hi) + ") by";
          for (const sim::OpRef w : p.writers)
            out += " s" + std::to_string(w.stream.value) + "#" + std::to_string(w.index);
          out += "; ";
        }
        return out;
      };
      const bool same =
          std::equal(want.begin(), want.end(), got.begin(), got.end(),
                     [](const Produced& a, const Produced& b) { return a.bytes == b.bytes && a.writers == b.writers; });
      EXPECT_TRUE(same) << name << ": op s" << s << "#" << i << "\nwant: " << show(want) << "\ngot:  " << show(got)
                        << "\n"
                        << text;
      produced += !want.empty();
    }
  return produced;
}

TEST(Producers, TheIndexAgreesWithEveryWriteAskedByteByByte) {
  // The newest write of s1 covers half the read: the older one there still
  // produces the other half; s2's write races with both.
  std::size_t produced = expect_indexed_producers(
      "stream s1\nstream s2\nstream s3\nevent e\nbuffer A 64\n"
      "launch old on s1 writes A\nlaunch mid on s1 writes A[8:16]\nlaunch new on s1 writes A[0:32]\n"
      "launch other on s2 writes A[24:40]\nlaunch reader on s1 reads A[16:24]\n"
      "record e on s1\nwait e on s3\nrecord e on s2\nwait e on s3\nlaunch combine on s3 reads A\n"
      "sync device\nfree A\n",
      "halves.trace");
  EXPECT_GE(produced, 2u);
  for (std::uint64_t seed = 1; seed <= 240; ++seed) {
    produced += expect_indexed_producers(generate_trace_program(seed), "generated-" + std::to_string(seed) + ".trace");
    produced +=
        expect_indexed_producers(generate_observing_program(seed), "observing-" + std::to_string(seed) + ".trace");
  }
  EXPECT_GT(produced, 500u) << "the generators should make programs whose reads see writes";
}

TEST(FixCheck, EveryExampleFixedKeepsEveryProducer) {
  std::size_t examples = 0, fixed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(STREAMCHECK_EXAMPLES_DIR)) {
    if (entry.path().extension() != ".trace") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    fixed += check_fixes(text.str(), entry.path().filename().string());
    ++examples;
  }
  EXPECT_GE(examples, 23u);
  EXPECT_GT(fixed, 5u);
}

TEST(FixCheck, TwoHundredFortyGeneratedProgramsFixedKeepEveryProducer) {
  std::size_t fixed = 0;
  for (std::uint64_t seed = 1; seed <= 240; ++seed)
    fixed += check_fixes(generate_trace_program(seed), "generated-" + std::to_string(seed) + ".trace");
  EXPECT_GT(fixed, 200u) << "the generator should make racy programs";
}

/// `text` with `n` host syncs appended: long enough that apply_fixes checks
/// no producer, and may keep every fix at once.
std::string padded(std::string text, int n = static_cast<int>(kMaxStatementsCheckedForProducers)) {
  for (int i = 0; i < n; ++i) text += "sync device\n";
  return text;
}

/// apply_fixes of `text` (its own report, or `report` when given) against
/// apply_fixes_one_at_a_time; returns how many groups it kept.
std::size_t expect_same_fixes(const std::string& text, const std::string& name, std::optional<Report> report = {}) {
  const Trace trace = parse_trace(text, name);
  const TraceCheckOptions options;
  if (!report) report = check_trace(trace, options);
  const AppliedFixes at_once = apply_fixes(text, trace, *report, options);
  const AppliedFixes one_by_one = apply_fixes_one_at_a_time(text, trace, *report, options);
  EXPECT_TRUE(at_once.trace.text == one_by_one.trace.text && at_once.trace.new_line == one_by_one.trace.new_line)
      << name << ": the fixed texts differ";
  EXPECT_EQ(at_once.applied, one_by_one.applied) << name;
  EXPECT_EQ(at_once.not_applied.size(), one_by_one.not_applied.size()) << name;
  for (std::size_t i = 0; i < std::min(at_once.not_applied.size(), one_by_one.not_applied.size()); ++i) {
    EXPECT_EQ(at_once.not_applied[i].group, one_by_one.not_applied[i].group) << name;
    EXPECT_EQ(at_once.not_applied[i].why, one_by_one.not_applied[i].why) << name;
  }
  return at_once.applied.size();
}

TEST(ApplyFixes, AllAtOnceKeepsWhatOneAtATimeKeeps) {
  // A loop with the wait missing: a cause in each iteration, on both sides.
  std::string loop = "stream s1\nstream s2\nevent e\nbuffer A 4096 on s1\n";
  for (int i = 0; i < 400; ++i) loop += "launch produce on s1 writes A\nrecord e on s1\nlaunch consume on s2 reads A\n";
  loop += "sync device\nfree A on s1\n";
  EXPECT_EQ(expect_same_fixes(loop, "loop.trace"), 799u);
  // On a host thread, and across devices (each fix's event declared on its
  // stream's device).
  EXPECT_GT(expect_same_fixes(padded("thread worker\ndevice 1\nstream t1\nstream t2\ndevice 0\nstream s\n"
                                     "buffer A 64 on t1\nbuffer B 64 on s\n"
                                     "@worker device 1\n@worker launch w on t1 writes A\n"
                                     "@worker launch r on t2 reads A\n"
                                     "launch k on s writes B\n@worker launch r2 on t2 reads A\nsync device\n"
                                     "free A on t1\nfree B on s\n"),
                              "devices.trace"),
            0u);
  std::size_t kept = 0;
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    kept += expect_same_fixes(padded(generate_trace_program(seed)), "generated-" + std::to_string(seed) + ".trace");
    kept += expect_same_fixes(padded(generate_observing_program(seed)), "observing-" + std::to_string(seed) + ".trace");
  }
  EXPECT_GT(kept, 100u);
}

/// A report of no finding whose groups carry `edits` (hand-made: fixes no
/// check would offer, to see which apply_fixes keeps).
Report report_with_groups(std::vector<std::vector<TraceEdit>> edits) {
  Report r;
  for (auto& e : edits) r.groups.push_back(FindingGroup{{}, std::move(e), std::nullopt});
  return r;
}

TEST(ApplyFixes, EditsThatParseOnlyTogetherAreKeptOneAtATime) {
  // Lines 1-3 declare, 4-1003 sync, then a capture of s.
  const std::string capture = padded("stream s nonblocking\nstream side nonblocking\nbuffer X 4096 on s\n") +
                              "capture begin s\nlaunch scale on s writes X\nlaunch bias on s writes X\n"
                              "capture end s graph G\nlaunch graph G on s\nsync device\nfree X on s\n";
  using E = TraceEdit;
  // The first forks `side` into the capture and leaves it there
  // (unjoined), the second joins it back but alone waits on an event not
  // recorded in the capture: each parses only with the other.
  const Report fork_join = report_with_groups({
      {E::declare("event f1"), E::insert_after(1005, "record f1 on s"), E::insert_after(1005, "wait f1 on side")},
      {E::declare("event f2"), E::insert_before(1007, "record f2 on side"), E::insert_before(1007, "wait f2 on s")},
  });
  EXPECT_EQ(expect_same_fixes(capture, "capture.trace", fork_join), 0u);
  // Without the capture: lines that are no record or wait (a capture opened
  // by one group and closed by the other), and a wait on an event the next
  // group declares.
  const std::string plain = padded("stream s nonblocking\nstream side nonblocking\nbuffer X 4096 on s\n") +
                            "launch scale on s writes X\nlaunch bias on s writes X\nsync device\nfree X on s\n";
  const Report open_close = report_with_groups({
      {E::insert_before(1004, "capture begin s")},
      {E::insert_after(1005, "capture end s graph G")},
  });
  EXPECT_EQ(expect_same_fixes(plain, "open_close.trace", open_close), 0u);
  const Report borrowed = report_with_groups({
      {E::insert_after(1004, "wait f1 on side")},
      {E::declare("event f1"), E::insert_after(1004, "record f1 on s")},
  });
  EXPECT_EQ(expect_same_fixes(plain, "borrowed.trace", borrowed), 1u);
  // Records and waits of their own events that do not parse all together
  // (a stream no line declares): one at a time says which.
  const Report unknown_stream = report_with_groups({
      {E::declare("event f1"), E::insert_after(1004, "record f1 on nowhere")},
      {E::declare("event f2"), E::insert_after(1004, "record f2 on s"), E::insert_after(1005, "wait f2 on side")},
  });
  EXPECT_EQ(expect_same_fixes(plain, "unknown_stream.trace", unknown_stream), 1u);
  // The first leaves device 1 current after its declarations, so the
  // trace's stream s is device 1's and cannot write X, device 0's memory,
  // unless the second sets device 0 back.
  const std::string two_devices =
      padded("stream s\ndevice 0\nbuffer X 64\n") + "launch k on s writes X\nsync device\nfree X\n";
  const Report device_left = report_with_groups({
      {E::declare("device 1"), E::declare("event f1"), E::insert_after(1004, "record f1 on s")},
      {E::declare("device 0")},
  });
  EXPECT_EQ(expect_same_fixes(two_devices, "device_left.trace", device_left), 1u);
}

}  // namespace
}  // namespace streamcheck::tools
