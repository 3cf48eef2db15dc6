// A program that runs a second program using CUDA (itself, with `child`):
// each process is captured into its own trace, the child's as TRACE.PID,
// and `streamcheck capture` explores the first one's (clean) and names the
// child's (whose kernels race: not this verdict's business). Expected: clean.
#include <string>

#include "corpus.h"

int main(int argc, char** argv) {
  const bool child = argc > 1 && std::string(argv[1]) == "child";
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaMalloc(&b, kElements * sizeof(float)));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  if (!child) CHECK(cudaStreamSynchronize(s1));  // the child has no such sync: its consume races
  consume<<<kBlocks, kThreads, 0, s2>>>(a, b, kElements);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  if (!child && std::system((std::string(argv[0]) + " child").c_str()) != 0) return 4;
  return 0;
}
