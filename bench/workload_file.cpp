// Writes the bench workload (bench/workload.h) of N steady-state statements
// to FILE, a piece at a time: the input of the 100 M-statement streamed
// check (bench/stream_memory.sh), about 3 GB of text that is never held.
//   workload_file N FILE
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/workload.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: workload_file N FILE\n");
    return 2;
  }
  char* end = nullptr;
  const unsigned long long ops = std::strtoull(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0') {
    std::fprintf(stderr, "workload_file: N must be a number, got '%s'\n", argv[1]);
    return 2;
  }
  std::FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "workload_file: cannot write %s: %s\n", argv[2], std::strerror(errno));
    return 2;
  }
  bool ok = true;
  streamcheck::bench::write_workload_trace(ops, {}, [&](std::string_view piece) {
    ok = ok && std::fwrite(piece.data(), 1, piece.size(), out) == piece.size();
  });
  ok = std::fclose(out) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "workload_file: writing %s failed: %s\n", argv[2], std::strerror(errno));
    return 1;
  }
  return 0;
}
