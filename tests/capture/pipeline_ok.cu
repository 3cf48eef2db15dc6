// A correct two-stream pipeline: s2 waits for s1's producer through an event,
// and s1 frees only after s2's consumer, through a second event.
// Expected: clean.
#include "corpus.h"

int main() {
  cudaStream_t s1, s2;
  cudaEvent_t produced, consumed;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&consumed, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMallocAsync(&a, kElements * sizeof(float), s1));
  CHECK(cudaMallocAsync(&b, kElements * sizeof(float), s1));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaEventRecord(produced, s1));
  CHECK(cudaStreamWaitEvent(s2, produced, 0));
  consume<<<kBlocks, kThreads, 0, s2>>>(a, b, kElements);
  CHECK(cudaEventRecord(consumed, s2));
  CHECK(cudaStreamWaitEvent(s1, consumed, 0));
  CHECK(cudaFreeAsync(a, s1));
  CHECK(cudaFreeAsync(b, s1));
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaEventDestroy(produced));
  CHECK(cudaEventDestroy(consumed));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  return 0;
}
