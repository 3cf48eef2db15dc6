// The protocol variants the tools run (SPEC §5): the trace interpreter
// (`resource mutant Mk`, `resource pool mutant PMk`) and the built-in
// explorer (`explore --mutant Mk`) dispatch through these instead of
// model/mutants.h's with_protocol / with_pool_protocol.
//
// A default build has every variant. A build configured with
// STREAMCHECK_TOOL_MUTANTS=OFF (the sanitizer presets) has the correct
// protocol and only the mutants the bundled examples name: compiling the
// interpreter and the explorer once per variant was 21 of the ASan build's
// 52 CPU minutes (docs/DEVELOPERS.md, "CI time"). Naming another mutant
// there is an input error that says which build has it, never a run of the
// correct protocol under the mutant's name.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "model/mutants.h"

namespace streamcheck::tools {

#ifdef STREAMCHECK_TOOL_MUTANT_SUBSET
inline constexpr bool kToolsHaveEveryMutant = false;
#else
inline constexpr bool kToolsHaveEveryMutant = true;
#endif

/// The mutants a build without every variant keeps: those of
/// examples/10_resource_mutant_m4.trace, 11_resource_mutant_m1.trace and
/// 70_pool_mutant_pm2.trace, so that every bundled example runs in every
/// build, and so that a counterexample is still found, shrunk and drawn
/// under the sanitizers.
inline constexpr std::array kSubsetMutants{MutantId::M1, MutantId::M4};
inline constexpr std::array kSubsetPoolMutants{PoolMutantId::PM2};
static_assert(kSubsetMutants.size() == 2 && kSubsetMutants[0] == MutantId::M1 && kSubsetMutants[1] == MutantId::M4 &&
                  kSubsetPoolMutants.size() == 1 && kSubsetPoolMutants[0] == PoolMutantId::PM2,
              "with_tool_protocol and with_tool_pool_protocol below have a case for each kept mutant");

constexpr bool tools_have(MutantId m) {
  if (kToolsHaveEveryMutant) return true;
  for (MutantId kept : kSubsetMutants)
    if (kept == m) return true;
  return false;
}
constexpr bool tools_have(PoolMutantId m) {
  if (kToolsHaveEveryMutant) return true;
  for (PoolMutantId kept : kSubsetPoolMutants)
    if (kept == m) return true;
  return false;
}

/// Why a build lacks a mutant, and where to find it.
inline constexpr std::string_view kSubsetBuild =
    "this build was configured with STREAMCHECK_TOOL_MUTANTS=OFF (as the sanitizer presets are), whose tools run only "
    "M1, M4 and PM2; use a default build (cmake --preset default)";
/// What to tell whoever names a mutant this build lacks (`name`: "M5").
inline std::string mutant_not_built(std::string_view name) {
  return "mutant " + std::string(name) + " is not in this build: " + std::string(kSubsetBuild);
}

/// with_protocol over the variants this build has; any other mutant throws
/// std::invalid_argument (the parser and the command line refuse it first).
template <class Fn>
decltype(auto) with_tool_protocol(std::optional<MutantId> mutant, Fn&& fn) {
  if constexpr (kToolsHaveEveryMutant) {
    return with_protocol(mutant, fn);
  } else {
    if (!mutant) return fn.template operator()<CorrectProtocol>();
    switch (*mutant) {
      case MutantId::M1:
        return fn.template operator()<MutantSet<MutantId::M1>>();
      case MutantId::M4:
        return fn.template operator()<MutantSet<MutantId::M4>>();
      default:
        throw std::invalid_argument(mutant_not_built(info(*mutant).name));
    }
  }
}

/// with_pool_protocol over the pool variants this build has.
template <class Fn>
decltype(auto) with_tool_pool_protocol(std::optional<PoolMutantId> mutant, Fn&& fn) {
  if constexpr (kToolsHaveEveryMutant) {
    return with_pool_protocol(mutant, fn);
  } else {
    if (!mutant) return fn.template operator()<CorrectPool>();
    if (*mutant == PoolMutantId::PM2) return fn.template operator()<PoolMutantSet<PoolMutantId::PM2>>();
    for (const auto& m : kPoolMutants)
      if (m.id == *mutant) throw std::invalid_argument(mutant_not_built(m.name));
    throw std::invalid_argument("with_tool_pool_protocol: unknown pool mutant id " +
                                std::to_string(static_cast<int>(*mutant)));
  }
}

}  // namespace streamcheck::tools
