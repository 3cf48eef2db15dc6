// Two readers of one buffer on two streams, ordered after its writer by an
// event. `scale` takes a non-const pointer it only reads: from the signature
// alone the capture would take it as read-write and report the two readers
// as a race; the annotation says what it does. Expected: clean.
#include <streamcheck/annotate.h>

#include "corpus.h"

__global__ void scale(float* in, float* out, int n) {  // reads `in` although it is not const
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 3.0f;
}
STREAMCHECK_KERNEL(scale, "reads writes -");

int main() {
  cudaStream_t s1, s2;
  cudaEvent_t produced, done;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaMalloc(&b, kElements * sizeof(float)));
  CHECK(cudaMalloc(&c, kElements * sizeof(float)));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaEventRecord(produced, s1));
  CHECK(cudaStreamWaitEvent(s2, produced, 0));
  scale<<<kBlocks, kThreads, 0, s1>>>(a, b, kElements);
  scale<<<kBlocks, kThreads, 0, s2>>>(a, c, kElements);
  CHECK(cudaEventRecord(done, s2));
  CHECK(cudaStreamWaitEvent(s1, done, 0));
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  return 0;
}
