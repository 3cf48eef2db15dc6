#include "tools/explore.h"

#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend_sim/sim_backend.h"
#include "props/harness.h"
#include "tools/render.h"

namespace streamcheck::tools {

namespace {

struct RunResult {
  std::optional<std::string> violation;
  std::optional<std::size_t> at_op;  // nullopt: found during teardown
  std::string schedule;
  std::vector<std::string> narrative;
  std::optional<std::pair<sim::OpRef, sim::OpRef>> race;
};

template <class Protocol>
RunResult run_once(const props::ClientProgram& program, std::uint64_t schedule_seed, const sim::PoolPolicy& policy,
                   std::string* svg = nullptr) {
  sim::RandomChooser chooser(schedule_seed);
  sim::DeviceModel model(chooser, policy);
  sim::SimBackend backend(model);
  RunResult result;
  {
    props::Harness<sim::SimBackend, Protocol> harness(backend);
    for (std::size_t i = 0; i < program.size() && !result.violation; ++i) {
      if (auto v = harness.apply(program[i])) {
        result.violation = v;
        result.at_op = i;
      }
    }
    if (!result.violation) result.violation = harness.finish();
    result.narrative = harness.narrative();
  }
  for (const auto& f : model.findings()) {
    if (f.second) {
      result.race = std::make_pair(f.first, *f.second);
      break;
    }
  }
  if (svg) *svg = render_svg(model);
  result.schedule = chooser.schedule();
  return result;
}

struct Failure {
  props::ClientProgram program;
  std::uint64_t schedule_seed;
  std::uint32_t policy_index;
  RunResult result;
};

/// Tries the program under the failing schedule seed and a few derived
/// ones; a reduced program keeps failing if any of them still fails.
template <class Protocol>
std::optional<Failure> fails(const props::ClientProgram& program, const Failure& like) {
  for (std::uint64_t k = 0; k < 8; ++k) {
    const std::uint64_t seed = like.schedule_seed + k * 0x9e3779b97f4a7c15ULL;
    auto r = run_once<Protocol>(program, seed, sim::PoolPolicy::from_bits(like.policy_index));
    if (r.violation) return Failure{program, seed, like.policy_index, r};
  }
  return std::nullopt;
}

/// Greedy delta debugging: remove chunks of halving size while it fails.
template <class Protocol>
Failure shrink(Failure best) {
  for (std::size_t chunk = best.program.size() / 2; chunk >= 1; chunk /= 2) {
    for (std::size_t start = 0; start < best.program.size();) {
      props::ClientProgram candidate;
      for (std::size_t i = 0; i < best.program.size(); ++i)
        if (i < start || i >= start + chunk) candidate.push_back(best.program[i]);
      if (auto f = fails<Protocol>(candidate, best))
        best = *f;
      else
        start += chunk;
    }
    if (chunk == 1) break;
  }
  return best;
}

template <class Protocol>
std::optional<Counterexample> find_with(const ExploreOptions& o, std::uint64_t* explored_out) {
  sim::SplitMix64 rng(o.seed);
  std::uint64_t explored = 0;
  std::optional<Counterexample> found;
  for (std::uint32_t p = 0; p < o.programs && !found; ++p) {
    const props::ClientProgram program = props::random_program(rng, o.program_length);
    for (std::uint32_t s = 0; s < o.schedules_per_program; ++s) {
      const std::uint64_t schedule_seed = rng.next();
      const auto policy_index = static_cast<std::uint32_t>(explored % 16);
      ++explored;
      auto r = run_once<Protocol>(program, schedule_seed, sim::PoolPolicy::from_bits(policy_index));
      if (!r.violation) continue;
      const Failure shrunk = shrink<Protocol>(Failure{program, schedule_seed, policy_index, r});
      found = Counterexample{program,
                             shrunk.program,
                             shrunk.policy_index,
                             shrunk.schedule_seed,
                             shrunk.result.schedule,
                             *shrunk.result.violation,
                             shrunk.result.at_op,
                             shrunk.result.narrative,
                             shrunk.result.race,
                             explored,
                             p,
                             s};
      break;
    }
  }
  if (explored_out) *explored_out = explored;
  return found;
}

template <class Protocol>
int explore_with(const ExploreOptions& o, std::ostream& out) {
  const std::string name = o.mutant ? std::string(info(*o.mutant).name) : "correct";
  out << "streamcheck explore: resource protocol (" << name << ") on the simulated backend\n";
  if (o.mutant) out << "mutant " << name << ": " << info(*o.mutant).description << "\n";
  out << "seed " << o.seed << ", " << o.programs << " programs x " << o.schedules_per_program
      << " schedules, program length " << o.program_length << ", pool policies: all 16 switch settings in turn\n";
  std::uint64_t explored = 0;
  const auto c = find_with<Protocol>(o, &explored);
  if (!c) {
    out << "explored " << explored << " schedules\n";
    out << "findings: none\n";
    return 0;
  }
  out << "counterexample after " << c->explored << " schedules (program " << c->program_number << ", schedule "
      << c->schedule_number << "); shrunk from " << c->original.size() << " to " << c->program.size()
      << " ops. The program, as it ran:\n";
  for (std::size_t i = 0; i < c->narrative.size(); ++i) out << "  " << i << ": " << c->narrative[i] << "\n";
  if (c->at_op)
    out << "violation at op " << *c->at_op << ":\n";
  else
    out << "violation during teardown (commit all, deallocate all, reap, drain the device):\n";
  out << "  " << c->violation << "\n";
  out << "pool policy: " << sim::PoolPolicy::from_bits(c->policy_index).describe() << "\n";
  out << "schedule: " << c->schedule << "\n";
  out << "reproduce: streamcheck explore --seed " << o.seed;
  const ExploreOptions defaults;
  if (o.programs != defaults.programs) out << " --programs " << o.programs;
  if (o.schedules_per_program != defaults.schedules_per_program) out << " --schedules " << o.schedules_per_program;
  if (o.program_length != defaults.program_length) out << " --length " << o.program_length;
  out << (o.mutant ? " --mutant " + name : "") << "\n";
  out << "findings: 1\n";
  return 1;
}

}  // namespace

std::optional<Counterexample> find_counterexample(const ExploreOptions& options, std::uint64_t* explored) {
  return with_protocol(options.mutant, [&]<class Protocol>() { return find_with<Protocol>(options, explored); });
}

std::string counterexample_svg(const Counterexample& c, std::optional<MutantId> mutant) {
  return with_protocol(mutant, [&]<class Protocol>() {
    std::string svg;
    (void)run_once<Protocol>(c.program, c.schedule_seed, sim::PoolPolicy::from_bits(c.policy_index), &svg);
    return svg;
  });
}

std::vector<std::string> write_counterexample_pages(const std::string& dir) {
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream f(dir + "/" + name, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write " + dir + "/" + name + " (does the folder exist?)");
    f << text;
    written.push_back(name);
  };
  std::ostringstream index;
  index << "# Counterexamples\n\nGenerated by `streamcheck counterexamples docs/counterexamples` (a test fails when "
           "these pages are stale). Each page is the shrunk counterexample `streamcheck explore --mutant Mk` finds "
           "for one mutant of the protocol (SPEC §5), as text and as SVG swimlanes of the failing run.\n\n"
           "| mutant | what it breaks | found |\n| --- | --- | --- |\n";
  for (const auto& m : kMutants) {
    ExploreOptions o;
    o.mutant = m.id;
    std::ostringstream text;
    (void)explore(o, text);
    const auto c = find_counterexample(o);
    if (!c) throw std::runtime_error(std::string("no counterexample for ") + std::string(m.name));
    const std::string name(m.name);
    std::ostringstream page;
    page << "# " << name << ": " << m.description << "\n\nFound by `streamcheck explore --mutant " << name
         << "` (seed 1); regenerate every page with `streamcheck counterexamples docs/counterexamples`.\n\n"
         << "```text\n"
         << text.str() << "```\n\n";
    if (c->race)
      page << "The racing pair is highlighted in red in the swimlanes of the failing run; the dashed red arrow is the "
              "missing edge.\n\n";
    else
      page << "Not a race: the property it breaks is shown above. The swimlanes show the run for reference.\n\n";
    page << "![" << name << " swimlanes](" << name << ".svg)\n";
    write(name + ".md", page.str());
    write(name + ".svg", counterexample_svg(*c, m.id));
    index << "| [" << name << "](" << name << ".md) | " << m.description << " | "
          << c->violation.substr(0, c->violation.find(':')) << " |\n";
  }
  write("README.md", index.str());
  return written;
}

int explore(const ExploreOptions& options, std::ostream& out) {
  return with_protocol(options.mutant, [&]<class Protocol>() { return explore_with<Protocol>(options, out); });
}

}  // namespace streamcheck::tools
