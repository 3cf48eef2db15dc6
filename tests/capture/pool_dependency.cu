// s1's transform reads x, written on s0, and is ordered after that write
// only through the pool: cudaMallocAsync may hand s1 the bytes s0 freed and
// make s1 wait for that free, a dependency the program does not own (and
// gets only when the pool reuses those bytes). Expected: data race.
#include "corpus.h"

int main() {
  cudaStream_t s0, s1;
  cudaEvent_t transformed;
  CHECK(cudaStreamCreate(&s0));
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaEventCreateWithFlags(&transformed, cudaEventDisableTiming));
  float *x = nullptr, *a = nullptr, *b = nullptr;
  CHECK(cudaMallocAsync(&x, kElements * sizeof(float), s0));
  CHECK(cudaMallocAsync(&a, kElements * sizeof(float), s0));
  CHECK(cudaDeviceSynchronize());
  produce<<<kBlocks, kThreads, 0, s0>>>(x, kElements);
  CHECK(cudaFreeAsync(a, s0));
  CHECK(cudaMallocAsync(&b, kElements * sizeof(float), s1));  // may reuse a's bytes, waiting for s0
  consume<<<kBlocks, kThreads, 0, s1>>>(x, b, kElements);     // BUG: nothing orders it after produce
  CHECK(cudaFreeAsync(b, s1));
  CHECK(cudaEventRecord(transformed, s1));
  CHECK(cudaStreamWaitEvent(s0, transformed, 0));
  CHECK(cudaFreeAsync(x, s0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventDestroy(transformed));
  CHECK(cudaStreamDestroy(s0));
  CHECK(cudaStreamDestroy(s1));
  return 0;
}
