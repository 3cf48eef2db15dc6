// How large an instance the exploration-heavy tests run.
//
// CI runs the CPU suite twice (tools/run.sh test): at full scale, then under
// ASan + UBSan, whose test preset sets STREAMCHECK_TEST_SCALE=sanitizer. The
// sanitizer run looks for memory errors and undefined behaviour, which a
// smaller instance of the same code path finds as well; the full instance,
// and the acceptance figure it pins, runs in the default suite. A few tests
// that explore hundreds of thousands of runs (and take minutes under ASan)
// pick their size here.
#pragma once

#include <cstdlib>
#include <string_view>

namespace streamcheck::tests {

/// True when the sanitizer test preset asked for the smaller instances.
inline bool sanitizer_scale() {
  const char* scale = std::getenv("STREAMCHECK_TEST_SCALE");
  return scale != nullptr && std::string_view(scale) == "sanitizer";
}

}  // namespace streamcheck::tests
