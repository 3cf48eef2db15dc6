// Runs a shell command for tests that check real exit codes and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace streamcheck::tools {

struct CommandResult {
  int exit_code;
  std::string out;  // stdout and stderr together
};

inline CommandResult run_shell(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe)) out += buf.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace streamcheck::tools
