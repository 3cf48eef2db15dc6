// The built-in explorer for every protocol mutant this build's tools have
// (tools/tool_protocols.h), compiled at -O1 in a Release build
// (tools/CMakeLists.txt; tools/explore_variant.h says why).
#include <algorithm>
#include <array>

#include "tools/explore_variant_impl.h"
#include "tools/tool_protocols.h"

// X(Mk) for each mutant with an instantiation below; the static_assert keeps
// the list equal to tool_mutants<MutantId>(), which the dispatch in
// tools/explore.cpp goes through.
// clang-format off
#ifdef STREAMCHECK_TOOL_MUTANT_SUBSET
#define STREAMCHECK_EXPLORE_MUTANTS(X) X(M1) X(M4)
#else
#define STREAMCHECK_EXPLORE_MUTANTS(X) \
  X(M1) X(M2) X(M3) X(M4) X(M5) X(M6) X(M7) X(M8) X(M9) X(M10) X(M11) \
  X(M12) X(M13) X(M14) X(M15) X(M16) X(M17) X(M18) X(M19) X(M20) X(M21) X(M22)
#endif
// clang-format on

namespace streamcheck::tools {

#define STREAMCHECK_MUTANT_ID(M) MutantId::M,
inline constexpr std::array kInstantiatedMutants{STREAMCHECK_EXPLORE_MUTANTS(STREAMCHECK_MUTANT_ID)};
#undef STREAMCHECK_MUTANT_ID
static_assert(std::ranges::equal(kInstantiatedMutants, tool_mutants<MutantId>()),
              "every mutant with_tool_protocol dispatches to needs its instantiation here, and no other");

#define STREAMCHECK_INSTANTIATE_EXPLORE(M)                                                        \
  template ExploreOutcome explore_variant<MutantSet<MutantId::M>>(const ExploreOptions& options); \
  template std::string counterexample_svg_variant<MutantSet<MutantId::M>>(const ExploreCase& shrunk);
STREAMCHECK_EXPLORE_MUTANTS(STREAMCHECK_INSTANTIATE_EXPLORE)
#undef STREAMCHECK_INSTANTIATE_EXPLORE

}  // namespace streamcheck::tools

#undef STREAMCHECK_EXPLORE_MUTANTS
