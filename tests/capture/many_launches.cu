// Capture overhead and scale (docs/PERFORMANCE.md): ITERATIONS rounds of
// launch + record + wait + launch on two streams (6 API calls a round), a
// correct pipeline. `many_launches N [ELEMENTS]` prints the seconds the loop
// took; ELEMENTS (default 1024) sets each kernel's size: 1024 keeps the GPU
// idle and the run bound by API calls (the capture's worst case), 1M makes each
// kernel a few microseconds of GPU work, as real programs' are.
// Expected: clean.
#include <chrono>

#include "corpus.h"

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 1000;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1024;
  cudaStream_t s1, s2;
  cudaEvent_t produced, consumed;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < iterations; ++i) {
    CHECK(cudaStreamWaitEvent(s1, consumed, 0));  // the previous round's reader is done before a is rewritten
    produce<<<(n + kThreads - 1) / kThreads, kThreads, 0, s1>>>(a, n);
    CHECK(cudaEventRecord(produced, s1));
    CHECK(cudaStreamWaitEvent(s2, produced, 0));
    consume<<<(n + kThreads - 1) / kThreads, kThreads, 0, s2>>>(a, b, n);
    CHECK(cudaEventRecord(consumed, s2));
  }
  CHECK(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%ld iterations, %ld API calls in the loop: %.3f s\n", iterations, iterations * 6, seconds);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return 0;
}
