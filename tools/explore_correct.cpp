// The built-in explorer for the correct protocol, at the build type's
// optimization: the main job (`streamcheck explore`) runs it
// (tools/explore_variant.h).
#include "tools/explore_variant_impl.h"

namespace streamcheck::tools {

template ExploreOutcome explore_variant<CorrectProtocol>(const ExploreOptions& options);
template std::string counterexample_svg_variant<CorrectProtocol>(const ExploreCase& shrunk);

}  // namespace streamcheck::tools
