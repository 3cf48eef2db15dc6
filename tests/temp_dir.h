// A fresh temporary folder of its own for a test that writes files.
//
// Why: tests run in parallel (ctest -j) and in several worktrees at once;
// fixed names in the shared temp folder (TempDir()/malformed.trace) let one
// run read another's half-written file, and leave litter behind. Every test
// that writes files makes one of these instead: mkdtemp(3) creates a new
// folder that nobody else has (under $TMPDIR, else /tmp), and the destructor
// removes it with everything in it.
#pragma once

#include <stdlib.h>  // mkdtemp (POSIX)

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace streamcheck::tests {

class FreshTempDir {
 public:
  /// `purpose` goes into the folder's name (streamcheck-<purpose>-XXXXXX) so
  /// that a folder left by a crashed test says which test made it.
  explicit FreshTempDir(std::string_view purpose = "test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / ("streamcheck-" + std::string(purpose) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a temporary folder " + pattern + ": " + std::strerror(errno) +
                               " (set TMPDIR to a writable folder)");
    path_ = pattern;
  }

  /// Removes the folder and its contents. A destructor must not throw: an
  /// error (e.g. the test made a file unremovable) leaves the folder behind.
  ~FreshTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  FreshTempDir(const FreshTempDir&) = delete;
  FreshTempDir& operator=(const FreshTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  /// The path of `name` inside the folder (nothing is created).
  std::filesystem::path file(std::string_view name) const { return path_ / name; }

  /// Writes `text` to `name` inside the folder and returns its path.
  std::filesystem::path write(std::string_view name, std::string_view text) const {
    const auto where = file(name);
    std::ofstream out(where, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + where.string());
    return where;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace streamcheck::tests
