// `streamcheck capture -- PROGRAM ARGS...` (SPEC §10, docs/CAPTURE.md): runs
// an unmodified CUDA program with the capture library injected by the driver
// (CUDA_INJECTION64_PATH) and hands back the trace it wrote, for `explore`.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/ptx_access.h"

namespace streamcheck::tools {

/// What makes a capture impossible: no driver or GPU, no capture library,
/// a program that does not start or writes no trace. An input error (exit 2)
/// whose message says what to do.
class CaptureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CaptureOptions {
  std::vector<std::string> command;  // PROGRAM ARGS...
  std::string trace_path;            // where the trace is written
  std::string kernels;               // a sidecar file of kernel accesses ("" for none)
  std::string library;               // libstreamcheck_capture.so ("" : next to this executable)
  /// PTX files (`--ptx FILE`: `nvcc -ptx`, or kept by `-keep`) whose
  /// kernels' accesses are derived besides those of the PTX in the
  /// program's own fat binary.
  std::vector<std::string> ptx_files;
  /// `--no-ptx`: kernel accesses from the sidecar, annotations and
  /// signatures alone, as before PTX was read.
  bool derive_from_ptx = true;
};

struct CaptureResult {
  int program_status = 0;  // the program's exit status
  std::string trace_path;
  std::vector<std::string> not_captured;  // the trace header's "# not captured:" lines
  std::vector<std::string> assumed;       // its "# assumed:" lines
  /// What was derived from PTX before the run, and what was not: lines for
  /// the report (capture/ptx_access.h).
  std::vector<std::string> derived;
  std::vector<std::string> other_processes;  // TRACE.PID of programs it started that used CUDA
};

/// Kernel accesses derived from PTX (capture/ptx_access.h), and lines that
/// say from where and what was not derived.
struct PtxDerivation {
  capture::PtxKernelTable table;
  std::vector<std::string> lines;
  /// Every ELF file whose fat binary was read, as the loader would name it
  /// (canonical): the capture library reads the PTX of the others a program
  /// launches kernels from (dlopen, the system's directories) itself.
  std::vector<std::string> elf_files_read;
};

/// Derives the kernels of each file: an ELF file's fat binary (a program,
/// a shared library, and those of the libraries it links that
/// linked_libraries finds) or PTX text. Throws CaptureError for a missing file,
/// text that is not PTX, or a cut-off ELF file or fat binary.
PtxDerivation derive_from_ptx(const std::vector<std::string>& files);
/// The shared libraries the ELF program or library `file` links (DT_NEEDED,
/// and theirs) that the dynamic loader finds in the directories the files
/// name themselves (DT_RPATH, DT_RUNPATH, $ORIGIN expanded) or in
/// LD_LIBRARY_PATH, in the loader's order; each once. Libraries found only
/// in the system's directories (ld.so.cache, /lib, /usr/lib) are not
/// listed: the capture library reads a kernel's file there when the kernel
/// is first launched (docs/CAPTURE.md). Throws
/// std::runtime_error for a file that is not ELF or is cut short.
std::vector<std::filesystem::path> linked_libraries(const std::filesystem::path& file);

/// `streamcheck kernels FILE...`: the derivation as a --kernels file
/// (docs/CAPTURE.md), a parameter not derived written readwrites and marked.
std::string sidecar_from_ptx(const PtxDerivation& derived);

/// Why this machine cannot capture (no CUDA driver, no GPU, a build without
/// CUDA), or std::nullopt when it can.
std::optional<std::string> capture_unavailable();

/// Validates the options (the sidecar file is parsed first), runs the program
/// under the capture and reads the header of the trace it wrote. Throws
/// CaptureError.
CaptureResult run_capture(const CaptureOptions& options);

}  // namespace streamcheck::tools
