// streamcheck-gpu: proves on a real GPU that the simulator's model matches
// the hardware (SPEC §6). One command runs it all and prints the table:
//   1. the correct protocol on random client programs, each repeated K times
//      with random delays: 0 mismatches expected;
//   2. every mutant's simulator counterexample, replayed K times with the
//      earlier op of the racing pair held back: at least one mismatch for
//      each race mutant (the others must break their property here too);
//   3. the pool scenarios under all 16 policy settings: every reuse outcome
//      the GPU shows must be one the simulator allows;
//   4. PoolResource (model/pool_backend.h): the same random programs through
//      the pool, 0 mismatches expected; each pool mutant's first simulator
//      counterexample among generated programs replayed with the earlier op
//      of its racing pair held back: a race must corrupt data;
//   5. devices (R13, on a machine with two GPUs: one per trace device): the
//      multi-device examples and generated multi-device programs (kernels,
//      peer copies, each device's pool reused, cross-device waits), each
//      replayed K times: the clean ones 0 mismatches under random delays,
//      each with one wait left out a race the simulator reports and the GPU
//      shows as corrupted data with its first op held back. `devices` runs
//      this part alone; with fewer than two GPUs it says so and is skipped;
//   6. the debug tier (model/debug_guard.h, its canaries, poison and checks
//      run by kernels): the programs of part 1 through DebugGuardResource
//      over the correct protocol, with the layers of part 1 over the tier:
//      0 mismatches, no property violation and no finding of the tier.
// Exit 0: all hold (conformance: part 5 may be skipped, as its verdict line
// says); 1: one does not; 2: usage; 77: no GPU, or `devices` with fewer
// than two (skipped: nothing checked).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>
#include <string>

#include "backend_cuda/cuda_backend.h"
#include "backend_cuda/guard_memory.h"
#include "backend_sim/explorer.h"
#include "backend_sim/sim_backend.h"
#include "model/pool_backend.h"
#include "props/client_gen.h"
#include "props/harness.h"
#include "props/pool_scenarios.h"
#include "tools/device_programs.h"
#include "tools/explore.h"
#include "tools/trace.h"
#include "tools/trace_check.h"
#include "tools/trace_gpu.h"

namespace {

using streamcheck::MutantId;
using streamcheck::PoolPolicy;
using streamcheck::cuda::CudaBackend;
using streamcheck::cuda::CudaBackendOptions;
namespace props = streamcheck::props;
namespace sim = streamcheck::sim;

struct Options {
  std::uint32_t programs = 200;
  std::uint32_t reps = 20;
  std::uint32_t pool_reps = 10;
  std::uint64_t seed = 1;
  std::uint32_t device_programs = 200;  // part 5
  std::string examples = "examples";    // part 5: the multi-device examples
};

std::unique_ptr<CudaBackend> make_backend(const PoolPolicy& policy) {
  CudaBackendOptions o;
  o.policy = policy;
  auto b = CudaBackend::create(o);
  if (!b) throw std::runtime_error("creating the CUDA backend failed: " + b.error().to_string());
  return std::move(b).value();
}

struct GpuRun {
  std::optional<props::Violation> violation;
  std::uint64_t mismatches = 0;
};

/// Runs a client program through the harness on a fresh GPU backend (`G`:
/// the debug tier's guard memory, for a guarded layer).
template <class Protocol, class G = void>
GpuRun run_on_gpu(const props::ClientProgram& program, const PoolPolicy& policy,
                  std::set<std::pair<std::uint32_t, std::uint32_t>> delays, std::uint64_t delay_ns,
                  const props::LayerChoice& layer) {
  auto backend = make_backend(policy);
  backend->force_delays(std::move(delays), delay_ns);
  GpuRun run;
  // Through the layer the simulator's run called (a budget, a log), as it did.
  {
    props::Harness<CudaBackend, Protocol, G> harness(*backend, layer);
    for (const auto& op : program) {
      run.violation = harness.apply(op);
      if (run.violation) break;  // as the simulator's run did
    }
    if (!run.violation) run.violation = harness.finish();
  }
  run.mismatches = backend->mismatches_total();
  return run;
}

std::string today() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::ostringstream os;
  os << std::put_time(std::gmtime(&t), "%Y-%m-%d");
  return os.str();
}

