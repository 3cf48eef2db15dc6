// The pipeline without s2's wait: consume may read `a` while produce writes it.
// Expected: data race.
#include "corpus.h"

int main() {
  cudaStream_t s1, s2;
  cudaEvent_t consumed;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaMalloc(&b, kElements * sizeof(float)));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  consume<<<kBlocks, kThreads, 0, s2>>>(a, b, kElements);  // BUG: no cudaStreamWaitEvent(s2, ...)
  CHECK(cudaEventRecord(consumed, s2));
  CHECK(cudaStreamWaitEvent(s1, consumed, 0));
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaEventDestroy(consumed));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  return 0;
}
