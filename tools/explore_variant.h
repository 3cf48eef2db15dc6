// The built-in explorer's part that depends on the protocol variant
// (`streamcheck explore [--mutant Mk]`, tools/explore.cpp): one search and
// one replay per variant. Defined in tools/explore_variant_impl.h and
// explicitly instantiated in two files, so that each variant is compiled
// once, at the optimization it needs: explore_correct.cpp (the correct
// protocol, which the main job runs, at the build type's level) and
// explore_mutants.cpp (every mutant this build's tools have, at -O1 in a
// Release build). explore.cpp at -O3 with every variant in it was 217 CPU
// seconds, the largest compile of the default build; split, it is 9 s
// (explore.cpp) + 26 s (the correct protocol) + 111 s (22 mutants at -O1;
// tools/CMakeLists.txt says why not -O0) (docs/DEVELOPERS.md, "CI time").
// A variant without an instantiation is a link error, never a silent
// fallback.
#pragma once

#include <rapidcheck/Shrinkable.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "backend_sim/schedule.h"
#include "props/client_program.h"
#include "props/resource_layer.h"
#include "tools/explore.h"

namespace streamcheck::tools {

/// explore_protocol for one protocol variant.
template <class Protocol>
ExploreOutcome explore_variant(const ExploreOptions& options);

/// counterexample_svg for one protocol variant: the SVG swimlanes of the
/// shrunk case's run, replayed exactly.
template <class Protocol>
std::string counterexample_svg_variant(const ExploreCase& shrunk);

namespace explore_detail {

/// The local minimum RapidCheck's shrinking finds (shrinkable::findLocalMin)
/// from a failing run (the program, the choices the run took and its pool
/// policy, shrunk as one value; the layer kept as it was: a mutant of a
/// decorator fails only through it), and the number of steps it took.
/// Defined once, in tools/explore.cpp: only `fails` depends on the variant.
std::pair<ExploreCase, std::size_t> shrink_failing_case(const rc::Shrinkable<props::ClientProgram>& program,
                                                        const sim::Chooser& run, std::uint32_t policy_index,
                                                        const props::LayerChoice& layer,
                                                        const std::function<bool(const ExploreCase&)>& fails);

}  // namespace explore_detail

}  // namespace streamcheck::tools
