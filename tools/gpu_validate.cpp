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
//      of its racing pair held back: a race must corrupt data.
// Exit 0: all three hold; 1: one does not; 2: usage; 77: no GPU (skipped).
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
#include "backend_sim/explorer.h"
#include "backend_sim/sim_backend.h"
#include "model/pool_backend.h"
#include "props/client_gen.h"
#include "props/harness.h"
#include "props/pool_scenarios.h"
#include "tools/explore.h"

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

/// Runs a client program through the harness on a fresh GPU backend.
template <class Protocol>
GpuRun run_on_gpu(const props::ClientProgram& program, const PoolPolicy& policy,
                  std::set<std::pair<std::uint32_t, std::uint32_t>> delays, std::uint64_t delay_ns,
                  const props::LayerChoice& layer) {
  auto backend = make_backend(policy);
  backend->force_delays(std::move(delays), delay_ns);
  GpuRun run;
  // Through the layer the simulator's run called (a budget, a log), as it did.
  {
    props::Harness<CudaBackend, Protocol> harness(*backend, layer);
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

bool correct_protocol(const Options& o, std::ostream& out) {
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
    const props::LayerChoice layer = streamcheck::tools::layer_for_program(p, layers);
    for (std::uint32_t k = 0; k < o.reps; ++k) {
      // Random gates shake the completion order from run to run.
      std::set<std::pair<std::uint32_t, std::uint32_t>> delays;
      for (int d = 0; d < 3; ++d) delays.insert({rng.below(props::kClientStreams), rng.below(16)});
      auto r = run_on_gpu<streamcheck::CorrectProtocol>(program, PoolPolicy::from_bits(p % 16), delays, 50'000, layer);
      if (std::getenv("STREAMCHECK_GPU_TRACE")) std::cerr << "correct: program " << p << " rep " << k << "\n";
      ++runs;
      mismatches += r.mismatches;
      if (r.violation) {
        ++violations;
        if (!first_violation) first_violation = r.violation;
      }
    }
  }
  out << "\n### Correct protocol\n\n| programs | repetitions each | runs | mismatching words | property violations |\n"
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Runs the GPU validation (correct protocol, mutant counterexamples, pool reuse, PoolResource) and prints the "
      "table.\n"
      "Exit 0: the model matches the GPU; 1: it does not; 2: usage; 77: no GPU here (skipped).",
      "streamcheck-gpu"};
  app.require_subcommand(1);
  CLI::App* conformance = app.add_subcommand("conformance", "run all four parts and print the table");
  conformance->add_option("--programs", o.programs, "random client programs for the correct protocol and pool")
      ->capture_default_str();
  conformance->add_option("--reps", o.reps, "repetitions of each program and counterexample")->capture_default_str();
  conformance->add_option("--pool-reps", o.pool_reps, "GPU runs per pool scenario and policy")->capture_default_str();
  conformance->add_option("--seed", o.seed, "seed of the generated programs and delays")->capture_default_str();
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
              << "device: " << probe->device_description() << "\n"
              << "command: streamcheck-gpu conformance --programs " << o.programs << " --reps " << o.reps
              << " --pool-reps " << o.pool_reps << " --seed " << o.seed << "\n";
    probe.reset();
    const bool a = correct_protocol(o, std::cout);
    const bool b = mutants(o, std::cout);
    const bool c = pool(o, std::cout);
    const bool d = pool_resource(o, std::cout);
    const bool all = a && b && c && d;
    std::cout << "\nverdict: " << (all ? "the model matches the GPU" : "MISMATCH between model and GPU") << "\n";
    return all ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "streamcheck-gpu: failed: " << e.what() << "\n";
    return 3;
  }
}