/// Part 1, or part 6 (`through_tier`): the same programs and layers with
/// the debug tier under the layers.
bool correct_protocol(const Options& o, std::ostream& out, bool through_tier = false) {
  // Programs from the explorer's generator (RapidCheck, seeded), delays from
  // a separate stream of numbers.
  rc::Random programs(o.seed);
  // RapidCheck's size: programs of up to 40 ops, as `streamcheck explore`.
  constexpr int kProgramSize = 39;
  const auto generator = props::gen_client_program();
  sim::SplitMix64 rng(o.seed);
  std::uint64_t mismatches = 0, runs = 0, violations = 0;
  std::optional<props::Violation> first_violation;
  rc::Random layers(o.seed);
  for (std::uint32_t p = 0; p < o.programs; ++p) {
    const props::ClientProgram program = generator(programs.split(), kProgramSize).value();
    // The layers of `streamcheck explore`: the resource, a budget or a log.
    props::LayerChoice layer = streamcheck::tools::layer_for_program(p, layers);
    layer.guarded = through_tier;
    for (std::uint32_t k = 0; k < o.reps; ++k) {
      // Random gates shake the completion order from run to run.
      std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
      for (int d = 0; d < 3; ++d) delays.insert({rng.below(props::kClientStreams), rng.below(16)});
      const PoolPolicy policy = PoolPolicy::from_bits(p % 16);
      auto r = through_tier ? run_on_gpu<streamcheck::CorrectProtocol, streamcheck::cuda::CudaGuardMemory>(
                                  program, policy, delays, 50'000, layer)
                            : run_on_gpu<streamcheck::CorrectProtocol>(program, policy, delays, 50'000, layer);
      if (std::getenv("STREAMCHECK_GPU_TRACE")) std::cerr << "correct: program " << p << " rep " << k << "\n";
      ++runs;
      mismatches += r.mismatches;
      if (r.violation) {
        ++violations;
        if (!first_violation) first_violation = r.violation;
      }
    }
  }
  out << (through_tier ? "\n### The debug tier (DebugGuardResource) over the correct protocol"
                       : "\n### Correct protocol")
      << "\n\n| programs | repetitions each | runs | mismatching words | property violations |\n"
      << "| --- | --- | --- | --- | --- |\n| " << o.programs << " | " << o.reps << " | " << runs << " | " << mismatches
      << " | " << violations << " |\n";
  if (first_violation) out << "\nfirst violation: " << props::to_string(*first_violation) << "\n";
  return mismatches == 0 && violations == 0;
}

bool mutants(const Options& o, std::ostream& out) {
  bool ok = true;
  out << "\n### Mutants: simulator counterexample replayed on the GPU\n\n"
      << "| mutant | simulator finding | ops | held back | runs with mismatches (of " << o.reps
      << ") | property broken on the GPU | verdict |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& m : streamcheck::kMutants) {
    streamcheck::tools::ExploreOptions eo;
    eo.mutant = m.id;
    eo.seed = o.seed;
    const auto c = streamcheck::tools::find_counterexample(eo);
    if (!c) {
      out << "| " << m.name << " | none found | | | | | FAIL |\n";
      ok = false;
      continue;
    }
    const bool race = c->violation.property == props::Property::P1RaceFreedom && c->race.has_value();
    std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
    if (race) delays.insert({c->race->first.stream.value, c->race->first.index});
    // Keep freed memory mapped in the pool: a racing kernel then reads or
    // writes stale data (a mismatch we can count) instead of faulting on
    // unmapped memory, which would end the CUDA context for the process.
    PoolPolicy policy = PoolPolicy::from_bits(c->shrunk.policy_index);
    policy.release_threshold = std::numeric_limits<std::uint64_t>::max();
    std::uint32_t with_mismatch = 0, broken = 0;
    std::optional<props::Property> gpu_violation;
    for (std::uint32_t k = 0; k < o.reps; ++k) {
      const GpuRun r = streamcheck::with_protocol(m.id, [&]<class P>() {
        return run_on_gpu<P>(c->shrunk.program, policy, delays, 2'000'000, c->shrunk.layer);
      });
      if (r.mismatches > 0) ++with_mismatch;
      if (r.violation) {
        ++broken;
        if (!gpu_violation) gpu_violation = r.violation->property;
      }
    }
    // A race names its finding kind beside the property.
    const std::string kind =
        race ? std::string(props::to_string(c->violation.property)) + ": " + std::string(sim::to_string(c->race->kind))
             : std::string(props::to_string(c->violation.property));
    // Only races are expected to corrupt data; the other mutants break a
    // host-side property (P3/P4/P5), shown for information: M9's needs the
    // pool to hand the same address out again, which the GPU may not do.
    const bool pass = race ? with_mismatch > 0 : true;
    ok = ok && pass;
    out << "| " << m.name << " | " << kind << " | " << c->shrunk.program.size() << " | "
        << (race ? "s" + std::to_string(c->race->first.stream.value) + "#" + std::to_string(c->race->first.index) : "-")
        << " | " << with_mismatch << " | " << broken << "/" << o.reps
        << (gpu_violation ? " (" + std::string(props::to_string(*gpu_violation)) + ")" : "") << " | "
        << (race ? (pass ? "ok" : "FAIL") : "n/a (not a race)") << " |\n";
  }
  return ok;
}

std::set<bool> sim_outcomes(props::PoolScenario sc, const PoolPolicy& policy) {
  std::set<bool> outcomes;
  (void)sim::explore(sim::Dfs{}, sim::Bounds{std::numeric_limits<std::uint64_t>::max()}, [&](sim::Chooser& chooser) {
    sim::DeviceModel model(chooser, policy);
    sim::SimBackend b(model);
    const auto s0 = b.add_stream("s0");
    const auto s1 = b.add_stream("s1");
    outcomes.insert(props::run_pool_scenario(b, s0, s1, sc, [](auto) {}));
    return false;
  });
  return outcomes;
}

std::string show(const std::set<bool>& s) {
  std::string out;
  if (s.contains(true)) out += "reused";
  if (s.contains(false)) out += out.empty() ? "other" : " / other";
  return out.empty() ? "-" : out;
}

bool pool(const Options& o, std::ostream& out) {
  bool ok = true;
  out << "\n### Pool reuse: what the simulator allows and what the GPU did\n\n"
      << "B reused A's address (\"reused\") or got another (\"other\"); " << o.pool_reps
      << " GPU runs per row. Policy bits: follow-event-dependencies, opportunistic, internal-dependencies, "
         "keep-on-sync.\n\n| scenario | policy | simulator allows | GPU observed | verdict |\n"
         "| --- | --- | --- | --- | --- |\n";
  for (auto sc : props::kPoolScenarios) {
    for (std::uint32_t bits = 0; bits < 16; ++bits) {
      const PoolPolicy policy = PoolPolicy::from_bits(bits);
      const auto allowed = sim_outcomes(sc, policy);
      std::set<bool> observed;
      for (std::uint32_t k = 0; k < o.pool_reps; ++k) {
        auto b = make_backend(policy);
        const auto s0 = b->add_stream();
        const auto s1 = b->add_stream();
        observed.insert(props::run_pool_scenario(*b, s0, s1, sc, [&](auto ref) {
          if (auto st = b->enqueue_delay(ref, 2'000'000); !st) throw std::runtime_error(st.error().to_string());
        }));
      }
      bool conforms = true;
      for (bool v : observed) conforms = conforms && allowed.contains(v);
      ok = ok && conforms;
      out << "| " << to_string(sc) << " | " << (bits & 1) << (bits >> 1 & 1) << (bits >> 2 & 1) << (bits >> 3 & 1)
          << " | " << show(allowed) << " | " << show(observed) << " | " << (conforms ? "ok" : "FAIL") << " |\n";
    }
  }
  return ok;
}

// --- 4. PoolResource

template <class Q>
using PooledCuda = streamcheck::PooledBackend<CudaBackend, Q>;
template <class Q>
using PooledSim = streamcheck::PooledBackend<sim::SimBackend, Q>;

/// A client program through the pool on a fresh GPU backend (the core
/// Resource over PooledBackend<CudaBackend, Q>).
template <class Q>
GpuRun run_pooled_on_gpu(const props::ClientProgram& program, const PoolPolicy& policy,
                         std::set<std::pair<std::uint32_t, std::uint32_t>> delays, std::uint64_t delay_ns) {
  CudaBackendOptions options;
  options.policy = policy;
  auto backend = CudaBackend::create_as<PooledCuda<Q>>(streamcheck::PoolOptions{}, options);
  if (!backend) throw std::runtime_error("creating the pooled CUDA backend failed: " + backend.error().to_string());
  backend.value()->force_delays(std::move(delays), delay_ns);
  GpuRun run;
  {
    props::Harness<PooledCuda<Q>> harness(*backend.value());
    for (const auto& op : program) {
      run.violation = harness.apply(op);
      if (run.violation) break;
    }
    if (!run.violation) run.violation = harness.finish();
  }
  run.mismatches = backend.value()->mismatches_total();
  return run;
}

struct PoolCounterexample {
  props::ClientProgram program;
  std::uint32_t program_number = 0;
  std::uint32_t policy = 0;
  props::Violation violation;
  std::optional<streamcheck::tools::RacingPair> race;
};

/// The first generated program (of 400, 8 random schedules each) whose
/// simulated run through the pool mutant Q breaks a property.
template <class Q>
std::optional<PoolCounterexample> find_pool_counterexample(const Options& o) {
  rc::Random programs(o.seed);
  const auto generator = props::gen_client_program();
  for (std::uint32_t p = 0; p < 400; ++p) {
    const props::ClientProgram program = generator(programs.split(), 39).value();
    for (std::uint32_t k = 0; k < 8; ++k) {
      sim::RandomChooser chooser(o.seed * 1'000'003 + p * 8 + k);
      sim::DeviceModel model(chooser, sim::PoolPolicy::from_bits(p % 16));
      PooledSim<Q> backend(streamcheck::PoolOptions{}, model);
      std::optional<props::Violation> violation;
      {
        props::Harness<PooledSim<Q>> harness(backend);
        for (const auto& op : program)
          if ((violation = harness.apply(op))) break;
        if (!violation) violation = harness.finish();
      }
      if (!violation) continue;
      PoolCounterexample c{program, p, p % 16, *violation, std::nullopt};
      for (const auto& f : model.findings())
        if (f.second) {
          c.race = streamcheck::tools::RacingPair{f.first, *f.second, f.kind};
          break;
        }
      return c;
    }
  }
  return std::nullopt;
}

bool pool_resource(const Options& o, std::ostream& out) {
  // The correct pool: the programs of part 1, through the pool.
  rc::Random programs(o.seed);
  const auto generator = props::gen_client_program();
  sim::SplitMix64 rng(o.seed + 1);
  std::uint64_t mismatches = 0, runs = 0, violations = 0;
  std::optional<props::Violation> first_violation;
  for (std::uint32_t p = 0; p < o.programs; ++p) {
    const props::ClientProgram program = generator(programs.split(), 39).value();
    for (std::uint32_t k = 0; k < o.reps; ++k) {
      std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
      for (int d = 0; d < 3; ++d) delays.insert({rng.below(props::kClientStreams), rng.below(16)});
      auto r = run_pooled_on_gpu<streamcheck::CorrectPool>(program, PoolPolicy::from_bits(p % 16), delays, 50'000);
      ++runs;
      mismatches += r.mismatches;
      if (r.violation) {
        ++violations;
        if (!first_violation) first_violation = r.violation;
      }
    }
  }
  bool ok = mismatches == 0 && violations == 0;
  out << "\n### PoolResource: the correct pool\n\n| programs | repetitions each | runs | mismatching words | property "
         "violations |\n| --- | --- | --- | --- | --- |\n| "
      << o.programs << " | " << o.reps << " | " << runs << " | " << mismatches << " | " << violations << " |\n";
  if (first_violation) out << "\nfirst violation: " << props::to_string(*first_violation) << "\n";

  out << "\n### PoolResource mutants: the first simulator counterexample among generated programs, replayed on the "
         "GPU\n\n| mutant | simulator finding | program | ops | held back | runs with mismatches (of "
      << o.reps << ") | property broken on the GPU | verdict |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& m : streamcheck::kPoolMutants) {
    streamcheck::with_pool_protocol(m.id, [&]<class Q>() {
      const auto c = find_pool_counterexample<Q>(o);
      if (!c) {
        // PM3 needs a stream destroyed, PM4 a request near 2^64: client
        // programs make neither (tests/props/test_pool_sim.cpp kills them).
        out << "| " << m.name
            << " | not reached by generated client programs | | | | | | n/a (killed on the simulator: "
            << "CTest " << m.name << ") |\n";
        return;
      }
      const bool race = c->violation.property == props::Property::P1RaceFreedom && c->race.has_value();
      std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
      if (race) delays.insert({c->race->first.stream.value, c->race->first.index});
      PoolPolicy policy = PoolPolicy::from_bits(c->policy);
      policy.release_threshold = std::numeric_limits<std::uint64_t>::max();  // keep freed memory mapped (part 2)
      std::uint32_t with_mismatch = 0, broken = 0;
      std::optional<props::Property> gpu_violation;
      for (std::uint32_t k = 0; k < o.reps; ++k) {
        const GpuRun r = run_pooled_on_gpu<Q>(c->program, policy, delays, 2'000'000);
        if (r.mismatches > 0) ++with_mismatch;
        if (r.violation) {
          ++broken;
          if (!gpu_violation) gpu_violation = r.violation->property;
        }
      }
      const std::string kind = race ? std::string(props::to_string(c->violation.property)) + ": " +
                                          std::string(sim::to_string(c->race->kind))
                                    : std::string(props::to_string(c->violation.property));
      const bool pass = race ? with_mismatch > 0 : true;
      ok = ok && pass;
      out << "| " << m.name << " | " << kind << " | #" << c->program_number << " | " << c->program.size() << " | "
          << (race ? "s" + std::to_string(c->race->first.stream.value) + "#" + std::to_string(c->race->first.index)
                   : "-")
          << " | " << with_mismatch << " | " << broken << "/" << o.reps
          << (gpu_violation ? " (" + std::string(props::to_string(*gpu_violation)) + ")" : "") << " | "
          << (race ? (pass ? "ok" : "FAIL") : "n/a (not a race)") << " |\n";
    });
  }
  return ok;
}

// --- 5. devices (R13 on two GPUs)

namespace tools = streamcheck::tools;

/// The simulator's verdict on a trace: explored over its executions (DFS,
/// bounded), and the report of the first finding's schedule replayed (whose
/// findings' first ops the GPU replay holds back), or of no finding.
struct SimVerdict {
  tools::Report explored;
  tools::Report replayed;  // empty when clean
  bool racy() const { return !explored.findings.empty(); }
};
SimVerdict simulate(const tools::Trace& trace) {
  tools::TraceCheckOptions o;
  o.strategy = tools::Strategy::Dfs;
  o.max_schedules = 2000;
  SimVerdict v{tools::explore_trace(trace, o), {}};
  if (v.racy()) v.replayed = tools::replay_trace(trace, v.explored.findings.front().schedule, o);
  return v;
}

struct DeviceRuns {
  std::uint32_t runs = 0, corrupted = 0;  // runs with corrupted reads or wrong final contents
  std::uint64_t words = 0;
  std::string device;
  std::uint32_t gpus_used = 0;
};
/// Replays `trace` `reps` times, one run each so that every run gets its own
/// random gates (3 ops of the first 16 on each stream held back 50 us) on
/// top of the simulator's findings' first ops (held back 2 ms).
DeviceRuns replay_on_gpus(const tools::Trace& trace, const SimVerdict& v, std::uint32_t reps, sim::SplitMix64& rng) {
  DeviceRuns out;
  const auto streams = static_cast<std::uint32_t>(trace.streams.size() + trace.default_streams.size());
  for (std::uint32_t k = 0; k < reps; ++k) {
    std::set<std::pair<std::uint32_t, std::uint32_t>> gates;
    if (!v.racy())
      for (int d = 0; d < 3; ++d) gates.insert({rng.below(streams), rng.below(16)});
    const tools::GpuReplayResult r = tools::replay_trace_on_gpu(trace, v.replayed, tools::TraceCheckOptions{}, 1,
                                                                v.racy() ? 2'000'000 : 50'000, gates);
    if (!r.available) throw std::runtime_error("no GPU: " + r.why);
    ++out.runs;
    if (r.runs_with_mismatches + r.runs_with_wrong_final_contents > 0) ++out.corrupted;
    out.words += r.mismatching_words + r.wrong_final_words;
    out.device = r.device;
    out.gpus_used = r.gpus_used;
  }
  return out;
}

/// What part 5 found: it needs two GPUs, so on one it checks nothing and
/// says so (never a pass).
enum class PartVerdict : std::uint8_t { Holds, Fails, Skipped };

PartVerdict devices(const Options& o, std::ostream& out) {
  out << "\n### Devices (R13): one GPU per trace device\n\n";
  std::string why;
  const int gpus = tools::available_gpus(&why);
  if (gpus < 2) {
    out << "skipped: the multi-device rows need two GPUs; this machine has " << gpus << (why.empty() ? "" : ": " + why)
        << "\n";
    return PartVerdict::Skipped;
  }
  // Each run makes and drops a backend; retaining the primary contexts
  // here keeps the driver from tearing them down between runs.
  std::vector<streamcheck::cuda::Context> retained;
  for (int g = 0; g < 2; ++g) {
    auto c = streamcheck::cuda::Context::primary(g);
    if (!c) throw std::runtime_error("GPU " + std::to_string(g) + ": " + c.error().to_string());
    retained.push_back(std::move(c).value());
  }
  sim::SplitMix64 rng(o.seed + 5);
  bool ok = true;
  out << "#### The multi-device examples\n\n| trace | simulator (every execution) | GPUs | runs with corrupted data "
         "(of "
      << o.reps << ") | words | verdict |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const char* name : {"57_event_of_another_device.trace", "58_event_of_another_device_fixed.trace",
                           "59_peer_copy_without_wait.trace", "60_peer_copy_without_wait_fixed.trace",
                           "61_device_sync_of_the_wrong_device.trace", "62_device_sync_of_the_wrong_device_fixed.trace",
                           "71_cross_device_pool_reuse.trace", "72_cross_device_pool_reuse_fixed.trace"}) {
    const tools::Trace trace = tools::load_trace(o.examples + "/" + name);
    const SimVerdict v = simulate(trace);
    const DeviceRuns r = replay_on_gpus(trace, v, o.reps, rng);
    const bool pass = r.gpus_used >= 2 && (v.racy() ? r.corrupted > 0 : r.words == 0);
    ok = ok && pass;
    out << "| " << name << " | " << (v.racy() ? "data race" : "clean") << " | " << r.gpus_used << " | " << r.corrupted
        << " | " << r.words << " | " << (pass ? "ok" : "FAIL") << " |\n";
  }

  // Generated programs: every one clean, each with one wait left out racy.
  std::uint32_t clean = 0, clean_runs = 0, clean_bad_runs = 0, racy = 0, racy_shown = 0, left_out_ordered = 0;
  std::uint64_t clean_words = 0, waits = 0, cross = 0, copies = 0, reallocations = 0;
  std::uint32_t sim_disagrees = 0, gpus_used = 2, bounded = 0;
  std::string first_failure;
  for (std::uint32_t p = 0; p < o.device_programs; ++p) {
    const std::uint64_t seed = o.seed * 1'000'003 + p;
    const tools::DeviceProgram program = tools::generate_device_program(seed);
    waits += program.waits;
    cross += program.cross_device_waits;
    copies += program.peer_copies;
    reallocations += program.pool_reallocations;
    const tools::Trace trace = tools::parse_trace(program.text, "generated-" + std::to_string(seed));
    const SimVerdict v = simulate(trace);
    if (v.racy() || !v.explored.notes.empty()) {  // the generator's promise broken: a bug here, not in the GPU
      ++sim_disagrees;
      if (first_failure.empty()) first_failure = "program seed " + std::to_string(seed) + " is not clean";
      continue;
    }
    ++clean;
    if (!v.explored.coverage.exhaustive) ++bounded;  // clean in every execution DFS reached, not in all
    const DeviceRuns r = replay_on_gpus(trace, v, o.reps, rng);
    clean_runs += r.runs;
    clean_bad_runs += r.corrupted;
    clean_words += r.words;
    gpus_used = std::min(gpus_used, r.gpus_used);
    if (r.words > 0 && first_failure.empty()) first_failure = "program seed " + std::to_string(seed) + " corrupted";
    if (program.waits == 0) continue;
    const std::uint32_t leave_out = rng.below(program.waits);
    const tools::DeviceProgram variant = tools::generate_device_program(seed, {}, leave_out);
    const tools::Trace racy_trace = tools::parse_trace(variant.text, "generated-" + std::to_string(seed) + "-racy");
    const SimVerdict rv = simulate(racy_trace);
    if (!rv.racy()) {  // ordered anyway (through another stream's wait)
      ++left_out_ordered;
      continue;
    }
    ++racy;
    const DeviceRuns rr = replay_on_gpus(racy_trace, rv, o.reps, rng);
    if (rr.corrupted > 0)
      ++racy_shown;
    else if (first_failure.empty())
      first_failure = "program seed " + std::to_string(seed) + " without wait " + std::to_string(leave_out) + " (" +
                      variant.left_out + ") showed nothing";
  }
  const bool generated_ok = sim_disagrees == 0 && clean_words == 0 && racy_shown == racy && gpus_used >= 2;
  ok = ok && generated_ok;
  out << "\n#### Generated programs (tools/device_programs.cpp)\n\n"
      << o.device_programs << " programs of 2 devices x 2 streams: " << waits << " waits (" << cross
      << " across devices), " << copies << " peer copies, " << reallocations
      << " buffers allocated again from their device's pool after a free.\n\n"
      << "| programs | simulator clean | of them not explored to the end (DFS bound 2000) | runs each | runs | runs "
         "with corrupted data | words | verdict |\n"
      << "| --- | --- | --- | --- | --- | --- | --- | --- |\n| " << o.device_programs << " | " << clean << " | "
      << bounded << " | " << o.reps << " | " << clean_runs << " | " << clean_bad_runs << " | " << clean_words << " | "
      << (sim_disagrees == 0 && clean_words == 0 ? "ok" : "FAIL") << " |\n\n"
      << "| one wait left out | simulator: a race | ordered anyway | races shown on the GPU (>= 1 of " << o.reps
      << " runs) | verdict |\n| --- | --- | --- | --- | --- |\n| " << clean << " | " << racy << " | "
      << left_out_ordered << " | " << racy_shown << " | " << (racy_shown == racy ? "ok" : "FAIL") << " |\n";
  if (!first_failure.empty()) out << "\nfirst failure: " << first_failure << "\n";
  return ok ? PartVerdict::Holds : PartVerdict::Fails;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Runs the GPU validation (correct protocol, mutant counterexamples, pool reuse, PoolResource, devices, the "
      "debug tier) and prints the "
      "table.\n"
      "Exit 0: the model matches the GPU; 1: it does not; 2: usage; 77: no GPU here (skipped).",
      "streamcheck-gpu"};
  app.require_subcommand(1);
  CLI::App* conformance = app.add_subcommand("conformance", "run all six parts and print the table");
  conformance->add_option("--programs", o.programs, "random client programs for the correct protocol and pool")
      ->capture_default_str();
  conformance->add_option("--reps", o.reps, "repetitions of each program and counterexample")->capture_default_str();
  conformance->add_option("--pool-reps", o.pool_reps, "GPU runs per pool scenario and policy")->capture_default_str();
  conformance->add_option("--seed", o.seed, "seed of the generated programs and delays")->capture_default_str();
  const auto add_device_options = [&](CLI::App* verb) {
    verb->add_option("--device-programs", o.device_programs, "generated multi-device programs (part 5)")
        ->capture_default_str();
    verb->add_option("--examples", o.examples, "the examples directory (part 5)")->capture_default_str();
  };
  add_device_options(conformance);
  CLI::App* devices_only = app.add_subcommand("devices", "run part 5 alone (two GPUs: one per trace device)");
  add_device_options(devices_only);
  devices_only->add_option("--reps", o.reps, "repetitions of each program and example")->capture_default_str();
  devices_only->add_option("--seed", o.seed, "seed of the generated programs and delays")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and exits 0; a usage error exits 2, as documented above.
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::cout << std::unitbuf;  // a run cut short still shows every finished row
  std::string why;
  if (!streamcheck::cuda::Driver::get(&why)) {
    std::cout << "streamcheck-gpu: skipped: " << why << "\n";
    return 77;
  }
  try {
    auto probe = make_backend(PoolPolicy{});
    std::cout << "## GPU conformance, " << today() << "\n\n"
              << "device: " << probe->device_description()
              << " (GPUs here: " << streamcheck::cuda::driver().device_count() << ")\n";
    if (devices_only->parsed())
      std::cout << "command: streamcheck-gpu devices --device-programs " << o.device_programs << " --reps " << o.reps
                << " --seed " << o.seed << "\n";
    else
      std::cout << "command: streamcheck-gpu conformance --programs " << o.programs << " --reps " << o.reps
                << " --pool-reps " << o.pool_reps << " --seed " << o.seed << " --device-programs " << o.device_programs
                << "\n";
    probe.reset();
    if (devices_only->parsed()) {
      const PartVerdict e = devices(o, std::cout);
      if (e == PartVerdict::Skipped) {
        std::cout << "\nverdict: skipped (nothing checked: fewer than two GPUs)\n";
        return 77;
      }
      std::cout << "\nverdict: "
                << (e == PartVerdict::Holds ? "the model matches the GPUs" : "MISMATCH between model and GPUs") << "\n";
      return e == PartVerdict::Holds ? 0 : 1;
    }
    const bool a = correct_protocol(o, std::cout);
    const bool b = mutants(o, std::cout);
    const bool c = pool(o, std::cout);
    const bool d = pool_resource(o, std::cout);
    const PartVerdict e = devices(o, std::cout);
    const bool f = correct_protocol(o, std::cout, /*through_tier=*/true);
    const bool all = a && b && c && d && e != PartVerdict::Fails && f;
    std::cout << "\nverdict: " << (all ? "the model matches the GPU" : "MISMATCH between model and GPU")
              << (e == PartVerdict::Skipped ? " (part 5, devices, skipped: fewer than two GPUs)" : "") << "\n";
    return all ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "streamcheck-gpu: failed: " << e.what() << "\n";
    return 3;
  }
}
