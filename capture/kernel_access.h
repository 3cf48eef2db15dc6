// What a kernel's parameters do to memory, for the capture layer (SPEC §10).
// Sources, strongest first: a sidecar file of kernel signatures
// (`streamcheck capture --kernels FILE`), annotations compiled into the
// program (streamcheck/annotate.h), the kernel's demangled C++ signature
// (a `T const*` parameter only reads), and, where none says, read-write --
// each such guess is counted as a note in the trace's header.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "capture/trace_writer.h"

namespace streamcheck::capture {

/// What one parameter is, as far as the signature tells.
enum class ParamKind : std::uint8_t {
  ConstPointer,  // T const*: the kernel reads through it
  Pointer,       // T*: may read and write
  Scalar,        // int, float, size_t, bool, ...: no memory
  Other,         // a struct or anything else: may hold pointers
};

/// The demangled form of a mangled symbol, or std::nullopt (an extern "C"
/// kernel has no mangled name).
std::optional<std::string> demangle(const char* symbol);

/// The parameters of a demangled signature such as
/// `consume(float const*, float*, int)`, or std::nullopt when `signature`
/// has no parameter list.
std::optional<std::vector<ParamKind>> parameter_kinds(std::string_view signature);

/// The kernel's name as a sidecar file and annotations name it: the
/// demangled signature without its parameter list and, for a function
/// template, without its return type (`ns::scale<float>`).
std::string kernel_key(std::string_view signature);

/// Per-parameter accesses by kernel name, from a sidecar file or annotations.
class KernelTable {
 public:
  /// Parses a sidecar file's text: one kernel per line,
  /// `NAME | ACCESS ACCESS ...` with ACCESS one of reads, writes,
  /// readwrites, - (not memory); `#` comments. Throws std::invalid_argument
  /// with "LINE: message" on a malformed line.
  static KernelTable parse(std::string_view text);
  /// Parses one annotation's access list ("reads writes -"); throws
  /// std::invalid_argument on an unknown word.
  static std::vector<Access> parse_accesses(std::string_view words);

  void add(std::string name, std::vector<Access> accesses);
  const std::vector<Access>* find(std::string_view name) const;
  bool empty() const { return by_name_.empty(); }

 private:
  std::unordered_map<std::string, std::vector<Access>> by_name_;
};

}  // namespace streamcheck::capture
