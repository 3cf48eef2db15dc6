#include "tools/explore.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backend_sim/schedule.h"
#include "tools/explore_variant.h"
#include "tools/tool_protocols.h"

namespace streamcheck::tools {

namespace {

using Bytes = std::vector<std::uint8_t>;

/// The choices a run took, as the bytes that make a ByteChooser take them
/// again.
Bytes schedule_bytes(const sim::Chooser& run) {
  Bytes bytes;
  for (const auto& c : run.taken()) {
    if (c.taken > 0xff)
      throw std::logic_error(fmt::format("explore: choice {} took option {}, more than a schedule byte can replay",
                                         bytes.size(), c.taken));
    bytes.push_back(static_cast<std::uint8_t>(c.taken));
  }
  return bytes;
}

/// A failing case as one shrinkable value: the program shrinks as RapidCheck
/// commands do (delete commands, shrink fields, repair what no longer
/// applies), the schedule bytes as a container (drop chunks, lower bytes),
/// the policy towards 0.
rc::Shrinkable<ExploreCase> shrinkable_case(rc::Shrinkable<props::ClientProgram> program,
                                            rc::Shrinkable<Bytes> schedule, rc::Shrinkable<std::uint32_t> policy,
                                            props::LayerChoice layer) {
  // The layer is kept as it was: a mutant of a decorator fails only through it.
  return rc::shrinkable::lambda(
      [=] {
        return ExploreCase{program.value(), schedule.value(), policy.value(), layer};
      },
      [=] {
        return rc::seq::concat(rc::seq::map(program.shrinks(),
                                            [=](rc::Shrinkable<props::ClientProgram> p) {
                                              return shrinkable_case(std::move(p), schedule, policy, layer);
                                            }),
                               rc::seq::map(schedule.shrinks(),
                                            [=](rc::Shrinkable<Bytes> s) {
                                              return shrinkable_case(program, std::move(s), policy, layer);
                                            }),
                               rc::seq::map(policy.shrinks(), [=](rc::Shrinkable<std::uint32_t> p) {
                                 return shrinkable_case(program, schedule, std::move(p), layer);
                               }));
      });
}

rc::Shrinkable<Bytes> shrinkable_bytes(Bytes bytes) {
  return rc::shrinkable::shrinkRecur(std::move(bytes), [](const Bytes& b) {
    return rc::seq::concat(rc::shrink::removeChunks(b),
                           rc::shrink::eachElement(b, [](std::uint8_t x) { return rc::shrink::integral(x); }));
  });
}

rc::Shrinkable<std::uint32_t> shrinkable_policy(std::uint32_t policy) {
  return rc::shrinkable::shrinkRecur(policy, [](std::uint32_t p) { return rc::shrink::towards<std::uint32_t>(p, 0); });
}

void print_report(const ExploreOptions& o, const ExploreOutcome& outcome, std::ostream& out) {
  const std::string name = o.mutant ? std::string(info(*o.mutant).name) : "correct";
  out << fmt::format("streamcheck explore: resource protocol ({}) on the simulated backend\n", name);
  if (o.mutant) out << fmt::format("mutant {}: {}\n", name, info(*o.mutant).description);
  out << fmt::format(
      "seed {}, {} programs (RapidCheck generator, up to {} ops each, op kinds drawn per program) x {} random "
      "schedules, pool policies: all 16 switch settings in turn; the client calls the resource itself, a "
      "BudgetResource or a LoggingResource in turn\n",
      o.seed, o.programs, o.program_length, o.schedules_per_program);
  const std::string coverage = fmt::format("coverage: {} programs, {} schedules (random schedules: not exhaustive)\n",
                                           outcome.programs, outcome.schedules);
  const auto& c = outcome.counterexample;
  if (!c) {
    out << coverage << "findings: none\n";
    return;
  }
  out << fmt::format(
      "counterexample after {} schedules (program {}, schedule {}); shrunk from {} to {} ops in {} steps. The "
      "program, as it ran:\n",
      outcome.schedules, c->program_number, c->schedule_number, c->original.size(), c->shrunk.program.size(),
      c->shrink_steps);
  for (std::size_t i = 0; i < c->narrative.size(); ++i) out << fmt::format("  {}: {}\n", i, c->narrative[i]);
  if (c->at_op)
    out << fmt::format("violation at op {}:\n", *c->at_op);
  else
    out << "violation during teardown (commit all, deallocate all, reap, drain the device):\n";
  out << fmt::format("  {}\n", props::to_string(c->violation));
  out << fmt::format("pool policy: {}\n", sim::PoolPolicy::from_bits(c->shrunk.policy_index).describe());
  out << fmt::format("the client calls: {}\n", props::describe(c->shrunk.layer));
  out << fmt::format("schedule: {}\n", c->schedule);
  out << coverage;
  out << fmt::format("reproduce: streamcheck explore --seed {}", o.seed);
  const ExploreOptions defaults;
  if (o.programs != defaults.programs) out << fmt::format(" --programs {}", o.programs);
  if (o.schedules_per_program != defaults.schedules_per_program)
    out << fmt::format(" --schedules {}", o.schedules_per_program);
  if (o.program_length != defaults.program_length) out << fmt::format(" --length {}", o.program_length);
  if (o.mutant) out << fmt::format(" --mutant {}", name);
  out << "\nfindings: 1\n";
}

}  // namespace

namespace explore_detail {

std::pair<ExploreCase, std::size_t> shrink_failing_case(const rc::Shrinkable<props::ClientProgram>& program,
                                                        const sim::Chooser& run, std::uint32_t policy_index,
                                                        const props::LayerChoice& layer,
                                                        const std::function<bool(const ExploreCase&)>& fails) {
  return rc::shrinkable::findLocalMin(
      shrinkable_case(program, shrinkable_bytes(schedule_bytes(run)), shrinkable_policy(policy_index), layer), fails);
}

}  // namespace explore_detail

props::LayerChoice layer_for_program(std::uint32_t p, rc::Random& random) {
  const std::size_t budget = 1024 + random.next() % 15361;
  switch (p % 4) {
    case 2:
      return {props::LayerChoice::Kind::Budgeted, budget};
    case 3:
      return {props::LayerChoice::Kind::Logged, 0};
    default:
      return {};
  }
}

ExploreOutcome explore_protocol(const ExploreOptions& options) {
  return with_tool_protocol(options.mutant, [&]<class Protocol>() { return explore_variant<Protocol>(options); });
}

std::optional<Counterexample> find_counterexample(const ExploreOptions& options, std::uint64_t* explored) {
  ExploreOutcome outcome = explore_protocol(options);
  if (explored) *explored = outcome.schedules;
  return std::move(outcome.counterexample);
}

int explore(const ExploreOptions& options, std::ostream& out) {
  const ExploreOutcome outcome = explore_protocol(options);
  print_report(options, outcome, out);
  return outcome.counterexample ? 1 : 0;
}

std::string counterexample_svg(const Counterexample& c, std::optional<MutantId> mutant) {
  return with_tool_protocol(mutant, [&]<class Protocol>() { return counterexample_svg_variant<Protocol>(c.shrunk); });
}

std::vector<std::string> write_counterexample_pages(const std::string& dir) {
  std::vector<std::string> written;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream f(dir + "/" + name, std::ios::binary);
    if (!f) throw std::runtime_error(fmt::format("cannot write {}/{} (does the folder exist?)", dir, name));
    f << text;
    written.push_back(name);
  };
  std::string index =
      "# Counterexamples\n\nGenerated by `streamcheck counterexamples docs/counterexamples` (a test fails when "
      "these pages are stale). Each page is the shrunk counterexample `streamcheck explore --mutant Mk` finds "
      "for one mutant of the protocol (SPEC §5), as text and as SVG swimlanes of the failing run.\n\n"
      "| mutant | what it breaks | found |\n| --- | --- | --- |\n";
  for (const auto& m : kMutants) {
    ExploreOptions o;
    o.mutant = m.id;
    // One search per mutant: the page's text and its swimlanes come from it.
    const ExploreOutcome outcome = explore_protocol(o);
    if (!outcome.counterexample) throw std::runtime_error(fmt::format("no counterexample for {}", m.name));
    const Counterexample& c = *outcome.counterexample;
    std::ostringstream text;
    print_report(o, outcome, text);
    const std::string name(m.name);
    std::string page = fmt::format(
        "# {}: {}\n\nFound by `streamcheck explore --mutant {}` (seed 1); regenerate every page with `streamcheck "
        "counterexamples docs/counterexamples`.\n\n```text\n{}```\n\n",
        name, m.description, name, text.str());
    if (c.race)
      page +=
          "The racing pair is highlighted in red in the swimlanes of the failing run; the dashed red arrow is the "
          "missing edge.\n\n";
    else
      page += "Not a race: the property it breaks is shown above. The swimlanes show the run for reference.\n\n";
    page += fmt::format("![{} swimlanes]({}.svg)\n", name, name);
    write(name + ".md", page);
    write(name + ".svg", counterexample_svg(c, m.id));
    index +=
        fmt::format("| [{}]({}.md) | {} | {} |\n", name, name, m.description, props::to_string(c.violation.property));
  }
  write("README.md", index);
  return written;
}

}  // namespace streamcheck::tools
