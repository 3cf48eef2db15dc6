// s1 frees `a` (cudaFreeAsync) while s2's consumer may still read it: the
// free is ordered after s1's work only. Expected: use after free.
#include "corpus.h"

int main() {
  cudaStream_t s1, s2;
  cudaEvent_t produced;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMallocAsync(&a, kElements * sizeof(float), s1));
  CHECK(cudaMallocAsync(&b, kElements * sizeof(float), s1));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaEventRecord(produced, s1));
  CHECK(cudaStreamWaitEvent(s2, produced, 0));
  consume<<<kBlocks, kThreads, 0, s2>>>(a, b, kElements);
  CHECK(cudaFreeAsync(a, s1));  // BUG: s1 does not wait for s2's consume
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaFreeAsync(b, s1));
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaEventDestroy(produced));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  return 0;
}
