// The run-time switch of a mutant schema (tools/mutate.py, docs/MUTATION.md).
//
// tools/mutate.py copies the repository into a build folder and rewrites
// every mutation site of model/*.h there as a choice between the original
// code and its mutants, each guarded by SC_MUT(id). One build then serves
// every mutant: the process runs mutant `id` when STREAMCHECK_MUTANT=id, and
// the original code when the variable is unset or 0. Never included by the
// project itself, only by the rewritten copy.
//
// STREAMCHECK_MUTANT_REACHED=FILE makes every process append the ids of the
// sites it evaluated to FILE when it exits, so the report can tell a mutant
// the tests never reach from one they reach but do not notice.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace streamcheck_mutation {

inline constexpr int kMaxSites = 16384;

inline std::array<std::atomic<bool>, kMaxSites>& reached_sites() {
  static std::array<std::atomic<bool>, kMaxSites> reached{};
  return reached;
}

inline void write_reached_sites() {
  const char* path = std::getenv("STREAMCHECK_MUTANT_REACHED");
  if (!path || !*path) return;
  std::string text;
  for (int id = 0; id < kMaxSites; ++id)
    if (reached_sites()[id].load()) text += std::to_string(id) + "\n";
  // O_APPEND: the test processes of one run write to one file.
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::close(fd);
}

struct Switch {
  int active = 0;
  bool record = false;
  Switch() {
    const char* id = std::getenv("STREAMCHECK_MUTANT");
    active = id ? std::atoi(id) : 0;
    const char* reached = std::getenv("STREAMCHECK_MUTANT_REACHED");
    record = reached && *reached;
    if (record) std::atexit(write_reached_sites);
  }
};

inline bool on(int id) {
  static const Switch the_switch;
  if (the_switch.record && id > 0 && id < kMaxSites) reached_sites()[id].store(true, std::memory_order_relaxed);
  return the_switch.active == id;
}

}  // namespace streamcheck_mutation

// True when mutant `id` is the active one.
#define SC_MUT(id) (::streamcheck_mutation::on(id))
// The same in code that may be constant-evaluated (constexpr functions,
// default member initializers): constant evaluation takes the original code,
// so that the function stays usable in constant expressions. Not used
// elsewhere, because a `const bool x = ...` whose value folds is
// constant-evaluated too and would never see its mutant.
#define SC_MUT_CE(id) (!std::is_constant_evaluated() && ::streamcheck_mutation::on(id))
