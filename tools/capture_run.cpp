#include "tools/capture_run.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "capture/fatbin.h"
#include "capture/kernel_access.h"
#include "capture/ptx_access.h"
#ifdef STREAMCHECK_WITH_CUDA
#include "backend_cuda/driver.h"
#endif

extern char** environ;

namespace streamcheck::tools {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kEndMarker = "# end of capture";
constexpr std::string_view kNotCaptured = "# not captured: ";
constexpr std::string_view kAssumed = "# assumed: ";

/// The capture library: given, or next to this executable (build tree), or
/// in ../lib (installed tree).
fs::path capture_library(const std::string& given) {
  if (!given.empty()) return fs::absolute(given);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate : {self.parent_path() / "libstreamcheck_capture.so",
                                      self.parent_path() / ".." / "lib" / "libstreamcheck_capture.so"})
      if (fs::exists(candidate)) return fs::canonical(candidate);
  }
  throw CaptureError(
      "the capture library libstreamcheck_capture.so is not next to streamcheck nor in ../lib (it is built where the "
      "CUDA Toolkit with CUPTI is found); name it with --library PATH");
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// TRACE.PID files: the traces of programs the captured program started
/// (capture/injection.cpp names them so).
std::vector<std::string> other_process_traces(const fs::path& trace) {
  std::vector<std::string> out;
  std::error_code ec;
  const std::string prefix = trace.filename().string() + ".";
  for (const auto& entry : fs::directory_iterator(trace.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix) && name.size() > prefix.size() &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The file posix_spawnp would run for `program`.
std::optional<fs::path> program_file(const std::string& program) {
  if (program.find('/') != std::string::npos)
    return fs::exists(program) ? std::optional(fs::path(program)) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

bool is_elf(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic,
                                                     "\x7f"
                                                     "ELF",
                                                     4) == 0;
}

/// The directories of a DT_RPATH or DT_RUNPATH list, $ORIGIN as the
/// directory of the file that names them (the loader's meaning).
std::vector<fs::path> search_dirs(const std::string& list, const fs::path& origin) {
  std::vector<fs::path> dirs;
  std::string::size_type start = 0;
  while (start <= list.size()) {
    const auto end = std::min(list.find(':', start), list.size());
    std::string dir = list.substr(start, end - start);
    for (const char* token : {"${ORIGIN}", "$ORIGIN"})
      for (auto at = dir.find(token); at != std::string::npos; at = dir.find(token))
        dir.replace(at, std::string_view(token).size(), origin.string());
    if (!dir.empty()) dirs.emplace_back(dir);
    start = end + 1;
  }
  return dirs;
}

}  // namespace

std::vector<fs::path> linked_libraries(const fs::path& file) {
  std::vector<fs::path> found;
  std::set<fs::path> seen{fs::weakly_canonical(file)};
  std::vector<fs::path> to_read{file};
  const char* env = std::getenv("LD_LIBRARY_PATH");
  while (!to_read.empty()) {
    const fs::path current = to_read.back();
    to_read.pop_back();
    const capture::DynamicLinks links = capture::dynamic_links(current);
    const fs::path origin = fs::absolute(current).parent_path();
    // The loader's order: RPATH (only without RUNPATH), LD_LIBRARY_PATH,
    // RUNPATH; the system's directories and ld.so.cache after them are not
    // searched here.
    std::vector<fs::path> dirs;
    if (links.runpath.empty())
      for (auto& d : search_dirs(links.rpath, origin)) dirs.push_back(std::move(d));
    if (env)
      for (auto& d : search_dirs(env, origin)) dirs.push_back(std::move(d));
    for (auto& d : search_dirs(links.runpath, origin)) dirs.push_back(std::move(d));
    for (const auto& name : links.needed) {
      for (const auto& dir : dirs) {
        const fs::path candidate = dir / name;
        std::error_code ec;
        if (!fs::is_regular_file(candidate, ec) || !is_elf(candidate)) continue;
        if (seen.insert(fs::weakly_canonical(candidate)).second) {
          found.push_back(candidate);
          to_read.push_back(candidate);
        }
        break;
      }
    }
  }
  return found;
}

namespace {

/// The --ptx files and the program's own fat binary, derived. A program
/// that is not ELF (a script) has no PTX of its own.
PtxDerivation derive_kernel_accesses(const CaptureOptions& options) {
  std::vector<std::string> files = options.ptx_files;
  if (const auto program = program_file(options.command.front()); program && is_elf(*program))
    files.push_back(program->string());
  return derive_from_ptx(files);
}

}  // namespace

PtxDerivation derive_from_ptx(const std::vector<std::string>& named) {
  PtxDerivation out;
  std::vector<std::string> sources;
  // Each ELF file named brings the libraries it links from its own
  // directories (RPATH, LD_LIBRARY_PATH, RUNPATH), where a program's
  // kernels may live; each file is read once.
  std::vector<std::pair<std::string, std::string>> files;  // file, the file that links it ("" if named)
  std::set<fs::path> listed;
  for (const auto& file : named) {
    if (!fs::exists(file)) throw CaptureError(file + ": no such file");
    if (!listed.insert(fs::weakly_canonical(file)).second) continue;
    files.emplace_back(file, "");
    if (!is_elf(file)) continue;
    try {
      for (const auto& lib : linked_libraries(file))
        if (listed.insert(fs::weakly_canonical(lib)).second) files.emplace_back(lib.string(), file);
    } catch (const std::exception& e) {  // a cut-off ELF file
      throw CaptureError(file + ": " + e.what());
    }
  }
  for (const auto& [file, linked_by] : files) {
    try {
      if (is_elf(file)) {
        const capture::EmbeddedPtx embedded = capture::embedded_ptx(file);
        out.elf_files_read.push_back(fs::weakly_canonical(file).string());
        for (const auto& module : embedded.modules)
          for (const auto& k : capture::derive_ptx_accesses(module)) out.table.add(k);
        // A linked library without PTX (libc, most libraries) is not worth a word.
        if (!linked_by.empty() && embedded.modules.empty() && embedded.undecodable == 0) continue;
        sources.push_back(file + (embedded.modules.empty() ? " (no PTX in it)" : "'s fat binary") +
                          (linked_by.empty() ? "" : " (linked by " + linked_by + ")"));
        if (embedded.undecodable > 0)
          out.lines.push_back(std::to_string(embedded.undecodable) + " PTX module(s) of " + file +
                              " are compressed in a way this streamcheck does not read: their kernels' accesses "
                              "come from their signatures");
      } else {
        for (const auto& k : capture::derive_ptx_accesses(read_all(file))) out.table.add(k);
        sources.push_back(file);
      }
    } catch (const std::exception& e) {  // malformed PTX, a cut-off ELF file or fat binary
      throw CaptureError(file + ": " + e.what());
    }
  }
  std::string from;
  for (const auto& s : sources) from += (from.empty() ? "" : ", ") + s;
  out.lines.insert(out.lines.begin(),
                   sources.empty()
                       ? std::string("no PTX read: the program is not an ELF file (a script?) and no "
                                     "--ptx file was named")
                       : std::to_string(out.table.size()) + " kernel(s) with accesses derived from PTX (" + from + ")");
  for (const capture::PtxKernel* k : out.table.kernels()) {
    for (std::size_t i = 0; i < k->params.size(); ++i)
      if (!k->params[i].access)
        out.lines.push_back(k->symbol + " parameter " + std::to_string(i) + " not derived (" +
                            k->params[i].undecided_because + "): its signature decides");
    if (k->accesses_loaded_addresses)
      out.lines.push_back(k->symbol +
                          " reads or writes through addresses it loads from memory: allocations no argument "
                          "names, not in the trace");
  }
  return out;
}

std::string sidecar_from_ptx(const PtxDerivation& derived) {
  std::string out = "# Kernel accesses derived from PTX by `streamcheck kernels` (docs/CAPTURE.md):\n";
  for (const auto& line : derived.lines) out += "#   " + line + "\n";
  out +=
      "# A parameter the analysis could not follow is written readwrites, marked below; edit and pass with "
      "--kernels.\n";
  for (const capture::PtxKernel* k : derived.table.kernels()) {
    std::string words;
    for (std::size_t i = 0; i < k->params.size(); ++i) {
      const auto& a = k->params[i].access;
      if (!a) out += "# " + k->symbol + " parameter " + std::to_string(i) + ": not derived, taken as readwrites\n";
      words += std::string(" ") + capture::access_word(a.value_or(capture::Access::ReadWrites));
    }
    out += k->symbol + " |" + words + "\n";
  }
  return out;
}

std::optional<std::string> capture_unavailable() {
#ifdef STREAMCHECK_WITH_CUDA
  std::string why;
  if (cuda::Driver::get(&why) == nullptr) return why;
  return std::nullopt;
#else
  return std::string("this streamcheck was built without the CUDA Toolkit");
#endif
}

CaptureResult run_capture(const CaptureOptions& options) {
  if (options.command.empty()) throw CaptureError("no program to run: write `streamcheck capture -- PROGRAM ARGS...`");
  std::string kernels;
  if (!options.kernels.empty()) {
    if (!fs::exists(options.kernels)) throw CaptureError("--kernels " + options.kernels + ": no such file");
    try {
      (void)capture::KernelTable::parse(read_all(options.kernels));
    } catch (const std::invalid_argument& e) {
      throw CaptureError(options.kernels + ":" + e.what());
    }
    kernels = fs::absolute(options.kernels).string();
  }
  for (const auto& file : options.ptx_files)
    if (!fs::exists(file)) throw CaptureError("--ptx " + file + ": no such file");
  // Derived before anything runs, so a --ptx file that is not PTX stops the
  // command here; written next to the trace once the capture can run.
  PtxDerivation derived;
  if (options.derive_from_ptx) derived = derive_kernel_accesses(options);

  if (!options.library.empty() && !fs::exists(options.library))
    throw CaptureError("--library " + options.library + ": no such file");
  if (auto why = capture_unavailable())
    throw CaptureError("cannot capture here: " + *why +
                       ". `streamcheck capture` runs the program on a GPU; a trace already captured is checked "
                       "anywhere with `streamcheck explore TRACE`");
  const fs::path library = capture_library(options.library);
  const fs::path trace = fs::absolute(options.trace_path);
  std::error_code ec;
  // Traces left from an earlier run must not pass for this one's.
  fs::remove(trace, ec);
  for (const auto& path : other_process_traces(trace)) fs::remove(path, ec);

  CaptureResult result;
  // Where the capture library reads the derived accesses
  // (STREAMCHECK_PTX_KERNELS); left for the user to read.
  const fs::path ptx_table = fs::path(trace.string() + ".ptx-kernels");
  fs::remove(ptx_table, ec);
  std::string ptx_kernels;
  result.derived = std::move(derived.lines);
  if (!options.derive_from_ptx) result.derived.push_back("not derived from PTX (--no-ptx): signatures decide");
  if (derived.table.size() > 0) {
    std::ofstream out(ptx_table);
    out << derived.table.format();
    if (!out) throw CaptureError("cannot write " + ptx_table.string());
    ptx_kernels = ptx_table.string();
  }

  // The program's environment: ours, with the capture's variables set.
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("CUDA_INJECTION64_PATH=") || entry.starts_with("STREAMCHECK_CAPTURE_OUT=") ||
        entry.starts_with("STREAMCHECK_KERNELS=") || entry.starts_with("STREAMCHECK_PTX_KERNELS=") ||
        entry.starts_with("STREAMCHECK_PTX_READ=") || entry.starts_with("STREAMCHECK_NO_PTX="))
      continue;
    env_text.emplace_back(entry);
  }
  env_text.push_back("CUDA_INJECTION64_PATH=" + library.string());
  env_text.push_back("STREAMCHECK_CAPTURE_OUT=" + trace.string());
  if (!kernels.empty()) env_text.push_back("STREAMCHECK_KERNELS=" + kernels);
  if (!ptx_kernels.empty()) env_text.push_back("STREAMCHECK_PTX_KERNELS=" + ptx_kernels);
  // The files read here, which the capture library need not read again when
  // it looks for a launched kernel's PTX (capture/injection.cpp); or none
  // read at all (--no-ptx).
  if (options.derive_from_ptx) {
    std::string read;
    for (const auto& file : derived.elf_files_read) read += (read.empty() ? "" : ":") + file;
    env_text.push_back("STREAMCHECK_PTX_READ=" + read);
  } else {
    env_text.push_back("STREAMCHECK_NO_PTX=1");
  }
  env_text.erase(std::remove_if(env_text.begin(), env_text.end(),
                                [](const std::string& e) { return e.starts_with("STREAMCHECK_CAPTURE_ROOT_PID="); }),
                 env_text.end());
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  if (int err = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()); err != 0)
    throw CaptureError("cannot run " + options.command[0] + ": " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw CaptureError(std::string("waiting for the program failed: ") + std::strerror(errno));

  result.trace_path = trace.string();
  if (WIFSIGNALED(status))
    throw CaptureError(options.command[0] + " was killed by signal " + std::to_string(WTERMSIG(status)) +
                       " before the capture could write its trace (it is written at exit)");
  result.program_status = WEXITSTATUS(status);
  if (!fs::exists(trace))
    throw CaptureError(options.command[0] + " exited with status " + std::to_string(result.program_status) +
                       " and no trace was written: it made no CUDA call (the driver loads the capture at the first "
                       "one), or another CUPTI client (a profiler, compute-sanitizer) held CUPTI");
  const std::string text = read_all(trace);
  if (text.find(kEndMarker) == std::string::npos)
    throw CaptureError(trace.string() + " is incomplete (no '" + std::string(kEndMarker) +
                       "' line): the program did not end through exit()");
  result.other_processes = other_process_traces(trace);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("#")) break;  // the header ends at the first statement
    if (line.starts_with(kNotCaptured)) result.not_captured.push_back(line.substr(kNotCaptured.size()));
    if (line.starts_with(kAssumed)) result.assumed.push_back(line.substr(kAssumed.size()));
  }
  return result;
}

}  // namespace streamcheck::tools
