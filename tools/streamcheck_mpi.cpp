// streamcheck-mpi: one exploration of a trace split over the ranks of an MPI
// job. Rank r of n runs `explore FILE --shard r/n` (random and pct: the runs
// k with k % n == r; dfs: the subtrees of the choice tree rank r owns), the
// JSON reports are gathered at rank 0, and rank 0 prints the merged report:
// what `streamcheck explore` prints for the whole exploration (tools/merge.h
// says when byte for byte). Under Slurm: docs/TRACES.md.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "tools/merge.h"
#include "tools/trace_check.h"

namespace {

using namespace streamcheck;

struct Args {
  std::string file;
  std::string strategy = "random";
  std::uint64_t seed = 1;
  std::uint64_t schedules = 1000;
  std::uint32_t depth = 3;
  std::string faults = "off";
  std::vector<std::string> policy;
  bool json = false;
};

tools::TraceCheckOptions options_of(const Args& a, int rank, int size) {
  tools::TraceCheckOptions o;
  static const std::map<std::string, tools::Strategy> strategies{{"random", tools::Strategy::Random},
                                                                 {"pct", tools::Strategy::Pct},
                                                                 {"dfs", tools::Strategy::Dfs},
                                                                 {"dfs-schedules", tools::Strategy::DfsSchedules}};
  o.strategy = strategies.at(a.strategy);
  o.seed = a.seed;
  o.max_schedules = a.schedules;
  o.pct_depth = a.depth;
  o.faults = a.faults == "on";
  for (const auto& s : a.policy) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--policy takes SWITCH=VALUE, got '" + s + "'");
    o.policy_overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  o.shard = sim::Shard{static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(size)};
  return o;
}

/// Every rank's text, at rank 0 (empty elsewhere).
std::vector<std::string> gather(const std::string& text, int rank, int size) {
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<std::size_t>(size), 0);
  for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(rank == 0 ? static_cast<std::size_t>(offsets.back() + lengths.back()) : 0, '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0)
    for (int r = 0; r < size; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CLI::App app{
      "streamcheck-mpi: `streamcheck explore FILE` with its runs split over the MPI ranks; rank 0 prints "
      "the merged report (the same as one exploration's).",
      "streamcheck-mpi"};
  Args a;
  app.add_option("FILE", a.file, "the trace")->required()->check(CLI::ExistingFile);
  app.add_option("--strategy", a.strategy, "random, pct, dfs or dfs-schedules")
      ->check(CLI::IsMember({"random", "pct", "dfs", "dfs-schedules"}));
  app.add_option("--seed", a.seed, "seed of the exploration");
  app.add_option("--schedules", a.schedules, "runs of the whole exploration (dfs: of each rank's part)")
      ->check(CLI::Range(1, 1'000'000'000));
  app.add_option("--depth", a.depth, "--strategy pct: the bug depth (1-10)")->check(CLI::Range(1, 10));
  app.add_option("--faults", a.faults, "explore one injected fault per run")->check(CLI::IsMember({"on", "off"}));
  app.add_option("--policy", a.policy, "pool switch overrides, SWITCH=VALUE");
  app.add_flag("--json", a.json, "print the JSON report");
  int code = 0;
  try {
    app.parse(argc, argv);
    const tools::Report part = tools::explore_trace(tools::load_trace(a.file), options_of(a, rank, size));
    const std::vector<std::string> parts = gather(tools::report_json(part), rank, size);
    if (rank == 0) {
      std::vector<std::string> names;
      for (int r = 0; r < size; ++r) names.push_back("the report of rank " + std::to_string(r));
      const tools::Report merged = tools::merge_reports(parts, names);
      std::cout << (a.json ? tools::report_json(merged) : tools::report_text(merged));
      code = merged.verdict() == tools::Verdict::Clean ? 0 : 1;
    }
  } catch (const CLI::ParseError& e) {
    const int cli = e.get_exit_code();  // 0 for --help
    if (rank == 0) (void)app.exit(e);
    code = cli == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    // Every rank reads the same input, so an input error stops them all
    // before the gather; anything else must not leave the others waiting.
    std::cerr << "streamcheck-mpi (rank " << rank << "): " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
