// libFuzzer entry point (clang only: configure with the `fuzz` preset, or
// run tools/fuzz.sh). The corpus test (test_fuzz_corpus.cpp) runs the same
// function over tests/fuzz/corpus/ in the ordinary build.
#include "tests/fuzz/fuzz_trace.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  streamcheck::fuzz::run_trace_input(data, size);
  return 0;
}
