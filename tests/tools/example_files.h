// The bundled example traces, for tests that run every one of them. The
// test target defines STREAMCHECK_EXAMPLES_DIR (tests/tools/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace streamcheck::tools {

/// The full path of every examples/*.trace, sorted.
inline std::vector<std::string> example_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(STREAMCHECK_EXAMPLES_DIR))
    if (e.path().extension() == ".trace") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace streamcheck::tools
