// The protocol variants the tools run (SPEC §5): the trace interpreter
// (`resource mutant Mk`, `resource pool mutant PMk`) and the built-in
// explorer (`explore --mutant Mk`) dispatch through these instead of
// model/mutants.h's with_protocol / with_pool_protocol: the same dispatch
// (with_protocol_listed) over the list of variants this build has.
//
// A default build has every variant. A build configured with
// STREAMCHECK_TOOL_MUTANTS=OFF (the sanitizer presets) has the correct
// protocol and only the mutants the bundled examples name: compiling the
// interpreter and the explorer once per variant was 21 of the ASan build's
// 52 CPU minutes (docs/DEVELOPERS.md, "CI time"). Naming another mutant
// there is an input error that says which build has it, never a run of the
// correct protocol under the mutant's name.
#pragma once

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

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
              "kSubsetBuild below names the kept mutants");

/// The variants of one kind (MutantId or PoolMutantId) this build's tools
/// have.
template <class Id>
constexpr const auto& tool_mutants() {
  if constexpr (std::is_same_v<Id, MutantId>) {
    if constexpr (kToolsHaveEveryMutant)
      return kEveryMutantId;
    else
      return kSubsetMutants;
  } else {
    if constexpr (kToolsHaveEveryMutant)
      return kEveryPoolMutantId;
    else
      return kSubsetPoolMutants;
  }
}

template <class Id>
constexpr bool tools_have(Id m) {
  return std::ranges::find(tool_mutants<Id>(), m) != tool_mutants<Id>().end();
}

/// Why a build lacks a mutant, and where to find it.
inline constexpr std::string_view kSubsetBuild =
    "this build was configured with STREAMCHECK_TOOL_MUTANTS=OFF (as the sanitizer presets are), whose tools run only "
    "M1, M4 and PM2; use a default build (cmake --preset default)";
/// What to tell whoever names a mutant this build lacks (`name`: "M5").
inline std::string mutant_not_built(std::string_view name) {
  return "mutant " + std::string(name) + " is not in this build: " + std::string(kSubsetBuild);
}

/// with_protocol / with_pool_protocol over the variants this build has;
/// any other mutant throws std::invalid_argument saying which build has it
/// (the parser and the command line refuse it first).
template <class Id, class Fn>
decltype(auto) with_tool_protocol(std::optional<Id> mutant, Fn&& fn) {
  if (mutant && !tools_have(*mutant)) throw std::invalid_argument(mutant_not_built(info(*mutant).name));
  return with_protocol_listed<tool_mutants<Id>()>(mutant, fn);
}

}  // namespace streamcheck::tools
