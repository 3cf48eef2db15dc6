#include "tools/capture_run.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "capture/kernel_access.h"
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

}  // namespace

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

  // The program's environment: ours, with the capture's variables set.
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("CUDA_INJECTION64_PATH=") || entry.starts_with("STREAMCHECK_CAPTURE_OUT=") ||
        entry.starts_with("STREAMCHECK_KERNELS="))
      continue;
    env_text.emplace_back(entry);
  }
  env_text.push_back("CUDA_INJECTION64_PATH=" + library.string());
  env_text.push_back("STREAMCHECK_CAPTURE_OUT=" + trace.string());
  if (!kernels.empty()) env_text.push_back("STREAMCHECK_KERNELS=" + kernels);
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

  CaptureResult result;
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
