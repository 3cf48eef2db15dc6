// What a kernel does through each parameter, derived from its PTX (SPEC §10,
// docs/CAPTURE.md "Memory a kernel touches"): the fourth source of kernel
// accesses, below a sidecar file and annotations and above the C++
// signature, because it reads the code itself (a `float*` the kernel only
// reads is a read; a pointer it never dereferences is no memory).
//
// The analysis is a flow-insensitive taint of PTX's virtual registers: a
// register carries the parameters whose value reaches it through
// arithmetic; a load, store or atomic through an address carrying parameter
// k is a read, write or read-write of k's allocation. Whatever it cannot
// follow -- a parameter's value stored to memory, passed to a function the
// PTX does not define, used by an instruction it does not model -- leaves
// that parameter undecided (std::nullopt, with the reason), and the capture
// falls back to the signature. It never decides "no access" where an access
// could hide: every instruction that names a tainted address is either
// modelled or makes the parameter undecided.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "capture/trace_writer.h"

namespace streamcheck::capture {

struct PtxParam {
  /// None (not memory the kernel touches), Reads, Writes, ReadWrites; or
  /// std::nullopt when the analysis could not follow the parameter.
  std::optional<Access> access;
  std::string undecided_because;  // set when access is std::nullopt
};

struct PtxKernel {
  std::string symbol;  // the entry's name: the mangled symbol, or the extern "C" name
  std::vector<PtxParam> params;
  /// Reads or writes through addresses the kernel loads from memory (a table
  /// of pointers): memory no argument names, which the trace cannot show.
  bool accesses_loaded_addresses = false;
};

/// The word a --kernels file uses for an access (reads, writes, readwrites,
/// - for no memory), or ? for an undecided one.
const char* access_word(const std::optional<Access>& access);

/// The kernels (`.entry`) of one PTX module, in the order they appear.
/// Throws std::invalid_argument when `ptx` is not PTX text (no `.version`)
/// or an entry is cut off.
std::vector<PtxKernel> derive_ptx_accesses(std::string_view ptx);

/// Kernels derived from several modules (a fat binary holds one per
/// architecture), by symbol: a kernel in several modules gets the union of
/// what each says, undecided where any is undecided or the parameter
/// counts differ.
class PtxKernelTable {
 public:
  void add(const PtxKernel& kernel);
  const PtxKernel* find(std::string_view symbol) const;
  std::size_t size() const { return by_symbol_.size(); }
  /// In symbol order.
  std::vector<const PtxKernel*> kernels() const;

  /// The text `streamcheck capture` hands the capture library
  /// (STREAMCHECK_PTX_KERNELS): one kernel a line, `SYMBOL | W W ...` with
  /// W one of reads, writes, readwrites, - (no memory), ? (undecided).
  std::string format() const;
  /// Reads format()'s text; throws std::invalid_argument ("LINE: message").
  static PtxKernelTable parse(std::string_view text);

 private:
  std::unordered_map<std::string, PtxKernel> by_symbol_;
};

}  // namespace streamcheck::capture
